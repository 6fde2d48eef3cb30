//! The revisions each side is told it supports (`ClientBuilder::supported_versions`,
//! `ServerBuilder::supported_versions`): they are the negotiation set, both sides report
//! what was settled, and a server that settles outside the client's set fails the
//! connection.

use modelctx::client::ClientBuilder;
use modelctx::server::{Context, Server, ServerBuilder};
use modelctx::types::ProtocolVersion;
use modelctx_conformance::{Connector, SpecVersion, Test, conformance_test, within};
use serde_json::json;

use crate::support::{Pair, call_work, client, connect, try_connect, work_tool};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            the_supported_versions_are_the_negotiation_set,
            ["lifecycle:version:custom-supported-versions"]
        ),
        conformance_test!(
            a_server_outside_the_clients_versions_fails_the_connection,
            ["lifecycle:version:no-overlap-rejects"]
        ),
    ]
}

/// A server whose `version` tool answers with the revision its request was served in.
fn telling(builder: ServerBuilder) -> Server {
    let version = work_tool("version", |_args, cx: Context| async move {
        let version = cx.protocol_version().map(|v| v.as_str().to_owned());
        json!({"version": version})
    });
    builder.tool(version).unwrap().build()
}

/// The revision each side reports: the client's, and the server's for a request.
async fn settled(pair: &Pair) -> (String, String) {
    let server_side = call_work(pair, "version", json!({})).await;
    (
        pair.client.protocol_version().as_str().to_owned(),
        server_side["version"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn versions(list: &[ProtocolVersion]) -> Vec<ProtocolVersion> {
    list.to_vec()
}

async fn the_supported_versions_are_the_negotiation_set(connector: Connector) {
    use ProtocolVersion as V;
    let builder = || Server::builder("versions", "1.0.0");
    if connector.version() == SpecVersion::V2026_07_28 {
        // No handshake: the request names its revision, and both sets hold it.
        let server =
            telling(builder().supported_versions(versions(&[V::V2026_07_28, V::V2025_11_25])));
        let pair = connect(
            &connector,
            &server,
            client().supported_versions([V::V2026_07_28]),
        )
        .await;
        let both = "2026-07-28".to_owned();
        assert_eq!(settled(&pair).await, (both.clone(), both));
        return;
    }
    // The client's set: it offers the newest revision in it, which the server speaks.
    let server = telling(builder());
    let careful: ClientBuilder =
        client().supported_versions(versions(&[V::V2025_06_18, V::V2025_03_26]));
    let pair = connect(&connector, &server, careful).await;
    let both = "2025-06-18".to_owned();
    assert_eq!(settled(&pair).await, (both.clone(), both));

    // The server's set: the client asks for 2025-11-25, the server answers with the
    // newest of its own, which the client speaks.
    let older = telling(builder().supported_versions(versions(&[V::V2025_03_26, V::V2024_11_05])));
    let pair = connect(&connector, &older, client()).await;
    let both = "2025-03-26".to_owned();
    assert_eq!(settled(&pair).await, (both.clone(), both));
}

async fn a_server_outside_the_clients_versions_fails_the_connection(connector: Connector) {
    use ProtocolVersion as V;
    let server = telling(Server::builder("older", "1.0.0").supported_versions([V::V2025_03_26]));
    let strict = client().supported_versions([V::V2025_11_25]);
    let outcome = if connector.cell().has_transport_pair() {
        // One session of the server, watched: the one the client's `initialize` opened
        // ends with the failed connection.
        let (client_side, server_side) = connector.transport_pair().await;
        let session = server.serve(server_side);
        let outcome = within("the connection", strict.connect(client_side)).await;
        within("the server's session to end", session.closed()).await;
        outcome.map(drop)
    } else {
        try_connect(&connector, &server, strict).await.map(drop)
    };
    let refused = outcome.expect_err("the client connected to a server outside its versions");
    let said = refused.to_string();
    assert!(said.contains("2025-03-26"), "{said}");
    assert!(said.contains("supported versions (2025-11-25)"), "{said}");
}
