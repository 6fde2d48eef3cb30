//! `ServerBuilder::supported_versions`: the handshake revisions `initialize` settles on,
//! and whether the stateless era is served, from one list. A scripted client
//! (`MockPeer`) sends raw messages.

use modelctx_server::Server;
use modelctx_types::{ErrorCode, ProtocolVersion, RequestId};
use serde_json::json;

use crate::support::{envelope, serve};

fn initialize(version: &str) -> serde_json::Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "scripted", "version": "1.0.0"}
    })
}

#[tokio::test]
async fn a_server_of_the_stateless_era_only_refuses_initialize_with_what_it_serves() {
    let server = Server::builder("modern", "1.0.0")
        .supported_versions([ProtocolVersion::V2026_07_28])
        .build();
    let (_session, mut mock) = serve(&server);
    mock.request(1, "initialize", initialize("2025-11-25"))
        .await;
    let error = mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(error.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
    let data = error.data.expect("the versions it serves");
    assert_eq!(data["supported"], json!(["2026-07-28"]));
    assert_eq!(data["requested"], "2025-11-25");
}

#[tokio::test]
async fn a_server_without_the_stateless_era_settles_on_its_newest_handshake_revision() {
    let server = Server::builder("settled", "1.0.0")
        .supported_versions([ProtocolVersion::V2025_03_26, ProtocolVersion::V2025_11_25])
        .build();
    // The stateless era is not served: a discover request is not the start of one.
    let (_session, mut mock) = serve(&server);
    mock.request(1, "server/discover", json!({"_meta": envelope(json!({}))}))
        .await;
    let error = mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST);

    // A revision it does not list gets the newest it does.
    let (_session, mut mock) = serve(&server);
    mock.request(1, "initialize", initialize("2025-06-18"))
        .await;
    let result = mock.expect_result(1).await;
    assert_eq!(result["protocolVersion"], "2025-11-25");
}
