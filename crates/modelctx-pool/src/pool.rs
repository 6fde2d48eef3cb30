//! `ClientPool`: every server of a configuration, one namespace of tools.
//!
//! `connect` connects every entry concurrently and never fails: each member is a
//! `Connection` or its `ConnectError`. `health()` is derived, not stored: `Failed`,
//! `Closed` when the client's peer reports closed, `Reconnecting` while the transport says
//! so, else `Connected`.
//!
//! Invariant: a server whose name contains the separator (default `__`) is not connected (a
//! config error), so a namespaced name splits at its *first* separator into exactly one
//! server and that server's own tool name (which may contain the separator): no collision
//! is possible and routing needs no listing. `list_tools` lists every live server at once
//! and reports the servers whose listing failed beside the tools; a call to an unknown or
//! unconnected server is refused locally, a call to a closed one fails as closed.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use modelctx_client::{Client, ClientBuilder};
use modelctx_http::AuthHook;
use modelctx_session::{RequestOptions, SessionError};
use modelctx_transport::{ConnectionState, ReconnectPolicy};
use modelctx_types::{CallToolRequestParams, CallToolResult, Tool};
use serde::Serialize;

use crate::config::{HttpServer, McpServers, ServerConfig};
use crate::connect::{ConnectError, ConnectOptions, Connection};

/// The default separator between a server's name and its tool's name.
pub const DEFAULT_SEPARATOR: &str = "__";

/// The default time one server may take to connect.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

type ClientFactory = dyn Fn(&str) -> ClientBuilder + Send + Sync;
type AuthFactory = dyn Fn(&str, &HttpServer) -> Option<Arc<dyn AuthHook>> + Send + Sync;
type StderrFn = dyn Fn(&str, &str) + Send + Sync;

/// Builds a [`ClientPool`].
pub struct ClientPoolBuilder {
    client: Arc<ClientFactory>,
    auth: Option<Arc<AuthFactory>>,
    stderr: Option<Arc<StderrFn>>,
    separator: String,
    timeout: Option<Duration>,
    /// The options every server shares (trusted roots, reconnect policy).
    shared: ConnectOptions,
}

modelctx_types::__debug_shows!(ClientPoolBuilder, |v| {
    separator: &v.separator,
    timeout: &v.timeout,
    ..
});

impl ClientPoolBuilder {
    modelctx_types::__setters! {
        /// The client every server sees: `make(server_name)` returns the builder to connect
        /// that server with (its identity, callbacks, era mode). By default
        /// `Client::builder("modelctx-pool", <crate version>)`.
        client(make: impl Fn(&str) -> ClientBuilder + Send + Sync + 'static) { client = Arc::new(make) }

        /// The auth hook of each HTTP server: `hook(name, server)`, `None` for none (an
        /// OAuth client of `modelctx-oauth` per server that needs a login; a configured
        /// `Authorization` header needs nothing here).
        auth(hook: impl Fn(&str, &HttpServer) -> Option<Arc<dyn AuthHook>> + Send + Sync + 'static) { auth = Some(Arc::new(hook)) }

        /// Hands each line a stdio server writes on stderr to `f(server_name, line)`. By
        /// default the children inherit our stderr.
        stderr(f: impl Fn(&str, &str) + Send + Sync + 'static) { stderr = Some(Arc::new(f)) }
    }

    /// The separator between server and tool names (default [`DEFAULT_SEPARATOR`],
    /// `__`). A server whose name contains it is not connected (its health says why),
    /// so a namespaced name always splits back into one server and one tool. An empty
    /// separator is replaced by the default.
    #[must_use]
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        let separator = separator.into();
        self.separator = if separator.is_empty() {
            DEFAULT_SEPARATOR.to_owned()
        } else {
            separator
        };
        self
    }

    modelctx_types::__setters! {
        /// How long each server may take to connect (default
        /// [`DEFAULT_CONNECT_TIMEOUT`], 30 s); `None` for no limit (a user logging in).
        connect_timeout(limit: Option<Duration>) { timeout = limit }
    }

    /// Trusts `root` (a private CA, or a self-signed server certificate) besides the
    /// built-in roots, for every HTTP server (feature `rustls`; see
    /// [`ConnectOptions::add_root_certificate`]).
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn add_root_certificate(
        mut self,
        root: modelctx_http::tls::rustls::pki_types::CertificateDer<'static>,
    ) -> Self {
        self.shared = self.shared.add_root_certificate(root);
        self
    }

    /// Gets lost servers back with `policy` (see [`ConnectOptions::reconnect`]): stdio
    /// children that fail are started again, streamable HTTP servers are reconnected
    /// with backoff; [`ClientPool::health`] shows [`Health::Reconnecting`] meanwhile.
    /// By default a lost server stays lost (`Closed`).
    #[must_use]
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.shared = self.shared.reconnect(policy);
        self
    }

    /// Connects to every server of `servers` at once and returns when each one is
    /// connected or has failed. It does not fail: a server that cannot be reached is
    /// reported by [`ClientPool::health`].
    pub async fn connect(self, servers: &McpServers) -> ClientPool {
        let attempts = servers.iter().map(|(name, entry)| {
            let name = name.to_owned();
            let entry = entry
                .cloned()
                .map_err(|e| ConnectError::config(e.to_string()));
            let this = &self;
            async move {
                let state = match entry {
                    Err(e) => Err(e),
                    Ok(_) if name.contains(&this.separator) => Err(ConnectError::config(format!(
                        "server name `{name}` contains the tool separator `{}`",
                        this.separator
                    ))),
                    Ok(config) => this.connect_one(&name, &config).await,
                };
                (name, state)
            }
        });
        let members = futures::future::join_all(attempts)
            .await
            .into_iter()
            .collect();
        ClientPool {
            members,
            separator: self.separator,
        }
    }

    async fn connect_one(
        &self,
        name: &str,
        config: &ServerConfig,
    ) -> Result<Connection, ConnectError> {
        let mut options = self.shared.clone();
        if let Some(limit) = self.timeout {
            options = options.timeout(limit);
        }
        if let Some(f) = &self.stderr {
            let f = f.clone();
            let server = name.to_owned();
            options = options.stderr(move |line| f(&server, line));
        }
        if let (Some(auth), ServerConfig::Http(http)) = (&self.auth, config)
            && let Some(hook) = auth(name, http)
        {
            options = options.auth(hook);
        }
        config.connect((self.client)(name), &options).await
    }
}

/// The state of one server of a pool.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Health {
    /// Connected, its session alive.
    Connected,
    /// It could not be connected, and why.
    Failed(ConnectError),
    /// It was connected and its session has ended (the server went away, the child
    /// exited, or the pool was closed).
    Closed,
    /// It was connected and lost its server; under the pool's [reconnect
    /// policy](ClientPoolBuilder::reconnect) attempt `attempt` to get it back is waiting
    /// or under way (a stdio child being started again, an HTTP server refusing
    /// connections).
    Reconnecting {
        /// The attempt, counted from 1.
        attempt: u32,
    },
}

impl Health {
    /// True for [`Health::Connected`].
    pub fn is_connected(&self) -> bool {
        matches!(self, Self::Connected)
    }
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connected => f.write_str("connected"),
            Self::Failed(e) => write!(f, "failed: {e}"),
            Self::Closed => f.write_str("closed"),
            Self::Reconnecting { attempt } => write!(f, "reconnecting (attempt {attempt})"),
        }
    }
}

/// A tool of one server of a pool, under its namespaced name.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PoolTool {
    /// The server's name in the configuration.
    pub server: String,
    /// The tool as its server listed it, except its `name`, which is the namespaced
    /// one (`server` + separator + the tool's own name): what a model sees and what
    /// [`ClientPool::call_tool`] takes.
    pub tool: Tool,
    /// The tool's name on its server.
    pub original_name: String,
}

/// The tools of every connected server, and the servers whose listing failed.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct PoolTools {
    /// Every tool, in server order, then in the order each server listed them.
    pub tools: Vec<PoolTool>,
    /// The servers whose `tools/list` failed, with the error.
    pub failures: BTreeMap<String, SessionError>,
}

/// Many MCP servers behind one client API: the servers of an `mcpServers`
/// configuration, connected at once, their tools under one namespace.
///
/// A tool `search` of the server `web` is `web__search` (see
/// [`ClientPoolBuilder::separator`]). Names cannot collide: server names are unique
/// keys of the configuration and may not contain the separator, so a namespaced name
/// splits at its first separator into exactly one server and that server's tool name
/// (which may itself contain the separator). Hosts that cap tool names (64 characters
/// is common) should check [`PoolTool::tool`]'s length themselves.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_pool::{ClientPool, McpServers};
///
/// let config = McpServers::from_file("mcp.json")?;
/// let pool = ClientPool::builder().connect(&config).await;
/// for (name, health) in pool.health() {
///     println!("{name}: {health}");
/// }
/// let listing = pool.list_tools().await;
/// for tool in &listing.tools {
///     println!("{}", tool.tool.name);
/// }
/// let result = pool.call_tool("files__read", ()).await?;
/// pool.close().await;
/// # let _ = result; Ok(()) }
/// ```
pub struct ClientPool {
    members: BTreeMap<String, Result<Connection, ConnectError>>,
    separator: String,
}

modelctx_types::__debug_shows!(ClientPool, |v| { health: &v.health(), separator: &v.separator });

impl ClientPool {
    /// A builder with the defaults.
    pub fn builder() -> ClientPoolBuilder {
        ClientPoolBuilder {
            client: Arc::new(|_| Client::builder("modelctx-pool", env!("CARGO_PKG_VERSION"))),
            auth: None,
            stderr: None,
            separator: DEFAULT_SEPARATOR.to_owned(),
            timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            shared: ConnectOptions::new(),
        }
    }

    /// Every server's state, in name order.
    pub fn health(&self) -> BTreeMap<String, Health> {
        self.members
            .iter()
            .map(|(name, member)| {
                let health = match member {
                    Err(e) => Health::Failed(e.clone()),
                    Ok(c) if c.client().peer().is_closed() => Health::Closed,
                    Ok(c) => match c.connection_state() {
                        ConnectionState::Reconnecting { attempt } => {
                            Health::Reconnecting { attempt }
                        }
                        _ => Health::Connected,
                    },
                };
                (name.clone(), health)
            })
            .collect()
    }

    /// The server names, in order.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.members.keys().map(String::as_str)
    }

    /// The client of server `name`, if it connected (its session may have ended since:
    /// see [`health`](Self::health)). For everything beyond tools: resources, prompts,
    /// completion.
    pub fn client(&self, name: &str) -> Option<&Client> {
        self.connection(name).map(Connection::client)
    }

    /// The connection of server `name`, if it connected.
    pub fn connection(&self, name: &str) -> Option<&Connection> {
        self.members.get(name).and_then(|m| m.as_ref().ok())
    }

    /// The separator between server and tool names.
    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// The namespaced name of `server`'s tool `tool`.
    pub fn namespaced(&self, server: &str, tool: &str) -> String {
        format!("{server}{}{tool}", self.separator)
    }

    /// Splits a namespaced name into (server, tool) at its first separator; `None` when
    /// it has no separator or names no server of this pool.
    pub fn route<'a>(&self, namespaced: &'a str) -> Option<(&'a str, &'a str)> {
        let (server, tool) = namespaced.split_once(self.separator.as_str())?;
        self.members.contains_key(server).then_some((server, tool))
    }

    /// The tools of every connected server, listed at once (`tools/list`, every page),
    /// under their namespaced names. A server whose listing fails is in
    /// [`PoolTools::failures`]; the others are listed regardless.
    pub async fn list_tools(&self) -> PoolTools {
        let live: Vec<_> = self
            .members
            .iter()
            .filter_map(|(name, m)| m.as_ref().ok().map(|c| (name, c)))
            .filter(|(_, c)| !c.client().peer().is_closed())
            .collect();
        let lists = futures::future::join_all(
            live.iter()
                .map(|(name, c)| async move { (*name, c.client().list_all_tools().await) }),
        )
        .await;
        let mut out = PoolTools::default();
        for (server, listed) in lists {
            match listed {
                Ok(tools) => out.tools.extend(tools.into_iter().map(|mut tool| {
                    let original_name = std::mem::take(&mut tool.name);
                    tool.name = self.namespaced(server, &original_name);
                    PoolTool {
                        server: server.clone(),
                        tool,
                        original_name,
                    }
                })),
                Err(e) => {
                    out.failures.insert(server.clone(), e);
                }
            }
        }
        out
    }

    /// Calls the tool `namespaced` (`server` + separator + tool) with `arguments` (anything
    /// that serializes to a JSON object, or `()`) on its server, as [`Client::call_tool`]
    /// does.
    pub async fn call_tool(
        &self,
        namespaced: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, SessionError> {
        let arguments = modelctx_client::tool_arguments(arguments)?;
        let mut params = CallToolRequestParams::new(namespaced);
        if let Some(map) = arguments {
            params = params.with_arguments(map);
        }
        self.call_tool_with(params, RequestOptions::default()).await
    }

    /// Calls a tool with full parameters (`params.name` is the namespaced name) and
    /// options (progress, timeout, `_meta`), as [`Client::call_tool_with`] does. A name
    /// that routes to no server, or to one that is not connected, is refused locally
    /// ([`SessionError::is_refused`]).
    pub async fn call_tool_with(
        &self,
        mut params: CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult, SessionError> {
        let Some((server, tool)) = self.route(&params.name) else {
            return Err(SessionError::refused(format!(
                "no server of the pool has the tool `{}` (tools are named server{}tool)",
                params.name, self.separator
            )));
        };
        let client = match self.members.get(server) {
            Some(Ok(c)) => c.client(),
            Some(Err(e)) => {
                return Err(SessionError::refused(format!(
                    "server `{server}` is not connected: {e}"
                )));
            }
            None => {
                return Err(SessionError::refused(format!("no server `{server}`")));
            }
        };
        params.name = tool.to_owned();
        client.call_tool_with(params, options).await
    }

    /// Closes every session and shuts every child process down, all at once.
    pub async fn close(&self) {
        futures::future::join_all(
            self.members
                .values()
                .filter_map(|m| m.as_ref().ok())
                .map(Connection::close),
        )
        .await;
    }
}
