//! The README's typed client: runs `divider-server` (the path given as its argument)
//! as a child process, lists its tools, and calls `divide` with typed arguments,
//! reading its structured output as a type.
//!
//! `cargo build -p modelctx-examples && target/debug/divider-client target/debug/divider-server`

use modelctx::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize)]
struct Divide {
    a: i64,
    b: i64,
}

#[derive(Deserialize)]
struct Division {
    quotient: i64,
    remainder: i64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = std::env::args().nth(1).unwrap_or("./divider-server".into());
    let client = Client::builder("me", "1.0.0").connect_stdio(server).await?;
    println!("tools: {:?}", client.tool_names().await?);
    let divide = client.tool::<Divide, Division>("divide");
    let out = divide.call(&Divide { a: 17, b: 5 }).await?;
    println!("17 / 5 = {} remainder {}", out.quotient, out.remainder);
    client.close().await;
    Ok(())
}
