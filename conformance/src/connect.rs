//! The [`Connector`]: what a conformance test is handed, one per transport of the matrix.
//!
//! On the two-instance legs `serve_shared_http` starts a `redis-server` per trial (the test kit's
//! `RedisServer`), opens the session on the first service (`open_shared_session`) and
//! returns the client transport plus a watch on the client's GET stream; the tests'
//! `connect` serves the `Server` on both services and takes the first service's copy as
//! `Pair::server()`. Carved out there, each with an "ours:" note: tests on a raw transport
//! pair or a scripted server. The lifecycle tests of the server before
//! `notifications/initialized` run there in a shared variant instead: raw POSTs through the
//! leg's front, each refusal compared with one service's answer to the same POST.

use modelctx_transport::{BoxTransport, boxed};

use modelctx_test::BalancerKind;

use crate::endpoint::HttpEndpoint;
use crate::front::Front;
use crate::kind::{Cell, SpecVersion, TransportKind};

/// The in-process pipe buffer of the stdio leg, in bytes (a pipe's usual size).
const STDIO_PIPE_BUFFER: usize = 64 * 1024;

/// Connects a client side to a server side in one cell of the matrix: a transport and
/// the spec version both sides speak.
///
/// A test is written once against a `Connector` and the harness runs it once per cell
/// its requirements apply to (and the SDK has). A test that needs the concrete transport
/// (HTTP status codes, the raw wire) checks [`kind`](Self::kind); one that only makes
/// sense in one era says so through its requirement's window, not by checking
/// [`version`](Self::version).
#[derive(Debug, Clone)]
pub struct Connector {
    backend: Backend,
    version: SpecVersion,
}

/// How each transport is built. Adding a transport: a variant here, its arms below, and
/// its cells in the manifest's `[sdk_cells]`.
#[derive(Debug, Clone, Copy)]
enum Backend {
    /// `modelctx_memory::pair()`.
    InMemory,
    /// The stdio framing (`modelctx_stdio::StdioTransport`) over in-process pipes.
    Stdio,
    /// Streamable HTTP over real loopback sockets (default stateful SSE mode).
    StreamableHttp,
    /// Streamable HTTP in session-less mode: a server session per POST.
    StreamableHttpStateless,
    /// The legacy HTTP+SSE transport over real loopback sockets.
    Sse,
    /// Streamable HTTP served by two (or three) services sharing sessions through a
    /// Redis, behind a round-robin forwarder or a real balancer.
    Shared(Front),
}

impl Connector {
    /// The connector for `cell`, if the runner can build its transport. Whether the SDK
    /// has the cell is the manifest's business (`[sdk_cells]`); the harness asks both.
    pub fn new(cell: Cell) -> Option<Self> {
        let backend = match cell.transport {
            TransportKind::InMemory => Backend::InMemory,
            TransportKind::Stdio => Backend::Stdio,
            TransportKind::StreamableHttp => Backend::StreamableHttp,
            TransportKind::StreamableHttpStateless => Backend::StreamableHttpStateless,
            TransportKind::Sse => Backend::Sse,
            TransportKind::StreamableHttpShared
            | TransportKind::StreamableHttpNginx
            | TransportKind::StreamableHttpHaproxy => Backend::Shared(Front::of(cell.transport)?),
        };
        Some(Self {
            backend,
            version: cell.version,
        })
    }

    /// The transport this connector uses.
    pub fn kind(&self) -> TransportKind {
        match self.backend {
            Backend::InMemory => TransportKind::InMemory,
            Backend::Stdio => TransportKind::Stdio,
            Backend::StreamableHttp => TransportKind::StreamableHttp,
            Backend::StreamableHttpStateless => TransportKind::StreamableHttpStateless,
            Backend::Sse => TransportKind::Sse,
            Backend::Shared(Front::Forwarder) => TransportKind::StreamableHttpShared,
            Backend::Shared(Front::Balancer(BalancerKind::Nginx)) => {
                TransportKind::StreamableHttpNginx
            }
            Backend::Shared(Front::Balancer(_)) => TransportKind::StreamableHttpHaproxy,
        }
    }

    /// The spec version the test's client and server speak.
    pub fn version(&self) -> SpecVersion {
        self.version
    }

    /// The cell this connector connects in.
    pub fn cell(&self) -> Cell {
        Cell::new(self.kind(), self.version)
    }

    /// A fresh connection: `(client side, server side)`. What one side sends, the other
    /// receives, in order; closing one side's sink ends the other side's stream.
    ///
    /// # Panics
    ///
    /// On the session-less HTTP leg, which has no single server-side transport (each POST
    /// gets a session of its own), and on the shared leg (a session has a server-side
    /// transport per service): a test that drives the transport directly must leave
    /// that cell out (`drives-transport-directly`); others serve through
    /// [`serve_stateless_http`](Self::serve_stateless_http) or
    /// [`serve_shared_http`](Self::serve_shared_http).
    pub async fn transport_pair(&self) -> (BoxTransport, BoxTransport) {
        match self.backend {
            Backend::InMemory => {
                let (client, server) = modelctx_memory::pair();
                (boxed(client), boxed(server))
            }
            Backend::Stdio => {
                // Two pipes, as between a client and its child: what one side writes as
                // lines, the other reads and parses. The tests that need a real child
                // process spawn one themselves (`tests/conformance/stdio.rs`).
                let (client_end, server_end) = tokio::io::duplex(STDIO_PIPE_BUFFER);
                let (client_read, client_write) = tokio::io::split(client_end);
                let (server_read, server_write) = tokio::io::split(server_end);
                let client = modelctx_stdio::StdioTransport::new(client_read, client_write);
                let server = modelctx_stdio::StdioTransport::new(server_read, server_write);
                (boxed(client), boxed(server))
            }
            Backend::StreamableHttp if self.version != SpecVersion::V2026_07_28 => {
                http::pair().await
            }
            Backend::Sse => sse::pair().await,
            Backend::StreamableHttp | Backend::StreamableHttpStateless | Backend::Shared(_) => {
                panic!(
                    "{}: no single server-side transport on this leg; a test that drives the \
                 transport directly excludes this cell (drives-transport-directly)",
                    self.cell()
                )
            }
        }
    }

    /// The session-less HTTP leg, and streamable HTTP in 2026-07-28: starts a
    /// `StreamableHttpService` on 127.0.0.1:0 (stateless, or serving the stateless era)
    /// whose `factory` serves each POST's transport, and returns a client transport for
    /// it. The server runs until the test's runtime ends. On a balancer leg in
    /// 2026-07-28, two such services on one Redis behind the balancer, each request to
    /// the next of them.
    pub async fn serve_stateless_http<F>(&self, factory: F) -> BoxTransport
    where
        F: Fn(modelctx_http::HttpServerTransport) + Send + Sync + 'static,
    {
        let era_2026 = self.version == SpecVersion::V2026_07_28;
        match self.backend {
            Backend::Shared(front) if era_2026 => shared::stateless(factory, front).await,
            _ => http::stateless(factory, era_2026).await,
        }
    }

    /// The two-instance legs (`streamable-http-shared`, `-nginx`, `-haproxy`): starts a
    /// `redis-server` and two `StreamableHttpService`s on 127.0.0.1 sharing their
    /// sessions through it (a `modelctx_redis::SessionRegistry` and a
    /// `modelctx_redis::EventStore` each), each calling
    /// `factory` with the transport of every session it serves, its own copy of a
    /// session started elsewhere included (`needs_pre_initialized_session`, or
    /// `needs_initialize_answered_session` while the client's
    /// `notifications/initialized` has not arrived). A session
    /// is opened up front on the first service (`open_shared_session`), and the client
    /// transport returned is attached to it through the leg's front (the round-robin
    /// forwarder, nginx or HAProxy), opening a connection per request (no idle pool):
    /// its requests alternate between the services. All of it runs until the test's
    /// runtime ends.
    ///
    /// A message for the GET stream sent before any service holds it is kept in Redis
    /// and delivered when the stream opens, as one service keeps it;
    /// [`GetStream::opened`] tells when the client's stream is open.
    ///
    /// # Panics
    ///
    /// On a leg of one instance; when `redis-server` or the balancer cannot be started
    /// (the message says how to install it), or the services cannot reach Redis.
    pub async fn serve_shared_http<F>(&self, factory: F) -> SharedHttp
    where
        F: Fn(modelctx_http::HttpServerTransport) + Send + Sync + 'static,
    {
        let Backend::Shared(front) = self.backend else {
            panic!("{}: not a two-instance leg", self.cell());
        };
        shared::serve(factory, front).await
    }

    /// For a test that builds its own streamable HTTP app (a service with its own
    /// settings, middleware or routes, driven by hand): an origin to serve it at, once
    /// on every leg but the two-instance ones, where two instances share one Redis
    /// behind the leg's front (see [`HttpEndpoint`]). Such a test then runs its one
    /// body against one instance and against two.
    ///
    /// # Panics
    ///
    /// On a two-instance leg, when `redis-server` or the balancer cannot be started
    /// (the message says how to install it).
    pub async fn http_endpoint(&self) -> HttpEndpoint {
        let front = match self.backend {
            Backend::Shared(front) => Some(front),
            _ => None,
        };
        HttpEndpoint::bind(front).await
    }
}

/// The client side of the shared HTTP leg ([`Connector::serve_shared_http`]).
#[non_exhaustive]
pub struct SharedHttp {
    /// The client transport, attached to the session opened up front.
    pub transport: BoxTransport,
    /// Whether the client's GET stream is open yet.
    pub get_stream: GetStream,
}

impl std::fmt::Debug for SharedHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedHttp")
            .field("get_stream", &self.get_stream)
            .finish_non_exhaustive()
    }
}

/// Watches the shared leg's forwarder for the client's GET stream.
#[derive(Debug)]
pub struct GetStream(tokio::sync::watch::Receiver<usize>);

impl GetStream {
    /// Waits until a service has answered the client's GET stream (`200`): from then
    /// on a message for that stream reaches the client, whichever service sends it.
    pub async fn opened(&mut self) {
        // The sender lives in the forwarder's task, as long as the runtime.
        let _ = self.0.wait_for(|opened| *opened > 0).await;
    }
}

/// The server side of a loopback leg: the first transport a service's factory hands
/// over is kept; a later one (a client starting over) has nobody to serve it and is
/// dropped, which ends it at once.
#[derive(Clone, Default)]
struct FirstTransport(std::sync::Arc<std::sync::Mutex<Option<BoxTransport>>>);

impl FirstTransport {
    /// Keeps `transport` if it is the first one.
    fn offer<T: modelctx_transport::Transport>(&self, transport: T) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let (sink, stream) = transport.split();
            *slot = Some((Box::new(sink), Box::new(stream)));
        }
    }

    /// The transport kept; `what` names the factory call that should have made it.
    fn take(&self, what: &str) -> BoxTransport {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_else(|| panic!("the factory ran for {what}"))
    }
}

/// The streamable HTTP leg: a `StreamableHttpService` on 127.0.0.1:0 with one session
/// opened up front (the server side), and a client transport attached to it.
mod http {

    use modelctx_http::{
        HttpServerTransport, StreamableHttpClientTransport, StreamableHttpServerConfig,
        StreamableHttpService,
    };
    use modelctx_transport::{BoxTransport, boxed};

    pub(super) async fn pair() -> (BoxTransport, BoxTransport) {
        let (listener, url) = crate::support::loopback("/mcp").await;
        // The session opened below is the server side.
        let server_side = super::FirstTransport::default();
        let slot = server_side.clone();
        let service = StreamableHttpService::new(move |transport| slot.offer(transport));
        // The session exists before the first message, as a byte pipe does, and the
        // server ending it ends the client's stream, as closing a pipe would.
        let session = service.open_session().expect("a session");
        tokio::spawn(service.serve(listener, std::future::pending()));
        let client = StreamableHttpClientTransport::builder(&url)
            .session(session)
            .close_on_session_end(true)
            .build()
            .expect("a valid URL");
        let server = server_side.take("the opened session");
        (boxed(client), server)
    }

    pub(super) async fn stateless<F>(factory: F, era_2026: bool) -> BoxTransport
    where
        F: Fn(HttpServerTransport) + Send + Sync + 'static,
    {
        let (listener, url) = crate::support::loopback("/mcp").await;
        let config = if era_2026 {
            StreamableHttpServerConfig::default()
        } else {
            StreamableHttpServerConfig::default().sessionless()
        };
        let service = StreamableHttpService::with_config(config, factory);
        tokio::spawn(service.serve(listener, std::future::pending()));
        let client = StreamableHttpClientTransport::builder(&url)
            .build()
            .expect("a valid URL");
        boxed(client)
    }
}

/// The two-instance streamable HTTP legs: two services (three behind HAProxy), one
/// Redis, a round-robin forwarder or a real balancer in front.
mod shared {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::extract::Request;
    use axum::http::{Method, StatusCode};
    use axum::middleware::Next;
    use modelctx_http::{
        HttpServerTransport, StreamableHttpClientTransport, StreamableHttpServerConfig,
        StreamableHttpService,
    };
    use modelctx_transport::{BoxTransport, boxed};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::watch;

    use modelctx_test::RedisServer;

    use crate::endpoint::{event_store, session_registry};
    use crate::front::{Aligner, Front};

    pub(super) async fn serve<F>(factory: F, front: Front) -> super::SharedHttp
    where
        F: Fn(HttpServerTransport) + Send + Sync + 'static,
    {
        let started = start(factory, front).await;
        let session = started.services[0]
            .open_shared_session()
            .await
            .expect("a shared session");
        let client = StreamableHttpClientTransport::builder(&started.url)
            .client(unpooled())
            .session(session)
            .close_on_session_end(true)
            .build()
            .expect("a valid URL");
        super::SharedHttp {
            transport: boxed(client),
            get_stream: super::GetStream(started.opened),
        }
    }

    /// The 2026-07-28 era on the services behind `front`: no session opened, each
    /// request served on its own by the next service.
    pub(super) async fn stateless<F>(factory: F, front: Front) -> BoxTransport
    where
        F: Fn(HttpServerTransport) + Send + Sync + 'static,
    {
        let started = start(factory, front).await;
        let client = StreamableHttpClientTransport::builder(&started.url)
            .client(unpooled())
            .build()
            .expect("a valid URL");
        boxed(client)
    }

    /// A client opening a connection per request (no idle pool): behind the forwarder,
    /// which balances connections, its requests alternate too.
    fn unpooled() -> reqwest::Client {
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .expect("a reqwest client")
    }

    /// The services of `front` on one Redis behind it, serving until the trial's runtime
    /// ends.
    struct Started {
        services: Vec<StreamableHttpService>,
        /// The MCP endpoint's URL, at the front.
        url: String,
        /// How many GET streams a service has answered `200`.
        opened: watch::Receiver<usize>,
    }

    async fn start<F>(factory: F, front: Front) -> Started
    where
        F: Fn(HttpServerTransport) + Send + Sync + 'static,
    {
        // Started on a blocking thread: it waits for the server's log and PING.
        let redis = tokio::task::spawn_blocking(RedisServer::start)
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let redis = Arc::new(redis);
        let factory = Arc::new(factory);
        let (listeners, balancer) = front.start().await;
        let backends: Vec<_> = listeners
            .iter()
            .map(|l| l.local_addr().expect("local addr"))
            .collect();
        // Every GET a service answers `200` is a GET stream opened: the client's.
        let (opened_tx, opened) = watch::channel(0usize);
        let aligner = Aligner::new();
        let count = listeners.len();
        let mut services = Vec::new();
        for (index, listener) in listeners.into_iter().enumerate() {
            // Each service its own connections to Redis, as two processes would have.
            let config = StreamableHttpServerConfig::default()
                .session_registry(Arc::new(session_registry(&redis).await))
                .event_store(Arc::new(event_store(&redis).await));
            let factory = factory.clone();
            let service =
                StreamableHttpService::with_config(config, move |transport| factory(transport));
            let opened = opened_tx.clone();
            let router = aligner.tap(
                service.router().layer(axum::middleware::from_fn(
                    move |request: Request, next: Next| {
                        let opened = opened.clone();
                        async move {
                            let get = request.method() == Method::GET;
                            let response = next.run(request).await;
                            if get && response.status() == StatusCode::OK {
                                opened.send_modify(|count| *count += 1);
                            }
                            response
                        }
                    },
                )),
                index,
            );
            // The Redis and the balancer live as long as the services that use them:
            // until the trial's runtime ends and drops these tasks (the last one kills
            // them).
            let held = (redis.clone(), balancer.clone());
            let listener = axum::serve::ListenerExt::tap_io(listener, |s| {
                let _ = s.set_nodelay(true);
            });
            tokio::spawn(async move {
                let _held = held;
                axum::serve(listener, router).await
            });
            services.push(service);
        }
        let url = match &balancer {
            Some(balancer) => {
                aligner
                    .align(&balancer.origin(), count, || balancer.logs())
                    .await;
                format!("{}/mcp", balancer.origin())
            }
            None => round_robin(backends).await,
        };
        Started {
            services,
            url,
            opened,
        }
    }

    /// A loopback TCP forwarder sending each new connection to the next backend in
    /// turn; its URL. With a client opening a connection per request, every request
    /// goes to the next service.
    async fn round_robin(backends: Vec<std::net::SocketAddr>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let next = AtomicUsize::new(0);
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let backend = backends[next.fetch_add(1, Ordering::Relaxed) % backends.len()];
                tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(backend).await {
                        forward(inbound, outbound).await;
                    }
                });
            }
        });
        format!("http://{addr}/mcp")
    }

    /// Copies both ways until either side ends.
    async fn forward(inbound: TcpStream, outbound: TcpStream) {
        let _ = inbound.set_nodelay(true);
        let _ = outbound.set_nodelay(true);
        let (mut in_read, mut in_write) = inbound.into_split();
        let (mut out_read, mut out_write) = outbound.into_split();
        let up = tokio::io::copy(&mut in_read, &mut out_write);
        let down = tokio::io::copy(&mut out_read, &mut in_write);
        let _ = tokio::join!(up, down);
    }
}

/// The legacy SSE leg: an `SseService` on 127.0.0.1:0 and a client connected to it;
/// the session the client's stream opened is the server side.
mod sse {
    use modelctx_sse::{SseClientTransport, SseService};
    use modelctx_transport::{BoxTransport, boxed};

    pub(super) async fn pair() -> (BoxTransport, BoxTransport) {
        let (listener, url) = crate::support::loopback("/sse").await;
        // The first stream is the server side.
        let server_side = super::FirstTransport::default();
        let slot = server_side.clone();
        let service = SseService::new(move |transport| slot.offer(transport));
        tokio::spawn(service.serve(listener, std::future::pending()));
        // The session exists once `connect` returns: the endpoint event follows it.
        let client = SseClientTransport::connect(&url)
            .await
            .expect("the legacy SSE client connects");
        let server = server_side.take("the client's stream");
        (boxed(client), server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_has_a_connector() {
        for transport in TransportKind::ALL {
            for version in SpecVersion::ALL {
                let cell = Cell::new(transport, version);
                let connector = Connector::new(cell);
                assert!(connector.is_some(), "{cell}");
                if let Some(c) = connector {
                    assert_eq!(c.cell(), cell);
                }
            }
        }
    }
}
