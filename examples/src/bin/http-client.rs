//! A client for the `http-server` example: lists the tools, calls `countdown` with
//! progress, and ends the session.
//!
//! Run the server first, then `cargo run -p modelctx-examples --bin http-client -- [URL]`
//! (default `http://127.0.0.1:8000/mcp`). The client speaks streamable HTTP and falls
//! back to the legacy HTTP+SSE transport when the server refuses its `initialize` POST
//! with 400, 404 or 405, as the spec's backwards-compatibility section describes: give
//! it `http://127.0.0.1:8000/sse` (or any legacy-only server) to see the fallback.

use modelctx::client::Client;
use modelctx::session::RequestOptions;
use modelctx::sse::FallbackClientTransport;
use modelctx::types::{CallToolRequest, CallToolRequestParams, ListToolsRequest};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8000/mcp".to_owned());
    let transport = FallbackClientTransport::new(&url)?;
    let handle = transport.handle();
    let client = Client::builder("http-example-client", "1.0.0")
        .connect(transport)
        .await?;
    println!(
        "connected to {} {} (protocol {}, over {:?}, session {})",
        client.server_info().name,
        client.server_info().version,
        client.protocol_version(),
        handle.active(),
        handle
            .streamable()
            .session_id()
            .as_deref()
            .unwrap_or("none: stateless or legacy server")
    );

    let tools = client.request::<ListToolsRequest>(None).await?;
    for tool in &tools.tools {
        println!("tool: {}", tool.name);
    }

    let options = RequestOptions::new().on_progress(|p| {
        println!("progress {}/{}", p.progress, p.total.unwrap_or_default());
    });
    let params = CallToolRequestParams::new("countdown")
        .with_arguments(json!({"from": 3}).as_object().cloned().unwrap_or_default());
    let result = client
        .request_with::<CallToolRequest>(params, options)
        .await?;
    println!("result: {}", serde_json::to_string(&result)?);
    // Ends the session on the server too (HTTP DELETE).
    client.close().await;
    Ok(())
}
