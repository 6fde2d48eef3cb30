//! The client role of modelctx.
//!
//! [`Client::builder`] describes the client — name, version, the handlers it serves for
//! server-initiated requests (each declares its capability) — and
//! [`ClientBuilder::connect`] runs the handshake over a transport: `initialize`, a check
//! that the server's protocol revision is one we speak, then
//! `notifications/initialized`. The connected [`Client`] sends typed requests and
//! refuses, locally, those the server did not advertise.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_client::Client;
//! use modelctx_server::Server;
//!
//! let (client_side, server_side) = modelctx_memory::pair();
//! let _session = Server::builder("demo-server", "1.0.0").build().serve(server_side);
//! let client = Client::builder("demo-client", "1.0.0").connect(client_side).await.unwrap();
//! assert_eq!(client.server_info().name, "demo-server");
//! client.ping().await.unwrap();
//! # }
//! ```
//!
//! # Answering the server
//!
//! Sampling, elicitation (form and URL mode) and roots are typed async callbacks, each
//! run on its request's own task and dropped if the server cancels it. Configuring one
//! declares its capability, and only then ([`ClientBuilder::sampling`] with its
//! [`SamplingSupport`], [`ClientBuilder::form_elicitation`],
//! [`ClientBuilder::url_elicitation`], [`ClientBuilder::roots`] with a managed
//! [`RootsList`], [`ClientBuilder::roots_callback`]). A form is checked against the
//! spec's restricted schema before the callback sees it and the answer before it is
//! sent; a `-32042` error reads as [`UrlElicitationRequired`] through
//! [`Client::url_elicitation_required`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_client::{Client, ConnectMode, FormAnswer, RootsList, SamplingSupport};
//! use modelctx_types::{CreateMessageResult, Root};
//!
//! let roots = RootsList::new(vec![Root::new("file:///work/repo")]).unwrap();
//! let builder = Client::builder("demo-client", "1.0.0")
//!     // The handshake era, whose session keeps what the client declared.
//!     .mode(ConnectMode::Handshake)
//!     .sampling(SamplingSupport::new(), |_params, _cx| async {
//!         Ok(CreateMessageResult::assistant_text("Hello!", "local-model"))
//!     })
//!     .form_elicitation(|form, _cx| async move { Ok(FormAnswer::Accept(form.prefilled)) })
//!     .roots(roots.clone(), true);
//! let (client_side, server_side) = modelctx_memory::pair();
//! let session = modelctx_server::Server::builder("demo-server", "1.0.0").build().serve(server_side);
//! let _client = builder.connect(client_side).await.unwrap();
//! let declared = session.client_capabilities().unwrap();
//! assert!(declared.sampling.is_some() && declared.elicitation.is_some());
//! // Sends notifications/roots/list_changed, since `listChanged` was declared.
//! roots.add(Root::new("file:///work/other")).await.unwrap();
//! # }
//! ```
//!
//! # Extensions
//!
//! [`ClientBuilder::extension`] takes part in an extension (SEP-2133): a
//! [`ClientExtension`] advertises its identifier and settings, may claim `resultType`
//! values for `tools/call` (finished by its resolver into an ordinary
//! [`CallToolResult`](modelctx_types::CallToolResult); a type neither core nor claimed by a
//! declared extension is an invalid result), and may bind vendor notifications
//! ([`NotificationBinding`]).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod callbacks;
mod elicitation;
mod extensions;
mod features;
mod list_changed;
mod middleware;
mod mode;
mod negotiate;
mod ordering;
mod roots;
mod stateless;
mod subscriptions;
mod tasks;
mod typed;
mod validation;

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::{
    Peer, RequestContext, RequestHandle, RequestOptions, Service, SessionConfig, SessionError,
    encode_result, notification_fn, parse_params,
};
use modelctx_transport::Transport;
use modelctx_types::{
    ClientCapabilities, DiscoverResult, ErrorData, Implementation, InitializeRequestParams,
    InitializeResult, InitializedNotification, JsonRpcNotification, JsonRpcRequest, Meta,
    NotificationMethod, ProtocolVersion, RawValue, RequestMethod, ServerCapabilities, ext_tasks,
};

pub use callbacks::{SamplingSupport, sampling_rejected};
pub use elicitation::{
    FormAnswer, FormContent, FormError, FormRequest, UrlAnswer, UrlElicitationRequired, UrlRequest,
};
pub use extensions::{Claimed, ClientExtension, NotificationBinding};
pub use features::{PagedMethod, Pages};
pub use list_changed::{ListKind, ListUpdate};
pub use middleware::{McpNotification, McpRequest, Next, NotificationNext};
pub use mode::ConnectMode;
pub use modelctx_session::RequestContext as CallbackContext;
pub use roots::{RootsError, RootsList};
pub use subscriptions::{Subscription, Watch};
pub use typed::{StructuredError, ToolCallError, ToolResultExt, TypedTool, tool_arguments};

type RequestFn = dyn Fn(
        Option<Box<RawValue>>,
        RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>>
    + Send
    + Sync;
pub(crate) use modelctx_session::NotificationFn;
type ErrorFn = dyn Fn(ErrorData, &Peer) + Send + Sync;

/// Builds and connects a [`Client`].
///
/// Callbacks declare the capabilities they serve; `connect` runs the handshake (or the
/// 2026-07-28 discovery) on any transport.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_client::{Client, ConnectMode};
/// use modelctx_server::Server;
///
/// let server = Server::builder("quiet", "1.0.0").build();
/// let (client_side, server_side) = modelctx_memory::pair();
/// let _session = server.serve(server_side);
///
/// let client = Client::builder("me", "1.0.0")
///     .mode(ConnectMode::Handshake)
///     .request_timeout(std::time::Duration::from_secs(30))
///     .on_log(|message| eprintln!("server log: {}", message.data))
///     .connect(client_side)
///     .await?;
/// assert_eq!(client.server_info().name, "quiet");
/// # Ok(()) }
/// ```
pub struct ClientBuilder {
    info: Implementation,
    capabilities: ClientCapabilities,
    protocol_version: ProtocolVersion,
    requests: HashMap<Cow<'static, str>, Arc<RequestFn>>,
    notifications: HashMap<Cow<'static, str>, Arc<NotificationFn>>,
    session: SessionConfig,
    callbacks: callbacks::Callbacks,
    list_changed: list_changed::Reactions,
    /// How `connect` settles the revision.
    mode: ConnectMode,
    /// The revisions the client accepts, when the application named them.
    versions: Option<Vec<ProtocolVersion>>,
    /// How long `ConnectMode::Auto` gives a silent server (`None`: the default of the
    /// transport).
    probe_timeout: Option<std::time::Duration>,
    /// Runs the server's task-augmented requests, when set.
    tasks: Option<modelctx_session::tasks::TaskConfig>,
    /// The extensions the client takes part in.
    extensions: Vec<ClientExtension>,
    /// Hears errors the server could not attribute to a request.
    on_error: Option<Arc<ErrorFn>>,
    /// The layers around the handlers of requests from the server, outermost first.
    layers: Vec<middleware::Wrap>,
    /// The layers around the handlers of notifications, outermost first.
    notification_layers: Vec<middleware::Wrap<McpNotification, ()>>,
    /// What the cache of the stateless era reads the time from (tokio's clock unless set).
    cache_clock: Option<stateless::Clock>,
}

/// One answer to a request that may ask for input ([`Client::request_round`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Round<T> {
    /// The request's result.
    Complete(T),
    /// The server needs these inputs first (protocol 2026-07-28).
    InputRequired(modelctx_types::InputRequiredResult),
}

modelctx_types::__debug_shows!(ClientBuilder, |v| {
    info: &v.info,
    capabilities: &v.capabilities,
    protocol_version: &v.protocol_version,
    ..
});

impl ClientBuilder {
    /// Sets the human-readable title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    modelctx_types::__setters! {
        /// Sets the full implementation description.
        info(info: Implementation) { info = info }

        /// Declares capabilities beyond those the registered handlers imply (e.g.
        /// experimental ones). Handlers registered for sampling, elicitation or roots add
        /// theirs on top.
        capabilities(capabilities: ClientCapabilities) { capabilities = capabilities }

        /// Offers this protocol revision in `initialize` (default: the latest).
        protocol_version(version: ProtocolVersion) { protocol_version = version }

        /// The protocol revisions this client accepts, in place of every revision this SDK
        /// speaks (the default). `initialize` offers
        /// [`protocol_version`](Self::protocol_version) when it is among them and the newest
        /// handshake revision among them otherwise; the stateless era (2026-07-28) is used
        /// only when it is among them, and a [`ConnectMode`] that needs an era they leave
        /// out fails at once. A server that settles on a revision outside them fails
        /// `connect`, and no session is left open. A revision this SDK does not speak, or
        /// an empty list, fails `connect` too.
        ///
        /// ```
        /// use modelctx_client::Client;
        /// use modelctx_types::ProtocolVersion;
        ///
        /// let builder = Client::builder("careful", "1.0.0")
        ///     .supported_versions([ProtocolVersion::V2025_11_25, ProtocolVersion::V2025_06_18]);
        /// # let _ = builder;
        /// ```
        supported_versions(versions: impl IntoIterator<Item = ProtocolVersion>) { versions = Some(versions.into_iter().collect()) }
    }

    /// Sets the default timeout of every request.
    #[must_use]
    pub fn request_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.session = self.session.request_timeout(timeout);
        self
    }

    modelctx_types::__setters! {
        /// Sets the session settings.
        session_config(config: SessionConfig) { session = config }
    }

    /// Serves server-initiated request method `M` (e.g. `roots/list`). Registering the
    /// handler of `sampling/createMessage`, `elicitation/create` or `roots/list`
    /// declares the matching capability.
    #[must_use]
    pub fn request_handler<M, F, Fut>(mut self, handler: F) -> Self
    where
        M: RequestMethod,
        F: Fn(M::Params, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, ErrorData>> + Send + 'static,
    {
        match M::METHOD {
            "sampling/createMessage" if self.capabilities.sampling.is_none() => {
                self.capabilities = std::mem::take(&mut self.capabilities).with_sampling();
            }
            "elicitation/create" if self.capabilities.elicitation.is_none() => {
                self.capabilities = std::mem::take(&mut self.capabilities).with_elicitation_form();
            }
            "roots/list" if self.capabilities.roots.is_none() => {
                self.capabilities = std::mem::take(&mut self.capabilities).with_roots(false);
            }
            _ => {}
        }
        let handler = Arc::new(handler);
        let erased: Arc<RequestFn> = Arc::new(move |params, cx| {
            let handler = handler.clone();
            Box::pin(async move {
                let params = parse_params::<M::Params>(params.as_deref())?;
                encode_result(&handler(params, cx).await?)
            })
        });
        self.requests.insert(Cow::Borrowed(M::METHOD), erased);
        self
    }

    /// Handles server notification method `N` (logging, progress without a callback,
    /// list changes, ...).
    #[must_use]
    pub fn notification_handler<N, F, Fut>(mut self, handler: F) -> Self
    where
        N: NotificationMethod,
        F: Fn(N::Params, Peer) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notifications.insert(
            Cow::Borrowed(N::METHOD),
            notification_fn::<N, _, _>(handler),
        );
        self
    }

    /// Hears the session's errors that belong to no request, which nothing else reports:
    /// - an error response the server sends without a request id (`"id": null`): the
    ///   server reporting a failure it could not attribute to a request, such as a
    ///   message from this client it could not parse;
    /// - a response from the server that could not be read, as a `-32603` naming the
    ///   request it answered (which has already failed) and what was wrong;
    /// - a response to no request this client is waiting on (unknown, already
    ///   answered, timed out or cancelled), as a `-32600` naming its id;
    /// - a handler given to [`notification_handler`](Self::notification_handler) that
    ///   panicked, as a `-32603` naming the notification.
    ///
    /// Without it they are dropped. The callback runs with the session's peer, in
    /// arrival order with the server's notifications (a response to no request, as it
    /// is taken); it must not block.
    #[must_use]
    pub fn on_error<F>(mut self, callback: F) -> Self
    where
        F: Fn(ErrorData, &Peer) + Send + Sync + 'static,
    {
        self.on_error = Some(Arc::new(callback));
        self
    }

    modelctx_types::__setters! {
        /// How `connect` settles the protocol revision (default [`ConnectMode::Auto`]).
        mode(mode: ConnectMode) { mode = mode }

        /// How long [`ConnectMode::Auto`] gives a server that has not answered its
        /// `server/discover` probe before it sends `initialize` too (default 10 s).
        ///
        /// Servers of the handshake era may ignore requests that come before `initialize`,
        /// so silence must end somewhere; but a server that is still starting (a Python
        /// interpreter importing its packages, `npx` fetching one) is silent too, and on
        /// stdio it reads what was sent once it runs. So the wait gives up nothing: the
        /// probe stays open past it, `initialize` goes beside it, and whichever answers
        /// settle the era however late they come (`initialize` answered: the handshake
        /// era; refused, or a `-32022` naming 2026-07-28, with the probe answered: the
        /// stateless era). The default is generous because a wait that runs out costs a
        /// dual-era server that starts slowly its newer era (it answers `initialize` too),
        /// and a short one buys little: servers of the handshake era mostly answer the
        /// probe with an error at once. The clock starts when `connect` is called: a child
        /// process says nothing before it answers, so there is no earlier sign of life to
        /// start it from.
        ///
        /// Not used over streamable HTTP, where every request gets an HTTP answer and a
        /// server of the handshake era refuses the probe with one: there the probe is
        /// awaited under the request timeout.
        probe_timeout(wait: std::time::Duration) { probe_timeout = Some(wait) }

        /// Takes part in tasks, in either era, with the same callbacks as plain requests.
        ///
        /// Protocol 2025-11-25: runs the server's task-augmented `sampling/createMessage`
        /// and `elicitation/create`: declares `tasks` (`list`, `cancel`, and the request
        /// kinds this client has callbacks for), answers with the task at once, runs the
        /// callback in the background, and answers `tasks/get`, `tasks/result`,
        /// `tasks/list` and `tasks/cancel` from the server (tasks kept in memory,
        /// bounded). [`Client::call_tool_as_task`] asks the server for tasks.
        ///
        /// Protocol 2026-07-28: declares the tasks extension (`io.modelcontextprotocol/tasks`)
        /// on every request, so the server may answer a `tools/call` with a task; the call
        /// then follows it — polling `tasks/get` at the interval the server suggests,
        /// answering its input requests through `tasks/update` with the callbacks — and
        /// returns the tool's result as if it had come at once. Dropping the call cancels
        /// the task.
        tasks(config: modelctx_session::tasks::TaskConfig) { tasks = Some(config) }
    }

    /// Takes part in extension `extension` (SEP-2133): advertises its identifier and
    /// settings, resolves the result types it claims, and delivers the notifications
    /// it binds (see [`ClientExtension`]). A later extension with the same identifier
    /// replaces an earlier one.
    #[must_use]
    pub fn extension(mut self, extension: ClientExtension) -> Self {
        self.extensions.retain(|e| e.id != extension.id);
        self.extensions.push(extension);
        self
    }

    modelctx_types::__setters! {
        /// The clock the protocol 2026-07-28 cache measures freshness by: an answer with a
        /// `ttlMs` is served again while `clock()` is before the time it arrived plus
        /// that many milliseconds (tokio's clock by default). For tests that move time on
        /// without waiting. Unstable, with the era.
        #[doc(hidden)]
        unstable_cache_clock(clock: impl Fn() -> std::time::Instant + Send + Sync + 'static) { cache_clock = Some(Arc::new(clock)) }
    }

    /// Connects over `transport`: runs the initialize handshake and returns the client.
    /// Fails when the server answers with an error, with a protocol revision this SDK
    /// does not speak (the session is then closed), or when the transport closes.
    pub async fn connect<T: Transport>(mut self, transport: T) -> Result<Client, SessionError> {
        let accepted = negotiate::Accepted::new(self.versions.take())?;
        self.protocol_version = accepted.offer(self.protocol_version);
        self.mode = accepted.mode(self.mode)?;
        let capabilities = self.callbacks.declare(self.capabilities);
        let elicitations = Arc::new(elicitation::Tracker::default());
        self.callbacks.install(
            &capabilities,
            &elicitations,
            &mut self.requests,
            &mut self.notifications,
        );
        let capabilities = match self.tasks.take() {
            Some(config) => {
                let capabilities = tasks::declare(capabilities, &self.requests);
                tasks::install(config, &capabilities, &mut self.requests);
                // In 2026-07-28 the tasks extension claims `resultType: "task"`.
                self.extensions.retain(|e| e.id != ext_tasks::EXTENSION_ID);
                self.extensions.push(stateless::tasks_extension());
                capabilities
            }
            None => capabilities,
        };
        let declared = extensions::declare(
            capabilities,
            std::mem::take(&mut self.extensions),
            &mut self.notifications,
        );
        let claims = Arc::new(declared.claims);
        let list_gate = self.list_changed.install(&mut self.notifications);
        // A streamable HTTP server answers every request with a status: its silence is
        // slowness, never the handshake era.
        let probe_wait = match transport.info().kind {
            "streamable-http" => None,
            _ => Some(self.probe_timeout.unwrap_or(negotiate::PROBE_TIMEOUT)),
        };
        let features = features::FeatureState::default();
        let transport = features.log_order.wrap(transport);
        // The kinds the application reacts to (a reaction, or a handler of its own): in
        // the stateless era their notifications only flow on a subscription.
        let watched: Vec<ListKind> = ListKind::ALL
            .into_iter()
            .filter(|k| self.notifications.contains_key(k.notification()))
            .collect();
        let requests = Arc::new(self.requests);
        let subscriptions = subscriptions::Routes::default();
        let watchers = subscriptions::Watchers::default();
        let cache = Arc::new(stateless::Cache::new(self.cache_clock.take()));
        let middleware = middleware::request_chain(self.layers, &requests);
        let notifications = Arc::new(self.notifications);
        let service = Arc::new(ClientService {
            requests: requests.clone(),
            middleware: middleware.clone(),
            notification_middleware: middleware::notification_chain(
                self.notification_layers,
                &notifications,
            ),
            notifications,
            log_order: features.log_order.clone(),
            subscriptions: subscriptions.clone(),
            watchers: watchers.clone(),
            cache: cache.clone(),
            on_error: self.on_error,
        });
        let peer = modelctx_session::start(transport, service.clone(), self.session);
        let envelope = stateless::envelope(&declared.modern, &self.info);
        // No claim can activate in the handshake era: extensions that claim result
        // types stay out of its ad.
        let legacy_capabilities = declared.legacy;
        let init_params = InitializeRequestParams::new(
            self.protocol_version,
            legacy_capabilities.clone(),
            self.info.clone(),
        );
        let negotiation = negotiate::Negotiation::new(&peer, &envelope, init_params, accepted);
        let settled = match self.mode {
            ConnectMode::Handshake => negotiation.legacy_only().await,
            ConnectMode::Auto => negotiation.auto(probe_wait).await,
            ConnectMode::Discover => negotiation.discover_only().await,
            ConnectMode::Pin(version) => {
                if version == ProtocolVersion::V2026_07_28 {
                    let unknown = Implementation::new("unknown", "unknown");
                    let init =
                        InitializeResult::new(version, ServerCapabilities::default(), unknown);
                    Ok(negotiate::Settled::Stateless(init, None, false))
                } else {
                    Err(SessionError::refused(format!(
                        "protocol version {version} has a handshake and cannot be pinned; \
                         use ConnectMode::Handshake"
                    )))
                }
            }
            ConnectMode::Prior(found) => stateless::negotiated(&found)
                .map(|init| negotiate::Settled::Stateless(init, Some(found), true)),
        };
        let settled = match settled {
            Ok(settled) => settled,
            Err(e) => {
                peer.close().await;
                return Err(e);
            }
        };
        let init = match settled {
            negotiate::Settled::Stateless(init, discovered, capabilities_known) => {
                peer.unstable_enter_stateless_era();
                list_gate.open(&init.capabilities, Some(&envelope));
                let list_changes = subscriptions::watch_lists(
                    &peer,
                    &envelope,
                    &watched,
                    &init.capabilities,
                    &subscriptions,
                )
                .await;
                return Ok(Client {
                    inner: Arc::new(Inner {
                        peer,
                        init,
                        discovered: discovered.map(|found| *found),
                        capabilities_known,
                        capabilities: declared.modern,
                        claims,
                        info: self.info,
                        elicitations,
                        features,
                        stateless: Some(envelope),
                        log_level: std::sync::Mutex::new(None),
                        requests,
                        middleware: middleware.clone(),
                        subscriptions,
                        watchers,
                        cache,
                        _list_changes: list_changes,
                    }),
                });
            }
            negotiate::Settled::Handshake(init) => init,
        };
        let capabilities = legacy_capabilities;
        list_gate.open(&init.capabilities, None);
        peer.notify::<InitializedNotification>(None).await?;
        self.callbacks.attach(&capabilities, &peer);
        Ok(Client {
            inner: Arc::new(Inner {
                peer,
                init,
                discovered: None,
                capabilities_known: true,
                capabilities,
                claims,
                info: self.info,
                elicitations,
                features,
                stateless: None,
                log_level: std::sync::Mutex::new(None),
                requests,
                middleware,
                subscriptions,
                watchers,
                cache,
                _list_changes: None,
            }),
        })
    }
}

pub(crate) struct ClientService {
    requests: middleware::Handlers,
    /// The layers around `requests`, when the client has any.
    middleware: Option<Arc<middleware::Chain>>,
    /// Open `subscriptions/listen` streams (2026-07-28): their notifications go there.
    subscriptions: subscriptions::Routes,
    /// Open watches of the handshake era: the notifications they asked for go there.
    watchers: subscriptions::Watchers,
    cache: Arc<stateless::Cache>,
    notifications: middleware::NotificationHandlers,
    /// The layers around `notifications`, when the client has any.
    notification_middleware: Option<Arc<middleware::Chain<McpNotification, ()>>>,
    /// Counts the log messages delivered, for calls that wait for them.
    log_order: Arc<ordering::LogOrder>,
    on_error: Option<Arc<ErrorFn>>,
}

impl Service for ClientService {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        middleware::serve(
            self.middleware.as_deref(),
            &self.requests,
            request.method,
            request.params,
            context,
        )
    }

    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        self.cache
            .invalidate(&notification.method, notification.params.as_deref());
        subscriptions::route(&self.subscriptions, &notification);
        subscriptions::route_to_watchers(&self.watchers, &notification);
        self.deliver(notification, peer)
    }

    fn handle_error(self: Arc<Self>, error: ErrorData, peer: Peer) -> BoxFuture<'static, ()> {
        // Called in the future, so the runtime catches a panic of the callback.
        Box::pin(async move {
            if let Some(callback) = &self.on_error {
                callback(error, &peer);
            }
        })
    }
}

impl ClientService {
    /// Hands `notification` to the application's handler for its method, if any.
    pub(crate) fn deliver(
        &self,
        notification: JsonRpcNotification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        let counted = ordering::LogOrder::counts(&notification.method);
        let delivery = middleware::notify(
            self.notification_middleware.as_deref(),
            &self.notifications,
            notification.method,
            notification.params,
            peer,
        );
        if counted {
            self.log_order.deliver(delivery)
        } else {
            delivery
        }
    }
}

/// A connected MCP client. Cheap to clone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_client::{Client, ToolResultExt};
/// use modelctx_server::{NoArgs, Server, ToolDef};
///
/// let server = Server::builder("hello", "1.0.0")
///     .tool(ToolDef::from_fn("hello", |_: NoArgs| async { "hello!" }))?
///     .build();
/// let (client_side, server_side) = modelctx_memory::pair();
/// let _session = server.serve(server_side);
///
/// let client = Client::builder("me", "1.0.0").connect(client_side).await?;
/// let tools = client.list_all_tools().await?;
/// assert_eq!(tools[0].name, "hello");
/// assert_eq!(client.call_tool("hello", ()).await?.text(), "hello!");
/// client.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    peer: Peer,
    init: InitializeResult,
    /// The `server/discover` answer the client connected with, in the stateless era.
    discovered: Option<DiscoverResult>,
    /// False for a pinned client, which knows nothing of the server's capabilities and
    /// so refuses nothing locally for want of one.
    capabilities_known: bool,
    capabilities: ClientCapabilities,
    /// The result types the declared extensions claim (2026-07-28), with resolvers.
    claims: Arc<extensions::Claims>,
    info: Implementation,
    elicitations: Arc<elicitation::Tracker>,
    features: features::FeatureState,
    /// In the stateless era: the envelope every request carries in `_meta`.
    stateless: Option<Meta>,
    /// In the stateless era: the log level `set_logging_level` chose, sent with every
    /// request (`io.modelcontextprotocol/logLevel`).
    log_level: std::sync::Mutex<Option<modelctx_types::LoggingLevel>>,
    /// The handlers of requests from the server, which also answer a server's input
    /// requests in the stateless era.
    requests: middleware::Handlers,
    /// The layers around `requests`, when the client has any.
    middleware: Option<Arc<middleware::Chain>>,
    /// Open `subscriptions/listen` streams.
    subscriptions: subscriptions::Routes,
    /// Open watches of the handshake era.
    watchers: subscriptions::Watchers,
    /// Fresh cacheable answers (2026-07-28 caching hints); shared with the service,
    /// which drops what change notifications make stale.
    cache: Arc<stateless::Cache>,
    /// In the stateless era, the `subscriptions/listen` request that carries the list
    /// changes the application reacts to; dropping the client ends it.
    _list_changes: Option<subscriptions::ListWatch>,
}

modelctx_types::__debug_shows!(Client, |v| {
    server: &v.inner.init.server_info,
    protocol_version: &v.inner.init.protocol_version,
});

impl Client {
    /// Starts describing a client with this name and version.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            info: Implementation::new(name, version),
            capabilities: ClientCapabilities::new(),
            protocol_version: ProtocolVersion::LATEST_HANDSHAKE,
            requests: HashMap::new(),
            notifications: HashMap::new(),
            session: SessionConfig::client(),
            callbacks: callbacks::Callbacks::default(),
            list_changed: list_changed::Reactions::default(),
            mode: ConnectMode::default(),
            versions: None,
            probe_timeout: None,
            tasks: None,
            extensions: Vec::new(),
            on_error: None,
            layers: Vec::new(),
            notification_layers: Vec::new(),
            cache_clock: None,
        }
    }

    /// The server's `initialize` result, whole.
    pub fn initialize_result(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// The server's name, version and title.
    pub fn server_info(&self) -> &Implementation {
        &self.inner.init.server_info
    }

    /// The capabilities the server advertised.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.inner.init.capabilities
    }

    /// The server's instructions, if it gave any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.init.instructions.as_deref()
    }

    /// The `server/discover` answer this client connected with (protocol 2026-07-28),
    /// to keep for a later [`ConnectMode::Prior`] connection that skips the probe.
    pub fn discover_result(&self) -> Option<&DiscoverResult> {
        self.inner.discovered.as_ref()
    }

    /// The negotiated protocol revision.
    pub fn protocol_version(&self) -> &ProtocolVersion {
        &self.inner.init.protocol_version
    }

    /// The capabilities this client declared.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// This client's name, version and title.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The underlying session handle.
    pub fn peer(&self) -> &Peer {
        &self.inner.peer
    }

    /// Sends a typed request and waits for its result. Refused locally when the server
    /// did not advertise the capability the method needs.
    pub async fn request<M: RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        self.request_with::<M>(params, RequestOptions::default())
            .await
    }

    /// Sends a typed request with options (timeout, progress callback, `_meta`).
    pub async fn request_with<M: RequestMethod>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<M::Result, SessionError> {
        if self.inner.stateless.is_some() {
            if self.inner.capabilities_known {
                check_server_capability(self.server_capabilities(), M::METHOD)?;
            }
            return stateless::request::<M>(self, params, options).await;
        }
        self.start_request::<M>(params, options)?.await
    }

    /// Sends a typed request once and returns the server's answer as it came: its
    /// result, or (protocol 2026-07-28, on `tools/call`, `prompts/get` and
    /// `resources/read`) its request for input — for a caller that answers input itself
    /// rather than through the client's callbacks, which [`request_with`](Self::request_with)
    /// uses. To go on, send the same params again with `input_responses` holding the
    /// answers by key and `request_state` echoing the one the answer carried. In the
    /// handshake era input requests arrive as requests from the server instead, and
    /// every answer is complete.
    pub async fn request_round<M: RequestMethod>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<Round<M::Result>, SessionError> {
        if self.inner.stateless.is_some() {
            if self.inner.capabilities_known {
                check_server_capability(self.server_capabilities(), M::METHOD)?;
            }
            return stateless::round::<M>(self, params, options).await;
        }
        Ok(Round::Complete(
            self.start_request::<M>(params, options)?.await?,
        ))
    }

    /// Starts a typed request and returns its cancellable handle.
    pub fn start_request<M: RequestMethod>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<RequestHandle<M::Result>, SessionError> {
        if self.inner.capabilities_known {
            check_server_capability(self.server_capabilities(), M::METHOD)?;
        }
        let options = match self.envelope() {
            Some(envelope) => stateless::with_envelope(options, &envelope),
            None => options,
        };
        Ok(self.inner.peer.start_request::<M>(params, options))
    }

    /// Forgets every cached answer (protocol 2026-07-28 lets a client serve a list or a
    /// resource again until the server's `ttlMs` runs out; a change notification drops
    /// the stale ones by itself). Unstable, with the era.
    #[doc(hidden)]
    pub fn unstable_clear_cache(&self) {
        self.inner.cache.clear();
    }

    /// The stateless era's envelope with the chosen log level, if the client is in it.
    pub(crate) fn envelope(&self) -> Option<Meta> {
        let mut envelope = self.inner.stateless.clone()?;
        if let Some(level) = self
            .inner
            .log_level
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            envelope.set_log_level(level);
        }
        Some(envelope)
    }

    /// Sends a typed notification. Refused locally when it belongs to a capability
    /// this client did not declare.
    pub async fn notify<N: NotificationMethod>(
        &self,
        params: N::Params,
    ) -> Result<(), SessionError> {
        check_client_capability(&self.inner.capabilities, N::METHOD)?;
        self.inner.peer.notify::<N>(params).await
    }

    /// Pings the server. Protocol 2026-07-28 has no ping: the client asks
    /// `server/discover` instead.
    pub async fn ping(&self) -> Result<(), SessionError> {
        if let Some(envelope) = self.envelope() {
            return stateless::discover(&self.inner.peer, &envelope, None)
                .await
                .map(|_| ());
        }
        self.inner.peer.ping().await
    }

    /// Asks the server again what it speaks (`server/discover`, protocol 2026-07-28):
    /// the revisions, capabilities, instructions and identity it offers now, with the
    /// answer's caching hints. Refused locally in a session of the handshake era, which
    /// has no such method.
    pub async fn discover(&self) -> Result<DiscoverResult, SessionError> {
        let Some(envelope) = self.envelope() else {
            return Err(SessionError::refused(
                "server/discover needs protocol 2026-07-28; this session negotiated the handshake era",
            ));
        };
        stateless::discover(&self.inner.peer, &envelope, None).await
    }

    /// Closes the connection; pending requests fail with a connection-closed error.
    pub async fn close(&self) {
        self.inner.peer.close().await;
    }

    /// Resolves when the connection has ended.
    pub async fn closed(&self) {
        self.inner.peer.closed().await;
    }
}

/// Refuses a method whose capability the server did not advertise.
fn check_server_capability(caps: &ServerCapabilities, method: &str) -> Result<(), SessionError> {
    let (area, present) = match method.split('/').next().unwrap_or_default() {
        "tools" => ("tools", caps.tools.is_some()),
        "prompts" => ("prompts", caps.prompts.is_some()),
        "resources" if method == "resources/subscribe" || method == "resources/unsubscribe" => (
            "resources.subscribe",
            caps.resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true)),
        ),
        "resources" => ("resources", caps.resources.is_some()),
        "completion" => ("completions", caps.completions.is_some()),
        "logging" => ("logging", caps.logging.is_some()),
        "tasks" if method == "tasks/list" => (
            "tasks.list",
            caps.tasks.as_ref().is_some_and(|t| t.list.is_some()),
        ),
        "tasks" if method == "tasks/cancel" => (
            "tasks.cancel",
            caps.tasks.as_ref().is_some_and(|t| t.cancel.is_some()),
        ),
        "tasks" => ("tasks", caps.tasks.is_some()),
        _ => return Ok(()),
    };
    if present {
        Ok(())
    } else {
        Err(SessionError::refused(format!(
            "the server did not advertise the {area} capability needed for {method}"
        )))
    }
}

/// Refuses a notification whose capability this client did not declare.
fn check_client_capability(caps: &ClientCapabilities, method: &str) -> Result<(), SessionError> {
    if method == "notifications/roots/list_changed"
        && caps
            .roots
            .as_ref()
            .is_none_or(|r| r.list_changed != Some(true))
    {
        return Err(SessionError::refused(
            "the client did not declare roots.listChanged, needed for notifications/roots/list_changed",
        ));
    }
    Ok(())
}
