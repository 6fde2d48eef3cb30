//! A session-less streamable HTTP service hosts a `Server` with plain `Server::serve`: the
//! transport says that its session starts initialised and cannot carry requests to the
//! client, and the server applies it — no session settings to get right by hand.

use std::time::Duration;

use modelctx::client::{Client, ConnectMode};
use modelctx::http::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::types::ListRootsRequest;

const WAIT: Duration = Duration::from_secs(10);

/// `hello` answers "hi"; `ask` sends the client a request and answers what became of it.
fn server() -> Server {
    let hello = ToolDef::new("hello", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("hi")
    });
    let ask = ToolDef::new("ask", |_: NoArgs, cx: Context| async move {
        match cx.request::<ListRootsRequest>(Default::default()).await {
            Ok(_) => Ok::<_, String>("answered".to_owned()),
            Err(e) => Ok(format!("refused: {e}")),
        }
    });
    Server::builder("stateless", "1.0.0")
        .tool(hello)
        .unwrap()
        .tool(ask)
        .unwrap()
        .build()
}

async fn stateless_url() -> String {
    let server = server();
    let service = StreamableHttpService::with_config(
        StreamableHttpServerConfig::default().sessionless(),
        move |t| {
            server.serve(t);
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending::<()>()));
    url
}

async fn text_of(client: &Client, tool: &str) -> String {
    let result = tokio::time::timeout(WAIT, client.call_tool(tool, serde_json::Map::new()))
        .await
        .expect("the call answers in time")
        .expect("the call succeeds");
    result.content[0].as_text().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_stateless_service_serves_a_plainly_served_server_in_both_eras() {
    let url = stateless_url().await;
    for (mode, version) in [
        (ConnectMode::Handshake, "2025-11-25"),
        (ConnectMode::Auto, "2026-07-28"),
    ] {
        let transport = StreamableHttpClientTransport::new(&url).unwrap();
        let client = tokio::time::timeout(
            WAIT,
            Client::builder("t", "1.0.0").mode(mode).connect(transport),
        )
        .await
        .expect("connects in time")
        .expect("connects");
        assert_eq!(client.protocol_version().as_str(), version);
        // Every POST is a fresh session, served at once without a handshake of its own.
        assert_eq!(text_of(&client, "hello").await, "hi");
        assert_eq!(text_of(&client, "hello").await, "hi");
        client.close().await;
    }
}

#[tokio::test]
async fn a_request_to_the_client_over_stateless_http_2025_fails_at_once() {
    let url = stateless_url().await;
    let transport = StreamableHttpClientTransport::new(&url).unwrap();
    let client = Client::builder("t", "1.0.0")
        .mode(ConnectMode::Handshake)
        .connect(transport)
        .await
        .unwrap();
    // Nothing could carry the request back: it is refused, not left waiting.
    let answer = text_of(&client, "ask").await;
    assert!(
        answer.starts_with("refused:") && answer.contains("stateless"),
        "{answer}"
    );
    client.close().await;
}
