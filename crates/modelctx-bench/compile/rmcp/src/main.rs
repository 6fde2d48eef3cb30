//! A minimal stdio MCP server with one tool, `echo`, built with rmcp.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("`text` must be a string", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Ok(running) = Echo.serve(rmcp::transport::stdio()).await {
        let _ = running.waiting().await;
    }
}
