//! Building a [`Server`]: its identity, registrations, handlers and settings, and the
//! capabilities derived from them.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use modelctx_session::announce::AnnouncementBus;
#[cfg(feature = "tasks")]
use modelctx_session::tasks::{InMemoryTaskStore, TaskConfig, TaskHost, TaskStore};
use modelctx_session::{Peer, SessionConfig, encode_result, notification_fn};
use modelctx_store::SingleUseIds;
use modelctx_types::{
    ErrorData, Implementation, NotificationMethod, ProtocolVersion, RawValue, RequestMethod,
    ServerCapabilities, to_raw,
};

use crate::inner::{ErrorFn, Inner, NotificationFn, RequestFn, Server, encode_initialize_result};
use crate::middleware::{self, McpNotification, McpRequest, Next, NotificationNext};
use crate::mrtr;
use crate::prompt::PromptDef;
use crate::registry::{self, Announcer, RegistrationError, Registry};
use crate::request::Context;
use crate::resource::{ResourceDef, TemplateDef};
use crate::stateless;
use crate::tool::ToolDef;
use crate::tool_set::ToolSet;

#[derive(Debug, Default, Clone, Copy)]
struct Enabled {
    tools: bool,
    resources: bool,
    prompts: bool,
    completions: bool,
}

/// Builds a [`Server`].
///
/// Capabilities follow from what is registered; `build` gives the [`Server`].
///
/// ```
/// use modelctx_server::{NoArgs, Server, ToolDef};
///
/// let server = Server::builder("notes", "1.0.0")
///     .title("Notes")
///     .instructions("Keeps short notes.")
///     .logging()
///     .tool(ToolDef::from_fn("count", |_: NoArgs| async { 3u32 }))?
///     .build();
/// assert!(server.capabilities().tools.is_some());
/// assert!(server.capabilities().prompts.is_none());
/// # Ok::<(), modelctx_server::RegistrationError>(())
/// ```
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
    versions: Option<Vec<ProtocolVersion>>,
    state_key: Option<mrtr::StateKey>,
    state_lifetime: std::time::Duration,
    single_use: Option<Arc<dyn modelctx_store::SingleUseIds>>,
    cache_hints: stateless::CacheHints,
    max_subscriptions: Option<usize>,
    #[cfg(feature = "tasks")]
    tasks: Option<(TaskConfig, Option<Arc<dyn TaskStore>>)>,
    on_error: Option<Arc<ErrorFn>>,
    handler_limit: Option<modelctx_session::HandlerLimit>,
    announcements: Option<Arc<dyn AnnouncementBus>>,
    extensions: Vec<(String, modelctx_types::JsonObject)>,
    layers: Vec<middleware::Wrap>,
    notification_layers: Vec<middleware::Wrap<McpNotification, ()>>,
}

modelctx_types::__debug_shows!(ServerBuilder, |v| { info: &v.info, .. });

impl ServerBuilder {
    /// How many items a list page holds unless [`ServerBuilder::page_size`] says
    /// otherwise.
    pub const DEFAULT_PAGE_SIZE: usize = 100;
    /// How long changes to a registry are gathered into one `list_changed`
    /// announcement unless [`ServerBuilder::list_changed_debounce`] says otherwise.
    pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(20);

    /// A builder for a server with this name and version, every setting at its default.
    pub(crate) fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
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
            versions: None,
            state_key: None,
            state_lifetime: mrtr::STATE_LIFETIME,
            single_use: None,
            cache_hints: stateless::CacheHints::default(),
            max_subscriptions: None,
            #[cfg(feature = "tasks")]
            tasks: None,
            on_error: None,
            handler_limit: None,
            announcements: None,
            extensions: Vec::new(),
            layers: Vec::new(),
            notification_layers: Vec::new(),
        }
    }

    /// Sets the human-readable title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    modelctx_types::__setters! {
        /// Sets the full implementation description (name, version, title, icons, ...).
        info(info: Implementation) { info = info }

        /// Sets the instructions returned by `initialize`.
        instructions(instructions: impl Into<String>) { instructions = Some(instructions.into()) }

        /// Advertises exactly these capabilities instead of deriving them (extensions
        /// declared with [`ServerBuilder::extension`] are added to them).
        capabilities(capabilities: ServerCapabilities) { capabilities = Some(capabilities) }
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

    modelctx_types::__setters! {
        /// Bounds the handlers running at once across every session this server serves
        /// (each session also keeps its own bound,
        /// [`SessionConfig::max_concurrent_requests`]): beyond it a request waits for a
        /// slot, so one busy or flooding client cannot take more than its own bound of the
        /// server's work. Unbounded across sessions unless set; a session whose
        /// [`SessionConfig`] brings its own [`HandlerLimit`](modelctx_session::HandlerLimit)
        /// keeps that one.
        max_concurrent_handlers(n: usize) { handler_limit = Some(modelctx_session::HandlerLimit::new(n)) }

        /// Sets the session settings used by [`Server::serve`].
        session_config(config: SessionConfig) { session = config }
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

    modelctx_types::__setters! {
        /// Whether `tools`, `resources` and `prompts` advertise `listChanged` (and registry
        /// changes are announced). By default the kinds served from registries do and
        /// those served only by low-level handlers do not; this sets it for every kind
        /// declared (low-level handlers then send the notifications themselves).
        list_changed(enabled: bool) { list_changed = Some(enabled) }

        /// How long registry changes are gathered into one announcement per kind.
        list_changed_debounce(window: Duration) { debounce = window }

        /// Publishes this server's list changes and resource updates on `bus`, and tells
        /// its sessions and `subscriptions/listen` streams about those other processes
        /// publish there: what several processes serving one endpoint need (modelctx-redis
        /// has a bus on Redis pub/sub). Without one (the default), a change reaches this
        /// process's sessions only.
        ///
        /// A list change is published once per kind and debounce window; each process then
        /// announces it to its own sessions after its own window. [`Server::notify_resource_updated`]
        /// publishes at once and counts only the sessions of this process.
        announcements(bus: Arc<dyn AnnouncementBus>) { announcements = Some(bus) }

        /// Whether high-level resources advertise and serve subscriptions (default: yes).
        resource_subscriptions(enabled: bool) { subscriptions = enabled }

        /// How many items each page of a list holds (at least 1).
        page_size(size: usize) { page_size = size.max(1) }
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
                encode_result(&handler(params, cx).await?)
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
        self.notifications.insert(
            Cow::Borrowed(N::METHOD),
            notification_fn::<N, _, _>(handler),
        );
        self
    }

    /// Hears the session's errors that belong to no request, which nothing else reports:
    /// - an error response the client sends without a request id (`"id": null`): the
    ///   client reporting a failure it could not attribute to a request, such as a
    ///   message from this server it could not parse;
    /// - a response from the client that could not be read, as a `-32603` naming the
    ///   request it answered (which has already failed) and what was wrong;
    /// - a response to no request this server is waiting on (unknown, already
    ///   answered, timed out or cancelled), as a `-32600` naming its id;
    /// - a handler given to [`notification_handler`](Self::notification_handler) that
    ///   panicked, as a `-32603` naming the notification.
    ///
    /// Without it they are dropped. The callback runs with the session's peer, in
    /// arrival order with the session's notifications (a response to no request, as
    /// it is taken); it must not block.
    #[must_use]
    pub fn on_error<F>(mut self, callback: F) -> Self
    where
        F: Fn(ErrorData, &Peer) + Send + Sync + 'static,
    {
        self.on_error = Some(Arc::new(callback));
        self
    }

    modelctx_types::__setters! {
        /// Whether the server also serves protocol 2026-07-28, the stateless era, from the
        /// same handlers (on by default): a request that carries the era's envelope in
        /// `_meta` needs no handshake and is served on its own; `server/discover` says what
        /// the server speaks; a handler that asks the client for input (elicitation,
        /// sampling, roots) ends the round with an input-required result and runs again on
        /// the client's retry with the answers. Clients of the handshake era see no
        /// difference. Off: the server answers only the handshake era.
        stateless_era(on: bool) { stateless_era = on }

        /// The protocol revisions this server speaks, in place of every revision this SDK
        /// speaks (the default). `initialize` answers a client with the revision it asked
        /// for when it is one of these, and otherwise with the newest handshake revision
        /// among them (the client then decides whether it can go on); with no handshake
        /// revision among them `initialize` is refused with `-32022` listing them. The
        /// stateless era is served only when 2026-07-28 is among them (and
        /// [`stateless_era`](Self::stateless_era) is on). Revisions this SDK does not
        /// speak are ignored.
        ///
        /// ```
        /// use modelctx_server::Server;
        /// use modelctx_types::ProtocolVersion;
        ///
        /// let server = Server::builder("settled", "1.0.0")
        ///     .supported_versions([ProtocolVersion::V2025_11_25, ProtocolVersion::V2025_06_18])
        ///     .build();
        /// # let _ = server;
        /// ```
        supported_versions(versions: impl IntoIterator<Item = ProtocolVersion>) { versions = Some(versions.into_iter().collect()) }

        /// The key that seals the `requestState` of requests that ask the client for input
        /// in rounds (protocol 2026-07-28): every process serving one endpoint must use the
        /// same key, since a retry may reach any of them. Without it, each process draws a
        /// random key of its own.
        request_state_key(key: [u8; 32]) { state_key = Some(mrtr::StateKey::new(key)) }

        /// How long the `requestState` of a round stays valid (default 15 minutes, counted
        /// in whole seconds): a retry that brings it back later is refused (`-32602`) and
        /// must send the request again without it. The state also names the request it
        /// belongs to and, when a layer in front authenticated the caller
        /// ([`Principal`](modelctx_types::Principal)), that caller: another request
        /// or another caller presenting it is refused the same way.
        request_state_lifetime(lifetime: std::time::Duration) { state_lifetime = lifetime }
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

    modelctx_types::__setters! {
        /// At most `limit` `subscriptions/listen` streams (protocol 2026-07-28) open at once
        /// across the server's connections (default: no limit). One more is refused with a
        /// JSON-RPC error (`-32603`) before it is acknowledged; the open ones go on.
        max_subscriptions(limit: usize) { max_subscriptions = Some(limit) }
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
    /// ([`modelctx_types::Principal`]), else to the session (protocol 2025-11-25 on
    /// a transport with sessions); a task created with neither (every unauthenticated
    /// request of protocol 2026-07-28, and of a stateless transport) is reachable only
    /// through its id (128 bits from the system's CSPRNG), by a requestor without
    /// principal or session, and is listed to no one: `tasks/list` shows a requestor
    /// only its own tasks, and a task it may not reach is answered as an unknown id
    /// (see [`TaskOwner`](modelctx_session::tasks::TaskOwner)).
    #[cfg(feature = "tasks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tasks")))]
    #[must_use]
    pub fn tasks(mut self, config: TaskConfig) -> Self {
        let store = self.tasks.take().and_then(|(_, store)| store);
        self.tasks = Some((config, store));
        self
    }

    /// Keeps tasks in `store` (shared by several processes, say) and enables them as
    /// [`ServerBuilder::tasks`] does, with its configuration or the default one.
    #[cfg(feature = "tasks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tasks")))]
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

    /// Wraps the server's answering of requests in a tower [`Layer`](tower::Layer): its
    /// service sees each request ([`McpRequest`]: method, params, [`Context`](crate::Context),
    /// extensions) and may answer it, rewrite it, time it or refuse it with a JSON-RPC
    /// error before (or instead of) calling the [`Next`] service it wraps. Layers nest in
    /// the order given: the first is outermost and sees a request first. Built once, when
    /// the server is; a server without layers calls its handlers directly.
    ///
    /// Every request the server's handlers and registries answer passes through, in both
    /// eras (`tools/*`, `resources/*`, `prompts/*`, `completion/complete`, methods of
    /// [`request_handler`](Self::request_handler)s; a task-augmented `tools/call` inside
    /// its task). What the protocol answers itself does not: `initialize`, `ping`,
    /// `logging/setLevel`, `server/discover`, `subscriptions/listen` and the `tasks/*`
    /// methods. Notifications have layers of their own,
    /// [`notification_layer`](Self::notification_layer).
    ///
    /// ```
    /// use modelctx_server::{McpRequest, Server};
    /// use modelctx_types::ErrorData;
    /// use tower::{ServiceExt, layer::layer_fn, service_fn};
    ///
    /// // Refuses every method but the listings.
    /// let read_only = layer_fn(|next: modelctx_server::Next| {
    ///     service_fn(move |request: McpRequest| {
    ///         let next = next.clone();
    ///         async move {
    ///             if request.method().ends_with("/list") {
    ///                 next.oneshot(request).await
    ///             } else {
    ///                 Err(ErrorData::invalid_request("this server is read-only"))
    ///             }
    ///         }
    ///     })
    /// });
    /// let server = Server::builder("demo", "1.0.0").layer(read_only).build();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<Next> + Send + Sync + 'static,
        L::Service: tower::Service<McpRequest, Response = Box<RawValue>, Error = ErrorData>
            + Clone
            + Send
            + 'static,
        <L::Service as tower::Service<McpRequest>>::Future: Send + 'static,
    {
        self.layers.push(middleware::wrap(layer));
        self
    }

    /// Wraps the delivery of notifications from the client to the server's
    /// [`notification_handler`](Self::notification_handler)s in a tower
    /// [`Layer`](tower::Layer): its service sees each notification
    /// ([`McpNotification`]: method, params, peer), every method whether handled or not,
    /// and may rewrite it or drop it (by not calling the [`NotificationNext`] it wraps).
    /// A notification has no answer: an error of the service is dropped. The order and
    /// the cost are those of [`layer`](Self::layer). What the session consumes itself
    /// (`notifications/cancelled`, progress of the server's own requests) and the
    /// handshake's mark of `notifications/initialized` come before the layers.
    ///
    /// ```
    /// use modelctx_server::{McpNotification, NotificationNext, Server};
    /// use tower::{ServiceExt, layer::layer_fn, service_fn};
    ///
    /// // Drops every notification but the roots' changes.
    /// let only_roots = layer_fn(|next: NotificationNext| {
    ///     service_fn(move |notification: McpNotification| {
    ///         let next = next.clone();
    ///         async move {
    ///             if notification.method() == "notifications/roots/list_changed" {
    ///                 next.oneshot(notification).await?;
    ///             }
    ///             Ok(())
    ///         }
    ///     })
    /// });
    /// let server = Server::builder("demo", "1.0.0").notification_layer(only_roots).build();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn notification_layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<NotificationNext> + Send + Sync + 'static,
        L::Service: tower::Service<McpNotification, Response = (), Error = ErrorData>
            + Clone
            + Send
            + 'static,
        <L::Service as tower::Service<McpNotification>>::Future: Send + 'static,
    {
        self.notification_layers.push(middleware::wrap(layer));
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
        let stateless_listed = self
            .versions
            .as_ref()
            .is_none_or(|v| v.contains(&ProtocolVersion::V2026_07_28));
        let versions = self.versions.map(|mut v| {
            v.retain(ProtocolVersion::is_handshake);
            v
        });
        let initialize_results = versions
            .as_deref()
            .unwrap_or(&ProtocolVersion::HANDSHAKE)
            .iter()
            .filter_map(|version| {
                let raw = encode_initialize_result(
                    version,
                    &capabilities,
                    &self.info,
                    self.instructions.as_ref(),
                );
                Some((version.clone(), raw.ok()?))
            })
            .collect();
        let notifications = Arc::new(self.notifications);
        Server {
            inner: Arc::new(Inner {
                // Names and versions are strings: encoding them cannot fail.
                info_json: Arc::from(
                    to_raw(&self.info).unwrap_or_else(|_| RawValue::NULL.to_owned()),
                ),
                info: self.info,
                instructions: self.instructions,
                capabilities,
                initialize_results,
                requests: self.requests,
                notifications: notifications.clone(),
                session: self.session,
                registry: self.registry,
                announcer: {
                    let announcer = Announcer::new(self.debounce, enabled, self.announcements);
                    if let Some(limit) = self.max_subscriptions {
                        announcer.limit_listeners(limit);
                    }
                    announcer
                },
                state: self.state,
                page_size: self.page_size,
                stateless_era: self.stateless_era && stateless_listed,
                versions,
                state_key: self.state_key,
                state_lifetime: self.state_lifetime,
                single_use: self.single_use,
                cache_hints: self.cache_hints,
                envelopes: stateless::EnvelopeCache::default(),
                #[cfg(feature = "tasks")]
                task_host: self.tasks.map(|(config, store)| {
                    let store = store.unwrap_or_else(|| Arc::new(InMemoryTaskStore::default()));
                    TaskHost::new(store, config)
                }),
                on_error: self.on_error,
                handler_limit: self.handler_limit,
                middleware: middleware::request_chain(self.layers),
                notification_middleware: middleware::Chain::around_handlers(
                    self.notification_layers,
                    &notifications,
                ),
            }),
        }
    }

    /// The capabilities of the handlers and registries.
    fn derive(&self) -> ServerCapabilities {
        let mut caps = derive_capabilities(self.requests.keys().map(|k| k.as_ref()));
        let registry = &self.registry;
        let has = |n: usize| n > 0;
        let tools = self.enabled.tools || has(registry::count(&registry.tools));
        let resources = self.enabled.resources
            || has(registry::count(&registry.resources))
            || has(registry::count(&registry.templates));
        let prompts = self.enabled.prompts || has(registry::count(&registry.prompts));
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
        #[cfg(feature = "tasks")]
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

impl ServerBuilder {
    modelctx_types::__setters! {
        /// Makes every round of a multi round-trip request (protocol 2026-07-28) single-use:
        /// the `requestState` a round ends with is good for one retry, remembered as used in
        /// `store` before the handler runs again, and refused (`-32602`) when sent again.
        /// For rounds whose retry has effects (an approval, a payment), which a replayed
        /// state would otherwise repeat for the state's whole lifetime ([`request_state_lifetime`](Self::request_state_lifetime)).
        ///
        /// [`InMemorySingleUseIds`](modelctx_store::InMemorySingleUseIds) remembers the
        /// states of one process; with several processes behind one endpoint (and the same
        /// [`request_state_key`](Self::request_state_key)), give each the same shared store
        /// (`modelctx_redis::SingleUseIds`), so a state used at one is refused at
        /// every other. A retry whose check the store cannot answer is refused
        /// (`-32603`). Off by default.
        single_use_rounds(store: impl SingleUseIds) { single_use = Some(Arc::new(store)) }
    }
}
