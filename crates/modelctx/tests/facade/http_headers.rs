//! A handler reads the headers of the HTTP request that carried its call, over streamable
//! HTTP (both eras) and legacy SSE.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use modelctx::client::{Client, ConnectMode};
use modelctx::http::{StreamableHttpClientTransport, StreamableHttpService};
use modelctx::server::{Context, Server, ToolDef};
use modelctx::sse::{SseClientTransport, SseService};
use modelctx::types::{CallToolResult, Tool};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);

/// `header`: answers the value of the `x-tenant` header of the request that called it,
/// and whether the header map's `Debug` shows the bearer token (it must not).
fn server() -> Server {
    let tool = Tool::new(
        "header",
        json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    Server::builder("headers", "1.0.0")
        .tool(ToolDef::with_schema(
            tool,
            |_args, cx: Context| async move {
                let headers = cx.extensions().get::<HeaderMap>();
                let tenant = headers
                    .and_then(|h| h.get("x-tenant"))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("none");
                let shown = format!("{headers:?}").contains("secret-token");
                Ok::<_, String>(CallToolResult::text(format!("{tenant} shown={shown}")))
            },
        ))
        .unwrap()
        .build()
}

async fn tenant_seen(client: &Client) -> String {
    let result = tokio::time::timeout(WAIT, client.call_tool("header", serde_json::Map::new()))
        .await
        .expect("the call answers in time")
        .expect("the call succeeds");
    serde_json::to_value(&result).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The headers the clients send: a tenant, and a bearer token.
fn headers() -> [(HeaderName, HeaderValue); 2] {
    [
        (
            HeaderName::from_static("x-tenant"),
            HeaderValue::from_static("acme"),
        ),
        (
            HeaderName::from_static("authorization"),
            HeaderValue::from_static("Bearer secret-token"),
        ),
    ]
}

#[tokio::test]
async fn handlers_read_the_headers_of_the_streamable_http_request_in_both_eras() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = server();
    let service = StreamableHttpService::new(move |transport| {
        server.serve(transport);
    });
    tokio::spawn(async move { service.serve(listener, std::future::pending()).await });
    let mut eras = Vec::new();
    for mode in [ConnectMode::Handshake, ConnectMode::Discover] {
        let [(n1, v1), (n2, v2)] = headers();
        let transport = StreamableHttpClientTransport::builder(&url)
            .header(n1, v1)
            .header(n2, v2)
            .build()
            .unwrap();
        let client = tokio::time::timeout(
            WAIT,
            Client::builder("c", "1.0.0")
                .mode(mode.clone())
                .connect(transport),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(tenant_seen(&client).await, "acme shown=false", "{mode:?}");
        eras.push(client.protocol_version().to_string());
        client.close().await;
    }
    assert_eq!(eras, ["2025-11-25", "2026-07-28"]);
}

#[tokio::test]
async fn handlers_read_the_headers_of_the_legacy_sse_post() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", listener.local_addr().unwrap());
    let server = server();
    let service = SseService::new(move |transport| {
        server.serve(transport);
    });
    tokio::spawn(async move { service.serve(listener, std::future::pending()).await });
    let [(n1, v1), (n2, v2)] = headers();
    let transport = tokio::time::timeout(
        WAIT,
        SseClientTransport::builder(&url)
            .header(n1, v1)
            .header(n2, v2)
            .connect(),
    )
    .await
    .unwrap()
    .unwrap();
    let client = tokio::time::timeout(WAIT, Client::builder("c", "1.0.0").connect(transport))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tenant_seen(&client).await, "acme shown=false");
    client.close().await;
}
