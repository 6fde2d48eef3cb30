//! A client that runs any stdio MCP server as a child process, lists its tools and
//! calls one.
//!
//! ```text
//! stdio-client [--era 2025|2026] [--call TOOL [ARGUMENTS_JSON]] [--] [PROGRAM [ARGS...]]
//! ```
//!
//! `--era` pins the protocol era (by default the client probes `server/discover` and
//! falls back to the handshake). A form the server asks for is filled in with the name
//! in `$STDIO_CLIENT_NAME` (default "Ada"):
//!
//! ```text
//! cargo run -p modelctx-examples --bin stdio-client -- --era 2025 --call introduce
//! cargo run -p modelctx-examples --bin stdio-client -- --era 2026 --call introduce
//! ```
//!
//! Without a program it runs this package's `stdio-server` (built next to this binary)
//! and calls `countdown` with `{"from": 3}`:
//!
//! ```text
//! cargo build -p modelctx-examples --bin stdio-server
//! cargo run -p modelctx-examples --bin stdio-client
//! cargo run -p modelctx-examples --bin stdio-client -- --call greet '{"name":"Ada"}' -- target/debug/stdio-server
//! ```
//!
//! The server's stderr is printed with a `[server]` prefix; when the work is done the
//! client shuts the server down (close stdin, then `SIGTERM`, then kill) and prints how
//! it exited.

use std::ffi::OsString;
use std::time::Duration;

use modelctx::client::{Client, ConnectMode, FormAnswer};
use modelctx::session::RequestOptions;
use modelctx::stdio::{ChildProcess, Stderr, StdioOptions};
use modelctx::types::{CallToolRequest, CallToolRequestParams, ListToolsRequest};
use serde_json::{Value, json};

struct Cli {
    era: ConnectMode,
    call: Option<(String, Value)>,
    program: OsString,
    args: Vec<OsString>,
}

fn parse() -> Result<Cli, String> {
    let mut rest: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut era = ConnectMode::Auto;
    if rest.first().is_some_and(|a| a == "--era") {
        rest.remove(0);
        era = match rest.first().and_then(|e| e.to_str()) {
            Some("2025") => ConnectMode::Handshake,
            Some("2026") => ConnectMode::Discover,
            _ => return Err("--era needs 2025 or 2026".into()),
        };
        rest.remove(0);
    }
    let mut call = None;
    if rest.first().is_some_and(|a| a == "--call") {
        rest.remove(0);
        if rest.is_empty() {
            return Err("--call needs a tool name".into());
        }
        let tool = rest.remove(0).to_string_lossy().into_owned();
        let mut args = json!({});
        if rest.first().is_some_and(|a| a != "--") {
            let text = rest.remove(0).to_string_lossy().into_owned();
            args = serde_json::from_str(&text).map_err(|e| format!("bad arguments: {e}"))?;
        }
        call = Some((tool, args));
    }
    if rest.first().is_some_and(|a| a == "--") {
        rest.remove(0);
    }
    if rest.is_empty() {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let sibling = exe.with_file_name(format!("stdio-server{}", std::env::consts::EXE_SUFFIX));
        let call = call.or_else(|| Some(("countdown".into(), json!({"from": 3}))));
        return Ok(Cli {
            era,
            call,
            program: sibling.into_os_string(),
            args: Vec::new(),
        });
    }
    let program = rest.remove(0);
    Ok(Cli {
        era,
        call,
        program,
        args: rest,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = parse()?;
    let child = ChildProcess::new(&cli.program)
        .args(&cli.args)
        .stderr(Stderr::lines(|line| eprintln!("[server] {line}")))
        .options(StdioOptions::new().on_diagnostic(|d| eprintln!("[stdio] {d}")))
        .grace_period(Duration::from_secs(2))
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", cli.program.to_string_lossy()))?;
    let handle = child.handle();

    let name = std::env::var("STDIO_CLIENT_NAME").unwrap_or_else(|_| "Ada".into());
    let client = Client::builder("modelctx-stdio-client", env!("CARGO_PKG_VERSION"))
        .mode(cli.era)
        .form_elicitation(move |form, _cx| {
            let name = name.clone();
            async move {
                println!("the server asks: {}", form.message());
                let mut answer = form.prefilled;
                answer.insert("name".into(), name.into());
                Ok(FormAnswer::Accept(answer))
            }
        })
        .connect(child)
        .await?;
    println!(
        "connected to {} {} (protocol {})",
        client.server_info().name,
        client.server_info().version,
        client.protocol_version()
    );

    let tools = client.request::<ListToolsRequest>(None).await?;
    for tool in &tools.tools {
        let about = tool.description.as_deref().unwrap_or("");
        println!("tool: {} {about}", tool.name);
    }

    if let Some((name, args)) = cli.call {
        let arguments = args.as_object().cloned().unwrap_or_default();
        let params = CallToolRequestParams::new(name.clone()).with_arguments(arguments);
        let options = RequestOptions::new().on_progress(|p| {
            println!("progress {}/{}", p.progress, p.total.unwrap_or_default());
        });
        let result = client
            .request_with::<CallToolRequest>(params, options)
            .await?;
        println!("{name} -> {}", serde_json::to_string(&result)?);
    }

    client.close().await;
    let outcome = handle.shutdown().await?;
    println!("server exited ({:?}): {}", outcome.step(), outcome.status());
    Ok(())
}
