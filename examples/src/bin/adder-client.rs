//! The smallest complete stdio client (shown in the README): runs `adder-server` (the
//! path given as its argument) as a child process and calls its `add` tool.
//!
//! `cargo build -p modelctx-examples && target/debug/adder-client target/debug/adder-server`

use modelctx::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = std::env::args().nth(1).unwrap_or("./adder-server".into());
    let client = Client::builder("me", "1.0.0").connect_stdio(server).await?;
    let result = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
    println!("2 + 3 = {}", result.text());
    client.close().await;
    Ok(())
}
