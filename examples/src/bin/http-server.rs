//! A streamable HTTP server with one long-running tool, `countdown`, which reports
//! progress and may run as a task (protocol 2025-11-25): the client gets the task at
//! once, polls it, fetches the result when it is done, or cancels it. The same server is
//! reachable over the legacy HTTP+SSE transport (2024-11-05) at `/sse`, for hosts that
//! speak only that.
//!
//! Run it with `cargo run -p modelctx-examples --bin http-server -- [--stateless] [--json]
//! [--port N]` (default port 8000), then the `http-client` example against it (with
//! `http://127.0.0.1:8000/sse` as its URL it falls back to the legacy transport).
//!
//! - default: stateful (an `Mcp-Session-Id` per client), SSE answers, resumable;
//! - `--stateless`: a fresh pre-initialised session per POST, no session ids;
//! - `--json`: each request is answered with one `application/json` body.
//!
//! It binds 127.0.0.1 only; the default Origin and Host checks admit loopback names.

use std::time::Duration;

use modelctx::http::{
    HttpServerTransport, StreamableHttpServerConfig, StreamableHttpService, hosting,
};
use modelctx::macros::tool;
use modelctx::server::{Context, Server, TaskConfig};
use modelctx::session::{Progress, SessionConfig};
use modelctx::sse::{SseServerConfig, SseService};
use modelctx::types::TaskSupport;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long each step of the countdown takes.
const STEP: Duration = Duration::from_millis(500);

/// Counts down from `from`, a step every half second, reporting progress
#[tool]
async fn countdown(
    /// Where to start, from 1 to 100.
    #[schemars(range(min = 1, max = 100))]
    from: u32,
    cx: Context,
) -> Result<&'static str, Error> {
    if !(1..=100).contains(&from) {
        return Err("`from` must be an integer in 1..=100".into());
    }
    for step in 1..=from {
        tokio::select! {
            () = tokio::time::sleep(STEP) => {}
            // The client cancelled the call, or the task (`tasks/cancel`).
            () = cx.cancellation().cancelled() => return Err("cancelled".into()),
        }
        // Progress goes to the client's progress token, also once the call runs as a
        // task.
        let progress = Progress::new(f64::from(step)).with_total(f64::from(from));
        cx.report_progress(progress).await?;
    }
    Ok("liftoff")
}

fn countdown_server() -> Result<Server, Error> {
    // A plain call waits for the result; a task-augmented one gets a task at once.
    let countdown = countdown_tool().task_support(TaskSupport::Optional);
    let server = Server::builder("countdown-http", "1.0.0")
        .instructions("Call `countdown` with a starting number, as a task if it is a long one.")
        // Tasks are kept in memory; clients are told to poll every 250 ms.
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(250)))
        .tool(countdown)?
        .build();
    Ok(server)
}

/// The session settings the transport asks for (pre-initialised and without
/// server-to-client requests in stateless mode).
fn session_config(transport: &HttpServerTransport) -> SessionConfig {
    let mut config = SessionConfig::server();
    if transport.needs_pre_initialized_session() {
        config = config.pre_initialized();
    }
    if !transport.allows_outbound_requests() {
        config = config.without_outbound_requests();
    }
    config
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut config = StreamableHttpServerConfig::default()
        .on_error(|rejection| eprintln!("rejected ({}): {}", rejection.status, rejection.reason));
    let mut port = 8000u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stateless" => config = config.stateless(),
            "--json" => config = config.json_response(),
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a number")?;
            }
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let mode = format!(
        "{}, {}",
        if config.stateful {
            "stateful"
        } else {
            "stateless"
        },
        if config.json_response {
            "JSON answers"
        } else {
            "SSE answers"
        }
    );
    let server = countdown_server()?;
    // One server behind both transports: streamable HTTP at /mcp, and the legacy
    // HTTP+SSE transport (2024-11-05) at /sse + /messages for older hosts, with the
    // same protections.
    let sse_config = SseServerConfig::matching(&config);
    let header_timeout = config.header_read_timeout;
    let for_http = server.clone();
    let http = StreamableHttpService::with_config(config, move |transport| {
        let config = session_config(&transport);
        for_http.serve_with(transport, config);
    });
    let sse = SseService::with_config(sse_config, move |transport| {
        server.serve(transport);
    });
    let router = sse.router().nest_service("/mcp", http.router());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // Logs go to stderr; stdout stays free for whatever runs this.
    let addr = listener.local_addr()?;
    eprintln!("MCP endpoint: http://{addr}/mcp ({mode})");
    eprintln!("legacy SSE endpoint: http://{addr}/sse");
    let shutdown = async move {
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("shutting down");
        // Streams last as long as their sessions: end them so the server can stop.
        http.close_all_sessions();
        sse.close_all_sessions();
    };
    // TCP_NODELAY on every connection, the header read timeout, graceful shutdown.
    hosting::serve_router(listener, router, header_timeout, shutdown).await?;
    Ok(())
}
