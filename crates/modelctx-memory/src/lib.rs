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

#[cfg(feature = "mock")]
mod mock;

use std::sync::RwLock;

use futures::future::BoxFuture;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportError, TransportMessage};
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
    (
        MemoryTransport {
            sink: MemorySink::new(a_tx),
            stream: MemoryStream { rx: a_rx },
        },
        MemoryTransport {
            sink: MemorySink::new(b_tx),
            stream: MemoryStream { rx: b_rx },
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

    fn split(self) -> (MemorySink, MemoryStream) {
        (self.sink, self.stream)
    }
}

/// The sending half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemorySink {
    /// `None` once closed; dropping the last sender ends the peer's stream.
    tx: RwLock<Option<mpsc::Sender<TransportMessage>>>,
}

impl MemorySink {
    fn new(tx: mpsc::Sender<TransportMessage>) -> Self {
        Self {
            tx: RwLock::new(Some(tx)),
        }
    }

    fn sender(&self) -> Option<mpsc::Sender<TransportMessage>> {
        self.tx.read().map(|g| g.clone()).unwrap_or(None)
    }
}

impl MessageSink for MemorySink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        // The common case, room in the channel, costs no sender clone.
        let message = match self.tx.read() {
            Ok(guard) => match guard.as_ref() {
                Some(tx) => match tx.try_send(message) {
                    Ok(()) => return Box::pin(std::future::ready(Ok(()))),
                    Err(mpsc::error::TrySendError::Full(message)) => message,
                    Err(mpsc::error::TrySendError::Closed(_)) => {
                        return Box::pin(std::future::ready(Err(TransportError::closed())));
                    }
                },
                None => return Box::pin(std::future::ready(Err(TransportError::closed()))),
            },
            Err(_) => message,
        };
        let tx = self.sender();
        Box::pin(async move {
            match tx {
                Some(tx) => tx.send(message).await.map_err(|_| TransportError::closed()),
                None => Err(TransportError::closed()),
            }
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
}

impl MessageStream for MemoryStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move { self.rx.recv().await.map(Ok) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelctx_types::{JsonRpcMessage, JsonRpcNotification};

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

    #[tokio::test]
    async fn sending_to_a_dropped_peer_fails_closed() {
        let (a, b) = pair();
        let (a_sink, _a_stream) = a.split();
        drop(b);
        assert!(a_sink.send(note("x")).await.unwrap_err().is_closed());
    }
}
