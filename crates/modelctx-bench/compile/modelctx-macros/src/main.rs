//! A minimal stdio MCP server with one tool, `echo`, written with modelctx's `#[tool]`.

use modelctx::prelude::*;

/// Returns its text argument.
#[tool]
fn echo(text: String) -> String {
    text
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("echo", "0.0.0").tool(echo_tool())?.build();
    Ok(server.serve_stdio().await?)
}
