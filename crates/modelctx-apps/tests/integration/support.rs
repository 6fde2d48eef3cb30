//! Shared by the apps tests: the two eras, and a host (a client that declares the
//! extension) or a plain client connected in memory in either.

#![allow(unreachable_pub)]

use std::time::Duration;

use modelctx_client::{Client, ClientBuilder, ConnectMode};
use modelctx_server::Server;
use modelctx_session::SessionConfig;
use modelctx_test::apps::with_ui;
use modelctx_test::within;
use modelctx_types::Tool;

/// How long any one step may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// Both eras: the handshake (2025-11-25) and per-request envelopes (2026-07-28).
pub const ERAS: [(ConnectMode, &str); 2] = [
    (ConnectMode::Handshake, "2025-11-25"),
    (ConnectMode::Discover, "2026-07-28"),
];

/// The client `builder` makes, connected in memory to a session of `server` (one that
/// serves the 2026-07-28 era when `builder` discovers it).
pub async fn connect(server: &Server, mode: ConnectMode, builder: ClientBuilder) -> Client {
    let (client_end, server_end) = modelctx_memory::pair();
    if matches!(mode, ConnectMode::Discover) {
        server.serve_with(
            server_end,
            SessionConfig::server().unstable_stateless_era(true),
        );
    } else {
        server.serve(server_end);
    }
    within(
        WAIT,
        "the client to connect",
        builder.mode(mode).connect(client_end),
    )
    .await
    .expect("connects")
}

/// A host named `name`: a client that declares the apps extension, connected in `mode`.
pub async fn host(server: &Server, name: &str, mode: ConnectMode) -> Client {
    connect(server, mode, with_ui(Client::builder(name, "1.0.0"))).await
}

/// Every tool `client` lists.
pub async fn list_tools(client: &Client) -> Vec<Tool> {
    within(WAIT, "tools/list", client.list_all_tools())
        .await
        .unwrap()
}
