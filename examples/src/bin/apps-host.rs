//! A web host for MCP Apps (SEP-1865, `io.modelcontextprotocol/ui`): it connects to an
//! MCP server started as a stdio child, and shows a tool's UI in a browser page, with the
//! Rust `AppBridge` as the host end of the View<->Host dialect.
//!
//! The page (`examples/apps/host.html`) is only the renderer, built as the extension asks
//! of a web host: the view runs inside a *sandbox proxy*, a frame of another origin (a
//! second loopback port of this program, `examples/apps/sandbox.html`) with the
//! permissions `allow-scripts allow-same-origin`. The proxy announces itself
//! (`ui/notifications/sandbox-proxy-ready`); the bridge answers with the view's HTML and
//! declared origins (`ui/notifications/sandbox-resource-ready`); the proxy loads the HTML
//! into an inner `<iframe sandbox="allow-scripts">` under a Content Security Policy built
//! from those origins, and passes every other message between the view and the page. The
//! page POSTs what comes from the proxy to this program, for the bridge, and posts the
//! bridge's messages back from a server-sent event stream. The bridge does the rest: it
//! answers `ui/initialize`, sends the tool's input and result, forwards the view's calls
//! to the server through the client (only tools whose visibility includes `app`), and
//! refuses everything else.
//!
//! With `--app-bridge PATH` the same program also serves `/official`, where the page
//! uses the official TypeScript `AppBridge` (`@modelcontextprotocol/ext-apps`, bundled
//! for the browser into the file at PATH) instead, with the same proxy; its calls to the
//! server come here and go through the same client, with the same visibility rule.
//!
//! ```text
//! cargo run -p modelctx-examples --bin apps-host -- --port 8080 -- \
//!     target/debug/apps-server --sdk node_modules/@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js
//! ```
//!
//! then open `http://127.0.0.1:8080/?tool=show_counter&arguments={"label":"visits"}`.
//! It listens on loopback only, and answers only requests addressed to a loopback name
//! and, when a browser says where they come from, from its own pages: its page can make
//! it call the server's tools, other sites cannot.
//!
//! The proxy places the CSP `<meta>` right after the doctype, before any of the view's
//! markup, with the same directives as `SandboxPolicy` (the browser run checks that the two
//! are equal), and passes messages to and from the host page's origin only. The page POSTs
//! the proxy's messages in order (one promise chain). Fetch and server-sent events rather
//! than a WebSocket: axum's `ws` feature would bring in tokio-tungstenite for what two
//! plain requests do. `tests/apps_host.rs` makes the pages' requests without a browser;
//! `cargo xtask browser` is the test in headless Chromium.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use modelctx::apps::bridge::{AppBridge, Decision, HostContext, Platform, Theme, UiView, ViewLink};
use modelctx::apps::{EXTENSION_ID, callable_by_app, client_settings};
use modelctx::client::{Client, ClientExtension};
use modelctx::stdio::{ChildProcess, Stderr};
use modelctx::types::{ErrorData, JsonObject};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const HOST_PAGE: &str = include_str!("../../apps/host.html");
const OFFICIAL_PAGE: &str = include_str!("../../apps/official-host.html");
const SANDBOX_PAGE: &str = include_str!("../../apps/sandbox.html");

/// What the page is sent on a view's event stream.
enum Sent {
    /// A message of the bridge for the view.
    ToView(Value),
    /// A line for the host's log.
    Log(String),
}

/// One open view.
struct Opened {
    view: UiView,
    arguments: JsonObject,
    /// The Rust bridge and the channel to it (absent for the official bridge's page).
    bridge: Option<RustView>,
}

struct RustView {
    /// Kept: dropping the bridge stops it.
    _bridge: Arc<AppBridge>,
    to_bridge: mpsc::Sender<Value>,
    /// Taken by the page's event stream.
    events: Option<mpsc::UnboundedReceiver<Sent>>,
}

struct Host {
    client: Client,
    views: Mutex<HashMap<u64, Opened>>,
    next: AtomicU64,
    /// The bundled official `AppBridge`, for `/official`.
    official: Option<String>,
    /// The sandbox proxy's URL, on an origin of its own.
    sandbox: String,
}

type Shared = Arc<Host>;

fn fail(status: StatusCode, message: impl Into<String>) -> Response {
    (status, message.into()).into_response()
}

fn json_response(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn html(page: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        page,
    )
        .into_response()
}

fn parse(body: &Bytes) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))
}

/// `POST /views` `{"tool", "arguments", "bridge": "rust" | "official"}`: reads the tool's
/// UI resource and, for the Rust bridge, starts it and runs the tool.
async fn open(State(host): State<Shared>, body: Bytes) -> Response {
    let request = match parse(&body) {
        Ok(request) => request,
        Err(why) => return fail(StatusCode::BAD_REQUEST, why),
    };
    let Some(name) = request["tool"].as_str() else {
        return fail(StatusCode::BAD_REQUEST, "tool must be a string");
    };
    let arguments = match &request["arguments"] {
        Value::Null => JsonObject::new(),
        Value::Object(arguments) => arguments.clone(),
        _ => return fail(StatusCode::BAD_REQUEST, "arguments must be an object"),
    };
    let official = match request["bridge"].as_str() {
        None | Some("rust") => false,
        Some("official") if host.official.is_some() => true,
        Some(other) => {
            return fail(
                StatusCode::BAD_REQUEST,
                format!("no {other} bridge here (the official one needs --app-bridge)"),
            );
        }
    };
    let tools = match host.client.list_all_tools().await {
        Ok(tools) => tools,
        Err(e) => return fail(StatusCode::BAD_GATEWAY, format!("tools/list: {e}")),
    };
    let Some(tool) = tools.iter().find(|t| t.name == name) else {
        return fail(
            StatusCode::NOT_FOUND,
            format!("the server has no tool {name}"),
        );
    };
    let view = match UiView::load(&host.client, tool).await {
        Ok(view) => view,
        Err(e) => return fail(StatusCode::BAD_GATEWAY, e.to_string()),
    };
    let id = host.next.fetch_add(1, Ordering::Relaxed);
    let policy = view.sandbox(Default::default());
    let mut answer = json!({
        "id": id,
        "sandbox": host.sandbox,
        "csp": policy.csp(),
        "tool": serde_json::to_value(view.tool()).unwrap_or(Value::Null),
        "arguments": arguments,
    });
    if official {
        // What the official bridge's page sends the proxy (the Rust bridge sends it
        // itself).
        answer["html"] = json!(view.html());
        answer["domains"] = serde_json::to_value(policy.domains()).unwrap_or(Value::Null);
        if !policy.permissions().is_empty() {
            answer["permissions"] =
                serde_json::to_value(policy.permissions()).unwrap_or(Value::Null);
        }
    }
    for origin in policy.ignored() {
        eprintln!("apps-host: the view's declared origin {origin} is left out of its sandbox");
    }
    let bridge = (!official).then(|| start(&host, &view, arguments.clone(), id));
    host.views.lock().unwrap_or_else(|p| p.into_inner()).insert(
        id,
        Opened {
            view,
            arguments,
            bridge,
        },
    );
    json_response(&answer)
}

/// Starts the Rust bridge for a view and runs its tool.
fn start(host: &Shared, view: &UiView, arguments: JsonObject, id: u64) -> RustView {
    let (events_tx, events) = mpsc::unbounded_channel::<Sent>();
    let (to_view, mut from_bridge) = mpsc::channel::<Value>(64);
    let (to_bridge, from_page) = mpsc::channel::<Value>(64);
    let log = {
        let events = events_tx.clone();
        move |line: String| {
            eprintln!("apps-host: view {id}: {line}");
            let _ = events.send(Sent::Log(line));
        }
    };
    let (on_message, on_link, on_log) = (log.clone(), log.clone(), log.clone());
    let bridge = AppBridge::builder(host.client.clone(), view.clone())
        .host_info("modelctx apps-host", env!("CARGO_PKG_VERSION"))
        .host_context(
            HostContext::new()
                .theme(Theme::Light)
                .platform(Platform::Web)
                .locale("en-GB"),
        )
        .on_message(move |message| {
            on_message(format!(
                "the view adds to the conversation: {:?}",
                message.content
            ));
            async { Decision::Allow }
        })
        .on_open_link(move |url| {
            on_link(format!("the view asked to open {url}: refused"));
            async { Decision::deny("this host opens no links") }
        })
        .on_log(move |entry| on_log(format!("view log [{}]: {}", entry.level, entry.data)))
        .start(ViewLink::new(to_view, from_page));
    let bridge = Arc::new(bridge);
    // The bridge's messages for the view, onto the page's stream.
    let forward = events_tx.clone();
    tokio::spawn(async move {
        while let Some(message) = from_bridge.recv().await {
            if forward.send(Sent::ToView(message)).is_err() {
                break;
            }
        }
    });
    let watched = bridge.clone();
    let told = log.clone();
    tokio::spawn(async move {
        if watched.initialized().await.is_ok() {
            told("view initialized".into());
        }
    });
    // The tool runs while the view loads: the bridge holds its input and result until
    // the view has initialized.
    let running = bridge.clone();
    let name = view.tool().name.clone();
    tokio::spawn(async move {
        match running.call_tool(arguments).await {
            Ok(result) => log(format!(
                "{name} answered (is_error: {}); result sent to the view",
                result.is_error()
            )),
            Err(e) => log(format!("{name} failed: {e}")),
        }
    });
    RustView {
        _bridge: bridge,
        to_bridge,
        events: Some(events),
    }
}

/// `GET /views/{id}/events`: the bridge's messages for the view (unnamed events) and
/// the host's log (`log` events); one stream per view.
async fn events(State(host): State<Shared>, Path(id): Path<u64>) -> Response {
    let taken = {
        let mut views = host.views.lock().unwrap_or_else(|p| p.into_inner());
        views
            .get_mut(&id)
            .and_then(|v| v.bridge.as_mut())
            .map(|b| b.events.take())
    };
    let receiver = match taken {
        None => return fail(StatusCode::NOT_FOUND, "no such view on the Rust bridge"),
        Some(None) => return fail(StatusCode::CONFLICT, "the view's stream is taken"),
        Some(Some(receiver)) => receiver,
    };
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        let event = match receiver.recv().await? {
            Sent::ToView(message) => Event::default().data(message.to_string()),
            Sent::Log(line) => Event::default().event("log").data(line),
        };
        Some((Ok::<_, Infallible>(event), receiver))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `POST /views/{id}/messages`: one message from the view, for the bridge.
async fn message(State(host): State<Shared>, Path(id): Path<u64>, body: Bytes) -> Response {
    let message = match parse(&body) {
        Ok(message) => message,
        Err(why) => return fail(StatusCode::BAD_REQUEST, why),
    };
    let to_bridge = {
        let views = host.views.lock().unwrap_or_else(|p| p.into_inner());
        views
            .get(&id)
            .and_then(|v| v.bridge.as_ref())
            .map(|b| b.to_bridge.clone())
    };
    let Some(to_bridge) = to_bridge else {
        return fail(StatusCode::NOT_FOUND, "no such view on the Rust bridge");
    };
    if to_bridge.send(message).await.is_err() {
        return fail(StatusCode::GONE, "the view's bridge is closed");
    }
    StatusCode::NO_CONTENT.into_response()
}

/// The result of a call as the official bridge's page takes it: the result, or the
/// JSON-RPC error to answer the view with.
async fn call(host: &Host, name: &str, arguments: JsonObject) -> Value {
    let outcome = host
        .client
        .call_tool(name, Value::Object(arguments))
        .await
        .map_err(|e| match e.protocol_error() {
            Some(error) => error.clone(),
            None => ErrorData::internal_error(format!("the server did not answer: {e}")),
        });
    match outcome {
        Ok(result) => json!({ "result": result }),
        Err(error) => json!({ "error": error }),
    }
}

/// `POST /views/{id}/run`: the view's own tool with its arguments (the official
/// bridge's page sends the result on).
async fn run(State(host): State<Shared>, Path(id): Path<u64>) -> Response {
    let found = {
        let views = host.views.lock().unwrap_or_else(|p| p.into_inner());
        views
            .get(&id)
            .map(|v| (v.view.tool().name.clone(), v.arguments.clone()))
    };
    let Some((name, arguments)) = found else {
        return fail(StatusCode::NOT_FOUND, "no such view");
    };
    json_response(&call(&host, &name, arguments).await)
}

/// `POST /views/{id}/call` `{"name", "arguments"}`: a `tools/call` of the view behind the
/// official bridge, with the rule the Rust bridge enforces: a tool of this server whose
/// visibility includes the app.
async fn call_for_view(State(host): State<Shared>, Path(id): Path<u64>, body: Bytes) -> Response {
    let params = match parse(&body) {
        Ok(params) => params,
        Err(why) => return fail(StatusCode::BAD_REQUEST, why),
    };
    if !host
        .views
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains_key(&id)
    {
        return fail(StatusCode::NOT_FOUND, "no such view");
    }
    let Some(name) = params["name"].as_str() else {
        return json_response(
            &json!({"error": ErrorData::invalid_params("name must be a string")}),
        );
    };
    let arguments = match &params["arguments"] {
        Value::Null => JsonObject::new(),
        Value::Object(arguments) => arguments.clone(),
        _ => {
            return json_response(
                &json!({"error": ErrorData::invalid_params("arguments must be an object")}),
            );
        }
    };
    let tools = match host.client.list_all_tools().await {
        Ok(tools) => tools,
        Err(e) => return fail(StatusCode::BAD_GATEWAY, format!("tools/list: {e}")),
    };
    let refusal = match tools.iter().find(|t| t.name == name) {
        None => Some(format!("Unknown tool: {name}")),
        Some(tool) if !callable_by_app(tool) => {
            Some(format!("the tool {name} is not visible to apps"))
        }
        Some(_) => None,
    };
    if let Some(refusal) = refusal {
        return json_response(&json!({"error": ErrorData::invalid_params(refusal)}));
    }
    json_response(&call(&host, name, arguments).await)
}

async fn official_page(State(host): State<Shared>) -> Response {
    if host.official.is_none() {
        return fail(
            StatusCode::NOT_FOUND,
            "start apps-host with --app-bridge PATH to serve the official bridge's page",
        );
    }
    html(OFFICIAL_PAGE)
}

async fn official_bundle(State(host): State<Shared>) -> Response {
    match &host.official {
        Some(bundle) => (
            [
                (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            bundle.clone(),
        )
            .into_response(),
        None => fail(StatusCode::NOT_FOUND, "no --app-bridge given"),
    }
}

/// Refuses a request addressed to another name than loopback's (DNS rebinding) or sent
/// by another site's page (its `Origin` is not this host's).
async fn own_pages_only(request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let loopback = ["127.0.0.1:", "localhost:", "[::1]:"]
        .iter()
        .any(|name| host.starts_with(name));
    let own = headers
        .get(header::ORIGIN)
        .is_none_or(|origin| origin.to_str().ok() == Some(&format!("http://{host}")));
    if !(loopback && own) {
        return fail(StatusCode::FORBIDDEN, "not one of this host's pages");
    }
    next.run(request).await
}

const USAGE: &str = "usage: apps-host [--port N] [--app-bridge PATH] -- COMMAND [ARGS...]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut port, mut official, mut rest) = (0u16, None, args.as_slice());
    let command = loop {
        match rest {
            [flag, value, more @ ..] if flag == "--port" => {
                port = value.parse().map_err(|_| USAGE)?;
                rest = more;
            }
            [flag, value, more @ ..] if flag == "--app-bridge" => {
                official = Some(
                    std::fs::read_to_string(value)
                        .map_err(|e| format!("cannot read the bundled AppBridge {value}: {e}"))?,
                );
                rest = more;
            }
            [dashes, program, more @ ..] if dashes == "--" => break (program, more),
            _ => return Err(USAGE.into()),
        }
    };
    let child = ChildProcess::new(command.0)
        .args(command.1)
        .stderr(Stderr::lines(|line| eprintln!("[server] {line}")))
        .spawn()?;
    let client = Client::builder("modelctx apps-host", env!("CARGO_PKG_VERSION"))
        .extension(ClientExtension::new(EXTENSION_ID).settings(client_settings()))
        .connect(child)
        .await?;
    // The sandbox proxy's origin: another port, so another origin than the host's.
    let sandbox_listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let sandbox = format!("http://{}/sandbox", sandbox_listener.local_addr()?);
    let host = Arc::new(Host {
        client,
        views: Mutex::new(HashMap::new()),
        next: AtomicU64::new(1),
        official,
        sandbox,
    });
    let proxy = Router::new()
        .route("/sandbox", get(|| async { html(SANDBOX_PAGE) }))
        .layer(middleware::from_fn(own_pages_only));
    tokio::spawn(async move { axum::serve(sandbox_listener, proxy).await });
    let app = Router::new()
        .route("/", get(|| async { html(HOST_PAGE) }))
        .route("/official", get(official_page))
        .route("/official/app-bridge.js", get(official_bundle))
        .route("/views", post(open))
        .route("/views/{id}/events", get(events))
        .route("/views/{id}/messages", post(message))
        .route("/views/{id}/run", post(run))
        .route("/views/{id}/call", post(call_for_view))
        .layer(middleware::from_fn(own_pages_only))
        .with_state(host.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("apps-host: listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    host.client.close().await;
    Ok(())
}
