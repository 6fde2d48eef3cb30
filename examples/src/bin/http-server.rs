//! A streamable HTTP server with one tool, `countdown`, which reports progress; the same
//! server is reachable over the legacy HTTP+SSE transport (2024-11-05) at `/sse`, for
//! hosts that speak only that.
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

use modelctx::http::{
    HttpServerTransport, StreamableHttpServerConfig, StreamableHttpService, hosting,
};
use modelctx::server::Server;
use modelctx::session::{Progress, SessionConfig};
use modelctx::sse::{SseServerConfig, SseService};
use modelctx::types::{
    CallToolRequest, CallToolResult, ErrorData, ListToolsRequest, ListToolsResult, Tool,
};
use serde_json::json;

fn countdown_server() -> Server {
    let countdown = Tool::new(
        "countdown",
        json!({
            "type": "object",
            "properties": {"from": {"type": "integer", "minimum": 1, "maximum": 100}},
            "required": ["from"]
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
    );
    Server::builder("countdown-http", "1.0.0")
        .instructions("Call `countdown` with a starting number.")
        .request_handler::<ListToolsRequest, _, _>(move |_, _| {
            let tool = countdown.clone();
            async move { Ok(ListToolsResult::new(vec![tool])) }
        })
        .request_handler::<CallToolRequest, _, _>(|params, cx| async move {
            let from = params
                .arguments
                .as_ref()
                .and_then(|a| a.get("from"))
                .and_then(|v| v.as_u64())
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| ErrorData::invalid_params("`from` must be an integer in 1..=100"))?;
            for step in 1..=from {
                // Progress travels on this request's SSE stream, ahead of the result.
                let progress = Progress::new(step as f64).with_total(from as f64);
                cx.report_progress(progress)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
            }
            Ok(CallToolResult::text("liftoff"))
        })
        .build()
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
async fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    let server = countdown_server();
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
