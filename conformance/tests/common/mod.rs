//! What the extension tests (`apps.rs`, `skills.rs`) share: the cells they run in and a
//! client connected to a server in a cell's era.

use modelctx::client::{Client, ClientBuilder};
use modelctx::server::Server;
use modelctx::session::SessionConfig;
use modelctx::transport::Transport;
use modelctx_conformance::support::connect_mode;
use modelctx_conformance::{Cell, Connector, SpecVersion, TransportKind, within};

/// The transports the extension tests run over, each in both eras.
const TRANSPORTS: [TransportKind; 3] = [
    TransportKind::InMemory,
    TransportKind::Stdio,
    TransportKind::StreamableHttp,
];

/// Every cell a test runs in.
pub(crate) fn cells() -> Vec<Connector> {
    TRANSPORTS
        .iter()
        .flat_map(|&t| SpecVersion::ALL.map(|v| Cell::new(t, v)))
        .map(|cell| Connector::new(cell).expect("the runner builds this transport"))
        .collect()
}

/// Serves `server` on the connector's server side and connects the client `builder`
/// makes (from `Client::builder(name, "1.0.0")`) to it, in the connector's era
/// (2026-07-28: the server serves that era, the client discovers it).
pub(crate) async fn connect(
    connector: &Connector,
    server: &Server,
    name: &str,
    builder: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Client {
    let era_2026 = connector.version() == SpecVersion::V2026_07_28;
    let client_side = if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        serve(server, server_side, era_2026);
        client_side
    } else {
        let server = server.clone();
        connector
            .serve_stateless_http(move |transport| serve(&server, transport, era_2026))
            .await
    };
    let mode = connect_mode(connector.version());
    let client = within(
        "the client to connect",
        builder(Client::builder(name, "1.0.0").mode(mode)).connect(client_side),
    )
    .await
    .expect("the client connects");
    let expected = if era_2026 { "2026-07-28" } else { "2025-11-25" };
    assert_eq!(client.protocol_version().as_str(), expected);
    client
}

/// Serves one session of `server` on `transport`, in the 2026-07-28 era when `era_2026`.
fn serve<T: Transport>(server: &Server, transport: T, era_2026: bool) {
    if era_2026 {
        server.serve_with(
            transport,
            SessionConfig::server().unstable_stateless_era(true),
        );
    } else {
        server.serve(transport);
    }
}
