//! What the scripted clients (`MockPeer`) of these tests say in every conversation: the
//! envelope of a stateless-era request, the handshake of the 2025 era, and a session
//! over a mock.

use modelctx_memory::MockPeer;
use modelctx_server::{Server, ServerSession};
use serde_json::{Value, json};

/// The `_meta` envelope of a protocol 2026-07-28 request from a client named `scripted`
/// that declares `capabilities`.
pub(crate) fn envelope(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "scripted", "version": "1.0.0"},
    })
}

/// `server` serving a scripted client: the session, and the client.
pub(crate) fn serve(server: &Server) -> (ServerSession, MockPeer) {
    let (transport, mock) = MockPeer::pair();
    (server.serve(transport), mock)
}

/// The handshake of protocol 2025-11-25 from a client that declares `capabilities`:
/// `initialize` (id `init`), its result, then `notifications/initialized`. Returns the
/// initialize result.
pub(crate) async fn handshake(mock: &mut MockPeer, capabilities: Value) -> Value {
    mock.request(
        "init",
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "scripted", "version": "1"}}),
    )
    .await;
    let init = mock.expect_result("init").await;
    mock.notify("notifications/initialized", json!({})).await;
    init
}
