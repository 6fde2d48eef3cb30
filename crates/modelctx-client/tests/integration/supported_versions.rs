//! `ClientBuilder::supported_versions` before and during the connection: a list the SDK
//! cannot honour, or one that leaves out the era a mode needs, fails before anything is
//! sent; auto mode speaks only the era the list allows.

use modelctx_client::{Client, ConnectMode};
use modelctx_server::Server;
use modelctx_test::record::record;
use modelctx_test::soon;
use modelctx_transport::{MessageStream, Transport, boxed};
use modelctx_types::{JsonRpcMessage, ProtocolVersion};

/// Connects `client` over a pair whose other end is only read: the error, and that the
/// connection closed with nothing sent.
async fn refused_unsent(client: modelctx_client::ClientBuilder) -> String {
    let (ours, theirs) = modelctx_memory::pair();
    let (_sink, mut stream) = theirs.split();
    let error = soon("the refusal", client.connect(ours))
        .await
        .expect_err("the client refuses to connect");
    let first = soon("the connection to close", stream.recv()).await;
    assert!(first.is_none(), "nothing is sent: {first:?}");
    error.to_string()
}

#[tokio::test]
async fn a_list_the_client_cannot_honour_fails_before_anything_is_sent() {
    let client = || Client::builder("careful", "1.0.0");
    let said = refused_unsent(client().supported_versions([])).await;
    assert!(said.contains("names no protocol version"), "{said}");

    let said =
        refused_unsent(client().supported_versions([ProtocolVersion::new("1999-01-01")])).await;
    assert!(said.contains("1999-01-01"), "{said}");
    assert!(said.contains("does not speak"), "{said}");

    // A mode that needs a revision the list leaves out: handshake-only, then modern-only.
    let contradicting = [
        (
            ProtocolVersion::V2025_11_25,
            ConnectMode::Discover,
            "needs protocol 2026-07-28, which this client's supported versions (2025-11-25) leave out",
        ),
        (
            ProtocolVersion::V2026_07_28,
            ConnectMode::Handshake,
            "needs a handshake revision, which this client's supported versions (2026-07-28) leave out",
        ),
    ];
    for (only, mode, needs) in contradicting {
        let said = refused_unsent(client().supported_versions([only]).mode(mode)).await;
        assert!(said.contains(needs), "{said}");
    }
}

/// Connects in auto mode with `versions` accepted: the client, and the first method it
/// sent.
async fn connect_auto(versions: &[ProtocolVersion]) -> (Client, String) {
    let server = Server::builder("both", "1.0.0").build();
    let (ours, theirs) = modelctx_memory::pair();
    let _session = server.serve(theirs);
    let (ours, wire) = record(boxed(ours));
    let client = soon(
        "connecting",
        Client::builder("auto", "1.0.0")
            .supported_versions(versions.to_vec())
            .connect(ours),
    )
    .await
    .expect("the client connects");
    let first = match wire.sent().first() {
        Some(JsonRpcMessage::Request(r)) => r.method.to_string(),
        other => panic!("expected a request first, got {other:?}"),
    };
    (client, first)
}

#[tokio::test]
async fn auto_mode_speaks_only_the_era_the_list_allows() {
    let (client, first) = connect_auto(&[ProtocolVersion::V2025_11_25]).await;
    assert_eq!(first, "initialize", "no probe");
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);

    let (client, first) = connect_auto(&[ProtocolVersion::V2026_07_28]).await;
    assert_eq!(first, "server/discover");
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2026_07_28);
}
