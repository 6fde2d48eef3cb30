//! The receive loop: one task owns the transport's stream and dispatches every inbound
//! message without ever awaiting user code.
//!
//! Each request's job (its handler, then its response) is polled once on the receive task
//! and gets a task of its own only if it is still pending: most handlers answer in their
//! first poll, so there is no spawn and one hand-off less per call. The job's own task
//! polls it again at once, so its wakers are registered there. Jobs run under a semaphore.
//! A handler that *blocks* in its first poll holds up the receive loop (or, taken directly,
//! the connection it arrived on), as it would hold up a worker thread: blocking work
//! belongs in `spawn_blocking`.
//!
//! Notification handlers run in arrival order: each is polled once on the task that took
//! it (the receive task, or a transport's task delivering directly) until one is still
//! pending after that poll, which starts the session's notification task (it finishes that
//! handler, then runs every later notification in order). Every handler is *called* at
//! arrival, so what it does before its first await (the client routes a subscription's
//! notifications and drops stale cache entries there) happens before any later response is
//! handled. Most sessions never start that task. Ping, `notifications/cancelled` and
//! progress for our own requests are handled by the runtime.
//!
//! `Core` is what admitting a message needs, shared by the receive task and transports that
//! deliver directly (`DirectReceiver`): a transport does so only while everything it queued
//! before is handled, so a notification taken directly (the client's
//! `notifications/initialized` on its POST's task, answered `202` after it) keeps its
//! place in the order. A request taken directly gets the same checks
//! (phase, duplicate id, semaphore) and the same poll-once-then-spawn treatment
//! (`poll_once_or_spawn`, a no-op waker for the first poll). A request taken directly while
//! the session ends is cancelled: the end marks the session closed before it cancels what
//! is in flight, so whichever comes second sees the other.
//!
//! Responses from the peer:
//!
//! - An error response without id (`"id": null`) answers none of our requests; it goes to
//!   `Service::handle_error` in order with the notifications and is never answered.
//! - A response that cannot be read (`TransportError::invalid` with
//!   `InvalidMessage::is_response`: an error without `message`, a non-integer `code`, both
//!   `result` and `error`) is never answered either: the request it names fails at once
//!   (`SessionError::is_invalid_response`) instead of waiting for its timeout, and the
//!   service hears of it through `handle_error`. The HTTP and legacy SSE servers
//!   refuse such a POST with 400 and hand the decode error to the session it names, in
//!   order with the messages.
//! - A response whose id names no request of ours waiting for one (unknown, answered
//!   already, timed out, cancelled) is dropped, and the service hears of it through
//!   `handle_error` (in order with the notifications when the receive task took it, at
//!   once when a transport delivered it directly).
//! - A message with an id and none of `method`, `result`, `error` is not taken for a
//!   response: it is answered `-32600` and fails no call even when one of ours has that id,
//!   because both directions number their requests from the same small integers.
//!
//! A notification handler that panics loses that notification only; the service hears
//! of the panic through `handle_error`.
//!
//! Nothing waits without a bound for a peer that does not read: a handler's answer that
//! does not go out in its first poll counts in `answers_waiting`, against
//! `max_requests_in_flight` (the in-flight entry is removed before the answer is sent, so a
//! duplicate id right after an answer is not refused); answers the runtime gives itself
//! (ping, refusals, errors for invalid messages) are sent in one poll or on a task of their
//! own, at most `MAX_WAITING_RUNTIME_ANSWERS` at once, dropped beyond that. The session's
//! end still waits for those tasks, under `SEND_FLUSH_LIMIT`.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use futures_core::future::BoxFuture;
use modelctx_transport::{
    DirectReceiver, EraRead, Extensions, MessageStream, Transport, TransportMessage,
};
use modelctx_types::{
    ErrorData, InvalidMessage, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResultResponse, ProgressToken, RawValue, RequestId,
};
use serde::Deserialize;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::SessionConfig;
use crate::lifecycle::{self, Phase, PhaseCell, Role};
use crate::peer::{Outcome, Peer, Progress, Shared};
use crate::pending::PendingTable;
use crate::service::{RequestContext, Service};
use crate::trace::{self, Direction, RequestTrace, SessionTrace};
use crate::unwind::catch_unwind;

/// How long the session's end waits for answers it already gave to leave.
const SEND_FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// At most this many answers the runtime gives by itself (pings, refusals, errors for
/// invalid messages) wait for room in a full sink, each on a task of its own; beyond
/// it such an answer is dropped. A full sink means the peer is not reading: without the
/// cap, a peer that floods requests and never reads its answers would have a task
/// spawned per request. A peer that reads is never near it (the answers leave as soon
/// as it reads).
pub(crate) const MAX_WAITING_RUNTIME_ANSWERS: usize = 64;

/// Starts a session over `transport`, serving inbound messages with `service`.
///
/// Spawns the receive task on the current tokio runtime and returns the [`Peer`] handle.
/// The session ends when the transport closes, or on [`Peer::close`]; every pending
/// outbound request then fails with a connection-closed error and every running handler
/// is cancelled.
pub fn start<T: Transport>(transport: T, service: Arc<dyn Service>, config: SessionConfig) -> Peer {
    let info = transport.info();
    let stateless_era = config.serves_stateless_era() && info.stateless_era;
    let phase = if stateless_era {
        Phase::Stateless
    } else if config.pre_initialized {
        Phase::Operational
    } else if config.initialize_answered {
        Phase::Initializing
    } else {
        Phase::New
    };
    // `initialize` was answered elsewhere (a shared session continued here) whether or
    // not the client's `notifications/initialized` has arrived since: another one is
    // refused.
    let initialize_seen = config.initialize_answered && phase != Phase::Stateless;
    // The era is known here only for a stateless request or a pre-initialised session;
    // otherwise it is recorded when the first request shows it (`on_request`). The
    // fields are evaluated only when a subscriber enables the span; the session id's
    // tag is recorded by `SessionTrace::start`.
    let span = tracing::info_span!(
        target: "modelctx_session",
        "mcp.session",
        role = role_name(config.role),
        transport = info.kind,
        mcp.session.id = tracing::field::Empty,
        era = tracing::field::Empty,
        mcp.protocol.version = tracing::field::Empty,
    );
    // A conversation counts among the open sessions; one stateless request does not,
    // nor one session-less POST (started initialised, allowed no request of its own).
    let one_exchange = config.pre_initialized && !config.allow_outbound_requests;
    let trace = SessionTrace::start(
        &span,
        config.role,
        phase != Phase::Stateless && !one_exchange,
        || info.session_id.as_deref().map(str::to_owned),
        config.agreed_version.as_deref(),
    );
    if phase != Phase::New {
        span.record("era", phase.era());
    }
    let id_prefix = info.request_id_prefix;
    let (sink, stream) = transport.split();
    let shared = Arc::new(Shared {
        role: config.role,
        semaphore: Semaphore::new(config.max_concurrent_requests.max(1)),
        config,
        sink: Box::new(sink),
        phase: PhaseCell::new(phase),
        sessionless: info.sessionless,
        pending: Mutex::new(PendingTable::with_id_prefix(id_prefix)),
        inflight: Mutex::default(),
        closed: CancellationToken::new(),
        closed_flag: AtomicBool::new(false),
        deadline_changed: tokio::sync::Notify::new(),
        deadline_watcher: AtomicBool::new(false),
        initialize_seen: AtomicBool::new(initialize_seen),
        initialized_early: AtomicBool::new(false),
        sends_in_flight: std::sync::atomic::AtomicUsize::new(0),
        sends_idle: tokio::sync::Notify::new(),
        answers_waiting: std::sync::atomic::AtomicUsize::new(0),
        span,
        trace,
    });
    let peer = Peer {
        shared: shared.clone(),
        related: None,
        cancelled: None,
        over_travels: false,
    };
    let core = Arc::new(Core {
        shared,
        peer: peer.clone(),
        service,
        notifications: Mutex::new(None),
    });
    let mut stream: Box<dyn MessageStream> = Box::new(stream);
    stream.offer_direct(core.clone());
    stream.offer_clocks(core.shared.clone());
    let receiver = Receiver { core };
    let span = receiver.core.shared.span.clone();
    tokio::spawn(tracing::Instrument::instrument(receiver.run(stream), span));
    peer
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Client => "client",
        Role::Server => "server",
    }
}

/// What the runtime hands the service in arrival order: notifications, and errors the
/// peer could not attribute to a request.
enum Delivery {
    Notification(JsonRpcNotification),
    /// An error that belongs to no request (an error response without id, a response
    /// that could not be read or that answers nothing): see [`Service::handle_error`].
    Error(ErrorData),
}

/// A notification handler (or error handler), its panic caught: a panicking handler
/// loses that message only, and a notification handler's panic is reported to
/// [`Service::handle_error`].
type NotificationJob = BoxFuture<'static, ()>;

fn notification_job(core: &Core, delivery: Delivery) -> NotificationJob {
    let service = core.service.clone();
    let peer = core.peer.clone();
    match delivery {
        Delivery::Notification(n) => {
            let method = n.method.clone();
            let handler = service.clone().handle_notification(n, peer.clone());
            Box::pin(async move {
                if let Err(panic) = catch_unwind(handler).await {
                    let error = ErrorData::internal_error(format!(
                        "the handler of notification {method} panicked: {}",
                        panic_text(&*panic)
                    ));
                    report(service, error, peer).await;
                }
            })
        }
        Delivery::Error(e) => Box::pin(report(service, e, peer)),
    }
}

/// Hands `error` to the service's error handler, its panic caught (and not reported
/// again).
async fn report(service: Arc<dyn Service>, error: ErrorData, peer: Peer) {
    let _ = catch_unwind(service.handle_error(error, peer)).await;
}

/// What a panic said, when it said it with a string.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    match panic.downcast_ref::<&str>() {
        Some(text) => text,
        None => panic
            .downcast_ref::<String>()
            .map_or("(no message)", String::as_str),
    }
}

/// Runs notification handlers one after another, in arrival order: first the handler
/// that was still running when the task started, then each queued one (already
/// started where they arrived, see [`Core::deliver`]).
async fn notification_task(
    running: NotificationJob,
    mut rx: mpsc::UnboundedReceiver<NotificationJob>,
) {
    let _ = running.await;
    while let Some(job) = rx.recv().await {
        let _ = job.await;
    }
}

/// The receive task: owns the transport's stream.
struct Receiver {
    core: Arc<Core>,
}

/// What admitting an inbound message needs, shared by the receive task and by
/// transports that deliver messages on their own tasks ([`DirectReceiver`]).
struct Core {
    shared: Arc<Shared>,
    peer: Peer,
    service: Arc<dyn Service>,
    /// The queue of the task that runs notification handlers in arrival order; that task
    /// starts with the first handler that does not finish in its first poll (most
    /// sessions never need it).
    notifications: Mutex<Option<mpsc::UnboundedSender<NotificationJob>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: RequestId,
}

/// The members of `notifications/progress` the session routes by: the token and the
/// [`Progress`] members, read inline (no buffering of the object).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProgressParams {
    progress_token: ProgressToken,
    progress: f64,
    #[serde(default)]
    total: Option<f64>,
    #[serde(default)]
    message: Option<String>,
}

impl ProgressParams {
    /// The progress this notification reports.
    fn progress(self) -> (ProgressToken, Progress) {
        let progress = Progress {
            progress: self.progress,
            total: self.total,
            message: self.message,
        };
        (self.progress_token, progress)
    }
}

impl Receiver {
    async fn run(self, mut stream: Box<dyn MessageStream>) {
        // One registration on the session's close signal for the whole loop, rather than
        // a fresh waiter per message.
        let closed = self.core.shared.closed.clone();
        let mut closed = std::pin::pin!(closed.cancelled_owned());
        loop {
            let next = tokio::select! {
                biased;
                () = &mut closed => break,
                next = stream.recv() => next,
            };
            match next {
                None => break,
                Some(Err(e)) if e.is_closed() => break,
                Some(Err(e)) => match e.invalid_message() {
                    // A response is never answered, not even a broken one.
                    Some(invalid) if invalid.is_response() => {
                        self.core.on_invalid_response(invalid);
                    }
                    Some(invalid) => {
                        let response = invalid.clone().into_response();
                        self.core.spawn_send(JsonRpcMessage::Error(response), None);
                    }
                    None => {}
                },
                Some(Ok(message)) => match message.message {
                    JsonRpcMessage::Notification(n) => self.core.on_notification(n),
                    // An error the peer could not attribute to a request: in arrival
                    // order with the notifications, to the service (never answered).
                    JsonRpcMessage::Error(e) if e.id.is_none() => {
                        self.core.deliver(Delivery::Error(e.error));
                    }
                    _ => {
                        if let Some(unmatched) = self.core.take(message) {
                            self.core.deliver(Delivery::Error(unmatched));
                        }
                    }
                },
            }
        }
        self.shutdown().await;
    }

    async fn shutdown(&self) {
        let shared = &self.core.shared;
        // Measured before the end is announced: whoever waits for it sees the count.
        shared.trace.end();
        shared.mark_closed();
        shared.fail_all_pending();
        let inflight: Vec<_> = shared
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, t)| t)
            .collect();
        for token in inflight {
            token.cancel();
        }
        // Answers already given (a ping's, a refusal) leave before the sink closes: a
        // peer that stops sending (stdin closed) still reads what it was answered.
        let flushed = async {
            loop {
                let idle = shared.sends_idle.notified();
                if shared.sends_in_flight.load(Ordering::Acquire) == 0 {
                    break;
                }
                idle.await;
            }
        };
        // No timer for the usual case: nothing is on its way out.
        if shared.sends_in_flight.load(Ordering::Acquire) != 0 {
            let _ = tokio::time::timeout(SEND_FLUSH_LIMIT, flushed).await;
        }
        shared.sink.close().await;
    }
}

impl Core {
    /// Runs a notification's handler, in arrival order. Until a handler is still
    /// running after its first poll, each one is polled here, on the task that took it, and
    /// most finish in that poll (`notifications/initialized`, say): no task, no queue.
    /// The first that does not finish starts the notification task, which completes it
    /// and then runs every later notification, in order.
    ///
    /// Each handler is called here, at arrival, even when its future waits in the queue:
    /// what a handler does before its first await (the client routes a subscription's
    /// notifications, drops stale cache entries) happens in arrival order with the
    /// responses completed after it, so a response never overtakes a notification the
    /// peer sent before it.
    fn deliver(&self, delivery: Delivery) {
        let mut job = notification_job(self, delivery);
        if let Some(tx) = &*self.notifications.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = tx.send(job);
            return;
        }
        if poll_once(&mut job) {
            return;
        }
        let mut queue = self.notifications.lock().unwrap_or_else(|p| p.into_inner());
        match &*queue {
            // A handler delivered at the same time on another task (messages that
            // arrived together, in no defined order) started the task first: this one
            // runs after it.
            Some(tx) => {
                let _ = tx.send(job);
            }
            None => {
                let (tx, rx) = mpsc::unbounded_channel();
                let span = self.shared.span.clone();
                tokio::spawn(tracing::Instrument::instrument(
                    notification_task(job, rx),
                    span,
                ));
                *queue = Some(tx);
            }
        }
    }

    /// A response from the peer that could not be read: the request of ours it names
    /// fails at once (rather than at its timeout), and the service hears of it as a
    /// peer error, in arrival order with the notifications. Nothing goes back.
    fn on_invalid_response(&self, invalid: &InvalidMessage) {
        let message = &invalid.error.message;
        let reason = message
            .strip_prefix("Invalid response: ")
            .unwrap_or(message);
        let failed = invalid.id.as_ref().is_some_and(|id| {
            self.shared
                .complete(id, Outcome::InvalidResponse(reason.to_owned()))
        });
        tracing::warn!(
            target: "modelctx_session",
            id = ?invalid.id,
            failed_request = failed,
            reason,
            "invalid response from peer",
        );
        let described = match &invalid.id {
            Some(id) => format!("invalid response from peer to request {id}: {reason}"),
            None => format!("invalid response from peer: {reason}"),
        };
        self.deliver(Delivery::Error(ErrorData::internal_error(described)));
    }

    fn on_notification(&self, notification: JsonRpcNotification) {
        let shared = &self.shared;
        match notification.method.as_ref() {
            lifecycle::CANCELLED => {
                let params = notification.params.as_deref().map(RawValue::get);
                if let Some(p) =
                    params.and_then(|p| serde_json::from_str::<CancelledParams>(p).ok())
                {
                    let inflight = shared.inflight.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(token) = inflight.get(&p.request_id) {
                        token.cancel();
                    }
                }
            }
            lifecycle::PROGRESS => {
                let params = notification.params.as_deref().map(RawValue::get);
                let parsed = params.and_then(|p| serde_json::from_str::<ProgressParams>(p).ok());
                let routed = parsed.is_some_and(|p| {
                    let (token, progress) = p.progress();
                    shared.route_progress(&token, progress)
                });
                if !routed {
                    self.deliver(Delivery::Notification(notification));
                }
            }
            lifecycle::INITIALIZED => {
                if shared.role == Role::Server
                    && !shared
                        .phase
                        .advance(Phase::Initializing, Phase::Operational)
                    && shared.initialize_seen.load(Ordering::Acquire)
                {
                    // `initialize` is still being answered: remember, then retry once in
                    // case the answer went out in between (the handler task checks the
                    // flag right after it advances, so one of the two sees the other).
                    shared.initialized_early.store(true, Ordering::Release);
                    shared
                        .phase
                        .advance(Phase::Initializing, Phase::Operational);
                }
                self.deliver(Delivery::Notification(notification));
            }
            _ => {
                self.deliver(Delivery::Notification(notification));
            }
        }
    }
}

impl DirectReceiver for Core {
    /// Requests, and responses to our own requests, once the session is operational:
    /// they need nothing from the receive task (a request's order relative to other
    /// requests is not defined; handlers run concurrently anyway). A server's
    /// `initialize`, notifications and errors without id, in any phase: the transport
    /// delivers directly only while everything queued before is handled, the handshake's
    /// steps are atomic (see `initialized_early`), and handlers of notifications keep
    /// arrival order through the notification queue shared with the receive task. Other
    /// messages before the handshake (and everything of a closed session) go through the
    /// receive task.
    fn receive(&self, message: TransportMessage) -> Option<TransportMessage> {
        if self.peer.is_closed() {
            return Some(message);
        }
        let ordered = match &message.message {
            JsonRpcMessage::Notification(_) => true,
            JsonRpcMessage::Error(e) => e.id.is_none(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Response(_) => false,
        };
        if ordered {
            match message.message {
                JsonRpcMessage::Notification(n) => self.on_notification(n),
                JsonRpcMessage::Error(e) => self.deliver(Delivery::Error(e.error)),
                JsonRpcMessage::Request(_) | JsonRpcMessage::Response(_) => {}
            }
            return None;
        }
        let initialize = self.shared.role == Role::Server
            && matches!(&message.message, JsonRpcMessage::Request(r) if r.method == lifecycle::INITIALIZE);
        if !initialize && !self.shared.phase.get().is_serving() {
            return Some(message);
        }
        if let Some(unmatched) = self.take(message) {
            // Not in order with the notifications (those are the receive task's), as
            // the response it reports was not.
            let service = self.service.clone();
            let peer = self.peer.clone();
            tokio::spawn(report(service, unmatched, peer));
        }
        None
    }
}

impl Core {
    /// Handles a request (its handler polled once here, spawned if still pending) or
    /// a response to one of our requests; notifications are the receive task's. A
    /// response that answers no request of ours comes back as the error to report.
    fn take(&self, message: TransportMessage) -> Option<ErrorData> {
        let (id, answered) = match message.message {
            JsonRpcMessage::Request(r) => {
                if let Some(job) = self.on_request(r, message.extensions, message.era) {
                    poll_once_or_spawn(job);
                }
                return None;
            }
            JsonRpcMessage::Response(r) => {
                let answered = self.shared.complete(&r.id, Outcome::Result(r.result));
                (r.id, answered)
            }
            // (Errors without id are the receive task's, see `receive`.)
            JsonRpcMessage::Error(e) => match e.id {
                Some(id) => {
                    let answered = self.shared.complete(&id, Outcome::Error(e.error));
                    (id, answered)
                }
                None => return None,
            },
            JsonRpcMessage::Notification(_) => return None,
        };
        (!answered).then(|| {
            tracing::debug!(
                target: "modelctx_session",
                parent: &self.shared.span,
                %id,
                "response to no request of ours"
            );
            ErrorData::invalid_request(format!(
                "response from peer to request {id}, which is not waiting for one (unknown, answered, timed out or cancelled)"
            ))
        })
    }

    /// Sends an answer the runtime gave itself: at once when the sink takes it in one
    /// poll, else on a task of its own that the session's end waits for.
    fn spawn_send(&self, message: JsonRpcMessage, related: Option<RequestId>) {
        let shared = self.shared.clone();
        let mut send: BoxFuture<'static, ()> = Box::pin(async move {
            let _ = shared.send(message, related).await;
        });
        if poll_once(&mut send) {
            return;
        }
        let shared = self.shared.clone();
        if shared.sends_in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_WAITING_RUNTIME_ANSWERS {
            if shared.sends_in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
                shared.sends_idle.notify_waiters();
            }
            tracing::debug!(
                target: "modelctx_session",
                parent: &shared.span,
                "answer dropped: the peer is not reading its answers"
            );
            return;
        }
        tokio::spawn(async move {
            send.await;
            if shared.sends_in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
                shared.sends_idle.notify_waiters();
            }
        });
    }

    fn respond_error(&self, id: RequestId, error: ErrorData) {
        let msg = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id.clone()), error));
        self.spawn_send(msg, Some(id));
    }

    /// Admits one inbound request and returns the job that answers it (`None` when it
    /// was answered at once, with an error or a ping's empty result).
    fn on_request(
        &self,
        request: JsonRpcRequest,
        extensions: Extensions,
        era: Option<Box<EraRead>>,
    ) -> Option<BoxFuture<'static, ()>> {
        let shared = &self.shared;
        if shared.role == Role::Server
            && shared.config.serves_stateless_era()
            && shared.phase.get() == Phase::New
            && request.carries_envelope()
        {
            // The stateless era: this request and every later one stand on their own
            // envelope (the server checks it); there is no handshake to wait for.
            shared.phase.advance(Phase::New, Phase::Stateless);
            shared.span.record("era", Phase::Stateless.era());
        }
        // `ping` is gone from the stateless era: the server answers it like any
        // unknown method.
        if request.method == lifecycle::PING && shared.phase.get() != Phase::Stateless {
            let result = RawValue::from_string("{}".to_owned()).ok();
            if let Some(result) = result {
                let id = request.id;
                let msg = JsonRpcMessage::Response(JsonRpcResultResponse::new(id.clone(), result));
                self.spawn_send(msg, Some(id));
            }
            return None;
        }
        let is_initialize = shared.role == Role::Server && request.method == lifecycle::INITIALIZE;
        if is_initialize {
            shared.span.record("era", Phase::New.era());
        }
        if is_initialize && shared.initialize_seen.swap(true, Ordering::AcqRel) {
            let error = ErrorData::invalid_request("initialize may be sent only once per session");
            self.respond_error(request.id, error);
            return None;
        }
        if let Err(error) =
            lifecycle::check_inbound_request(shared.role, shared.phase.get(), &request.method)
        {
            self.respond_error(request.id, error);
            return None;
        }
        let token = CancellationToken::new();
        {
            let mut inflight = shared.inflight.lock().unwrap_or_else(|p| p.into_inner());
            if inflight.contains_key(&request.id) {
                drop(inflight);
                let error = ErrorData::invalid_request(format!(
                    "request id {} is already in use by a request in flight",
                    request.id
                ));
                self.respond_error(request.id, error);
                return None;
            }
            let limit = shared.config.max_requests_in_flight.max(1);
            let waiting = shared.answers_waiting.load(Ordering::Acquire);
            if inflight.len() + waiting >= limit {
                drop(inflight);
                let error = ErrorData::new(
                    crate::TOO_MANY_REQUESTS,
                    format!(
                        "Too many requests in flight: this session takes at most {limit} at once; the request did not run, send it again once answers come back"
                    ),
                )
                .with_data(serde_json::json!({"limit": limit}));
                self.respond_error(request.id, error);
                return None;
            }
            inflight.insert(request.id.clone(), token.clone());
        }
        // A request taken directly may race the session's end, which marks it closed
        // before it cancels everything in flight: one of the two sees the other.
        if self.peer.is_closed() {
            token.cancel();
        }
        let (span, mut trace) = RequestTrace::start(
            (&shared.span, &shared.trace),
            Direction::Inbound,
            &request.method,
            &request.id,
            shared.phase.get().era(),
            (request.params.as_deref(), None),
        );
        let shared = shared.clone();
        let service = self.service.clone();
        let peer = self.peer.clone();
        // A request that came with what its transport read of it, or one of a session
        // that is not a lasting one, may share its session with later requests of other
        // clients (see `Peer::over_travels`).
        let shares = era.is_some() || shared.sessionless;
        let over = shares.then(|| token.clone());
        let job = async move {
            let id = request.id.clone();
            let outcome = handle(
                &shared,
                service,
                peer,
                request,
                (extensions, era, shares),
                token,
                is_initialize,
            )
            .await;
            {
                let mut inflight = shared.inflight.lock().unwrap_or_else(|p| p.into_inner());
                inflight.remove(&id);
                modelctx_store::table::shrink_drained(&mut *inflight);
            }
            if let Some(over) = over {
                // The request has ended: what its handler's leftovers would still send
                // about it is dropped (see `Peer::over_travels`). Before its answer goes:
                // a leftover routed after the answer finds it fired.
                over.cancel();
            }
            match &outcome {
                // Cancelled: recorded so when `trace` drops.
                None => {}
                Some(Ok(result)) => trace.finish(trace::Outcome::Result(result)),
                Some(Err(error)) => trace.finish(trace::Outcome::Error(error)),
            }
            let message = match outcome {
                // Cancelled: the spec says no response.
                None => return,
                Some(Ok(result)) => {
                    if is_initialize {
                        shared.trace.learn_version(&shared.span, &result);
                        shared.phase.advance(Phase::New, Phase::Initializing);
                        if shared.initialized_early.load(Ordering::Acquire) {
                            shared
                                .phase
                                .advance(Phase::Initializing, Phase::Operational);
                        }
                    }
                    JsonRpcMessage::Response(JsonRpcResultResponse::new(id.clone(), result))
                }
                Some(Err(error)) => {
                    if is_initialize {
                        // A failed initialize may be retried.
                        shared.initialize_seen.store(false, Ordering::Release);
                        return send_init_error(&shared, id, error).await;
                    }
                    JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id.clone()), error))
                }
            };
            send_answer(&shared, message, id).await;
        };
        Some(Box::pin(tracing::Instrument::instrument(job, span)))
    }
}

/// Polls a request's job once, on whichever task received the request (the receive
/// task, or a transport's task delivering directly); only a job that is still pending
/// after that (a handler that awaits something, or a full sink) gets a task of its own.
///
/// Most handlers answer in their first poll, so this saves a spawn and a task hand-off
/// per request. User code is polled here but never awaited.
fn poll_once_or_spawn(mut job: BoxFuture<'static, ()>) {
    if !poll_once(&mut job) {
        tokio::spawn(job);
    }
}

/// Polls `job` once, with a waker that does nothing; `true` when it finished. Sound
/// only because the caller hands a job that is still pending to a task of its own,
/// which polls it again at once and registers real wakers there (and the polling task
/// is not woken for a job it no longer owns).
fn poll_once<F: Future + Unpin>(job: &mut F) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    Pin::new(job).poll(&mut cx).is_ready()
}

/// Sends a handler's answer. One that does not go out in its first poll (the sink is
/// full: the peer is not reading) is counted in `answers_waiting` until it does, and so
/// keeps counting against the bound on requests in flight.
async fn send_answer(shared: &Shared, message: JsonRpcMessage, id: RequestId) {
    let mut send = std::pin::pin!(shared.send(message, Some(id)));
    let first = std::future::poll_fn(|cx| Poll::Ready(send.as_mut().poll(cx))).await;
    if first.is_ready() {
        return;
    }
    struct Waiting<'a>(&'a AtomicUsize);
    impl Drop for Waiting<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::AcqRel);
        }
    }
    shared.answers_waiting.fetch_add(1, Ordering::AcqRel);
    let _waiting = Waiting(&shared.answers_waiting);
    let _ = send.await;
}

async fn send_init_error(shared: &Shared, id: RequestId, error: ErrorData) {
    let msg = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id.clone()), error));
    let _ = shared.send(msg, Some(id)).await;
}

/// Runs one handler under the concurrency bound; `None` when it was cancelled.
async fn handle(
    shared: &Shared,
    service: Arc<dyn Service>,
    peer: Peer,
    request: JsonRpcRequest,
    (extensions, era, shares): (Extensions, Option<Box<EraRead>>, bool),
    token: CancellationToken,
    is_initialize: bool,
) -> Option<Result<Box<RawValue>, ErrorData>> {
    let _permit = match shared.semaphore.try_acquire() {
        Ok(permit) => permit,
        Err(_) => tokio::select! {
            biased;
            () = token.cancelled() => return None,
            permit = shared.semaphore.acquire() => permit.ok()?,
        },
    };
    // The slot shared with other sessions, taken after this session's own: a session
    // waits for shared slots with at most its own bound of handlers.
    let _shared_permit = match &shared.config.handler_limit {
        None => None,
        Some(limit) => match limit.semaphore().try_acquire() {
            Ok(permit) => Some(permit),
            Err(_) => tokio::select! {
                biased;
                () = token.cancelled() => return None,
                permit = limit.semaphore().acquire() => Some(permit.ok()?),
            },
        },
    };
    let context =
        RequestContext::new(&request, token.clone(), peer, era, shares).with_extensions(extensions);
    let mut fut = std::pin::pin!(catch_unwind(service.handle_request(request, context)));
    // The handler first: one that answers in its first poll never registers a waiter on
    // the token (the check below still drops its answer if the request was cancelled).
    let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    let result = match first {
        Poll::Ready(result) => result,
        Poll::Pending => tokio::select! {
            biased;
            () = token.cancelled(), if !is_initialize => return None,
            result = fut => result,
        },
    };
    // The cancellation may land while the handler is being polled (another thread fires
    // the token and the handler, watching it, finishes in the same poll): the request is
    // cancelled all the same, and a cancelled request gets no response.
    if token.is_cancelled() && !is_initialize {
        return None;
    }
    Some(match result {
        Ok(result) => result,
        // The panic payload stays local: it may hold internals the peer must not see.
        Err(_) => Err(ErrorData::internal_error("Internal error")),
    })
}
