//! A streamable HTTP server with two long-running tools that report progress:
//! `countdown`, which may run as a task (protocol 2025-11-25: the client gets the task
//! at once, polls it, fetches the result when it is done, or cancels it) and has no
//! effect (its annotations say it is read-only and idempotent), and `ticket`, which
//! issues a new number every call (so nothing says it may be repeated) and updates the
//! resource `tickets://last`, which clients may watch; and `greet`, which asks the user
//! who is there (a form) before it answers. The same server is
//! reachable over the legacy HTTP+SSE transport (2024-11-05) at `/sse`, for hosts that
//! speak only that.
//!
//! Run it with `cargo run -p modelctx-examples --bin http-server -- [--sessionless] [--json]
//! [--port N] [--redis URL] [--access-log]` (default port 8000; `--port 0` picks a free
//! one), then the
//! `http-client` example against it (with `http://127.0.0.1:8000/sse` as its URL it
//! falls back to the legacy transport).
//!
//! - default: stateful (an `Mcp-Session-Id` per client), SSE answers, resumable;
//! - `--sessionless`: a fresh pre-initialised session per POST, no session ids;
//! - `--json`: each request is answered with one `application/json` body;
//! - `--redis URL` (or the `MCP_REDIS_URL` environment variable): several instances
//!   behind one load balancer share one Redis — 2025-era sessions, resumable event
//!   streams, tasks, and list-change and resource-update announcements — and seal
//!   multi round-trip state with the key in `MCP_STATE_KEY` (64 hex digits, the same
//!   for every instance). No affinity is needed: any instance serves any request. When
//!   an instance stops during a call, a client that resumes the call's stream on
//!   another instance gets the rest: `countdown` is run again there (its progress
//!   already sent is not repeated), an interrupted `ticket` is answered with an error
//!   saying it may or may not have run (see README, "Several instances behind a load
//!   balancer").
//! - `--access-log`: a line on stderr for each request as it arrives, `access: <HTTP
//!   method> <MCP method>`, to see which instance serves what behind a load balancer.
//!
//! It binds 127.0.0.1 only; the default Origin and Host checks admit loopback names.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use modelctx::http::{StreamableHttpServerConfig, StreamableHttpService, hosting};
use modelctx::macros::tool;
use modelctx::redis;
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Elicited, ResourceDef, Server, TaskConfig};
use modelctx::session::Progress;
use modelctx::sse::{SseServerConfig, SseService};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long each step of the countdown takes.
const STEP: Duration = Duration::from_millis(500);

/// Counts down from `from`, a step every half second, reporting progress
// A plain call waits for the result; a task-augmented one gets a task at once.
// Counting down changes nothing: a call interrupted by the end of its instance may run
// again on another (with `--redis`).
#[tool(read_only, idempotent, task_support = "optional")]
async fn countdown(
    /// Where to start, from 1 to 100.
    #[schemars(range(min = 1, max = 100))]
    from: u32,
    cx: Context,
) -> Result<&'static str, Error> {
    if !(1..=100).contains(&from) {
        return Err("`from` must be an integer in 1..=100".into());
    }
    step_through(from, &cx).await?;
    Ok("liftoff")
}

/// Waits `steps` half-second steps, reporting progress after each.
async fn step_through(steps: u32, cx: &Context) -> Result<(), Error> {
    for step in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(STEP) => {}
            // The client cancelled the call, or the task (`tasks/cancel`).
            () = cx.cancellation().cancelled() => return Err("cancelled".into()),
        }
        // Progress goes to the client's progress token, also once the call runs as a
        // task.
        let progress = Progress::new(f64::from(step)).with_total(f64::from(steps));
        cx.report_progress(progress).await?;
    }
    Ok(())
}

/// Tickets this process issued.
static TICKETS: AtomicU64 = AtomicU64::new(0);

/// Takes the next ticket of this server process after `steps` half-second steps,
/// reporting progress
#[tool]
async fn ticket(
    /// How many steps to wait, from 1 to 100.
    #[schemars(range(min = 1, max = 100))]
    steps: u32,
    cx: Context,
) -> Result<String, Error> {
    if !(1..=100).contains(&steps) {
        return Err("`steps` must be an integer in 1..=100".into());
    }
    step_through(steps, &cx).await?;
    // The effect: every call that gets here takes a new number.
    let number = TICKETS.fetch_add(1, Ordering::Relaxed) + 1;
    // Clients watching the last ticket are told, whichever instance holds their stream.
    cx.server().notify_resource_updated(LAST_TICKET).await;
    Ok(format!("ticket {number}"))
}

/// The resource `ticket` updates.
const LAST_TICKET: &str = "tickets://last";

/// The last ticket this process issued, as a resource a client may watch
/// (`resources/subscribe` in 2025-11-25, `subscriptions/listen` in 2026-07-28).
fn last_ticket() -> ResourceDef {
    ResourceDef::new(LAST_TICKET, "last ticket", |_cx: Context| async {
        let last = TICKETS.load(Ordering::Relaxed);
        Ok::<_, Error>(if last == 0 {
            "no ticket yet".to_owned()
        } else {
            format!("ticket {last}")
        })
    })
    .mime_type("text/plain")
}

/// The form `greet` asks the user to fill in.
#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Visitor {
    /// Who is there.
    name: String,
}

/// Asks who is there, then greets them. In 2025-11-25 the question is a request to the
/// client in the middle of the call; in 2026-07-28 it ends the call's first round, and
/// the tool runs again with the answer on the client's retry — on whichever instance
/// the retry reaches (with `--redis`, every instance opens the sealed `requestState`).
#[tool]
async fn greet(cx: Context) -> Result<String, Error> {
    Ok(match cx.elicit_form::<Visitor>("Who is there?").await? {
        Elicited::Accepted(visitor) => format!("Hello, {}!", visitor.name),
        Elicited::Declined | Elicited::Cancelled => "Nobody there.".to_owned(),
    })
}

fn countdown_server(shared: Option<&Shared>) -> Result<Server, Error> {
    let mut builder = Server::builder("countdown-http", "1.0.0")
        .instructions(
            "Call `countdown` with a starting number, as a task if it is a long one; \
             `ticket` takes a numbered ticket; `greet` asks who is there.",
        )
        // Tasks are kept in memory (or Redis); clients are told to poll every 250 ms.
        // With Redis, a task whose instance stops is failed as interrupted once its
        // 5 s lease lapses (renewed every 1.7 s while it runs).
        .tasks(
            TaskConfig::new()
                .poll_interval(Duration::from_millis(250))
                .lease(Duration::from_secs(5)),
        )
        .tool(countdown_tool())?
        .tool(ticket_tool())?
        .tool(greet_tool())?
        .resource(last_ticket())?;
    if let Some(shared) = shared {
        builder = builder
            .task_store(shared.tasks.clone())
            .announcements(shared.announcements.clone())
            .request_state_key(shared.state_key);
    }
    Ok(builder.build())
}

/// What the instances behind one endpoint share.
struct Shared {
    sessions: Arc<redis::SessionRegistry>,
    events: Arc<redis::EventStore>,
    tasks: Arc<redis::TaskStore>,
    announcements: Arc<redis::Announcements>,
    state_key: [u8; 32],
}

/// Connects the Redis stores and reads the shared `requestState` key.
async fn shared(url: &str) -> Result<Shared, Error> {
    let key = std::env::var("MCP_STATE_KEY")
        .map_err(|_| "--redis needs MCP_STATE_KEY: 64 hex digits, the same on every instance")?;
    let state_key = parse_key(&key).ok_or("MCP_STATE_KEY must be 64 hex digits")?;
    let connect = |e: modelctx::redis::redis::RedisError| format!("cannot use Redis: {e}");
    Ok(Shared {
        sessions: Arc::new(
            redis::SessionRegistry::connect(url, redis::SessionRegistryConfig::default())
                .await
                .map_err(connect)?,
        ),
        events: Arc::new(
            redis::EventStore::connect(url, redis::EventStoreConfig::default())
                .await
                .map_err(connect)?,
        ),
        tasks: Arc::new(
            redis::TaskStore::connect(url, redis::TaskStoreConfig::default())
                .await
                .map_err(connect)?,
        ),
        announcements: Arc::new(
            redis::Announcements::connect(url, redis::AnnouncementsConfig::default())
                .await
                .map_err(connect)?,
        ),
        state_key,
    })
}

fn parse_key(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(key)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut config = StreamableHttpServerConfig::default()
        .on_error(|rejection| eprintln!("rejected ({}): {}", rejection.status, rejection.reason));
    let mut port = 8000u16;
    let mut redis = std::env::var("MCP_REDIS_URL").ok();
    let mut access_log = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sessionless" => config = config.sessionless(),
            "--json" => config = config.json_response(),
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a number")?;
            }
            "--redis" => redis = Some(args.next().ok_or("--redis needs a URL")?),
            "--access-log" => access_log = true,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let mode = format!(
        "{}, {}",
        if config.stateful {
            "stateful"
        } else {
            "sessionless"
        },
        if config.json_response {
            "JSON answers"
        } else {
            "SSE answers"
        }
    );
    let shared = match &redis {
        Some(url) => Some(shared(url).await?),
        None => None,
    };
    if let Some(shared) = &shared {
        config = config
            .event_store(shared.events.clone())
            .session_registry(shared.sessions.clone());
    }
    let server = countdown_server(shared.as_ref())?;
    // One server behind both transports: streamable HTTP at /mcp, and the legacy
    // HTTP+SSE transport (2024-11-05) at /sse + /messages for older hosts, with the
    // same protections.
    let sse_config = SseServerConfig::matching(&config);
    let header_timeout = config.header_read_timeout;
    let max_body = config.max_body_bytes;
    let for_http = server.clone();
    // A session-less transport's session starts initialised and sends no requests to the
    // client: `serve` applies what the transport says of itself.
    let http = StreamableHttpService::with_config(config, move |transport| {
        for_http.serve(transport);
    });
    let sse = SseService::with_config(sse_config, move |transport| {
        server.serve(transport);
    });
    let mut router = sse.router().nest_service("/mcp", http.router());
    if access_log {
        router = router.layer(axum::middleware::from_fn(move |request, next| {
            log_access(request, next, max_body)
        }));
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // Logs go to stderr; stdout stays free for whatever runs this.
    let addr = listener.local_addr()?;
    eprintln!("MCP endpoint: http://{addr}/mcp ({mode})");
    eprintln!("legacy SSE endpoint: http://{addr}/sse");
    if redis.is_some() {
        // Not the URL: it may carry a password.
        eprintln!("sharing sessions, events, tasks and announcements through Redis");
    }
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

/// Writes `access: <HTTP method> <MCP method>` to stderr as a request arrives: the
/// `Mcp-Method` header (2026-07-28), else the body's `method`, else `-`. The body is
/// read first (up to the endpoint's limit: a larger one is refused as the endpoint
/// would) and handed on unchanged.
async fn log_access(request: Request, next: Next, max_body: usize) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large").into_response();
    };
    let method = parts
        .headers
        .get("mcp-method")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            let message: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
            Some(message.get("method")?.as_str()?.to_owned())
        })
        .unwrap_or_else(|| "-".to_owned());
    eprintln!("access: {} {method}", parts.method);
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
