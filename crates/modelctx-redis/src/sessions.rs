//! [`SessionRegistry`]: the records of 2025-era streamable HTTP sessions, shared by
//! several server processes.
//!
//! A session is a hash `<prefix>sess:{<id>}` (`rev`, and `state`: the `SessionSnapshot` as
//! JSON once `initialize` is answered) expiring its idle time after the last request on any
//! service. `<prefix>sessions` is a sorted set of live ids scored by their expiry in
//! Redis's clock (`TIME` inside the scripts: no skew between services), purged of expired
//! entries on create and count; the cap across services is its `ZCARD`. Every operation is
//! one Lua script: `create` (purge, refuse at the cap or a taken id, write), `save` (only
//! if the record exists: a session deleted meanwhile is never brought back), `touch`
//! (answers missing, new, same, or the state when its revision differs from the caller's),
//! `remove`, `count`. A request of a shared session costs one round trip (the touch); a
//! state change two more (the save and its `PUBLISH`); opening the GET stream one more.
//!
//! Relays are pub/sub on `<prefix>relay:<instance>` or `<prefix>relay`; `listen` opens one
//! pub/sub connection subscribed to both, which is why the registry keeps the `Client`.
//! `relay_acknowledged` tags the message with the sender's instance and a token, reads from
//! `PUBLISH` how many listeners got it, and waits (a `watch` counter per token, registered
//! before the `PUBLISH`, since an acknowledgement may come first) until as many have
//! acknowledged, or its bound. A listener acknowledges when its service asks for the next
//! relayed message, by which time the service has taken the last one in; the sender's own
//! listener counts too. Trap: another client subscribed to the channel (a `PSUBSCRIBE *`
//! monitor) is counted and never acknowledges, so every state change waits the bound.
//!
//! The GET stream's holder is `<prefix>sess:{<id>}:get`, a lease: `hold_stream` sets it
//! (never past the record's TTL) only when it is absent, of the same instance, or on a
//! take-over (`Last-Event-ID`), else answers busy (409); `renew_stream` extends it only
//! while it is the caller's (or absent: a lapsed hold no one took), else lost; `touch` does
//! not extend it (a dead holder must lapse); `release_stream` compare-and-deletes it and
//! notes it in the record (`released`), which the next `hold_stream` answers as the hold
//! it replaced when none is current, and clears.
//! Messages kept while none holds it are the list `<prefix>sess:{<id>}:out` (trimmed to
//! `keep`). `to_client` is one script (no record: dropped; a holder: published on its
//! instance's channel from inside the script, or dropped for an announcement; none: kept,
//! an announcement only when no identical one is). `hold_stream` and `renew_stream` take
//! and delete the list; `hold_stream` also answers the holder it replaced. `remove` deletes
//! all three keys.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use modelctx_store::SessionSnapshot;
use modelctx_store::{self as store, Lookup, RegistryError, Relayed, RelayedKind, StreamHold};
use redis::aio::ConnectionManager;
use tokio::sync::watch;

use crate::breaker::{Breaker, Failed};
use crate::keys::Keys;

crate::config::config! {
    /// Key names of a [`SessionRegistry`].
    pub struct SessionRegistryConfig {
        prefix: String = crate::DEFAULT_PREFIX.to_owned(),
    }

    /// Every key starts with `prefix` (default `"modelctx:"`); services share sessions
    /// only under the same prefix.
    prefix(prefix: impl Into<String>) => prefix = prefix.into();
}

/// A [`SessionRegistry`](store::SessionRegistry) in Redis: give the same one (same Redis, same prefix) to every
/// `StreamableHttpService` behind a load balancer
/// (modelctx-http's `StreamableHttpServerConfig::session_registry`),
/// and any of them serves any session's requests.
///
/// A session is a hash `<prefix>sess:{<id>}` (`rev`, the revision of its state, and
/// `state`, the server's [`SessionSnapshot`] as JSON once `initialize` is answered),
/// `PEXPIRE`d the session's idle time after its last request, on any service. The
/// sorted set `<prefix>sessions` (score: when the record expires, in Redis's own
/// clock) counts live sessions for the cap across services; expired entries are
/// purged whenever a session is created or counted. Each operation is one Lua script
/// (one round trip, atomic): two services creating the last session under the cap
/// cannot both succeed, and a state is never saved for a session deleted meanwhile.
///
/// Relays ([`SessionRegistry::relay`](store::SessionRegistry::relay), [`relay_acknowledged`](store::SessionRegistry::relay_acknowledged))
/// are published on `<prefix>relay:<instance>` (to one service) or `<prefix>relay` (to
/// all): a kind tag (`c`, `s`, `e`, `v`, `h`, `g`: the [`RelayedKind`]s in order;
/// `<tag>!<sender>!<token>` when acknowledged, answered `a` with the token on the
/// sender's channel), the session id and the message, a newline between each. Each
/// listening service holds one pub/sub connection subscribed to both; pub/sub
/// delivers at most once, as the trait allows.
///
/// A session's GET stream hold is `<prefix>sess:{<id>}:get` (the holder's name, `PX`
/// its lease) and the messages kept while none holds it the list
/// `<prefix>sess:{<id>}:out`; what holding, renewing, releasing and keeping promise is
/// the trait's ([`hold_stream`](store::SessionRegistry::hold_stream),
/// [`renew_stream`](store::SessionRegistry::renew_stream),
/// [`release_stream`](store::SessionRegistry::release_stream),
/// [`to_client`](store::SessionRegistry::to_client)). Both go with the record.
pub struct SessionRegistry {
    /// For the pub/sub connection each listening service opens.
    client: redis::Client,
    conn: ConnectionManager,
    keys: Keys,
    scripts: Arc<Scripts>,
    acks: Arc<Acks>,
    /// Requests fail at once while Redis gives no answer (see `breaker.rs`).
    breaker: Arc<Breaker>,
}

/// The acknowledgements [`SessionRegistry::relay_acknowledged`](store::SessionRegistry::relay_acknowledged) waits for: a counter
/// per message, raised by the listener of the service that sent it.
#[derive(Default)]
struct Acks {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, watch::Sender<usize>>>,
}

impl Acks {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, watch::Sender<usize>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One more service took message `token` in.
    fn acknowledged(&self, token: &str) {
        if let Ok(token) = token.parse::<u64>()
            && let Some(count) = self.waiting().get(&token)
        {
            count.send_modify(|n| *n += 1);
        }
    }
}

/// What the listener of a service does with one pub/sub message.
enum Heard {
    /// A message relayed to the service, and where its acknowledgement goes (the
    /// sender's channel and its token) if the sender waits for one.
    Relayed(Relayed, Option<(String, String)>),
    /// An acknowledgement of the message this service sent as `token`.
    Ack(String),
    /// Not a message of this registry.
    Other,
}

struct Scripts {
    create: redis::Script,
    save: redis::Script,
    touch: redis::Script,
    remove: redis::Script,
    count: redis::Script,
    to_client: redis::Script,
    hold: redis::Script,
    renew: redis::Script,
    release: redis::Script,
}

modelctx_types::__debug_shows!(SessionRegistry, |v| { prefix: &v.keys.prefix(), .. });

/// Redis's clock in milliseconds, the same for every service.
const NOW: &str = "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)";

// Every session script gets KEYS: record, index, the GET stream's holder, the messages
// kept for the stream. What each one promises is the `SessionRegistry` method it
// serves; the comments say only what goes in and comes out.

/// ARGV: idle ms, cap, id. 1 created, 0 at the cap, -1 taken.
const CREATE: &str = "
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('HSET', KEYS[1], 'rev', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), ARGV[3])
return 1";

/// ARGV: idle ms, state, id. The new revision, or 0: no record.
const SAVE: &str = "
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), ARGV[3])
return rev";

/// ARGV: idle ms, known revision, id.
/// {'missing'} | {'new'} | {'same'} | {'state', rev, state}.
const TOUCH: &str = "
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[3])
  return {'missing'}
end
redis.call('PEXPIRE', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), ARGV[3])
local rev = redis.call('HGET', KEYS[1], 'rev') or '0'
if rev == '0' then return {'new'} end
if rev == ARGV[2] then return {'same'} end
return {'state', rev, redis.call('HGET', KEYS[1], 'state') or ''}";

/// ARGV: id.
const REMOVE: &str = "
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1";

/// ARGV: message, announcement (1/0), keep, the relay channels' prefix, id.
/// 0: no session; 1: dropped (an announcement); 2: relayed to the holder; 3: kept.
const TO_CLIENT: &str = "
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local holder = redis.call('GET', KEYS[3])
if holder then
  if ARGV[2] == '1' then return 1 end
  local instance = string.match(holder, '^(.*)/[^/]*$') or holder
  redis.call('PUBLISH', ARGV[4] .. instance, 's\\n' .. ARGV[5] .. '\\n' .. ARGV[1])
  return 2
end
if ARGV[2] == '1' and redis.call('LPOS', KEYS[4], ARGV[1]) then return 1 end
redis.call('RPUSH', KEYS[4], ARGV[1])
redis.call('LTRIM', KEYS[4], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[4], math.max(redis.call('PTTL', KEYS[1]), 1))
return 3";

/// The hold's expiry: `lease` (ARGV[2]), never past the record's.
const LEASE: &str = "
local function lease(ms)
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then ttl = ms end
  return math.max(math.min(ms, ttl), 1)
end
local function take(tag)
  local kept = redis.call('LRANGE', KEYS[4], 0, -1)
  redis.call('DEL', KEYS[4])
  table.insert(kept, 1, tag)
  return kept
end";

/// ARGV: holder, lease ms, take over (1/0), the holder's instance prefix (`<instance>/`).
/// {'held', previous holder or '', kept...} | {'busy'}: another service holds the stream.
const HOLD: &str = "
if redis.call('EXISTS', KEYS[1]) == 0 then return {'held', ''} end
local cur = redis.call('GET', KEYS[3])
if cur and ARGV[3] ~= '1' and cur ~= ARGV[1] and string.sub(cur, 1, #ARGV[4]) ~= ARGV[4] then
  return {'busy'}
end
local released = redis.call('HGET', KEYS[1], 'released')
redis.call('HDEL', KEYS[1], 'released')
redis.call('SET', KEYS[3], ARGV[1], 'PX', lease(tonumber(ARGV[2])))
local kept = take('held')
table.insert(kept, 2, cur or released or '')
return kept";

/// ARGV: holder, lease ms. {'held', kept...} | {'lost'}: another holder, or no session.
const RENEW: &str = "
if redis.call('EXISTS', KEYS[1]) == 0 then return {'lost'} end
local cur = redis.call('GET', KEYS[3])
if cur and cur ~= ARGV[1] then return {'lost'} end
redis.call('SET', KEYS[3], ARGV[1], 'PX', lease(tonumber(ARGV[2])))
if cur then return {'held'} end
return take('held')";

/// ARGV: holder.
const RELEASE: &str = "
if redis.call('GET', KEYS[3]) == ARGV[1] then
  redis.call('DEL', KEYS[3])
  if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'released', ARGV[1]) end
end
return 1";

/// KEYS: index. The number of live sessions.
const COUNT: &str = "
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])";

fn script(body: &str) -> redis::Script {
    redis::Script::new(&format!("{NOW}\n{body}"))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// The answer of the hold and renew scripts: `held` and the messages kept, or `not`.
fn held_or_not(mut reply: Vec<String>, not: &str) -> Result<Option<Vec<String>>, RegistryError> {
    match reply.first().map(String::as_str) {
        Some("held") => {
            reply.remove(0);
            Ok(Some(reply))
        }
        Some(other) if other == not => Ok(None),
        _ => Err(RegistryError::new("unexpected answer from the hold script")),
    }
}

/// The tag of a relayed message's kind on the wire.
fn kind_tag(kind: RelayedKind) -> &'static str {
    match kind {
        RelayedKind::ForClient => "s",
        RelayedKind::Ended => "e",
        RelayedKind::Changed => "v",
        RelayedKind::HandOver => "h",
        RelayedKind::HandedOver => "g",
        _ => "c",
    }
}

/// Reads one relay payload: `<kind>[!<from>!<token>]\n<session>\n<message>`, or an
/// acknowledgement `a\n\n<token>`.
fn read_payload(payload: &str) -> Heard {
    let Some((tag, rest)) = payload.split_once('\n') else {
        return Heard::Other;
    };
    let Some((session, message)) = rest.split_once('\n') else {
        return Heard::Other;
    };
    if tag == "a" {
        return Heard::Ack(message.to_owned());
    }
    let (kind, owed) = match tag.split_once('!') {
        Some((kind, reply)) => match reply.split_once('!') {
            Some((from, token)) => (kind, Some((from.to_owned(), token.to_owned()))),
            None => return Heard::Other,
        },
        None => (tag, None),
    };
    let relayed = match kind {
        "c" => Relayed::new(session, message),
        "s" => Relayed::for_client(session, message),
        "e" => Relayed::ended(session),
        "v" => Relayed::changed(session, message),
        "h" => Relayed::of_kind(RelayedKind::HandOver, session, message),
        "g" => Relayed::of_kind(RelayedKind::HandedOver, session, message),
        _ => return Heard::Other,
    };
    Heard::Relayed(relayed, owed)
}

fn unavailable(e: redis::RedisError) -> RegistryError {
    RegistryError::new(format!("Redis: {e}"))
}

impl SessionRegistry {
    /// A registry on `conn`, listening for relayed messages on connections of
    /// `client` (the same Redis).
    pub fn new(
        client: redis::Client,
        conn: ConnectionManager,
        config: SessionRegistryConfig,
    ) -> Self {
        Self {
            client,
            breaker: Breaker::pinging(conn.clone()),
            conn,
            keys: Keys::new(&config.prefix),
            acks: Arc::default(),
            scripts: Arc::new(Scripts {
                create: script(CREATE),
                save: script(SAVE),
                touch: script(TOUCH),
                remove: script(REMOVE),
                count: script(COUNT),
                to_client: script(TO_CLIENT),
                hold: script(&format!("{LEASE}\n{HOLD}")),
                renew: script(&format!("{LEASE}\n{RENEW}")),
                release: script(RELEASE),
            }),
        }
    }

    /// Connects to the Redis at `url` with a reconnecting [`ConnectionManager`] and
    /// builds a registry on it.
    pub async fn connect(
        url: &str,
        config: SessionRegistryConfig,
    ) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(url)?;
        Ok(Self::new(client, crate::connect(url).await?, config))
    }

    /// Runs one of the session scripts on `session`'s record and the index, with
    /// `args`; the future owns what it needs.
    fn run<T: redis::FromRedisValue + Send + 'static>(
        &self,
        pick: fn(&Scripts) -> &redis::Script,
        session: &str,
        args: Vec<String>,
    ) -> BoxFuture<'static, Result<T, RegistryError>> {
        let mut conn = self.conn.clone();
        let scripts = self.scripts.clone();
        let keys = [
            self.keys.session(session),
            self.keys.sessions(),
            self.keys.session_holder(session),
            self.keys.session_kept(session),
        ];
        let breaker = self.breaker.clone();
        Box::pin(async move {
            let mut call = pick(&scripts).prepare_invoke();
            for key in &keys {
                call.key(key);
            }
            for arg in &args {
                call.arg(arg);
            }
            let trip = async {
                match call.invoke_async(&mut conn).await {
                    // The connection broke (Redis restarted): the manager reconnects,
                    // and one more try tells the request what the new Redis holds
                    // instead of failing it for the old connection. Not after a time
                    // out: Redis is away, and the request has waited long enough.
                    Err(e) if !e.is_timeout() && (e.is_connection_dropped() || e.is_io_error()) => {
                        call.invoke_async(&mut conn).await
                    }
                    other => other,
                }
            };
            breaker.run(trip).await.map_err(|failed| match failed {
                Failed::Away => RegistryError::new(
                    "Redis: away (a round trip got no answer; nothing is sent until it answers again)",
                ),
                Failed::Redis(e) => unavailable(e),
            })
        })
    }
}

impl store::SessionRegistry for SessionRegistry {
    fn create(
        &self,
        session: &str,
        idle: Duration,
        max_sessions: usize,
    ) -> BoxFuture<'static, Result<bool, RegistryError>> {
        let args = vec![
            millis(idle).to_string(),
            max_sessions.to_string(),
            session.to_owned(),
        ];
        let created = self.run::<i64>(|s| &s.create, session, args);
        Box::pin(async move {
            match created.await? {
                1 => Ok(true),
                0 => Ok(false),
                _ => Err(RegistryError::new("the new session's id is taken")),
            }
        })
    }

    fn save(
        &self,
        session: &str,
        snapshot: &SessionSnapshot,
        idle: Duration,
    ) -> BoxFuture<'static, Result<Option<u64>, RegistryError>> {
        let text = match serde_json::to_string(snapshot) {
            Ok(text) => text,
            Err(e) => {
                let error = RegistryError::new(format!("the session state does not encode: {e}"));
                return Box::pin(async move { Err(error) });
            }
        };
        let args = vec![millis(idle).to_string(), text, session.to_owned()];
        let saved = self.run::<u64>(|s| &s.save, session, args);
        Box::pin(async move { Ok(Some(saved.await?).filter(|r| *r > 0)) })
    }

    fn touch(
        &self,
        session: &str,
        idle: Duration,
        known: u64,
    ) -> BoxFuture<'static, Result<Lookup, RegistryError>> {
        let args = vec![
            millis(idle).to_string(),
            known.to_string(),
            session.to_owned(),
        ];
        let touched = self.run::<Vec<String>>(|s| &s.touch, session, args);
        Box::pin(async move {
            let reply = touched.await?;
            match reply.as_slice() {
                [kind] if kind == "missing" => Ok(Lookup::Missing),
                [kind] if kind == "new" => Ok(Lookup::Uninitialized),
                [kind] if kind == "same" => Ok(Lookup::Unchanged),
                [kind, revision, state] if kind == "state" => {
                    let revision = revision
                        .parse()
                        .map_err(|_| RegistryError::new("a session's revision is not a number"))?;
                    let snapshot = serde_json::from_str(state).map_err(|e| {
                        RegistryError::new(format!("a session's state does not decode: {e}"))
                    })?;
                    Ok(Lookup::State {
                        revision,
                        snapshot: Box::new(snapshot),
                    })
                }
                _ => Err(RegistryError::new(
                    "unexpected answer from the touch script",
                )),
            }
        })
    }

    fn remove(&self, session: &str) -> BoxFuture<'static, Result<(), RegistryError>> {
        let removed = self.run::<i64>(|s| &s.remove, session, vec![session.to_owned()]);
        Box::pin(async move { removed.await.map(drop) })
    }

    fn to_client(
        &self,
        session: &str,
        message: &str,
        announcement: bool,
        keep: usize,
    ) -> BoxFuture<'static, Result<(), RegistryError>> {
        let args = vec![
            message.to_owned(),
            if announcement { "1" } else { "0" }.to_owned(),
            keep.max(1).to_string(),
            self.keys.relay_to(""),
            session.to_owned(),
        ];
        let sent = self.run::<i64>(|s| &s.to_client, session, args);
        Box::pin(async move { sent.await.map(drop) })
    }

    fn hold_stream(
        &self,
        session: &str,
        holder: &str,
        take_over: bool,
        lease: Duration,
    ) -> BoxFuture<'static, Result<Option<StreamHold>, RegistryError>> {
        // The service's part of the name: `<instance>/`.
        let service = holder
            .rfind('/')
            .map_or(holder, |slash| &holder[..=slash])
            .to_owned();
        let args = vec![
            holder.to_owned(),
            millis(lease).to_string(),
            if take_over { "1" } else { "0" }.to_owned(),
            service,
        ];
        let held = self.run::<Vec<String>>(|s| &s.hold, session, args);
        Box::pin(async move {
            let Some(mut kept) = held_or_not(held.await?, "busy")? else {
                return Ok(None);
            };
            if kept.is_empty() {
                return Err(RegistryError::new("unexpected answer from the hold script"));
            }
            let previous = Some(kept.remove(0)).filter(|p| !p.is_empty());
            Ok(Some(StreamHold::new(kept, previous)))
        })
    }

    fn renew_stream(
        &self,
        session: &str,
        holder: &str,
        lease: Duration,
    ) -> BoxFuture<'static, Result<Option<Vec<String>>, RegistryError>> {
        let args = vec![holder.to_owned(), millis(lease).to_string()];
        let renewed = self.run::<Vec<String>>(|s| &s.renew, session, args);
        Box::pin(async move { held_or_not(renewed.await?, "lost") })
    }

    fn release_stream(
        &self,
        session: &str,
        holder: &str,
    ) -> BoxFuture<'static, Result<(), RegistryError>> {
        let released = self.run::<i64>(|s| &s.release, session, vec![holder.to_owned()]);
        Box::pin(async move { released.await.map(drop) })
    }

    fn relay(
        &self,
        to: Option<&str>,
        relayed: Relayed,
    ) -> BoxFuture<'static, Result<(), RegistryError>> {
        let mut conn = self.conn.clone();
        let channel = match to {
            Some(instance) => self.keys.relay_to(instance),
            None => self.keys.relay_all(),
        };
        let payload = format!(
            "{}\n{}\n{}",
            kind_tag(relayed.kind),
            relayed.session,
            relayed.message
        );
        let to = to.map(str::to_owned);
        Box::pin(async move {
            let heard: i64 = redis::cmd("PUBLISH")
                .arg(channel)
                .arg(payload)
                .query_async(&mut conn)
                .await
                .map_err(unavailable)?;
            match to {
                Some(instance) if heard == 0 => Err(RegistryError::new(format!(
                    "no service listens as {instance}"
                ))),
                _ => Ok(()),
            }
        })
    }

    fn relay_acknowledged(
        &self,
        from: &str,
        relayed: Relayed,
        wait: Duration,
    ) -> BoxFuture<'static, Result<bool, RegistryError>> {
        let mut conn = self.conn.clone();
        let channel = self.keys.relay_all();
        let acks = self.acks.clone();
        let token = acks.next.fetch_add(1, Ordering::Relaxed);
        // Counting from before the message goes out: an acknowledgement may come back
        // before `PUBLISH` answers.
        let (count, mut counted) = watch::channel(0usize);
        acks.waiting().insert(token, count);
        let payload = format!(
            "{}!{from}!{token}\n{}\n{}",
            kind_tag(relayed.kind),
            relayed.session,
            relayed.message
        );
        Box::pin(async move {
            let heard: Result<usize, _> = redis::cmd("PUBLISH")
                .arg(channel)
                .arg(payload)
                .query_async(&mut conn)
                .await;
            let all = match heard {
                Ok(listeners) => tokio::time::timeout(wait, counted.wait_for(|n| *n >= listeners))
                    .await
                    .is_ok_and(|r| r.is_ok()),
                Err(_) => false,
            };
            acks.waiting().remove(&token);
            heard.map_err(unavailable)?;
            Ok(all)
        })
    }

    fn listen(
        &self,
        instance: &str,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Relayed>, RegistryError>> {
        let client = self.client.clone();
        let channels = [self.keys.relay_to(instance), self.keys.relay_all()];
        let conn = self.conn.clone();
        let acks = self.acks.clone();
        let relay_prefix = self.keys.relay_to("");
        Box::pin(async move {
            let subscribe = async {
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe(&channels[..]).await?;
                Ok::<_, redis::RedisError>(pubsub)
            };
            let pubsub = tokio::time::timeout(crate::CONNECT_TIMEOUT, subscribe)
                .await
                .map_err(|_| RegistryError::new("Redis: subscribing timed out"))?
                .map_err(unavailable)?;
            // The acknowledgement of the message handed out last is sent when the
            // service asks for the next one: it has taken the last one in by then.
            let state = (pubsub.into_on_message(), conn, None::<(String, String)>);
            let relayed = futures::stream::unfold(state, move |(mut messages, mut conn, owed)| {
                let acks = acks.clone();
                let relay_prefix = relay_prefix.clone();
                async move {
                    if let Some((to, token)) = owed {
                        let ack = format!("a\n\n{token}");
                        let sent: Result<i64, _> = redis::cmd("PUBLISH")
                            .arg(format!("{relay_prefix}{to}"))
                            .arg(ack)
                            .query_async(&mut conn)
                            .await;
                        // Lost: the sender waits its bound, then goes on.
                        drop(sent);
                    }
                    loop {
                        let msg = messages.next().await?;
                        let payload: Option<String> = msg.get_payload().ok();
                        match payload.as_deref().map_or(Heard::Other, read_payload) {
                            Heard::Relayed(relayed, owed) => {
                                return Some((relayed, (messages, conn, owed)));
                            }
                            Heard::Ack(token) => acks.acknowledged(&token),
                            Heard::Other => {}
                        }
                    }
                }
            });
            Ok(relayed.boxed())
        })
    }

    fn count(&self) -> BoxFuture<'static, Result<usize, RegistryError>> {
        let mut conn = self.conn.clone();
        let scripts = self.scripts.clone();
        let index = self.keys.sessions();
        Box::pin(async move {
            let mut call = scripts.count.prepare_invoke();
            call.key(&index);
            call.invoke_async(&mut conn).await.map_err(unavailable)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_payloads_read_back_with_what_is_owed() {
        let Heard::Relayed(relayed, owed) = read_payload("v!0123456789abcdef!7\nsess\n{\"a\":1}")
        else {
            panic!("not read as a relayed message");
        };
        assert_eq!(relayed, Relayed::changed("sess", "{\"a\":1}"));
        assert_eq!(owed, Some(("0123456789abcdef".to_owned(), "7".to_owned())));
        let Heard::Relayed(relayed, owed) = read_payload("s\nsess\n{}") else {
            panic!("not read as a relayed message");
        };
        assert_eq!(relayed, Relayed::for_client("sess", "{}"));
        assert_eq!(owed, None);
        assert!(matches!(read_payload("a\n\n7"), Heard::Ack(token) if token == "7"));
        assert!(matches!(read_payload("v!nobody\nsess\n{}"), Heard::Other));
        assert!(matches!(read_payload("x\nsess\n{}"), Heard::Other));
        assert!(matches!(read_payload("no newline"), Heard::Other));
    }
}
