//! The smallest complete stdio server: one tool, written with `#[tool]` (shown in the
//! README). Run it through `adder-client`.

use modelctx::prelude::*;

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("adder", "1.0.0").tool(add_tool())?.build();
    Ok(server.serve_stdio().await?)
}
