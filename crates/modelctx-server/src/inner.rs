//! The built server's internals: its identity, capabilities, registries, handlers and
//! settings, shared by every session it serves; and [`Server`], the handle on them
//! (whose methods are in `server`).
//!
//! A [`Server`] is an `Arc` of these internals, held by every clone and every running
//! session. `WeakServer` (`Server::downgrade`) lets a background task (a skills watch) work
//! on the server without keeping it alive, and end once `upgrade` finds it gone.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Weak};

use futures_core::future::BoxFuture;
#[cfg(feature = "tasks")]
pub(crate) use modelctx_session::tasks::TaskHost;
use modelctx_session::{Peer, SessionConfig};
use modelctx_types::{
    ErrorData, Implementation, InitializeResult, ProtocolVersion, RawValue, ServerCapabilities,
};

use crate::middleware;
use crate::mrtr;
use crate::registry::{Announcer, Registry};
use crate::request::Context;
use crate::stateless;

pub(crate) type RequestFn = dyn Fn(Option<Box<RawValue>>, Context) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>>
    + Send
    + Sync;
pub(crate) use modelctx_session::NotificationFn;
pub(crate) type ErrorFn = dyn Fn(ErrorData, &Peer) + Send + Sync;

/// An MCP server: its identity, capabilities, registries and handlers. Cheap to clone;
/// serve it on as many transports as you like.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_server::{Server, ToolDef};
/// use modelctx_test::TestClient;
///
/// let server = Server::builder("hello", "1.0.0")
///     .instructions("Greets whoever asks.")
///     .tool(ToolDef::from_fn("hello", |_: modelctx_server::NoArgs| async { "hello!" }))?
///     .build();
/// // Serve it on any transport (`serve`), as often as you like; here an in-process client.
/// let client = TestClient::connect(&server).await;
/// assert_eq!(client.call_tool("hello", serde_json::json!({})).await.content[0].as_text(), Some("hello!"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

/// A handle on a [`Server`] that does not keep it alive, from [`Server::downgrade`]:
/// for a background task that works on the server for as long as it is in use and
/// should end with it, rather than keep it (and everything it holds) alive.
///
/// The server is in use while a [`Server`] clone exists or a session it serves is
/// running; [`upgrade`](WeakServer::upgrade) answers `None` once neither is left.
///
/// ```
/// use modelctx_server::Server;
///
/// let server = Server::builder("docs", "1.0.0").build();
/// let weak = server.downgrade();
/// assert!(weak.upgrade().is_some());
/// drop(server);
/// assert!(weak.upgrade().is_none());
/// ```
#[derive(Clone)]
pub struct WeakServer {
    pub(crate) inner: Weak<Inner>,
}

modelctx_types::__debug_shows!(WeakServer, |v| { alive: &(v.inner.strong_count() > 0) });

/// What every session of one server shares: built once by the builder, read by the
/// service, the request contexts and the answers served from the registries.
pub(crate) struct Inner {
    pub(crate) info: Implementation,
    /// `info`, encoded once: every result of the stateless era carries it in `_meta`.
    pub(crate) info_json: Arc<RawValue>,
    pub(crate) instructions: Option<String>,
    pub(crate) capabilities: ServerCapabilities,
    /// The `initialize` result for each revision `initialize` may negotiate, encoded
    /// once: it depends on nothing else (see [`Inner::initialize_result`]).
    pub(crate) initialize_results: Vec<(ProtocolVersion, Box<RawValue>)>,
    pub(crate) requests: HashMap<Cow<'static, str>, Arc<RequestFn>>,
    pub(crate) notifications: middleware::NotificationHandlers,
    pub(crate) session: SessionConfig,
    pub(crate) registry: Registry,
    pub(crate) announcer: Arc<Announcer>,
    pub(crate) state: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) page_size: usize,
    /// Serves the stateless era (2026-07-28) beside the handshake era.
    pub(crate) stateless_era: bool,
    /// The handshake revisions `initialize` negotiates, when the application named
    /// them (`None`: every one this SDK speaks).
    pub(crate) versions: Option<Vec<ProtocolVersion>>,
    /// Seals the `requestState` of multi round-trip requests (the process's key unless
    /// given).
    pub(crate) state_key: Option<mrtr::StateKey>,
    /// How long a sealed `requestState` stays valid.
    pub(crate) state_lifetime: std::time::Duration,
    /// Where the ids of single-use rounds are remembered, when rounds are single-use.
    pub(crate) single_use: Option<Arc<dyn modelctx_store::SingleUseIds>>,
    /// The caching hints of cacheable results in the 2026-07-28 era.
    pub(crate) cache_hints: stateless::CacheHints,
    /// The envelopes of 2026-07-28 requests read so far, shared by requests that carry
    /// the same (see `stateless::envelope_cached`).
    pub(crate) envelopes: stateless::EnvelopeCache,
    /// Runs task-augmented requests (2025-11-25 tasks), when enabled.
    #[cfg(feature = "tasks")]
    pub(crate) task_host: Option<Arc<TaskHost>>,
    /// Hears errors a client could not attribute to a request.
    pub(crate) on_error: Option<Arc<ErrorFn>>,
    /// The bound on running handlers every session of this server shares.
    pub(crate) handler_limit: Option<modelctx_session::HandlerLimit>,
    /// The layers around the server's answering, when it has any.
    pub(crate) middleware: Option<middleware::Chain>,
    /// The layers around the server's notification handlers, when it has any.
    pub(crate) notification_middleware: Option<middleware::Chain<middleware::McpNotification, ()>>,
}

/// What runs tasks: none without the `tasks` feature (no value, so the code that serves
/// tasks is left out of the build).
#[cfg(not(feature = "tasks"))]
#[derive(Debug)]
pub(crate) enum TaskHost {}

impl Inner {
    /// Runs task-augmented requests and the tasks extension, when enabled. Always
    /// `None` without the `tasks` feature: the code that serves tasks is then
    /// unreachable and the compiler drops it.
    #[inline]
    pub(crate) fn tasks(&self) -> Option<&Arc<TaskHost>> {
        #[cfg(feature = "tasks")]
        return self.task_host.as_ref();
        #[cfg(not(feature = "tasks"))]
        None
    }

    /// The `initialize` result at `version`: encoded at build for every revision the
    /// server negotiates, encoded here for any other.
    pub(crate) fn initialize_result(
        &self,
        version: &ProtocolVersion,
    ) -> Result<Box<RawValue>, ErrorData> {
        match self.initialize_results.iter().find(|(v, _)| v == version) {
            Some((_, raw)) => Ok(raw.clone()),
            None => encode_initialize_result(
                version,
                &self.capabilities,
                &self.info,
                self.instructions.as_ref(),
            )
            .map_err(|e| ErrorData::internal_error(e.to_string())),
        }
    }
}

/// Encodes the `initialize` result a server with these capabilities, identity and
/// instructions answers at `version`.
pub(crate) fn encode_initialize_result(
    version: &ProtocolVersion,
    capabilities: &ServerCapabilities,
    info: &Implementation,
    instructions: Option<&String>,
) -> Result<Box<RawValue>, serde_json::Error> {
    let mut result = InitializeResult::new(version.clone(), capabilities.clone(), info.clone());
    result.instructions = instructions.cloned();
    modelctx_types::to_raw(&result)
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut methods: Vec<_> = self.inner.requests.keys().collect();
        methods.sort();
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("capabilities", &self.inner.capabilities)
            .field("methods", &methods)
            .finish()
    }
}
