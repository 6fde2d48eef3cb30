//! [`TaskStore`]: tasks shared by every server process that uses the same Redis.
//!
//! A task is one JSON value `<prefix>task:<id>` (the `Task`, its owner's session and
//! principal, method, outcome, `expires_at` in Unix ms) with `PXAT` at its expiry, capped
//! by `max_ttl` so a task with no `ttl` cannot live forever in a shared Redis.
//! `tasks:order` (creation number, from `INCR tasks:next`), `tasks:done` (terminal tasks,
//! evicted first when full) and `tasks:expiry` (purged at every insert) are sorted sets.
//! Insert is one Lua script (purge expired, refuse a taken id, make room or refuse `-32603`
//! as the in-memory store does, number, write). An update reads, runs `TaskUpdate::apply`
//! in Rust (the one status machine), and writes back through a compare-and-set script on
//! the whole record text, retried up to 64 times: two processes racing to finish and cancel
//! a task cannot both win. `list` walks `tasks:order` from the cursor (`tasks-after-<n>`,
//! as the in-memory store), `MGET`s the records, filters by owner, and drops index entries
//! whose record is gone. A Redis error is `-32603` "The task store is unavailable" on
//! insert and list, "not found" on get and update; the Redis error text is not passed on.
//!
//! Not shared: the live state of a running task (its cancellation token, side-channel
//! queue, input requests) stays in the process running it. `tasks/get`, `tasks/list` and
//! `tasks/result` work anywhere (`result` polls the store at `poll_interval` for a task not
//! run here); `tasks/cancel` elsewhere makes the task `cancelled` in the store (the work's
//! late finish is refused) but does not stop the work; answers to a task's input requests
//! must reach its own process.

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use modelctx_store::{
    self as store, TaskOutcome, TaskOwner, TaskPage, TaskRecord, TaskUpdate, UpdateError,
};
use modelctx_types::{ErrorData, RawValue, Task};
use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};

use crate::keys::Keys;

crate::config::config! {
    /// Capacity, retention and key names of a [`TaskStore`].
    pub struct TaskStoreConfig {
        prefix: String = crate::DEFAULT_PREFIX.to_owned(),
        capacity: usize = 10_000,
        max_ttl: Duration = Duration::from_secs(24 * 3600),
    }

    /// Every key starts with `prefix` (default `"modelctx:"`).
    prefix(prefix: impl Into<String>) => prefix = prefix.into();

    /// Tasks kept at most, across every process (default 10,000, as the in-memory
    /// store): expired tasks go first, then the oldest terminal one; a store full of
    /// running tasks refuses new ones (`-32603`).
    capacity(tasks: usize) => capacity = tasks.max(1);

    /// The longest Redis keeps a task (default 24 hours), whatever its own `ttl`: a task
    /// with no `ttl` (unlimited) or a longer one is dropped from Redis then, so a shared
    /// store never grows without bound. Rounded up to 1 ms.
    max_ttl(ttl: Duration) => max_ttl = ttl.max(Duration::from_millis(1));
}

/// A [`TaskStore`](store::TaskStore) in Redis: `tasks/get`, `tasks/result`, `tasks/cancel` and
/// `tasks/list` work on any process that shares it, and a task outlives the process
/// that created it.
///
/// Each task is one JSON value (`<prefix>task:<id>`) that Redis expires when the task
/// does (`PEXPIREAT`, capped by [`max_ttl`](TaskStoreConfig::max_ttl)); three
/// sorted sets order the tasks (`tasks:order`, by creation), list the terminal ones
/// (`tasks:done`, the first evicted when the store is full) and their expiries
/// (`tasks:expiry`, purged on every insert). Inserting is one Lua script (purge,
/// capacity, numbering, write); an update reads the task, applies
/// [`TaskUpdate::apply`] here, and writes it back only if it did not change meanwhile
/// (compare-and-set in Lua, retried), so the status machine is the one every store
/// shares and two processes cannot both move a task.
///
/// Expiry uses this process's clock for the deadline and Redis's for the key: keep the
/// clocks of the processes and of Redis in step.
pub struct TaskStore {
    conn: ConnectionManager,
    keys: Keys,
    config: TaskStoreConfig,
    insert: redis::Script,
    swap: redis::Script,
}

modelctx_types::__debug_shows!(TaskStore, |v| {
    prefix: &v.keys.prefix(),
    capacity: &v.config.capacity,
});

/// Purges expired tasks, makes room (or refuses), numbers the task and writes it.
/// KEYS: order, done, expiry, counter, task. ARGV: now ms, capacity, task key prefix,
/// id, record, expiry ms. Returns the task's number, -1 when full of running tasks, -2
/// when the id is taken.
const INSERT: &str = r"
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
for _, id in ipairs(expired) do
  redis.call('DEL', ARGV[3] .. id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
end
if redis.call('EXISTS', KEYS[5]) == 1 then return -2 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local old = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #old == 0 then return -1 end
  redis.call('DEL', ARGV[3] .. old[1])
  redis.call('ZREM', KEYS[1], old[1])
  redis.call('ZREM', KEYS[2], old[1])
  redis.call('ZREM', KEYS[3], old[1])
end
local n = redis.call('INCR', KEYS[4])
redis.call('SET', KEYS[5], ARGV[5], 'PXAT', ARGV[6])
redis.call('ZADD', KEYS[1], n, ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[4])
return n
";

/// Replaces a task's record if it is still `ARGV[1]`, keeping its expiry; a terminal
/// task joins the done set. KEYS: task, order, done. ARGV: old record, new record, 1
/// when terminal, id. Returns 1 when swapped, 0 when the record changed, -1 when gone.
const SWAP: &str = r"
local current = redis.call('GET', KEYS[1])
if not current then return -1 end
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
if ARGV[3] == '1' then
  local n = redis.call('ZSCORE', KEYS[2], ARGV[4])
  if n then redis.call('ZADD', KEYS[3], n, ARGV[4]) end
end
return 1
";

/// Compare-and-set rounds before an update gives up (only under heavy contention on
/// one task).
const MAX_SWAPS: usize = 64;

/// A task as stored: the record's fields, the owner spelled out.
#[derive(Serialize, Deserialize)]
struct Stored {
    task: Task,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<StoredOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease_until_ms: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum StoredOutcome {
    Ok(Box<RawValue>),
    Err(ErrorData),
}

impl Stored {
    fn from_record(record: &TaskRecord) -> Self {
        Self {
            task: record.task.clone(),
            session: record.owner.session().map(str::to_owned),
            principal: record.owner.principal().map(str::to_owned),
            method: record.method.clone(),
            outcome: record.outcome.as_ref().map(|o| match o {
                Ok(v) => StoredOutcome::Ok(v.clone()),
                Err(e) => StoredOutcome::Err(e.clone()),
            }),
            expires_at_ms: record.expires_at.map(unix_ms),
            lease_until_ms: record.lease_until.map(unix_ms),
        }
    }

    fn into_record(self) -> TaskRecord {
        let owner = TaskOwner::new(self.session.as_deref(), self.principal.as_deref());
        let mut record = TaskRecord::new(self.task, owner, self.method);
        record.outcome = self.outcome.map(|o| -> TaskOutcome {
            match o {
                StoredOutcome::Ok(v) => Ok(v),
                StoredOutcome::Err(e) => Err(e),
            }
        });
        record.expires_at = self
            .expires_at_ms
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
        record.lease_until = self
            .lease_until_ms
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
        record
    }
}

impl TaskStore {
    /// A store on `conn`.
    pub fn new(conn: ConnectionManager, config: TaskStoreConfig) -> Self {
        Self {
            conn,
            keys: Keys::new(&config.prefix),
            config,
            insert: redis::Script::new(INSERT),
            swap: redis::Script::new(SWAP),
        }
    }

    /// Connects to the Redis at `url` with a reconnecting [`ConnectionManager`] and
    /// builds a store on it.
    pub async fn connect(url: &str, config: TaskStoreConfig) -> Result<Self, redis::RedisError> {
        Ok(Self::new(crate::connect(url).await?, config))
    }

    /// The record text of `id` and the record, if the task exists and has not expired.
    async fn load(&self, id: &str) -> Result<Option<(String, TaskRecord)>, redis::RedisError> {
        let text: Option<String> = redis::cmd("GET")
            .arg(self.keys.task(id))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(text.and_then(|text| {
            let record = live(&text, SystemTime::now())?;
            Some((text, record))
        }))
    }
}

/// The record in `text` unless it expired at `now` (Redis drops the key at the same
/// deadline; this covers the clock steps between the two).
fn live(text: &str, now: SystemTime) -> Option<TaskRecord> {
    let stored: Stored = serde_json::from_str(text).ok()?;
    if stored.expires_at_ms.is_some_and(|at| at <= unix_ms(now)) {
        return None;
    }
    Some(stored.into_record())
}

fn store_error(_: &redis::RedisError) -> ErrorData {
    // The Redis error stays here: it may name hosts and keys.
    ErrorData::internal_error("The task store is unavailable")
}

impl store::TaskStore for TaskStore {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), ErrorData>> {
        Box::pin(async move {
            let now = SystemTime::now();
            let now_ms = unix_ms(now);
            let cap = now_ms.saturating_add(millis(self.config.max_ttl));
            let deadline = record
                .expires_at
                .map_or(cap, |at| unix_ms(at).min(cap))
                .max(1);
            let text = serde_json::to_string(&Stored::from_record(&record))
                .map_err(|_| ErrorData::internal_error("The task cannot be stored"))?;
            let id = &record.task.task_id;
            let n: i64 = self
                .insert
                .key(self.keys.task_order())
                .key(self.keys.task_done())
                .key(self.keys.task_expiry())
                .key(self.keys.task_counter())
                .key(self.keys.task(id))
                .arg(now_ms)
                .arg(self.config.capacity)
                .arg(self.keys.task_prefix())
                .arg(id)
                .arg(text)
                .arg(deadline)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(|e| store_error(&e))?;
            match n {
                -1 => Err(ErrorData::internal_error(
                    "Too many running tasks: try again later",
                )),
                -2 => Err(ErrorData::internal_error("A task with this id exists")),
                _ => Ok(()),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<TaskRecord>> {
        Box::pin(async move { self.load(id).await.ok().flatten().map(|(_, record)| record) })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
    ) -> BoxFuture<'a, Result<TaskRecord, UpdateError>> {
        Box::pin(async move {
            for _ in 0..MAX_SWAPS {
                // A store that cannot be read knows no such task: the requestor gets
                // "not found" (-32602), the task's own work finds its update refused.
                let (old, mut record) = self
                    .load(id)
                    .await
                    .ok()
                    .flatten()
                    .ok_or(UpdateError::NotFound)?;
                let now = SystemTime::now();
                update.clone().apply(&mut record, now)?;
                let Ok(text) = serde_json::to_string(&Stored::from_record(&record)) else {
                    return Err(UpdateError::NotFound);
                };
                let terminal = if record.task.status.is_terminal() {
                    "1"
                } else {
                    "0"
                };
                let swapped: i64 = self
                    .swap
                    .key(self.keys.task(id))
                    .key(self.keys.task_order())
                    .key(self.keys.task_done())
                    .arg(old)
                    .arg(text)
                    .arg(terminal)
                    .arg(id)
                    .invoke_async(&mut self.conn.clone())
                    .await
                    .map_err(|_| UpdateError::NotFound)?;
                match swapped {
                    1 => return Ok(record),
                    -1 => return Err(UpdateError::NotFound),
                    // Another process changed it first: apply the update to what it wrote.
                    _ => continue,
                }
            }
            Err(UpdateError::NotFound)
        })
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn list<'a>(
        &'a self,
        requestor: &'a TaskOwner,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<TaskPage, ErrorData>> {
        Box::pin(async move {
            let after = TaskPage::position_of(cursor)?;
            if requestor.is_anonymous() {
                // Listed to no one: nothing to walk.
                return Ok(TaskPage::default());
            }
            let limit = limit.max(1);
            let chunk = limit.saturating_add(1).min(1000);
            let mut conn = self.conn.clone();
            let mut page = TaskPage::default();
            let mut last: Option<u64> = None;
            let mut from = after.map_or(0, |n| n.saturating_add(1));
            let now = SystemTime::now();
            loop {
                let ids: Vec<(String, u64)> = redis::cmd("ZRANGE")
                    .arg(self.keys.task_order())
                    .arg(from)
                    .arg("+inf")
                    .arg("BYSCORE")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(chunk)
                    .arg("WITHSCORES")
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| store_error(&e))?;
                let Some(&(_, top)) = ids.last() else {
                    return Ok(page);
                };
                let keys: Vec<String> = ids.iter().map(|(id, _)| self.keys.task(id)).collect();
                let texts: Vec<Option<String>> = redis::cmd("MGET")
                    .arg(&keys)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| store_error(&e))?;
                let mut gone = Vec::new();
                for ((id, n), text) in ids.iter().zip(texts) {
                    let Some(record) = text.as_deref().and_then(|t| live(t, now)) else {
                        gone.push(id.clone());
                        continue;
                    };
                    if !requestor.may_list(&record.owner) {
                        continue;
                    }
                    if page.tasks.len() == limit {
                        page.next_cursor = last.map(TaskPage::cursor_after);
                        return Ok(page);
                    }
                    page.tasks.push(record.task);
                    last = Some(*n);
                }
                if !gone.is_empty() {
                    // Expired (or evicted by Redis itself): drop them from the indexes.
                    let _: redis::RedisResult<()> = redis::pipe()
                        .cmd("ZREM")
                        .arg(self.keys.task_order())
                        .arg(&gone)
                        .ignore()
                        .cmd("ZREM")
                        .arg(self.keys.task_done())
                        .arg(&gone)
                        .ignore()
                        .cmd("ZREM")
                        .arg(self.keys.task_expiry())
                        .arg(&gone)
                        .ignore()
                        .query_async(&mut conn)
                        .await;
                }
                if ids.len() < chunk {
                    return Ok(page);
                }
                from = top.saturating_add(1);
            }
        })
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}
