//! The outbound side: the [`Peer`] handle, typed requests with cancellation, progress and
//! timeouts, and notifications.
//!
//! `start_request::<M>` copies `M::NAME_PARAM` (which params key a vendor request's
//! `Mcp-Name` header mirrors; default none) into the options, and the request's
//! `TransportMessage::name_param` carries it to the transport: a transport sees JSON plus
//! routing metadata, never a Rust type, and needs no list of vendor methods.
//!
//! Hot-path rules: no lock shared by all callers on the per-call path (the session's closed
//! check is an atomic, not the `CancellationToken`'s mutex); one boxed future per outbound
//! request (typed results are decoded through a plain `fn` pointer); whether a request went
//! on the wire is kept in its pending-table entry, not in a separate `Arc`.

mod outbound;
mod progress_queue;
mod shared;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::future::BoxFuture;
use modelctx_transport::MessageSink;
use modelctx_types::{
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, Meta, NotificationMethod, RawValue,
    RequestId, RequestMethod,
};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::error::SessionError;
use crate::lifecycle::{self, Phase, Role};
use crate::pending::IdRefused;
use crate::trace::{Direction, RequestTrace};

use outbound::{
    DropGuard, attach_meta, decode_result, progress_token, run_request, serialize_params,
};
pub(crate) use shared::{Outcome, ProgressSink, Shared};

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

    modelctx_types::__setters! {
        /// Sets the total.
        with_total(total: f64) { total = Some(total) }

        /// Sets the message.
        with_message(message: impl Into<String>) { message = Some(message.into()) }
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

    modelctx_types::__setters! {
        /// Sets the timeout of this request.
        timeout(timeout: Duration) { timeout = Some(timeout) }
    }

    /// Restarts the timeout on each progress update, up to `max_total`.
    #[must_use]
    pub fn reset_timeout_on_progress(mut self, max_total: Option<Duration>) -> Self {
        self.reset_timeout_on_progress = true;
        self.max_total_timeout = max_total;
        self
    }

    modelctx_types::__setters! {
        /// Sets a hard limit on the whole request.
        max_total_timeout(max_total: Duration) { max_total_timeout = Some(max_total) }

        /// Receives progress updates (and attaches a progress token).
        on_progress(callback: impl Fn(Progress) + Send + Sync + 'static) { on_progress = Some(Arc::new(callback)) }

        /// Attaches `_meta` entries.
        meta(meta: Meta) { meta = Some(meta) }

        /// Resumes an interrupted request from a transport's resumption token.
        resume_from(token: Arc<str>) { resumption_token = Some(token) }

        /// Sends the request under this id instead of one the session allocates (see
        /// [`id`](Self::id)): the caller knows it before any answer comes.
        id(id: impl Into<RequestId>) { id = Some(id.into()) }

        /// Mirrors the params key `key` into the request's `Mcp-Name` header (see
        /// [`name_param`](Self::name_param)).
        name_param(key: &'static str) { name_param = Some(key) }
    }
}

modelctx_types::__debug_shows!(RequestOptions, |v| {
    timeout: &v.timeout,
    reset_timeout_on_progress: &v.reset_timeout_on_progress,
    max_total_timeout: &v.max_total_timeout,
    on_progress: &v.on_progress.is_some(),
    meta: &v.meta,
    resumption_token: &v.resumption_token,
    id: &v.id,
    name_param: &v.name_param,
});

/// A handle on one session: sends requests and notifications to the peer.
///
/// Cheap to clone. A `Peer` handed to a request handler is *related* to that request:
/// what it sends travels with the request (streamable HTTP puts it on the request's
/// response stream).
#[derive(Clone)]
pub struct Peer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) related: Option<RequestId>,
    /// For the peer handed to a request's handler, the request's token: it fires when
    /// the caller cancels the request, when the session ends and, on a session that
    /// serves requests of several clients in turn, once the request has ended.
    /// Notifications about the request are then refused, whatever the handler still
    /// tries on its way out.
    pub(crate) cancelled: Option<CancellationToken>,
    /// Whether `cancelled` also travels with those notifications
    /// (`TransportMessage::request_over`): for a request that may share its session with
    /// later requests of other clients — one of the stateless era that came with what its
    /// transport read of it (`TransportMessage::era`), or one of a session that is not a
    /// lasting one (`TransportInfo::sessionless`); streamable HTTP lends such sessions
    /// POST after POST, so the id may name another client's request next — the
    /// transport checks it again under the lock that routes them.
    pub(crate) over_travels: bool,
}

modelctx_types::__debug_shows!(Peer, |v| {
    role: &v.shared.role,
    related: &v.related,
    closed: &v.is_closed(),
});

impl Peer {
    /// The role this session plays.
    pub fn role(&self) -> Role {
        self.shared.role
    }

    /// A handle whose messages are related to inbound request `id`.
    ///
    /// A handle given to a request's handler on a session that may serve requests of
    /// several clients in turn (the stateless era's, or session-less streamable HTTP's)
    /// keeps that request's end, whatever it is related to: once the request has ended,
    /// what the handler's leftovers send through it is refused and
    /// [`close`](Self::close) leaves the session be.
    pub fn related_to(&self, id: Option<RequestId>) -> Self {
        let over = self.cancelled.clone().filter(|_| self.over_travels);
        Self {
            shared: self.shared.clone(),
            related: id,
            over_travels: over.is_some(),
            cancelled: over,
        }
    }

    /// This handle, related to no request and bound to no request's end: for what
    /// outlives the request it came from by design (a task's status notifications).
    #[cfg(feature = "tasks")]
    pub(crate) fn detached(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            related: None,
            cancelled: None,
            over_travels: false,
        }
    }

    /// This peer related to inbound request `id`, whose cancellation `cancelled` ends
    /// the notifications about it.
    pub(crate) fn related_to_request(&self, id: RequestId, cancelled: CancellationToken) -> Self {
        Self {
            shared: self.shared.clone(),
            related: Some(id),
            cancelled: Some(cancelled),
            over_travels: false,
        }
    }

    /// This peer related to the stateless era's request `id`, whose token `over` fires
    /// when the request has ended.
    pub(crate) fn related_to_era_request(&self, id: RequestId, over: CancellationToken) -> Self {
        Self {
            shared: self.shared.clone(),
            related: Some(id),
            cancelled: Some(over),
            over_travels: true,
        }
    }

    /// Whether this handle belongs to a request that has ended, on a session that serves
    /// requests of several clients in turn.
    fn request_over(&self) -> bool {
        self.over_travels
            && self
                .cancelled
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
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
    ///
    /// Except from a handler's leftovers: a handle given to a request's handler on a
    /// session that serves requests of several clients in turn does nothing once its
    /// request has ended (the session may serve another client's request by then).
    pub async fn close(&self) {
        if self.request_over() {
            return;
        }
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

    /// Whether the session is not a lasting one: its transport serves requests that each
    /// stand alone, possibly of several clients in turn (a session-less streamable HTTP
    /// POST, or a session of the 2026-07-28 era that streamable HTTP lends POST after
    /// POST; see
    /// [`TransportInfo::sessionless`](modelctx_transport::TransportInfo::sessionless)).
    /// State bound to "the session" cannot be.
    pub fn is_sessionless(&self) -> bool {
        self.shared.sessionless
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
        // The span first: an outbound request carries its trace context in `_meta`.
        let (span, trace) = RequestTrace::start(
            (&shared.span, &shared.trace),
            Direction::Outbound,
            &method,
            &id,
            shared.phase.get().era(),
            (params.as_deref(), options.meta.as_ref()),
        );
        let params = match attach_meta(params, &id, &options, crate::trace::carried(&span)) {
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
        let fut = tracing::Instrument::instrument(
            run_request(guard, request, options, rx, progress_rx, trace),
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
        if self
            .cancelled
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            // The spec: nothing more about a cancelled request.
            return Err(SessionError::cancelled());
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
            .send_about(
                msg,
                self.related.clone(),
                self.cancelled.clone().filter(|_| self.over_travels),
            )
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
