//! Shared pieces of the streamable HTTP areas: a hosted `Server` on 127.0.0.1:0, raw
//! HTTP requests with SSE parsing, and a recording (and scriptable) front for the
//! client-transport tests.

use std::sync::{Arc, Mutex};

use crate::{Cell, Connector, HttpEndpoint, SpecVersion, TransportKind, within};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use modelctx::http::{
    HttpClientHandle, StreamControl, StreamableHttpClientTransport, StreamableHttpServerConfig,
    StreamableHttpService,
};
use modelctx::server::{Server, ServerSession};
use serde_json::Value;
use tokio::sync::mpsc;

crate::notification_method!(
    /// A test-only notification `test/note` carrying any JSON.
    #[derive(Debug)]
    pub Note = "test/note"
);

/// One session the hosted server started.
#[derive(Debug)]
pub struct Started {
    /// The server's handle on it.
    pub session: ServerSession,
    /// Its `Mcp-Session-Id`, when it has one.
    pub id: Option<String>,
}

/// What a request looked like when it reached the server.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request's method.
    pub method: axum::http::Method,
    /// The request's headers.
    pub headers: axum::http::HeaderMap,
    /// The status it was answered with.
    pub status: axum::http::StatusCode,
    /// When it arrived.
    pub at: tokio::time::Instant,
}

impl Seen {
    /// The request's header `name`, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Answers some requests itself instead of the MCP endpoint.
#[derive(Debug, Default, Clone, Copy)]
pub struct Script {
    /// Answer `GET` with 405 (a server without a standalone stream).
    pub get_405: bool,
    /// Answer `DELETE` with 405 (a server that does not let clients end sessions).
    pub delete_405: bool,
}

/// A `Server` hosted over streamable HTTP on a loopback port: by one service, or on the
/// shared leg by two sharing one Redis behind a round-robin proxy (see
/// [`HttpEndpoint`]).
#[allow(missing_debug_implementations)] // a test fixture, never printed
pub struct Hosted {
    /// The MCP endpoint's URL.
    pub url: String,
    /// The (first) service.
    pub service: StreamableHttpService,
    /// Every instance's service.
    services: Vec<StreamableHttpService>,
    endpoint: HttpEndpoint,
    sessions: mpsc::UnboundedReceiver<Started>,
    /// The ids [`Hosted::session`] returned.
    reported: std::collections::HashSet<String>,
    seen: Arc<Mutex<Vec<Seen>>>,
    seen_changed: Arc<tokio::sync::Notify>,
    /// The stream control of every session's every copy, as they start.
    pub controls: Controls,
    /// The same, with the session id of each (stateful sessions only).
    by_session: Arc<Mutex<Vec<(String, StreamControl)>>>,
}

/// Stream controls, one per copy of a session (two on the shared leg).
pub type Controls = Arc<Mutex<Vec<StreamControl>>>;

/// An HTTP client that hands redirects back instead of following them: an
/// authorization server's answers are redirects to look at.
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Closes the stream of request `id` on whichever copy holds it; whether one did.
pub fn close_request_stream(controls: &Controls, id: &modelctx::types::RequestId) -> bool {
    controls
        .lock()
        .unwrap()
        .iter()
        .any(|c| c.close_request_stream(id))
}

impl Hosted {
    /// The next session the server started: on the shared leg the first copy of it
    /// (the other instance's copy, started when a request first reaches it there, is
    /// not a new session).
    pub async fn session(&mut self) -> Started {
        loop {
            let started = within("the server to start a session", self.sessions.recv())
                .await
                .expect("the service is alive");
            match &started.id {
                Some(id) if !self.reported.insert(id.clone()) => continue,
                _ => return started,
            }
        }
    }

    /// The next copy of a session the server started, whether or not an earlier copy
    /// of the same session was reported (on the shared leg each instance starts its
    /// own copy, where a request of the session first reaches it).
    pub async fn next_copy(&mut self) -> Started {
        let started = within("the server to start a copy", self.sessions.recv())
            .await
            .expect("the service is alive");
        if let Some(id) = &started.id {
            self.reported.insert(id.clone());
        }
        started
    }

    /// How many sessions each instance holds a copy of, in instance order.
    pub fn copies_per_instance(&self) -> Vec<usize> {
        self.services.iter().map(|s| s.session_count()).collect()
    }

    /// Every request that reached the server so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Every request so far of the HTTP method `method`, in order.
    pub fn requests(&self, method: &axum::http::Method) -> Vec<Seen> {
        let mut seen = self.seen();
        seen.retain(|s| s.method == method);
        seen
    }

    /// Every request so far whose `Mcp-Method` header names `method`, in order.
    pub fn posts_of(&self, method: &str) -> Vec<Seen> {
        let mut seen = self.seen();
        seen.retain(|s| s.header("mcp-method") == Some(method));
        seen
    }

    /// Waits until a request matching `pred` reached the server; returns it.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Seen) -> bool) -> Seen {
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

    /// Closes the standalone GET stream of `session` on whichever copy holds it;
    /// whether one did.
    pub fn close_standalone_stream(&self, session: &str) -> bool {
        self.by_session
            .lock()
            .unwrap()
            .iter()
            .filter(|(id, _)| id == session)
            .any(|(_, c)| c.close_standalone_stream())
    }

    /// How many sessions are alive: the service's, or on the shared leg the shared
    /// registry's count (each session once, whichever instances hold a copy).
    pub async fn session_count(&self) -> usize {
        match self.endpoint.shared_session_count().await {
            Some(n) => n,
            None => self.service.session_count(),
        }
    }

    /// Forgets every session: on the shared leg the shared records go first, then
    /// every instance ends its copies.
    pub async fn close_all_sessions(&self) {
        self.endpoint.forget_shared_sessions().await;
        for service in &self.services {
            service.close_all_sessions();
        }
    }

    /// A client transport to this server with a quick reconnect.
    pub fn transport(&self) -> (StreamableHttpClientTransport, HttpClientHandle) {
        let t = StreamableHttpClientTransport::builder(&self.url)
            .reconnect(std::time::Duration::from_millis(50), 5)
            .build()
            .expect("a valid URL");
        let h = t.handle();
        (t, h)
    }
}

/// Hosts `server` with `config` (default: the service's defaults) on one service.
pub async fn host(server: Server, config: StreamableHttpServerConfig) -> Hosted {
    let single = Connector::new(Cell::new(
        TransportKind::StreamableHttp,
        SpecVersion::V2025_11_25,
    ))
    .expect("a streamable HTTP connector");
    host_on(&single, server, config).await
}

/// Hosts `server` with `config` once per instance of `connect`'s cell.
pub async fn host_on(
    connect: &Connector,
    server: Server,
    config: StreamableHttpServerConfig,
) -> Hosted {
    host_scripted(connect, server, config, Script::default()).await
}

/// Hosts `server`, recording every request and answering per `script`.
pub async fn host_scripted(
    connect: &Connector,
    server: Server,
    config: StreamableHttpServerConfig,
    script: Script,
) -> Hosted {
    host_with(
        connect,
        // `serve` applies what the transport says of itself (a stateless POST's session
        // starts initialised, without requests to the client).
        move |transport| server.serve(transport),
        config,
        script,
    )
    .await
}

/// Hosts whatever `start` runs on each session's transport, once per instance of
/// `connect`'s cell (each instance's copy of a session is started, and reported by
/// [`Hosted::session`], where it is first served).
pub async fn host_with(
    connect: &Connector,
    start: impl Fn(modelctx::http::HttpServerTransport) -> ServerSession + Send + Sync + 'static,
    config: StreamableHttpServerConfig,
    script: Script,
) -> Hosted {
    let (tx, sessions) = mpsc::unbounded_channel();
    let controls: Controls = Arc::default();
    let all = controls.clone();
    let by_session: Arc<Mutex<Vec<(String, StreamControl)>>> = Arc::default();
    let by_id = by_session.clone();
    let start = Arc::new(move |transport: modelctx::http::HttpServerTransport| {
        let control = transport.stream_control();
        let id = transport.session_id().map(str::to_owned);
        all.lock().unwrap().push(control.clone());
        if let Some(id) = &id {
            by_id.lock().unwrap().push((id.clone(), control));
        }
        let session = start(transport);
        let _ = tx.send(Started { session, id });
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_changed = Arc::new(tokio::sync::Notify::new());
    let services = Arc::new(Mutex::new(Vec::new()));
    let mut endpoint = connect.http_endpoint().await;
    let url = format!("{}/mcp", endpoint.origin());
    let built = services.clone();
    let (log, changed) = (seen.clone(), seen_changed.clone());
    endpoint
        .serve(config, move |config| {
            let start = start.clone();
            let service =
                StreamableHttpService::with_config(config, move |transport| start(transport));
            built.lock().unwrap().push(service.clone());
            let router = recorded(service.router(), &log, &changed, script);
            axum::Router::new().nest_service("/mcp", router)
        })
        .await;
    let services = std::mem::take(&mut *services.lock().unwrap());
    Hosted {
        url,
        service: services[0].clone(),
        services,
        endpoint,
        sessions,
        reported: Default::default(),
        seen,
        seen_changed,
        controls,
        by_session,
    }
}

/// `router` logging each request into `seen` (waking `changed`), answering per `script`.
fn recorded(
    router: axum::Router,
    seen: &Arc<Mutex<Vec<Seen>>>,
    changed: &Arc<tokio::sync::Notify>,
    script: Script,
) -> axum::Router {
    let (log, changed) = (seen.clone(), changed.clone());
    router.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let log = log.clone();
            let changed = changed.clone();
            async move {
                let method = request.method().clone();
                let headers = request.headers().clone();
                let at = tokio::time::Instant::now();
                let scripted = (script.get_405 && method == axum::http::Method::GET)
                    || (script.delete_405 && method == axum::http::Method::DELETE);
                let response: Response = if scripted {
                    let mut r = Response::new(axum::body::Body::empty());
                    *r.status_mut() = axum::http::StatusCode::METHOD_NOT_ALLOWED;
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
    ))
}

/// One parsed SSE event.
#[derive(Debug, Clone, Default)]
pub struct Event {
    /// Its `id` field.
    pub id: Option<String>,
    /// Its `data` lines, joined.
    pub data: String,
    /// Its `retry` field, in milliseconds.
    pub retry: Option<u64>,
}

impl Event {
    /// Its data as JSON, when it is.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

/// Parses a complete SSE body.
pub fn parse_sse(body: &str) -> Vec<Event> {
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
#[derive(Debug, Clone)]
pub struct Raw {
    /// The client it sends with.
    pub http: reqwest::Client,
    /// The MCP endpoint's URL.
    pub url: String,
}

/// A raw response, body read to the end.
#[derive(Debug)]
pub struct RawResponse {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: axum::http::HeaderMap,
    /// The whole body.
    pub body: String,
}

impl RawResponse {
    /// The header `name`, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body's SSE events.
    pub fn events(&self) -> Vec<Event> {
        parse_sse(&self.body)
    }

    /// The body as JSON (`null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The one JSON-RPC message in the body, asserted to be alone.
    pub fn only_message(&self) -> Value {
        let messages = self.messages();
        assert_eq!(messages.len(), 1, "{self:?}");
        messages.into_iter().next().unwrap()
    }

    /// Asserts the body is one JSON-RPC error alone, `code` answering request `id`.
    pub fn assert_error_answer(&self, id: i64, code: modelctx::types::ErrorCode) {
        let answer = self.only_message();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], code.0, "{answer}");
    }

    /// Every JSON-RPC message in the body (JSON or SSE).
    pub fn messages(&self) -> Vec<Value> {
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

/// The `Accept` header of a streamable HTTP POST.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

impl Raw {
    /// A raw client for the endpoint at `url`.
    pub fn new(url: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
        }
    }

    /// A request builder with nothing set.
    pub fn request(&self, method: axum::http::Method) -> reqwest::RequestBuilder {
        self.http.request(method, &self.url)
    }

    /// A well-formed POST of `body` for `session` (if any; then with version 2025-11-25).
    pub fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        self.post_as(session, session.map(|_| "2025-11-25"), body)
    }

    /// A well-formed POST naming `version` (if any).
    pub fn post_as(
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
    pub fn bare_post(
        &self,
        accept: Option<&str>,
        content_type: Option<&str>,
        body: String,
    ) -> reqwest::RequestBuilder {
        let mut rb = self.request(axum::http::Method::POST).body(body);
        if let Some(a) = accept {
            rb = rb.header("accept", a);
        }
        if let Some(c) = content_type {
            rb = rb.header("content-type", c);
        }
        rb
    }

    /// A GET for the standalone stream (or a resumption) of a 2025-11-25 session.
    pub fn get(&self, session: &str) -> reqwest::RequestBuilder {
        self.get_as(session, "text/event-stream", Some("2025-11-25"))
    }

    /// A GET with exactly this `Accept` and version.
    pub fn get_as(
        &self,
        session: &str,
        accept: &str,
        version: Option<&str>,
    ) -> reqwest::RequestBuilder {
        self.request(axum::http::Method::GET)
            .header("accept", accept)
            .headers(session_headers(Some(session), version))
    }

    /// Initializes a session (with `version`) and sends `initialized`; the session id.
    pub async fn init_version(&self, version: &str) -> String {
        self.init_with(&initialize(1, version), version).await
    }

    /// Sends `initialize` (a request naming `version`) and then `initialized`; the
    /// session id.
    pub async fn init_with(&self, initialize: &Value, version: &str) -> String {
        let response = send(self.post(None, initialize)).await;
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
    pub async fn init(&self) -> String {
        self.init_version("2025-11-25").await
    }
}

fn session_headers(session: Option<&str>, version: Option<&str>) -> axum::http::HeaderMap {
    let mut h = axum::http::HeaderMap::new();
    if let Some(s) = session.and_then(|s| axum::http::HeaderValue::from_str(s).ok()) {
        h.insert("mcp-session-id", s);
    }
    if let Some(v) = version.and_then(|v| axum::http::HeaderValue::from_str(v).ok()) {
        h.insert("mcp-protocol-version", v);
    }
    h
}

/// An initialize request.
pub fn initialize(id: i64, version: &str) -> Value {
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
pub fn call(id: i64, method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Sends and reads the whole body, bounded.
pub async fn send(rb: reqwest::RequestBuilder) -> RawResponse {
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

/// POSTs `body` (`application/json`, a well-formed request otherwise) to `url` on a
/// connection of its own and returns the answer's status, read while the body is
/// written. A server refusing a body (413) may answer before it has read it and close
/// the connection (RFC 9110 §15.5.14); a client sending a body should watch for such
/// an answer while it sends (RFC 9112 §9.5), because the close may reset the
/// connection under a client still writing, and a client that reads only after
/// writing (reqwest) then reports the broken write instead of the answer. So a write
/// cut short is no failure here: the answer is the outcome.
pub async fn post_watching_the_answer(url: &str, body: &[u8]) -> u16 {
    let status_line = raw_post(url, &[], body.len(), body.to_vec(), false).await;
    status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {status_line:?}"))
}

/// POSTs `body` to `url` by hand, announced as `announced` bytes, with these extra
/// headers, and returns the status line. The body is written while the answer is read,
/// and a write the server cut short is no failure: a server refusing a body (413, 408)
/// answers before it has read it all, and may close the connection then. With
/// `hang_up`, the client shuts its sending side after the body (a peer that exits).
pub async fn raw_post(
    url: &str,
    headers: &[(String, String)],
    announced: usize,
    body: Vec<u8>,
    hang_up: bool,
) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\n\
         accept: {ACCEPT_BOTH}\r\ncontent-length: {announced}\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let socket = within("the connection", tokio::net::TcpStream::connect(authority))
        .await
        .expect("the server accepts");
    let (read, mut write) = socket.into_split();
    let writing = async move {
        // Cut short by the server's close: not the caller's concern.
        if write.write_all(head.as_bytes()).await.is_ok()
            && write.write_all(&body).await.is_ok()
            && hang_up
        {
            let _ = write.shutdown().await;
        }
        // Kept open (a stalled body stays stalled) until the answer has been read.
        write
    };
    let mut status = String::new();
    let mut reader = tokio::io::BufReader::new(read);
    let reading = reader.read_line(&mut status);
    let (_, read) = within("the server's answer", async {
        tokio::join!(writing, reading)
    })
    .await;
    read.expect("the status line reads");
    status
}

/// Reads SSE events from a live response until `until` says stop; returns them and the
/// response (still open).
pub async fn read_events_until(
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
