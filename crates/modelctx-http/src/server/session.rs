//! One hosted MCP session: its routing table, its SSE streams, and the transport handed
//! to the session runtime.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use modelctx_transport::{
    DirectReceiver, DirectSlot, EraRead, Extensions, Holding, MessageSink, MessageStream,
    SharedSession, Transport, TransportError, TransportMessage,
};
use modelctx_types::{
    ErrorCode, ErrorData, InvalidMessage, JsonRpcErrorResponse, JsonRpcMessage, ProtocolVersion,
    RequestId,
};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{Rejection, StreamableHttpServerConfig};
use super::event_store::EventId;
use super::registry::SharedState;
use crate::sse;

mod handshake;
mod owner;
mod takeover;

pub(crate) use handshake::{HandshakeGuard, OnHandshake, guarded};

/// The standalone GET stream of a session.
pub(crate) const STANDALONE: u64 = 0;

/// Where the answer to one inbound request goes.
enum Route {
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
struct StreamState {
    next_seq: u64,
    /// The HTTP connection currently carrying the stream.
    conn: Option<mpsc::Sender<Bytes>>,
    /// Requests on this stream still waiting for their response.
    open_requests: usize,
    /// Events that found no connection (standalone stream only).
    backlog: VecDeque<Bytes>,
    /// Held while the POST that opened this stream waits to send its head: dropped
    /// when the runtime has handled the POST's messages, at the stream's first event,
    /// or with the stream.
    handled: Option<oneshot::Sender<()>>,
    /// A shared session's standalone stream held here: the hold's name in the
    /// registry ([`SessionRegistry::hold_stream`](super::SessionRegistry::hold_stream)).
    claim: Option<Arc<str>>,
    /// While the hold is being recorded: what is routed to the stream waits in
    /// `pending` (data, no event id yet, and whether it is an announcement: see
    /// [`is_announcement`]), behind the messages kept for the stream.
    claiming: bool,
    pending: VecDeque<(String, bool)>,
    /// The latest hold of the standalone stream here: what it sent is handed to a
    /// service that takes the stream over ([`SessionState::let_go`]).
    last_hold: Option<LastHold>,
    /// The last event a resumption of the standalone stream here replayed (on the
    /// stream the client named): what the client has, for the hand-over.
    replayed_to: Option<EventId>,
    /// Whether the request answered here is recorded in the event store's
    /// [`RunStore`](crate::RunStore) as running in this service.
    run: bool,
    /// A stream taken over from a stopped service: its events up to this position are
    /// stored already (0: none), and a re-run's notifications up to it are not sent
    /// again (see `takeover.rs`).
    skip_until: u64,
}

impl StreamState {
    fn has_live_conn(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| !c.is_closed())
    }
}

/// One hold of a shared session's standalone stream by this copy: its name, the
/// first position it sent on, and (once it ended) the position after its last.
struct LastHold {
    holder: Arc<str>,
    from: u64,
    until: Option<u64>,
}

#[derive(Default)]
struct Routes {
    next_stream: u64,
    requests: HashMap<RequestId, Route>,
    streams: HashMap<u64, StreamState>,
}

/// One inbound message on its way to the session runtime.
pub(crate) struct Inbound {
    /// A message, or a response that could not be read (the runtime fails the call it
    /// names).
    message: Result<TransportMessage, TransportError>,
    /// The answer stream whose head waits for this message to be handled: released
    /// when the runtime comes back for the next message (a handler that answers at
    /// once has answered by then).
    taken: Option<u64>,
}

/// Called with a session's id when it ends, so the registry can drop it.
pub(crate) type OnEnd = Box<dyn Fn(&str) + Send + Sync>;

/// The shared state of one hosted session.
pub(crate) struct SessionState {
    pub(crate) id: Arc<str>,
    pub(crate) stateful: bool,
    /// A session of the stateless era that its endpoint keeps for the next POST while
    /// it is lent to one (see [`lend_era`](Self::lend_era)): its last answer does not end
    /// it. Cleared when the POST ends without handing it back.
    reusable: AtomicBool,
    config: Arc<StreamableHttpServerConfig>,
    inbound: Mutex<Option<mpsc::Sender<Inbound>>>,
    /// The session runtime's direct entry, when it offered one: a POST's messages are
    /// then handled on the POST's own task, unless earlier ones are still queued.
    direct: DirectSlot,
    routes: Mutex<Routes>,
    pub(crate) closed: CancellationToken,
    last_activity: Mutex<Instant>,
    /// The id of the initialize request, until its response passes.
    init_request: Mutex<Option<RequestId>>,
    /// The data of every priming event (shared, not allocated per stream).
    empty: Arc<str>,
    /// The protocol version negotiated by initialize, once its result passed.
    negotiated: OnceLock<ProtocolVersion>,
    /// `Mcp-Session-Id` as a header value, for every answer of a stateful session.
    pub(crate) id_header: Option<http::HeaderValue>,
    /// The id of the caller the session belongs to, once bound (see `owner.rs`).
    owner: OnceLock<Arc<str>>,
    on_end: Mutex<Option<OnEnd>>,
    /// A new session waiting for its `initialize` to be answered: how to tell its
    /// service (see `handshake.rs`).
    handshake: Mutex<Option<(Weak<SessionState>, OnHandshake)>>,
    /// The session's record in the shared registry, when there is one.
    pub(crate) shared: Option<Arc<SharedState>>,
    /// What this process's stream numbers start from (0 unless the session is shared:
    /// then random, so that the streams each process opens for the same session have
    /// distinct ids in a shared event store). The standalone stream is known as stream
    /// `stream_base` in event ids.
    stream_base: u64,
    /// Whether the client's `notifications/initialized` reached this process, or one
    /// was handed to the runtime in its place (shared sessions only: it may have gone
    /// to another one).
    initialized_note: AtomicBool,
    /// Held (shared sessions only) from deciding whether the runtime needs a note in
    /// place of the client's `notifications/initialized` until the messages it goes
    /// before are queued: a request pushed by another task then never overtakes a note
    /// another task decided to send first.
    note_gate: tokio::sync::Mutex<()>,
}

/// What the HTTP layer gets for a POST that carried requests.
pub(crate) enum Answer {
    /// SSE events, starting with the priming event (when resumable).
    Sse {
        /// The events.
        events: futures::stream::BoxStream<'static, Bytes>,
        /// The stream's id, to pass to [`SessionState::push`].
        stream: u64,
        /// Resolves when the head may go out (see [`StreamState::handled`]).
        handled: oneshot::Receiver<()>,
    },
    /// One JSON response per request, in order: its text, and the error code it
    /// carries when it is an error.
    Json(Vec<oneshot::Receiver<(String, Option<ErrorCode>)>>),
}

impl SessionState {
    #[cfg(test)]
    pub(crate) fn new(
        id: Arc<str>,
        stateful: bool,
        config: Arc<StreamableHttpServerConfig>,
        on_end: Option<OnEnd>,
    ) -> (Arc<Self>, mpsc::Receiver<Inbound>) {
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
    ) -> (Arc<Self>, mpsc::Receiver<Inbound>) {
        let (tx, rx) = mpsc::channel(config.inbound_queue.max(1));
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
        let state = Arc::new(Self {
            id_header,
            owner: OnceLock::new(),
            id,
            stateful,
            reusable: AtomicBool::new(false),
            config,
            inbound: Mutex::new(Some(tx)),
            direct: DirectSlot::default(),
            routes: Mutex::new(routes),
            closed: CancellationToken::new(),
            last_activity: Mutex::new(Instant::now()),
            init_request: Mutex::new(None),
            negotiated: OnceLock::new(),
            empty: Arc::from(""),
            on_end: Mutex::new(on_end),
            handshake: Mutex::new(None),
            shared,
            stream_base,
            initialized_note: AtomicBool::new(false),
            note_gate: tokio::sync::Mutex::new(()),
        });
        (state, rx)
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
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

    fn report(&self, reason: String) {
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
    fn wire_stream(&self, stream_id: u64) -> u64 {
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
    fn local_stream(&self, wire: u64) -> u64 {
        if wire == self.stream_base {
            STANDALONE
        } else {
            wire
        }
    }

    /// Notes that the client's `notifications/initialized` is among `messages`, which
    /// go to the runtime here: nothing is to be handed to it in its place.
    pub(crate) fn note_from_client(&self, messages: &[JsonRpcMessage]) {
        if self.shared.is_some()
            && messages
                .iter()
                .any(|m| m.method() == Some("notifications/initialized"))
        {
            self.initialized_note.store(true, Ordering::Relaxed);
        }
    }

    /// Puts a `notifications/initialized` in front of `messages` when the runtime here
    /// needs one in place of the client's ([`missed_initialized`](Self::missed_initialized)).
    /// For a shared session, the answer holds the session's gate: keep it until
    /// `messages` are pushed, so that no message pushed meanwhile by another task goes
    /// before the note. `None` at once for a session that is not shared.
    pub(crate) async fn hand_note_first(
        &self,
        messages: &mut Vec<JsonRpcMessage>,
    ) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        self.shared.as_ref()?;
        let gate = self.note_gate.lock().await;
        if self.missed_initialized(messages)
            && let Ok(note) = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.parse()
        {
            messages.insert(0, note);
        }
        Some(gate)
    }

    /// Whether this copy of a shared session must hand its runtime a
    /// `notifications/initialized` the client sent to another process: the runtime
    /// here started before the note arrived (it ran `initialize` here, or continues a
    /// session whose note had not arrived) and still refuses every request but `ping`,
    /// while the registry says the client did send it. Only then: a client that sent
    /// no note is refused here as by the process that ran its handshake.
    pub(crate) fn missed_initialized(&self, messages: &[JsonRpcMessage]) -> bool {
        let Some(shared) = &self.shared else {
            return false;
        };
        if messages
            .iter()
            .any(|m| m.method() == Some("notifications/initialized"))
        {
            self.initialized_note.store(true, Ordering::Relaxed);
            return false;
        }
        shared.started_uninitialized()
            && shared.client_initialized()
            && (shared.is_restored() || self.negotiated.get().is_some())
            && !self.initialized_note.swap(true, Ordering::Relaxed)
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
        self.inbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        {
            let mut routes = self.routes();
            if let Some(shared) = &self.shared {
                self.release_claim(&mut routes, shared);
            }
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
            on_end(&self.id);
        }
    }

    /// Ends a shared session for every service: its record goes (every service then
    /// answers 404), its stored events too, and every other copy is told to end, with
    /// the requests it holds. At most once: a copy that misses the word ends at its next
    /// request or keepalive, when it finds the record gone.
    pub(crate) async fn end_everywhere(&self, shared: &SharedState) {
        let registry = shared.registry();
        if let Err(e) = registry.remove(&self.id).await {
            self.report(format!("the session's record was not removed: {e}"));
        }
        if let Some(store) = &self.config.event_store {
            store.forget_session(&self.id);
        }
        let ended = super::Relayed::ended(self.id.to_string());
        if let Err(e) = registry.relay(None, ended).await {
            self.report(format!("the session's end was not relayed: {e}"));
        }
    }

    /// Marks a new session of the stateless era as one its endpoint keeps between
    /// POSTs: its answers no longer end it; [`take_back_era`](Self::take_back_era) or
    /// [`end_era`](Self::end_era) does.
    pub(crate) fn lend_era(&self) {
        self.reusable.store(true, Ordering::Release);
    }

    /// Whether the session still takes messages (its runtime has not ended it).
    pub(crate) fn is_open(&self) -> bool {
        !self.closed.is_cancelled()
            && self
                .inbound
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
    }

    /// The end of a POST a session of the stateless era was lent to: `true` when the
    /// session may serve the next POST (`keep`, still lendable — its answer did not
    /// stream — idle: nothing in flight, no stream open, and open). Otherwise it is no
    /// longer kept: it ends with its last answer, or now when it has none to give.
    pub(crate) fn take_back_era(&self, keep: bool) -> bool {
        let routes = self.routes();
        if keep
            && self.reusable.load(Ordering::Acquire)
            && routes.requests.is_empty()
            && routes.streams.is_empty()
            && self.is_open()
        {
            return true;
        }
        self.reusable.store(false, Ordering::Release);
        if routes.requests.is_empty() {
            self.finish_inbound();
        }
        false
    }

    /// Ends a session of the stateless era that is not kept (its endpoint has enough,
    /// or is gone): it takes no more messages.
    pub(crate) fn end_era(&self) {
        self.reusable.store(false, Ordering::Release);
        self.finish_inbound();
    }

    /// Stops taking messages (stateless sessions, once their POST is answered).
    pub(crate) fn finish_inbound(&self) {
        self.inbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    /// Hands `messages` to the session's handlers, in order. `answer` names the SSE
    /// stream answering them, released once the runtime has handled the last one.
    ///
    /// While nothing waits in the session's queue, messages the runtime takes directly
    /// ([`DirectReceiver`]) are handled here, on the POST's task: a handler that answers
    /// at once has answered when this returns. The first message it gives back, and
    /// every later one, go through the queue. `Ok(true)` when some did. Each message
    /// carries `extensions` (the POST's, see [`modelctx_transport::Extensions`]).
    pub(crate) async fn push(
        &self,
        messages: Vec<JsonRpcMessage>,
        answer: Option<u64>,
        extensions: &Extensions,
    ) -> Result<bool, ()> {
        self.push_era(messages, answer, extensions, None).await
    }

    /// [`push`](Self::push), the first message with `era`: what the endpoint read of a
    /// request of the stateless era beside its JSON (see [`EraRead`]).
    pub(crate) async fn push_era(
        &self,
        messages: Vec<JsonRpcMessage>,
        mut answer: Option<u64>,
        extensions: &Extensions,
        mut era: Option<EraRead>,
    ) -> Result<bool, ()> {
        let tx = self
            .inbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(())?;
        let owned;
        let extensions = if self.stateful
            || extensions
                .get::<modelctx_transport::Sessionless>()
                .is_some()
        {
            extensions
        } else {
            let mut marked = extensions.clone();
            marked.insert(modelctx_transport::Sessionless);
            owned = marked;
            &owned
        };
        let mut messages = messages.into_iter();
        let mut queued = Vec::new();
        for message in messages.by_ref() {
            let mut message = TransportMessage::new(message).with_extensions(extensions.clone());
            message.era = era.take().map(Box::new);
            if let Some(back) = self.direct.try_deliver(message) {
                queued.push(back);
                break;
            }
        }
        queued
            .extend(messages.map(|m| TransportMessage::new(m).with_extensions(extensions.clone())));
        let last = queued.len().saturating_sub(1);
        let any = !queued.is_empty();
        for (i, message) in queued.into_iter().enumerate() {
            let inbound = Inbound {
                message: Ok(message),
                taken: if i == last { answer.take() } else { None },
            };
            self.direct.queue();
            if tx.send(inbound).await.is_err() {
                self.direct.unqueue();
                return Err(());
            }
        }
        Ok(any)
    }

    /// Hands the session a response POSTed for it that could not be read
    /// ([`InvalidMessage::is_response`]): the runtime fails the call of the session's it
    /// names at once, as every transport does, instead of leaving it to its timeout.
    /// Queued behind the messages before it. `Err` when the session takes no more.
    pub(crate) async fn push_invalid_response(&self, invalid: InvalidMessage) -> Result<(), ()> {
        let tx = self
            .inbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(())?;
        self.direct.queue();
        let inbound = Inbound {
            message: Err(TransportError::invalid(invalid)),
            taken: None,
        };
        if tx.send(inbound).await.is_err() {
            self.direct.unqueue();
            return Err(());
        }
        Ok(())
    }

    /// Whether inbound request `id` is still waiting for its response.
    pub(crate) fn is_in_flight(&self, id: &RequestId) -> bool {
        self.routes().requests.contains_key(id)
    }

    /// Opens the answer for a POST carrying `ids` (SSE stream or JSON waiters).
    pub(crate) fn open_answer(&self, ids: &[RequestId]) -> Answer {
        let mut routes = self.routes();
        if self.config.json_response {
            let rxs = ids
                .iter()
                .map(|id| {
                    let (tx, rx) = oneshot::channel();
                    routes.requests.insert(id.clone(), Route::Json(tx));
                    rx
                })
                .collect();
            return Answer::Json(rxs);
        }
        let stream_id = routes.next_stream;
        routes.next_stream += 1;
        for id in ids {
            routes.requests.insert(id.clone(), Route::Sse(stream_id));
        }
        let (tx, rx) = mpsc::channel(self.config.stream_queue);
        let (handled_tx, handled) = oneshot::channel();
        let mut stream = StreamState {
            open_requests: ids.len(),
            conn: Some(tx),
            handled: Some(handled_tx),
            ..StreamState::default()
        };
        let mut first = Vec::new();
        if let Some(priming) = self.priming(stream_id, &mut stream) {
            first.push(priming);
        }
        routes.streams.insert(stream_id, stream);
        Answer::Sse {
            events: chain(first, rx),
            stream: stream_id,
            handled,
        }
    }

    /// Opens the answer of a request of the stateless era (see [`Route::Era`]): no
    /// stream yet, only the receiver of what the answer becomes.
    pub(crate) fn open_era_answer(&self, id: &RequestId) -> oneshot::Receiver<EraAnswer> {
        let (tx, rx) = oneshot::channel();
        self.routes().requests.insert(id.clone(), Route::Era(tx));
        rx
    }

    /// What the answer opened with [`open_era_answer`](Self::open_era_answer) has
    /// become, now that its POST's head is due: its response, or a stream — the one its
    /// first message built, or, for a request still running with nothing sent, one
    /// built now. `None` when the request was dropped unanswered (the session ended).
    pub(crate) fn settle_era_answer(
        &self,
        id: &RequestId,
        mut answer: oneshot::Receiver<EraAnswer>,
    ) -> Option<EraAnswer> {
        {
            let mut routes = self.routes();
            if let Some(Route::Era(_)) = routes.requests.get(id) {
                let (_, events) = self.open_stream(&mut routes, id);
                return Some(EraAnswer::Stream(events));
            }
        }
        // Whatever settled it did so under the routes' lock: it is in the channel.
        answer.try_recv().ok()
    }

    /// Turns request `id`'s [`Route::Era`] into an SSE stream of its own (nothing is
    /// primed: a session of the era is not resumable): the stream's id and events.
    fn open_stream(
        &self,
        routes: &mut Routes,
        id: &RequestId,
    ) -> (u64, futures::stream::BoxStream<'static, Bytes>) {
        // A session whose answer streams is not lent again: the stream's end (or its
        // client's leaving it) concerns its request's id, which may name a later
        // request by then.
        self.reusable.store(false, Ordering::Release);
        let stream_id = routes.next_stream;
        routes.next_stream += 1;
        let (tx, rx) = mpsc::channel(self.config.stream_queue);
        routes.streams.insert(
            stream_id,
            StreamState {
                open_requests: 1,
                conn: Some(tx),
                ..StreamState::default()
            },
        );
        routes.requests.insert(id.clone(), Route::Sse(stream_id));
        (stream_id, chain(Vec::new(), rx))
    }

    /// The priming event of a new stream (id, empty data, `retry`), when resumable.
    fn priming(&self, stream_id: u64, stream: &mut StreamState) -> Option<Bytes> {
        let store = self.config.event_store.as_ref()?;
        if !self.stateful {
            return None;
        }
        let id = EventId {
            stream: self.wire_stream(stream_id),
            seq: stream.next_seq,
        };
        stream.next_seq += 1;
        store.store(&self.id, id, self.empty.clone());
        Some(sse::encode(Some(id), "", Some(self.config.retry_interval)))
    }

    /// Opens the standalone GET stream; `None` when one is already connected.
    pub(crate) fn open_standalone(&self) -> Option<futures::stream::BoxStream<'static, Bytes>> {
        let mut routes = self.routes();
        let stream = routes.streams.get_mut(&STANDALONE)?;
        if stream.has_live_conn() {
            return None;
        }
        let (tx, rx) = mpsc::channel(self.config.stream_queue);
        let mut first = Vec::new();
        if let Some(priming) = self.priming(STANDALONE, stream) {
            first.push(priming);
        }
        // A shared session's backlog waits for the hold (`claimed`): the registry may
        // refuse it, the stream being open on another service.
        if self.shared.is_none() {
            first.extend(stream.backlog.drain(..));
        }
        stream.conn = Some(tx);
        self.start_claim(stream);
        Some(chain(first, rx))
    }

    /// A shared session's standalone stream connected here: names the hold the service
    /// records next (see [`claiming_holder`](Self::claiming_holder)). A hold this
    /// copy had is replaced by it (same service).
    fn start_claim(&self, stream: &mut StreamState) {
        if let Some(shared) = &self.shared {
            let holder = shared.new_holder();
            stream.last_hold = Some(LastHold {
                holder: holder.clone(),
                from: stream.next_seq,
                until: None,
            });
            stream.claim = Some(holder);
            stream.claiming = true;
        }
    }

    /// Where the last resumption of the standalone stream here left the client (the
    /// stream it named and the last event it has).
    pub(crate) fn replayed_to(&self) -> Option<EventId> {
        self.routes()
            .streams
            .get(&STANDALONE)
            .and_then(|s| s.replayed_to)
    }

    /// Another service took the standalone stream over from `holder` (see
    /// [`RelayedKind::HandOver`](super::RelayedKind::HandOver)); the client has
    /// `after`, the last event it got. If `holder` is this copy's latest hold, its
    /// connection ends (what waited for the hold goes to the registry, as in
    /// [`unclaim`](Self::unclaim)), and the answer is where to read what it sent
    /// that the client may not have: the events after the returned id and before
    /// the returned position, on this copy's standalone stream.
    pub(crate) fn let_go(&self, holder: &str, after: EventId) -> Option<(EventId, u64)> {
        let mut routes = self.routes();
        let stream = standalone(&mut routes)?;
        let hold = stream.last_hold.as_mut().filter(|h| &*h.holder == holder)?;
        let until = *hold.until.get_or_insert(stream.next_seq);
        let from = if after.stream == self.stream_base {
            hold.from.max(after.seq + 1)
        } else {
            hold.from
        };
        // Events that found no connection: stored, and handed over from the store.
        stream.backlog.clear();
        let mut pending = VecDeque::new();
        if stream.claim.as_deref() == Some(holder) {
            stream.claim = None;
            stream.claiming = false;
            stream.conn = None;
            pending = std::mem::take(&mut stream.pending);
        }
        drop(routes);
        self.pending_to_registry(pending);
        (from >= 1 && from < until).then_some((
            EventId {
                stream: self.stream_base,
                seq: from - 1,
            },
            until,
        ))
    }

    /// What waited for a hold that did not happen goes to the registry, which relays
    /// it to the holder.
    fn pending_to_registry(&self, pending: VecDeque<(String, bool)>) {
        if let Some(shared) = &self.shared {
            for (data, announcement) in pending {
                if !shared.to_client(&data, announcement) {
                    self.report("relay queue full, message for the GET stream dropped".into());
                }
            }
        }
    }

    /// The hold on the standalone stream being recorded, if any.
    pub(crate) fn claiming_holder(&self) -> Option<Arc<str>> {
        let routes = self.routes();
        let stream = routes.streams.get(&STANDALONE)?;
        stream.claiming.then(|| stream.claim.clone()).flatten()
    }

    /// The hold `holder` is recorded: the messages `kept` for the stream while no
    /// service held it go out first, then what waited meanwhile.
    pub(crate) fn claimed(&self, holder: &Arc<str>, kept: Vec<String>) {
        let mut routes = self.routes();
        let Some(stream) = standalone_claimed_by(&mut routes, holder) else {
            // Replaced meanwhile (the client reconnected): what was kept goes behind
            // what waits for the newer hold, whose recording delivers it.
            for data in &kept {
                let announcement =
                    serde_json::from_str::<JsonRpcMessage>(data).is_ok_and(|m| is_announcement(&m));
                self.deliver_standalone(&mut routes, data, announcement);
            }
            return;
        };
        stream.claiming = false;
        // Events that found no connection before: the channel is empty (what came
        // while claiming waited in `pending`) and holds as many as the backlog.
        if let Some(conn) = &stream.conn {
            for event in stream.backlog.drain(..) {
                let _ = conn.try_send(event);
            }
        }
        let pending = std::mem::take(&mut stream.pending);
        for data in kept.iter().chain(pending.iter().map(|(data, _)| data)) {
            self.deliver(&mut routes, STANDALONE, data);
        }
    }

    /// The registry refused the hold `holder` (another service holds the GET stream):
    /// the connection opened for it ends unused, and what waited for it goes to the
    /// registry, which relays it to the holder.
    pub(crate) fn unclaim(&self, holder: &Arc<str>) {
        let mut routes = self.routes();
        let Some(stream) = standalone_claimed_by(&mut routes, holder) else {
            return;
        };
        stream.claim = None;
        stream.claiming = false;
        stream.conn = None;
        // Never held: nothing was sent under it.
        if stream
            .last_hold
            .as_ref()
            .is_some_and(|h| &h.holder == holder)
        {
            stream.last_hold = None;
        }
        let pending = std::mem::take(&mut stream.pending);
        drop(routes);
        self.pending_to_registry(pending);
    }

    /// Whether `holder` is this copy's recorded hold on a GET stream still connected.
    pub(crate) fn holds(&self, holder: &Arc<str>) -> bool {
        standalone_claimed_by(&mut self.routes(), holder).is_some_and(|s| s.has_live_conn())
    }

    /// The connection of hold `holder` has ended (its response body was dropped): the
    /// hold is given up at once, so a new GET may open the stream on any service.
    pub(crate) fn stream_gone(&self, holder: &Arc<str>) {
        let mut routes = self.routes();
        let Some(stream) = standalone_claimed_by(&mut routes, holder) else {
            return;
        };
        stream.conn = None;
        if let Some(shared) = &self.shared {
            self.release_claim(&mut routes, shared);
        }
    }

    /// Another service took the GET stream over (a resumption there): the connection
    /// here ends, as a resumed connection's predecessor does on one service; what comes
    /// next goes to the new holder.
    pub(crate) fn lost_hold(&self, holder: &Arc<str>) {
        let mut routes = self.routes();
        if let Some(stream) = standalone_claimed_by(&mut routes, holder) {
            stream.claim = None;
            stream.claiming = false;
            stream.conn = None;
            end_hold(stream);
        }
    }

    /// Whether the stream numbered `wire` in event ids is another service's standalone
    /// stream of this shared session (standalone streams are numbered by their base).
    fn foreign_standalone(&self, wire: u64) -> bool {
        self.shared.is_some() && wire != self.stream_base && wire != 0 && wire & 0xffff_ffff == 0
    }

    /// Resumes the stream `after` belongs to: its later events, then (if the stream is
    /// still open) what comes next, on a connection that replaces any older one. `Err`
    /// when the id cannot be mapped.
    ///
    /// The store is read with no lock held (a remote store does I/O). Events routed
    /// while it was read went to the connection being replaced, or nowhere: once the new
    /// connection is in place (everything from `cutoff` on goes to it), the store is read
    /// again for the events in between, so the client gets each event once, in order.
    pub(crate) async fn resume(
        &self,
        after: EventId,
    ) -> Result<futures::stream::BoxStream<'static, Bytes>, ()> {
        let store = self.config.event_store.clone().ok_or(())?;
        // Another service's GET stream: its events after `after`, then this copy's
        // standalone stream, held here from now on (the client lost the other).
        let foreign = self.foreign_standalone(after.stream);
        let local = if foreign {
            STANDALONE
        } else {
            self.local_stream(after.stream)
        };
        let open_before = self.routes().streams.contains_key(&local);
        let mut replay = store.replay_after(&self.id, after).await.ok_or(())?;
        let last = replay.last().map_or(after.seq, |(id, _)| id.seq);
        let (cutoff, rx) = {
            let mut routes = self.routes();
            match routes.streams.get_mut(&local) {
                Some(stream) => {
                    // A resumption replaces the connection it resumes: the client lost
                    // it, even if the server has not noticed yet.
                    if !foreign {
                        stream.backlog.clear();
                    }
                    let (tx, rx) = mpsc::channel(self.config.stream_queue);
                    stream.conn = Some(tx);
                    if local == STANDALONE {
                        // A hold starts after a stored event (its priming, if none came
                        // before): what it sends is read back after that event.
                        if stream.next_seq == 0 && self.shared.is_some() {
                            let _ = self.priming(STANDALONE, stream);
                        }
                        self.start_claim(stream);
                        stream.replayed_to = Some(EventId {
                            stream: after.stream,
                            seq: last,
                        });
                    }
                    (Some(stream.next_seq), Some(rx))
                }
                // The stream is complete: the store holds all there is.
                None => (None, None),
            }
        };
        let missed = match cutoff {
            // This copy's stream numbers its own events: the other's are all stored.
            Some(_) if foreign => false,
            Some(cutoff) => last + 1 < cutoff,
            // Completed while the store was read: its last events came after the read.
            None => open_before,
        };
        if missed {
            let since = EventId {
                stream: after.stream,
                seq: last,
            };
            let more = store.replay_after(&self.id, since).await.ok_or(())?;
            replay.extend(
                more.into_iter()
                    .filter(|(id, _)| id.seq > last && cutoff.is_none_or(|c| id.seq < c)),
            );
        }
        let first: Vec<Bytes> = replay
            .iter()
            .map(|(id, data)| {
                let retry = (id.seq == 0).then_some(self.config.retry_interval);
                sse::encode(Some(*id), data, retry)
            })
            .collect();
        Ok(match rx {
            Some(rx) => chain(first, rx),
            None => futures::stream::iter(first).boxed(),
        })
    }

    /// Closes the connection carrying request `id`'s stream without ending the stream;
    /// the client resumes it with `Last-Event-ID` after the `retry` interval. Only
    /// meaningful with an event store (otherwise the rest of the stream is lost).
    pub(crate) fn close_request_stream(&self, id: &RequestId) -> bool {
        let mut routes = self.routes();
        let Some(Route::Sse(stream_id)) = routes.requests.get(id) else {
            return false;
        };
        let stream_id = *stream_id;
        routes
            .streams
            .get_mut(&stream_id)
            .is_some_and(|s| s.conn.take().is_some())
    }

    /// Closes the standalone stream's connection (the client reconnects).
    pub(crate) fn close_standalone_stream(&self) -> bool {
        self.routes()
            .streams
            .get_mut(&STANDALONE)
            .is_some_and(|s| s.conn.take().is_some())
    }

    /// An inbound `notifications/cancelled` for request `id`. The session sends no
    /// response for a cancelled request, but its POST must end, and this wire ends a
    /// request's answer only with a response for its id: the transport answers it
    /// itself, with `-32800` (the JSON body, or the last event of its SSE stream). A
    /// response the handler still sends afterwards finds no route and is dropped.
    /// `initialize` is never cancelled (the session answers it regardless).
    pub(crate) fn cancel_request(&self, id: &RequestId) {
        if self
            .init_request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            == Some(id)
        {
            return;
        }
        let mut routes = self.routes();
        if !routes.requests.contains_key(id) {
            return;
        }
        let error = ErrorData::request_cancelled("Request cancelled");
        let response = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id.clone()), error));
        let Ok(data) = serde_json::to_string(&response) else {
            return;
        };
        self.complete(&mut routes, id, data, Some(ErrorCode::REQUEST_CANCELLED));
    }

    /// The runtime has handled the messages answered on stream `stream_id`.
    fn release(&self, stream_id: u64) {
        if let Some(stream) = self.routes().streams.get_mut(&stream_id) {
            stream.handled = None;
        }
    }

    /// Writes one event on the standalone stream, or, while its hold is being
    /// recorded, queues it (with whether it is an announcement, for the registry
    /// should the hold be refused).
    fn deliver_standalone(&self, routes: &mut Routes, data: &str, announcement: bool) {
        let Some(stream) = standalone(routes) else {
            return;
        };
        if stream.claiming {
            if stream.pending.len() >= self.config.stream_queue {
                stream.pending.pop_front();
                self.report(format!(
                    "session {}: standalone stream backlog full, oldest message dropped",
                    self.id
                ));
            }
            stream.pending.push_back((data.to_owned(), announcement));
            return;
        }
        self.deliver(routes, STANDALONE, data);
    }

    /// Writes one event on stream `stream_id` (for the standalone stream, through
    /// [`deliver_standalone`](Self::deliver_standalone)).
    fn deliver(&self, routes: &mut Routes, stream_id: u64, data: &str) {
        let Some(stream) = routes.streams.get_mut(&stream_id) else {
            return;
        };
        stream.handled = None;
        let id = match &self.config.event_store {
            Some(store) if self.stateful => {
                let id = EventId {
                    stream: self.wire_stream(stream_id),
                    seq: stream.next_seq,
                };
                stream.next_seq += 1;
                store.store(&self.id, id, Arc::from(data));
                Some(id)
            }
            _ => None,
        };
        let event = sse::encode(id, data, None);
        if let Some(conn) = &stream.conn {
            match conn.try_send(event) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    // A slow reader: drop its connection rather than buffer without
                    // bound; with an event store it resumes from its last event id.
                    stream.conn = None;
                    self.report(format!(
                        "session {}: SSE reader too slow, connection of stream {stream_id} closed",
                        self.id
                    ));
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(event)) => {
                    stream.conn = None;
                    if stream_id == STANDALONE {
                        self.backlog(stream, event);
                    }
                    return;
                }
            }
        }
        if stream_id == STANDALONE {
            self.backlog(stream, event);
        }
    }

    fn backlog(&self, stream: &mut StreamState, event: Bytes) {
        if stream.backlog.len() >= self.config.stream_queue {
            stream.backlog.pop_front();
            self.report(format!(
                "session {}: standalone stream backlog full, oldest message dropped",
                self.id
            ));
        }
        stream.backlog.push_back(event);
    }

    fn route_outbound(&self, message: TransportMessage) -> Result<(), TransportError> {
        if self.closed.is_cancelled() {
            return Err(TransportError::closed());
        }
        let msg = message.message;
        let data = message_text(&msg).map_err(|e| TransportError::other(e.to_string()))?;
        let answers = match &msg {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        // A new session is in its service's table before its client can read the
        // `initialize` result (and send the next request); a failed `initialize` ends it
        // once its error is routed.
        let initialized = answers.and_then(|id| self.note_initialize_result(id, &msg));
        if initialized == Some(true) {
            self.settle_handshake(true);
        }
        let mut routes = self.routes();
        if let Some(id) = answers {
            if let Some(Route::Sse(stream_id)) = routes.requests.get(id) {
                let stream_id = *stream_id;
                Self::replayed_position(&mut routes, stream_id, false);
            }
            let error = match &msg {
                JsonRpcMessage::Error(e) => Some(e.error.code),
                _ => None,
            };
            if !self.complete(&mut routes, id, data, error) {
                self.report(format!("response to request {id}, which is not in flight"));
            }
            drop(routes);
            if initialized == Some(false) {
                self.settle_handshake(false);
            }
            return Ok(());
        }
        // About a request of the stateless era that has ended: dropped (checked under
        // the routes' lock: its id may name a later request of this session by now).
        if message
            .request_over
            .as_ref()
            .is_some_and(|t| t.is_cancelled())
        {
            return Ok(());
        }
        // A request, a notification, or an error the server could not attribute to a
        // request (no id): none of them answers a request; each goes on one stream.
        let related = message
            .related_request
            .as_ref()
            .and_then(|r| routes.requests.get(r));
        match related {
            Some(Route::Sse(stream_id)) => {
                let stream_id = *stream_id;
                let notification = matches!(msg, JsonRpcMessage::Notification(_));
                if !Self::replayed_position(&mut routes, stream_id, notification) {
                    self.deliver(&mut routes, stream_id, &data);
                }
            }
            // The first message of an answer of the stateless era that is not its
            // response: the answer becomes a stream, and the message its first event.
            Some(Route::Era(_)) => {
                let Some(id) = message.related_request.as_ref() else {
                    return Ok(());
                };
                let Some(Route::Era(tx)) = routes.requests.remove(id) else {
                    return Ok(());
                };
                let (stream_id, events) = self.open_stream(&mut routes, id);
                // (A POST that is gone drops the stream: its events go nowhere, as on
                // any stream whose reader left.)
                let _ = tx.send(EraAnswer::Stream(events));
                self.deliver(&mut routes, stream_id, &data);
            }
            // JSON-response mode: the request's POST gets one JSON body, which carries
            // only its response. A request to the client fails at once; a notification
            // (progress, a log message) is not delivered, as with no listener.
            Some(Route::Json(_)) => {
                if matches!(msg, JsonRpcMessage::Request(_)) {
                    return Err(TransportError::refused(ErrorData::invalid_request(
                        "Invalid request: in JSON-response mode a request's answer is one JSON \
                         body, which cannot carry a request to the client",
                    )));
                }
            }
            None if matches!(msg, JsonRpcMessage::Error(_)) => {
                // The standalone stream carries no responses; a stateless one has none.
                self.report("an error response without id has no stream".to_owned());
            }
            None if self.stateful => match &self.shared {
                // The GET stream may be open on another service: the registry relays it
                // there, or keeps it until a service opens the stream.
                Some(shared) if !Self::standalone_here(&routes) => {
                    self.release_claim(&mut routes, shared);
                    if !shared.to_client(&data, is_announcement(&msg)) {
                        self.report("relay queue full, message for the GET stream dropped".into());
                    }
                }
                _ => self.deliver_standalone(&mut routes, &data, is_announcement(&msg)),
            },
            // Stateless answers have no stream for a notification: it is dropped, as it
            // would be with no listener.
            None if matches!(msg, JsonRpcMessage::Notification(_)) => {}
            None => {
                return Err(TransportError::other(
                    "a stateless HTTP session has no stream to carry a request to the client",
                ));
            }
        }
        Ok(())
    }

    fn standalone_here(routes: &Routes) -> bool {
        routes
            .streams
            .get(&STANDALONE)
            .is_some_and(StreamState::has_live_conn)
    }

    /// Delivers `data`, relayed by another service, on the GET stream, if it is open
    /// here. Otherwise (its connection ended, or another service took the stream
    /// over, after the registry relayed it here) the hold, if any, is released and
    /// `data` goes back to the registry, for the holder now or kept for the next.
    pub(crate) fn deliver_relayed(&self, data: &str) {
        let mut routes = self.routes();
        if Self::standalone_here(&routes) {
            // Relayed: never an announcement (the registry drops those while a
            // service holds the stream).
            self.deliver_standalone(&mut routes, data, false);
        } else if let Some(shared) = &self.shared {
            // Relayed while the registry still named a hold here that has ended (its
            // release, or another service's take-over, came after): back to the
            // registry, after the release, for the holder now.
            self.release_claim(&mut routes, shared);
            if !shared.to_client(data, false) {
                self.report("relay queue full, message for the GET stream dropped".into());
            }
        }
    }

    /// Releases this copy's hold on the GET stream (its connection ended), if it has
    /// one: later messages are kept in the registry for the next holder. True when it
    /// had one.
    fn release_claim(&self, routes: &mut Routes, shared: &SharedState) -> bool {
        let Some(stream) = standalone(routes) else {
            return false;
        };
        match stream.claim.take() {
            Some(holder) => {
                stream.claiming = false;
                end_hold(stream);
                // Released once what the hold stored is readable by every service:
                // one that takes the stream over next reads it all.
                let flushed = match &self.config.event_store {
                    Some(store) => store.flushed(&self.id),
                    None => Box::pin(futures::future::ready(())),
                };
                shared.release(holder, flushed);
                true
            }
            None => false,
        }
    }

    /// Ends request `id`'s route with `data`, its response: the JSON body, or the last
    /// event of the request on its SSE stream (the stream ends with its last request).
    /// False when the request has no route (answered, forgotten, never seen).
    /// Completes request `id` with its answer `data` (an error with code `error`).
    fn complete(
        &self,
        routes: &mut Routes,
        id: &RequestId,
        data: String,
        error: Option<ErrorCode>,
    ) -> bool {
        match routes.requests.remove(id) {
            Some(Route::Json(tx)) => {
                let _ = tx.send((data, error));
            }
            Some(Route::Era(tx)) => {
                let _ = tx.send(EraAnswer::Json(data, error));
            }
            Some(Route::Sse(stream_id)) => {
                self.deliver(routes, stream_id, &data);
                let done = routes.streams.get_mut(&stream_id).is_some_and(|s| {
                    s.open_requests = s.open_requests.saturating_sub(1);
                    s.open_requests == 0
                });
                if done {
                    // The stream is complete: dropping its sender ends the body once the
                    // queued events are written.
                    if let Some(stream) = routes.streams.remove(&stream_id) {
                        self.end_run(stream_id, &stream);
                    }
                    modelctx_transport::table::shrink_drained(&mut routes.streams);
                }
            }
            None => return false,
        }
        modelctx_transport::table::shrink_drained(&mut routes.requests);
        if !self.stateful && routes.requests.is_empty() && !self.reusable.load(Ordering::Acquire) {
            // A stateless session serves one POST: it is done.
            self.finish_inbound();
        }
        true
    }

    /// Notes the version `initialize` negotiated when `msg` answers it: `Some(true)`
    /// for a result, `Some(false)` for an error, `None` when it answers another request.
    fn note_initialize_result(&self, id: &RequestId, msg: &JsonRpcMessage) -> Option<bool> {
        let mut init = self.init_request.lock().unwrap_or_else(|p| p.into_inner());
        if init.as_ref() != Some(id) {
            return None;
        }
        *init = None;
        let JsonRpcMessage::Response(r) = msg else {
            return Some(false);
        };
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Init {
            protocol_version: String,
        }
        if let Ok(i) = serde_json::from_str::<Init>(r.result.get()) {
            let version = ProtocolVersion::supported(&i.protocol_version)
                .unwrap_or_else(|| ProtocolVersion::new(i.protocol_version));
            let _ = self.negotiated.set(version);
        }
        Some(true)
    }
}

/// The standalone stream of a stateful session.
fn standalone(routes: &mut Routes) -> Option<&mut StreamState> {
    routes.streams.get_mut(&STANDALONE)
}

/// The standalone stream, if `holder` is its current hold here.
fn standalone_claimed_by<'r>(routes: &'r mut Routes, holder: &str) -> Option<&'r mut StreamState> {
    standalone(routes).filter(|s| s.claim.as_deref() == Some(holder))
}

/// The standalone stream's hold here ended: its last position is the one before
/// `next_seq`.
fn end_hold(stream: &mut StreamState) {
    if let Some(hold) = &mut stream.last_hold {
        hold.until.get_or_insert(stream.next_seq);
    }
}

/// Whether `message` is a list change or a resource update: every copy of a shared
/// session hears it (from its own process's server) and would send it.
fn is_announcement(message: &JsonRpcMessage) -> bool {
    matches!(
        message.method(),
        Some(
            "notifications/tools/list_changed"
                | "notifications/prompts/list_changed"
                | "notifications/resources/list_changed"
                | "notifications/resources/updated"
        )
    )
}

fn chain(
    first: Vec<Bytes>,
    rx: mpsc::Receiver<Bytes>,
) -> futures::stream::BoxStream<'static, Bytes> {
    let rest =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    futures::stream::iter(first).chain(rest).boxed()
}

/// The transport a hosted session runs over, handed to the service's factory.
pub struct HttpServerTransport {
    pub(crate) state: Arc<SessionState>,
    pub(crate) rx: mpsc::Receiver<Inbound>,
    pub(crate) pre_initialized: bool,
    /// Whether its session serves requests of the stateless era (2026-07-28): each
    /// comes with what the endpoint read of it ([`EraRead`]).
    pub(crate) stateless_era: bool,
}

impl fmt::Debug for HttpServerTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServerTransport")
            .field("session_id", &self.session_id())
            .field("stateless", &self.is_stateless())
            .finish()
    }
}

impl HttpServerTransport {
    /// The `Mcp-Session-Id` of this session (`None` in stateless mode).
    pub fn session_id(&self) -> Option<&str> {
        self.state.stateful.then_some(&*self.state.id)
    }

    /// Whether this transport serves one stateless POST.
    pub fn is_stateless(&self) -> bool {
        !self.state.stateful
    }

    /// Whether the session must start already initialised: true for a stateless POST
    /// that is not an `initialize` (there was no handshake on this transport), and for
    /// a shared session another process initialised, the client's
    /// `notifications/initialized` included (see
    /// [`SessionRegistry`](crate::SessionRegistry); the server role then starts from
    /// the state in [`Transport::shared_session`]).
    pub fn needs_pre_initialized_session(&self) -> bool {
        self.pre_initialized
            || self
                .state
                .shared
                .as_ref()
                .is_some_and(|s| s.is_restored() && !s.started_uninitialized())
    }

    /// Whether the session continues a shared session whose `initialize` another
    /// process answered before the client's `notifications/initialized` arrived: it
    /// must start past `initialize` and serve nothing but `ping` until the note
    /// arrives (`SessionConfig::initialize_answered` in `modelctx-session`; the
    /// transport hands it the note if the client sends it to another process).
    pub fn needs_initialize_answered_session(&self) -> bool {
        self.state
            .shared
            .as_ref()
            .is_some_and(|s| s.is_restored() && s.started_uninitialized())
    }

    /// Whether handlers may send requests to the client over this transport (false in
    /// stateless mode: there is no stream to carry them back).
    pub fn allows_outbound_requests(&self) -> bool {
        self.state.stateful
    }

    /// A handle that closes this session's SSE connections early.
    pub fn stream_control(&self) -> StreamControl {
        StreamControl {
            state: Arc::downgrade(&self.state),
        }
    }
}

impl Transport for HttpServerTransport {
    type Sink = HttpServerSink;
    type Stream = HttpServerStream;

    fn kind(&self) -> &'static str {
        "streamable-http"
    }

    fn session_id(&self) -> Option<String> {
        HttpServerTransport::session_id(self).map(str::to_owned)
    }

    fn stateless_era(&self) -> bool {
        self.stateless_era
    }

    fn request_id_prefix(&self) -> Option<Arc<str>> {
        self.state.shared.as_ref().map(|s| s.id_prefix().clone())
    }

    fn shared_session(&self) -> Option<Arc<dyn SharedSession>> {
        self.state
            .shared
            .clone()
            .map(|s| s as Arc<dyn SharedSession>)
    }

    fn starts_initialized(&self) -> bool {
        self.pre_initialized
    }

    fn allows_outbound_requests(&self) -> bool {
        HttpServerTransport::allows_outbound_requests(self)
    }

    fn split(self) -> (HttpServerSink, HttpServerStream) {
        (
            HttpServerSink {
                state: self.state.clone(),
            },
            HttpServerStream {
                rx: self.rx,
                closed: self.state.closed.clone(),
                state: self.state.clone(),
                taken: None,
                holding: Holding::default(),
            },
        )
    }
}

/// Closes SSE connections of one session early, without ending their streams: the
/// client reconnects after the `retry` interval and resumes with `Last-Event-ID`.
#[derive(Debug, Clone)]
pub struct StreamControl {
    state: Weak<SessionState>,
}

impl StreamControl {
    /// Closes the connection of the stream answering request `id`; false when that
    /// request has no open SSE stream.
    pub fn close_request_stream(&self, id: &RequestId) -> bool {
        self.state
            .upgrade()
            .is_some_and(|s| s.close_request_stream(id))
    }

    /// Closes the standalone GET stream's connection; false when none is open.
    pub fn close_standalone_stream(&self) -> bool {
        self.state
            .upgrade()
            .is_some_and(|s| s.close_standalone_stream())
    }
}

/// The sending half of [`HttpServerTransport`]: routes each message to its stream.
pub struct HttpServerSink {
    state: Arc<SessionState>,
}

impl fmt::Debug for HttpServerSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServerSink").finish_non_exhaustive()
    }
}

impl MessageSink for HttpServerSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        let result = self.state.route_outbound(message);
        Box::pin(async move { result })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        // The server ends a shared session: it ends for every service (as a DELETE
        // would). A copy that ended here alone first (idle, or told the session ended)
        // leaves the record be.
        let ending = match &self.state.shared {
            Some(shared) if !self.state.closed.is_cancelled() => Some(shared.clone()),
            _ => None,
        };
        self.state.terminate();
        Box::pin(async move {
            if let Some(shared) = ending {
                self.state.end_everywhere(&shared).await;
            }
        })
    }
}

/// The receiving half of [`HttpServerTransport`]: what the session's POSTs carried.
pub struct HttpServerStream {
    rx: mpsc::Receiver<Inbound>,
    closed: CancellationToken,
    state: Arc<SessionState>,
    /// The answer stream of the previous message, released when the runtime asks for
    /// the next one.
    taken: Option<u64>,
    holding: Holding,
}

impl fmt::Debug for HttpServerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServerStream").finish_non_exhaustive()
    }
}

impl MessageStream for HttpServerStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        if let Some(stream) = self.taken.take() {
            self.state.release(stream);
        }
        self.holding.next(&self.state.direct);
        Box::pin(async move {
            let inbound = tokio::select! {
                biased;
                m = self.rx.recv() => m?,
                () = self.closed.cancelled() => return None,
            };
            self.taken = inbound.taken;
            self.holding.took();
            Some(inbound.message)
        })
    }

    fn offer_direct(&mut self, receiver: Arc<dyn DirectReceiver>) {
        self.state.direct.offer(&receiver);
    }
}

/// A message's JSON text, written into one allocation sized for the usual answer (the
/// result's text and the few members around it).
fn message_text(msg: &JsonRpcMessage) -> serde_json::Result<String> {
    let hint = match msg {
        JsonRpcMessage::Response(r) => r.result.get().len() + 64,
        _ => 128,
    };
    let mut out = Vec::with_capacity(hint);
    serde_json::to_writer(&mut out, msg)?;
    // serde_json writes UTF-8 only.
    String::from_utf8(out).map_err(serde::ser::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::event_store::InMemoryEventStore;

    fn note(i: usize) -> TransportMessage {
        let text = format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"i":{i}}}}}"#);
        TransportMessage::new(text.parse().unwrap())
    }

    fn request(id: i64) -> JsonRpcMessage {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"}}"#);
        text.parse().unwrap()
    }

    fn answer(id: i64) -> TransportMessage {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        TransportMessage::new(text.parse().unwrap())
    }

    fn open(state: &SessionState, id: i64) -> (u64, oneshot::Receiver<()>) {
        match state.open_answer(&[RequestId::Number(id)]) {
            Answer::Sse {
                stream, handled, ..
            } => (stream, handled),
            Answer::Json(_) => panic!("expected an SSE answer"),
        }
    }

    #[tokio::test]
    async fn the_routes_give_their_room_back_as_requests_end() {
        let config = StreamableHttpServerConfig::default();
        let (state, rx) = SessionState::new(Arc::from("s"), true, Arc::new(config), None);
        let transport = HttpServerTransport {
            state: state.clone(),
            rx,
            pre_initialized: true,
            stateless_era: false,
        };
        let (sink, _stream) = transport.split();
        for id in 1..=2_000 {
            open(&state, id);
        }
        let room = || {
            let routes = state.routes();
            (routes.requests.capacity(), routes.streams.capacity())
        };
        assert!(room().0 >= 2_000 && room().1 >= 2_000, "{:?}", room());
        for id in 1..=2_000 {
            sink.send(answer(id)).await.unwrap();
        }
        let kept = modelctx_transport::table::KEPT_CAPACITY;
        assert!(room().0 <= kept && room().1 <= kept, "{:?}", room());
    }

    #[tokio::test]
    async fn an_sse_head_waits_until_the_runtime_handled_the_post() {
        let config = StreamableHttpServerConfig::default();
        let (state, rx) = SessionState::new(Arc::from("s"), true, Arc::new(config), None);
        let transport = HttpServerTransport {
            state: state.clone(),
            rx,
            pre_initialized: true,
            stateless_era: false,
        };
        let (sink, mut stream) = transport.split();

        // Released when the runtime comes back for the next message (a handler that
        // is still running).
        let (id, mut handled) = open(&state, 1);
        state
            .push(vec![request(1)], Some(id), &Extensions::new())
            .await
            .unwrap();
        stream.recv().await.unwrap().unwrap();
        assert!(handled.try_recv().is_err(), "not yet handled");
        let next = stream.recv();
        assert!(handled.await.is_err(), "released by the next recv");
        drop(next);

        // Released by the stream's first event (a transport user that answers before
        // asking for more).
        let (id, mut handled) = open(&state, 2);
        state
            .push(vec![request(2)], Some(id), &Extensions::new())
            .await
            .unwrap();
        stream.recv().await.unwrap().unwrap();
        assert!(handled.try_recv().is_err(), "not yet handled");
        sink.send(answer(2)).await.unwrap();
        assert!(handled.await.is_err(), "released by the answer");

        // Released when the session ends.
        let (id, handled) = open(&state, 3);
        state
            .push(vec![request(3)], Some(id), &Extensions::new())
            .await
            .unwrap();
        state.terminate();
        assert!(handled.await.is_err(), "released by the end");
    }

    /// An event store whose first replay answers only once `go` is sent, saying on
    /// `called` that it was asked (a remote store's round trip, made observable).
    struct SlowReplay {
        inner: InMemoryEventStore,
        called: mpsc::UnboundedSender<()>,
        go: Mutex<Option<oneshot::Receiver<()>>>,
    }

    impl crate::server::event_store::EventStore for SlowReplay {
        fn store(&self, session: &str, id: EventId, data: Arc<str>) {
            self.inner.store(session, id, data);
        }

        fn replay_after(
            &self,
            session: &str,
            after: EventId,
        ) -> BoxFuture<'static, crate::server::event_store::Replay> {
            // What was stored when asked; the answer comes later.
            let snapshot = self.inner.replay_after(session, after);
            let go = self.go.lock().unwrap().take();
            let _ = self.called.send(());
            Box::pin(async move {
                if let Some(go) = go {
                    let _ = go.await;
                }
                snapshot.await
            })
        }

        fn forget_session(&self, session: &str) {
            self.inner.forget_session(session);
        }
    }

    #[tokio::test]
    async fn events_routed_while_the_store_reads_reach_the_resumed_stream_once() {
        let (called, mut asked) = mpsc::unbounded_channel();
        let (go, gate) = oneshot::channel();
        let store = SlowReplay {
            inner: InMemoryEventStore::new(),
            called,
            go: Mutex::new(Some(gate)),
        };
        let config = StreamableHttpServerConfig::default()
            .stream_queue(2)
            .event_store(Arc::new(store));
        let (state, _rx) = SessionState::new(Arc::from("s"), true, Arc::new(config), None);
        let unread = state.open_standalone().unwrap();
        for i in 0..5 {
            state.route_outbound(note(i)).unwrap();
        }
        assert!(!state.has_live_connection(), "the slow reader was cut off");
        drop(unread);
        let resuming = tokio::spawn({
            let state = state.clone();
            async move { state.resume(EventId { stream: 0, seq: 0 }).await }
        });
        tokio::time::timeout(std::time::Duration::from_secs(5), asked.recv())
            .await
            .unwrap();
        // Routed while the store is being read: not in its answer, not on any
        // connection.
        for i in 5..8 {
            state.route_outbound(note(i)).unwrap();
        }
        go.send(()).unwrap();
        let resumed = tokio::time::timeout(std::time::Duration::from_secs(5), resuming)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        // And after: on the new connection.
        for i in 8..10 {
            state.route_outbound(note(i)).unwrap();
        }
        state.terminate();
        let text = String::from_utf8(resumed.collect::<Vec<Bytes>>().await.concat()).unwrap();
        let mut at = 0;
        for i in 0..10 {
            let needle = format!(r#""i":{i}}}"#);
            assert_eq!(text.matches(&needle).count(), 1, "note {i} once: {text}");
            let found = text.find(&needle).unwrap();
            assert!(found >= at, "note {i} in order: {text}");
            at = found;
        }
    }

    #[tokio::test]
    async fn a_slow_reader_is_cut_off_and_resumes_from_the_store() {
        let config = StreamableHttpServerConfig::default()
            .stream_queue(2)
            .event_store(Arc::new(InMemoryEventStore::new()));
        let (state, _rx) = SessionState::new(Arc::from("s"), true, Arc::new(config), None);
        // Never polled: a reader that does not read.
        let unread = state.open_standalone().unwrap();
        for i in 0..10 {
            state.route_outbound(note(i)).unwrap();
        }
        assert!(
            !state.has_live_connection(),
            "the connection was dropped, not grown"
        );
        // What the slow reader still gets: the priming event and what fit the queue.
        let got: Vec<Bytes> = unread.collect().await;
        assert_eq!(got.len(), 3);
        // Everything is in the store, in order, for a resumption after the priming id.
        let resumed = state.resume(EventId { stream: 0, seq: 0 }).await.unwrap();
        state.terminate();
        let events: Vec<Bytes> = resumed.collect().await;
        assert_eq!(events.len(), 10);
        let text = String::from_utf8(events.concat()).unwrap();
        let first = text.find(r#""i":0"#).unwrap();
        let last = text.find(r#""i":9"#).unwrap();
        assert!(first < last);
    }
}
