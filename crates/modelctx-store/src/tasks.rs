//! Where tasks are kept: the [`TaskStore`] trait, the rules every store applies, and
//! the bounded in-memory store.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures_core::future::BoxFuture;
use modelctx_types::{ErrorData, RawValue, Task, TaskStatus};

/// Who may reach a task, and whose `tasks/list` shows it:
///
/// - a task created by an authenticated caller belongs to that caller (its principal),
///   whatever the session or the protocol revision of the request that reaches it;
/// - else a task created on a lasting session (protocol 2025-11-25) belongs to that
///   session;
/// - else (no principal and no session: every unauthenticated request of protocol
///   2026-07-28, and of a stateless transport) the task belongs to no one: it is
///   reachable only through its id, by a requestor that has neither a principal nor a
///   session either, and no `tasks/list` shows it. The id is the capability: it
///   carries 128 bits from the operating system's CSPRNG.
///
/// A requestor that may not reach a task is answered exactly as for an unknown id.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct TaskOwner {
    session: Option<Arc<str>>,
    principal: Option<Arc<str>>,
}

// Session ids and principals are credentials of a sort: never printed.
modelctx_types::__debug_shows!(TaskOwner, |v| {
    session: &v.session.is_some(),
    principal: &v.principal.is_some(),
});

impl TaskOwner {
    /// The owner of a task created on `session` (its id, `None` when the transport has
    /// no sessions) by `principal` (the authenticated caller, if any).
    pub fn new(session: Option<&str>, principal: Option<&str>) -> Self {
        Self {
            session: session.map(Arc::from),
            principal: principal.map(Arc::from),
        }
    }

    /// The session the task was created on, if any (a store that keeps tasks outside
    /// this process writes it down).
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The authenticated caller that created the task, if any.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// Whether this owner has neither a principal nor a session: a task it creates is
    /// reachable only through its id, and its `tasks/list` shows nothing.
    pub fn is_anonymous(&self) -> bool {
        self.principal.is_none() && self.session.is_none()
    }

    /// Whether a requestor identified as `self` may reach, by its id, a task owned by
    /// `owner` (`tasks/get`, `tasks/result`, `tasks/cancel`, and the tasks extension's
    /// methods): the same principal; else, neither having one, the same session; else,
    /// neither having a session either, anyone holding the id.
    pub fn may_access(&self, owner: &TaskOwner) -> bool {
        match (&owner.principal, &owner.session) {
            (Some(principal), _) => self.principal.as_ref() == Some(principal),
            (None, Some(session)) => {
                self.principal.is_none() && self.session.as_ref() == Some(session)
            }
            (None, None) => self.is_anonymous(),
        }
    }

    /// Whether `tasks/list` for a requestor identified as `self` shows a task owned by
    /// `owner`: one it may reach ([`may_access`](Self::may_access)) that has an owner
    /// (an anonymous task is listed to no one, an anonymous requestor sees no list).
    /// Every [`TaskStore`] filters its listing with this.
    pub fn may_list(&self, owner: &TaskOwner) -> bool {
        !owner.is_anonymous() && self.may_access(owner)
    }
}

/// The outcome of the request a task runs: its result, or its JSON-RPC error.
pub type TaskOutcome = Result<Box<RawValue>, ErrorData>;

/// One task as a store keeps it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task as the protocol shows it.
    pub task: Task,
    /// Who may reach it.
    pub owner: TaskOwner,
    /// The method of the request that created it.
    pub method: String,
    /// The request's outcome, once it has one.
    pub outcome: Option<TaskOutcome>,
    /// When the store may forget it (`None`: never).
    pub expires_at: Option<SystemTime>,
    /// Until when the process running it vouches that it runs, in a store several
    /// processes share ([`TaskStore::is_shared`]); the process renews it while the work
    /// goes on. A task not yet terminal whose lease has passed lost its process: it is
    /// failed as interrupted ([`TaskUpdate::Interrupt`]) when next read. `None`: no
    /// lease (a store of one process, whose tasks end with it).
    pub lease_until: Option<SystemTime>,
}

impl TaskRecord {
    /// A record for a task just created.
    pub fn new(task: Task, owner: TaskOwner, method: impl Into<String>) -> Self {
        let expires_at = task
            .ttl
            .map(|ms| SystemTime::now() + Duration::from_millis(ms));
        Self {
            task,
            owner,
            method: method.into(),
            outcome: None,
            expires_at,
            lease_until: None,
        }
    }
}

/// What a requestor reads of a task whose process stopped before it finished
/// ([`TaskUpdate::Interrupt`]).
const INTERRUPTED: &str = "The server process running the task stopped before it finished: the work may or may not have run.";

/// A change to a task. Every store applies it with [`TaskUpdate::apply`], so the status
/// machine is the same whatever keeps the tasks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TaskUpdate {
    /// Moves a running task to `working` or `input_required`.
    Status {
        /// The new status.
        status: TaskStatus,
        /// The new status message (`None` clears it).
        message: Option<String>,
    },
    /// The request finished: `completed`, or `failed` when `failed`; a task already
    /// terminal (cancelled) keeps its status and its outcome.
    Finish {
        /// The request's outcome.
        outcome: TaskOutcome,
        /// Whether it counts as a failure (a JSON-RPC error, a tool result with
        /// `isError`).
        failed: bool,
    },
    /// `tasks/cancel`: a running task becomes `cancelled`.
    Cancel,
    /// The process running the task still runs it: its lease lasts until `until`
    /// (refused once the task is terminal; the task's times are left as they are).
    Renew {
        /// The new end of the lease.
        until: SystemTime,
    },
    /// The task's lease has passed (its process stopped): a task not yet terminal
    /// becomes `failed`, its message and error saying that the process running it
    /// stopped and the work may or may not have run. Refused while the lease lasts or
    /// when there is none.
    Interrupt,
}

/// Why an update was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdateError {
    /// No such task (or it expired).
    NotFound,
    /// The task is terminal, or the transition is not one the status machine allows.
    Illegal(TaskStatus),
}

impl UpdateError {
    /// The JSON-RPC error a requestor sees (`-32602` either way).
    pub fn to_error_data(&self) -> ErrorData {
        match self {
            UpdateError::NotFound => ErrorData::invalid_params("Task not found"),
            UpdateError::Illegal(status) => ErrorData::invalid_params(format!(
                "Cannot change the task: it is already in status '{status}'"
            )),
        }
    }
}

impl TaskUpdate {
    /// Applies the update to `record` at `now`, or says why it cannot be.
    pub fn apply(self, record: &mut TaskRecord, now: SystemTime) -> Result<(), UpdateError> {
        let current = record.task.status.clone();
        match self {
            TaskUpdate::Status { status, message } => {
                let allowed = matches!(
                    (&current, &status),
                    (TaskStatus::Working, TaskStatus::InputRequired)
                        | (TaskStatus::InputRequired, TaskStatus::Working)
                        | (TaskStatus::Working, TaskStatus::Working)
                        | (TaskStatus::InputRequired, TaskStatus::InputRequired)
                );
                if !allowed {
                    return Err(UpdateError::Illegal(current));
                }
                record.task.status = status;
                record.task.status_message = message;
            }
            TaskUpdate::Finish { outcome, failed } => {
                if current.is_terminal() {
                    return Err(UpdateError::Illegal(current));
                }
                record.task.status = if failed {
                    TaskStatus::Failed
                } else {
                    TaskStatus::Completed
                };
                record.task.status_message = match &outcome {
                    Err(error) => Some(error.message.to_string()),
                    Ok(_) if failed => Some("The request completed with an error.".to_owned()),
                    Ok(_) => None,
                };
                record.outcome = Some(outcome);
            }
            TaskUpdate::Cancel => {
                if current.is_terminal() {
                    return Err(UpdateError::Illegal(current));
                }
                record.task.status = TaskStatus::Cancelled;
                record.task.status_message = Some("The task was cancelled by request.".to_owned());
                record.outcome = Some(Err(ErrorData::internal_error("The task was cancelled.")));
            }
            TaskUpdate::Renew { until } => {
                if current.is_terminal() {
                    return Err(UpdateError::Illegal(current));
                }
                record.lease_until = Some(until);
                return Ok(());
            }
            TaskUpdate::Interrupt => {
                let lapsed = record.lease_until.is_some_and(|until| until <= now);
                if current.is_terminal() || !lapsed {
                    return Err(UpdateError::Illegal(current));
                }
                record.task.status = TaskStatus::Failed;
                record.task.status_message = Some(INTERRUPTED.to_owned());
                record.outcome = Some(Err(ErrorData::internal_error(INTERRUPTED)));
            }
        }
        record.task.last_updated_at = timestamp(now);
        Ok(())
    }
}

/// One page of [`TaskStore::list`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TaskPage {
    /// The tasks, oldest first.
    pub tasks: Vec<Task>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

/// What every store's `tasks/list` cursors start with; the rest is the position
/// (insertion sequence number) of the last task the page listed.
const CURSOR_PREFIX: &str = "tasks-after-";

impl TaskPage {
    /// The position `cursor` continues after, as [`cursor_after`](Self::cursor_after)
    /// made it (`None` for the first page); a cursor no store made is `-32602`. Every
    /// store reads and writes its cursors with these two, so a cursor means the same
    /// wherever it is used.
    ///
    /// ```
    /// use modelctx_store::TaskPage;
    ///
    /// let cursor = TaskPage::cursor_after(41);
    /// assert_eq!(TaskPage::position_of(Some(&cursor)).unwrap(), Some(41));
    /// assert_eq!(TaskPage::position_of(None).unwrap(), None);
    /// assert!(TaskPage::position_of(Some("page-2")).is_err());
    /// ```
    pub fn position_of(cursor: Option<&str>) -> Result<Option<u64>, ErrorData> {
        cursor
            .map(|c| {
                c.strip_prefix(CURSOR_PREFIX)
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| ErrorData::invalid_params("Invalid cursor for tasks/list"))
            })
            .transpose()
    }

    /// The cursor of the page after the task at `position`.
    pub fn cursor_after(position: u64) -> String {
        format!("{CURSOR_PREFIX}{position}")
    }
}

/// Keeps tasks: their state, owner and outcome. The session's task host drives it; a
/// store shared by several server processes (such as `modelctx-redis`'s) implements
/// the same trait. Expired tasks are invisible (`get` answers `None`, `list` skips
/// them).
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps a new task; refused (`-32603`) when the store is full.
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), ErrorData>>;
    /// The task `id`, unless unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<TaskRecord>>;
    /// Applies `update` to task `id` atomically and returns the task after it.
    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
    ) -> BoxFuture<'a, Result<TaskRecord, UpdateError>>;
    /// The tasks `requestor` may list ([`TaskOwner::may_list`]: none for an anonymous
    /// requestor), `limit` per page, after `cursor` (an invalid cursor is `-32602`).
    fn list<'a>(
        &'a self,
        requestor: &'a TaskOwner,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<TaskPage, ErrorData>>;
    /// Whether several processes share the store, so that a task may outlive the
    /// process running it: that process then keeps a lease on it
    /// ([`TaskRecord::lease_until`]). `false` unless a store says so.
    fn is_shared(&self) -> bool {
        false
    }
}

/// A [`TaskStore`] in this process's memory, bounded: at most `capacity` tasks (expired
/// ones are purged first, then the oldest terminal one makes room; a store full of
/// running tasks refuses new ones).
pub struct InMemoryTaskStore {
    capacity: usize,
    inner: Mutex<Tasks>,
}

#[derive(Default)]
struct Tasks {
    next: u64,
    by_id: HashMap<String, (u64, TaskRecord)>,
    order: BTreeMap<u64, String>,
}

modelctx_types::__debug_shows!(InMemoryTaskStore, |v| {
    capacity: &v.capacity,
    tasks: &v.lock().by_id.len(),
});

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        Self::new(10_000)
    }
}

impl InMemoryTaskStore {
    /// A store holding at most `capacity` tasks.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Tasks::default()),
        }
    }

    /// How many tasks it holds (expired ones included until purged).
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Whether it holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tasks> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Tasks {
    fn purge(&mut self, now: SystemTime) {
        let expired: Vec<(u64, String)> = self
            .by_id
            .iter()
            .filter(|(_, (_, r))| r.expires_at.is_some_and(|at| at <= now))
            .map(|(id, (seq, _))| (*seq, id.clone()))
            .collect();
        for (seq, id) in expired {
            self.by_id.remove(&id);
            self.order.remove(&seq);
        }
        crate::table::shrink_drained(&mut self.by_id);
    }

    fn live(&mut self, id: &str, now: SystemTime) -> Option<&mut TaskRecord> {
        let expired = self
            .by_id
            .get(id)
            .is_some_and(|(_, r)| r.expires_at.is_some_and(|at| at <= now));
        if expired {
            if let Some((seq, _)) = self.by_id.remove(id) {
                self.order.remove(&seq);
            }
            crate::table::shrink_drained(&mut self.by_id);
            return None;
        }
        self.by_id.get_mut(id).map(|(_, r)| r)
    }
}

impl TaskStore for InMemoryTaskStore {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), ErrorData>> {
        Box::pin(async move {
            let now = SystemTime::now();
            let mut tasks = self.lock();
            if tasks.by_id.len() >= self.capacity {
                tasks.purge(now);
            }
            if tasks.by_id.len() >= self.capacity {
                let oldest_done = tasks
                    .order
                    .iter()
                    .find(|(_, id)| {
                        tasks
                            .by_id
                            .get(*id)
                            .is_some_and(|(_, r)| r.task.status.is_terminal())
                    })
                    .map(|(seq, id)| (*seq, id.clone()));
                match oldest_done {
                    Some((seq, id)) => {
                        tasks.order.remove(&seq);
                        tasks.by_id.remove(&id);
                    }
                    None => {
                        return Err(ErrorData::internal_error(
                            "Too many running tasks: try again later",
                        ));
                    }
                }
            }
            let seq = tasks.next;
            tasks.next += 1;
            tasks.order.insert(seq, record.task.task_id.clone());
            tasks
                .by_id
                .insert(record.task.task_id.clone(), (seq, record));
            Ok(())
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<TaskRecord>> {
        Box::pin(async move { self.lock().live(id, SystemTime::now()).cloned() })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
    ) -> BoxFuture<'a, Result<TaskRecord, UpdateError>> {
        Box::pin(async move {
            let now = SystemTime::now();
            let mut tasks = self.lock();
            let record = tasks.live(id, now).ok_or(UpdateError::NotFound)?;
            update.apply(record, now)?;
            Ok(record.clone())
        })
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
            let mut tasks = self.lock();
            tasks.purge(SystemTime::now());
            let start = after.map_or(0, |n| n + 1);
            let mut page = TaskPage::default();
            let mut last = None;
            for (seq, id) in tasks.order.range(start..) {
                let Some((_, record)) = tasks.by_id.get(id) else {
                    continue;
                };
                if !requestor.may_list(&record.owner) {
                    continue;
                }
                if page.tasks.len() == limit.max(1) {
                    page.next_cursor = last.map(TaskPage::cursor_after);
                    break;
                }
                page.tasks.push(record.task.clone());
                last = Some(*seq);
            }
            Ok(page)
        })
    }
}

/// `now` as an RFC 3339 UTC timestamp with milliseconds (`2025-11-25T10:30:00.000Z`).
pub fn timestamp(now: SystemTime) -> String {
    let since = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let millis = since.subsec_millis();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (the "days from civil"
/// algorithm, inverted).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, owner: &TaskOwner) -> TaskRecord {
        let task = Task::new(id, TaskStatus::Working, "t", "t", Some(60_000));
        TaskRecord::new(task, owner.clone(), "tools/call")
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(
            timestamp(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000Z"
        );
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_066_600_123);
        assert_eq!(timestamp(t), "2025-11-25T10:30:00.123Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_task_whose_lease_lapsed_is_interrupted_and_only_then() {
        let owner = TaskOwner::default();
        let now = SystemTime::now();
        let mut r = record("a", &owner);
        // No lease (a store of one process): never interrupted.
        assert!(TaskUpdate::Interrupt.apply(&mut r, now).is_err());
        let until = now + Duration::from_secs(10);
        TaskUpdate::Renew { until }.apply(&mut r, now).unwrap();
        assert_eq!(r.lease_until, Some(until));
        // While the lease lasts the process still vouches for it.
        let during = now + Duration::from_secs(9);
        assert!(TaskUpdate::Interrupt.apply(&mut r, during).is_err());
        assert_eq!(r.task.status, TaskStatus::Working);
        let after = now + Duration::from_secs(10);
        TaskUpdate::Interrupt.apply(&mut r, after).unwrap();
        assert_eq!(r.task.status, TaskStatus::Failed);
        let Some(Err(error)) = &r.outcome else {
            panic!("an error outcome: {:?}", r.outcome)
        };
        assert!(
            error.message.contains("may or may not have run"),
            "{error:?}"
        );
        // Terminal: neither renewed nor interrupted again.
        assert!(TaskUpdate::Renew { until }.apply(&mut r, after).is_err());
        assert!(TaskUpdate::Interrupt.apply(&mut r, after).is_err());
    }

    #[test]
    fn only_legal_transitions_apply() {
        let owner = TaskOwner::default();
        let now = SystemTime::now();
        let mut r = record("a", &owner);
        let to = |status| TaskUpdate::Status {
            status,
            message: None,
        };
        to(TaskStatus::InputRequired).apply(&mut r, now).unwrap();
        to(TaskStatus::Working).apply(&mut r, now).unwrap();
        let done = TaskUpdate::Finish {
            outcome: Ok(RawValue::from_string("{}".into()).unwrap()),
            failed: false,
        };
        done.apply(&mut r, now).unwrap();
        assert_eq!(r.task.status, TaskStatus::Completed);
        for update in [to(TaskStatus::Working), TaskUpdate::Cancel] {
            assert_eq!(
                update.apply(&mut r, now),
                Err(UpdateError::Illegal(TaskStatus::Completed))
            );
        }
        let mut c = record("b", &owner);
        TaskUpdate::Cancel.apply(&mut c, now).unwrap();
        let late = TaskUpdate::Finish {
            outcome: Ok(RawValue::from_string("{}".into()).unwrap()),
            failed: false,
        };
        assert!(late.apply(&mut c, now).is_err());
        assert_eq!(c.task.status, TaskStatus::Cancelled);
    }

    #[test]
    fn owners_see_their_own_tasks() {
        let alice = TaskOwner::new(Some("s1"), Some("alice"));
        let alice_elsewhere = TaskOwner::new(Some("s2"), Some("alice"));
        let bob = TaskOwner::new(Some("s1"), Some("bob"));
        assert!(alice_elsewhere.may_access(&alice));
        assert!(!bob.may_access(&alice));
        let s1 = TaskOwner::new(Some("s1"), None);
        assert!(TaskOwner::new(Some("s1"), None).may_access(&s1));
        assert!(!TaskOwner::new(Some("s2"), None).may_access(&s1));
        // A session's task is not reached from outside the session, even by id.
        assert!(!TaskOwner::default().may_access(&s1));
        assert!(!alice.may_access(&s1));
        assert!(TaskOwner::new(Some("s1"), None).may_list(&s1));
        for owner in [&alice, &s1] {
            assert!(!TaskOwner::default().may_list(owner));
        }
        assert!(alice_elsewhere.may_list(&alice));
        assert!(!bob.may_list(&alice));
    }

    #[test]
    fn a_task_without_owner_is_reachable_by_id_only_and_listed_to_no_one() {
        let anonymous = TaskOwner::default();
        assert!(anonymous.is_anonymous());
        // By id: only from another requestor without principal or session (the id is
        // the capability); never from a session or an authenticated caller.
        assert!(TaskOwner::new(None, None).may_access(&anonymous));
        for other in [
            TaskOwner::new(Some("s1"), None),
            TaskOwner::new(None, Some("alice")),
            TaskOwner::new(Some("s1"), Some("alice")),
        ] {
            assert!(!other.is_anonymous());
            assert!(!other.may_access(&anonymous), "{other:?}");
            assert!(!other.may_list(&anonymous), "{other:?}");
        }
        // Listed to no one, not even another anonymous requestor.
        assert!(!TaskOwner::default().may_list(&anonymous));
    }

    #[tokio::test]
    async fn the_store_lists_only_the_requestors_own_tasks() {
        let store = InMemoryTaskStore::new(10);
        let anonymous = TaskOwner::default();
        let s1 = TaskOwner::new(Some("s1"), None);
        let alice = TaskOwner::new(None, Some("alice"));
        store.insert(record("anon", &anonymous)).await.unwrap();
        store.insert(record("mine", &s1)).await.unwrap();
        store.insert(record("hers", &alice)).await.unwrap();
        let ids =
            |page: TaskPage| -> Vec<String> { page.tasks.into_iter().map(|t| t.task_id).collect() };
        assert_eq!(ids(store.list(&s1, None, 10).await.unwrap()), ["mine"]);
        let alice_on_s1 = TaskOwner::new(Some("s1"), Some("alice"));
        assert_eq!(
            ids(store.list(&alice_on_s1, None, 10).await.unwrap()),
            ["hers"]
        );
        assert!(ids(store.list(&anonymous, None, 10).await.unwrap()).is_empty());
        // An anonymous requestor's cursor is still checked.
        assert!(store.list(&anonymous, Some("nonsense"), 1).await.is_err());
    }

    #[tokio::test]
    async fn the_store_pages_bounds_and_expires() {
        let store = InMemoryTaskStore::new(3);
        let me = TaskOwner::new(Some("s1"), None);
        let other = TaskOwner::new(Some("s2"), None);
        for id in ["a", "b"] {
            store.insert(record(id, &me)).await.unwrap();
        }
        store.insert(record("x", &other)).await.unwrap();
        // Full of running tasks: refused.
        assert!(store.insert(record("c", &me)).await.is_err());
        let first = store.list(&me, None, 1).await.unwrap();
        assert_eq!(first.tasks[0].task_id, "a");
        let next = first.next_cursor.unwrap();
        let second = store.list(&me, Some(&next), 1).await.unwrap();
        assert_eq!(second.tasks[0].task_id, "b");
        assert!(second.next_cursor.is_none());
        assert!(store.list(&me, Some("nonsense"), 1).await.is_err());
        // A terminal task makes room.
        store.update("a", TaskUpdate::Cancel).await.unwrap();
        store.insert(record("c", &me)).await.unwrap();
        assert!(store.get("a").await.is_none());
        // Expiry.
        let mut gone = record("d", &me);
        gone.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
        store.update("c", TaskUpdate::Cancel).await.unwrap();
        store.insert(gone).await.unwrap();
        assert!(store.get("d").await.is_none());
    }
}
