//! Log messages before replies: a `tools/call` reply is handed back only after the
//! client's handler has seen every `notifications/message` that arrived before it.
//!
//! The session delivers notifications on one ordered task but wakes a request's caller
//! as soon as the response arrives, so the two can race. The client counts log
//! messages as the transport yields them (in wire order) and as its handler finishes
//! them; a call waits, after its reply, until the handled count reaches the count
//! received so far — every one of those is already queued for the handler.
//!
//! Known debt: this ordering belongs in the session runtime (complete a response only after
//! the notifications queued before it), which would cover every request; it needs a
//! re-entrancy rule for notification handlers that themselves await a request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use modelctx_session::Peer;
use modelctx_transport::{
    DirectReceiver, MessageStream, Transport, TransportError, TransportMessage,
};
use modelctx_types::JsonRpcMessage;
use tokio::sync::watch;

const LOG_MESSAGE: &str = "notifications/message";

/// Counts log messages received and handled.
pub(crate) struct LogOrder {
    received: AtomicU64,
    handled: watch::Sender<u64>,
    /// The task handling notifications: a call made from a log handler must not wait
    /// for that very handler.
    handler_task: Mutex<Option<tokio::task::Id>>,
}

impl Default for LogOrder {
    fn default() -> Self {
        Self {
            received: AtomicU64::new(0),
            handled: watch::Sender::new(0),
            handler_task: Mutex::new(None),
        }
    }
}

/// Counts the handled message when dropped, so a panicking handler still counts.
struct Handled(Arc<LogOrder>);

impl Drop for Handled {
    fn drop(&mut self) {
        self.0.handled.send_modify(|n| *n += 1);
    }
}

/// A transport stream that counts inbound log messages.
pub(crate) struct CountingStream<S> {
    inner: S,
    order: Arc<LogOrder>,
}

impl<S: MessageStream> MessageStream for CountingStream<S> {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            let next = self.inner.recv().await;
            if let Some(Ok(message)) = &next
                && let JsonRpcMessage::Notification(n) = &message.message
                && n.method == LOG_MESSAGE
            {
                self.order.received.fetch_add(1, Ordering::SeqCst);
            }
            next
        })
    }

    // Only requests and responses are taken directly; the log messages counted here
    // are notifications, which always come through `recv`.
    fn offer_direct(&mut self, receiver: Arc<dyn DirectReceiver>) {
        self.inner.offer_direct(receiver);
    }

    fn offer_clocks(&mut self, clocks: Arc<dyn modelctx_transport::RequestClocks>) {
        self.inner.offer_clocks(clocks);
    }
}

impl LogOrder {
    /// Wraps the transport so inbound log messages are counted in wire order.
    pub(crate) fn wrap<T: Transport>(
        self: &Arc<Self>,
        transport: T,
    ) -> (T::Sink, CountingStream<T::Stream>) {
        let (sink, stream) = transport.split();
        (
            sink,
            CountingStream {
                inner: stream,
                order: self.clone(),
            },
        )
    }

    /// Whether notifications of `method` are counted.
    pub(crate) fn counts(method: &str) -> bool {
        method == LOG_MESSAGE
    }

    /// `delivery` of a log message, counted as handled once it finishes (or is
    /// dropped): whatever handles it, the application's handler, none, or a
    /// notification layer that keeps it from them.
    pub(crate) fn deliver(
        self: &Arc<Self>,
        delivery: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, ()> {
        let order = self.clone();
        Box::pin(async move {
            if let Some(id) = tokio::task::try_id() {
                *order.handler_task.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
            }
            let _handled = Handled(order);
            delivery.await;
        })
    }

    /// Waits until every log message received so far was handled (or the session
    /// ended). Returns at once when called from the log handler itself.
    pub(crate) async fn caught_up(&self, peer: &Peer) {
        let current = tokio::task::try_id();
        let handler = *self.handler_task.lock().unwrap_or_else(|p| p.into_inner());
        if current.is_some() && current == handler {
            return;
        }
        let target = self.received.load(Ordering::SeqCst);
        let mut handled = self.handled.subscribe();
        tokio::select! {
            _ = handled.wait_for(|n| *n >= target) => {}
            () = peer.closed() => {}
        }
    }
}
