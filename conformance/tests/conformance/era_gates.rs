//! The 2026-07-28 era's gates, on every transport that serves it: a request naming a
//! revision the server does not serve, a method the era removed (raw requests, which a
//! well-behaved client sends neither of, to a `Server` serving both eras), and how an
//! auto-negotiating client opens.

use modelctx::client::ConnectMode;
use modelctx::server::Server;
use modelctx::transport::TransportMessage;
use modelctx::types::{ErrorCode, JsonRpcMessage};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};

use crate::support::{both_eras, client, connect_recorded, text_resource};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_revision_the_server_does_not_serve_is_32022_with_what_it_does,
            ["lifecycle:version:unsupported-32022"]
        ),
        conformance_test!(
            a_method_the_era_removed_is_unknown_even_with_a_handler,
            ["lifecycle:version:era-method-gate"]
        ),
        conformance_test!(
            an_auto_client_opens_with_discover,
            ["lifecycle:mode:auto-probes-first"]
        ),
    ]
}

async fn an_auto_client_opens_with_discover(connector: Connector) {
    let (transport, _hosted) = both_eras(&connector, &library()).await;
    let (auto, wire) = connect_recorded(transport, client().mode(ConnectMode::Auto)).await;
    auto.list_all_resources().await.unwrap();
    let sent: Vec<Value> = wire
        .sent()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(sent[0]["method"], "server/discover", "{sent:?}");
    assert_eq!(
        sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
        "{}",
        sent[0]
    );
    assert!(sent.iter().all(|m| m["method"] != "initialize"), "{sent:?}");
}

fn library() -> Server {
    // A resource: the server declares `subscribe` and answers `resources/subscribe` in
    // the handshake era.
    Server::builder("library", "1.0.0")
        .resource(text_resource("file:///a.txt", "a", "a"))
        .unwrap()
        .build()
}

/// `method` with `params` and an envelope naming `version`.
fn request(id: i64, method: &str, version: &str, mut params: Value) -> JsonRpcMessage {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    JsonRpcMessage::from_slice(body.to_string().as_bytes()).expect("a request")
}

/// Sends `message` to `server` in this cell and returns the answer, as JSON.
async fn exchange(connector: &Connector, server: &Server, message: JsonRpcMessage) -> Value {
    let ((sink, mut stream), _hosted) = both_eras(connector, server).await;
    sink.send(TransportMessage::new(message)).await.unwrap();
    let answer = within("the answer", stream.recv())
        .await
        .expect("an answer")
        .expect("a message");
    serde_json::to_value(&answer.message).unwrap()
}

async fn a_revision_the_server_does_not_serve_is_32022_with_what_it_does(connector: Connector) {
    let answer = exchange(
        &connector,
        &library(),
        request(1, "resources/list", "2099-01-01", json!({})),
    )
    .await;
    assert_eq!(answer["id"], 1, "{answer}");
    let error = &answer["error"];
    assert_eq!(
        error["code"],
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0,
        "{answer}"
    );
    let supported = error["data"]["supported"]
        .as_array()
        .expect("data.supported");
    assert!(supported.contains(&json!("2026-07-28")), "{answer}");
    assert!(!supported.contains(&json!("2099-01-01")), "{answer}");
}

async fn a_method_the_era_removed_is_unknown_even_with_a_handler(connector: Connector) {
    let server = library();
    for (id, method) in [(1, "resources/subscribe"), (2, "resources/unsubscribe")] {
        let answer = exchange(
            &connector,
            &server,
            request(id, method, "2026-07-28", json!({"uri": "file:///a.txt"})),
        )
        .await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(
            answer["error"]["code"],
            ErrorCode::METHOD_NOT_FOUND.0,
            "{method}: {answer}"
        );
    }
}
