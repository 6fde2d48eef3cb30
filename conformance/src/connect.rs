//! The [`Connector`]: what a conformance test is handed, one per transport of the matrix.

use modelctx_transport::{BoxTransport, boxed};

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
    /// Streamable HTTP in stateless mode: a server session per POST.
    StreamableHttpStateless,
    /// The legacy HTTP+SSE transport over real loopback sockets.
    Sse,
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
    /// On the stateless HTTP leg, which has no single server-side transport (each POST
    /// gets a session of its own): a test that drives the transport directly must leave
    /// that cell out (`drives-transport-directly`); others serve through
    /// [`serve_stateless_http`](Self::serve_stateless_http).
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
            Backend::StreamableHttp | Backend::StreamableHttpStateless => panic!(
                "{}: no single server-side transport on the stateless leg; a test that \
                 drives the transport directly excludes this cell (drives-transport-directly)",
                self.cell()
            ),
        }
    }

    /// The stateless HTTP leg, and streamable HTTP in 2026-07-28: starts a
    /// `StreamableHttpService` on 127.0.0.1:0 (stateless, or serving the stateless era)
    /// whose `factory` serves each POST's transport, and returns a client transport for
    /// it. The server runs until the test's runtime ends.
    pub async fn serve_stateless_http<F>(&self, factory: F) -> BoxTransport
    where
        F: Fn(modelctx_http::HttpServerTransport) + Send + Sync + 'static,
    {
        http::stateless(factory, self.version == SpecVersion::V2026_07_28).await
    }

    // Role-level helpers go here once modelctx-server and modelctx-client land, built on
    // `transport_pair` (or, for HTTP, on a server bound to 127.0.0.1:0), e.g.
    //
    //     pub async fn serve(&self, server: Server) -> Served;       // server side running
    //     impl Served { pub async fn client(self, options: ClientOptions) -> Client }
    //
    // so tests read: `let client = connect.serve(server).await.client(options).await;`.
}

/// The streamable HTTP leg: a `StreamableHttpService` on 127.0.0.1:0 with one session
/// opened up front (the server side), and a client transport attached to it.
mod http {
    use std::sync::Mutex;

    use modelctx_http::{
        HttpServerTransport, StreamableHttpClientTransport, StreamableHttpServerConfig,
        StreamableHttpService,
    };
    use modelctx_transport::{BoxTransport, Transport, boxed};

    pub(super) async fn pair() -> (BoxTransport, BoxTransport) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}/mcp", listener.local_addr().expect("local addr"));
        let server_side: std::sync::Arc<Mutex<Option<BoxTransport>>> = Default::default();
        let slot = server_side.clone();
        let service = StreamableHttpService::new(move |transport| {
            // The session opened below is the server side; a later one (a client
            // starting over) has nobody to serve it and ends at once.
            let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                let (sink, stream) = transport.split();
                *slot = Some((Box::new(sink), Box::new(stream)));
            }
        });
        // The session exists before the first message, as a byte pipe does, and the
        // server ending it ends the client's stream, as closing a pipe would.
        let session = service.open_session().expect("a session");
        tokio::spawn(service.serve(listener, std::future::pending()));
        let client = StreamableHttpClientTransport::builder(&url)
            .session(session)
            .close_on_session_end(true)
            .build()
            .expect("a valid URL");
        let server = server_side
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("the factory ran for the opened session");
        (boxed(client), server)
    }

    pub(super) async fn stateless<F>(factory: F, era_2026: bool) -> BoxTransport
    where
        F: Fn(HttpServerTransport) + Send + Sync + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}/mcp", listener.local_addr().expect("local addr"));
        let config = if era_2026 {
            StreamableHttpServerConfig::default()
        } else {
            StreamableHttpServerConfig::default().stateless()
        };
        let service = StreamableHttpService::with_config(config, factory);
        tokio::spawn(service.serve(listener, std::future::pending()));
        let client = StreamableHttpClientTransport::builder(&url)
            .build()
            .expect("a valid URL");
        boxed(client)
    }
}

/// The legacy SSE leg: an `SseService` on 127.0.0.1:0 and a client connected to it;
/// the session the client's stream opened is the server side.
mod sse {
    use std::sync::{Arc, Mutex};

    use modelctx_sse::{SseClientTransport, SseService};
    use modelctx_transport::{BoxTransport, Transport, boxed};

    pub(super) async fn pair() -> (BoxTransport, BoxTransport) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}/sse", listener.local_addr().expect("local addr"));
        let server_side: Arc<Mutex<Option<BoxTransport>>> = Default::default();
        let slot = server_side.clone();
        let service = SseService::new(move |transport| {
            // The first stream is the server side; a later one has nobody to serve it.
            let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                let (sink, stream) = transport.split();
                *slot = Some((Box::new(sink), Box::new(stream)));
            }
        });
        tokio::spawn(service.serve(listener, std::future::pending()));
        // The session exists once `connect` returns: the endpoint event follows it.
        let client = SseClientTransport::connect(&url)
            .await
            .expect("the legacy SSE client connects");
        let server = server_side
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("the factory ran for the client's stream");
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
