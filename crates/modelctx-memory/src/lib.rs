//! In-process transport for modelctx.
//!
//! [`pair`] returns two connected [`MemoryTransport`]s: what one sends, the other
//! receives, as the same Rust value — nothing is serialised on the way, so this is the
//! fastest way to connect a client and a server in one process (tests, embedding).
//!
//! With the `mock` feature, `MockPeer` plays the other side of a conversation from a
//! test script: assert the next message, reply deterministically.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_memory::pair;
//! use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
//! use modelctx_types::{JsonRpcMessage, JsonRpcNotification};
//!
//! let (a, b) = pair();
//! let (a_sink, _a_stream) = a.split();
//! let (_b_sink, mut b_stream) = b.split();
//! let note = JsonRpcNotification::new("notifications/initialized", None);
//! a_sink.send(TransportMessage::new(note.into())).await.unwrap();
//! let got = b_stream.recv().await.unwrap().unwrap();
//! assert_eq!(got.message.method(), Some("notifications/initialized"));
//! # }
//! ```
//!
//! | feature | what it adds |
//! |---|---|
//! | `mock` | `MockPeer`, a scripted peer for tests |
//!
//! # How it works
//!
//! Two bounded tokio channels; messages move as Rust values, never serialised. With a
//! session on the other end, requests and responses are delivered directly on the sender's
//! task (see `modelctx_transport::DirectReceiver`); nesting (a handler whose first poll
//! sends a request whose handler does the same) is bounded per thread
//! (`modelctx_transport::MAX_DIRECT_DEPTH`), and deeper messages queue.
//!
//! Trap: params must be a JSON object or array. Since nothing is serialised here, the
//! session refuses other params locally (`serialize_params`) instead of leaving a wire to
//! find out.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "mock")]
mod mock;

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use modelctx_transport::{
    DirectReceiver, DirectSlot, MessageSink, MessageStream, Transport, TransportError,
    TransportMessage,
};
use tokio::sync::mpsc;

#[cfg(feature = "mock")]
pub use mock::MockPeer;

/// The number of messages that may wait in each direction before a sender waits.
pub const DEFAULT_CAPACITY: usize = 1024;

/// Two connected in-process transports.
pub fn pair() -> (MemoryTransport, MemoryTransport) {
    pair_with_capacity(DEFAULT_CAPACITY)
}

/// Two connected in-process transports, each direction buffering up to `capacity`
/// messages (at least 1).
pub fn pair_with_capacity(capacity: usize) -> (MemoryTransport, MemoryTransport) {
    let capacity = capacity.max(1);
    let (a_tx, b_rx) = mpsc::channel(capacity);
    let (b_tx, a_rx) = mpsc::channel(capacity);
    let (to_b, to_a) = (
        Arc::new(DirectSlot::default()),
        Arc::new(DirectSlot::default()),
    );
    (
        MemoryTransport {
            sink: MemorySink::new(a_tx, to_b.clone()),
            stream: MemoryStream::new(a_rx, to_a.clone()),
        },
        MemoryTransport {
            sink: MemorySink::new(b_tx, to_a),
            stream: MemoryStream::new(b_rx, to_b),
        },
    )
}

/// One end of an in-process connection.
#[derive(Debug)]
pub struct MemoryTransport {
    sink: MemorySink,
    stream: MemoryStream,
}

impl Transport for MemoryTransport {
    type Sink = MemorySink;
    type Stream = MemoryStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("memory")
    }

    fn split(self) -> (MemorySink, MemoryStream) {
        (self.sink, self.stream)
    }
}

/// The sending half of a [`MemoryTransport`].
///
/// When the receiving session takes messages directly (the session runtime offers
/// it) and nothing sent earlier is still waiting, a request or response is handled on
/// the sender's task: a handler that answers in its first poll has answered when `send`
/// returns, with no task hand-off either way. Nesting is bounded
/// ([`MAX_DIRECT_DEPTH`](modelctx_transport::MAX_DIRECT_DEPTH)).
#[derive(Debug)]
pub struct MemorySink {
    /// `None` once closed; dropping the last sender ends the peer's stream.
    tx: RwLock<Option<mpsc::Sender<TransportMessage>>>,
    direct: Arc<DirectSlot>,
}

impl MemorySink {
    fn new(tx: mpsc::Sender<TransportMessage>, direct: Arc<DirectSlot>) -> Self {
        Self {
            tx: RwLock::new(Some(tx)),
            direct,
        }
    }

    fn sender(&self) -> Option<mpsc::Sender<TransportMessage>> {
        self.tx.read().map(|g| g.clone()).unwrap_or(None)
    }
}

impl MessageSink for MemorySink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        let closed = self.tx.read().map_or(true, |g| g.is_none());
        if closed {
            return Box::pin(std::future::ready(Err(TransportError::closed())));
        }
        let Some(message) = self.direct.try_deliver(message) else {
            return Box::pin(std::future::ready(Ok(())));
        };
        let direct = &self.direct;
        direct.queue();
        // The common case, room in the channel, costs no sender clone.
        let message = match self.tx.read() {
            Ok(guard) => match guard.as_ref() {
                Some(tx) => match tx.try_send(message) {
                    Ok(()) => return Box::pin(std::future::ready(Ok(()))),
                    Err(mpsc::error::TrySendError::Full(message)) => message,
                    Err(mpsc::error::TrySendError::Closed(_)) => {
                        direct.unqueue();
                        return Box::pin(std::future::ready(Err(TransportError::closed())));
                    }
                },
                None => {
                    direct.unqueue();
                    return Box::pin(std::future::ready(Err(TransportError::closed())));
                }
            },
            Err(_) => message,
        };
        let tx = self.sender();
        Box::pin(async move {
            let sent = match tx {
                Some(tx) => tx.send(message).await.map_err(|_| TransportError::closed()),
                None => Err(TransportError::closed()),
            };
            if sent.is_err() {
                direct.unqueue();
            }
            sent
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        if let Ok(mut guard) = self.tx.write() {
            guard.take();
        }
        Box::pin(async {})
    }
}

/// The receiving half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryStream {
    rx: mpsc::Receiver<TransportMessage>,
    direct: Arc<DirectSlot>,
}

impl MemoryStream {
    fn new(rx: mpsc::Receiver<TransportMessage>, direct: Arc<DirectSlot>) -> Self {
        Self { rx, direct }
    }
}

impl MessageStream for MemoryStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        self.direct.next();
        Box::pin(async move {
            let message = self.rx.recv().await?;
            self.direct.took();
            Some(Ok(message))
        })
    }

    fn offer_direct(&mut self, receiver: Arc<dyn DirectReceiver>) {
        self.direct.offer(&receiver);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelctx_types::{JsonRpcMessage, JsonRpcNotification};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn note(method: &'static str) -> TransportMessage {
        TransportMessage::new(JsonRpcMessage::Notification(JsonRpcNotification::new(
            method, None,
        )))
    }

    #[tokio::test]
    async fn delivers_in_order_and_ends_on_close() {
        let (a, b) = pair_with_capacity(4);
        let (a_sink, _a_stream) = a.split();
        let (_b_sink, mut b_stream) = b.split();
        a_sink.send(note("one")).await.unwrap();
        a_sink.send(note("two")).await.unwrap();
        a_sink.close().await;
        assert!(a_sink.send(note("three")).await.unwrap_err().is_closed());
        let first = b_stream.recv().await.unwrap().unwrap();
        let second = b_stream.recv().await.unwrap().unwrap();
        assert_eq!(first.message.method(), Some("one"));
        assert_eq!(second.message.method(), Some("two"));
        assert!(b_stream.recv().await.is_none());
    }

    fn request(id: i64) -> TransportMessage {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"}}"#);
        TransportMessage::new(text.parse().unwrap())
    }

    /// Takes requests (recording their ids), gives every other message back.
    #[derive(Default)]
    struct TakesRequests {
        taken: std::sync::Mutex<Vec<String>>,
    }

    impl DirectReceiver for TakesRequests {
        fn receive(&self, message: TransportMessage) -> Option<TransportMessage> {
            match &message.message {
                JsonRpcMessage::Request(r) => {
                    self.taken.lock().unwrap().push(r.id.to_string());
                    None
                }
                _ => Some(message),
            }
        }
    }

    #[tokio::test]
    async fn a_direct_receiver_takes_requests_but_never_overtakes_a_queued_message() {
        let (a, b) = pair();
        let (a_sink, _a_stream) = a.split();
        let (_b_sink, mut b_stream) = b.split();
        let receiver = Arc::new(TakesRequests::default());
        b_stream.offer_direct(receiver.clone());

        // Nothing waits: the request is taken on the sender's task.
        a_sink.send(request(1)).await.unwrap();
        assert_eq!(*receiver.taken.lock().unwrap(), ["1"]);

        // A notification is given back and queued; a request sent after it queues too.
        a_sink.send(note("first")).await.unwrap();
        a_sink.send(request(2)).await.unwrap();
        assert_eq!(receiver.taken.lock().unwrap().len(), 1);
        let first = b_stream.recv().await.unwrap().unwrap();
        assert_eq!(first.message.method(), Some("first"));
        let second = b_stream.recv().await.unwrap().unwrap();
        assert_eq!(
            second.message.id().map(ToString::to_string).as_deref(),
            Some("2")
        );

        // Still being handled until the receiver asks for the next message.
        a_sink.send(request(3)).await.unwrap();
        assert_eq!(receiver.taken.lock().unwrap().len(), 1);
        let third = b_stream.recv().await.unwrap().unwrap();
        assert_eq!(
            third.message.id().map(ToString::to_string).as_deref(),
            Some("3")
        );
        drop(b_stream.recv());
        a_sink.send(request(4)).await.unwrap();
        assert_eq!(*receiver.taken.lock().unwrap(), ["1", "4"]);
    }

    /// Answers every request by sending another one back the same way, at once.
    struct PingPong {
        sink: std::sync::Mutex<Option<Arc<MemorySink>>>,
        depth: AtomicUsize,
    }

    impl DirectReceiver for PingPong {
        fn receive(&self, message: TransportMessage) -> Option<TransportMessage> {
            let JsonRpcMessage::Request(r) = &message.message else {
                return Some(message);
            };
            let next = r.id.to_string().parse::<i64>().unwrap() + 1;
            self.depth.fetch_max(next as usize, Ordering::Relaxed);
            let sink = self.sink.lock().unwrap().clone().unwrap();
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let sent = sink.send(request(next)).as_mut().poll(&mut cx);
            assert!(matches!(sent, std::task::Poll::Ready(Ok(()))));
            None
        }
    }

    #[tokio::test]
    async fn direct_deliveries_nest_only_so_deep() {
        let (a, b) = pair();
        let (a_sink, _a_stream) = a.split();
        let (_b_sink, mut b_stream) = b.split();
        let a_sink = Arc::new(a_sink);
        let receiver = Arc::new(PingPong {
            sink: std::sync::Mutex::new(Some(a_sink.clone())),
            depth: AtomicUsize::new(0),
        });
        b_stream.offer_direct(receiver.clone());
        a_sink.send(request(0)).await.unwrap();
        // Requests 0..=7 were taken directly, each inside the one before; request 8
        // was queued instead of nesting deeper.
        assert_eq!(
            receiver.depth.load(Ordering::Relaxed),
            modelctx_transport::MAX_DIRECT_DEPTH as usize
        );
        let queued = b_stream.recv().await.unwrap().unwrap();
        assert_eq!(
            queued.message.id().map(ToString::to_string),
            Some(modelctx_transport::MAX_DIRECT_DEPTH.to_string())
        );
        receiver.sink.lock().unwrap().take();
    }

    #[tokio::test]
    async fn sending_to_a_dropped_peer_fails_closed() {
        let (a, b) = pair();
        let (a_sink, _a_stream) = a.split();
        drop(b);
        assert!(a_sink.send(note("x")).await.unwrap_err().is_closed());
    }
}
