//! The README's row (3) written with rmcp 3.11, doing what `divider-client` does: starts
//! `divider-server` (the path given as its argument) as a child process, lists its
//! tools, and calls `divide` with typed arguments, reading its structured output as a
//! type. The shortest form rmcp's public API allows; `cargo xtask interop` runs it.

use rmcp::model::{CallToolRequestParams, object};
use rmcp::{ServiceExt, transport::TokioChildProcess};
use serde::{Deserialize, Serialize};
use tokio::process::Command;

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
    let client = ().serve(TokioChildProcess::new(Command::new(server))?).await?;
    for tool in client.list_all_tools().await? {
        println!("tool: {}", tool.name);
    }
    let arguments = object(serde_json::to_value(Divide { a: 17, b: 5 })?);
    let call = CallToolRequestParams::new("divide").with_arguments(arguments);
    let out: Division = client.call_tool(call).await?.into_typed()?;
    println!("17 / 5 = {} remainder {}", out.quotient, out.remainder);
    client.cancel().await?;
    Ok(())
}
