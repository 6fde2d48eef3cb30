//! The server side: a tower service hosting one MCP session per `Mcp-Session-Id`.

// The request steps below fail with the HTTP response that answers the request; it is
// built once per rejected request, so its size does not matter.
#![allow(clippy::result_large_err)]

mod config;
mod era;
mod event_store;
pub mod hosting;
mod session;

use crate::shared::cancelled_id;
use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use modelctx_transport::Extensions;
use modelctx_types::{
    ErrorData, JsonRpcErrorResponse, JsonRpcMessage, ProtocolVersion, RawValue, RequestId,
};
use tokio::time::Instant;

pub use config::{
    ErrorCallback, HostPolicy, OriginPolicy, Rejection, StreamableHttpServerConfig, cors_layer,
};
pub use event_store::{EventId, EventStore, InMemoryEventStore, InvalidEventId, Replay};
pub use session::{HttpServerSink, HttpServerStream, HttpServerTransport, StreamControl};

use crate::headers::LAST_EVENT_ID;
use session::{Answer, SessionState};

type Factory = dyn Fn(HttpServerTransport) + Send + Sync;

/// Hosts MCP sessions over streamable HTTP.
///
/// The service knows nothing of tools or handlers: for every new MCP session (every
/// POST in stateless mode) it calls the factory with an [`HttpServerTransport`], and
/// the factory starts a session on it, typically `server.serve(transport)`. Mount
/// [`router`](Self::router) anywhere (`Router::new().nest_service("/mcp", ..)`), or run
/// it on a listener with [`serve`](Self::serve).
#[derive(Clone)]
pub struct StreamableHttpService {
    inner: Arc<Inner>,
}

struct Inner {
    config: Arc<StreamableHttpServerConfig>,
    factory: Box<Factory>,
    sessions: Mutex<HashMap<Arc<str>, Arc<SessionState>>>,
    /// The id every stateless session shares (one allocation, not one per POST).
    stateless_id: Arc<str>,
}

impl fmt::Debug for StreamableHttpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpService")
            .field("config", &self.inner.config)
            .field("sessions", &self.session_count())
            .finish()
    }
}

impl StreamableHttpService {
    /// A service with the default settings (stateful, SSE answers, resumable, Origin
    /// and Host limited to loopback names).
    pub fn new(factory: impl Fn(HttpServerTransport) + Send + Sync + 'static) -> Self {
        Self::with_config(StreamableHttpServerConfig::default(), factory)
    }

    /// A service with explicit settings.
    pub fn with_config(
        config: StreamableHttpServerConfig,
        factory: impl Fn(HttpServerTransport) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config: Arc::new(config),
                factory: Box::new(factory),
                sessions: Mutex::new(HashMap::new()),
                stateless_id: Arc::from("stateless"),
            }),
        }
    }

    /// The MCP endpoint as an axum router answering on every path it is mounted at.
    pub fn router(&self) -> Router {
        Router::new()
            .fallback(handle)
            .with_state(self.inner.clone())
    }

    /// Starts a stateful session ahead of any `initialize` and returns its id: for a
    /// client attached out of band (a gateway that provisions sessions, or a test
    /// harness). The factory is called as usual; the session then takes its
    /// `initialize` (sent with this id) like any other. `None` in stateless mode, at the
    /// session cap, or without OS randomness.
    pub fn open_session(&self) -> Option<String> {
        if !self.inner.config.stateful
            || self.inner.lock_sessions().len() >= self.inner.config.max_sessions
        {
            return None;
        }
        self.inner
            .create_session(true, false, None)
            .map(|s| s.id.to_string())
    }

    /// How many sessions are alive.
    pub fn session_count(&self) -> usize {
        self.inner.lock_sessions().len()
    }

    /// Ends every session (their streams close, their handlers see the transport end).
    pub fn close_all_sessions(&self) {
        let sessions: Vec<_> = self.inner.lock_sessions().drain().map(|(_, s)| s).collect();
        for s in sessions {
            s.terminate();
        }
    }

    /// Serves the endpoint at every path of `listener` until `shutdown` resolves, then
    /// stops accepting, ends every session and waits for open connections to finish.
    ///
    /// Each connection gets `TCP_NODELAY` (SSE writes small events; without it Nagle's
    /// algorithm and delayed ACKs stall each one) and the configured
    /// [header read timeout](StreamableHttpServerConfig::header_read_timeout).
    ///
    /// Bind `127.0.0.1` for a local server. The default [`HostPolicy`] admits only
    /// loopback host names, so a server reachable under another name must list it (or,
    /// behind a proxy that checks it, use [`HostPolicy::Any`]).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_with(listener, hosting::Acceptor::Plain, shutdown)
            .await
    }

    /// [`serve`](Self::serve) over HTTPS (feature `rustls`): each connection, with
    /// `TCP_NODELAY`, first completes a TLS handshake with `tls` (see
    /// [`tls::server_config`](crate::tls::server_config)) within the header read
    /// timeout; a failed handshake ends that connection only.
    #[cfg(feature = "rustls")]
    pub async fn serve_tls(
        self,
        listener: tokio::net::TcpListener,
        tls: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let acceptor = hosting::Acceptor::Tls(tokio_rustls::TlsAcceptor::from(tls));
        self.serve_with(listener, acceptor, shutdown).await
    }

    async fn serve_with(
        self,
        listener: tokio::net::TcpListener,
        acceptor: hosting::Acceptor,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        // The endpoint answers on every path, so the connection calls it straight,
        // without the router's matching, boxing and service layers.
        let inner = self.inner.clone();
        let endpoint = hyper::service::service_fn(move |request: http::Request<_>| {
            let inner = inner.clone();
            async move { Ok::<_, Infallible>(respond(&inner, request).await) }
        });
        let header_timeout = self.inner.config.header_read_timeout;
        let reporter = self.inner.clone();
        hosting::accept_loop(
            listener,
            acceptor,
            header_timeout,
            shutdown,
            endpoint,
            move |reason| reporter.report(StatusCode::SERVICE_UNAVAILABLE, reason),
            || self.close_all_sessions(),
        )
        .await
    }
}

impl Inner {
    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<SessionState>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn report(&self, status: StatusCode, reason: String) {
        // What a peer got wrong is DEBUG (a flood of bad requests must not become a
        // flood of warnings); what the server could not do is WARN.
        if status.is_server_error() {
            tracing::warn!(target: "modelctx_http", status = status.as_u16(), %reason, "request rejected");
        } else {
            tracing::debug!(target: "modelctx_http", status = status.as_u16(), %reason, "request rejected");
        }
        if let Some(cb) = &self.config.on_error {
            cb(&Rejection { status, reason });
        }
    }

    fn reject(&self, status: StatusCode, reason: impl Into<String>) -> Response {
        let reason = reason.into();
        self.report(status, reason.clone());
        let code = if status == StatusCode::BAD_REQUEST {
            ErrorData::invalid_request(reason)
        } else {
            ErrorData::new(modelctx_types::ErrorCode(-32000), reason)
        };
        error_response(status, JsonRpcErrorResponse::new(None, code))
    }

    /// Creates a session and calls the factory.
    /// `None` when the OS cannot supply randomness for the id.
    fn create_session(
        self: &Arc<Self>,
        stateful: bool,
        pre_initialized: bool,
        stateless_era: Option<Vec<(String, String)>>,
    ) -> Option<Arc<SessionState>> {
        // A stateless "session" lives for one POST and its id is never sent anywhere:
        // no randomness (a system call) for it.
        let id: Arc<str> = if stateful {
            Arc::from(new_session_id()?)
        } else {
            self.stateless_id.clone()
        };
        let on_end: Option<session::OnEnd> = stateful.then(|| {
            let weak: Weak<Inner> = Arc::downgrade(self);
            Box::new(move |id: &str| {
                if let Some(inner) = weak.upgrade() {
                    inner.lock_sessions().remove(id);
                }
            }) as session::OnEnd
        });
        let (state, rx) = SessionState::new(id.clone(), stateful, self.config.clone(), on_end);
        if stateful {
            self.lock_sessions().insert(id, state.clone());
            if let Some(idle) = self.config.session_idle_timeout {
                tokio::spawn(reap_when_idle(Arc::downgrade(&state), idle));
            }
        }
        (self.factory)(HttpServerTransport {
            state: state.clone(),
            rx,
            pre_initialized,
            stateless_era,
        });
        Some(state)
    }
}

/// Ends a session once it has seen no request and held no stream for `idle`.
async fn reap_when_idle(state: Weak<SessionState>, idle: std::time::Duration) {
    loop {
        let Some(s) = state.upgrade() else { return };
        let deadline = s.last_activity() + idle;
        let closed = s.closed.clone();
        drop(s);
        tokio::select! {
            () = closed.cancelled() => return,
            () = tokio::time::sleep_until(deadline) => {}
        }
        let Some(s) = state.upgrade() else { return };
        if s.has_live_connection() {
            s.touch();
        } else if s.last_activity() + idle <= Instant::now() {
            s.terminate();
            return;
        }
    }
}

/// A session id: 128 random bits from the OS, as 32 hex digits (visible ASCII).
/// `None` without OS randomness: a guessable id is never minted.
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn error_response(status: StatusCode, body: JsonRpcErrorResponse) -> Response {
    let body = serde_json::to_vec(&JsonRpcMessage::Error(body)).unwrap_or_default();
    Response::builder()
        .status(status)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )
        .body(Body::from(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

fn status_only(status: StatusCode) -> Response {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    respond(&inner, request).await
}

/// Answers one HTTP request to the endpoint. Generic over the body so that `serve()`
/// hands hyper's body straight in (the router passes axum's boxed one).
async fn respond<B>(inner: &Arc<Inner>, request: http::Request<B>) -> Response
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    if let Err(r) =
        hosting::check_origin_and_host(&inner.config.origins, &inner.config.hosts, &parts.headers)
    {
        return inner.reject(r.status, r.reason);
    }
    match parts.method {
        Method::POST => {
            // What layers in front of the endpoint attached for the session's handlers,
            // and the POST's own headers (`Context::extensions().get::<HeaderMap>()`):
            // moved there, not copied, and read back from there.
            let mut extensions = parts
                .extensions
                .get::<Extensions>()
                .cloned()
                .unwrap_or_default();
            // A POST that will be served by a session of its own is marked so here,
            // while the map is still this POST's alone (marking it later copies it).
            let era_by_headers = inner
                .config
                .stateless_era
                .then(|| era::stateless_by_headers(&parts.headers))
                .flatten();
            let sessionless = !inner.config.stateful || era_by_headers == Some(true);
            if sessionless {
                extensions.insert(modelctx_transport::Sessionless);
            }
            extensions.insert(crate::headers::sensitive_headers(parts.headers));
            let none = http::HeaderMap::new();
            let headers = extensions.get::<http::HeaderMap>().unwrap_or(&none);
            post(inner, headers, &extensions, body, era_by_headers).await
        }
        Method::GET => get(inner, &parts.headers).await,
        Method::DELETE => delete(inner, &parts.headers),
        _ => {
            let mut response = inner.reject(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("method {} is not allowed on the MCP endpoint", parts.method),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// Whether `Accept` allows `mime` (`type/subtype`), wildcards included.
fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    let (kind, _) = mime.split_once('/').unwrap_or((mime, ""));
    headers.get_all(header::ACCEPT).iter().any(|v| {
        v.to_str().unwrap_or("").split(',').any(|item| {
            let range = item.split(';').next().unwrap_or("").trim();
            range.eq_ignore_ascii_case(mime)
                || range == "*/*"
                || range
                    .strip_suffix("/*")
                    .is_some_and(|k| k.eq_ignore_ascii_case(kind))
        })
    })
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Resolves the session a non-initialize request names.
fn find_session(inner: &Inner, headers: &HeaderMap) -> Result<Arc<SessionState>, Response> {
    let Some(id) = headers.get(&era::SESSION_ID_HEADER) else {
        return Err(inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required",
        ));
    };
    let session = id
        .to_str()
        .ok()
        .and_then(|id| inner.lock_sessions().get(id).cloned());
    match session {
        Some(s) if !s.closed.is_cancelled() => {
            s.touch();
            Ok(s)
        }
        _ => Err(inner.reject(StatusCode::NOT_FOUND, "Not Found: no such session")),
    }
}

/// Checks `MCP-Protocol-Version` and returns the revision the request speaks: the
/// session's negotiated one when there is a session, else the header's, else 2025-03-26.
///
/// Only a malformed or unsupported header is refused. A supported revision other than
/// the negotiated one is accepted, as the spec asks (and as the official conformance
/// suite, which sends `2025-03-26` on a 2025-11-25 session, expects); the session keeps
/// speaking the revision it negotiated.
fn protocol_version(
    inner: &Inner,
    headers: &HeaderMap,
    session: Option<&SessionState>,
) -> Result<ProtocolVersion, Response> {
    let negotiated = session.and_then(SessionState::negotiated_version);
    match headers.get(&era::PROTOCOL_VERSION_HEADER) {
        Some(value) => match value.to_str().ok().and_then(ProtocolVersion::supported) {
            Some(v) => Ok(negotiated.cloned().unwrap_or(v)),
            None => Err(inner.reject(
                StatusCode::BAD_REQUEST,
                // Other SDKs' clients look for this literal while negotiating.
                format!(
                    "Bad Request: Unsupported protocol version {value:?} (MCP-Protocol-Version)"
                ),
            )),
        },
        None => Ok(negotiated.cloned().unwrap_or(ProtocolVersion::V2025_03_26)),
    }
}

/// Reads the whole body, at most `max_body_bytes`, within `body_timeout`.
async fn read_body<B>(inner: &Inner, body: B) -> Result<Bytes, Response>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    hosting::read_body(body, inner.config.max_body_bytes, inner.config.body_timeout)
        .await
        .map_err(|r| inner.reject(r.status, r.reason))
}

/// The body's messages and whether it was a batch; `Err` answers 400.
fn parse_body(inner: &Inner, bytes: &[u8]) -> Result<(Vec<JsonRpcMessage>, bool), Response> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let items = serde_json::from_slice::<Vec<Box<RawValue>>>(bytes)
            .map_err(|e| bad_message(inner, ErrorData::parse_error(format!("Parse error: {e}"))))?;
        if items.is_empty() {
            return Err(bad_message(
                inner,
                ErrorData::invalid_request("empty batch"),
            ));
        }
        let messages = items
            .iter()
            .map(|raw| JsonRpcMessage::from_slice(raw.get().as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|invalid| bad_message(inner, invalid.error))?;
        return Ok((messages, true));
    }
    JsonRpcMessage::from_slice(bytes)
        .map(|m| (vec![m], false))
        .map_err(|invalid| {
            let status = StatusCode::BAD_REQUEST;
            inner.report(status, invalid.error.message.to_string());
            error_response(status, invalid.into_response())
        })
}

fn bad_message(inner: &Inner, error: ErrorData) -> Response {
    inner.report(StatusCode::BAD_REQUEST, error.message.to_string());
    error_response(
        StatusCode::BAD_REQUEST,
        JsonRpcErrorResponse::new(None, error),
    )
}

const INITIALIZE: &str = "initialize";

/// `era_by_headers`: whether the headers alone put the POST in the stateless era
/// ([`era::stateless_by_headers`], when that era is served).
async fn post<B>(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &Extensions,
    body: B,
    era_by_headers: Option<bool>,
) -> Response
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !accepts(headers, "application/json") || !accepts(headers, "text/event-stream") {
        return inner.reject(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    if let Err(r) = hosting::check_json_content_type(headers) {
        return inner.reject(r.status, r.reason);
    }
    let bytes = match read_body(inner, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (messages, batch) = match parse_body(inner, &bytes) {
        Ok(m) => m,
        Err(r) => return r,
    };
    if inner.config.stateless_era && era::is_stateless(era_by_headers, &messages) {
        return stateless_post(inner, headers, extensions, messages, batch).await;
    }
    let init = messages.iter().any(|m| m.method() == Some(INITIALIZE));
    if init && messages.len() > 1 {
        return inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: initialize must be sent on its own",
        );
    }
    let stateful = inner.config.stateful;
    let session = if !stateful {
        None
    } else if init && headers.get(&era::SESSION_ID_HEADER).is_none() {
        if inner.lock_sessions().len() >= inner.config.max_sessions {
            return inner.reject(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: too many sessions",
            );
        }
        None
    } else {
        match find_session(inner, headers) {
            Ok(s) => Some(s),
            Err(r) => return r,
        }
    };
    if !init {
        let version = match protocol_version(inner, headers, session.as_deref()) {
            Ok(v) => v,
            Err(r) => return r,
        };
        if batch && !version.allows_batches() {
            return bad_message(
                inner,
                ErrorData::invalid_request(format!(
                    "batches are not supported in protocol version {}",
                    version.as_str()
                )),
            );
        }
    }
    let session = match session {
        Some(s) => s,
        None => match inner.create_session(stateful, !stateful && !init, None) {
            Some(s) => s,
            None => {
                return inner.reject(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no randomness available for a session id",
                );
            }
        },
    };
    dispatch(inner, session, messages, extensions, init, false).await
}

/// A POST of the stateless era (2026-07-28): one request, its headers checked against
/// its body, served by a session of its own that starts serving at once.
async fn stateless_post(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &Extensions,
    messages: Vec<JsonRpcMessage>,
    batch: bool,
) -> Response {
    if batch {
        return bad_message(
            inner,
            ErrorData::invalid_request(
                "Invalid request: protocol version 2026-07-28 has no batches; send one message per POST",
            ),
        );
    }
    let Some(message) = messages.into_iter().next() else {
        return bad_message(inner, ErrorData::invalid_request("empty body"));
    };
    let request = match message {
        // The era defines no client notification over HTTP (closing a response stream
        // cancels its request): accepted, and nothing to deliver.
        JsonRpcMessage::Notification(_) => return status_only(StatusCode::ACCEPTED),
        JsonRpcMessage::Request(request) => request,
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
            return bad_message(
                inner,
                ErrorData::invalid_request(
                    "Invalid request: in protocol version 2026-07-28 the client sends no responses",
                ),
            );
        }
    };
    if let Err(error) = era::check_headers(headers, &request) {
        inner.report(StatusCode::BAD_REQUEST, error.message.to_string());
        return error_response(
            StatusCode::BAD_REQUEST,
            JsonRpcErrorResponse::new(Some(request.id), error),
        );
    }
    let mirrored = era::mirrored_params(headers);
    let Some(session) = inner.create_session(false, false, Some(mirrored)) else {
        return inner.reject(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the session could not be created",
        );
    };
    dispatch(
        inner,
        session,
        vec![JsonRpcMessage::Request(request)],
        extensions,
        false,
        true,
    )
    .await
}

/// Hands a POST's messages to its session and answers the POST. `stateless_era`: the
/// answer's HTTP status follows the JSON-RPC error it carries, when it is known before
/// the head goes out (see [`era::status_of`]).
async fn dispatch(
    inner: &Inner,
    session: Arc<SessionState>,
    messages: Vec<JsonRpcMessage>,
    extensions: &Extensions,
    init: bool,
    stateless_era: bool,
) -> Response {
    let ids: Vec<RequestId> = messages
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        })
        .collect();
    if let Some(dup) = ids.iter().find(|id| session.is_in_flight(id)) {
        return bad_message(
            inner,
            ErrorData::invalid_request(format!("request id {dup} is already in flight")),
        );
    }
    let cancelled: Vec<RequestId> = messages.iter().filter_map(cancelled_id).collect();
    if init && let Some(id) = ids.first() {
        session.expect_initialize(id.clone());
    }
    let mut answer = (!ids.is_empty()).then(|| session.open_answer(&ids));
    let stream = match &answer {
        Some(Answer::Sse { stream, .. }) => Some(*stream),
        _ => None,
    };
    let Ok(queued) = session.push(messages, stream, extensions).await else {
        return inner.reject(StatusCode::NOT_FOUND, "Not Found: the session has ended");
    };
    // The head of an SSE answer waits until the runtime has handled the POST's
    // messages (or the stream's first event, or its end): a handler that answers at
    // once has then queued its event and ended the stream, and hyper writes head, event
    // and end in one write instead of three, each a wake-up of the client. A handler
    // still running leaves the stream open and the head goes out. Messages the runtime
    // took directly were handled before `push` returned.
    if queued && let Some(Answer::Sse { handled, .. }) = &mut answer {
        let _ = handled.await;
    }
    for id in &cancelled {
        session.cancel_request(id);
    }
    let mut response = match answer {
        None => {
            if !session.stateful {
                session.finish_inbound();
            }
            status_only(StatusCode::ACCEPTED)
        }
        Some(Answer::Sse { events, .. }) if stateless_era => {
            // Closing the response stream cancels its request (protocol 2026-07-28).
            let session = session.clone();
            let ids = ids.clone();
            era::response(
                events,
                Box::new(move || {
                    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                        return;
                    };
                    runtime.spawn(async move {
                        let notices = ids.iter().map(era::cancelled).collect();
                        let _ = session.push(notices, None, &Extensions::new()).await;
                    });
                }),
            )
        }
        Some(Answer::Sse { events, .. }) => sse_response(events),
        Some(Answer::Json(waiters)) => {
            let mut out = Vec::with_capacity(waiters.len());
            for rx in waiters {
                match rx.await {
                    Ok(m) => out.push(m),
                    Err(_) => {
                        return inner.reject(
                            StatusCode::NOT_FOUND,
                            "Not Found: the session ended before answering",
                        );
                    }
                }
            }
            let body = if out.len() == 1 {
                out.swap_remove(0)
            } else {
                format!("[{}]", out.join(","))
            };
            let status = if stateless_era {
                era::status_of(&body)
            } else {
                StatusCode::OK
            };
            Response::builder()
                .status(status)
                .header(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )
                .body(Body::from(body))
                .unwrap_or_else(|_| Response::new(Body::empty()))
        }
    };
    if let Some(v) = &session.id_header {
        response
            .headers_mut()
            .insert(era::SESSION_ID_HEADER.clone(), v.clone());
    }
    response
}

/// An SSE answer. The events already queued are taken at once; when the stream has
/// ended too (a handler that answered in its first poll), the answer goes out as one
/// body of known length instead of a chunked stream: one write, no chunk framing, and
/// nothing left for hyper to poll.
fn sse_response(mut events: futures::stream::BoxStream<'static, Bytes>) -> Response {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut ready = Vec::new();
    // Polling with a waker that does nothing is sound: a pending stream is polled
    // again by hyper, with its own waker, before anything waits on it.
    let complete = loop {
        match events.poll_next_unpin(&mut cx) {
            std::task::Poll::Ready(Some(event)) => ready.push(event),
            std::task::Poll::Ready(None) => break true,
            std::task::Poll::Pending => break false,
        }
    };
    let body = if complete {
        Body::from(match ready.len() {
            1 => ready.swap_remove(0),
            _ => Bytes::from(ready.concat()),
        })
    } else {
        let events = futures::stream::iter(ready).chain(events);
        Body::from_stream(events.map(Ok::<_, Infallible>))
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        )
        .header(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

async fn get(inner: &Arc<Inner>, headers: &HeaderMap) -> Response {
    if !accepts(headers, "text/event-stream") {
        return inner.reject(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept text/event-stream",
        );
    }
    if !inner.config.stateful {
        return inner.reject(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: a stateless server has no standalone stream",
        );
    }
    let session = match find_session(inner, headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = protocol_version(inner, headers, Some(&session)) {
        return r;
    }
    let events = match header_str(headers, LAST_EVENT_ID) {
        Some(last) => {
            let Ok(after) = last.parse::<EventId>() else {
                return inner.reject(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: Last-Event-ID is not an event id of this server",
                );
            };
            match session.resume(after).await {
                Ok(events) => events,
                Err(()) => {
                    return inner.reject(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: Last-Event-ID names no stream of this session that can be replayed",
                    );
                }
            }
        }
        None => match session.open_standalone() {
            Some(events) => events,
            None => {
                return inner.reject(
                    StatusCode::CONFLICT,
                    "Conflict: only one standalone SSE stream is allowed per session",
                );
            }
        },
    };
    let mut response = sse_response(events);
    if let Some(v) = &session.id_header {
        response
            .headers_mut()
            .insert(era::SESSION_ID_HEADER.clone(), v.clone());
    }
    response
}

fn delete(inner: &Arc<Inner>, headers: &HeaderMap) -> Response {
    if !inner.config.stateful {
        return inner.reject(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: a stateless server has no sessions to end",
        );
    }
    let session = match find_session(inner, headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = protocol_version(inner, headers, Some(&session)) {
        return r;
    }
    session.terminate();
    status_only(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_random_visible_ascii() {
        let a = new_session_id().unwrap();
        let b = new_session_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
    }

    #[test]
    fn accept_wildcards() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&h, "application/json") && accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/html"));
        assert!(!accepts(&h, "application/json"));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*;q=0.8"));
        assert!(accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("Text/*"));
        assert!(accepts(&h, "text/event-stream") && !accepts(&h, "application/json"));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/"));
        assert!(!accepts(&h, "text/event-stream"));
    }
}
