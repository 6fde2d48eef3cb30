//! A minimal stdio MCP server with one tool, `echo`, written with rmcp's tool macros.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServiceExt, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

struct Echo;

#[tool_router(server_handler)]
impl Echo {
    /// Returns its text argument.
    #[tool]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Ok(running) = Echo.serve(rmcp::transport::stdio()).await {
        let _ = running.waiting().await;
    }
}
