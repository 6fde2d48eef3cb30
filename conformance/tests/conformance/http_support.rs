//! Shared pieces of the streamable HTTP areas: a hosted `Server` on 127.0.0.1:0, raw
//! HTTP requests with SSE parsing, and a recording (and scriptable) front for the
//! client-transport tests.

use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use modelctx::http::{
    HttpClientHandle, StreamControl, StreamableHttpClientTransport, StreamableHttpServerConfig,
    StreamableHttpService,
};
use modelctx::server::{Server, ServerSession};
use modelctx::session::SessionConfig;
use modelctx::types::NotificationMethod;
use modelctx_conformance::within;
use serde_json::Value;
use tokio::sync::mpsc;

/// A test-only notification `test/note` carrying any JSON.
pub(crate) struct Note;
impl NotificationMethod for Note {
    const METHOD: &'static str = "test/note";
    type Params = Value;
}

/// One session the hosted server started.
pub(crate) struct Started {
    pub(crate) session: ServerSession,
    pub(crate) control: StreamControl,
    pub(crate) id: Option<String>,
}

/// What a request looked like when it reached the server.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: http::Method,
    pub(crate) headers: http::HeaderMap,
    pub(crate) status: http::StatusCode,
    pub(crate) at: tokio::time::Instant,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Answers some requests itself instead of the MCP endpoint.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Script {
    pub(crate) get_405: bool,
    pub(crate) delete_405: bool,
}

/// A `Server` hosted over streamable HTTP on a loopback port.
pub(crate) struct Hosted {
    pub(crate) url: String,
    pub(crate) service: StreamableHttpService,
    sessions: mpsc::UnboundedReceiver<Started>,
    seen: Arc<Mutex<Vec<Seen>>>,
    seen_changed: Arc<tokio::sync::Notify>,
    /// The stream control of the newest session, for handlers to reach.
    pub(crate) last_control: Arc<Mutex<Option<StreamControl>>>,
}

impl Hosted {
    /// The next session the server started.
    pub(crate) async fn session(&mut self) -> Started {
        within("the server to start a session", self.sessions.recv())
            .await
            .expect("the service is alive")
    }

    /// Every request that reached the server so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until a request matching `pred` reached the server; returns it.
    pub(crate) async fn wait_for(&self, what: &str, pred: impl Fn(&Seen) -> bool) -> Seen {
        within(what, async {
            loop {
                let changed = self.seen_changed.notified();
                if let Some(s) = self.seen().into_iter().find(|s| pred(s)) {
                    return s;
                }
                changed.await;
            }
        })
        .await
    }

    /// A client transport to this server with a quick reconnect.
    pub(crate) fn transport(&self) -> (StreamableHttpClientTransport, HttpClientHandle) {
        let t = StreamableHttpClientTransport::builder(&self.url)
            .reconnect(std::time::Duration::from_millis(50), 5)
            .build()
            .expect("a valid URL");
        let h = t.handle();
        (t, h)
    }
}

/// The session settings a hosted transport asks for.
pub(crate) fn session_config(t: &modelctx::http::HttpServerTransport) -> SessionConfig {
    let mut config = SessionConfig::server();
    if t.needs_pre_initialized_session() {
        config = config.pre_initialized();
    }
    if !t.allows_outbound_requests() {
        config = config.without_outbound_requests();
    }
    config
}

/// Hosts `server` with `config` (default: the service's defaults).
pub(crate) async fn host(server: Server, config: StreamableHttpServerConfig) -> Hosted {
    host_scripted(server, config, Script::default()).await
}

/// Hosts `server`, recording every request and answering per `script`.
pub(crate) async fn host_scripted(
    server: Server,
    config: StreamableHttpServerConfig,
    script: Script,
) -> Hosted {
    host_with(
        move |transport| {
            let config = session_config(&transport);
            server.serve_with(transport, config)
        },
        config,
        script,
    )
    .await
}

/// Hosts whatever `start` runs on each session's transport.
pub(crate) async fn host_with(
    start: impl Fn(modelctx::http::HttpServerTransport) -> ServerSession + Send + Sync + 'static,
    config: StreamableHttpServerConfig,
    script: Script,
) -> Hosted {
    let (tx, sessions) = mpsc::unbounded_channel();
    let last_control = Arc::new(Mutex::new(None));
    let last = last_control.clone();
    let service = StreamableHttpService::with_config(config, move |transport| {
        let control = transport.stream_control();
        let id = transport.session_id().map(str::to_owned);
        *last.lock().unwrap() = Some(control.clone());
        let session = start(transport);
        let _ = tx.send(Started {
            session,
            control,
            id,
        });
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_changed = Arc::new(tokio::sync::Notify::new());
    let log = seen.clone();
    let changed = seen_changed.clone();
    let router = service.router().layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let log = log.clone();
            let changed = changed.clone();
            async move {
                let method = request.method().clone();
                let headers = request.headers().clone();
                let at = tokio::time::Instant::now();
                let scripted = (script.get_405 && method == http::Method::GET)
                    || (script.delete_405 && method == http::Method::DELETE);
                let response: Response = if scripted {
                    let mut r = Response::new(axum::body::Body::empty());
                    *r.status_mut() = http::StatusCode::METHOD_NOT_ALLOWED;
                    r
                } else {
                    next.run(request).await
                };
                log.lock().unwrap().push(Seen {
                    method,
                    headers,
                    status: response.status(),
                    at,
                });
                changed.notify_waiters();
                response
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = axum::Router::new().nest_service("/mcp", router);
    let listener = axum::serve::ListenerExt::tap_io(listener, |s| {
        let _ = s.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Hosted {
        url,
        service,
        sessions,
        seen,
        seen_changed,
        last_control,
    }
}

/// One parsed SSE event.
#[derive(Debug, Clone, Default)]
pub(crate) struct Event {
    pub(crate) id: Option<String>,
    pub(crate) data: String,
    pub(crate) retry: Option<u64>,
}

impl Event {
    pub(crate) fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

/// Parses a complete SSE body.
pub(crate) fn parse_sse(body: &str) -> Vec<Event> {
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut e = Event::default();
        let mut any = false;
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => {
                    e.id = Some(value.to_owned());
                    any = true;
                }
                "data" => {
                    if !e.data.is_empty() {
                        e.data.push('\n');
                    }
                    e.data.push_str(value);
                    any = true;
                }
                "retry" => {
                    e.retry = value.parse().ok();
                    any = true;
                }
                _ => {}
            }
        }
        if any {
            events.push(e);
        }
    }
    events
}

/// A raw HTTP client for wire-level assertions.
#[derive(Clone)]
pub(crate) struct Raw {
    pub(crate) http: reqwest::Client,
    pub(crate) url: String,
}

/// A raw response, body read to the end.
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: String,
}

impl RawResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn events(&self) -> Vec<Event> {
        parse_sse(&self.body)
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// Every JSON-RPC message in the body (JSON or SSE).
    pub(crate) fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            self.events().iter().filter_map(Event::json).collect()
        } else {
            match self.json() {
                Value::Array(items) => items,
                Value::Null => Vec::new(),
                v => vec![v],
            }
        }
    }
}

pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";

impl Raw {
    pub(crate) fn new(url: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
        }
    }

    /// A request builder with nothing set.
    pub(crate) fn request(&self, method: http::Method) -> reqwest::RequestBuilder {
        self.http.request(method, &self.url)
    }

    /// A well-formed POST of `body` for `session` (if any; then with version 2025-11-25).
    pub(crate) fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        self.post_as(session, session.map(|_| "2025-11-25"), body)
    }

    /// A well-formed POST naming `version` (if any).
    pub(crate) fn post_as(
        &self,
        session: Option<&str>,
        version: Option<&str>,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        self.bare_post(
            Some(ACCEPT_BOTH),
            Some("application/json"),
            body.to_string(),
        )
        .headers(session_headers(session, version))
    }

    /// A POST with exactly these `Accept` and `Content-Type` headers.
    pub(crate) fn bare_post(
        &self,
        accept: Option<&str>,
        content_type: Option<&str>,
        body: String,
    ) -> reqwest::RequestBuilder {
        let mut rb = self.request(http::Method::POST).body(body);
        if let Some(a) = accept {
            rb = rb.header("accept", a);
        }
        if let Some(c) = content_type {
            rb = rb.header("content-type", c);
        }
        rb
    }

    /// A GET for the standalone stream (or a resumption) of a 2025-11-25 session.
    pub(crate) fn get(&self, session: &str) -> reqwest::RequestBuilder {
        self.get_as(session, "text/event-stream", Some("2025-11-25"))
    }

    /// A GET with exactly this `Accept` and version.
    pub(crate) fn get_as(
        &self,
        session: &str,
        accept: &str,
        version: Option<&str>,
    ) -> reqwest::RequestBuilder {
        self.request(http::Method::GET)
            .header("accept", accept)
            .headers(session_headers(Some(session), version))
    }

    /// Initializes a session (with `version`) and sends `initialized`; the session id.
    pub(crate) async fn init_version(&self, version: &str) -> String {
        let response = send(self.post(None, &initialize(1, version))).await;
        assert_eq!(response.status, 200, "{response:?}");
        let id = response
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let initialized = serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let r = send(self.post_as(Some(&id), Some(version), &initialized)).await;
        assert_eq!(r.status, 202);
        id
    }

    /// Initializes a 2025-11-25 session.
    pub(crate) async fn init(&self) -> String {
        self.init_version("2025-11-25").await
    }
}

fn session_headers(session: Option<&str>, version: Option<&str>) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    if let Some(s) = session.and_then(|s| http::HeaderValue::from_str(s).ok()) {
        h.insert("mcp-session-id", s);
    }
    if let Some(v) = version.and_then(|v| http::HeaderValue::from_str(v).ok()) {
        h.insert("mcp-protocol-version", v);
    }
    h
}

/// An initialize request.
pub(crate) fn initialize(id: i64, version: &str) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    })
}

/// A request `method` with `params`.
pub(crate) fn call(id: i64, method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Sends and reads the whole body, bounded.
pub(crate) async fn send(rb: reqwest::RequestBuilder) -> RawResponse {
    within("an HTTP exchange", async {
        let response = rb.send().await.expect("the server answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        RawResponse {
            status,
            headers,
            body,
        }
    })
    .await
}

/// Reads SSE events from a live response until `until` says stop; returns them and the
/// response (still open).
pub(crate) async fn read_events_until(
    response: &mut reqwest::Response,
    mut until: impl FnMut(&[Event]) -> bool,
) -> Vec<Event> {
    let mut text = String::new();
    within("SSE events", async {
        loop {
            let events = parse_sse(complete_part(&text));
            if until(&events) {
                return events;
            }
            match response.chunk().await {
                Ok(Some(chunk)) => text.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return parse_sse(complete_part(&text)),
            }
        }
    })
    .await
}

fn complete_part(text: &str) -> &str {
    match text.rfind("\n\n") {
        Some(end) => &text[..end + 2],
        None => "",
    }
}
