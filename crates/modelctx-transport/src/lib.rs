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
//! use modelctx_transport::TransportMessage;
//! use modelctx_types::{JsonRpcMessage, RequestId};
//!
//! let msg = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#
//!     .parse::<JsonRpcMessage>()
//!     .unwrap();
//! // A notification sent while handling request 7: streamable HTTP puts it on that
//! // request's response stream; stdio and in-memory transports ignore the relation.
//! let outbound = TransportMessage::new(msg).related_to(Some(RequestId::Number(7)));
//! assert_eq!(outbound.related_request, Some(RequestId::Number(7)));
//! ```
//!
//! # How it works
//!
//! [`MessageSink`] (`send(&self)`, `close`) is shared by every sender; [`MessageStream`]
//! (`recv(&mut self)`, cancel-safe) is owned by the session's receive task. Both are
//! dyn-compatible (boxed futures), so the session erases the transport type once, at start.
//!
//! A message's `extensions` ([`Extensions`], a small type map, empty and allocation-free
//! unless a transport fills it) carry what the transport knows of it beyond its JSON.
//! Streamable HTTP copies the `Extensions` that layers in front of the endpoint put in the
//! HTTP request onto each message of the POST; the session hands it to the request context
//! untouched, and the server's `Context::extensions` exposes it. That is how the OAuth
//! resource server's verified caller (`modelctx_types::Principal`) reaches handlers
//! without the session or server crates knowing OAuth. `modelctx_types::Permissions` is
//! the same idea for listings: a layer that knows what the caller may use puts one
//! there, and the server leaves out of its lists what it does not allow.
//!
//! What a transport tells the session is one [`TransportInfo`] (`Transport::info`), read
//! as the session starts: the facts the server applies on top of any session settings
//! (`Server::serve_with`: session-less streamable HTTP starts initialised and cannot
//! carry requests to the client), so a plain `server.serve(transport)` works on any
//! transport; its name and session id, which only name the session's tracing span; and
//! what a shared session needs. A wrapper forwards it in one call.
//!
//! A sink that will not carry a message for a protocol reason says so with
//! `TransportError::refused`: the sender's caller gets that error as if the peer had
//! answered with it.
//!
//! Direct delivery: the session runtime offers each stream a [`DirectReceiver`]
//! (`MessageStream::offer_direct`). A transport whose messages arrive on tasks of their own
//! (streamable HTTP: the POST's connection task; in-memory: the sender's task) may hand a
//! message to it there instead of queueing it for the receive task, saving the two task
//! wake-ups that are most of a fast call's time. The runtime takes notifications and a
//! server's `initialize` at any time, other requests and responses once the session is
//! operational, and gives everything else back (what precedes the handshake). The
//! transport delivers directly only while nothing it queued earlier is unhandled, so a
//! direct message never overtakes an earlier one; that rule lives in one place,
//! [`DirectSlot`]. Wrappers that must see every message (the conformance recorder) keep the
//! default, which ignores the offer.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;
mod error;
mod extensions;
mod info;
mod reconnect;
mod replay;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use futures_core::future::BoxFuture;
use modelctx_types::{JsonRpcMessage, RequestId};

pub use clock::{RequestClock, RequestClocks};
pub use error::{TransportError, TransportErrorKind};
pub use extensions::Extensions;
pub use info::TransportInfo;
pub use reconnect::{
    ConnectionState, IDEMPOTENT_METHODS, ReconnectPolicy, interrupted, is_interrupted,
};
#[doc(hidden)]
pub use replay::SessionReplay;

/// The error a transport answers a request with, locally, when it could not deliver it
/// at all (streamable HTTP: the POST never reached a server — a refused connection, a
/// name that does not resolve). Code `-32000`, `data: {"undelivered": true}`, so a
/// caller can tell "nobody answered" from any answer a server gave.
pub fn undelivered(reason: impl Into<String>) -> modelctx_types::ErrorData {
    modelctx_types::ErrorData::new(modelctx_types::ErrorCode(-32000), reason.into())
        .with_data(serde_json::json!({ "undelivered": true }))
}

/// Whether `error` is a transport's [`undelivered`] report rather than a peer's answer.
pub fn is_undelivered(error: &modelctx_types::ErrorData) -> bool {
    error.code == modelctx_types::ErrorCode(-32000)
        && error
            .data
            .as_ref()
            .and_then(|d| d.get("undelivered"))
            .and_then(serde_json::Value::as_bool)
            == Some(true)
}

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
    /// Inbound: what the transport knows about the message beyond its JSON (streamable
    /// HTTP: the [`Extensions`] layers in front of it put in the HTTP request's
    /// extensions, such as a verified caller identity). Handlers see it in their
    /// request context. Empty elsewhere.
    pub extensions: Extensions,
    /// Outbound request: the params key whose value its `Mcp-Name` header mirrors
    /// (streamable HTTP, 2026-07-28), as its request type declares it
    /// (`RequestMethod::NAME_PARAM`). Routing metadata for a method the transport does
    /// not know by name; `None` for the rest, and ignored by transports without headers.
    pub name_param: Option<&'static str>,
    /// Inbound request of the stateless era (protocol 2026-07-28): what the transport
    /// read of it beside its JSON (streamable HTTP: its `Mcp-Param-*` headers and its
    /// `_meta` as found while checking the headers). `None` elsewhere. Unstable: for the
    /// SDK's own crates.
    #[doc(hidden)]
    pub era: Option<Box<EraRead>>,
    /// Outbound, about an inbound request of the stateless era that came with
    /// [`era`](Self::era): fired once that request has ended. A transport that routes
    /// messages by request id drops such a message once it has fired, checking under
    /// the same lock that routes it (the id may name a later request by then: a
    /// session of the era can serve request after request). Unstable.
    #[doc(hidden)]
    pub request_over: Option<tokio_util::sync::CancellationToken>,
}

/// What a transport read of one request of the stateless era beside its JSON (see
/// [`TransportMessage::era`]): it belongs to that request only, so a session that
/// serves many such requests (streamable HTTP keeps idle sessions of the era for the
/// next POST) sees each request's own. Unstable.
#[doc(hidden)]
#[derive(Debug, Clone, Default)]
pub struct EraRead {
    /// The request's `Mcp-Param-{Name}` headers as `(name, value)`, the name
    /// lower-cased and without its prefix, for the server to check against the tool's
    /// `x-mcp-header` arguments.
    pub mirrored: Vec<(String, String)>,
    /// The request's `_meta` as the transport found it, when it did.
    pub meta: Option<FoundMeta>,
}

impl TransportMessage {
    /// A message with no routing metadata.
    pub fn new(message: JsonRpcMessage) -> Self {
        Self {
            message,
            related_request: None,
            resumption_token: None,
            extensions: Extensions::new(),
            name_param: None,
            era: None,
            request_over: None,
        }
    }

    modelctx_types::__setters! {
        /// Names the params key the request's `Mcp-Name` header mirrors (see
        /// [`name_param`](Self::name_param)).
        with_name_param(key: Option<&'static str>) { name_param = key }

        /// Marks the message as belonging to inbound request `id`.
        related_to(id: Option<RequestId>) { related_request = id }

        /// Attaches a resumption token.
        with_resumption_token(token: Option<Arc<str>>) { resumption_token = token }

        /// Attaches what the transport knows about the message (see
        /// [`extensions`](Self::extensions)).
        with_extensions(extensions: Extensions) { extensions = extensions }
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
    /// [`Weak`] reference. The default ignores the offer: every message
    /// goes through `recv`. Wrappers that must see every message (recorders, counters)
    /// keep that default.
    fn offer_direct(&mut self, receiver: Arc<dyn DirectReceiver>) {
        let _ = receiver;
    }

    /// Offers the session's [`RequestClocks`]: a transport whose sending of a request
    /// may wait on something other than the peer (the HTTP client's auth hook, while
    /// the user authorizes) holds that request's timeout meanwhile
    /// ([`RequestClock::paused`]). Keep only a [`Weak`] reference (the clocks belong to
    /// the session, which holds the sink). The default ignores the offer.
    fn offer_clocks(&mut self, clocks: Arc<dyn RequestClocks>) {
        let _ = clocks;
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
    /// handshake's requests, anything for a closed session): the transport then delivers it, and
    /// every later message of the same batch, through [`MessageStream::recv`].
    ///
    /// Call it only from within a tokio runtime, and only when no message is waiting in
    /// the `recv` queue (a message taken here would overtake it).
    fn receive(&self, message: TransportMessage) -> Option<TransportMessage>;
}

/// How deeply direct deliveries may nest on one thread (a handler that, in its first
/// poll, sends a request whose handler sends one back, and so on, over in-process
/// transports). Deeper messages are queued, so a ping-pong cannot exhaust the stack.
pub const MAX_DIRECT_DEPTH: u32 = 8;

thread_local! {
    static DIRECT_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// The transport's side of direct delivery for one direction of a connection: the
/// receiver's [`DirectReceiver`], once offered, and the count of messages that went the
/// queued way and are not yet handled.
///
/// The ordering rule lives here: a message is delivered directly only while that count
/// is zero, so it never overtakes one sent before it. The transport calls
/// [`queue`](Self::queue) before it queues a message (and [`unqueue`](Self::unqueue) if
/// queueing failed). Its stream calls [`next`](Self::next) at the start of every `recv`
/// and [`took`](Self::took) when `recv` yields a queued message: the receiver handles a
/// message it took until it asks for the next one.
#[derive(Default)]
pub struct DirectSlot {
    receiver: OnceLock<Weak<dyn DirectReceiver>>,
    queued: AtomicUsize,
    /// Whether the receiver holds a queued message it took (only its stream's task
    /// touches it).
    holding: AtomicBool,
}

modelctx_types::__debug_shows!(DirectSlot, |v| {
    offered: &v.receiver.get().is_some(),
    queued: &v.queued.load(Ordering::Relaxed),
});

impl DirectSlot {
    /// Keeps the receiver's entry (weakly: the receiver holds the transport's sink);
    /// what [`MessageStream::offer_direct`] does with it.
    pub fn offer(&self, receiver: &Arc<dyn DirectReceiver>) {
        let _ = self.receiver.set(Arc::downgrade(receiver));
    }

    /// Hands `message` to the receiver on this task when one was offered, nothing
    /// queued is unhandled and nesting allows; gives it back otherwise (queue it then).
    pub fn try_deliver(&self, message: TransportMessage) -> Option<TransportMessage> {
        if self.queued.load(Ordering::Acquire) != 0 {
            return Some(message);
        }
        let Some(receiver) = self.receiver.get().and_then(Weak::upgrade) else {
            return Some(message);
        };
        let depth = DIRECT_DEPTH.with(Cell::get);
        if depth >= MAX_DIRECT_DEPTH {
            return Some(message);
        }
        DIRECT_DEPTH.with(|d| d.set(depth + 1));
        let back = receiver.receive(message);
        DIRECT_DEPTH.with(|d| d.set(depth));
        back
    }

    /// A message is about to be queued.
    pub fn queue(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// Queueing the message announced with [`queue`](Self::queue) failed.
    pub fn unqueue(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }

    /// The receiver asks for the next message: the queued one it took, if any, is
    /// handled.
    pub fn next(&self) {
        if self.holding.swap(false, Ordering::Relaxed) {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// `recv` yields a queued message.
    pub fn took(&self) {
        self.holding.store(true, Ordering::Relaxed);
    }
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

    fn offer_clocks(&mut self, clocks: Arc<dyn RequestClocks>) {
        (**self).offer_clocks(clocks);
    }
}

/// A type-erased transport: any transport's halves, boxed.
pub type BoxTransport = (Box<dyn MessageSink>, Box<dyn MessageStream>);

/// A request's `_meta` as a transport found it while reading the request (streamable
/// HTTP reads it in the stateless era, to check the headers that mirror it; it travels
/// with that request, in [`EraRead`]): its JSON text, shared, for the layers above to use instead of looking for it in the params
/// again. Unstable: for the SDK's own crates.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct FoundMeta {
    /// The text of `_meta`, a JSON object.
    pub text: Arc<str>,
    /// Whether the text's top-level keys were read without escapes and none is
    /// `progressToken`: the request then has no progress token.
    pub plain: bool,
    /// Whether `text` is kept by the transport and comes again, the same `Arc`, with
    /// later requests that carry the same `_meta` (a reader may key what it derives from
    /// the text by the `Arc`'s address while it holds the `Arc`).
    pub shared: bool,
    /// Where `text` stands in the request's params as the transport read them: its
    /// offset in the params' text, and that text's length (a reader checks both, and
    /// the text there, before it relies on the place).
    pub at: Option<MetaPlace>,
}

/// Where a request's `_meta` value stands in its params' text (see [`FoundMeta::at`]).
/// Unstable.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaPlace {
    /// The value's offset in the params' text.
    pub offset: usize,
    /// The length of the params' text.
    pub params_len: usize,
}

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

    /// What the transport tells the session that runs over it (see
    /// [`TransportInfo`]); read as the session starts. Default: a `"custom"`
    /// transport with nothing else to tell. A wrapper forwards its inner transport's.
    fn info(&self) -> TransportInfo {
        TransportInfo::default()
    }
}

impl<S: MessageSink, R: MessageStream> Transport for (S, R) {
    type Sink = S;
    type Stream = R;

    fn split(self) -> (S, R) {
        self
    }
}
