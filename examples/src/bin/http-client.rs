//! A client for the `http-server` example: lists the tools, calls `countdown` with
//! progress, then runs it as a task (protocol 2025-11-25): polls the task's status until
//! it is done, fetches its result, and cancels a second, longer one.
//!
//! Run the server first, then `cargo run -p modelctx-examples --bin http-client -- [URL]`
//! (default `http://127.0.0.1:8000/mcp`). The client speaks streamable HTTP and falls
//! back to the legacy HTTP+SSE transport when the server refuses its `initialize` POST
//! with 400, 404 or 405, as the spec's backwards-compatibility section describes: give
//! it `http://127.0.0.1:8000/sse` (or any legacy-only server) to see the fallback.

use futures::StreamExt;
use modelctx::client::{Client, ConnectMode};
use modelctx::session::RequestOptions;
use modelctx::sse::FallbackClientTransport;
use modelctx::types::{CallToolRequest, CallToolRequestParams, ListToolsRequest, TaskMetadata};
use serde_json::json;

fn countdown(from: u32) -> CallToolRequestParams {
    CallToolRequestParams::new("countdown").with_arguments(
        json!({"from": from})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

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
    let result = client
        .request_with::<CallToolRequest>(countdown(3), options)
        .await?;
    println!("result: {}", serde_json::to_string(&result)?);
    // Ends the session on the server too (HTTP DELETE).
    client.close().await;

    // Tasks belong to protocol 2025-11-25, whose sessions start with the handshake.
    let client = Client::builder("http-example-client", "1.0.0")
        .mode(ConnectMode::Handshake)
        .connect(FallbackClientTransport::new(&url)?)
        .await?;
    println!("connected again (protocol {})", client.protocol_version());

    // The server answers at once with a task; keep it an hour at most.
    let task = client
        .call_tool_as_task(countdown(3), TaskMetadata::new().with_ttl(3_600_000u64))
        .await?;
    println!("task {} created", task.id());
    // `tasks/get` at the interval the server suggests, until the task is done.
    let mut statuses = task.statuses();
    while let Some(status) = statuses.next().await {
        let status = status?;
        println!("task status: {}", status.status.as_str());
    }
    // `tasks/result`: the tool's result, as a plain call would have returned it.
    let result = task.result().await?;
    println!("task result: {}", serde_json::to_string(&result.content)?);

    // A longer one, cancelled while it runs.
    let long = client
        .call_tool_as_task(countdown(100), TaskMetadata::new())
        .await?;
    let cancelled = long.cancel().await?;
    println!("task {} {}", cancelled.task_id, cancelled.status.as_str());

    for task in client.list_all_tasks().await? {
        println!("listed: task {} {}", task.task_id, task.status.as_str());
    }
    client.close().await;
    Ok(())
}
