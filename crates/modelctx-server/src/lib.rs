//! The server role of modelctx.
//!
//! A typed tool server in a few lines — arguments are a struct whose JSON Schema is
//! generated, the result is structured output with a generated `outputSchema`:
//!
//! ```
//! use modelctx_server::{Context, Json, Server, ToolDef};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     /// The first term.
//!     a: i64,
//!     /// The second term.
//!     b: i64,
//! }
//!
//! let add = ToolDef::new("add", |args: Add, _cx: Context| async move {
//!     Ok::<_, String>(Json(args.a + args.b))
//! });
//! let server = Server::builder("calculator", "1.0.0")
//!     .tool(add.description("Adds two numbers"))?
//!     .build();
//! # assert!(server.capabilities().tools.is_some());
//! # Ok::<(), modelctx_server::RegistrationError>(())
//! ```
//!
//! A [`Server`] is built once and serves any number of sessions, each over its own
//! transport ([`Server::serve`]). It answers `initialize` itself (version negotiation,
//! capabilities derived from what you registered) and every other request from either
//! layer:
//!
//! - **High level** — registries of tools ([`ToolDef`]), resources ([`ResourceDef`]),
//!   URI templates ([`TemplateDef`]), prompts ([`PromptDef`]) and their completion
//!   sources, built without macros. Arguments are validated against generated JSON
//!   Schemas before your function runs; lists are paged with opaque cursors; the
//!   registries can change while clients are connected ([`Server::add_tool`], ...) and
//!   every connected session then gets one debounced `notifications/*/list_changed` per
//!   kind; resource subscriptions are kept per session ([`Server::notify_resource_updated`]);
//!   `logging/setLevel` is honoured per session. A request whose extensions carry
//!   [`modelctx_transport::Permissions`] (an OAuth resource server set to list only
//!   what the caller may use puts one there) is shown only the tools, resources,
//!   templates and prompts they allow.
//! - **Low level** — a typed handler per method ([`ServerBuilder::request_handler`]),
//!   which takes precedence over the registries for that method.
//!
//! Every handler gets a [`Context`]: request id, `_meta`, client info and capabilities,
//! the session, the application state ([`ServerBuilder::state`]), progress, logging
//! helpers per level, and reading the server's own resources.
//!
//! # Capabilities
//!
//! | key | advertised when |
//! |---|---|
//! | `tools` | a tool is registered, [`ServerBuilder::enable_tools`], or a `tools/*` handler |
//! | `resources` | a resource or template is registered, [`ServerBuilder::enable_resources`], or a `resources/*` handler |
//! | `resources.subscribe` | high-level resources (unless [`ServerBuilder::resource_subscriptions`]`(false)`), or a `resources/subscribe` handler |
//! | `prompts` | a prompt is registered, [`ServerBuilder::enable_prompts`], or a `prompts/*` handler |
//! | `*.listChanged` | for kinds served from registries, unless [`ServerBuilder::list_changed`]`(false)`; for every declared kind with `list_changed(true)` |
//! | `completions` | a completion source exists, [`ServerBuilder::enable_completions`], or a `completion/complete` handler |
//! | `logging` | anything high-level is registered, [`ServerBuilder::logging`], or a `logging/setLevel` handler |
//!
//! Capabilities are fixed when the server is built: enable a kind up front when its
//! registry starts empty and fills later.
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `schemars` | yes | schemas derived from Rust types with schemars (2020-12): `ToolDef::new`, `Json` output, `PromptDef::new`, `TemplateDef::new`, `form_schema`, `Context::elicit_form`, `NoArgs`, and the `schemars` re-export |
//! | `schema-validation` | yes | JSON Schema validation with jsonschema (never fetches a remote or file `$ref`): tool arguments against `inputSchema`, `structuredContent` against `outputSchema`, prompt arguments and template variables against their generated schemas; schemas must compile to register |
//!
//! Without `schema-validation` (e.g. `default-features = false`), the server still
//! checks what does not need a JSON Schema engine: tool names, that tool schemas have
//! `"type": "object"`, required prompt arguments, that a tool with an `outputSchema`
//! returns `structuredContent`, and elicitation form answers (checked exactly by
//! [`RequestedSchema::check_answer`](modelctx_types::RequestedSchema::check_answer),
//! which needs no JSON Schema engine). Typed arguments (`ToolDef::new`, prompts,
//! templates) are still checked by decoding them into their Rust type (a failure is an
//! `isError` result for tools, `-32602` otherwise), and typed results are shaped by their
//! types. What it no longer checks: arguments of a [`ToolDef::with_schema`] tool reach
//! the function as sent, and `structuredContent` is not checked against the
//! `outputSchema`; constraints a decode does not see (`minimum`, `pattern`, `format`,
//! ... from `#[schemars(...)]` attributes) are not enforced.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod base64;
mod built_raw;
mod completion;
mod context;
mod context_client;
mod dispatch;
mod mrtr;
mod prompt;
mod registry;
mod rerun;
mod resource;
mod schema;
mod session;
mod stateless;
mod tasks;
mod tool;
mod tool_output;
mod tool_set;
mod uri_template;

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use modelctx_session::tasks::{TASK_METHODS, TaskHost};
use modelctx_session::{Peer, RequestContext, Service, SessionConfig, SessionError, parse_params};
use modelctx_transport::Transport;
use modelctx_types::{
    ClientCapabilities, EmptyResult, ErrorData, Implementation, InitializeRequest,
    InitializeRequestParams, InitializeResult, JsonRpcNotification, JsonRpcRequest, Meta,
    NotificationMethod, ProtocolVersion, RawValue, RequestMethod, ServerCapabilities,
    SetLevelRequestParams, SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult, to_raw,
};

pub use completion::{CompletionInput, IntoCompletion, MAX_COMPLETION_VALUES};
pub use context::Context;
#[cfg(feature = "schemars")]
pub use context_client::form_schema;
pub use context_client::{ClientRequestError, Elicited, FormValues};
pub use modelctx_session::Extensions;
pub use modelctx_session::tasks::{InMemoryTaskStore, TaskConfig, TaskStore};
pub use prompt::{IntoPromptResult, PromptDef};
pub use registry::RegistrationError;
pub use resource::{Blob, IntoContents, ResourceDef, TemplateDef};
#[cfg(feature = "schemars")]
pub use tool::Json;
pub use tool::{IntoToolResult, ToolDef};
pub use tool_output::{IntoToolOutcome, ToolError};
#[doc(hidden)]
pub use tool_set::__private;
pub use tool_set::ToolSet;
pub use uri_template::{MAX_MATCHED_URI, UriTemplate};

/// schemars, re-exported for `#[derive(JsonSchema)]` on argument types. Its derive
/// names the crate as `schemars::...`, resolved where the type is defined: bring this
/// re-export into scope in that module (`use modelctx_server::schemars::{self,
/// JsonSchema};`), or depend on `schemars = "1"` directly; no `#[schemars(crate = ...)]`
/// line is needed either way.
#[cfg(feature = "schemars")]
pub use schemars;

use modelctx_session::announce::AnnouncementBus;
use registry::{Announcer, ListKind, Registry};
use session::SessionState;

/// The error a high-level function may return: anything that converts into a boxed
/// error (`String`, `&str`, any `std::error::Error`). An [`ErrorData`] keeps its code
/// where the failure becomes a JSON-RPC error (resources, prompts, completions).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Turns a function's error into the JSON-RPC error sent for it.
pub(crate) fn into_error_data(error: BoxError, what: &str) -> ErrorData {
    match error.downcast::<ErrorData>() {
        Ok(data) => *data,
        Err(other) => ErrorData::internal_error(format!("{what}: {other}")),
    }
}

/// Arguments of a tool or prompt that takes none.
#[cfg(feature = "schemars")]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

type RequestFn = dyn Fn(Option<Box<RawValue>>, Context) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>>
    + Send
    + Sync;
type NotificationFn = dyn Fn(Option<Box<RawValue>>, Peer) -> BoxFuture<'static, ()> + Send + Sync;
type PeerErrorFn = dyn Fn(ErrorData, &Peer) + Send + Sync;

/// An MCP server: its identity, capabilities, registries and handlers. Cheap to clone;
/// serve it on as many transports as you like.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    info: Implementation,
    /// `info`, encoded once: every result of the stateless era carries it in `_meta`.
    info_json: Arc<RawValue>,
    instructions: Option<String>,
    pub(crate) capabilities: ServerCapabilities,
    requests: HashMap<Cow<'static, str>, Arc<RequestFn>>,
    notifications: HashMap<Cow<'static, str>, Arc<NotificationFn>>,
    session: SessionConfig,
    pub(crate) registry: Registry,
    announcer: Arc<Announcer>,
    pub(crate) state: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) page_size: usize,
    /// Serves the stateless era (2026-07-28) beside the handshake era.
    stateless_era: bool,
    /// Seals the `requestState` of multi round-trip requests (the process's key unless
    /// given).
    state_key: Option<mrtr::StateKey>,
    /// Where the ids of single-use rounds are remembered, when rounds are single-use.
    single_use: Option<Arc<dyn modelctx_transport::SingleUseIds>>,
    /// The caching hints of cacheable results in the 2026-07-28 era.
    cache_hints: stateless::CacheHints,
    /// The envelopes of 2026-07-28 requests read so far, shared by requests that carry
    /// the same (see `stateless::envelope_cached`).
    envelopes: stateless::EnvelopeCache,
    /// Runs task-augmented requests (2025-11-25 tasks), when enabled.
    pub(crate) tasks: Option<Arc<TaskHost>>,
    /// Hears errors a client could not attribute to a request.
    on_peer_error: Option<Arc<PeerErrorFn>>,
    /// The bound on running handlers every session of this server shares.
    handler_limit: Option<modelctx_session::HandlerLimit>,
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
            registry: Registry::default(),
            enabled: Enabled::default(),
            list_changed: None,
            subscriptions: true,
            logging: false,
            page_size: ServerBuilder::DEFAULT_PAGE_SIZE,
            debounce: ServerBuilder::DEFAULT_DEBOUNCE,
            state: None,
            stateless_era: true,
            state_key: None,
            single_use: None,
            cache_hints: stateless::CacheHints::default(),
            tasks: None,
            on_peer_error: None,
            handler_limit: None,
            announcements: None,
            extensions: Vec::new(),
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

    /// Serves one session with explicit session settings. What the transport says of
    /// itself applies on top: a transport whose session starts initialised (stateless
    /// streamable HTTP) is served pre-initialised, and one that cannot carry requests
    /// to the peer is served without outbound requests.
    pub fn serve_with<T: Transport>(&self, transport: T, config: SessionConfig) -> ServerSession {
        let mut config = if self.inner.stateless_era {
            config.unstable_stateless_era(true)
        } else {
            config
        };
        if transport.starts_initialized() {
            config = config.pre_initialized();
        }
        if !transport.allows_outbound_requests() {
            config = config.without_outbound_requests();
        }
        if config.handler_limit.is_none()
            && let Some(limit) = &self.inner.handler_limit
        {
            config = config.handler_limit(limit.clone());
        }
        let state = Arc::new(SessionState::default());
        if let Some(shared) = transport.shared_session() {
            // A request another process stopped running before it answered may run
            // again here only when running it twice is harmless.
            let server = Arc::downgrade(&self.inner);
            shared.on_rerun(Box::new(move |request| rerun::may_rerun(&server, request)));
            match state.share(shared, transport.session_id().as_deref()) {
                session::Resumed::No => {}
                // Another process ran the handshake: this one continues the session.
                session::Resumed::Operational => config = config.pre_initialized(),
                // Another process answered `initialize`: this one refuses requests
                // until the client's `notifications/initialized` arrives, as that one
                // does.
                session::Resumed::AwaitingInitialized => config = config.initialize_answered(),
            }
        }
        let service = Arc::new(SessionService {
            server: self.inner.clone(),
            state: state.clone(),
            tracking: std::sync::OnceLock::new(),
        });
        let peer = modelctx_session::start(transport, service.clone(), config);
        let _ = state.peer.set(peer.clone());
        // Announcements reach the session while its service lives (the runtime drops
        // it when the session ends).
        let _ = service.tracking.set(self.inner.announcer.track(&state));
        ServerSession { peer, state }
    }

    /// Adds a tool while the server runs; connected sessions are told (debounced
    /// `notifications/tools/list_changed`) when `tools.listChanged` was advertised.
    pub fn add_tool(&self, tool: ToolDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_tool(tool)?;
        self.inner.announcer.changed(ListKind::Tools);
        Ok(())
    }

    /// Removes the tool called `name`; returns whether there was one (and then tells
    /// connected sessions, as [`Server::add_tool`] does).
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.inner.registry.remove_tool(name);
        if removed {
            self.inner.announcer.changed(ListKind::Tools);
        }
        removed
    }

    /// Adds a fixed resource while the server runs (announced like [`Server::add_tool`]).
    pub fn add_resource(&self, resource: ResourceDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_resource(resource)?;
        self.inner.announcer.changed(ListKind::Resources);
        Ok(())
    }

    /// Removes the resource at `uri`; returns whether there was one.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self.inner.registry.remove_resource(uri);
        if removed {
            self.inner.announcer.changed(ListKind::Resources);
        }
        removed
    }

    /// Adds a resource template while the server runs (announced as a resources change).
    pub fn add_resource_template(&self, template: TemplateDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_template(template)?;
        self.inner.announcer.changed(ListKind::Resources);
        Ok(())
    }

    /// Removes the template `uri_template`; returns whether there was one.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        let removed = self.inner.registry.remove_template(uri_template);
        if removed {
            self.inner.announcer.changed(ListKind::Resources);
        }
        removed
    }

    /// Adds a prompt while the server runs (announced like [`Server::add_tool`]).
    pub fn add_prompt(&self, prompt: PromptDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_prompt(prompt)?;
        self.inner.announcer.changed(ListKind::Prompts);
        Ok(())
    }

    /// Removes the prompt called `name`; returns whether there was one.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.inner.registry.remove_prompt(name);
        if removed {
            self.inner.announcer.changed(ListKind::Prompts);
        }
        removed
    }

    /// Marks the resource at `uri` changed: every session subscribed to it gets
    /// `notifications/resources/updated` (with [`ServerBuilder::announcements`], those
    /// of other processes too). Returns how many sessions and `subscriptions/listen`
    /// streams of this process were told.
    pub async fn notify_resource_updated(&self, uri: &str) -> usize {
        self.inner.announcer.resource_updated(uri).await
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Enabled {
    tools: bool,
    resources: bool,
    prompts: bool,
    completions: bool,
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    capabilities: Option<ServerCapabilities>,
    requests: HashMap<Cow<'static, str>, Arc<RequestFn>>,
    notifications: HashMap<Cow<'static, str>, Arc<NotificationFn>>,
    session: SessionConfig,
    registry: Registry,
    enabled: Enabled,
    list_changed: Option<bool>,
    subscriptions: bool,
    logging: bool,
    page_size: usize,
    debounce: Duration,
    state: Option<Arc<dyn Any + Send + Sync>>,
    stateless_era: bool,
    state_key: Option<mrtr::StateKey>,
    single_use: Option<Arc<dyn modelctx_transport::SingleUseIds>>,
    cache_hints: stateless::CacheHints,
    tasks: Option<(TaskConfig, Option<Arc<dyn TaskStore>>)>,
    on_peer_error: Option<Arc<PeerErrorFn>>,
    handler_limit: Option<modelctx_session::HandlerLimit>,
    announcements: Option<Arc<dyn AnnouncementBus>>,
    extensions: Vec<(String, modelctx_types::JsonObject)>,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// How many items a list page holds unless [`ServerBuilder::page_size`] says
    /// otherwise.
    pub const DEFAULT_PAGE_SIZE: usize = 100;
    /// How long changes to a registry are gathered into one `list_changed`
    /// announcement unless [`ServerBuilder::list_changed_debounce`] says otherwise.
    pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(20);

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

    /// Advertises exactly these capabilities instead of deriving them (extensions
    /// declared with [`ServerBuilder::extension`] are added to them).
    #[must_use]
    pub fn capabilities(mut self, capabilities: ServerCapabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// Declares the extension `id` (SEP-2133) with these settings under the
    /// capabilities' `extensions`, on top of the derived (or explicit) capabilities, in
    /// both eras: `initialize` and `server/discover` show it. The extension's methods
    /// are served by [`request_handler`](Self::request_handler)s. A later declaration of
    /// the same identifier replaces an earlier one.
    ///
    /// ```
    /// use modelctx_server::Server;
    ///
    /// let server = Server::builder("demo", "1.0.0")
    ///     .extension("com.example/widgets", Default::default())
    ///     .build();
    /// let extensions = server.capabilities().extensions.as_ref().unwrap();
    /// assert!(extensions.contains_key("com.example/widgets"));
    /// ```
    #[must_use]
    pub fn extension(
        mut self,
        id: impl Into<String>,
        settings: modelctx_types::JsonObject,
    ) -> Self {
        let id = id.into();
        self.extensions.retain(|(known, _)| *known != id);
        self.extensions.push((id, settings));
        self
    }

    /// Bounds the handlers running at once across every session this server serves
    /// (each session also keeps its own bound,
    /// [`SessionConfig::max_concurrent_requests`]): beyond it a request waits for a
    /// slot, so one busy or flooding client cannot take more than its own bound of the
    /// server's work. Unbounded across sessions unless set; a session whose
    /// [`SessionConfig`] brings its own [`HandlerLimit`](modelctx_session::HandlerLimit)
    /// keeps that one.
    #[must_use]
    pub fn max_concurrent_handlers(mut self, n: usize) -> Self {
        self.handler_limit = Some(modelctx_session::HandlerLimit::new(n));
        self
    }

    /// Sets the session settings used by [`Server::serve`].
    #[must_use]
    pub fn session_config(mut self, config: SessionConfig) -> Self {
        self.session = config;
        self
    }

    /// Registers a tool. Refused when the name is taken or breaks the naming rules
    /// (1–128 characters of `A-Z a-z 0-9 _ - .`), or a schema does not compile.
    pub fn tool(self, tool: ToolDef) -> Result<Self, RegistrationError> {
        self.registry.add_tool(tool)?;
        Ok(self)
    }

    /// Registers several tools in one call: a `Vec` or array of [`ToolDef`]s, or the
    /// `#[tool]` methods of a type whose `impl` block carries `#[tools]` (feature
    /// `macros` of the `modelctx` facade). Refused at the first tool
    /// [`ServerBuilder::tool`] would refuse.
    pub fn tools(mut self, tools: impl ToolSet) -> Result<Self, RegistrationError> {
        for tool in tools.into_tool_defs() {
            self = self.tool(tool)?;
        }
        Ok(self)
    }

    /// Registers a resource at a fixed URI. Refused when the URI is taken.
    pub fn resource(self, resource: ResourceDef) -> Result<Self, RegistrationError> {
        self.registry.add_resource(resource)?;
        Ok(self)
    }

    /// Registers a resource template. Refused when the template is taken or malformed.
    pub fn resource_template(self, template: TemplateDef) -> Result<Self, RegistrationError> {
        self.registry.add_template(template)?;
        Ok(self)
    }

    /// Registers a prompt. Refused when the name is taken.
    pub fn prompt(self, prompt: PromptDef) -> Result<Self, RegistrationError> {
        self.registry.add_prompt(prompt)?;
        Ok(self)
    }

    /// Advertises `tools` even while no tool is registered (for tools added later).
    #[must_use]
    pub fn enable_tools(mut self) -> Self {
        self.enabled.tools = true;
        self
    }

    /// Advertises `resources` even while none is registered.
    #[must_use]
    pub fn enable_resources(mut self) -> Self {
        self.enabled.resources = true;
        self
    }

    /// Advertises `prompts` even while none is registered.
    #[must_use]
    pub fn enable_prompts(mut self) -> Self {
        self.enabled.prompts = true;
        self
    }

    /// Advertises `completions` even while no completion source exists.
    #[must_use]
    pub fn enable_completions(mut self) -> Self {
        self.enabled.completions = true;
        self
    }

    /// Advertises `logging` (implied by any high-level registration).
    #[must_use]
    pub fn logging(mut self) -> Self {
        self.logging = true;
        self
    }

    /// Whether `tools`, `resources` and `prompts` advertise `listChanged` (and registry
    /// changes are announced). By default the kinds served from registries do and
    /// those served only by low-level handlers do not; this sets it for every kind
    /// declared (low-level handlers then send the notifications themselves).
    #[must_use]
    pub fn list_changed(mut self, enabled: bool) -> Self {
        self.list_changed = Some(enabled);
        self
    }

    /// How long registry changes are gathered into one announcement per kind.
    #[must_use]
    pub fn list_changed_debounce(mut self, window: Duration) -> Self {
        self.debounce = window;
        self
    }

    /// Publishes this server's list changes and resource updates on `bus`, and tells
    /// its sessions and `subscriptions/listen` streams about those other processes
    /// publish there: what several processes serving one endpoint need (modelctx-redis
    /// has a bus on Redis pub/sub). Without one (the default), a change reaches this
    /// process's sessions only.
    ///
    /// A list change is published once per kind and debounce window; each process then
    /// announces it to its own sessions after its own window. [`Server::notify_resource_updated`]
    /// publishes at once and counts only the sessions of this process.
    #[must_use]
    pub fn announcements(mut self, bus: Arc<dyn AnnouncementBus>) -> Self {
        self.announcements = Some(bus);
        self
    }

    /// Whether high-level resources advertise and serve subscriptions (default: yes).
    #[must_use]
    pub fn resource_subscriptions(mut self, enabled: bool) -> Self {
        self.subscriptions = enabled;
        self
    }

    /// How many items each page of a list holds (at least 1).
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Shares application state with every handler ([`Context::state`]).
    #[must_use]
    pub fn state<T: Any + Send + Sync>(mut self, state: T) -> Self {
        self.state = Some(Arc::new(state));
        self
    }

    /// Registers the handler of request method `M`. Its params arrive decoded (a
    /// mismatch is answered `-32602`); its result is encoded as `M::Result`. It takes
    /// precedence over the registries for that method.
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
                let params = cx
                    .request
                    .unstable_parse_params::<M::Params>(params.as_deref(), M::UNSTABLE_META_SLOT)?;
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

    /// Hears every error response a client sends without a request id (`"id": null`):
    /// the client reporting a failure it could not attribute to a request, such as a
    /// message from this server it could not parse. Without it such errors are dropped
    /// (they answer no request, and are never answered). It also hears every response
    /// from the client that could not be read, as a `-32603` naming the request it
    /// answered (which has already failed) and what was wrong. The callback runs in
    /// arrival order with the session's notifications, with the session's peer; it
    /// must not block.
    #[must_use]
    pub fn on_peer_error<F>(mut self, callback: F) -> Self
    where
        F: Fn(ErrorData, &Peer) + Send + Sync + 'static,
    {
        self.on_peer_error = Some(Arc::new(callback));
        self
    }

    /// Whether the server also serves protocol 2026-07-28, the stateless era, from the
    /// same handlers (on by default): a request that carries the era's envelope in
    /// `_meta` needs no handshake and is served on its own; `server/discover` says what
    /// the server speaks; a handler that asks the client for input (elicitation,
    /// sampling, roots) ends the round with an input-required result and runs again on
    /// the client's retry with the answers. Clients of the handshake era see no
    /// difference. Off: the server answers only the handshake era.
    #[must_use]
    pub fn stateless_era(mut self, on: bool) -> Self {
        self.stateless_era = on;
        self
    }

    /// The key that seals the `requestState` of requests that ask the client for input
    /// in rounds (protocol 2026-07-28): every process serving one endpoint must use the
    /// same key, since a retry may reach any of them. Without it, each process draws a
    /// random key of its own.
    #[must_use]
    pub fn request_state_key(mut self, key: [u8; 32]) -> Self {
        self.state_key = Some(mrtr::StateKey::new(key));
        self
    }

    /// The caching hints of this server's cacheable results in protocol 2026-07-28
    /// (`server/discover`, the four lists, `resources/read`) when a handler does not set
    /// its own: how long a client may keep one (`ttl`, in whole milliseconds) and who
    /// may share it. The default, `0` and `private`, lets nothing be served stale or
    /// shared. A tool, prompt, resource or template may carry hints of its own
    /// ([`ToolDef::cache_hints`] and the like), which win for the lists it is in and the
    /// reads it serves.
    #[must_use]
    pub fn cache_hints(mut self, ttl: Duration, scope: modelctx_types::CacheScope) -> Self {
        self.cache_hints = stateless::CacheHints::new(ttl, scope);
        self
    }

    /// Runs task-augmented `tools/call` (the tasks utility of protocol 2025-11-25) for
    /// tools whose [`ToolDef::task_support`] allows it, keeping tasks in a bounded
    /// [`InMemoryTaskStore`] unless [`ServerBuilder::task_store`] gives another; declares
    /// `tasks` (`list`, `cancel`, `requests.tools.call`) and answers `tasks/get`,
    /// `tasks/result`, `tasks/list` and `tasks/cancel`.
    ///
    /// A tool run as a task is the same function as in a plain call: its context's
    /// [`Context::task_id`] is set, its requests to the client (sampling, elicitation,
    /// roots) go through the task's side channel, and its cancellation is the task's.
    /// Tasks are bound to the authenticated caller when there is one
    /// ([`modelctx_transport::Principal`]), else to the session (protocol 2025-11-25 on
    /// a transport with sessions); a task created with neither (every unauthenticated
    /// request of protocol 2026-07-28, and of a stateless transport) is reachable only
    /// through its id (128 bits from the system's CSPRNG), by a requestor without
    /// principal or session, and is listed to no one: `tasks/list` shows a requestor
    /// only its own tasks, and a task it may not reach is answered as an unknown id
    /// (see [`TaskOwner`](modelctx_session::tasks::TaskOwner)).
    #[must_use]
    pub fn tasks(mut self, config: TaskConfig) -> Self {
        let store = self.tasks.take().and_then(|(_, store)| store);
        self.tasks = Some((config, store));
        self
    }

    /// Keeps tasks in `store` (shared by several processes, say) and enables them as
    /// [`ServerBuilder::tasks`] does, with its configuration or the default one.
    #[must_use]
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        let config = self
            .tasks
            .take()
            .map(|(config, _)| config)
            .unwrap_or_default();
        self.tasks = Some((config, Some(store)));
        self
    }

    /// Builds the server.
    pub fn build(mut self) -> Server {
        let mut capabilities = self.capabilities.clone().unwrap_or_else(|| self.derive());
        for (id, settings) in std::mem::take(&mut self.extensions) {
            capabilities = capabilities.with_extension(id, settings);
        }
        let listed = |c: Option<Option<bool>>| c.flatten() == Some(true);
        let enabled = [
            listed(capabilities.tools.as_ref().map(|c| c.list_changed)),
            listed(capabilities.resources.as_ref().map(|c| c.list_changed)),
            listed(capabilities.prompts.as_ref().map(|c| c.list_changed)),
        ];
        Server {
            inner: Arc::new(Inner {
                // Names and versions are strings: encoding them cannot fail.
                info_json: Arc::from(
                    to_raw(&self.info).unwrap_or_else(|_| RawValue::NULL.to_owned()),
                ),
                info: self.info,
                instructions: self.instructions,
                capabilities,
                requests: self.requests,
                notifications: self.notifications,
                session: self.session,
                registry: self.registry,
                announcer: Announcer::new(self.debounce, enabled, self.announcements),
                state: self.state,
                page_size: self.page_size,
                stateless_era: self.stateless_era,
                state_key: self.state_key,
                single_use: self.single_use,
                cache_hints: self.cache_hints,
                envelopes: stateless::EnvelopeCache::default(),
                tasks: self.tasks.map(|(config, store)| {
                    let store = store.unwrap_or_else(|| Arc::new(InMemoryTaskStore::default()));
                    TaskHost::new(store, config)
                }),
                on_peer_error: self.on_peer_error,
                handler_limit: self.handler_limit,
            }),
        }
    }

    /// The capabilities of the handlers and registries.
    fn derive(&self) -> ServerCapabilities {
        let mut caps = derive_capabilities(self.requests.keys().map(|k| k.as_ref()));
        let registry = &self.registry;
        let has = |n: usize| n > 0;
        let tools = self.enabled.tools || has(registry::snapshot(&registry.tools).len());
        let resources = self.enabled.resources
            || has(registry::snapshot(&registry.resources).len())
            || has(registry::snapshot(&registry.templates).len());
        let prompts = self.enabled.prompts || has(registry::snapshot(&registry.prompts).len());
        let list_changed = self.list_changed.unwrap_or(true);
        if tools {
            caps = caps.with_tools(list_changed);
        }
        if resources {
            let subscribe = self.subscriptions || self.requests.contains_key("resources/subscribe");
            caps = caps.with_resources(subscribe, list_changed);
        }
        if prompts {
            caps = caps.with_prompts(list_changed);
        }
        if let Some(explicit) = self.list_changed {
            if let Some(c) = caps.tools.as_mut() {
                c.list_changed = Some(explicit);
            }
            if let Some(c) = caps.resources.as_mut() {
                c.list_changed = Some(explicit);
            }
            if let Some(c) = caps.prompts.as_mut() {
                c.list_changed = Some(explicit);
            }
        }
        if self.enabled.completions || registry.has_completions() {
            caps = caps.with_completions();
        }
        if self.logging || tools || resources || prompts {
            caps = caps.with_logging();
        }
        if self.tasks.is_some() {
            caps = caps.with_tool_tasks();
            if !tools && let Some(tasks) = caps.tasks.as_mut() {
                // Nothing to run as a task yet, but the task methods are there.
                tasks.requests = None;
            }
        }
        caps
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

/// The session-side service: one per session, sharing the server's handlers and
/// registries, holding the session's own state.
struct SessionService {
    server: Arc<Inner>,
    state: Arc<SessionState>,
    /// The session's place among the announcer's live sessions, left with the service.
    tracking: std::sync::OnceLock<registry::Tracking>,
}

impl SessionService {
    fn initialize(&self, params: InitializeRequestParams) -> InitializeResult {
        let version = ProtocolVersion::negotiate(&params.protocol_version);
        let _ = self.state.info.set(params.client_info);
        let _ = self.state.capabilities.set(params.capabilities);
        let _ = self.state.protocol_version.set(version.clone());
        let mut result = InitializeResult::new(
            version,
            self.server.capabilities.clone(),
            self.server.info.clone(),
        );
        result.instructions = self.server.instructions.clone();
        result
    }

    /// `logging/setLevel`: an unknown level is `-32602`; a known one becomes the
    /// session's minimum, then the low-level handler (if any) sees the request too.
    fn set_level(
        &self,
        params: Option<Box<RawValue>>,
        cx: Context,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        let parsed = parse_params::<SetLevelRequestParams>(params.as_deref()).and_then(|p| {
            if p.level.severity().is_some() {
                Ok(p)
            } else {
                Err(ErrorData::invalid_params(format!(
                    "Invalid log level {:?}: expected one of debug, info, notice, warning, error, critical, alert, emergency",
                    p.level.as_str()
                )))
            }
        });
        let handler = self.server.requests.get("logging/setLevel").cloned();
        let state = self.state.clone();
        Box::pin(async move {
            let level = parsed?.level;
            state.set_log_level(level);
            if let Some(saving) = state.save() {
                saving.await?;
            }
            match handler {
                Some(handler) => handler(params, cx).await,
                None => to_raw(&EmptyResult::new())
                    .map_err(|e| ErrorData::internal_error(e.to_string())),
            }
        })
    }
}

/// Runs a handler that may ask for input: its own answer, unless it asks for input it
/// does not have (or is refused for good) first — then the round ends with what it asked
/// for (every input asked concurrently, in one round) or the refusal.
///
/// A call that may become a task (`escalation`, the tasks extension) becomes one when
/// it has run the escalation's window without answering or asking for input.
async fn run_round(
    answer: BoxFuture<'static, Result<Box<RawValue>, ErrorData>>,
    round: &mrtr::Round,
    key: &mrtr::StateKey,
    escalation: Option<tasks::Escalation>,
) -> Result<Box<RawValue>, ErrorData> {
    let mut answer = answer;
    let escalation = match escalation {
        Some(escalation) if escalation.window.is_zero() => {
            return escalation.start(answer).await;
        }
        other => other,
    };
    let window = escalation.as_ref().map(|e| e.window);
    let finished = tokio::select! {
        biased;
        result = &mut answer => Some(result),
        () = round.wake.notified() => None,
        () = async {
            match window {
                Some(window) => tokio::time::sleep(window).await,
                None => std::future::pending().await,
            }
        } => {
            return match escalation {
                Some(escalation) => escalation.start(answer).await,
                None => answer.await,
            };
        }
    };
    let finished = match finished {
        Some(result) => Some(result),
        // Inputs asked for concurrently register in the same poll; one more poll lets
        // a handler that finishes anyway do so.
        None => match futures::poll!(&mut answer) {
            std::task::Poll::Ready(result) => Some(result),
            std::task::Poll::Pending => None,
        },
    };
    match finished {
        Some(result) => match round.fatal() {
            Some(error) => Err(error),
            None => result,
        },
        None if round.must_end() => round.end(key, SystemTime::now()),
        // Woken without anything to end with: cannot happen (every wake follows an
        // ask or a refusal), but the handler's answer is still the answer.
        None => answer.await,
    }
}

impl SessionService {
    /// The answer to `method` in either era: its low-level handler, else the
    /// registries' built-in answer, else method not found.
    fn serve(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        cx: Context,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        if let Some(handler) = self.server.requests.get(method) {
            return handler(params, cx);
        }
        match dispatch::builtin(method, params, cx) {
            Some(answer) => answer,
            None => {
                let error = ErrorData::method_not_found(method);
                Box::pin(async move { Err(error) })
            }
        }
    }

    /// `subscriptions/listen` (protocol 2026-07-28): acknowledges with the filter, then
    /// sends the changes it asks for, each tagged with the subscription's id (the
    /// request's id), on the request's own stream until the client closes it (which
    /// cancels the request: no answer follows) or the stream breaks.
    ///
    /// With the tasks extension, `taskIds` asks for `notifications/tasks` (the task as
    /// `tasks/get` would show it) at every change of those tasks the caller may see; the
    /// acknowledgement lists the ones accepted. Asking without declaring the extension
    /// is `-32021`.
    fn listen(
        &self,
        params: Option<Box<RawValue>>,
        context: &RequestContext,
        declares_tasks: bool,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        let params = match parse_params::<SubscriptionsListenRequestParams>(params.as_deref()) {
            Ok(params) => params,
            Err(error) => return Box::pin(async move { Err(error) }),
        };
        let mut filter = params.notifications;
        let host = match (&filter.task_ids, &self.server.tasks) {
            (Some(_), Some(_)) if !declares_tasks => {
                let error = tasks::missing_extension();
                return Box::pin(async move { Err(error) });
            }
            (Some(_), Some(host)) => Some(host.clone()),
            (Some(_), None) => {
                // No tasks here: none to watch, and the acknowledgement says so.
                filter.task_ids = None;
                None
            }
            (None, _) => None,
        };
        let owner = tasks::owner(context, &self.state);
        let id = context.request_id().clone();
        let peer = context.peer().clone();
        let cancelled = context.cancellation().clone();
        let announcer = self.server.announcer.clone();
        Box::pin(async move {
            let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
            let _listening = announcer.listen(filter.clone(), tx);
            let mut task_changes = host.as_ref().map(|h| h.watch());
            let mut watched = std::collections::HashSet::new();
            if let (Some(host), Some(ids)) = (&host, filter.task_ids.as_mut()) {
                let mut accepted = Vec::new();
                for task in ids.drain(..) {
                    if host.get(&owner, &task).await.is_ok() {
                        watched.insert(task.clone());
                        accepted.push(task);
                    }
                }
                *ids = accepted;
            }
            let mut tag = Meta::new();
            tag.set_subscription_id(&id);
            let ack = SubscriptionsAcknowledgedNotificationParams::new(filter).with_meta(tag);
            peer.notify::<SubscriptionsAcknowledgedNotification>(ack)
                .await
                .map_err(|e| e.to_error_data())?;
            loop {
                let change = tokio::select! {
                    () = cancelled.cancelled() => {
                        return Err(ErrorData::internal_error("the subscription was cancelled"));
                    }
                    change = changes.recv() => change,
                    task = async {
                        match task_changes.as_mut() {
                            Some(rx) => rx.recv().await,
                            None => std::future::pending().await,
                        }
                    } => {
                        let (Ok(task), Some(host)) = (task, &host) else { continue };
                        if !watched.contains(&task) {
                            continue;
                        }
                        let Ok(detailed) = host.detailed(&owner, &task).await else { continue };
                        let mut params = serde_json::to_value(&detailed)
                            .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                        params["_meta"] = serde_json::json!({ Meta::SUBSCRIPTION_ID: &id });
                        let params = to_raw(&params)
                            .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                        let method = <modelctx_types::ext_tasks::TaskNotification as
                            modelctx_types::NotificationMethod>::METHOD;
                        if peer.notify_raw(Cow::Borrowed(method), Some(params)).await.is_err() {
                            break;
                        }
                        continue;
                    }
                };
                let Some(change) = change else { break };
                let tag = serde_json::json!({ Meta::SUBSCRIPTION_ID: &id });
                let (method, params) = match change {
                    registry::Change::List(kind) => (
                        match kind {
                            registry::ListKind::Tools => "notifications/tools/list_changed",
                            registry::ListKind::Prompts => "notifications/prompts/list_changed",
                            registry::ListKind::Resources => "notifications/resources/list_changed",
                        },
                        serde_json::json!({ "_meta": tag }),
                    ),
                    registry::Change::Resource(uri) => (
                        "notifications/resources/updated",
                        serde_json::json!({ "uri": uri, "_meta": tag }),
                    ),
                };
                let params =
                    to_raw(&params).map_err(|e| ErrorData::internal_error(e.to_string()))?;
                if peer
                    .notify_raw(Cow::Borrowed(method), Some(params))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            to_raw(&SubscriptionsListenResult::new(id))
                .map_err(|e| ErrorData::internal_error(e.to_string()))
        })
    }

    /// A `tools/call` over HTTP: the tool's `x-mcp-header` arguments against the
    /// request's `Mcp-Param-*` headers. Only the tool's name is read unless the tool
    /// marks arguments (most tools do not, and a low-level handler's tool is in no
    /// registry).
    fn check_param_headers(
        &self,
        params: Option<&RawValue>,
        mirrored: &[(String, String)],
    ) -> Result<(), ErrorData> {
        #[derive(serde::Deserialize)]
        struct Name<'a> {
            #[serde(borrow)]
            name: Cow<'a, str>,
        }
        #[derive(serde::Deserialize)]
        struct Arguments {
            arguments: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let Some(params) = params else {
            return Ok(());
        };
        // Most servers have no tool that marks arguments: then nothing is read (a pass
        // over the params costs more than a look at every tool).
        let marking = self
            .server
            .registry
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .any(|tool| !tool.mirrored.is_empty());
        if !marking {
            return Ok(());
        }
        // Malformed params are the handler's to refuse.
        let Ok(call) = serde_json::from_str::<Name<'_>>(params.get()) else {
            return Ok(());
        };
        let Some(tool) = registry::lookup(&self.server.registry.tools, &call.name) else {
            return Ok(());
        };
        if tool.mirrored.is_empty() {
            return Ok(());
        }
        let Ok(call) = serde_json::from_str::<Arguments>(params.get()) else {
            return Ok(());
        };
        stateless::check_param_headers(&tool.mirrored, call.arguments.as_ref(), mirrored)
    }

    /// The key that seals this server's `requestState`.
    fn state_key(&self) -> Result<mrtr::StateKey, ErrorData> {
        self.server
            .state_key
            .clone()
            .or_else(mrtr::StateKey::process)
            .ok_or_else(|| {
                ErrorData::internal_error("no randomness available for the requestState key")
            })
    }

    /// A request of the stateless era: its envelope checked, the era's own methods
    /// answered here, every other one served by the same handlers as in a session, and
    /// the answer finished for the era.
    fn stateless(
        self: Arc<Self>,
        request: JsonRpcRequest,
        context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        // Taken apart, not cloned: the method's name is owned text.
        let JsonRpcRequest {
            method,
            params: request_params,
            ..
        } = request;
        if let Some(host) = self.server.tasks.clone()
            && matches!(
                method.as_ref(),
                "tasks/get" | "tasks/update" | "tasks/cancel"
            )
        {
            let envelope = match stateless::envelope_cached(
                &self.server.envelopes,
                context.unstable_shared_meta(),
                context.unstable_meta_text(),
                || context.meta(),
            ) {
                Ok(envelope) => envelope,
                Err(error) => return Box::pin(async move { Err(error) }),
            };
            let owner = tasks::owner(&context, &self.state);
            let cx = Context::new(context, self.state.clone(), self.server.clone())
                .in_stateless_era(envelope);
            let answer = tasks::serve_extension(host, &method, request_params, owner, &cx);
            let info = self.server.info_json.clone();
            let hints = self.server.cache_hints.clone();
            return Box::pin(async move {
                match answer.await {
                    Ok(raw) => stateless::finish_result(&method, &raw, &info, &hints),
                    Err(error) => Err(stateless::finish_error(error)),
                }
            });
        }
        if stateless::removed(&method) {
            let error = ErrorData::method_not_found(&method);
            return Box::pin(async move { Err(error) });
        }
        let envelope = match stateless::envelope_cached(
            &self.server.envelopes,
            context.unstable_shared_meta(),
            context.unstable_meta_text(),
            || context.meta(),
        ) {
            Ok(envelope) => envelope,
            Err(error) => return Box::pin(async move { Err(error) }),
        };
        let info = self.server.info_json.clone();
        if method == "server/discover" {
            let hints = &self.server.cache_hints;
            let mut capabilities = self.server.capabilities.clone();
            if capabilities.tasks.take().is_some() {
                // The era's tasks are the extension's, not the 2025-11-25 utility's.
                capabilities = capabilities
                    .with_extension(modelctx_types::ext_tasks::EXTENSION_ID, Default::default());
            }
            let result =
                stateless::discover(&capabilities, self.server.instructions.as_deref(), hints)
                    .and_then(|raw| stateless::finish_result(&method, &raw, &info, hints));
            return Box::pin(async move { result });
        }
        if method == "subscriptions/listen" {
            let declares = envelope
                .capabilities
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(modelctx_types::ext_tasks::EXTENSION_ID));
            return self.listen(request_params, &context, declares);
        }
        let mut cx = Context::new(context, self.state.clone(), self.server.clone())
            .in_stateless_era(envelope);
        let mut params = request_params;
        let mut round = None;
        if mrtr::METHODS.contains(&method.as_ref()) {
            let opened = self.state_key().and_then(|key| {
                let mut split = mrtr::split(&method, params.take())?;
                let opened = mrtr::Round::open(&key, &method, &mut split, SystemTime::now())?
                    .single_use(self.server.single_use.clone());
                Ok((key, split.params, Arc::new(opened)))
            });
            match opened {
                Ok((key, own, opened)) => {
                    params = own;
                    cx = cx.in_round(opened.clone());
                    round = Some((key, opened));
                }
                Err(error) => return Box::pin(async move { Err(error) }),
            }
        }
        if method == "tools/call"
            && let Some(mirrored) = cx.request.mirrored_params()
            && let Err(error) = self.check_param_headers(params.as_deref(), mirrored)
        {
            return Box::pin(async move { Err(error) });
        }
        let mut escalation = None;
        if method == "tools/call" {
            match tasks::extension_mode(&cx, params.as_deref()) {
                Err(error) => return Box::pin(async move { Err(error) }),
                Ok(None) => {}
                Ok(Some(window)) => {
                    if let Some(host) = self.server.tasks.clone() {
                        let slot = Arc::new(context::Escalating::default());
                        cx = cx.escalating(slot.clone());
                        escalation = Some(tasks::Escalation {
                            host,
                            owner: tasks::owner(&cx.request, &self.state),
                            slot,
                            window,
                        });
                    }
                }
            }
        }
        let answer = self.serve(&method, params, cx);
        let hints = self.server.cache_hints.clone();
        Box::pin(async move {
            let outcome = match round {
                None => answer.await,
                Some((key, round)) => match round.claim().await {
                    Ok(()) => run_round(answer, &round, &key, escalation).await,
                    Err(error) => Err(error),
                },
            };
            match outcome {
                Ok(raw) => stateless::finish_result(&method, &raw, &info, &hints),
                Err(error) => Err(stateless::finish_error(error)),
            }
        })
    }
}

impl Service for SessionService {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        // The session enters the era only when its config lets it (which the server's
        // switch sets, and a caller of `serve_with` may set too).
        if context.peer().is_stateless_era() {
            return self.stateless(request, context);
        }
        if request.method == <InitializeRequest as RequestMethod>::METHOD {
            let result = parse_params::<InitializeRequestParams>(request.params.as_deref())
                .map(|params| self.initialize(params))
                .and_then(|r| to_raw(&r).map_err(|e| ErrorData::internal_error(e.to_string())));
            // A shared session is stored before the answer goes out: the client's next
            // request may land on another process.
            let saving = result.is_ok().then(|| self.state.save()).flatten();
            return Box::pin(async move {
                if let Some(saving) = saving {
                    saving.await?;
                }
                result
            });
        }
        let handled_here = |m: &str| !self.server.requests.contains_key(m);
        if let Some(host) = &self.server.tasks
            && self.server.capabilities.tasks.is_some()
        {
            let method = request.method.as_ref();
            if TASK_METHODS.contains(&method) && handled_here(method) {
                let owner = tasks::owner(&context, &self.state);
                let peer = context.peer().clone();
                return match host.serve(method, request.params, owner, peer) {
                    Some(answer) => answer,
                    None => {
                        let error = ErrorData::method_not_found(method);
                        Box::pin(async move { Err(error) })
                    }
                };
            }
            let tool_tasks = self
                .server
                .capabilities
                .tasks
                .as_ref()
                .and_then(|t| t.requests.as_ref())
                .and_then(|r| r.tools.as_ref())
                .is_some_and(|t| t.call.is_some());
            if method == "tools/call" && tool_tasks && handled_here(method) {
                let owner = tasks::owner(&context, &self.state);
                let cx = Context::new(context, self.state.clone(), self.server.clone());
                let service = self.clone();
                return tasks::call_tool(host.clone(), owner, request.params, cx, move |p, cx| {
                    service.serve("tools/call", p, cx)
                });
            }
        }
        let cx = Context::new(context, self.state.clone(), self.server.clone());
        if request.method == "logging/setLevel" && self.server.capabilities.logging.is_some() {
            return self.set_level(request.params, cx);
        }
        self.serve(&request.method, request.params, cx)
    }

    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        if notification.method == "notifications/initialized" {
            self.state.initialized.cancel();
        }
        match self.server.notifications.get(notification.method.as_ref()) {
            Some(handler) => handler(notification.params, peer),
            None => Box::pin(async {}),
        }
    }

    fn handle_peer_error(self: Arc<Self>, error: ErrorData, peer: Peer) -> BoxFuture<'static, ()> {
        // Called in the future, so the runtime catches a panic of the callback.
        Box::pin(async move {
            if let Some(callback) = &self.server.on_peer_error {
                callback(error, &peer);
            }
        })
    }
}

/// One served session: the handle to talk to that client and watch the session.
#[derive(Debug, Clone)]
pub struct ServerSession {
    peer: Peer,
    state: Arc<SessionState>,
}

impl ServerSession {
    /// The session's peer (the client).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The client's name, version and title, once initialised.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.state.info.get()
    }

    /// The capabilities the client declared, once initialised.
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.state.capabilities.get()
    }

    /// The negotiated protocol revision, once initialised.
    pub fn protocol_version(&self) -> Option<&ProtocolVersion> {
        self.state.protocol_version.get()
    }

    /// Whether the client completed the handshake.
    pub fn is_initialized(&self) -> bool {
        self.peer.is_initialized()
    }

    /// Resolves once the client sent `notifications/initialized`.
    pub async fn initialized(&self) {
        self.state.initialized.cancelled().await;
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

    /// Whether the client is subscribed to updates of `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.state.is_subscribed(uri)
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
