//! [`EventStore`]: the SSE events of resumable streams, one Redis Stream per stream.
//!
//! One Redis Stream per SSE stream, `<prefix>ev:{<session>}:<stream>`, entry id `0-<seq+1>`
//! (so `XRANGE (0-<n>` is the replay), trimmed with exact `MAXLEN` per append and expiring
//! `ttl` after its last event. A sorted set per session, `<prefix>ev:{<session>}`, lists
//! its streams (scored by the instance's clock when first stored), evicts the oldest over
//! `max_streams_per_session`, and is what `forget_session` walks. Append and eviction are
//! one Lua script; the braces keep a session's keys in one hash slot.
//!
//! `store` and `forget_session` go into a channel to the store's writer task, counted
//! against `max_queued`; the writer drains up to 256 operations and sends them as one
//! pipeline. A replay flushes the pipeline, then reads (`MULTI`: first entry, last entry,
//! the range), so it sees every earlier write; a barrier (`EventStore::flushed`) flushes
//! the pipeline and answers once Redis has, so every earlier write is readable from any
//! service. The replay refuses what the in-memory store refuses (an unknown session or
//! stream, an id past the end, an id before the first kept event but one).
//!
//! Invariant: a replay is exact or refused. A write Redis refused, or one dropped because
//! the queue was full, marks its (session, stream) damaged in this process; replays of a
//! damaged stream answer `None` (the transport answers 400) and its later events are not
//! written. `forget_session` clears the marks.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::FutureExt;
use futures::future::BoxFuture;
use modelctx_store::{self as store, EventId, Replay};
use redis::aio::ConnectionManager;
use redis::streams::StreamRangeReply;
use tokio::sync::{mpsc, oneshot};

use crate::keys::Keys;
use runs::{RunOp, RunScripts};

mod runs;

crate::config::config! {
    /// Bounds and key names of a [`EventStore`].
    pub struct EventStoreConfig {
        prefix: String = crate::DEFAULT_PREFIX.to_owned(),
        ttl: Duration = Duration::from_secs(3600),
        max_events_per_stream: usize = 1024,
        max_streams_per_session: usize = 256,
        max_queued: usize = 65_536,
        liveness: Duration = Duration::from_secs(3),
    }

    /// Every key starts with `prefix` (default `"modelctx:"`), so several deployments can
    /// share one Redis.
    prefix(prefix: impl Into<String>) => prefix = prefix.into();

    /// How long a stream's events outlive its last event (default one hour): the key
    /// expires then, whether or not the session ended cleanly. Rounded up to 1 ms.
    ttl(ttl: Duration) => ttl = ttl.max(Duration::from_millis(1));

    /// Events kept per stream (default 1024, as the in-memory store): older ones are
    /// trimmed, and a resumption from before them is refused.
    max_events_per_stream(events: usize) => max_events_per_stream = events.max(1);

    /// Streams kept per session (default 256, as the in-memory store): the stream first
    /// stored longest ago is dropped first.
    max_streams_per_session(streams: usize) => max_streams_per_session = streams.max(1);

    /// Writes queued for Redis at most (default 65,536). When Redis falls that far
    /// behind, further events are not stored and their streams are marked damaged: a
    /// resumption of a damaged stream is refused rather than replayed with a gap.
    max_queued(writes: usize) => max_queued = writes.max(1);

    /// How long a service counts as alive after it last said so (default 3 s; it says
    /// so every quarter of that). A request answered on a stream of a shared session
    /// whose service has not said so for this long is taken over by another service
    /// that a client resumes the stream on (see [`RunStore`](modelctx_store::RunStore)):
    /// shorter finishes an interrupted answer sooner, longer tolerates longer stalls
    /// of a live service. Rounded up to 4 ms.
    liveness(liveness: Duration) => liveness = liveness.max(Duration::from_millis(4));
}

/// An [`EventStore`](store::EventStore) in Redis, for servers whose event streams must outlive the process
/// or be read by another one.
///
/// Each stream of a session is a Redis Stream (`<prefix>ev:{<session>}:<stream>`,
/// entry id `0-<seq + 1>`, trimmed to [`max_events_per_stream`], expiring
/// [`ttl`] after its last event); a sorted set per session
/// (`<prefix>ev:{<session>}`) lists its streams for eviction and for
/// `forget_session`. The braces make a session's keys one hash slot.
///
/// `store` and `forget_session` never wait for Redis: they queue the write for a task
/// of the store's own (started by [`new`](Self::new), on the current tokio runtime),
/// which sends queued writes as one pipeline. Replays go through the same queue, so a
/// replay sees every event stored before it; so does
/// [`flushed`](store::EventStore::flushed), answered once the writes queued before it are
/// sent and answered by Redis. A write Redis refused, or one dropped
/// because the queue was full, marks its stream damaged in this process: its
/// resumption is refused (the HTTP transport answers 400) instead of missing events.
///
/// [`max_events_per_stream`]: EventStoreConfig::max_events_per_stream
/// [`ttl`]: EventStoreConfig::ttl
pub struct EventStore {
    tx: mpsc::UnboundedSender<Op>,
    shared: Arc<Shared>,
}

modelctx_types::__debug_shows!(EventStore, |v| {
    prefix: &v.shared.keys.prefix(),
    queued: &v.shared.queued.load(Ordering::Relaxed),
});

pub(crate) struct Shared {
    pub(crate) keys: Keys,
    pub(crate) config: EventStoreConfig,
    queued: AtomicUsize,
    /// Streams with an event that never reached Redis: (session, stream).
    damaged: Mutex<HashSet<(Arc<str>, u64)>>,
}

impl Shared {
    fn damage(&self, session: &Arc<str>, stream: u64) {
        self.damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((session.clone(), stream));
    }

    fn is_damaged(&self, session: &str, stream: u64) -> bool {
        self.damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&(Arc::from(session), stream))
    }
}

pub(crate) enum Op {
    Store {
        session: Arc<str>,
        id: EventId,
        data: Arc<str>,
        at_ms: u64,
    },
    Forget {
        session: Arc<str>,
    },
    Replay {
        session: Arc<str>,
        after: EventId,
        reply: oneshot::Sender<Replay>,
    },
    /// A barrier: answered once every op queued before it has reached Redis.
    Flush {
        reply: oneshot::Sender<()>,
    },
    /// A run record's write or read (`runs.rs`).
    Run(RunOp),
}

/// Appends one event, refreshes the expiry of the stream and of the session's index,
/// and, for a stream new to the index, evicts the oldest streams over the bound.
/// KEYS: stream, index. ARGV: entry id, data, max events, ttl ms, score, stream
/// number, max streams, stream key prefix.
const STORE: &str = r"
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], ARGV[1], 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if redis.call('ZADD', KEYS[2], 'NX', ARGV[5], ARGV[6]) == 1 then
  local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[7])
  if extra > 0 then
    local old = redis.call('ZPOPMIN', KEYS[2], extra)
    for i = 1, #old, 2 do redis.call('DEL', ARGV[8] .. old[i]) end
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
";

/// Deletes every stream of a session (with its run record) and its index. KEYS: index. ARGV: stream key
/// prefix.
const FORGET: &str = r"
local streams = redis.call('ZRANGE', KEYS[1], 0, -1)
for i = 1, #streams do redis.call('DEL', ARGV[1] .. streams[i], ARGV[1] .. streams[i] .. ':run') end
redis.call('DEL', KEYS[1])
return #streams
";

/// Writes queued ops sent in one pipeline at most.
const BATCH: usize = 256;

impl EventStore {
    /// A store writing through `conn`. Starts the store's writer task on the current
    /// tokio runtime (it ends when the store is dropped).
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(conn: ConnectionManager, config: EventStoreConfig) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            keys: Keys::new(&config.prefix),
            config,
            queued: AtomicUsize::new(0),
            damaged: Mutex::new(HashSet::new()),
        });
        tokio::spawn(writer(conn, rx, shared.clone()));
        Self { tx, shared }
    }

    /// Connects to the Redis at `url` (`redis://host:port/db`) with a reconnecting
    /// [`ConnectionManager`] and builds a store on it.
    pub async fn connect(url: &str, config: EventStoreConfig) -> Result<Self, redis::RedisError> {
        let conn = crate::connect(url).await?;
        Ok(Self::new(conn, config))
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    pub(crate) fn enqueue(&self, op: Op) -> Result<(), Op> {
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        self.tx.send(op).map_err(|e| {
            self.shared.queued.fetch_sub(1, Ordering::AcqRel);
            e.0
        })
    }
}

impl store::EventStore for EventStore {
    fn store(&self, session: &str, id: EventId, data: Arc<str>) {
        let session: Arc<str> = Arc::from(session);
        if self.shared.is_damaged(&session, id.stream) {
            return;
        }
        if self.shared.queued.load(Ordering::Acquire) >= self.shared.config.max_queued {
            self.shared.damage(&session, id.stream);
            return;
        }
        let at_ms = unix_ms(SystemTime::now());
        let op = Op::Store {
            session: session.clone(),
            id,
            data,
            at_ms,
        };
        if self.enqueue(op).is_err() {
            self.shared.damage(&session, id.stream);
        }
    }

    fn replay_after(&self, session: &str, after: EventId) -> BoxFuture<'static, Replay> {
        if self.shared.is_damaged(session, after.stream) {
            return futures::future::ready(None).boxed();
        }
        let (reply, rx) = oneshot::channel();
        let op = Op::Replay {
            session: Arc::from(session),
            after,
            reply,
        };
        if self.enqueue(op).is_err() {
            return futures::future::ready(None).boxed();
        }
        async move { rx.await.ok().flatten() }.boxed()
    }

    fn forget_session(&self, session: &str) {
        let session: Arc<str> = Arc::from(session);
        self.shared
            .damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(s, _)| *s != session);
        // Dropped only when the writer is gone; the keys then expire on their own.
        let _ = self.enqueue(Op::Forget { session });
    }

    fn flushed(&self, _session: &str) -> BoxFuture<'static, ()> {
        let (reply, rx) = oneshot::channel();
        // A writer that is gone writes nothing more: nothing to wait for.
        if self.enqueue(Op::Flush { reply }).is_err() {
            return futures::future::ready(()).boxed();
        }
        async move {
            let _ = rx.await;
        }
        .boxed()
    }

    fn runs(&self) -> Option<&dyn modelctx_store::RunStore> {
        Some(self)
    }
}

async fn writer(
    mut conn: ConnectionManager,
    mut rx: mpsc::UnboundedReceiver<Op>,
    shared: Arc<Shared>,
) {
    let store = redis::Script::new(STORE);
    let forget = redis::Script::new(FORGET);
    let runs = RunScripts::new();
    // Every pipeline starts by loading the scripts its writes use: a restarted Redis
    // knows none, and a pipeline is not retried on `NOSCRIPT`.
    let start = |pipe: &mut redis::Pipeline| {
        if pipe.is_empty() {
            pipe.load_script(&store)
                .ignore()
                .load_script(&forget)
                .ignore();
            runs.load(pipe);
        }
    };
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        shared.queued.fetch_sub(batch.len(), Ordering::AcqRel);
        let mut pipe = redis::pipe();
        let mut written: Vec<(Arc<str>, u64)> = Vec::new();
        for op in batch.drain(..) {
            match op {
                Op::Store {
                    session,
                    id,
                    data,
                    at_ms,
                } => {
                    start(&mut pipe);
                    let c = &shared.config;
                    pipe.invoke_script(
                        store
                            .key(shared.keys.stream(&session, id.stream))
                            .key(shared.keys.stream_index(&session))
                            .arg(entry_id(id.seq))
                            .arg(&*data)
                            .arg(c.max_events_per_stream)
                            .arg(millis(c.ttl))
                            .arg(at_ms)
                            .arg(id.stream)
                            .arg(c.max_streams_per_session)
                            .arg(shared.keys.stream_prefix(&session)),
                    )
                    .ignore();
                    written.push((session, id.stream));
                }
                Op::Forget { session } => {
                    start(&mut pipe);
                    pipe.invoke_script(
                        forget
                            .key(shared.keys.stream_index(&session))
                            .arg(shared.keys.stream_prefix(&session)),
                    )
                    .ignore();
                }
                Op::Replay {
                    session,
                    after,
                    reply,
                } => {
                    flush(&mut conn, &mut pipe, &mut written, &shared).await;
                    let replay = if shared.is_damaged(&session, after.stream) {
                        None
                    } else {
                        read(
                            &mut conn,
                            &shared.keys.stream(&session, after.stream),
                            after,
                        )
                        .await
                    };
                    let _ = reply.send(replay);
                }
                Op::Flush { reply } => {
                    // The writes queued before it are in the pipeline: sent (and
                    // answered) before the reply.
                    flush(&mut conn, &mut pipe, &mut written, &shared).await;
                    let _ = reply.send(());
                }
                Op::Run(op) if op.is_write() => {
                    start(&mut pipe);
                    if let Some(stream) = op.queue(&mut pipe, &runs, &shared) {
                        written.push(stream);
                    }
                }
                Op::Run(op) => {
                    flush(&mut conn, &mut pipe, &mut written, &shared).await;
                    op.query(&mut conn, &runs, &shared).await;
                }
            }
        }
        flush(&mut conn, &mut pipe, &mut written, &shared).await;
    }
}

/// Sends the queued writes; a failed pipeline damages every stream it wrote to.
async fn flush(
    conn: &mut ConnectionManager,
    pipe: &mut redis::Pipeline,
    written: &mut Vec<(Arc<str>, u64)>,
    shared: &Shared,
) {
    if pipe.is_empty() {
        return;
    }
    let result: redis::RedisResult<()> = pipe.query_async(conn).await;
    pipe.clear();
    if result.is_err() {
        for (session, stream) in written.iter() {
            shared.damage(session, *stream);
        }
    }
    written.clear();
}

/// The events of `key` after `after`, with the in-memory store's rule: refused when
/// the stream is unknown, when `after` is past its end, or when events after `after`
/// were trimmed.
async fn read(conn: &mut ConnectionManager, key: &str, after: EventId) -> Replay {
    let (first, last, rest): (StreamRangeReply, StreamRangeReply, StreamRangeReply) = redis::pipe()
        .atomic()
        .cmd("XRANGE")
        .arg(key)
        .arg("-")
        .arg("+")
        .arg("COUNT")
        .arg(1)
        .cmd("XREVRANGE")
        .arg(key)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .cmd("XRANGE")
        .arg(key)
        .arg(format!("({}", entry_id(after.seq)))
        .arg("+")
        .query_async(conn)
        .await
        .ok()?;
    let first = seq_of(&first.ids.first()?.id)?;
    let last = seq_of(&last.ids.first()?.id)?;
    if after.seq.saturating_add(1) < first || after.seq > last {
        return None;
    }
    rest.ids
        .iter()
        .map(|entry| {
            let seq = seq_of(&entry.id)?;
            let data: String = entry.get("d")?;
            Some((
                EventId {
                    stream: after.stream,
                    seq,
                },
                Arc::from(data),
            ))
        })
        .collect()
}

/// The Redis Stream entry id of event `seq` (`0-0` is not a valid entry id).
fn entry_id(seq: u64) -> String {
    format!("0-{}", seq.saturating_add(1))
}

pub(crate) fn seq_of(entry: &str) -> Option<u64> {
    let (_, n) = entry.split_once('-')?;
    n.parse::<u64>().ok()?.checked_sub(1)
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_map_both_ways() {
        for seq in [0, 1, 41, u64::MAX - 1] {
            assert_eq!(seq_of(&entry_id(seq)), Some(seq));
        }
        assert_eq!(seq_of("0-0"), None);
        assert_eq!(seq_of("junk"), None);
    }
}
