//! One hosted MCP session: its routing table, its SSE streams, and the transport handed
//! to the session runtime.
//!
//! - `inbound`: the messages of POSTs handed to the session's runtime;
//! - `streams`: the answers a POST or GET gets (SSE streams or JSON), opened and resumed;
//! - `outbound`: what the runtime sends, routed to the stream or body it belongs to;
//! - `lending`: a session of the stateless era kept between POSTs;
//! - `handshake`, `owner`: a new session's handshake, and the caller it belongs to;
//! - `transport`: the [`Transport`](modelctx_transport::Transport) handed to the runtime.
//!
//! What a session shared with other processes adds (the hold of its GET stream, the
//! client's `notifications/initialized` seen elsewhere, runs taken over) is in
//! [`shared`](super::shared).

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use bytes::Bytes;
use modelctx_transport::{DirectSlot, TransportError, TransportMessage};
use modelctx_types::{ErrorCode, ProtocolVersion, RequestId};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{Rejection, StreamableHttpServerConfig};
use super::reaper::ReapKey;
use super::shared::state::{Claim, SharedState};

mod handshake;
mod inbound;
mod lending;
mod outbound;
mod owner;
mod queue;
mod streams;
#[cfg(test)]
mod tests;
mod transport;

pub(crate) use handshake::{HandshakeGuard, OnHandshake, guarded};
pub(crate) use inbound::{Handover, Inlet, Messages};
pub(crate) use queue::{EventReceiver, EventSender, NotSent, queue};
pub use transport::{HttpServerSink, HttpServerStream, HttpServerTransport, StreamControl};

/// The method of the client's note that its handshake is done.
pub(crate) const INITIALIZED: &str = "notifications/initialized";

/// The standalone GET stream of a session.
pub(crate) const STANDALONE: u64 = 0;

/// Where the answer to one inbound request goes.
pub(crate) enum Route {
    /// On SSE stream N.
    Sse(u64),
    /// As the single JSON body of its POST (the response's JSON text).
    Json(oneshot::Sender<(String, Option<ErrorCode>)>),
    /// A request of the stateless era whose answer has sent nothing yet: its response
    /// alone goes back as JSON; the first message before it (progress, a log message)
    /// builds the SSE stream, and the route becomes [`Route::Sse`].
    Era(oneshot::Sender<EraAnswer>),
}

/// How the answer to a request of the stateless era goes (see [`Route::Era`]).
pub(crate) enum EraAnswer {
    /// Its response, the only message of the answer: its JSON text, and the error code
    /// it carries when it is an error (the answer's HTTP status follows it).
    Json(String, Option<ErrorCode>),
    /// An SSE stream: something came before the response, or the POST's head was
    /// due before it.
    Stream(futures::stream::BoxStream<'static, Bytes>),
}

#[derive(Default)]
pub(crate) struct StreamState {
    pub(crate) next_seq: u64,
    /// The HTTP connection currently carrying the stream.
    pub(crate) conn: Option<EventSender>,
    /// Requests on this stream still waiting for their response.
    pub(crate) open_requests: usize,
    /// Events that found no connection (standalone stream only).
    pub(crate) backlog: VecDeque<Bytes>,
    /// Held while the POST that opened this stream waits to send its head: dropped
    /// when the runtime has handled the POST's messages, at the stream's first event,
    /// or with the stream.
    pub(crate) handled: Option<oneshot::Sender<()>>,
    /// A shared session's standalone stream: this copy's hold on it (see
    /// `shared/claims.rs`).
    pub(crate) claim: Claim,
    /// Whether the request answered here is recorded in the event store's
    /// [`RunStore`](crate::RunStore) as running in this service.
    pub(crate) run: bool,
    /// A stream taken over from a stopped service: its events up to this position are
    /// stored already (0: none), and a re-run's notifications up to it are not sent
    /// again (see `shared/takeover.rs`).
    pub(crate) skip_until: u64,
}

impl StreamState {
    pub(crate) fn has_live_conn(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| !c.is_closed())
    }
}

#[derive(Default)]
pub(crate) struct Routes {
    pub(crate) next_stream: u64,
    pub(crate) requests: foldhash::HashMap<RequestId, Route>,
    pub(crate) streams: foldhash::HashMap<u64, StreamState>,
}

/// One inbound message on its way to the session runtime.
pub(crate) struct Inbound {
    /// A message, or a response that could not be read (the runtime fails the call it
    /// names). Boxed: the queue allocates its slots a block at a time, and a block of
    /// small slots is one small allocation per session rather than one of kilobytes.
    message: Box<Result<TransportMessage, TransportError>>,
    /// The answer stream whose head waits for this message to be handled: released
    /// when the runtime comes back for the next message (a handler that answers at
    /// once has answered by then).
    taken: Option<u64>,
}

/// Called with a session when it ends, so its service can drop it.
pub(crate) type OnEnd = Box<dyn Fn(&SessionState) + Send + Sync>;

/// The shared state of one hosted session.
pub(crate) struct SessionState {
    pub(crate) id: Arc<str>,
    pub(crate) stateful: bool,
    /// A session of the stateless era that its endpoint keeps for the next POST while
    /// it is lent to one (see [`lend_era`](Self::lend_era)): its last answer does not end
    /// it. Cleared when the POST ends without handing it back.
    reusable: AtomicBool,
    pub(crate) config: Arc<StreamableHttpServerConfig>,
    /// The entry of the queue of messages for the runtime (see `inbound.rs`).
    pub(crate) inbound: Inlet,
    /// The session runtime's direct entry, when it offered one: a POST's messages are
    /// then handled on the POST's own task, unless earlier ones are still queued.
    direct: DirectSlot,
    routes: Mutex<Routes>,
    pub(crate) closed: CancellationToken,
    last_activity: Mutex<Instant>,
    /// The id of the initialize request, until its response passes.
    init_request: Mutex<Option<RequestId>>,
    /// The protocol version negotiated by initialize, once its result passed.
    pub(crate) negotiated: OnceLock<ProtocolVersion>,
    /// `Mcp-Session-Id` as a header value, for every answer of a stateful session.
    pub(crate) id_header: Option<http::HeaderValue>,
    /// The id of the caller the session belongs to, once bound (see `owner.rs`).
    owner: OnceLock<Arc<str>>,
    on_end: Mutex<Option<OnEnd>>,
    /// Its place in its service's idle expiry, while it has one (see `reaper.rs`).
    reap_key: Mutex<Option<ReapKey>>,
    /// A new session waiting for its `initialize` to be answered: how to tell its
    /// service (see `handshake.rs`).
    handshake: Mutex<Option<(Weak<SessionState>, OnHandshake)>>,
    /// The session's record in the shared registry, when there is one.
    pub(crate) shared: Option<Arc<SharedState>>,
    /// What this process's stream numbers start from (0 unless the session is shared:
    /// then random, so that the streams each process opens for the same session have
    /// distinct ids in a shared event store). The standalone stream is known as stream
    /// `stream_base` in event ids.
    pub(crate) stream_base: u64,
    /// Whether the client's `notifications/initialized` reached this process, or one
    /// was handed to the runtime in its place (shared sessions only: it may have gone
    /// to another one).
    pub(crate) initialized_note: AtomicBool,
    /// Held (shared sessions only) from deciding whether the runtime needs a note in
    /// place of the client's `notifications/initialized` until the messages it goes
    /// before are queued: a request pushed by another task then never overtakes a note
    /// another task decided to send first.
    pub(crate) note_gate: tokio::sync::Mutex<()>,
}

/// What the HTTP layer gets for a POST that carried requests.
pub(crate) enum Answer {
    /// SSE events, starting with the priming event (when resumable).
    Sse {
        /// The events.
        events: Events,
        /// The stream's id, to pass to [`SessionState::push`].
        stream: u64,
        /// Resolves when the head may go out (see [`StreamState::handled`]).
        handled: oneshot::Receiver<()>,
    },
    /// One JSON response per request, in order: the first request's, then the
    /// others' (a POST of one request, the usual one, needs no vector).
    Json(Option<JsonWaiter>, Vec<JsonWaiter>),
}

/// The receiver of one request's JSON response: its text, and the error code it carries
/// when it is an error.
pub(crate) type JsonWaiter = oneshot::Receiver<(String, Option<ErrorCode>)>;

impl SessionState {
    #[cfg(test)]
    pub(crate) fn new(
        id: Arc<str>,
        stateful: bool,
        config: Arc<StreamableHttpServerConfig>,
        on_end: Option<OnEnd>,
    ) -> Arc<Self> {
        Self::with_shared(id, stateful, config, on_end, None, 0)
    }

    /// A session whose record is in a shared registry (`shared`), numbering its streams
    /// from `stream_base`.
    pub(crate) fn with_shared(
        id: Arc<str>,
        stateful: bool,
        config: Arc<StreamableHttpServerConfig>,
        on_end: Option<OnEnd>,
        shared: Option<Arc<SharedState>>,
        stream_base: u64,
    ) -> Arc<Self> {
        let inbound = Inlet::new(config.inbound_queue);
        let mut routes = Routes {
            next_stream: stream_base + 1,
            ..Routes::default()
        };
        if stateful {
            routes.streams.insert(STANDALONE, StreamState::default());
        }
        let id_header = if stateful {
            http::HeaderValue::from_str(&id).ok()
        } else {
            None
        };
        Arc::new(Self {
            id_header,
            owner: OnceLock::new(),
            id,
            stateful,
            reusable: AtomicBool::new(false),
            config,
            inbound,
            direct: DirectSlot::default(),
            routes: Mutex::new(routes),
            closed: CancellationToken::new(),
            last_activity: Mutex::new(Instant::now()),
            init_request: Mutex::new(None),
            negotiated: OnceLock::new(),
            on_end: Mutex::new(on_end),
            reap_key: Mutex::new(None),
            handshake: Mutex::new(None),
            shared,
            stream_base,
            initialized_note: AtomicBool::new(false),
            note_gate: tokio::sync::Mutex::new(()),
        })
    }

    /// Its place in its service's idle expiry (see `reaper.rs`).
    pub(super) fn reap_key(&self) -> MutexGuard<'_, Option<ReapKey>> {
        self.reap_key.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn touch(&self) {
        *self.last_activity.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    pub(crate) fn last_activity(&self) -> Instant {
        *self.last_activity.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn has_live_connection(&self) -> bool {
        self.routes()
            .streams
            .values()
            .any(StreamState::has_live_conn)
    }

    /// The protocol version initialize negotiated, once known.
    pub(crate) fn negotiated_version(&self) -> Option<&ProtocolVersion> {
        self.negotiated.get()
    }

    pub(crate) fn expect_initialize(&self, id: RequestId) {
        *self.init_request.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
    }

    pub(crate) fn report(&self, reason: String) {
        tracing::warn!(
            target: "modelctx_http",
            session_id = %self.id,
            %reason,
            "message not routed"
        );
        if let Some(cb) = &self.config.on_error {
            cb(&Rejection {
                status: http::StatusCode::OK,
                reason,
            });
        }
    }

    /// The number stream `stream_id` has in event ids.
    pub(crate) fn wire_stream(&self, stream_id: u64) -> u64 {
        if stream_id == STANDALONE {
            self.stream_base
        } else {
            stream_id
        }
    }

    /// The number the standalone stream has in event ids.
    pub(crate) fn wire_standalone(&self) -> u64 {
        self.stream_base
    }

    /// The stream an event id's stream number names in this process.
    pub(crate) fn local_stream(&self, wire: u64) -> u64 {
        if wire == self.stream_base {
            STANDALONE
        } else {
            wire
        }
    }

    /// Ends the session here: its handlers see the end of their stream, open
    /// connections end, and the service drops it. Its stored events are forgotten
    /// unless the session is shared (other processes may still serve it; its DELETE
    /// forgets them).
    pub(crate) fn terminate(&self) {
        if self.closed.is_cancelled() {
            return;
        }
        self.closed.cancel();
        self.release_handshake();
        self.inbound.close();
        {
            let mut routes = self.routes();
            self.release_hold(&mut routes);
            self.late_to_registry(&mut routes);
            self.release_runs(&routes);
            routes.requests.clear();
            routes.streams.clear();
        }
        // A stateless session stores no events (nothing of it can be resumed).
        if let Some(store) = &self.config.event_store
            && self.shared.is_none()
            && self.stateful
        {
            store.forget_session(&self.id);
        }
        let on_end = self.on_end.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(on_end) = on_end {
            on_end(self);
        }
    }

    /// Whether the session still takes messages (its runtime has not ended it).
    pub(crate) fn is_open(&self) -> bool {
        !self.closed.is_cancelled() && self.inbound.is_open()
    }

    /// Stops taking messages (stateless sessions, once their POST is answered).
    pub(crate) fn finish_inbound(&self) {
        self.inbound.close();
    }

    /// Whether inbound request `id` is still waiting for its response.
    pub(crate) fn is_in_flight(&self, id: &RequestId) -> bool {
        self.routes().requests.contains_key(id)
    }
}

impl Routes {
    /// The standalone stream of a stateful session.
    pub(crate) fn standalone(&mut self) -> Option<&mut StreamState> {
        self.streams.get_mut(&STANDALONE)
    }
}

/// Events ready when a stream opens: the usual one (its priming event) in place.
pub(crate) type Ready = smallvec::SmallVec<[Bytes; 1]>;

/// The events `first`, then what comes on `rx`.
pub(crate) fn chain(first: impl Into<Ready>, rx: EventReceiver) -> Events {
    Events {
        first: first.into().into_iter(),
        rx,
    }
}

/// The events of one connection of a stream: those ready when it opened, then what
/// the session routes to it; they end when the stream ends (its sender is dropped).
/// One type, not a chain of stream adapters behind a box: an answer built at once
/// is read without an allocation or a future for it.
pub(crate) struct Events {
    first: smallvec::IntoIter<[Bytes; 1]>,
    rx: EventReceiver,
}

impl futures::Stream for Events {
    type Item = Bytes;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Bytes>> {
        let this = self.get_mut();
        match this.first.next() {
            Some(event) => std::task::Poll::Ready(Some(event)),
            None => this.rx.poll_recv(cx),
        }
    }
}

/// A session id: 128 random bits from the OS, as 32 hex digits (visible ASCII),
/// encoded on the stack and allocated once, as the shared string the session keeps.
/// `None` without OS randomness: a guessable id is never minted.
pub(crate) fn new_session_id() -> Option<Arc<str>> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let mut hex = [0u8; 32];
    base16ct::lower::encode_str(&bytes, &mut hex)
        .ok()
        .map(Arc::from)
}
