//! The smallest complete stdio server: one tool, written with `#[tool]` (shown in the
//! README). Run it through `adder-client`.

use modelctx::macros::tool;
use modelctx::server::Server;

/// Adds two numbers.
#[tool]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("adder", "1.0.0").tool(add_tool())?.build();
    let session = server.serve(modelctx::stdio::stdio());
    session.closed().await;
    session.close().await;
    Ok(())
}
