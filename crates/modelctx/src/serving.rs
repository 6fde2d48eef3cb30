//! Serving a [`Server`] in one call: on this process's stdio ([`ServeStdio`]) or over
//! streamable HTTP ([`ServeHttp`]). Both are extension traits of `Server`, brought into
//! scope by the [`prelude`](crate::prelude).

use crate::server::Server;

mod sealed {
    /// Only [`Server`](crate::server::Server) serves itself this way.
    pub trait Sealed {}
    impl Sealed for crate::server::Server {}
}

/// Serves a [`Server`] on this process's stdin and stdout (features `server` and
/// `stdio`): the whole `main` of a server a host launches as a child process.
///
/// ```no_run
/// use modelctx::prelude::*;
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     Server::builder("adder", "1.0.0").tool(add_tool())?.build().serve_stdio().await?;
///     Ok(())
/// }
/// ```
#[cfg(feature = "stdio")]
pub trait ServeStdio: sealed::Sealed {
    /// Serves one session on stdin/stdout until the client leaves (it closes the
    /// server's stdin), then lets the writer finish what it was writing and returns.
    ///
    /// `Ok(())` when the client left; an error when the session ended on a transport
    /// fault instead: an input line over the cap, a read error, or a client that
    /// stopped reading the server's output (see
    /// [`Diagnostic`](crate::stdio::Diagnostic)). For other settings (the line cap, a
    /// diagnostics callback), serve a transport of your own:
    /// `server.serve(modelctx::stdio::stdio_with(options))`.
    fn serve_stdio(&self) -> impl Future<Output = std::io::Result<()>> + Send;
}

#[cfg(feature = "stdio")]
impl ServeStdio for Server {
    async fn serve_stdio(&self) -> std::io::Result<()> {
        use std::sync::{Arc, OnceLock};

        use crate::stdio::{Diagnostic, StdioOptions, stdio_with};

        let fault = Arc::new(OnceLock::<String>::new());
        let seen = fault.clone();
        let options = StdioOptions::new().on_diagnostic(move |diagnostic| {
            if matches!(
                diagnostic,
                Diagnostic::Fatal { .. } | Diagnostic::OutputStalled { .. }
            ) {
                let _ = seen.set(diagnostic.to_string());
            }
        });
        let session = self.serve(stdio_with(options));
        session.closed().await;
        // The session ended with stdin; let the writer finish what it was writing.
        session.close().await;
        match fault.get() {
            Some(reason) => Err(std::io::Error::other(format!(
                "the stdio session ended on a transport fault: {reason}"
            ))),
            None => Ok(()),
        }
    }
}

/// Serves a [`Server`] over streamable HTTP (features `server` and `http-server`): in
/// one call ([`serve_http`](ServeHttp::serve_http)), or as a service or axum router to
/// mount yourself, without writing the factory that starts a session per client.
///
/// ```no_run
/// use modelctx::prelude::*;
///
/// /// Says hello.
/// #[tool]
/// fn hello(name: String) -> String {
///     format!("Hello, {name}!")
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = Server::builder("hello", "1.0.0").tool(hello_tool())?.build();
///     // The MCP endpoint is http://127.0.0.1:8080/mcp (it answers on every path).
///     server.serve_http("127.0.0.1:8080").await?;
///     Ok(())
/// }
/// ```
#[cfg(feature = "http-server")]
pub trait ServeHttp: sealed::Sealed {
    /// Binds `addr` and serves the MCP endpoint, with the default
    /// [`StreamableHttpServerConfig`](crate::http::StreamableHttpServerConfig), at every
    /// path until the process ends. Each accepted connection gets `TCP_NODELAY` and the
    /// header read timeout. Fails when `addr` cannot be bound.
    ///
    /// The default configuration admits only loopback `Host` and `Origin` names: for
    /// a server reachable under another name, or to stop gracefully, use
    /// [`serve_http_on`](ServeHttp::serve_http_on) with a configuration of your own.
    fn serve_http(
        &self,
        addr: impl tokio::net::ToSocketAddrs + Send,
    ) -> impl Future<Output = std::io::Result<()>> + Send;

    /// Serves the MCP endpoint with `config` at every path of `listener` until
    /// `shutdown` resolves, then stops accepting, ends every session and waits for
    /// open connections to finish (see
    /// [`StreamableHttpService::serve`](crate::http::StreamableHttpService::serve)).
    fn serve_http_on(
        &self,
        listener: tokio::net::TcpListener,
        config: crate::http::StreamableHttpServerConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = std::io::Result<()>> + Send;

    /// The streamable HTTP service of this server with `config`: each new client
    /// gets its own session of this server. Keep it to mount its
    /// [`router`](crate::http::StreamableHttpService::router) and to end its sessions
    /// ([`close_all_sessions`](crate::http::StreamableHttpService::close_all_sessions))
    /// at shutdown.
    fn http_service(
        &self,
        config: crate::http::StreamableHttpServerConfig,
    ) -> crate::http::StreamableHttpService;

    /// The MCP endpoint as an axum router with the default configuration, answering
    /// on every path it is mounted at (`Router::new().nest_service("/mcp", ...)`).
    ///
    /// ```
    /// use modelctx::prelude::*;
    ///
    /// let server = Server::builder("hello", "1.0.0").build();
    /// let app: axum::Router = axum::Router::new().nest_service("/mcp", server.http_router());
    /// ```
    fn http_router(&self) -> axum::Router;
}

#[cfg(feature = "http-server")]
impl ServeHttp for Server {
    async fn serve_http(&self, addr: impl tokio::net::ToSocketAddrs + Send) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let config = crate::http::StreamableHttpServerConfig::default();
        self.serve_http_on(listener, config, std::future::pending())
            .await
    }

    async fn serve_http_on(
        &self,
        listener: tokio::net::TcpListener,
        config: crate::http::StreamableHttpServerConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.http_service(config).serve(listener, shutdown).await
    }

    fn http_service(
        &self,
        config: crate::http::StreamableHttpServerConfig,
    ) -> crate::http::StreamableHttpService {
        let server = self.clone();
        // A stateless transport's session starts initialised: `serve` applies what the
        // transport says of itself.
        crate::http::StreamableHttpService::with_config(config, move |transport| {
            server.serve(transport);
        })
    }

    fn http_router(&self) -> axum::Router {
        self.http_service(crate::http::StreamableHttpServerConfig::default())
            .router()
    }
}
