//! The JSON-RPC peer runtime of modelctx.
//!
//! A session runs one MCP conversation over any [`Transport`]: it correlates requests
//! and responses, enforces the lifecycle, routes cancellation and progress both ways,
//! applies timeouts, and runs inbound handlers concurrently under a bound. The role
//! crates (`modelctx-server`, `modelctx-client`) plug in a [`Service`] and build their
//! typed APIs on the [`Peer`] handle.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Arc;
//! use futures_core::future::BoxFuture;
//! use modelctx_session::{start, Peer, RequestContext, Service, SessionConfig};
//! use modelctx_types::{ErrorData, JsonRpcRequest, RawValue};
//!
//! struct Echo;
//! impl Service for Echo {
//!     fn handle_request(self: Arc<Self>, request: JsonRpcRequest, _cx: RequestContext)
//!         -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
//!         Box::pin(async move { Err(ErrorData::method_not_found(&request.method)) })
//!     }
//! }
//!
//! let (a, b) = modelctx_memory::pair();
//! let server = start(a, Arc::new(Echo), SessionConfig::server().pre_initialized());
//! let client = start(b, Arc::new(Echo), SessionConfig::client().pre_initialized());
//! client.ping().await.unwrap();
//! # drop(server);
//! # }
//! ```
//!
//! # Layout
//! - `pending` — the sans-IO table of outbound requests (ids, slots, progress routes).
//! - `lifecycle` — which messages may flow in which phase, per role.
//! - `peer` — the outbound side: [`Peer`], [`RequestHandle`], [`RequestOptions`].
//! - `runtime` — the receive loop and handler dispatch.
//! - `service` — the [`Service`] trait and the per-request [`RequestContext`].
//! - [`tasks`] — both sides of task-augmented requests (2025-11-25); the receiver's side
//!   (`TaskHost`) with the `tasks` feature.
//! - [`announce`] — the seam that carries a server's change announcements to other
//!   processes.
//!
//! # Guarantees
//! - The receive loop never awaits user code: handlers run on their own tasks (bounded by
//!   [`SessionConfig::max_concurrent_requests`]), notifications on one ordered task,
//!   progress callbacks on the task awaiting the request. A notification handler is
//!   called at arrival (what it does before its first await happens in arrival order
//!   with the responses), so a response never overtakes a notification sent before it.
//! - Outbound ids are positive integers, never reused in a session. A response for an
//!   unknown id, or after cancellation, is ignored.
//! - Cancelling (or dropping) a request sends `notifications/cancelled`, never for
//!   `initialize`; so does a timeout, before the call fails.
//! - A handler that panics answers `-32603 Internal error`; the session lives on.
//! - When the transport closes, every pending request fails with
//!   [`SessionError::is_closed`] and every running handler is cancelled.
//!
//! # How it works
//!
//! The modules: `pending` (the sans-IO table of outbound requests), `lifecycle` (the phase
//! rules), `peer` (the outbound side), `runtime` (the receive loop), `service` (what a role
//! plugs in), `tasks`, `announce`, `middleware` and `trace` (the request spans; with the
//! feature `otel`, W3C trace context carried in `_meta` and the MCP metrics). Each
//! module's doc holds its rules.
//!
//! Invariants across them:
//!
//! - A response is never answered, not even one that cannot be read; the call it names
//!   fails when it arrives.
//! - No lock is held across an await (std mutexes guard only map operations).
//! - Disconnect is not cancellation: only `notifications/cancelled` or the end of the
//!   session cancels a handler.
//! - Per-session state lives in the session (the role crates' per-session service objects),
//!   never in globals.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod announce;
mod error;
mod lifecycle;
pub mod middleware;
mod peer;
mod pending;
mod runtime;
mod service;
pub mod tasks;
mod trace;
mod unwind;

use std::time::Duration;

pub use error::{SessionError, SessionErrorKind};
pub use lifecycle::Role;
pub use peer::{Canceller, Peer, Progress, ProgressCallback, RequestHandle, RequestOptions};
pub use runtime::start;
pub use service::{
    NotificationFn, ProgressReporter, RequestContext, Service, encode_result, notification_fn,
    parse_params,
};
#[doc(hidden)]
pub use unwind::{CatchUnwind, catch_unwind};

/// Re-exported for handlers that watch for cancellation.
pub use tokio_util::sync::CancellationToken;

#[doc(no_inline)]
pub use modelctx_transport::{Extensions, Transport};

/// The error code of a request refused because its session already has
/// [`SessionConfig::max_requests_in_flight`] requests in flight: an
/// implementation-defined server error (JSON-RPC reserves -32000 to -32099 for them).
/// The request did not run; the peer may send it again once answers come back.
pub const TOO_MANY_REQUESTS: modelctx_types::ErrorCode = modelctx_types::ErrorCode(-32005);

/// A bound on running handlers that several sessions share
/// ([`SessionConfig::handler_limit`]): cheap to clone, every clone the same bound.
#[derive(Clone)]
pub struct HandlerLimit(std::sync::Arc<tokio::sync::Semaphore>);

impl HandlerLimit {
    /// At most `n` handlers running at once (at least one).
    pub fn new(n: usize) -> Self {
        Self(std::sync::Arc::new(tokio::sync::Semaphore::new(n.max(1))))
    }

    /// How many more handlers may start now.
    pub fn available(&self) -> usize {
        self.0.available_permits()
    }

    pub(crate) fn semaphore(&self) -> &std::sync::Arc<tokio::sync::Semaphore> {
        &self.0
    }
}

modelctx_types::__debug_shows!(HandlerLimit, |v| { available: &v.available() });

/// How a session behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Client or server.
    pub role: Role,
    /// How long an outbound request waits for its response unless overridden
    /// ([`SessionConfig::DEFAULT_REQUEST_TIMEOUT`], 60 s).
    pub request_timeout: Duration,
    /// How many inbound requests run their handlers at once; more wait their turn
    /// (ping and cancellation are never delayed by them).
    pub max_concurrent_requests: usize,
    /// How many inbound requests may be in flight at once, running or waiting their
    /// turn ([`SessionConfig::DEFAULT_MAX_REQUESTS_IN_FLIGHT`], 1,024): one more is
    /// answered at once with [`TOO_MANY_REQUESTS`], so a peer that floods the session
    /// costs bounded memory and gets a clear error instead of a growing queue.
    pub max_requests_in_flight: usize,
    /// A bound on running handlers shared with other sessions (see
    /// [`SessionConfig::handler_limit`]).
    pub handler_limit: Option<HandlerLimit>,
    /// Start in the operational phase, with no handshake (session-less HTTP).
    pub pre_initialized: bool,
    /// Whether handlers may send requests to the peer. Off for transports that cannot
    /// carry them (session-less HTTP): such a request fails at once with a clear error.
    pub allow_outbound_requests: bool,
    /// Serve the stateless era (2026-07-28) on a server session: see
    /// [`SessionConfig::unstable_stateless_era`].
    stateless_era: bool,
    /// Start with `initialize` answered elsewhere: see
    /// [`SessionConfig::initialize_answered`].
    initialize_answered: bool,
    /// The protocol version agreed elsewhere: see [`SessionConfig::protocol_version`].
    agreed_version: Option<Box<str>>,
}

impl SessionConfig {
    /// The default timeout of an outbound request: 60 seconds.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
    /// The default bound on concurrently running inbound handlers.
    pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 256;
    /// The default bound on inbound requests in flight (running or waiting).
    pub const DEFAULT_MAX_REQUESTS_IN_FLIGHT: usize = 1024;

    fn new(role: Role) -> Self {
        Self {
            role,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            max_concurrent_requests: Self::DEFAULT_MAX_CONCURRENT_REQUESTS,
            max_requests_in_flight: Self::DEFAULT_MAX_REQUESTS_IN_FLIGHT,
            handler_limit: None,
            pre_initialized: false,
            allow_outbound_requests: true,
            stateless_era: false,
            initialize_answered: false,
            agreed_version: None,
        }
    }

    /// A client session with defaults.
    pub fn client() -> Self {
        Self::new(Role::Client)
    }

    /// A server session with defaults.
    pub fn server() -> Self {
        Self::new(Role::Server)
    }

    modelctx_types::__setters! {
        /// Sets the default request timeout.
        request_timeout(timeout: Duration) { request_timeout = timeout }

        /// Sets the bound on concurrently running handlers.
        max_concurrent_requests(n: usize) { max_concurrent_requests = n }

        /// Sets the bound on inbound requests in flight (running, waiting their turn, or
        /// answered but waiting for room to send the answer to a peer that does not read;
        /// at least one); beyond it a request is answered at once with
        /// [`TOO_MANY_REQUESTS`]. Such refusals, pings and other answers the session gives
        /// by itself wait for a full sink at most 64 at a time; beyond that they are
        /// dropped, so a peer that floods and never reads costs bounded memory.
        max_requests_in_flight(n: usize) { max_requests_in_flight = n.max(1) }

        /// Shares `limit` with every session given the same one: a handler runs only with
        /// a slot of it (as well as one of this session's own
        /// [`max_concurrent_requests`](Self::max_concurrent_requests)), so the work of all
        /// those sessions together stays bounded. A session that floods takes at most its
        /// own bound of the shared slots.
        handler_limit(limit: HandlerLimit) { handler_limit = Some(limit) }

        /// Lets a server session serve the stateless era (2026-07-28): a first request that
        /// carries `_meta["io.modelcontextprotocol/protocolVersion"]` needs no handshake, and
        /// the session then serves every request on its own envelope and sends no requests
        /// of its own. Unstable: the era is being built and off by default.
        #[doc(hidden)]
        unstable_stateless_era(on: bool) { stateless_era = on }
    }

    /// Whether [`SessionConfig::unstable_stateless_era`] is on.
    #[doc(hidden)]
    pub fn serves_stateless_era(&self) -> bool {
        self.stateless_era
    }

    /// Starts already initialised (no handshake).
    #[must_use]
    pub fn pre_initialized(mut self) -> Self {
        self.pre_initialized = true;
        self
    }

    /// Starts a server session whose `initialize` another process answered (a session
    /// shared by several processes, continued here before the client's
    /// `notifications/initialized` arrived): as on the process that answered it, only
    /// `ping` is served (anything else, another `initialize` included, is answered
    /// with `-32600`) and only pings and logging are sent, until that notification
    /// arrives. With [`pre_initialized`](Self::pre_initialized) too, the session starts
    /// operational (the notification arrived elsewhere) and still refuses another
    /// `initialize`.
    #[must_use]
    pub fn initialize_answered(mut self) -> Self {
        self.initialize_answered = true;
        self
    }

    modelctx_types::__setters! {
        /// The protocol version of a session whose handshake happened elsewhere (a
        /// [`pre_initialized`](Self::pre_initialized) session, or one shared by several
        /// processes): its request spans name it (`mcp.protocol.version`), as a session that
        /// ran the handshake learns it from the `initialize` answer.
        ///
        /// ```
        /// use modelctx_session::SessionConfig;
        ///
        /// let config = SessionConfig::server()
        ///     .pre_initialized()
        ///     .protocol_version("2025-11-25");
        /// # drop(config);
        /// ```
        protocol_version(version: impl Into<String>) { agreed_version = Some(version.into().into_boxed_str()) }
    }

    /// Refuses handler-initiated requests to the peer.
    #[must_use]
    pub fn without_outbound_requests(mut self) -> Self {
        self.allow_outbound_requests = false;
        self
    }
}
