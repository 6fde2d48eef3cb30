//! A minimal stdio MCP server with one tool, `echo`, built with modelctx.

use modelctx::server::Server;
use modelctx::types::{CallToolRequest, CallToolResult, ErrorData};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = Server::builder("echo", "0.0.0")
        .request_handler::<CallToolRequest, _, _>(|params, _| async move {
            let text = params
                .arguments
                .as_ref()
                .and_then(|a| a.get("text"))
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| ErrorData::invalid_params("`text` must be a string"))?;
            Ok(CallToolResult::text(text))
        })
        .build();
    let session = server.serve(modelctx::stdio::stdio());
    session.closed().await;
    session.close().await;
}
