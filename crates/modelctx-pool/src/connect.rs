//! Connecting to one configured server.
//!
//! One server, used by the pool and by the CLI: an optional auth hook (HTTP), a stderr line
//! callback (children), an optional overall time limit (dropping the attempt drops the
//! child's transport, which shuts it down), a reconnect policy (stdio children then
//! restart, streamable HTTP transports reconnect; a legacy SSE server has none), and with
//! `rustls` extra trusted roots for every HTTP transport. A `Connection` is the `Client`
//! plus the child's handle; it keeps the transport's `ConnectionState` watch, and `child()`
//! returns the *running* child (owned: it changes with restarts).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use modelctx_client::{Client, ClientBuilder};
use modelctx_http::{AuthHook, StreamableHttpClientTransport};
use modelctx_session::SessionError;
use modelctx_sse::{FallbackClientTransport, SseClientTransport};
use modelctx_stdio::{ChildHandle, ChildProcess, RestartHandle, RestartPolicy, Stderr};
use modelctx_transport::{ConnectionState, ReconnectPolicy, TransportError};
use tokio::sync::watch;

use crate::config::{HttpServer, HttpTransport, ServerConfig, StdioServer};

type LineFn = dyn Fn(&str) + Send + Sync;

/// How [`ServerConfig::connect`] reaches a server, beyond what the configuration says.
#[derive(Clone, Default)]
pub struct ConnectOptions {
    auth: Option<Arc<dyn AuthHook>>,
    stderr: Option<Arc<LineFn>>,
    timeout: Option<Duration>,
    #[cfg(feature = "rustls")]
    roots: Vec<Certificate>,
    reconnect: Option<ReconnectPolicy>,
}

/// A trusted root certificate (DER), as `tls::certificates_from_pem` reads it.
#[cfg(feature = "rustls")]
type Certificate = modelctx_http::tls::rustls::pki_types::CertificateDer<'static>;

modelctx_types::__debug_shows!(ConnectOptions, |v| {
    auth: &v.auth.is_some(),
    stderr: &v.stderr.is_some(),
    timeout: &v.timeout,
    reconnect: &v.reconnect,
    ..
});

impl ConnectOptions {
    /// No auth hook, the child's stderr inherited, no time limit beyond the client's
    /// own request timeouts.
    pub fn new() -> Self {
        Self::default()
    }

    modelctx_types::__setters! {
        /// Authenticates HTTP requests through `hook` (an `OAuthClient` of
        /// `modelctx-oauth`, which logs in when the server answers 401). Stdio servers
        /// ignore it.
        auth(hook: Arc<dyn AuthHook>) { auth = Some(hook) }

        /// Hands each line a stdio server writes on its stderr to `f` (by default the
        /// child inherits ours).
        stderr(f: impl Fn(&str) + Send + Sync + 'static) { stderr = Some(Arc::new(f)) }

        /// Gives up when the server is not connected (spawned or reached, and the
        /// handshake or discovery done) within `limit`. Leave it unset when a user may have
        /// to log in first.
        timeout(limit: Duration) { timeout = Some(limit) }
    }

    /// Trusts `root` (a private CA, or a self-signed server certificate) besides the
    /// built-in roots, for every HTTP transport (feature `rustls`). Read PEM with
    /// `modelctx_http::tls::certificates_from_pem`.
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn add_root_certificate(mut self, root: Certificate) -> Self {
        self.roots.push(root);
        self
    }

    modelctx_types::__setters! {
        /// Survives lost servers with `policy`: a stdio child that fails is started again
        /// ([`RestartPolicy::OnFailure`]), a streamable HTTP transport (typed
        /// `streamable-http`, or untyped while it has not fallen back to legacy SSE)
        /// reconnects ([`StreamableHttpClientBuilder::reconnect_policy`](modelctx_http::StreamableHttpClientBuilder::reconnect_policy)).
        /// A legacy SSE server does not reconnect. By default none of them does.
        reconnect(policy: ReconnectPolicy) { reconnect = Some(policy) }
    }

    pub(crate) fn stderr_fn(&self) -> Option<Arc<LineFn>> {
        self.stderr.clone()
    }
}

/// A connected server: its client, and for a stdio server the child process.
#[derive(Debug, Clone)]
pub struct Connection {
    client: Client,
    child: Option<Child>,
    state: Option<watch::Receiver<ConnectionState>>,
}

#[derive(Debug, Clone)]
enum Child {
    Once(ChildHandle),
    Restarting(RestartHandle),
}

impl Connection {
    /// The client session.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The child process of a stdio server: the one running now when it is restarted
    /// by policy (none while it is being replaced).
    pub fn child(&self) -> Option<ChildHandle> {
        match self.child.as_ref()? {
            Child::Once(handle) => Some(handle.clone()),
            Child::Restarting(handle) => handle.current(),
        }
    }

    /// The restarts of a stdio child started with a [reconnect
    /// policy](ConnectOptions::reconnect).
    pub fn restarts(&self) -> Option<&RestartHandle> {
        match self.child.as_ref()? {
            Child::Restarting(handle) => Some(handle),
            Child::Once(_) => None,
        }
    }

    /// Where the connection stands under its [reconnect
    /// policy](ConnectOptions::reconnect); `Connected` without one.
    pub fn connection_state(&self) -> ConnectionState {
        self.state
            .as_ref()
            .map_or(ConnectionState::Connected, |s| s.borrow().clone())
    }

    /// Ends the session (an HTTP session is deleted on the server) and, for a stdio
    /// server, shuts the child down: stdin closed, a grace period, then `SIGTERM`, then
    /// kill.
    pub async fn close(&self) {
        self.client.close().await;
        // The outcome (how the child exited) is the child's business; it is gone
        // either way.
        match &self.child {
            Some(Child::Once(child)) => {
                let _ = child.shutdown().await;
            }
            Some(Child::Restarting(child)) => {
                let _ = child.shutdown().await;
            }
            None => {}
        }
    }
}

impl ServerConfig {
    /// Connects to this server with `client` (its name, callbacks and era mode are the
    /// caller's, unless the entry sets a `mode` or a `probeTimeout`, which win). When the
    /// era cannot be settled, the error says what was sent and what came back.
    pub async fn connect(
        &self,
        client: ClientBuilder,
        options: &ConnectOptions,
    ) -> Result<Connection, ConnectError> {
        let client = match self {
            Self::Stdio(server) => {
                crate::mode::settle(client, server.mode.as_ref(), server.probe_timeout)
            }
            Self::Http(server) => {
                crate::mode::settle(client, server.mode.as_ref(), server.probe_timeout)
            }
        };
        let attempt = async {
            match self {
                Self::Stdio(server) => connect_stdio(server, client, options).await,
                Self::Http(server) => connect_http(server, client, options).await,
            }
        };
        match options.timeout {
            // Dropping the attempt drops the child's transport and handle, which shuts
            // the child down.
            Some(limit) => {
                tokio::time::timeout(limit, attempt)
                    .await
                    .unwrap_or(Err(ConnectError::new(
                        ConnectErrorKind::Timeout,
                        format!("not connected within {limit:?}"),
                    )))
            }
            None => attempt.await,
        }
    }
}

async fn connect_stdio(
    server: &StdioServer,
    client: ClientBuilder,
    options: &ConnectOptions,
) -> Result<Connection, ConnectError> {
    let mut child = ChildProcess::new(&server.command).args(&server.args);
    for (key, value) in &server.env {
        child = child.env(key, value);
    }
    if let Some(dir) = &server.cwd {
        child = child.current_dir(dir.clone());
    }
    if let Some(f) = options.stderr_fn() {
        child = child.stderr(Stderr::lines(move |line| f(line)));
    }
    let spawn_error = |e| {
        ConnectError::new(
            ConnectErrorKind::Spawn,
            format!("cannot run `{}`: {e}", server.command),
        )
    };
    if let Some(policy) = &options.reconnect {
        let child = child
            .spawn_restarting(RestartPolicy::OnFailure(policy.clone()))
            .map_err(spawn_error)?;
        let handle = child.handle();
        return match client.connect(child).await {
            Ok(client) => Ok(Connection {
                client,
                state: Some(handle.connection_state()),
                child: Some(Child::Restarting(handle)),
            }),
            Err(e) => {
                let _ = handle.shutdown().await;
                Err(ConnectError::session(e))
            }
        };
    }
    let child = child.spawn().map_err(spawn_error)?;
    let handle = child.handle();
    match client.connect(child).await {
        Ok(client) => Ok(Connection {
            client,
            child: Some(Child::Once(handle)),
            state: None,
        }),
        Err(e) => {
            let _ = handle.shutdown().await;
            Err(ConnectError::session(e))
        }
    }
}

/// `builder` with the headers, extra roots and auth hook every HTTP transport takes
/// alike: the three builders have these methods but share no trait.
macro_rules! with_options {
    ($builder:expr, $headers:ident, $options:ident, $auth:ident) => {{
        let mut builder = $builder;
        for (name, value) in $headers {
            builder = builder.header(name, value);
        }
        #[cfg(feature = "rustls")]
        for root in &$options.roots {
            builder = builder.add_root_certificate(root.clone());
        }
        if let Some(hook) = &$options.auth {
            builder = builder.$auth(hook.clone());
        }
        builder
    }};
}

async fn connect_http(
    server: &HttpServer,
    client: ClientBuilder,
    options: &ConnectOptions,
) -> Result<Connection, ConnectError> {
    let mut headers = Vec::with_capacity(server.headers.len());
    for (name, value) in &server.headers {
        let name = HeaderName::try_from(name.as_str()).map_err(|_| {
            ConnectError::new(
                ConnectErrorKind::Config,
                format!("bad header name {name:?}"),
            )
        })?;
        let value = HeaderValue::try_from(value.as_str()).map_err(|_| {
            ConnectError::new(
                ConnectErrorKind::Config,
                format!("bad value for header `{name}`"),
            )
        })?;
        headers.push((name, value));
    }
    let policy = options.reconnect.clone();
    let mut state = None;
    let connected = match server.transport {
        HttpTransport::Auto => {
            let mut builder = FallbackClientTransport::builder(&server.url);
            if let Some(policy) = policy {
                builder = builder.streamable(|b| b.reconnect_policy(policy));
            }
            builder = with_options!(builder, headers, options, auth);
            let transport = builder.build().map_err(transport)?;
            state = Some(transport.handle().streamable().connection_state());
            client.connect(transport).await
        }
        HttpTransport::Streamable => {
            let mut builder = StreamableHttpClientTransport::builder(&server.url);
            if let Some(policy) = policy {
                builder = builder.reconnect_policy(policy);
            }
            builder = with_options!(builder, headers, options, auth);
            let transport = builder.build().map_err(transport)?;
            state = Some(transport.handle().connection_state());
            client.connect(transport).await
        }
        HttpTransport::Sse => {
            let builder = with_options!(
                SseClientTransport::builder(&server.url),
                headers,
                options,
                auth_shared
            );
            client
                .connect(builder.connect().await.map_err(transport)?)
                .await
        }
    };
    connected
        .map(|client| Connection {
            client,
            child: None,
            state,
        })
        .map_err(ConnectError::session)
}

fn transport(e: TransportError) -> ConnectError {
    ConnectError::new(ConnectErrorKind::Transport, e.to_string())
}

/// Which way a [`ConnectError`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectErrorKind {
    /// The configuration entry is unusable.
    Config,
    /// The child process could not be started.
    Spawn,
    /// The transport failed before the session started.
    Transport,
    /// The session failed: the handshake or discovery was refused, the server went away
    /// or never answered.
    Session,
    /// The time limit ran out.
    Timeout,
}

/// Why a server could not be connected. Cheap to clone: a pool keeps it as the
/// server's health.
#[derive(Debug, Clone)]
pub struct ConnectError {
    kind: ConnectErrorKind,
    message: Arc<str>,
}

impl ConnectError {
    fn new(kind: ConnectErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: Arc::from(message.into()),
        }
    }

    fn session(e: SessionError) -> Self {
        Self::new(ConnectErrorKind::Session, e.to_string())
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::new(ConnectErrorKind::Config, message)
    }

    /// Which way the connection failed; the `is_*` predicates are shorthand.
    pub fn kind(&self) -> ConnectErrorKind {
        self.kind
    }

    /// The configuration entry is unusable (a malformed entry, a bad header, a server
    /// name the pool cannot namespace).
    pub fn is_config(&self) -> bool {
        self.kind == ConnectErrorKind::Config
    }

    /// The child process could not be started.
    pub fn is_spawn(&self) -> bool {
        self.kind == ConnectErrorKind::Spawn
    }

    /// The transport failed before the session started (a bad URL, no legacy
    /// `endpoint` event).
    pub fn is_transport(&self) -> bool {
        self.kind == ConnectErrorKind::Transport
    }

    /// The session failed: the handshake or discovery was refused, the server went away
    /// or never answered.
    pub fn is_session(&self) -> bool {
        self.kind == ConnectErrorKind::Session
    }

    /// The [time limit](ConnectOptions::timeout) ran out.
    pub fn is_timeout(&self) -> bool {
        self.kind == ConnectErrorKind::Timeout
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectError {}
