//! The transport abstraction of modelctx.
//!
//! A transport moves JSON-RPC messages between two peers. It splits into a
//! [`MessageSink`], shared by every task that sends, and a [`MessageStream`], owned by the
//! single task that receives. Each message travels as a [`TransportMessage`]: the message
//! plus the small routing metadata that streamable HTTP needs (which request a server
//! message relates to, resumption tokens) and that stdio or in-memory transports ignore.
//!
//! This crate knows nothing of sessions, servers or clients; the session runtime
//! (`modelctx-session`) drives any transport through these traits.
//!
//! ```
//! use modelctx_transport::framing::{LineDecoder, encode_line};
//! use modelctx_types::JsonRpcMessage;
//!
//! let msg = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.parse::<JsonRpcMessage>().unwrap();
//! let mut decoder = LineDecoder::new(1024);
//! decoder.extend(&encode_line(&msg));
//! let line = decoder.next_line().unwrap().unwrap();
//! assert_eq!(JsonRpcMessage::from_slice(&line).unwrap().method(), Some("notifications/initialized"));
//! ```

mod error;
pub mod framing;

use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_types::{JsonRpcMessage, RequestId};

pub use error::TransportError;

/// A message crossing a transport, with its routing metadata.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TransportMessage {
    /// The JSON-RPC message.
    pub message: JsonRpcMessage,
    /// Outbound: the inbound request this message belongs to. A server notification or
    /// request emitted while handling request N carries N, and a response carries its own
    /// request's id; streamable HTTP puts such a message on N's response stream, and an
    /// unrelated one on the standalone stream. Ignored by stdio and in-memory transports.
    pub related_request: Option<RequestId>,
    /// Outbound (client): resume an interrupted request from this token instead of
    /// sending it again. Inbound (client): the newest token for the stream that carried
    /// this message (e.g. an SSE event id). `None` where the transport cannot resume.
    pub resumption_token: Option<Arc<str>>,
}

impl TransportMessage {
    /// A message with no routing metadata.
    pub fn new(message: JsonRpcMessage) -> Self {
        Self {
            message,
            related_request: None,
            resumption_token: None,
        }
    }

    /// Marks the message as belonging to inbound request `id`.
    #[must_use]
    pub fn related_to(mut self, id: Option<RequestId>) -> Self {
        self.related_request = id;
        self
    }

    /// Attaches a resumption token.
    #[must_use]
    pub fn with_resumption_token(mut self, token: Option<Arc<str>>) -> Self {
        self.resumption_token = token;
        self
    }
}

impl From<JsonRpcMessage> for TransportMessage {
    fn from(message: JsonRpcMessage) -> Self {
        Self::new(message)
    }
}

/// The sending half of a transport, shared by every task that sends.
pub trait MessageSink: Send + Sync + 'static {
    /// Sends one message. Resolves once the transport accepted it (queued or written);
    /// fails with [`TransportError::is_closed`] once the transport is closed.
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>>;

    /// Closes the transport: the peer sees the end of its stream, and later sends fail.
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// The receiving half of a transport, owned by one task.
pub trait MessageStream: Send + 'static {
    /// The next message; `None` once the peer closed the transport. An `Err` reports a
    /// fault the receiver can survive (the stream goes on) unless it
    /// [`is_closed`](TransportError::is_closed).
    ///
    /// The future must be cancel-safe: dropping it loses no message.
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>>;

    /// Offers the receiver's [`DirectReceiver`]: a transport whose inbound messages
    /// arrive on tasks of their own (streamable HTTP: one per POST) may hand them to it
    /// there, instead of queueing them for [`recv`](Self::recv) on the receiver's task.
    ///
    /// The receiver holds this transport's sink, so the transport should keep only a
    /// [`Weak`](std::sync::Weak) reference. The default ignores the offer: every message
    /// goes through `recv`. Wrappers that must see every message (recorders, counters)
    /// keep that default.
    fn offer_direct(&mut self, receiver: Arc<dyn DirectReceiver>) {
        let _ = receiver;
    }
}

/// The receiving side's entry point for messages that a transport delivers on its own
/// tasks (see [`MessageStream::offer_direct`]).
///
/// The session runtime otherwise reads messages one at a time on its own task; taking a
/// message on the task it arrived on saves two task hand-offs per request (to the
/// receiver's task and back), which is most of what a request costs on a fast path.
pub trait DirectReceiver: Send + Sync + 'static {
    /// Handles `message` on the caller's task: work that finishes at once (a handler that
    /// answers in its first poll) is done, and its answer sent, when this returns; work
    /// that does not continues on a task of its own. `Some` gives the message back
    /// untouched when its order relative to queued messages matters (the lifecycle
    /// handshake, notifications, a closed session): the transport then delivers it, and
    /// every later message of the same batch, through [`MessageStream::recv`].
    ///
    /// Call it only from within a tokio runtime, and only when no message is waiting in
    /// the `recv` queue (a message taken here would overtake it).
    fn receive(&self, message: TransportMessage) -> Option<TransportMessage>;
}

impl<S: MessageSink + ?Sized> MessageSink for Box<S> {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        (**self).send(message)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        (**self).close()
    }
}

impl<S: MessageSink + ?Sized> MessageSink for Arc<S> {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        (**self).send(message)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        (**self).close()
    }
}

impl<R: MessageStream + ?Sized> MessageStream for Box<R> {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        (**self).recv()
    }

    fn offer_direct(&mut self, receiver: Arc<dyn DirectReceiver>) {
        (**self).offer_direct(receiver);
    }
}

/// A type-erased transport: any transport's halves, boxed.
pub type BoxTransport = (Box<dyn MessageSink>, Box<dyn MessageStream>);

/// Erases a transport's types.
pub fn boxed<T: Transport>(transport: T) -> BoxTransport {
    let (sink, stream) = transport.split();
    (Box::new(sink), Box::new(stream))
}

/// A transport: anything that splits into a sink and a stream of messages.
pub trait Transport: Send + 'static {
    /// The sending half.
    type Sink: MessageSink;
    /// The receiving half.
    type Stream: MessageStream;

    /// Splits the transport into its two halves.
    fn split(self) -> (Self::Sink, Self::Stream);
}

impl<S: MessageSink, R: MessageStream> Transport for (S, R) {
    type Sink = S;
    type Stream = R;

    fn split(self) -> (S, R) {
        self
    }
}
