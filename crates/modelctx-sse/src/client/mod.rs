//! The client side: the legacy SSE client transport, and the streamable HTTP client
//! that falls back to it.
//!
//! `connect` waits for `endpoint` under one bound and resolves it against the stream URL,
//! refusing another origin (messages carry the same credentials); a stream that ends,
//! answers non-SSE or never sends `endpoint` is an error that says which. A refused request
//! is answered with the JSON-RPC error of the refusal (or one naming the status), a refused
//! notification fails the send.
//!
//! Trap: the client side does not pin the era. Over this transport an `Auto` client adopts
//! 2026-07-28 when the server answers `server/discover`, as the Python SDK's SSE server
//! does; `ConnectMode::Handshake` keeps the handshake.

mod fallback;

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use modelctx_http::AuthHook;
use modelctx_http::sse::{SseEvent, SseParser};
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportError, TransportMessage};
use modelctx_types::{ErrorCode, ErrorData, JsonRpcErrorResponse, JsonRpcMessage, RequestId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use fallback::{
    ActiveTransport, FallbackClientBuilder, FallbackClientTransport, FallbackHandle, FallbackSink,
    FallbackStream,
};

/// The error code of requests the transport fails (not the server).
const TRANSPORT_ERROR: ErrorCode = ErrorCode(-32000);

/// Builds an [`SseClientTransport`]; [`connect`](Self::connect) opens the stream.
#[derive(Clone)]
pub struct SseClientBuilder {
    url: String,
    http: Option<reqwest::Client>,
    headers: HeaderMap,
    auth: Option<Arc<dyn AuthHook>>,
    endpoint_timeout: Duration,
    max_event_bytes: usize,
    max_body_bytes: usize,
    roots: modelctx_http::TlsRoots,
}

modelctx_types::__debug_shows!(SseClientBuilder, |v| {
    url: &v.url,
    endpoint_timeout: &v.endpoint_timeout,
    ..
});

impl SseClientBuilder {
    fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            http: None,
            headers: HeaderMap::new(),
            auth: None,
            endpoint_timeout: Duration::from_secs(10),
            max_event_bytes: 16 * 1024 * 1024,
            max_body_bytes: 16 * 1024 * 1024,
            roots: modelctx_http::TlsRoots::default(),
        }
    }

    /// Trusts `root` (a private CA, or a self-signed server certificate) besides the
    /// built-in roots, in the default client (not in one passed to
    /// [`client`](Self::client)). Read PEM with
    /// [`modelctx_http::tls::certificates_from_pem`].
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn add_root_certificate(
        mut self,
        root: rustls::pki_types::CertificateDer<'static>,
    ) -> Self {
        self.roots.push(root);
        self
    }

    modelctx_types::__setters! {
        /// Sends everything through `client` (its TLS, proxy and redirect policy). The
        /// default client follows redirects only within the URL's origin.
        client(client: reqwest::Client) { http = Some(client) }
    }

    /// Adds a header to the stream's GET and to every POST. A header of one meaning
    /// (`Authorization`, `DPoP`, the protocol's own: see
    /// [`is_single_valued`](modelctx_http::headers::is_single_valued)) replaces the
    /// value given before: none is ever sent on two lines.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        modelctx_http::headers::add_header(&mut self.headers, name, value);
        self
    }

    /// Authenticates the GET and every POST through `hook` (the streamable HTTP
    /// transport's hook: the OAuth client of `modelctx-oauth` works here too).
    #[must_use]
    pub fn auth(self, hook: impl AuthHook) -> Self {
        self.auth_shared(Arc::new(hook))
    }

    modelctx_types::__setters! {
        /// [`auth`](Self::auth) with a hook shared with other transports.
        auth_shared(hook: Arc<dyn AuthHook>) { auth = Some(hook) }

        /// How long [`connect`](Self::connect) waits for the stream and its `endpoint`
        /// event (default 10 s).
        endpoint_timeout(timeout: Duration) { endpoint_timeout = timeout }

        /// The largest event accepted (default 16 MiB); a larger one ends the stream.
        max_event_bytes(max: usize) { max_event_bytes = max }

        /// The largest response body read whole (default 16 MiB): the body of a refused
        /// POST, read for the JSON-RPC error it carries. The cap holds while the body
        /// streams: a larger one is not read further, and the refusal is reported without
        /// its detail. (The event stream is read event by event, each capped by
        /// [`max_event_bytes`](Self::max_event_bytes).)
        max_body_bytes(max: usize) { max_body_bytes = max }
    }

    /// Opens the event stream and waits (at most the
    /// [endpoint timeout](Self::endpoint_timeout)) for its `endpoint` event, which
    /// must name a URL on the stream's own origin.
    ///
    /// Fails, saying why, on a URL that is not http(s), a refused or non-SSE answer,
    /// a stream that ends before `endpoint`, no `endpoint` in time, or an endpoint on
    /// another origin.
    pub async fn connect(self) -> Result<SseClientTransport, TransportError> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| TransportError::other(format!("invalid SSE URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TransportError::other("the SSE URL must be http or https"));
        }
        let http = match self.http {
            Some(c) => c,
            None => modelctx_http::client_for(&url, &self.roots)?,
        };
        let conn = Connection {
            http,
            headers: self.headers,
            auth: self.auth,
            max_body_bytes: self.max_body_bytes,
        };
        let timeout = self.endpoint_timeout;
        let opened = tokio::time::timeout(timeout, open(&conn, &url, self.max_event_bytes))
            .await
            .map_err(|_| {
                TransportError::other(format!(
                    "the SSE stream at {url} sent no endpoint event within {timeout:?}"
                ))
            })??;
        let (tx, rx) = mpsc::channel(256);
        let closed = CancellationToken::new();
        let inner = Arc::new(ClientInner {
            conn,
            endpoint: opened.endpoint,
            tx,
            closed: closed.clone(),
            inflight: Mutex::new(HashSet::new()),
        });
        let reader = inner.clone();
        tokio::spawn(async move {
            // When the stream ends the transport closes: the session then fails every
            // request still waiting as closed, as for any transport that ends.
            tokio::select! {
                biased;
                () = reader.closed.cancelled() => {}
                () = read_stream(&reader, opened.early, opened.body, opened.parser) => {}
            }
            reader.closed.cancel();
        });
        Ok(SseClientTransport { inner, rx, closed })
    }
}

/// What every HTTP request of the transport carries.
#[derive(Clone)]
struct Connection {
    http: reqwest::Client,
    headers: HeaderMap,
    auth: Option<Arc<dyn AuthHook>>,
    /// The largest body read whole (a refusal's).
    max_body_bytes: usize,
}

impl Connection {
    /// Sends one request with the custom headers and credentials; retries (as often as
    /// the hook allows) when the auth hook asks to after a 401/403.
    async fn send(
        &self,
        method: Method,
        url: &reqwest::Url,
        body: Option<&[u8]>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut retries = 0;
        loop {
            let mut rb = self
                .http
                .request(method.clone(), url.clone())
                .headers(self.headers.clone());
            if let Some(auth) = &self.auth {
                rb = rb.headers(auth.headers_for(&method, url.as_str()).await?);
            }
            rb = match body {
                Some(b) => rb
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(b.to_vec()),
                None => rb
                    .header(header::ACCEPT, "text/event-stream")
                    .header(header::CACHE_CONTROL, "no-cache"),
            };
            let response = rb.send().await.map_err(|e| {
                TransportError::other(format!(
                    "HTTP request to {url} failed: {}",
                    modelctx_http::error_chain(&e)
                ))
            })?;
            let status = response.status();
            if (status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN)
                && let Some(auth) = &self.auth
                && retries < auth.max_retries()
                && auth.on_rejected(status.as_u16(), response.headers()).await
            {
                retries += 1;
                continue;
            }
            return Ok(response);
        }
    }
}

type Body = futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>;

/// An open stream whose `endpoint` event arrived.
struct Opened {
    endpoint: reqwest::Url,
    /// Events that came in the same reads as `endpoint`, after it.
    early: Vec<SseEvent>,
    body: Body,
    parser: SseParser,
}

/// GETs the stream and reads up to its `endpoint` event.
async fn open(
    conn: &Connection,
    url: &reqwest::Url,
    max_event_bytes: usize,
) -> Result<Opened, TransportError> {
    let response = conn.send(Method::GET, url, None).await?;
    let status = response.status();
    if !status.is_success() {
        return Err(TransportError::other(format!(
            "the server answered the SSE GET to {url} with HTTP {status}"
        )));
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map_or("", str::trim);
    if !content_type.eq_ignore_ascii_case("text/event-stream") {
        return Err(TransportError::other(format!(
            "the server answered the SSE GET to {url} with {content_type:?}, not an event stream"
        )));
    }
    let mut body: Body = response.bytes_stream().boxed();
    let mut parser = SseParser::new(max_event_bytes);
    let mut early: Vec<SseEvent> = Vec::new();
    loop {
        let Some(chunk) = body.next().await else {
            return Err(TransportError::other(format!(
                "the SSE stream at {url} ended before its endpoint event"
            )));
        };
        let chunk = chunk.map_err(|e| {
            TransportError::other(format!(
                "the SSE stream at {url} broke before its endpoint event: {e}"
            ))
        })?;
        let events = parser
            .push(&chunk)
            .map_err(|e| TransportError::other(format!("the SSE stream at {url}: {e}")))?;
        let mut events = events.into_iter();
        for event in events.by_ref() {
            if event.event_type() == "endpoint" {
                let endpoint = resolve_endpoint(url, &event.data)?;
                early.extend(events);
                return Ok(Opened {
                    endpoint,
                    early,
                    body,
                    parser,
                });
            }
            // A message before the endpoint: kept, delivered once connected.
            early.push(event);
        }
    }
}

/// The endpoint event's URL, resolved against the stream's: it must stay on the
/// stream's origin (messages carry the same credentials).
fn resolve_endpoint(base: &reqwest::Url, data: &str) -> Result<reqwest::Url, TransportError> {
    let endpoint = base.join(data.trim()).map_err(|e| {
        TransportError::other(format!("the endpoint event {data:?} is not a URL: {e}"))
    })?;
    if endpoint.origin() != base.origin() {
        return Err(TransportError::other(format!(
            "the endpoint event names {endpoint}, not on the origin of {base}; refused"
        )));
    }
    Ok(endpoint)
}

struct ClientInner {
    conn: Connection,
    endpoint: reqwest::Url,
    tx: mpsc::Sender<TransportMessage>,
    closed: CancellationToken,
    /// Requests sent and not yet answered: a refused POST answers its request only once.
    inflight: Mutex<HashSet<RequestId>>,
}

impl ClientInner {
    fn inflight(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn deliver(&self, message: JsonRpcMessage) {
        if let JsonRpcMessage::Response(r) = &message {
            self.inflight().remove(&r.id);
        } else if let JsonRpcMessage::Error(JsonRpcErrorResponse { id: Some(id), .. }) = &message {
            self.inflight().remove(id);
        }
        let _ = self.tx.send(TransportMessage::new(message)).await;
    }

    /// Answers request `id` with a transport error, unless it was answered meanwhile.
    async fn fail(&self, id: RequestId, error: ErrorData) {
        if !self.inflight().remove(&id) {
            return;
        }
        let message = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id), error));
        let _ = self.tx.send(TransportMessage::new(message)).await;
    }
}

/// Reads the stream until it ends (the server closed it, the connection broke, or an
/// event went over the cap).
async fn read_stream(
    inner: &ClientInner,
    early: Vec<SseEvent>,
    mut body: Body,
    mut parser: SseParser,
) {
    for event in early {
        on_event(inner, event).await;
    }
    while let Some(Ok(chunk)) = body.next().await {
        let Ok(events) = parser.push(&chunk) else {
            return;
        };
        for event in events {
            on_event(inner, event).await;
        }
    }
}

async fn on_event(inner: &ClientInner, event: SseEvent) {
    if event.event_type() != "message" || event.data.trim().is_empty() {
        return;
    }
    match JsonRpcMessage::from_slice(event.data.as_bytes()) {
        Ok(message) => inner.deliver(message).await,
        // A response that cannot be read fails the call it answers at once: the stream
        // stays open, and the call would wait for its timeout.
        Err(invalid) if invalid.is_response() => {
            if let Some(id) = invalid.id {
                let reason = format!(
                    "the server sent an invalid response: {}",
                    invalid.error.message
                );
                inner
                    .fail(id, ErrorData::new(TRANSPORT_ERROR, reason))
                    .await;
            }
        }
        // Not a message: skipped (answering would start an error storm between peers).
        Err(_) => {}
    }
}

/// The legacy HTTP+SSE client transport (protocol 2024-11-05).
///
/// Built by [`SseClientTransport::connect`] (or its [builder](Self::builder)), which
/// opens the event stream and waits for its `endpoint` event. Every outbound message
/// is then a POST to that endpoint; responses and server requests arrive on the
/// stream. When the stream ends, requests still waiting fail with an error saying so
/// and the stream half ends.
pub struct SseClientTransport {
    inner: Arc<ClientInner>,
    rx: mpsc::Receiver<TransportMessage>,
    closed: CancellationToken,
}

modelctx_types::__debug_shows!(SseClientTransport, |v| {
    endpoint: &v.inner.endpoint.as_str(),
    ..
});

impl SseClientTransport {
    /// Connects to the event stream at `url` with default settings.
    pub async fn connect(url: &str) -> Result<Self, TransportError> {
        Self::builder(url).connect().await
    }

    /// A builder for a transport to the event stream at `url`.
    pub fn builder(url: &str) -> SseClientBuilder {
        SseClientBuilder::new(url)
    }

    /// The URL messages are POSTed to (from the `endpoint` event).
    pub fn endpoint(&self) -> &str {
        self.inner.endpoint.as_str()
    }
}

impl Transport for SseClientTransport {
    type Sink = SseClientSink;
    type Stream = SseClientStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("sse")
    }

    fn split(self) -> (SseClientSink, SseClientStream) {
        (
            SseClientSink { inner: self.inner },
            SseClientStream {
                rx: self.rx,
                closed: self.closed,
            },
        )
    }
}

/// The sending half: one POST per message.
#[derive(Clone)]
pub struct SseClientSink {
    inner: Arc<ClientInner>,
}

modelctx_types::__debug_shows!(SseClientSink, |v| { endpoint: &v.inner.endpoint.as_str() });

impl MessageSink for SseClientSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(post(&self.inner, message.message))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        // Dropping the stream's connection is how the legacy transport says goodbye.
        self.inner.closed.cancel();
        Box::pin(async {})
    }
}

/// POSTs one message. A request refused by the server is answered with the JSON-RPC
/// error the refusal carries (or one saying how it was refused); any other message
/// refused fails the send.
async fn post(inner: &ClientInner, message: JsonRpcMessage) -> Result<(), TransportError> {
    if inner.closed.is_cancelled() {
        return Err(TransportError::closed());
    }
    let body = serde_json::to_vec(&message).map_err(|e| TransportError::other(e.to_string()))?;
    let request_id = match &message {
        JsonRpcMessage::Request(r) => {
            inner.inflight().insert(r.id.clone());
            Some(r.id.clone())
        }
        _ => None,
    };
    let sent = inner
        .conn
        .send(Method::POST, &inner.endpoint, Some(&body))
        .await;
    let response = match (sent, &request_id) {
        (Ok(r), _) => r,
        (Err(e), Some(id)) => {
            inner
                .fail(id.clone(), modelctx_transport::undelivered(e.to_string()))
                .await;
            return Ok(());
        }
        (Err(e), None) => return Err(e),
    };
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let text = match modelctx_http::read_capped(response, inner.conn.max_body_bytes).await {
        Ok(text) => text,
        Err(e) => {
            tracing::debug!(target: "modelctx_sse", %e, "the body of a refused POST was not read");
            bytes::Bytes::new()
        }
    };
    let refusal = match JsonRpcMessage::from_slice(&text) {
        Ok(JsonRpcMessage::Error(e)) => Some(e.error),
        _ => None,
    };
    let Some(id) = request_id else {
        let detail = refusal
            .map(|e| format!(": {}", e.message))
            .unwrap_or_default();
        return Err(TransportError::other(format!(
            "the server refused the message with HTTP {status}{detail}"
        )));
    };
    let error = refusal.unwrap_or_else(|| {
        ErrorData::new(
            TRANSPORT_ERROR,
            format!("the server refused the request with HTTP {status}"),
        )
    });
    inner.fail(id, error).await;
    Ok(())
}

/// The receiving half: the messages of the event stream.
pub struct SseClientStream {
    rx: mpsc::Receiver<TransportMessage>,
    closed: CancellationToken,
}

impl fmt::Debug for SseClientStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseClientStream").finish_non_exhaustive()
    }
}

impl MessageStream for SseClientStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            // What arrived before the end is delivered first.
            if let Ok(m) = self.rx.try_recv() {
                return Some(Ok(m));
            }
            tokio::select! {
                biased;
                m = self.rx.recv() => m.map(Ok),
                () = self.closed.cancelled() => self.rx.try_recv().ok().map(Ok),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_stay_on_the_origin() {
        let base = reqwest::Url::parse("http://127.0.0.1:8080/sse").unwrap();
        let ok = resolve_endpoint(&base, "/messages?session_id=ab").unwrap();
        assert_eq!(ok.as_str(), "http://127.0.0.1:8080/messages?session_id=ab");
        let relative = resolve_endpoint(&base, "messages?x=1").unwrap();
        assert_eq!(relative.as_str(), "http://127.0.0.1:8080/messages?x=1");
        assert!(resolve_endpoint(&base, "http://evil.example/messages").is_err());
        assert!(resolve_endpoint(&base, "//evil.example/messages").is_err());
        assert!(resolve_endpoint(&base, "https://127.0.0.1:8080/messages").is_err());
        assert!(resolve_endpoint(&base, "http://127.0.0.1:9090/messages").is_err());
    }

    #[test]
    fn a_header_of_one_meaning_is_configured_once() {
        let value = HeaderValue::from_static;
        let builder = SseClientTransport::builder("http://127.0.0.1/sse")
            .header(http::header::AUTHORIZATION, value("Bearer a"))
            .header(http::header::AUTHORIZATION, value("Bearer b"))
            .header(HeaderName::from_static("x-trace"), value("1"))
            .header(HeaderName::from_static("x-trace"), value("2"));
        let auth: Vec<_> = builder.headers.get_all("authorization").iter().collect();
        assert_eq!(auth, [value("Bearer b")]);
        assert_eq!(builder.headers.get_all("x-trace").iter().count(), 2);
    }
}
