//! A server and a client in one process, connected by the in-memory transport.
//!
//! Run it with `cargo run -p modelctx-examples --bin in-memory`.

use modelctx::client::Client;
use modelctx::server::Server;
use modelctx::session::{Progress, RequestOptions};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ErrorData, ListToolsRequest,
    ListToolsResult, Tool,
};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let countdown = Tool::new(
        "countdown",
        json!({
            "type": "object",
            "properties": {"from": {"type": "integer", "minimum": 1}},
            "required": ["from"]
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
    );
    let server = Server::builder("countdown-server", "1.0.0")
        .instructions("Call `countdown` with a starting number.")
        .request_handler::<ListToolsRequest, _, _>(move |_, _| {
            let tool = countdown.clone();
            async move { Ok(ListToolsResult::new(vec![tool])) }
        })
        .request_handler::<CallToolRequest, _, _>(|params, cx| async move {
            let from = params
                .arguments
                .as_ref()
                .and_then(|a| a.get("from"))
                .and_then(|v| v.as_u64())
                .ok_or_else(|| ErrorData::invalid_params("`from` must be a positive integer"))?;
            for step in 1..=from {
                let progress = Progress::new(step as f64).with_total(from as f64);
                cx.report_progress(progress)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
            }
            Ok(CallToolResult::text("liftoff"))
        })
        .build();

    let (client_side, server_side) = modelctx::memory::pair();
    let _session = server.serve(server_side);
    let client = Client::builder("example-client", "1.0.0")
        .connect(client_side)
        .await?;
    println!(
        "connected to {} {} (protocol {})",
        client.server_info().name,
        client.server_info().version,
        client.protocol_version()
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
    client.close().await;
    Ok(())
}
