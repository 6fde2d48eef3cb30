//! A small server's conversation with a `TestClient`, snapshotted: what a user of the
//! kit writes to see in review every change of what goes over the wire.

use modelctx_client::{Client, ConnectMode};
use modelctx_server::{Context, Server, ToolDef};
use modelctx_test::{TestClient, text_of};
use modelctx_types::{JsonObject, Tool};
use serde_json::json;

fn server() -> Server {
    let greet = ToolDef::with_schema(
        Tool::new(
            "greet",
            json!({"type": "object", "properties": {"name": {"type": "string"}}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
        |args: JsonObject, _: Context| async move {
            let name = args.get("name").and_then(|n| n.as_str()).unwrap_or("you");
            Ok::<_, String>(format!("Hello, {name}!"))
        },
    );
    Server::builder("greeter", "1.0.0")
        .instructions("Greets whoever asks.")
        .tool(greet)
        .unwrap()
        .build()
}

#[tokio::test]
async fn a_conversation_reads_as_a_transcript() {
    let client = TestClient::connect(&server()).await;
    let tools = client.list_tools().await;
    assert_eq!(tools.len(), 1);
    let result = client.call_tool("greet", json!({"name": "Ada"})).await;
    assert_eq!(text_of(&result), "Hello, Ada!");
    insta::assert_snapshot!(client.transcript());
}

/// The same conversation in protocol 2025-11-25: the `initialize` handshake first.
#[tokio::test]
async fn a_handshake_conversation_reads_as_a_transcript() {
    let builder = Client::builder("test-client", "1.0.0").mode(ConnectMode::Handshake);
    let client = TestClient::connect_with(&server(), builder).await;
    let result = client.call_tool("greet", json!({"name": "Ada"})).await;
    assert_eq!(text_of(&result), "Hello, Ada!");
    insta::assert_snapshot!(client.transcript());
}

#[tokio::test]
async fn a_failed_call_names_the_tool() {
    let client = TestClient::connect(&server()).await;
    let error = client
        .try_call_tool("missing", json!({}))
        .await
        .expect_err("no such tool");
    assert!(error.protocol_error().is_some(), "{error}");
}
