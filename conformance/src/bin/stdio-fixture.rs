//! The server the stdio conformance tests run as a real child process.
//!
//! `stdio-fixture [serve] [--linger | --stubborn]` serves one MCP session on
//! stdin/stdout with the SDK's server and stdio transport, then exits when stdin closes.
//! Its tools: `greet` (`{"name"}`: a text with a newline in it), `countdown` (`{"from"}`:
//! progress notifications, then a result), `shout` (`{"text"}`: writes the text to
//! stderr), `crash` (exits with code 3 mid-request). On stderr it writes
//! `stdio-fixture: ready` once serving, `stdio-fixture: impure input: ...` for any input
//! line that is not a valid message, and `stdio-fixture: stdin closed` when the session
//! ends. `--linger` keeps running after stdin closes (until a signal ends it);
//! `--stubborn` also ignores `SIGTERM`.
//!
//! `stdio-fixture echo` copies stdin to stdout unchanged: a client's own lines come back
//! to it, so a test can check what the client writes.

use std::time::Duration;

use modelctx_server::Server;
use modelctx_session::Progress;
use modelctx_stdio::StdioOptions;
use modelctx_types::{
    CallToolRequest, CallToolResult, ErrorData, ListToolsRequest, ListToolsResult, Tool,
};
use serde_json::{Value, json};

const NAME: &str = "stdio-fixture";

fn tool(name: &str, schema: Value) -> Tool {
    Tool::new(name, schema.as_object().cloned().unwrap_or_default())
}

fn server() -> Server {
    let object = json!({"type": "object"});
    let tools = vec![
        tool("greet", object.clone()),
        tool("countdown", object.clone()),
        tool("shout", object.clone()),
        tool("crash", object),
    ];
    Server::builder(NAME, "1.0.0")
        .request_handler::<ListToolsRequest, _, _>(move |_, _| {
            let tools = tools.clone();
            async move { Ok(ListToolsResult::new(tools)) }
        })
        .request_handler::<CallToolRequest, _, _>(|params, cx| async move {
            let args = params.arguments.unwrap_or_default();
            let text = |key: &str| {
                args.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            match params.name.as_str() {
                "greet" => Ok(CallToolResult::text(format!(
                    "Hello, {}!\nThis line follows a newline.",
                    text("name")
                ))),
                "countdown" => {
                    let from = args
                        .get("from")
                        .and_then(Value::as_u64)
                        .unwrap_or(1)
                        .min(100);
                    for step in 1..=from {
                        cx.report_progress(Progress::new(step as f64).with_total(from as f64))
                            .await
                            .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                    }
                    Ok(CallToolResult::text("liftoff"))
                }
                "shout" => {
                    eprintln!("{NAME}: {}", text("text"));
                    Ok(CallToolResult::text("shouted"))
                }
                "crash" => std::process::exit(3),
                other => Err(ErrorData::invalid_params(format!("unknown tool {other}"))),
            }
        })
        .build()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("echo") {
        let copied = tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::stdout()).await;
        if let Err(e) = copied {
            eprintln!("{NAME}: echo failed: {e}");
        }
        return;
    }
    let linger = args.iter().any(|a| a == "--linger" || a == "--stubborn");
    // Registering a handler replaces the default action (exit) of SIGTERM.
    #[cfg(unix)]
    let _sigterm = if args.iter().any(|a| a == "--stubborn") {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(handler) => Some(handler),
            Err(e) => {
                eprintln!("{NAME}: cannot handle SIGTERM: {e}");
                std::process::exit(2);
            }
        }
    } else {
        None
    };
    let options = StdioOptions::new().on_diagnostic(|d| eprintln!("{NAME}: impure input: {d}"));
    let session = server().serve(modelctx_stdio::stdio_with(options));
    eprintln!("{NAME}: ready");
    session.closed().await;
    // The session ended with stdin; let the writer finish what it was writing.
    session.close().await;
    eprintln!("{NAME}: stdin closed");
    if linger {
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
}
