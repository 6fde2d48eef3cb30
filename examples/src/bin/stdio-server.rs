//! A stdio MCP server, for a desktop host (or any MCP client) to launch as a child
//! process: it speaks MCP on stdin/stdout, logs to stderr, and exits when stdin closes.
//!
//! Build it with `cargo build --release -p modelctx-examples --bin stdio-server`, then
//! register it with the host. Hosts that read an `mcpServers` JSON file take:
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "modelctx-example": {
//!       "command": "/absolute/path/to/target/release/stdio-server",
//!       "args": [],
//!       "env": { "STDIO_SERVER_GREETING": "Hello" }
//!     }
//!   }
//! }
//! ```
//!
//! Try it without a host: `cargo run -p modelctx-examples --bin stdio-client` spawns it
//! and calls its tools.
//!
//! Tools: `greet` (`{"name": "..."}`) and `countdown` (`{"from": 3}`, reports progress).
//! Nothing but protocol messages may reach stdout, so every log line here goes to
//! stderr (with `tracing_subscriber`, build it with `.with_writer(std::io::stderr)`).

use modelctx::server::Server;
use modelctx::session::Progress;
use modelctx::stdio::StdioOptions;
use modelctx::types::{
    CallToolRequest, CallToolResult, ErrorData, ListToolsRequest, ListToolsResult, Tool,
};
use serde_json::{Value, json};

fn schema(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let greeting = std::env::var("STDIO_SERVER_GREETING").unwrap_or_else(|_| "Hello".into());
    let tools = vec![
        Tool::new(
            "greet",
            schema(json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            })),
        ),
        Tool::new(
            "countdown",
            schema(json!({
                "type": "object",
                "properties": {"from": {"type": "integer", "minimum": 1, "maximum": 100}},
                "required": ["from"]
            })),
        ),
    ];
    let server = Server::builder("modelctx-stdio-example", env!("CARGO_PKG_VERSION"))
        .instructions("Call `greet` with a name, or `countdown` with a starting number.")
        .request_handler::<ListToolsRequest, _, _>(move |_, _| {
            let tools = tools.clone();
            async move { Ok(ListToolsResult::new(tools)) }
        })
        .request_handler::<CallToolRequest, _, _>(move |params, cx| {
            let greeting = greeting.clone();
            async move {
                let args = params.arguments.unwrap_or_default();
                match params.name.as_str() {
                    "greet" => {
                        let name = args
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(|| ErrorData::invalid_params("`name` must be a string"))?;
                        eprintln!("stdio-server: greeting {name}");
                        Ok(CallToolResult::text(format!("{greeting}, {name}!")))
                    }
                    "countdown" => {
                        let from = args
                            .get("from")
                            .and_then(Value::as_u64)
                            .filter(|n| (1..=100).contains(n))
                            .ok_or_else(|| {
                                ErrorData::invalid_params("`from` must be an integer in 1..=100")
                            })?;
                        for step in 1..=from {
                            let progress = Progress::new(step as f64).with_total(from as f64);
                            cx.report_progress(progress)
                                .await
                                .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                        }
                        Ok(CallToolResult::text("liftoff"))
                    }
                    other => Err(ErrorData::invalid_params(format!("unknown tool `{other}`"))),
                }
            }
        })
        .build();

    let options = StdioOptions::new().on_diagnostic(|d| eprintln!("stdio-server: {d}"));
    let session = server.serve(modelctx::stdio::stdio_with(options));
    eprintln!("stdio-server: serving on stdin/stdout");
    session.closed().await;
    // The session ended with stdin; let the writer finish what it was writing.
    session.close().await;
    eprintln!("stdio-server: session ended, exiting");
}
