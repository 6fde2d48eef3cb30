//! The server side: `GET /sse` opens a session's event stream, `POST /messages`
//! delivers a message to it.
//!
//! The session (128 random bits, hex) is registered before its `endpoint` event, the body's
//! first chunk, goes out. POST checks come from `modelctx_http::hosting`, the code
//! streamable HTTP runs (Origin/Host 403, 415, 413, 408), then a missing or malformed
//! session id is 400 and an unknown one 404. One message per body (a batch is 400); an
//! invalid body is 400 with its JSON-RPC error (a response that cannot be read is also
//! queued for the session, whose call it names then fails at once); otherwise 202 once
//! queued, or 503 if the session does not take it within the body timeout.
//!
//! A request carrying the 2026-07-28 envelope (that era has no session to ride on) is 202
//! too, and refused on the event stream (`-32600`, its id echoed) without reaching the
//! session. Trap: the refusal must not be an HTTP error. Legacy clients read answers only
//! on the stream, and some (the Python SDK's) take any non-2xx POST for a dead transport,
//! so a client that probes `server/discover` first could not connect at all.
//!
//! Serving both transports: `sse.router().nest_service("/mcp", http.router())` with one
//! server behind both factories, served by `modelctx_http::hosting::serve_router`. Streams
//! last as long as their sessions: call `close_all_sessions` on both services before the
//! shutdown future resolves, or the graceful wait lasts as long as they do.

mod config;
mod handshake;
mod transport;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use modelctx_http::hosting;
use modelctx_transport::{Extensions, TransportError, TransportMessage};
use modelctx_types::{ErrorCode, ErrorData, JsonRpcErrorResponse, JsonRpcMessage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use config::SseServerConfig;
pub use transport::{SseServerSink, SseServerStream, SseServerTransport};

use transport::{EventStream, Session, SessionGuard};

type Factory = dyn Fn(SseServerTransport) + Send + Sync;

/// Hosts MCP sessions over the legacy HTTP+SSE transport (protocol 2024-11-05, served
/// to any client of the handshake era).
///
/// `GET /sse` starts a session: the service calls the factory with an
/// [`SseServerTransport`] (the factory starts a session on it, typically
/// `server.serve(transport)`), and the stream's first event, `endpoint`, names the URL
/// to POST messages to, `/messages?session_id=<id>` with a fresh random id. Every
/// message of the session then travels on that stream as a `message` event. A POST is
/// answered `202 Accepted` once its message is queued for the session; `400` for a
/// missing or malformed session id, `404` for one no live session has. A request of
/// protocol 2026-07-28 (its envelope in `_meta`) is accepted too, and answered on the
/// stream with an error saying to `initialize` instead: a client probing
/// `server/discover` first then falls back to the handshake. The session ends when its
/// stream disconnects.
///
/// Mount [`router`](Self::router) (it serves both paths; merge it with a streamable
/// HTTP router to serve both transports from one listener, see
/// [`modelctx_http::hosting::serve_router`]), or run it with [`serve`](Self::serve).
#[derive(Clone)]
pub struct SseService {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    config: SseServerConfig,
    factory: Box<Factory>,
    sessions: Mutex<HashMap<Arc<str>, Arc<Session>>>,
}

modelctx_types::__debug_shows!(SseService, |v| {
    config: &v.inner.config,
    sessions: &v.session_count(),
});

impl SseService {
    /// A service with the default settings.
    pub fn new(factory: impl Fn(SseServerTransport) + Send + Sync + 'static) -> Self {
        Self::with_config(SseServerConfig::default(), factory)
    }

    /// A service with explicit settings.
    pub fn with_config(
        config: SseServerConfig,
        factory: impl Fn(SseServerTransport) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                factory: Box::new(factory),
                sessions: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The two endpoints as an axum router: `GET` on the event stream's path, `POST`
    /// on the message path (other methods there draw 405).
    pub fn router(&self) -> Router {
        use axum::routing::{get, post};
        Router::new()
            .route(&self.inner.config.sse_path, get(open_stream))
            .route(&self.inner.config.message_path, post(post_message))
            .with_state(self.inner.clone())
    }

    /// How many sessions are alive.
    pub fn session_count(&self) -> usize {
        self.inner.lock_sessions().len()
    }

    /// Ends every session (their streams end, their handlers see the transport end).
    pub fn close_all_sessions(&self) {
        let sessions = modelctx_store::table::take_all(&mut *self.inner.lock_sessions());
        for s in sessions {
            s.closed.cancel();
        }
    }

    /// Serves the router on `listener` until `shutdown` resolves, then ends every
    /// session and waits for open connections to finish. Each connection gets
    /// `TCP_NODELAY` and the configured header read timeout.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (router, timeout, shutdown) = self.hosted(shutdown);
        hosting::serve_router(listener, router, timeout, shutdown).await
    }

    /// [`serve`](Self::serve) over HTTPS (feature `rustls`): each connection, with
    /// `TCP_NODELAY`, first completes a TLS handshake with `tls` (see
    /// [`modelctx_http::tls::server_config`]) within the header read timeout.
    #[cfg(feature = "rustls")]
    pub async fn serve_tls(
        self,
        listener: tokio::net::TcpListener,
        tls: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (router, timeout, shutdown) = self.hosted(shutdown);
        hosting::serve_router_tls(listener, router, tls, timeout, shutdown).await
    }

    /// What [`serve`](Self::serve) and [`serve_tls`](Self::serve_tls) hand the accept
    /// loop: the router, the header read timeout, and `shutdown` followed by the end of
    /// every session (open streams would otherwise hold the loop's wait open).
    fn hosted(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (
        Router,
        std::time::Duration,
        impl Future<Output = ()> + Send + 'static,
    ) {
        let router = self.router();
        let timeout = self.inner.config.header_read_timeout;
        let shutdown = async move {
            shutdown.await;
            self.close_all_sessions();
        };
        (router, timeout, shutdown)
    }
}

impl Inner {
    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn forget(&self, id: &str) {
        let mut sessions = self.lock_sessions();
        sessions.remove(id);
        modelctx_store::table::shrink_drained(&mut *sessions);
    }

    pub(crate) fn report(&self, status: StatusCode, reason: String) {
        // What a peer got wrong is DEBUG (a flood of bad requests must not become a
        // flood of warnings); what the server could not do is WARN.
        if status.is_server_error() {
            tracing::warn!(target: "modelctx_sse", status = status.as_u16(), %reason, "request rejected");
        } else {
            tracing::debug!(target: "modelctx_sse", status = status.as_u16(), %reason, "request rejected");
        }
        if let Some(cb) = &self.config.on_error {
            cb(&modelctx_http::Rejection::new(status, reason));
        }
    }

    fn reject(&self, status: StatusCode, reason: impl Into<String>) -> Response {
        let reason = reason.into();
        self.report(status, reason.clone());
        let error = if status == StatusCode::BAD_REQUEST {
            ErrorData::invalid_request(reason)
        } else {
            ErrorData::new(ErrorCode(-32000), reason)
        };
        json_response(status, &JsonRpcErrorResponse::new(None, error))
    }
}

fn json_response(status: StatusCode, error: &JsonRpcErrorResponse) -> Response {
    let body = serde_json::to_vec(&JsonRpcMessage::Error(error.clone())).unwrap_or_default();
    Response::builder()
        .status(status)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )
        .body(Body::from(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// A session id: 128 random bits from the OS, as 32 lower-case hex digits. `None`
/// without OS randomness: a guessable id is never minted.
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(base16ct::lower::encode_string(&bytes))
}

/// Whether `id` has the shape of an id this service mints.
fn well_formed(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `Accept` (when sent) allows `text/event-stream`.
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    values.any(|v| {
        v.to_str().unwrap_or("").split(',').any(|item| {
            let range = item.split(';').next().unwrap_or("").trim();
            range.eq_ignore_ascii_case("text/event-stream")
                || range == "*/*"
                || range.eq_ignore_ascii_case("text/*")
        })
    })
}

/// `GET /sse`: a new session and its event stream.
async fn open_stream(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let headers = request.headers();
    let config = &inner.config;
    if let Err(r) = hosting::check_origin_and_host(&config.origins, &config.hosts, headers) {
        return inner.reject(r.status, r.reason);
    }
    if let Some(repeated) = modelctx_http::headers::repeated_header(headers) {
        return inner.reject(StatusCode::BAD_REQUEST, format!("Bad Request: {repeated}"));
    }
    if !accepts_event_stream(headers) {
        return inner.reject(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept text/event-stream",
        );
    }
    let Some(id) = new_session_id() else {
        return inner.reject(
            StatusCode::INTERNAL_SERVER_ERROR,
            "no randomness available for a session id",
        );
    };
    let id: Arc<str> = Arc::from(id);
    let (out_tx, out_rx) = mpsc::channel(config.stream_queue.max(1));
    let (in_tx, in_rx) = mpsc::channel(config.inbound_queue.max(1));
    let closed = CancellationToken::new();
    let handshake = Arc::new(handshake::Handshake::default());
    {
        // The session is registered before its endpoint is announced.
        let mut sessions = inner.lock_sessions();
        if sessions.len() >= config.max_sessions {
            drop(sessions);
            return inner.reject(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: too many sessions",
            );
        }
        sessions.insert(
            id.clone(),
            Arc::new(Session {
                inbound: in_tx,
                outbound: out_tx.downgrade(),
                closed: closed.clone(),
                handshake: handshake.clone(),
            }),
        );
    }
    if let Some(deadline) = config.handshake_timeout {
        tokio::spawn(end_unless_established(
            Arc::downgrade(&inner),
            id.clone(),
            handshake.clone(),
            closed.clone(),
            deadline,
        ));
    }
    let service = Arc::downgrade(&inner);
    let guard = SessionGuard {
        id: id.clone(),
        closed: closed.clone(),
        service: service.clone(),
    };
    (inner.factory)(SseServerTransport {
        sink: SseServerSink {
            id: id.clone(),
            out: Mutex::new(Some(out_tx)),
            closed: closed.clone(),
            send_timeout: config.send_timeout,
            service,
            handshake,
        },
        stream: SseServerStream {
            inbound: in_rx,
            closed: closed.clone(),
        },
    });
    let endpoint = format!("{}?session_id={id}", config.message_path);
    let keep_alive = config.keep_alive.map(|every| {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick
    });
    let stream = EventStream {
        endpoint: Some(modelctx_http::sse::encode_event("endpoint", &endpoint)),
        events: out_rx,
        keep_alive,
        ended: Box::pin(closed.cancelled_owned()),
        _guard: guard,
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        )
        .header(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))
        .header(
            http::HeaderName::from_static(modelctx_http::headers::X_ACCEL_BUFFERING),
            HeaderValue::from_static("no"),
        )
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Ends session `id` when its `initialize` has not been answered with a result within
/// `deadline` of its stream opening: a stream that never completes a handshake holds
/// no place under the session cap for longer.
async fn end_unless_established(
    service: std::sync::Weak<Inner>,
    id: Arc<str>,
    handshake: Arc<handshake::Handshake>,
    closed: CancellationToken,
    deadline: std::time::Duration,
) {
    tokio::select! {
        () = closed.cancelled() => return,
        () = tokio::time::sleep(deadline) => {}
    }
    if handshake.is_established() {
        return;
    }
    if let Some(service) = service.upgrade() {
        service.report(
            StatusCode::OK,
            format!("session {id}: no initialize answered within {deadline:?}; the session ends"),
        );
        service.forget(&id);
    }
    closed.cancel();
}

/// The `session_id` query parameter, when present; `Err` when it is there more than
/// once (it is read once, never first-wins).
fn session_param(query: Option<&str>) -> Result<Option<&str>, ()> {
    let mut ids = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|pair| pair.strip_prefix("session_id="));
    let first = ids.next();
    match ids.next() {
        Some(_) => Err(()),
        None => Ok(first),
    }
}

/// `POST /messages?session_id=...`: one message for a live session.
async fn post_message(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let config = &inner.config;
    if let Err(r) = hosting::check_origin_and_host(&config.origins, &config.hosts, &parts.headers) {
        return inner.reject(r.status, r.reason);
    }
    if let Some(repeated) = modelctx_http::headers::repeated_header(&parts.headers) {
        return inner.reject(StatusCode::BAD_REQUEST, format!("Bad Request: {repeated}"));
    }
    let Ok(id) = session_param(parts.uri.query()) else {
        return inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: the session_id query parameter is sent more than once",
        );
    };
    let Some(id) = id else {
        return inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: the session_id query parameter is required",
        );
    };
    if !well_formed(id) {
        return inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: the session_id is not a session id of this server",
        );
    }
    let session = inner.lock_sessions().get(id).cloned();
    let Some(session) = session.filter(|s| !s.closed.is_cancelled()) else {
        return inner.reject(StatusCode::NOT_FOUND, "Not Found: no such session");
    };
    if let Err(r) = hosting::check_json_content_type(&parts.headers) {
        return inner.reject(r.status, r.reason);
    }
    let bytes = match hosting::read_body(body, config.max_body_bytes, config.body_timeout).await {
        Ok(b) => b,
        Err(r) => return inner.reject(r.status, r.reason),
    };
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: one JSON-RPC message per POST (no batches)",
        );
    }
    let message = match JsonRpcMessage::from_slice(&bytes) {
        Ok(m) => m,
        Err(invalid) if invalid.is_response() => {
            // A response that cannot be read is refused like any body that is no
            // message, and also handed to the session: the call of the server's it
            // names fails at once (as over stdio) rather than at its timeout.
            inner.report(StatusCode::BAD_REQUEST, invalid.error.message.to_string());
            let answer = JsonRpcErrorResponse::new(None, invalid.error.clone());
            let _ = tokio::select! {
                biased;
                () = session.closed.cancelled() => None,
                r = tokio::time::timeout(
                    config.body_timeout,
                    session.inbound.send(Err(TransportError::invalid(invalid))),
                ) => Some(r),
            };
            return json_response(StatusCode::BAD_REQUEST, &answer);
        }
        Err(invalid) => {
            inner.report(StatusCode::BAD_REQUEST, invalid.error.message.to_string());
            return json_response(StatusCode::BAD_REQUEST, &invalid.into_response());
        }
    };
    if let JsonRpcMessage::Request(request) = &message
        && request.carries_envelope()
    {
        return refuse_on_stream(&inner, &session, request).await;
    }
    session.handshake.inbound(&message);
    let mut message = TransportMessage::new(message);
    if let Some(extensions) = parts.extensions.get::<Extensions>() {
        message.extensions = extensions.clone();
    }
    // The POST's own headers, for the handlers (`Context::extensions()`).
    message
        .extensions
        .insert(modelctx_http::headers::sensitive_headers(parts.headers));
    hand_on(
        &inner,
        &session,
        config.body_timeout,
        session.inbound.send(Ok(message)),
        "Service Unavailable: the session did not take the message in time",
    )
    .await
}

/// Answers a POST by what became of handing its message on with `send`: `202` once
/// taken within `within`; `404` when the session ended first (or `send` found it
/// gone); `503`, saying `slow`, when it was not taken in time.
async fn hand_on<E>(
    inner: &Inner,
    session: &Session,
    within: std::time::Duration,
    send: impl Future<Output = Result<(), E>>,
    slow: &'static str,
) -> Response {
    let sent = tokio::select! {
        biased;
        () = session.closed.cancelled() => None,
        r = tokio::time::timeout(within, send) => Some(r),
    };
    match sent {
        Some(Ok(Ok(()))) => Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .unwrap_or_else(|_| Response::new(Body::empty())),
        None | Some(Ok(Err(_))) => {
            inner.reject(StatusCode::NOT_FOUND, "Not Found: the session has ended")
        }
        Some(Err(_)) => inner.reject(StatusCode::SERVICE_UNAVAILABLE, slow),
    }
}

/// Refuses a request of protocol 2026-07-28 (which has no session to travel in) the
/// way the legacy transport answers any request: the POST is accepted and the error
/// travels on the session's event stream. A legacy client reads answers only there, and
/// some (the Python SDK's `sse_client`) take a refused POST for a broken transport and
/// drop the connection, so a client probing `server/discover` before `initialize`
/// could not fall back to the handshake. The session never sees the request.
async fn refuse_on_stream(
    inner: &Inner,
    session: &Session,
    request: &modelctx_types::JsonRpcRequest,
) -> Response {
    let error = ErrorData::invalid_request(
        "Invalid request: protocol 2026-07-28 is not served over the legacy HTTP+SSE transport; \
         initialize a session instead",
    );
    let answer = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(request.id.clone()), error));
    let json = serde_json::to_string(&answer).unwrap_or_default();
    let event = modelctx_http::sse::encode_event("message", &json);
    let Some(out) = session.outbound.upgrade() else {
        return inner.reject(StatusCode::NOT_FOUND, "Not Found: the session has ended");
    };
    hand_on(
        inner,
        session,
        inner.config.send_timeout,
        out.send(event),
        "Service Unavailable: the session's stream did not take the answer in time",
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_table_gives_its_room_back_as_sessions_end() {
        let service = SseService::new(drop);
        let inner = &service.inner;
        let (inbound, _in_rx) = mpsc::channel(1);
        let (outbound, _out_rx) = mpsc::channel(1);
        let ids: Vec<Arc<str>> = (0..2_000).map(|i| Arc::from(format!("s{i}"))).collect();
        for id in &ids {
            // What `open_stream` registers for a new event stream.
            let session = Session {
                inbound: inbound.clone(),
                outbound: outbound.downgrade(),
                closed: CancellationToken::new(),
                handshake: Arc::default(),
            };
            inner.lock_sessions().insert(id.clone(), Arc::new(session));
        }
        let room = || inner.lock_sessions().capacity();
        assert!(room() >= 2_000);
        for id in &ids {
            inner.forget(id);
        }
        assert_eq!(service.session_count(), 0);
        assert_eq!(room(), 0);
    }
}
