//! Resumability of the streamable HTTP transport: SSE event ids and the store that
//! replays missed events.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use crate::table::shrink_drained;
use futures_core::future::BoxFuture;

/// The id of one SSE event: the stream it belongs to and its position on that stream.
///
/// Written as `<stream>-<seq>`. Stream 0 is the session's standalone GET stream; every
/// POST that carries requests opens a new stream. Ids are unique across a session's
/// streams, so a `Last-Event-ID` names exactly one stream and one place on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId {
    /// The stream.
    pub stream: u64,
    /// The position on the stream, from 0 (the priming event).
    pub seq: u64,
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.stream, self.seq)
    }
}

impl FromStr for EventId {
    type Err = InvalidEventId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (stream, seq) = s.split_once('-').ok_or(InvalidEventId)?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(stream) || !digits(seq) {
            return Err(InvalidEventId);
        }
        Ok(Self {
            stream: stream.parse().map_err(|_| InvalidEventId)?,
            seq: seq.parse().map_err(|_| InvalidEventId)?,
        })
    }
}

/// A string that is not an [`EventId`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidEventId;

impl fmt::Display for InvalidEventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not an event id of this server")
    }
}

impl std::error::Error for InvalidEventId {}

/// What [`EventStore::replay_after`] answers: the missed events in order, or `None` when
/// the id cannot be mapped.
pub type Replay = Option<Vec<(EventId, Arc<str>)>>;

/// Keeps the events of a session's SSE streams so a client can resume a broken stream
/// with `Last-Event-ID`.
///
/// `store` and `forget_session` are called while the session's routing state is locked,
/// so they must return promptly and never block on I/O: a remote store queues them and
/// writes behind. `replay_after` is called with no lock held and may do I/O; its answer
/// must reflect every `store` and `forget_session` call made before it (a write-behind
/// store sends reads through the same ordered queue as its writes). The transport reads
/// again for events stored while a replay was in flight, so none is lost or repeated.
pub trait EventStore: Send + Sync + 'static {
    /// Records event `id` of `session`. `data` is the JSON-RPC message text, empty for a
    /// priming event.
    fn store(&self, session: &str, id: EventId, data: Arc<str>);

    /// The events of `after`'s stream that came later than `after`, in order; `None`
    /// when `after` cannot be mapped (unknown session or stream, or events after it
    /// were already evicted, so the replay would have a gap) or the store cannot be
    /// read.
    fn replay_after(&self, session: &str, after: EventId) -> BoxFuture<'static, Replay>;

    /// Forgets everything of a session that ended.
    fn forget_session(&self, session: &str);

    /// Resolves once every event of `session` this store was given before the call is
    /// readable by `replay_after` from any service sharing the store (or will never
    /// be: a write the store failed). Called while the session's routing state is
    /// locked, so it must return promptly; the future is awaited with no lock held.
    /// The HTTP transport releases a shared session's hold on its GET stream only
    /// after this, so a service that takes the stream over next reads every event the
    /// hold stored. The default resolves at once: a store whose `store` writes before
    /// it returns.
    fn flushed(&self, session: &str) -> BoxFuture<'static, ()> {
        let _ = session;
        Box::pin(std::future::ready(()))
    }

    /// Where the requests running on the streams of shared sessions are recorded, when
    /// several services share this store (see [`RunStore`](crate::RunStore)); `None`
    /// (the default) when it is one service's: a stream is then resumed from the
    /// service running it only.
    fn runs(&self) -> Option<&dyn crate::RunStore> {
        None
    }
}

/// The default [`EventStore`]: in memory, bounded per stream and in streams per session.
#[derive(Debug)]
pub struct InMemoryEventStore {
    max_events_per_stream: usize,
    max_streams_per_session: usize,
    sessions: Mutex<foldhash::HashMap<Arc<str>, SessionEvents>>,
}

/// A session's streams, oldest first (the first evicted), each with its events. A list,
/// not a map: the stream written is nearly always the newest, found first from the
/// back, and a new one nearly always has the highest id yet, known absent unsearched.
#[derive(Debug, Default)]
struct SessionEvents {
    streams: VecDeque<(u64, Stream)>,
    /// The highest stream id stored so far.
    highest: Option<u64>,
}

/// One stream's events, oldest first: their positions and texts.
type Stream = VecDeque<(u64, Arc<str>)>;

impl SessionEvents {
    fn stream(&self, id: u64) -> Option<&Stream> {
        self.streams
            .iter()
            .rev()
            .find(|(s, _)| *s == id)
            .map(|(_, events)| events)
    }
}

impl InMemoryEventStore {
    /// Events kept per stream by default.
    pub const DEFAULT_MAX_EVENTS_PER_STREAM: usize = 1024;
    /// Streams kept per session by default (the oldest is evicted first).
    pub const DEFAULT_MAX_STREAMS_PER_SESSION: usize = 256;

    /// A store with the default bounds.
    pub fn new() -> Self {
        Self::with_limits(
            Self::DEFAULT_MAX_EVENTS_PER_STREAM,
            Self::DEFAULT_MAX_STREAMS_PER_SESSION,
        )
    }

    /// A store keeping at most `events` events per stream and `streams` streams per
    /// session.
    pub fn with_limits(events: usize, streams: usize) -> Self {
        Self {
            max_events_per_stream: events.max(1),
            max_streams_per_session: streams.max(1),
            sessions: Mutex::default(),
        }
    }
}

impl Default for InMemoryEventStore {
    fn default() -> Self {
        Self::new()
    }
}

impl EventStore for InMemoryEventStore {
    fn store(&self, session: &str, id: EventId, data: Arc<str>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let events = match sessions.get_mut(session) {
            Some(e) => e,
            None => sessions.entry(Arc::from(session)).or_default(),
        };
        let known = events.highest.is_some_and(|h| id.stream <= h);
        let found = known
            .then(|| events.streams.iter().rposition(|(s, _)| *s == id.stream))
            .flatten();
        let at = match found {
            Some(at) => at,
            None => {
                if events.streams.len() >= self.max_streams_per_session {
                    events.streams.pop_front();
                }
                events.streams.push_back((id.stream, Stream::new()));
                events.highest = events.highest.max(Some(id.stream));
                events.streams.len() - 1
            }
        };
        let stream = &mut events.streams[at].1;
        if stream.len() >= self.max_events_per_stream {
            stream.pop_front();
        }
        stream.push_back((id.seq, data));
    }

    fn replay_after(&self, session: &str, after: EventId) -> BoxFuture<'static, Replay> {
        Box::pin(std::future::ready(self.replay_now(session, after)))
    }

    fn forget_session(&self, session: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.remove(session);
        shrink_drained(&mut *sessions);
    }
}

impl InMemoryEventStore {
    fn replay_now(&self, session: &str, after: EventId) -> Replay {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let stream = sessions.get(session)?.stream(after.stream)?;
        let first = stream.front()?.0;
        let last = stream.back()?.0;
        // The id must be one we issued and still cover: events after it must all be here.
        if after.seq + 1 < first || after.seq > last {
            return None;
        }
        Some(
            stream
                .iter()
                .filter(|(seq, _)| *seq > after.seq)
                .map(|(seq, data)| {
                    let id = EventId {
                        stream: after.stream,
                        seq: *seq,
                    };
                    (id, data.clone())
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_reject_junk() {
        let id = EventId { stream: 3, seq: 7 };
        assert_eq!(id.to_string().parse::<EventId>(), Ok(id));
        for bad in ["", "3", "3-", "-7", "a-1", "1-2-3", "+1-2", "1- 2"] {
            assert!(bad.parse::<EventId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_session_table_gives_its_room_back_as_sessions_end() {
        let store = InMemoryEventStore::new();
        let names: Vec<String> = (0..5_000).map(|i| format!("s{i}")).collect();
        for name in &names {
            store.store(name, EventId { stream: 0, seq: 0 }, Arc::from(""));
        }
        let room = || store.sessions.lock().unwrap().capacity();
        assert!(room() >= 5_000);
        for name in &names {
            store.forget_session(name);
        }
        assert_eq!(room(), 0);
    }

    #[test]
    fn replays_only_its_stream_and_refuses_gaps() {
        let store = InMemoryEventStore::with_limits(2, 8);
        let data = |s: &str| Arc::<str>::from(s);
        for seq in 0..4 {
            store.store("s", EventId { stream: 1, seq }, data(&format!("a{seq}")));
            store.store("s", EventId { stream: 2, seq }, data(&format!("b{seq}")));
        }
        let got = store
            .replay_now("s", EventId { stream: 1, seq: 2 })
            .unwrap();
        assert_eq!(got, vec![(EventId { stream: 1, seq: 3 }, data("a3"))]);
        // seq 0 was evicted: replaying after it would skip seq 1.
        assert!(
            store
                .replay_now("s", EventId { stream: 1, seq: 0 })
                .is_none()
        );
        assert!(
            store
                .replay_now("s", EventId { stream: 9, seq: 0 })
                .is_none()
        );
        assert!(
            store
                .replay_now("t", EventId { stream: 1, seq: 3 })
                .is_none()
        );
        store.forget_session("s");
        assert!(
            store
                .replay_now("s", EventId { stream: 1, seq: 3 })
                .is_none()
        );
    }

    #[test]
    fn a_session_keeps_its_newest_streams() {
        let store = InMemoryEventStore::with_limits(4, 2);
        let event = |stream, seq| {
            (
                EventId { stream, seq },
                Arc::<str>::from(format!("{stream}-{seq}")),
            )
        };
        for (id, data) in [event(1, 0), event(2, 0), event(1, 1), event(3, 0)] {
            store.store("s", id, data);
        }
        // Stream 1 came first: the third stream evicted it, writes to it since or not.
        assert!(
            store
                .replay_now("s", EventId { stream: 1, seq: 0 })
                .is_none()
        );
        assert_eq!(
            store.replay_now("s", EventId { stream: 2, seq: 0 }),
            Some(vec![])
        );
        store.store("s", event(2, 1).0, event(2, 1).1);
        assert_eq!(
            store.replay_now("s", EventId { stream: 2, seq: 0 }),
            Some(vec![event(2, 1)])
        );
        assert_eq!(
            store.replay_now("s", EventId { stream: 3, seq: 0 }),
            Some(vec![])
        );
        // A stream with a lower id than the others (the standalone stream) is new too.
        store.store("s", event(0, 0).0, event(0, 0).1);
        store.store("s", event(0, 1).0, event(0, 1).1);
        assert_eq!(
            store.replay_now("s", EventId { stream: 0, seq: 0 }),
            Some(vec![event(0, 1)])
        );
        assert!(
            store
                .replay_now("s", EventId { stream: 2, seq: 0 })
                .is_none()
        );
    }
}
