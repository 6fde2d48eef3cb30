//! The outbound side: the [`Peer`] handle, typed requests with cancellation, progress and
//! timeouts, and notifications.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use modelctx_transport::{MessageSink, TransportMessage};
use modelctx_types::{
    ErrorData, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, Meta, NotificationMethod,
    ProgressToken, RawValue, RequestId, RequestMethod, to_raw,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::SessionConfig;
use crate::error::SessionError;
use crate::lifecycle::{self, Phase, PhaseCell, Role};
use crate::pending::{IdRefused, PendingTable};

/// One progress update, as carried by `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// The progress so far; increases with every update.
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable description of the current step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// A progress value with no total and no message.
    pub fn new(progress: f64) -> Self {
        Self {
            progress,
            total: None,
            message: None,
        }
    }

    /// Sets the total.
    #[must_use]
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets the message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// A callback receiving a request's progress updates, in order. It runs on the task that
/// awaits the request, never on the receive loop. A caller that falls behind a flood of
/// updates (a slow callback, a request not polled) does not buffer them all: at most 32
/// wait, and beyond that the newest replaces the last waiting, so the latest update
/// always arrives.
pub type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// Per-request options.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// Overrides the session's default timeout.
    pub timeout: Option<Duration>,
    /// Restart the timeout whenever a progress update arrives.
    pub reset_timeout_on_progress: bool,
    /// A hard limit on the whole request, progress or not.
    pub max_total_timeout: Option<Duration>,
    /// Receives progress updates; setting it attaches a progress token to the request.
    pub on_progress: Option<ProgressCallback>,
    /// `_meta` entries to attach to the request's params.
    pub meta: Option<Meta>,
    /// Resume an interrupted request from this transport token (e.g. the last SSE event
    /// id seen) instead of sending it again; transports that cannot resume ignore it.
    pub resumption_token: Option<Arc<str>>,
    /// The request's id, chosen by the caller (e.g. to know a `subscriptions/listen`
    /// stream by it before any answer comes); `None` lets the session allocate one. A
    /// caller's id is refused locally when a request with it is in flight, or when it is
    /// a number the session may already have used (ids never repeat in a session).
    pub id: Option<RequestId>,
    /// The params key whose value the request's `Mcp-Name` HTTP header mirrors (2026-07-28),
    /// for a method the transport does not know. [`Peer::start_request`] sets it from
    /// [`RequestMethod::NAME_PARAM`]; transports without such headers ignore it.
    pub name_param: Option<&'static str>,
}

impl RequestOptions {
    /// Default options: the session's timeout, no progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the timeout of this request.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Restarts the timeout on each progress update, up to `max_total`.
    #[must_use]
    pub fn reset_timeout_on_progress(mut self, max_total: Option<Duration>) -> Self {
        self.reset_timeout_on_progress = true;
        self.max_total_timeout = max_total;
        self
    }

    /// Sets a hard limit on the whole request.
    #[must_use]
    pub fn max_total_timeout(mut self, max_total: Duration) -> Self {
        self.max_total_timeout = Some(max_total);
        self
    }

    /// Receives progress updates (and attaches a progress token).
    #[must_use]
    pub fn on_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(callback));
        self
    }

    /// Attaches `_meta` entries.
    #[must_use]
    pub fn meta(mut self, meta: Meta) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Resumes an interrupted request from a transport's resumption token.
    #[must_use]
    pub fn resume_from(mut self, token: Arc<str>) -> Self {
        self.resumption_token = Some(token);
        self
    }

    /// Sends the request under this id instead of one the session allocates (see
    /// [`id`](Self::id)): the caller knows it before any answer comes.
    #[must_use]
    pub fn id(mut self, id: impl Into<RequestId>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Mirrors the params key `key` into the request's `Mcp-Name` header (see
    /// [`name_param`](Self::name_param)).
    #[must_use]
    pub fn name_param(mut self, key: &'static str) -> Self {
        self.name_param = Some(key);
        self
    }
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("meta", &self.meta)
            .field("resumption_token", &self.resumption_token)
            .field("id", &self.id)
            .field("name_param", &self.name_param)
            .finish()
    }
}

/// How an outbound request ended, as delivered to its waiting future.
#[derive(Debug)]
pub(crate) enum Outcome {
    Result(Box<RawValue>),
    Error(ErrorData),
    /// The peer's answer could not be read (`InvalidMessage::is_response`): what was wrong.
    InvalidResponse(String),
    Closed,
    Cancelled,
    /// The deadline passed; the session's timer took the slot out of the table (and told
    /// the peer).
    TimedOut,
}

pub(crate) type Slot = oneshot::Sender<Outcome>;
pub(crate) type ProgressSink = Arc<crate::progress::ProgressQueue>;

/// State shared by the receive task and every handle of one session.
pub(crate) struct Shared {
    pub(crate) role: Role,
    pub(crate) config: SessionConfig,
    pub(crate) sink: Box<dyn MessageSink>,
    pub(crate) phase: PhaseCell,
    pub(crate) pending: Mutex<PendingTable<Slot, ProgressSink>>,
    /// Inbound requests being handled: id -> cancellation token.
    pub(crate) inflight: Mutex<HashMap<RequestId, CancellationToken>>,
    pub(crate) semaphore: Arc<Semaphore>,
    /// Fires when the session ends, for whatever reason.
    pub(crate) closed: CancellationToken,
    /// Set just before `closed` fires: a lock-free check for the hot path (reading the
    /// token takes its mutex, which every caller of this session shares).
    pub(crate) closed_flag: AtomicBool,
    /// Wakes the deadline watcher: a request is due earlier than its timer is set.
    pub(crate) deadline_changed: tokio::sync::Notify,
    /// Whether the deadline watcher was started (on the first deadline).
    pub(crate) deadline_watcher: AtomicBool,
    /// Set when an `initialize` is accepted; cleared again when it fails (a retry is
    /// allowed).
    pub(crate) initialize_seen: AtomicBool,
    /// `notifications/initialized` arrived while `initialize` was still being answered
    /// (a client that pipelines the handshake): the session becomes operational as soon
    /// as the answer goes out, instead of waiting forever for a second notification.
    pub(crate) initialized_early: AtomicBool,
    /// Answers the runtime gave at once (ping, refusals) still being sent on tasks of
    /// their own: the session's end waits for them before it closes the sink.
    pub(crate) sends_in_flight: std::sync::atomic::AtomicUsize,
    /// Fires when `sends_in_flight` drops to zero.
    pub(crate) sends_idle: tokio::sync::Notify,
    /// Answers of handlers that are done but whose answer waits for room in the sink
    /// (a peer that does not read): they count against `max_requests_in_flight`, so
    /// such a peer cannot pile up finished jobs without bound.
    pub(crate) answers_waiting: std::sync::atomic::AtomicUsize,
    /// The session's tracing span (`mcp.session`), the parent of its request spans;
    /// disabled (and free) when no subscriber wants it.
    pub(crate) span: tracing::Span,
}

impl modelctx_transport::RequestClocks for Shared {
    fn pause(&self, id: &RequestId) {
        self.lock_pending().hold(id, tokio::time::Instant::now());
    }

    fn resume(&self, id: &RequestId) {
        if self.lock_pending().release(id, tokio::time::Instant::now()) {
            // The watcher runs: the request had a deadline before it was held.
            self.deadline_changed.notify_one();
        }
    }
}

impl Shared {
    /// Sets the session's timer earlier: starts the watcher on first use, else wakes it.
    fn rearm_deadlines(self: &Arc<Self>) {
        if !self.deadline_watcher.swap(true, Ordering::AcqRel) {
            tokio::spawn(watch_deadlines(self.clone()));
        } else {
            self.deadline_changed.notify_one();
        }
    }

    /// Marks the session ended and wakes everything waiting for that.
    pub(crate) fn mark_closed(&self) {
        self.closed_flag.store(true, Ordering::Release);
        self.closed.cancel();
    }

    pub(crate) async fn send(
        &self,
        message: JsonRpcMessage,
        related: Option<RequestId>,
    ) -> Result<(), SessionError> {
        self.send_about(message, related, None).await
    }

    /// [`send`](Self::send), with the token of the stateless era's request `related`
    /// names (see `TransportMessage::request_over`).
    pub(crate) async fn send_about(
        &self,
        message: JsonRpcMessage,
        related: Option<RequestId>,
        request_over: Option<CancellationToken>,
    ) -> Result<(), SessionError> {
        let mut message = TransportMessage::new(message).related_to(related);
        message.request_over = request_over;
        self.sink
            .send(message)
            .await
            .map_err(SessionError::transport)
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, PendingTable<Slot, ProgressSink>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    // The pending table's lock is released before a caller is woken: the woken caller
    // (often on another thread, about to start its next request) would otherwise find the
    // lock still held and sleep on it, two more futex calls and a wake-up on the path.
    // (Progress is sent under the lock: its receiver never takes it.)

    /// Completes request `id` with `outcome`; `false` when no request of ours has it.
    pub(crate) fn complete(&self, id: &RequestId, outcome: Outcome) -> bool {
        let slot = self.lock_pending().complete(id);
        match slot {
            Some(slot) => {
                let _ = slot.send(outcome);
                true
            }
            None => false,
        }
    }

    pub(crate) fn route_progress(&self, token: &ProgressToken, progress: Progress) -> bool {
        match self.lock_pending().progress_sink(token) {
            Some(sink) => {
                sink.push(progress);
                true
            }
            None => false,
        }
    }

    pub(crate) fn fail_all_pending(&self) {
        let slots = self.lock_pending().drain();
        for slot in slots {
            let _ = slot.send(Outcome::Closed);
        }
    }

    /// Abandons request `id`: frees its slot and, unless it already completed, was never
    /// sent, or is `initialize`, tells the peer with `notifications/cancelled`.
    async fn abandon(&self, id: &RequestId, method: &str, reason: &str, outcome: Outcome) {
        let taken = self.lock_pending().take(id);
        if let Some((slot, sent)) = taken {
            let _ = slot.send(outcome);
            if sent && method != lifecycle::INITIALIZE {
                let _ = self.send(cancelled_notification(id, reason), None).await;
            }
        }
    }
}

/// Times out a session's requests: one timer per session, set for the earliest deadline
/// in the pending table and left set when requests complete before it.
///
/// A timer per request (a `tokio::time::Sleep` raced against the response) costs a
/// timer-wheel insert and removal per call and, whenever no other timer is pending,
/// an unpark of tokio's parked timer driver (an eventfd write and a thread wake-up):
/// measured, it doubled and destabilised sequential in-memory latency. Here a request
/// due later than the timer (the common case: same timeout, sent later) touches no
/// timer at all.
///
/// The watcher holds the session until it closes (every session end fires `closed`).
async fn watch_deadlines(shared: Arc<Shared>) {
    loop {
        let armed = shared.lock_pending().armed();
        tokio::select! {
            biased;
            () = shared.closed.cancelled() => return,
            () = shared.deadline_changed.notified() => continue,
            () = sleep_until_some(armed) => {}
        }
        let expired = shared.lock_pending().expire(Instant::now());
        // The peer hears of the cancellation before the caller hears of the timeout.
        for e in expired {
            if e.notify_peer {
                let _ = shared
                    .send(cancelled_notification(&e.id, "request timed out"), None)
                    .await;
            }
            let _ = e.slot.send(Outcome::TimedOut);
        }
    }
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

pub(crate) fn cancelled_notification(id: &RequestId, reason: &str) -> JsonRpcMessage {
    let params = serde_json::json!({ "requestId": id, "reason": reason });
    JsonRpcMessage::Notification(JsonRpcNotification::new(
        lifecycle::CANCELLED,
        to_raw(&params).ok(),
    ))
}

/// A handle on one session: sends requests and notifications to the peer.
///
/// Cheap to clone. A `Peer` handed to a request handler is *related* to that request:
/// what it sends travels with the request (streamable HTTP puts it on the request's
/// response stream).
#[derive(Clone)]
pub struct Peer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) related: Option<RequestId>,
    /// For a request of the stateless era that came with what its transport read of it
    /// (`TransportMessage::era`: streamable HTTP, whose sessions of the era serve request
    /// after request), the request's token: fired once the request has ended, after
    /// which notifications about it are dropped (its id may name another client's
    /// request next). It travels with them (`TransportMessage::request_over`): the
    /// transport checks it where it routes them, under the lock that routes them.
    pub(crate) request_over: Option<CancellationToken>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("role", &self.shared.role)
            .field("related", &self.related)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Peer {
    /// The role this session plays.
    pub fn role(&self) -> Role {
        self.shared.role
    }

    /// A handle whose messages are related to inbound request `id`.
    pub fn related_to(&self, id: Option<RequestId>) -> Self {
        Self {
            shared: self.shared.clone(),
            related: id,
            request_over: None,
        }
    }

    /// This peer related to the stateless era's request `id`, whose token `over` fires
    /// when the request has ended.
    pub(crate) fn related_to_era_request(&self, id: RequestId, over: CancellationToken) -> Self {
        Self {
            shared: self.shared.clone(),
            related: Some(id),
            request_over: Some(over),
        }
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.closed_flag.load(Ordering::Acquire)
    }

    /// Resolves when the session has ended.
    pub async fn closed(&self) {
        self.shared.closed.cancelled().await;
    }

    /// Ends the session: closes the transport and fails every pending request with a
    /// connection-closed error.
    pub async fn close(&self) {
        self.shared.sink.close().await;
        self.shared.mark_closed();
        self.shared.fail_all_pending();
    }

    /// Whether the session serves requests: the initialization handshake has
    /// completed, or the session serves the stateless era, which has none.
    pub fn is_initialized(&self) -> bool {
        self.shared.phase.get().is_serving()
    }

    /// Moves a client session that has not completed a handshake into the stateless era
    /// (2026-07-28): requests need no handshake from then on. A client that sent
    /// `initialize` while probing may still take this way when the server turns out to
    /// serve the era, until it sends `notifications/initialized`. False when the session
    /// was past that. Unstable.
    #[doc(hidden)]
    pub fn unstable_enter_stateless_era(&self) -> bool {
        let phase = &self.shared.phase;
        self.shared.role == Role::Client
            && (phase.advance(Phase::New, Phase::Stateless)
                || phase.advance(Phase::Initializing, Phase::Stateless))
    }

    /// Whether the session serves the stateless era (2026-07-28): its first request
    /// came with the per-request envelope instead of `initialize`. Unstable.
    #[doc(hidden)]
    pub fn is_stateless_era(&self) -> bool {
        self.shared.phase.get() == Phase::Stateless
    }

    /// Sends a typed request with default options and waits for its typed result.
    pub async fn request<M: RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        self.request_with::<M>(params, RequestOptions::default())
            .await
    }

    /// Sends a typed request and waits for its typed result.
    pub async fn request_with<M: RequestMethod>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<M::Result, SessionError> {
        self.start_request::<M>(params, options).await
    }

    /// Starts a typed request and returns a handle: await it for the result, or cancel
    /// it through [`RequestHandle::canceller`]. Dropping the handle also cancels.
    pub fn start_request<M: RequestMethod>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> RequestHandle<M::Result> {
        let raw = match serialize_params(&params) {
            Ok(raw) => raw,
            Err(e) => return RequestHandle::failed(self.clone(), e),
        };
        let mut options = options;
        if options.name_param.is_none() {
            options.name_param = M::NAME_PARAM;
        }
        let handle = self.start_raw(Cow::Borrowed(M::METHOD), raw, options);
        RequestHandle {
            id: handle.id,
            method: handle.method,
            peer: handle.peer,
            state: handle.state,
            decode: decode_result::<M>,
        }
    }

    /// Sends a request by method name with raw params; the result stays raw.
    pub fn start_raw(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> RequestHandle<Box<RawValue>> {
        let shared = &self.shared;
        if self.is_closed() {
            return RequestHandle::failed(self.clone(), SessionError::closed());
        }
        if let Err(reason) =
            lifecycle::check_outbound_request(shared.role, shared.phase.get(), &method)
        {
            return RequestHandle::failed(self.clone(), SessionError::refused(reason));
        }
        if self.related.is_some()
            && !shared.config.allow_outbound_requests
            && method != lifecycle::PING
        {
            return RequestHandle::failed(
                self.clone(),
                SessionError::refused(
                    "this session cannot send requests to the peer (stateless transport)",
                ),
            );
        }
        let (tx, rx) = oneshot::channel();
        let mut progress_rx = None;
        let id = {
            let mut pending = shared.lock_pending();
            let id = match &options.id {
                None => pending.insert(tx),
                Some(chosen) => match pending.insert_with_id(chosen.clone(), tx) {
                    Ok(()) => chosen.clone(),
                    Err(why) => {
                        drop(pending);
                        let why = match why {
                            IdRefused::InFlight => "a request with this id is in flight",
                            IdRefused::MayRepeat => {
                                "the session may already have used this number, and ids never repeat"
                            }
                        };
                        return RequestHandle::failed(
                            self.clone(),
                            SessionError::refused(format!("request id {chosen}: {why}")),
                        );
                    }
                },
            };
            if options.on_progress.is_some() {
                let queue = ProgressSink::default();
                pending.route_progress(progress_token(&id), id.clone(), queue.clone());
                progress_rx = Some(queue);
            }
            id
        };
        // The session may have ended between the check above and the insert; shutdown
        // marks `closed` before it drains the table, so this catches every interleaving.
        if self.is_closed() {
            shared.lock_pending().remove(&id);
            return RequestHandle::failed(self.clone(), SessionError::closed());
        }
        let params = match attach_meta(params, &id, &options) {
            Ok(p) => p,
            Err(e) => {
                shared.lock_pending().remove(&id);
                return RequestHandle::failed(self.clone(), e);
            }
        };
        if method == lifecycle::INITIALIZE {
            shared.phase.advance(Phase::New, Phase::Initializing);
        }
        let request = JsonRpcRequest::new(id.clone(), method.clone(), params);
        let guard = DropGuard {
            peer: Some(self.clone()),
            id: id.clone(),
            method: method.clone(),
        };
        let span = tracing::info_span!(
            target: "modelctx_session",
            parent: &shared.span,
            "mcp.request",
            direction = "outbound",
            method = %method,
            id = %id,
            era = shared.phase.get().era(),
        );
        let fut = tracing::Instrument::instrument(
            run_request(guard, request, options, rx, progress_rx),
            span,
        );
        RequestHandle {
            id: Some(id),
            method,
            peer: self.clone(),
            state: HandleState::Running(Box::pin(fut)),
            decode: Ok,
        }
    }

    /// Sends a typed notification.
    pub async fn notify<N: NotificationMethod>(
        &self,
        params: N::Params,
    ) -> Result<(), SessionError> {
        let raw = serialize_params(&params)?;
        self.notify_raw(Cow::Borrowed(N::METHOD), raw).await
    }

    /// Sends a notification by method name with raw params.
    pub async fn notify_raw(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
    ) -> Result<(), SessionError> {
        let shared = &self.shared;
        if self.is_closed() {
            return Err(SessionError::closed());
        }
        let phase = shared.phase.get();
        // In the stateless era a notification travels with the request it belongs to.
        if !(phase == Phase::Stateless && self.related.is_some()) {
            lifecycle::check_outbound_notification(shared.role, phase, &method)
                .map_err(SessionError::refused)?;
        }
        let initialized = shared.role == Role::Client && method == lifecycle::INITIALIZED;
        if initialized {
            // Operational before the notification leaves: the server may answer it with
            // a request at once, and over HTTP that request can arrive (on another
            // stream) before this send has returned.
            shared
                .phase
                .advance(Phase::Initializing, Phase::Operational);
        }
        let msg = JsonRpcMessage::Notification(JsonRpcNotification::new(method, params));
        shared
            .send_about(msg, self.related.clone(), self.request_over.clone())
            .await?;
        Ok(())
    }

    /// Sends a ping and waits for the (empty) answer.
    pub async fn ping(&self) -> Result<(), SessionError> {
        let handle = self.start_raw(
            Cow::Borrowed(lifecycle::PING),
            None,
            RequestOptions::default(),
        );
        handle.await.map(|_| ())
    }
}

/// Serialises params; `null` means "no params". JSON-RPC allows only an object or an
/// array there, so anything else is refused locally on every transport (the in-memory
/// transport never serialises, so a wire would be the first to notice otherwise).
fn serialize_params<T: Serialize>(params: &T) -> Result<Option<Box<RawValue>>, SessionError> {
    let raw = to_raw(params)
        .map_err(|e| SessionError::refused(format!("cannot serialise params: {e}")))?;
    match raw.get().as_bytes().first() {
        _ if raw.get() == "null" => Ok(None),
        Some(b'{') | Some(b'[') => Ok(Some(raw)),
        _ => Err(SessionError::refused(format!(
            "params must be a JSON object or array, not {}",
            raw.get()
        ))),
    }
}

/// The progress token of request `id`: the id itself.
fn progress_token(id: &RequestId) -> ProgressToken {
    match id {
        RequestId::Number(n) => ProgressToken::Number(*n),
        RequestId::String(s) => ProgressToken::String(s.clone()),
    }
}

/// Adds the progress token and caller `_meta` to the params, when there are any.
fn attach_meta(
    params: Option<Box<RawValue>>,
    id: &RequestId,
    options: &RequestOptions,
) -> Result<Option<Box<RawValue>>, SessionError> {
    if options.on_progress.is_none() && options.meta.is_none() {
        return Ok(params);
    }
    let mut object = match params {
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(map)) => map,
            _ => {
                return Err(SessionError::refused(
                    "params must be an object to carry _meta",
                ));
            }
        },
        None => serde_json::Map::new(),
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(meta) = meta else {
        return Err(SessionError::refused("_meta must be an object"));
    };
    if let Some(extra) = &options.meta {
        for (k, v) in extra {
            meta.insert(k.clone(), v.clone());
        }
    }
    if options.on_progress.is_some() {
        let token = serde_json::to_value(progress_token(id))
            .map_err(|e| SessionError::refused(format!("cannot serialise params: {e}")))?;
        meta.insert(Meta::PROGRESS_TOKEN.to_owned(), token);
    }
    to_raw(&object)
        .map(Some)
        .map_err(|e| SessionError::refused(format!("cannot serialise params: {e}")))
}

/// Cancels the request when the future waiting for it is dropped early.
///
/// Created with the handle, so a handle dropped before its first poll frees its slot too.
struct DropGuard {
    peer: Option<Peer>,
    id: RequestId,
    method: Cow<'static, str>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let taken = peer.shared.lock_pending().take(&self.id);
        // Already completed, or never went out: nothing to tell the peer.
        let Some((_slot, true)) = taken else { return };
        if self.method == lifecycle::INITIALIZE {
            return;
        }
        let id = std::mem::replace(&mut self.id, RequestId::Number(0));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let notice = cancelled_notification(&id, "request dropped by the caller");
                let _ = peer.shared.send(notice, None).await;
            });
        }
    }
}

/// Decodes the typed result of request method `M`.
// Takes the box by value: its type is the handle's `decode` pointer, whose raw
// instance hands the box on unchanged.
#[allow(clippy::boxed_local)]
fn decode_result<M: RequestMethod>(raw: Box<RawValue>) -> Result<M::Result, SessionError> {
    serde_json::from_str::<M::Result>(raw.get())
        .map_err(|e| SessionError::invalid_result(format!("{} result: {e}", M::METHOD)))
}

async fn run_request(
    mut guard: DropGuard,
    request: JsonRpcRequest,
    options: RequestOptions,
    mut rx: oneshot::Receiver<Outcome>,
    progress_rx: Option<ProgressSink>,
) -> Result<Box<RawValue>, SessionError> {
    let Some(peer) = guard.peer.clone() else {
        return Err(SessionError::closed());
    };
    let (id, method) = (guard.id.clone(), guard.method.clone());
    let shared = peer.shared.clone();
    let timeout = options.timeout.unwrap_or(shared.config.request_timeout);
    let start = Instant::now();
    let hard = options.max_total_timeout.map(|m| start + m);
    let cap = |t: Instant| hard.map_or(t, |h| t.min(h));
    // Cancelled through its canceller (or the session closed) before the first poll:
    // the request must not go out at all.
    let marked =
        shared
            .lock_pending()
            .mark_sent(&id, cap(start + timeout), method != lifecycle::INITIALIZE);
    match marked {
        None => {
            guard.peer = None;
            return Err(match rx.try_recv() {
                Ok(Outcome::Cancelled) => SessionError::cancelled(),
                _ => SessionError::closed(),
            });
        }
        Some(true) => shared.rearm_deadlines(),
        Some(false) => {}
    }
    let message = TransportMessage::new(JsonRpcMessage::Request(request))
        .related_to(peer.related.clone())
        .with_resumption_token(options.resumption_token.clone())
        .with_name_param(options.name_param);
    if let Err(e) = shared
        .sink
        .send(message)
        .await
        .map_err(SessionError::transport)
    {
        shared.lock_pending().remove(&id);
        guard.peer = None;
        return Err(e);
    }
    let outcome = loop {
        let progress = async {
            match progress_rx.as_deref() {
                Some(queue) => Some(queue.pop().await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            outcome = &mut rx => break outcome.unwrap_or(Outcome::Closed),
            Some(p) = progress => {
                if let Some(cb) = &options.on_progress {
                    cb(p);
                }
                if options.reset_timeout_on_progress {
                    let deadline = cap(Instant::now() + timeout);
                    if shared.lock_pending().set_deadline(&id, deadline) {
                        shared.rearm_deadlines();
                    }
                }
            }
        }
    };
    guard.peer = None;
    // Updates that arrived before the response are still in the channel when the biased
    // select above picks the response: deliver them, in order, before returning.
    if let (
        Outcome::Result(_) | Outcome::Error(_) | Outcome::InvalidResponse(_),
        Some(rx),
        Some(cb),
    ) = (&outcome, progress_rx.as_deref(), &options.on_progress)
    {
        while let Some(p) = rx.try_pop() {
            cb(p);
        }
    }
    if method == lifecycle::INITIALIZE
        && shared.role == Role::Client
        && !matches!(outcome, Outcome::Result(_))
    {
        // No session came of it: the client may send `initialize` again (another
        // revision the server named) or turn to the stateless era.
        shared.phase.advance(Phase::Initializing, Phase::New);
    }
    match outcome {
        Outcome::Result(raw) => Ok(raw),
        Outcome::Error(e) => Err(SessionError::protocol(e)),
        Outcome::InvalidResponse(reason) => Err(SessionError::invalid_response(reason)),
        Outcome::Closed => Err(SessionError::closed()),
        Outcome::Cancelled => Err(SessionError::cancelled()),
        Outcome::TimedOut => Err(SessionError::timeout()),
    }
}

/// An outbound request in flight: a future of its result, cancellable.
///
/// Dropping the handle before it resolves cancels the request (the peer is sent
/// `notifications/cancelled`, except for `initialize`).
#[must_use = "a request handle does nothing unless awaited; dropping it cancels the request"]
pub struct RequestHandle<T> {
    id: Option<RequestId>,
    method: Cow<'static, str>,
    peer: Peer,
    state: HandleState,
    /// Turns the raw result into `T` (the identity for raw requests): a plain function,
    /// so a typed request costs no second boxed future.
    decode: fn(Box<RawValue>) -> Result<T, SessionError>,
}

enum HandleState {
    Running(BoxFuture<'static, Result<Box<RawValue>, SessionError>>),
    /// Refused locally; the error is handed out on the first poll.
    Failed(Option<SessionError>),
}

impl<T> RequestHandle<T> {
    fn failed(peer: Peer, err: SessionError) -> Self {
        Self {
            id: None,
            method: Cow::Borrowed(""),
            peer,
            state: HandleState::Failed(Some(err)),
            // A failed handle never has a raw result to decode.
            decode: |_| Err(SessionError::closed()),
        }
    }

    /// The request id, when the request was sent (`None` when it was refused locally).
    pub fn id(&self) -> Option<RequestId> {
        self.id.clone()
    }

    /// A handle that cancels this request from anywhere.
    pub fn canceller(&self) -> Canceller {
        Canceller {
            peer: self.peer.clone(),
            id: self.id.clone(),
            method: self.method.clone(),
        }
    }
}

impl<T> Future for RequestHandle<T> {
    type Output = Result<T, SessionError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let decode = self.decode;
        match &mut self.state {
            HandleState::Running(fut) => fut.as_mut().poll(cx).map(|r| r.and_then(decode)),
            HandleState::Failed(err) => {
                Poll::Ready(Err(err.take().unwrap_or_else(SessionError::closed)))
            }
        }
    }
}

impl<T> fmt::Debug for RequestHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestHandle")
            .field("id", &self.id)
            .finish()
    }
}

/// Cancels one outbound request.
#[derive(Debug, Clone)]
pub struct Canceller {
    peer: Peer,
    id: Option<RequestId>,
    method: Cow<'static, str>,
}

impl Canceller {
    /// Cancels the request: the waiting call fails with a cancelled error, the peer is
    /// sent `notifications/cancelled` with `reason`, and a late response is ignored.
    /// Does nothing when the request already completed. `initialize` is never
    /// announced as cancelled.
    pub async fn cancel(&self, reason: &str) {
        if let Some(id) = &self.id {
            self.peer
                .shared
                .abandon(id, &self.method, reason, Outcome::Cancelled)
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_must_be_an_object_or_an_array() {
        assert!(serialize_params(&Option::<Value>::None).unwrap().is_none());
        assert!(
            serialize_params(&serde_json::json!({"a": 1}))
                .unwrap()
                .is_some()
        );
        assert!(serialize_params(&serde_json::json!([1])).unwrap().is_some());
        for bad in [
            serde_json::json!(3),
            serde_json::json!("x"),
            serde_json::json!(true),
        ] {
            assert!(serialize_params(&bad).unwrap_err().is_refused(), "{bad}");
        }
    }
}
