//! What every MCP endpoint over HTTP shares, whichever transport it speaks: the Origin
//! and Host checks, the JSON content type, the capped and timed body read, and an
//! accept loop that sets `TCP_NODELAY`. Streamable HTTP uses them, and so does the
//! legacy HTTP+SSE transport (`modelctx-sse`), so both are protected alike.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};

use super::config::{HostPolicy, OriginPolicy, Rejection};

/// Checks `Origin` (when present) against `origins` and `Host` against `hosts`; a
/// refusal is `403 Forbidden`, to be sent before any session sees the request.
pub fn check_origin_and_host(
    origins: &OriginPolicy,
    hosts: &HostPolicy,
    headers: &HeaderMap,
) -> Result<(), Rejection> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| origins.allows(o));
        if !ok {
            return Err(Rejection::new(
                StatusCode::FORBIDDEN,
                format!("origin {origin:?} is not allowed"),
            ));
        }
    }
    match headers.get(header::HOST).map(|h| h.to_str()) {
        Some(Ok(host)) if hosts.allows(host) => Ok(()),
        None if *hosts == HostPolicy::Any => Ok(()),
        Some(host) => Err(Rejection::new(
            StatusCode::FORBIDDEN,
            format!("host {host:?} is not allowed"),
        )),
        None => Err(Rejection::new(
            StatusCode::FORBIDDEN,
            "the request has no Host header",
        )),
    }
}

/// Checks that the body is declared `application/json` (parameters allowed); a
/// refusal is `415 Unsupported Media Type`.
pub fn check_json_content_type(headers: &HeaderMap) -> Result<(), Rejection> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            // The media type: up to its parameters, found by byte (`split` on a char
            // builds a searcher).
            let end = ct.bytes().position(|b| b == b';').unwrap_or(ct.len());
            ct[..end].trim().eq_ignore_ascii_case("application/json")
        });
    if json {
        Ok(())
    } else {
        Err(Rejection::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
        ))
    }
}

/// Reads a whole request body of at most `max` bytes within `timeout` (a body that
/// arrived as one frame is not copied). Refusals: `413` over the cap, `408` too slow,
/// `400` a broken body.
pub async fn read_body<B>(body: B, max: usize, timeout: Duration) -> Result<Bytes, Rejection>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match tokio::time::timeout(timeout, collect(body, max)).await {
        Err(_) => Err(Rejection::new(
            StatusCode::REQUEST_TIMEOUT,
            "the request body was not received in time",
        )),
        Ok(Err(BodyError::TooLarge)) => Err(Rejection::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body exceeds {max} bytes"),
        )),
        Ok(Err(BodyError::Broken(e))) => Err(Rejection::new(
            StatusCode::BAD_REQUEST,
            format!("the request body could not be read: {e}"),
        )),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}

/// Why [`collect`] read no body.
enum BodyError {
    /// It holds more than its cap.
    TooLarge,
    /// The body failed.
    Broken(Box<dyn std::error::Error + Send + Sync>),
}

/// The data of `body`, at most `max` bytes in all (trailers are dropped): the first
/// frame as it came (a request body usually comes as one), any later ones appended to a
/// copy. Refused as soon as a frame would pass the cap, before it is kept.
async fn collect<B>(body: B, max: usize) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut body = std::pin::pin!(body);
    let mut left = max;
    let mut joined = Joined::default();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|e| BodyError::Broken(e.into()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.len() > left {
            return Err(BodyError::TooLarge);
        }
        left -= data.len();
        if !data.is_empty() {
            joined.push(data);
        }
    }
    Ok(joined.finish().unwrap_or_default())
}

/// Chunks made one: the first kept as it is (often the only one), later ones appended
/// to a copy (two chunks make one allocation).
#[derive(Default)]
pub(super) struct Joined {
    single: Option<Bytes>,
    joined: Option<bytes::BytesMut>,
}

impl Joined {
    pub(super) fn push(&mut self, chunk: Bytes) {
        match (&mut self.joined, self.single.take()) {
            (Some(joined), _) => joined.extend_from_slice(&chunk),
            (None, None) => self.single = Some(chunk),
            (None, Some(first)) => {
                let mut both = bytes::BytesMut::with_capacity(first.len() + chunk.len());
                both.extend_from_slice(&first);
                both.extend_from_slice(&chunk);
                self.joined = Some(both);
            }
        }
    }

    /// All the chunks pushed, `None` if none was.
    pub(super) fn finish(self) -> Option<Bytes> {
        self.joined.map(bytes::BytesMut::freeze).or(self.single)
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops accepting and
/// waits for open connections to finish. Each connection gets `TCP_NODELAY` (SSE
/// writes small events; without it Nagle's algorithm and delayed ACKs stall each one
/// about 40 ms, and `axum::serve` leaves it off) and `header_read_timeout`.
///
/// Each request carries its connection's address in its extensions, as axum's
/// `ConnectInfo<SocketAddr>` (what a per-address limit, such as
/// [`StreamableHttpServerConfig::session_rate_limit`](crate::StreamableHttpServerConfig::session_rate_limit),
/// reads).
///
/// For a router that mounts several MCP endpoints (streamable HTTP at `/mcp` and the
/// legacy SSE endpoints beside it, say). Streams stay open as long as their sessions:
/// end the services' sessions (`close_all_sessions`) before `shutdown` resolves, or
/// the wait for open connections lasts as long as they do.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_router_with(
        listener,
        router,
        Acceptor::Plain,
        header_read_timeout,
        shutdown,
    )
    .await
}

/// [`serve_router`] over HTTPS (feature `rustls`): each accepted connection (with
/// `TCP_NODELAY`) first completes a TLS handshake with `tls` (see
/// [`tls::server_config`](crate::tls::server_config)) within `header_read_timeout`;
/// a failed or slow handshake ends that connection only.
#[cfg(feature = "rustls")]
pub async fn serve_router_tls(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    tls: std::sync::Arc<rustls::ServerConfig>,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let acceptor = Acceptor::Tls(tokio_rustls::TlsAcceptor::from(tls));
    serve_router_with(listener, router, acceptor, header_read_timeout, shutdown).await
}

/// [`serve_router`] and [`serve_router_tls`], which differ only in `acceptor`.
async fn serve_router_with(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    acceptor: Acceptor,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    accept_loop(
        listener,
        Connections {
            acceptor,
            header_read_timeout,
            peer_address: true,
        },
        shutdown,
        router_service(router),
        accept_failed,
        || {},
    )
    .await
}

fn router_service(
    router: axum::Router,
) -> impl hyper::service::Service<
    http::Request<hyper::body::Incoming>,
    Response = http::Response<axum::body::Body>,
    Error = Infallible,
    Future = impl Future<Output = Result<http::Response<axum::body::Body>, Infallible>> + Send + 'static,
> + Clone
+ Send
+ 'static {
    use tower::ServiceExt;
    hyper::service::service_fn(move |request: http::Request<_>| {
        let router = router.clone();
        async move {
            let response = router
                .oneshot(request.map(axum::body::Body::new))
                .await
                .unwrap_or_else(|never: Infallible| match never {});
            Ok::<_, Infallible>(response)
        }
    })
}

fn accept_failed(reason: String) {
    tracing::warn!(target: "modelctx_http", status = 503u16, %reason, "connection not accepted");
}

/// How accepted connections are spoken to: plain HTTP, or HTTPS after a handshake.
#[derive(Clone)]
pub(crate) enum Acceptor {
    Plain,
    #[cfg(feature = "rustls")]
    Tls(tokio_rustls::TlsAcceptor),
}

/// How the accept loop serves each connection.
pub(crate) struct Connections {
    pub(crate) acceptor: Acceptor,
    pub(crate) header_read_timeout: Duration,
    /// Whether each request carries its connection's address (axum's
    /// `ConnectInfo<SocketAddr>` in its extensions).
    pub(crate) peer_address: bool,
}

/// The accept loop of [`serve_router`] and of the services' own `serve`: `on_error`
/// hears about failed accepts, `on_stop` runs once accepting stopped, before the wait
/// for open connections (a service ends its sessions there).
pub(crate) async fn accept_loop<S>(
    listener: tokio::net::TcpListener,
    connections: Connections,
    shutdown: impl Future<Output = ()> + Send + 'static,
    service: S,
    on_error: impl Fn(String),
    on_stop: impl FnOnce(),
) -> std::io::Result<()>
where
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<axum::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    let Connections {
        acceptor,
        header_read_timeout,
        peer_address,
    } = connections;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let heartbeat = tokio::spawn(keep_timer_driver_ahead());
    let http1 = move || {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout);
        builder
    };
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                on_error(format!("accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Before any TLS handshake: the setting belongs to the socket.
        let _ = stream.set_nodelay(true);
        let service = with_peer(service.clone(), peer_address.then_some(peer));
        match &acceptor {
            Acceptor::Plain => {
                let connection = http1().serve_connection(TokioIo::new(stream), service);
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    let _ = watched.await;
                });
            }
            #[cfg(feature = "rustls")]
            Acceptor::Tls(tls) => {
                // The handshake runs on the connection's task, never in the accept loop.
                let handshake = tls.accept(stream);
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let stream = match tokio::time::timeout(header_read_timeout, handshake).await {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(e)) => {
                            tracing::info!(target: "modelctx_http", %peer, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::info!(target: "modelctx_http", %peer, "TLS handshake timed out");
                            return;
                        }
                    };
                    let connection = http1().serve_connection(TokioIo::new(stream), service);
                    let _ = watcher.watch(connection).await;
                });
            }
        }
    }
    drop(listener);
    heartbeat.abort();
    on_stop();
    graceful.shutdown().await;
    Ok(())
}

/// `service`, whose requests carry `peer` (when given) as axum's `ConnectInfo`.
fn with_peer<S>(
    service: S,
    peer: Option<std::net::SocketAddr>,
) -> impl hyper::service::Service<
    http::Request<hyper::body::Incoming>,
    Response = http::Response<axum::body::Body>,
    Error = Infallible,
    Future = S::Future,
> + Send
+ 'static
where
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<axum::body::Body>,
            Error = Infallible,
        > + Send
        + 'static,
{
    hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
        if let Some(peer) = peer {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        service.call(request)
    })
}

/// Keeps a timer due within a second, for as long as the server runs.
///
/// hyper arms a header read timer on every connection for every request head. Tokio
/// wakes its parked timer driver (an eventfd write and a thread wake-up) whenever a new
/// timer is due before the driver's next planned wake-up, which with no other timer
/// pending is every time: about 8 % of the server's CPU under load, measured. With this
/// timer always due sooner, arming a (longer) header timer wakes nobody; it costs one
/// wake-up a second.
async fn keep_timer_driver_ahead() {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
    }
}
