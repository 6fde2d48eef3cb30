//! The service and serving: [`StreamableHttpService`], its axum router and listener
//! loops, and the dispatch of each HTTP request to its method's handler.
//!
//! `serve()` calls the endpoint straight from hyper (generic over the body type);
//! `router()` is the same endpoint behind axum for users who mount it. Two traps of
//! serving:
//!
//! - `axum::serve` leaves `TCP_NODELAY` off, which stalls small SSE writes by about 40 ms
//!   each; `serve()` sets it on every connection (through `hosting`'s accept loop, which
//!   the legacy SSE transport shares).
//! - hyper's header read timeout arms a tokio timer per request head; `serve()` runs a one
//!   second heartbeat timer so that arming it never has to wake the timer driver.
//!
//! `serve_tls` and `hosting::serve_router_tls` use the same accept loop with a TLS
//! acceptor. For the conformance matrix, `open_session()` starts a session ahead of
//! `initialize` (the client's `.session(id)` and `.close_on_session_end(true)` then make
//! the HTTP leg behave like a pipe); `open_shared_session()` is its counterpart with a
//! session registry.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use modelctx_transport::Extensions;

use super::config::StreamableHttpServerConfig;
use super::session::HttpServerTransport;
use super::table::Inner;
use super::{admission, delete, era, get, hosting, post};

/// Hosts MCP sessions over streamable HTTP.
///
/// The service knows nothing of tools or handlers: for every new MCP session (every
/// POST in session-less mode) it calls the factory with an [`HttpServerTransport`], and
/// the factory starts a session on it, typically `server.serve(transport)`. Mount
/// [`router`](Self::router) anywhere (`Router::new().nest_service("/mcp", ..)`), or run
/// it on a listener with [`serve`](Self::serve).
///
/// A stateful session belongs to the authenticated caller of its `initialize` (the
/// [`Principal`](modelctx_types::Principal) a layer in front attached, as `modelctx-oauth`'s resource server
/// does) for as long as it lives, on every service sharing it through a
/// [`SessionRegistry`](crate::SessionRegistry): a request naming it with another caller
/// is answered `404`, as for an unknown session.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> std::io::Result<()> {
/// use modelctx_http::StreamableHttpService;
/// use modelctx_server::Server;
///
/// let server = Server::builder("hello", "1.0.0").build();
/// let service = StreamableHttpService::new(move |transport| {
///     server.serve(transport);
/// });
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// // Until the shutdown future resolves; then open streams end and sessions close.
/// service.serve(listener, std::future::pending()).await
/// # }
/// ```
#[derive(Clone)]
pub struct StreamableHttpService {
    pub(super) inner: Arc<Inner>,
}

modelctx_types::__debug_shows!(StreamableHttpService, |v| {
    config: &v.inner.config,
    sessions: &v.session_count(),
});

impl StreamableHttpService {
    /// A service with the default settings (stateful, SSE answers, resumable, Origin
    /// and Host limited to loopback names).
    pub fn new(factory: impl Fn(HttpServerTransport) + Send + Sync + 'static) -> Self {
        Self::with_config(StreamableHttpServerConfig::default(), factory)
    }

    /// A service with explicit settings.
    pub fn with_config(
        config: StreamableHttpServerConfig,
        factory: impl Fn(HttpServerTransport) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::new(Inner::new(config, Box::new(factory))),
        }
    }

    /// Starts a stateful session ahead of any `initialize` and returns its id: for a
    /// client attached out of band (a gateway that provisions sessions, or a test
    /// harness). The factory is called as usual; the session then takes its
    /// `initialize` (sent with this id) like any other. `None` in session-less mode, at the
    /// session cap, without OS randomness, or with a
    /// [session registry](StreamableHttpServerConfig::session_registry) (a shared
    /// session is recorded before it starts: see
    /// [`open_shared_session`](Self::open_shared_session)).
    pub fn open_session(&self) -> Option<String> {
        if !self.inner.config.stateful
            || self.inner.config.session_registry.is_some()
            || self.inner.at_cap()
        {
            return None;
        }
        self.inner
            .create_session(None, true, false, false, None, None)
            .map(|s| s.id.to_string())
    }

    /// [`open_session`](Self::open_session) for a service with a
    /// [session registry](StreamableHttpServerConfig::session_registry): the session is
    /// recorded first (under the cap of all services), then started here. `None` as
    /// for `open_session`, at the registry's cap, or when the registry cannot be
    /// reached.
    pub async fn open_shared_session(&self) -> Option<String> {
        let sharing = self.inner.sharing.as_ref()?;
        if !self.inner.config.stateful {
            return None;
        }
        sharing
            .new_session(&self.inner, None)
            .await
            .ok()
            .map(|s| s.id.to_string())
    }

    /// How many sessions are alive.
    pub fn session_count(&self) -> usize {
        self.inner.lock_sessions().len()
    }

    /// Ends every session (their streams close, their handlers see the transport end).
    pub fn close_all_sessions(&self) {
        let sessions = modelctx_store::table::take_all(&mut *self.inner.lock_sessions());
        for s in sessions {
            s.terminate();
        }
        self.inner.end_handshakes();
        self.inner.kept.end_all();
        self.inner.kept_sessionless.end_all();
    }

    /// The MCP endpoint as an axum router answering on every path it is mounted at.
    pub fn router(&self) -> Router {
        Router::new()
            .fallback(handle)
            .with_state(self.inner.clone())
    }

    /// Serves the endpoint at every path of `listener` until `shutdown` resolves, then
    /// stops accepting, ends every session and waits for open connections to finish.
    ///
    /// Each connection gets `TCP_NODELAY` (SSE writes small events; without it Nagle's
    /// algorithm and delayed ACKs stall each one) and the configured
    /// [header read timeout](StreamableHttpServerConfig::header_read_timeout).
    ///
    /// Bind `127.0.0.1` for a local server. The default [`HostPolicy`](super::HostPolicy)
    /// admits only loopback host names, so a server reachable under another name must
    /// list it (or, behind a proxy that checks it, use
    /// [`HostPolicy::Any`](super::HostPolicy::Any)).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_with(listener, hosting::Acceptor::Plain, shutdown)
            .await
    }

    /// [`serve`](Self::serve) over HTTPS (feature `rustls`): each connection, with
    /// `TCP_NODELAY`, first completes a TLS handshake with `tls` (see
    /// [`tls::server_config`](crate::tls::server_config)) within the header read
    /// timeout; a failed handshake ends that connection only.
    #[cfg(feature = "rustls")]
    pub async fn serve_tls(
        self,
        listener: tokio::net::TcpListener,
        tls: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let acceptor = hosting::Acceptor::Tls(tokio_rustls::TlsAcceptor::from(tls));
        self.serve_with(listener, acceptor, shutdown).await
    }

    async fn serve_with(
        self,
        listener: tokio::net::TcpListener,
        acceptor: hosting::Acceptor,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        // The endpoint answers on every path, so the connection calls it straight,
        // without the router's matching, boxing and service layers.
        let inner = self.inner.clone();
        let endpoint = hyper::service::service_fn(move |request: http::Request<_>| {
            let inner = inner.clone();
            async move { Ok::<_, Infallible>(respond(&inner, request).await) }
        });
        let connections = hosting::Connections {
            acceptor,
            header_read_timeout: self.inner.config.header_read_timeout,
            // Read only to limit new sessions per address.
            peer_address: self.inner.config.session_rate_limit.is_some(),
        };
        let reporter = self.inner.clone();
        hosting::accept_loop(
            listener,
            connections,
            shutdown,
            endpoint,
            move |reason| reporter.report(StatusCode::SERVICE_UNAVAILABLE, reason),
            || self.close_all_sessions(),
        )
        .await
    }
}

async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    respond(&inner, request).await
}

/// Answers one HTTP request to the endpoint. Generic over the body so that `serve()`
/// hands hyper's body straight in (the router passes axum's boxed one).
async fn respond<B>(inner: &Arc<Inner>, request: http::Request<B>) -> Response
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    if let Err(r) =
        hosting::check_origin_and_host(&inner.config.origins, &inner.config.hosts, &parts.headers)
    {
        return inner.reject(r.status, r.reason);
    }
    // A header of one meaning sent twice is refused, never read first-wins.
    if let Some(repeated) = crate::headers::repeated_header(&parts.headers) {
        return era::refuse_repeated(&inner.config, &parts.method, &parts.headers, &repeated);
    }
    match parts.method {
        Method::POST => {
            // What layers in front of the endpoint attached for the session's handlers,
            // and the POST's own headers (`Context::extensions().get::<HeaderMap>()`):
            // moved there, not copied, and read back from there.
            let mut extensions = parts
                .extensions
                .get::<Extensions>()
                .cloned()
                .unwrap_or_default();
            let limited = inner.config.session_rate_limit.is_some();
            let peer = admission::peer(limited, &parts.extensions);
            extensions.insert(crate::headers::sensitive_headers(parts.headers));
            let none = http::HeaderMap::new();
            let headers = extensions.get::<http::HeaderMap>().unwrap_or(&none);
            post::post(inner, headers, &extensions, body, peer).await
        }
        // Serving only the stateless era: neither method means anything, whatever
        // `Mcp-Session-Id` or `Last-Event-ID` the request carries.
        Method::GET | Method::DELETE if !inner.config.handshake_era => {
            let mut response = inner.reject(
                StatusCode::METHOD_NOT_ALLOWED,
                format!(
                    "method {} is not allowed: this endpoint serves protocol 2026-07-28 only",
                    parts.method
                ),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            response
        }
        Method::GET => get::get(inner, &parts.headers, &parts.extensions).await,
        Method::DELETE => delete::delete(inner, &parts.headers, &parts.extensions).await,
        _ => {
            let mut response = inner.reject(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("method {} is not allowed on the MCP endpoint", parts.method),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}
