//! A wire-recording transport wrapper, for wire-level checks and transcripts.
//!
//! [`record`] wraps one side's transport; every message that side sends or receives is
//! appended, with its [`Direction`], to a shared log that [`Recording`] reads — in order,
//! while the conversation runs.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_test::record::{Direction, record};
//! use modelctx_transport::{MessageStream, Transport, TransportMessage, boxed};
//! use modelctx_types::JsonRpcNotification;
//!
//! let (a, b) = modelctx_memory::pair();
//! let ((sink, _stream), recording) = record(boxed(a));
//! let (_b_sink, mut b_stream) = b.split();
//! let note = JsonRpcNotification::new("notifications/initialized", None);
//! sink.send(TransportMessage::new(note.into())).await.unwrap();
//! b_stream.recv().await.unwrap().unwrap();
//! let log = recording.wait_for_count(1).await;
//! assert_eq!(log[0].direction, Direction::Sent);
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_transport::{
    BoxTransport, MessageSink, MessageStream, TransportError, TransportMessage,
};
use modelctx_types::JsonRpcMessage;
use tokio::sync::watch;

use crate::wait::WAIT;

/// Which way a recorded message went, seen from the wrapped side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The wrapped side sent it (recorded as the send starts, so it precedes any reply).
    Sent,
    /// The wrapped side received it.
    Received,
}

/// One message in the log.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Recorded {
    /// Which way it went.
    pub direction: Direction,
    /// The message with its routing metadata.
    pub message: TransportMessage,
}

/// The log of a recorded transport. Clones share the log.
#[derive(Clone)]
pub struct Recording {
    log: Arc<watch::Sender<Vec<Recorded>>>,
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("messages", &self.log.borrow().len())
            .finish()
    }
}

/// Wraps `transport` so that every message crossing it is recorded.
pub fn record(transport: BoxTransport) -> (BoxTransport, Recording) {
    let (sink, stream) = transport;
    let recording = Recording {
        log: Arc::new(watch::Sender::new(Vec::new())),
    };
    let sink = RecordingSink {
        inner: sink,
        log: recording.clone(),
    };
    let stream = RecordingStream {
        inner: stream,
        log: recording.clone(),
    };
    ((Box::new(sink), Box::new(stream)), recording)
}

impl Recording {
    fn push(&self, direction: Direction, message: &TransportMessage) {
        let entry = Recorded {
            direction,
            message: message.clone(),
        };
        self.log.send_modify(|log| log.push(entry));
    }

    /// Every message so far, in order.
    pub fn messages(&self) -> Vec<Recorded> {
        self.log.borrow().clone()
    }

    /// The JSON-RPC messages the wrapped side sent so far, in order.
    pub fn sent(&self) -> Vec<JsonRpcMessage> {
        self.only(Direction::Sent)
    }

    /// The JSON-RPC messages the wrapped side received so far, in order.
    pub fn received(&self) -> Vec<JsonRpcMessage> {
        self.only(Direction::Received)
    }

    /// The messages of `method` the wrapped side sent so far, in order.
    pub fn sent_of(&self, method: &str) -> Vec<JsonRpcMessage> {
        self.of(Direction::Sent, method)
    }

    /// The messages of `method` the wrapped side received so far, in order.
    pub fn received_of(&self, method: &str) -> Vec<JsonRpcMessage> {
        self.of(Direction::Received, method)
    }

    /// The `params` of each message of `method` the wrapped side sent so far, in order,
    /// as JSON (`null` for a message without).
    pub fn sent_params(&self, method: &str) -> Vec<serde_json::Value> {
        Self::params(self.sent_of(method))
    }

    /// The `params` of each message of `method` the wrapped side received so far, in
    /// order, as JSON (`null` for a message without).
    pub fn received_params(&self, method: &str) -> Vec<serde_json::Value> {
        Self::params(self.received_of(method))
    }

    /// How many messages of `method` the wrapped side sent so far.
    pub fn sent_count(&self, method: &str) -> usize {
        self.sent_of(method).len()
    }

    /// How many messages of `method` the wrapped side received so far.
    pub fn received_count(&self, method: &str) -> usize {
        self.received_of(method).len()
    }

    /// The first message of `method` the wrapped side sent, if any.
    pub fn first_sent(&self, method: &str) -> Option<JsonRpcMessage> {
        self.sent_of(method).into_iter().next()
    }

    /// The last message of `method` the wrapped side sent so far, if any.
    pub fn last_sent(&self, method: &str) -> Option<JsonRpcMessage> {
        self.sent_of(method).pop()
    }

    /// The methods of the requests and notifications the wrapped side sent so far, in
    /// order.
    pub fn sent_methods(&self) -> Vec<String> {
        self.sent()
            .iter()
            .filter_map(|m| m.method().map(str::to_owned))
            .collect()
    }

    fn params(messages: Vec<JsonRpcMessage>) -> Vec<serde_json::Value> {
        messages
            .iter()
            .map(|m| {
                let mut message = serde_json::to_value(m).expect("a message is JSON");
                message["params"].take()
            })
            .collect()
    }

    fn of(&self, direction: Direction, method: &str) -> Vec<JsonRpcMessage> {
        let mut messages = self.only(direction);
        messages.retain(|m| m.method() == Some(method));
        messages
    }

    fn only(&self, direction: Direction) -> Vec<JsonRpcMessage> {
        self.log
            .borrow()
            .iter()
            .filter(|r| r.direction == direction)
            .map(|r| r.message.message.clone())
            .collect()
    }

    /// Waits until `done` holds for the log, and returns the log then.
    ///
    /// # Panics
    ///
    /// When it does not hold within [`WAIT`]: the test fails, showing the log.
    pub async fn wait_for(&self, mut done: impl FnMut(&[Recorded]) -> bool) -> Vec<Recorded> {
        let mut rx = self.log.subscribe();
        let waited = tokio::time::timeout(WAIT, async {
            // The sender lives in `self`, so the channel cannot close while we wait.
            rx.wait_for(|log| done(log)).await.map(|log| log.clone())
        })
        .await;
        match waited {
            Ok(Ok(log)) => log,
            _ => panic!(
                "the recording did not reach the awaited state within {WAIT:?}; log: {:#?}",
                self.messages()
            ),
        }
    }

    /// Waits until at least `n` messages are recorded, and returns the log then.
    ///
    /// # Panics
    ///
    /// As [`wait_for`](Self::wait_for).
    pub async fn wait_for_count(&self, n: usize) -> Vec<Recorded> {
        self.wait_for(|log| log.len() >= n).await
    }
}

struct RecordingSink {
    inner: Box<dyn MessageSink>,
    log: Recording,
}

impl MessageSink for RecordingSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        self.log.push(Direction::Sent, &message);
        self.inner.send(message)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }
}

struct RecordingStream {
    inner: Box<dyn MessageStream>,
    log: Recording,
}

impl MessageStream for RecordingStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            let next = self.inner.recv().await;
            if let Some(Ok(message)) = &next {
                self.log.push(Direction::Received, message);
            }
            next
        })
    }

    // Clocks change no message: the recording sees the same wire with them.
    fn offer_clocks(&mut self, clocks: Arc<dyn modelctx_transport::RequestClocks>) {
        self.inner.offer_clocks(clocks);
    }
}
