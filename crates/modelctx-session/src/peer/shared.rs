//! The state one session's handles share with its receive loop: the sink, the table of
//! pending requests and its deadlines, in-flight handlers and the session's phase.
//!
//! Request clocks: the session offers its transport its `RequestClocks`
//! (`MessageStream::offer_clocks`, kept weakly). A transport that waits on something other
//! than the peer for one request holds that request's timeout (`RequestClock::paused`):
//! the pending entry puts its deadline aside with the budget left and gets it back
//! on release. The HTTP client hands the clock to its auth hook, and `modelctx-oauth` holds
//! it only while the user is at the authorization server. A stream that wraps another must
//! forward the offer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use modelctx_transport::{MessageSink, TransportMessage};
use modelctx_types::{
    ErrorData, JsonRpcMessage, JsonRpcNotification, ProgressToken, RawValue, RequestId, to_raw,
};
use tokio::sync::{Semaphore, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::SessionConfig;
use crate::error::SessionError;
use crate::lifecycle::{self, PhaseCell, Role};
use crate::pending::PendingTable;

use super::Progress;
use super::progress_queue::ProgressQueue;

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
pub(crate) type ProgressSink = Arc<ProgressQueue>;

/// State shared by the receive task and every handle of one session.
pub(crate) struct Shared {
    pub(crate) role: Role,
    pub(crate) config: SessionConfig,
    pub(crate) sink: Box<dyn MessageSink>,
    pub(crate) phase: PhaseCell,
    /// Whether the session is not a lasting one (its transport said so:
    /// [`TransportInfo::sessionless`](modelctx_transport::TransportInfo::sessionless)).
    pub(crate) sessionless: bool,
    pub(crate) pending: Mutex<PendingTable<Slot, ProgressSink>>,
    /// Inbound requests being handled: id -> cancellation token.
    pub(crate) inflight: Mutex<foldhash::HashMap<RequestId, CancellationToken>>,
    pub(crate) semaphore: Semaphore,
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
    /// What the session's request spans share (its tag, its protocol version) and, with
    /// the feature `otel`, the session in the metrics.
    pub(crate) trace: crate::trace::SessionTrace,
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
    pub(super) fn rearm_deadlines(self: &Arc<Self>) {
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

    pub(super) fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, PendingTable<Slot, ProgressSink>> {
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
    pub(super) async fn abandon(
        &self,
        id: &RequestId,
        method: &str,
        reason: &str,
        outcome: Outcome,
    ) {
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
