//! The server role of modelctx.
//!
//! A [`Server`] is built once — name, version, instructions, and a typed handler per
//! request method — and serves any number of sessions, each over its own transport.
//! It answers `initialize` itself (version negotiation, capabilities derived from the
//! handlers you registered) and hands every other request to your handler with a
//! [`Context`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_server::{Context, Server};
//! use modelctx_types::{EmptyResult, ErrorData, PingRequest};
//!
//! let server = Server::builder("demo", "1.0.0")
//!     .instructions("Say hello.")
//!     .build();
//! let (transport, _client_side) = modelctx_memory::pair();
//! let session = server.serve(transport);
//! assert!(!session.is_initialized());
//! # }
//! ```

mod context;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::{Peer, RequestContext, Service, SessionConfig, SessionError, parse_params};
use modelctx_transport::Transport;
use modelctx_types::{
    ClientCapabilities, ErrorData, Implementation, InitializeRequest, InitializeRequestParams,
    InitializeResult, JsonRpcNotification, JsonRpcRequest, NotificationMethod, ProtocolVersion,
    RawValue, RequestMethod, ServerCapabilities, to_raw,
};

use context::ClientState;
pub use context::Context;

type RequestFn = dyn Fn(Option<Box<RawValue>>, Context) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>>
    + Send
    + Sync;
type NotificationFn = dyn Fn(Option<Box<RawValue>>, Peer) -> BoxFuture<'static, ()> + Send + Sync;

/// An MCP server: its identity, capabilities and handlers. Cheap to clone; serve it on
/// as many transports as you like.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    info: Implementation,
    instructions: Option<String>,
    capabilities: ServerCapabilities,
    requests: HashMap<Cow<'static, str>, Arc<RequestFn>>,
    notifications: HashMap<Cow<'static, str>, Arc<NotificationFn>>,
    session: SessionConfig,
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

impl Server {
    /// Starts building a server with this name and version.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            capabilities: None,
            requests: HashMap::new(),
            notifications: HashMap::new(),
            session: SessionConfig::server(),
        }
    }

    /// The server's name, version and title.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The capabilities the server advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// Serves one session over `transport`. Must be called within a tokio runtime.
    pub fn serve<T: Transport>(&self, transport: T) -> ServerSession {
        self.serve_with(transport, self.inner.session.clone())
    }

    /// Serves one session with explicit session settings (e.g. pre-initialised for a
    /// stateless transport).
    pub fn serve_with<T: Transport>(&self, transport: T, config: SessionConfig) -> ServerSession {
        let client = Arc::new(ClientState::default());
        let service = Arc::new(SessionService {
            server: self.inner.clone(),
            client: client.clone(),
        });
        let peer = modelctx_session::start(transport, service, config);
        ServerSession { peer, client }
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    capabilities: Option<ServerCapabilities>,
    requests: HashMap<Cow<'static, str>, Arc<RequestFn>>,
    notifications: HashMap<Cow<'static, str>, Arc<NotificationFn>>,
    session: SessionConfig,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// Sets the human-readable title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Sets the full implementation description (name, version, title, icons, ...).
    #[must_use]
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Sets the instructions returned by `initialize`.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Advertises exactly these capabilities instead of deriving them from handlers.
    #[must_use]
    pub fn capabilities(mut self, capabilities: ServerCapabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// Sets the session settings used by [`Server::serve`].
    #[must_use]
    pub fn session_config(mut self, config: SessionConfig) -> Self {
        self.session = config;
        self
    }

    /// Registers the handler of request method `M`. Its params arrive decoded (a
    /// mismatch is answered `-32602`); its result is encoded as `M::Result`.
    #[must_use]
    pub fn request_handler<M, F, Fut>(mut self, handler: F) -> Self
    where
        M: RequestMethod,
        F: Fn(M::Params, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, ErrorData>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: Arc<RequestFn> = Arc::new(move |params, cx| {
            let handler = handler.clone();
            Box::pin(async move {
                let params = parse_params::<M::Params>(params.as_deref())?;
                let result = handler(params, cx).await?;
                to_raw(&result).map_err(|e| {
                    ErrorData::internal_error(format!("cannot encode the result: {e}"))
                })
            })
        });
        self.requests.insert(Cow::Borrowed(M::METHOD), erased);
        self
    }

    /// Registers the handler of notification method `N`.
    #[must_use]
    pub fn notification_handler<N, F, Fut>(mut self, handler: F) -> Self
    where
        N: NotificationMethod,
        F: Fn(N::Params, Peer) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: Arc<NotificationFn> = Arc::new(move |params, peer| {
            let handler = handler.clone();
            Box::pin(async move {
                if let Ok(params) = parse_params::<N::Params>(params.as_deref()) {
                    handler(params, peer).await;
                }
            })
        });
        self.notifications.insert(Cow::Borrowed(N::METHOD), erased);
        self
    }

    /// Builds the server.
    pub fn build(self) -> Server {
        let capabilities = self
            .capabilities
            .unwrap_or_else(|| derive_capabilities(self.requests.keys().map(|k| k.as_ref())));
        Server {
            inner: Arc::new(Inner {
                info: self.info,
                instructions: self.instructions,
                capabilities,
                requests: self.requests,
                notifications: self.notifications,
                session: self.session,
            }),
        }
    }
}

/// The capabilities a set of handled methods implies: one per feature area with a
/// handler, none for the others.
fn derive_capabilities<'a>(methods: impl Iterator<Item = &'a str>) -> ServerCapabilities {
    let methods: Vec<&str> = methods.collect();
    let has = |prefix: &str| methods.iter().any(|m| m.starts_with(prefix));
    let mut caps = ServerCapabilities::new();
    if has("tools/") {
        caps = caps.with_tools(false);
    }
    if has("resources/") {
        caps = caps.with_resources(methods.contains(&"resources/subscribe"), false);
    }
    if has("prompts/") {
        caps = caps.with_prompts(false);
    }
    if has("completion/") {
        caps = caps.with_completions();
    }
    if has("logging/") {
        caps = caps.with_logging();
    }
    caps
}

/// The session-side service: one per session, sharing the server's handlers.
struct SessionService {
    server: Arc<Inner>,
    client: Arc<ClientState>,
}

impl SessionService {
    fn initialize(&self, params: InitializeRequestParams) -> InitializeResult {
        let version = ProtocolVersion::negotiate(&params.protocol_version);
        let _ = self.client.info.set(params.client_info);
        let _ = self.client.capabilities.set(params.capabilities);
        let _ = self.client.protocol_version.set(version.clone());
        let mut result = InitializeResult::new(
            version,
            self.server.capabilities.clone(),
            self.server.info.clone(),
        );
        result.instructions = self.server.instructions.clone();
        result
    }
}

impl Service for SessionService {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        if request.method == <InitializeRequest as RequestMethod>::METHOD {
            let result = parse_params::<InitializeRequestParams>(request.params.as_deref())
                .map(|params| self.initialize(params))
                .and_then(|r| to_raw(&r).map_err(|e| ErrorData::internal_error(e.to_string())));
            return Box::pin(async move { result });
        }
        let cx = Context::new(context, self.client.clone());
        match self.server.requests.get(request.method.as_ref()) {
            Some(handler) => handler(request.params, cx),
            None => {
                let error = ErrorData::method_not_found(&request.method);
                Box::pin(async move { Err(error) })
            }
        }
    }

    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        if notification.method == "notifications/initialized" {
            self.client.initialized.cancel();
        }
        match self.server.notifications.get(notification.method.as_ref()) {
            Some(handler) => handler(notification.params, peer),
            None => Box::pin(async {}),
        }
    }
}

/// One served session: the handle to talk to that client and watch the session.
#[derive(Debug, Clone)]
pub struct ServerSession {
    peer: Peer,
    client: Arc<ClientState>,
}

impl ServerSession {
    /// The session's peer (the client).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The client's name, version and title, once initialised.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client.info.get()
    }

    /// The capabilities the client declared, once initialised.
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.client.capabilities.get()
    }

    /// The negotiated protocol revision, once initialised.
    pub fn protocol_version(&self) -> Option<&ProtocolVersion> {
        self.client.protocol_version.get()
    }

    /// Whether the client completed the handshake.
    pub fn is_initialized(&self) -> bool {
        self.peer.is_initialized()
    }

    /// Resolves once the client sent `notifications/initialized`.
    pub async fn initialized(&self) {
        self.client.initialized.cancelled().await;
    }

    /// Sends a request to the client.
    pub async fn request<M: RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        self.peer.request::<M>(params).await
    }

    /// Sends a notification to the client.
    pub async fn notify<N: NotificationMethod>(
        &self,
        params: N::Params,
    ) -> Result<(), SessionError> {
        self.peer.notify::<N>(params).await
    }

    /// Pings the client.
    pub async fn ping(&self) -> Result<(), SessionError> {
        self.peer.ping().await
    }

    /// Resolves when the session has ended.
    pub async fn closed(&self) {
        self.peer.closed().await;
    }

    /// Ends the session.
    pub async fn close(&self) {
        self.peer.close().await;
    }
}
