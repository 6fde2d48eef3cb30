//! The client side: a `Transport` over reqwest.
//!
//! The transport reads the session id and negotiated version from the `initialize` exchange
//! and sends them on every request. Inbound messages carry their SSE event id as
//! `resumption_token`; an outbound request with a token resumes with GET and
//! `Last-Event-ID` instead of being sent again. A 404 fails the session's in-flight
//! requests as interrupted, then the saved `initialize` is repeated, followed by the old
//! session's log level and resource subscriptions (`SessionReplay`), before the next
//! request goes out; a request whose own POST got the 404 never ran and goes to the new
//! session once. Under a policy that reconnects, the standalone GET stream that finds its
//! session gone starts the new session itself, so the server's own messages come again
//! without waiting for the client's next request. `HttpClientHandle::initialize_status` is
//! the status of the latest `initialize` POST, on which the legacy fallback
//! (`modelctx-sse`) decides.
//!
//! The body is serialised once per request (`Bytes`, cloned per attempt); nothing is cloned
//! on the hot path when the policy retries nothing.

mod body;
mod era;
mod failure;
mod io;
mod standalone;

#[doc(hidden)]
pub use body::{BodyError, read_capped, refusal_text};
pub use failure::http_status;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{HeaderMap, HeaderName, HeaderValue};
use modelctx_transport::{
    ConnectionState, MessageSink, MessageStream, ReconnectPolicy, Transport, TransportError,
    TransportMessage,
};
use modelctx_types::{JsonRpcMessage, JsonRpcRequest, RequestId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Adds credentials to every request and reacts when the server refuses them.
///
/// The OAuth support implements this; a static bearer token is a three-line impl.
pub trait AuthHook: Send + Sync + 'static {
    /// Headers to add to the next request (e.g. `Authorization`).
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, TransportError>>;

    /// The server answered 401 or 403 (`headers` are the response's, with its
    /// `WWW-Authenticate`). Return true to retry the request with fresh
    /// [`headers`](Self::headers) (at most [`max_retries`](Self::max_retries) times),
    /// false to fail it.
    fn on_rejected(&self, status: u16, headers: &HeaderMap) -> BoxFuture<'_, bool>;

    /// [`on_rejected`](Self::on_rejected) for a request whose timeout is `clock`: a
    /// hook that waits on the user (an authorization in a browser) holds the clock
    /// meanwhile ([`RequestClock::paused`](modelctx_transport::RequestClock::paused)), so
    /// the user's time does not count against the request, and the request resumes with
    /// the budget it had left; its own HTTP calls still count. The transport calls this
    /// one; the default ignores the clock.
    fn on_rejected_for<'a>(
        &'a self,
        status: u16,
        headers: &'a HeaderMap,
        clock: modelctx_transport::RequestClock,
    ) -> BoxFuture<'a, bool> {
        let _ = clock;
        self.on_rejected(status, headers)
    }

    /// Headers for a request `method` to `url`; the transport calls this rather than
    /// [`headers`](Self::headers), which it defaults to. Credentials bound to the
    /// request (a DPoP proof signs the method and URL) come from here.
    fn headers_for<'a>(
        &'a self,
        method: &'a http::Method,
        url: &'a str,
    ) -> BoxFuture<'a, Result<HeaderMap, TransportError>> {
        let _ = (method, url);
        self.headers()
    }

    /// How many times one request may be retried after [`on_rejected`](Self::on_rejected)
    /// returned true (default 1). A hook that allows more must stop loops itself, e.g.
    /// a server nonce challenge right after a new token.
    fn max_retries(&self) -> u32 {
        1
    }
}

/// A shared hook is a hook: one `Arc<dyn AuthHook>` can authenticate several transports
/// (a host that connects to many servers through one OAuth client, the legacy fallback).
impl<H: AuthHook + ?Sized> AuthHook for Arc<H> {
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, TransportError>> {
        (**self).headers()
    }

    fn on_rejected(&self, status: u16, headers: &HeaderMap) -> BoxFuture<'_, bool> {
        (**self).on_rejected(status, headers)
    }

    fn on_rejected_for<'a>(
        &'a self,
        status: u16,
        headers: &'a HeaderMap,
        clock: modelctx_transport::RequestClock,
    ) -> BoxFuture<'a, bool> {
        (**self).on_rejected_for(status, headers, clock)
    }

    fn headers_for<'a>(
        &'a self,
        method: &'a http::Method,
        url: &'a str,
    ) -> BoxFuture<'a, Result<HeaderMap, TransportError>> {
        (**self).headers_for(method, url)
    }

    fn max_retries(&self) -> u32 {
        (**self).max_retries()
    }
}

/// What is known about the current session.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) session_id: Option<String>,
    pub(crate) protocol_version: Option<String>,
    /// Bumped at every new session: work of an older one stops.
    pub(crate) generation: u64,
    /// Requests sent and not yet answered, with the generation they were sent in.
    pub(crate) inflight: HashMap<RequestId, u64>,
    /// The log level and resource subscriptions, repeated to a new session.
    pub(crate) replay: modelctx_transport::SessionReplay,
    /// Those of them the reconnect policy may send again (idempotent).
    pub(crate) retryable: std::collections::HashSet<RequestId>,
    /// Requests whose POST has no answer head yet: their own POST says what became of
    /// them (a 404 means unseen, to be sent to a new session), not another request's
    /// 404 racing it.
    pub(crate) posting: std::collections::HashSet<RequestId>,
    /// The initialize request, repeated to start a new session after a 404.
    pub(crate) init_request: Option<JsonRpcRequest>,
    pub(crate) init_id: Option<RequestId>,
    /// The HTTP status the server answered the latest `initialize` POST with.
    pub(crate) initialize_status: Option<http::StatusCode>,
    /// The server forgot the session (404): the next request starts a new one.
    pub(crate) expired: bool,
    /// The newest SSE event id seen on each request's stream.
    pub(crate) tokens: HashMap<RequestId, Arc<str>>,
    pub(crate) standalone_started: bool,
    /// Attached to a session with [`StreamableHttpClientBuilder::session`] that has
    /// not seen its `initialize` yet: the first one is sent on it.
    pub(crate) attached: bool,
    /// A request of the stateless era (2026-07-28) was sent: the client speaks it.
    pub(crate) stateless_era: bool,
    /// Requests of the stateless era in flight, by id: cancelling one aborts its POST,
    /// which closes its response stream (the era's cancellation over HTTP).
    pub(crate) stateless_posts: HashMap<RequestId, tokio::task::AbortHandle>,
    /// `tools/list` requests of the stateless era awaiting their answer.
    pub(crate) tool_lists: std::collections::HashSet<RequestId>,
    /// Per tool, the arguments its `inputSchema` marks with `x-mcp-header`: the header
    /// name and the path of `properties` keys to the value (stateless era).
    pub(crate) param_headers: HashMap<String, Vec<modelctx_types::mirror::MirroredParam>>,
    /// What broke a request's response body, for the error that fails the request.
    pub(crate) broken_bodies: HashMap<RequestId, failure::BrokenBody>,
}

pub(crate) struct ClientInner {
    pub(crate) url: String,
    pub(crate) http: reqwest::Client,
    pub(crate) headers: HeaderMap,
    pub(crate) auth: Option<Arc<dyn AuthHook>>,
    pub(crate) standalone: bool,
    pub(crate) max_event_bytes: usize,
    /// The largest body read whole (a JSON answer, a refusal's body).
    pub(crate) max_body_bytes: usize,
    pub(crate) reconnect_delay: Duration,
    pub(crate) max_reconnects: u32,
    pub(crate) close_on_session_end: bool,
    pub(crate) resume_streams: bool,
    pub(crate) policy: ReconnectPolicy,
    pub(crate) connection: tokio::sync::watch::Sender<ConnectionState>,
    /// Whether `connection` says anything but `Connected`: every answered request
    /// reports `Connected`, and must not take the watch's lock to do so.
    pub(crate) degraded: std::sync::atomic::AtomicBool,
    pub(crate) tx: mpsc::Sender<TransportMessage>,
    pub(crate) closed: CancellationToken,
    pub(crate) state: Mutex<State>,
    pub(crate) reinit: tokio::sync::Mutex<()>,
    /// The session's request timeouts (held while the auth hook waits on the user).
    pub(crate) clocks: Mutex<Option<std::sync::Weak<dyn modelctx_transport::RequestClocks>>>,
}

impl ClientInner {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reports where the connection stands, when that changed.
    pub(crate) fn set_connection(&self, state: ConnectionState) {
        use std::sync::atomic::Ordering;
        let connected = state == ConnectionState::Connected;
        // A load first: the common case writes nothing shared.
        if connected
            && (!self.degraded.load(Ordering::Acquire)
                || !self.degraded.swap(false, Ordering::AcqRel))
        {
            return;
        }
        self.connection.send_if_modified(|current| {
            let changed = *current != state;
            *current = state;
            changed
        });
        // Set after the report, so that the next success resets what it reported.
        if !connected {
            self.degraded.store(true, Ordering::Release);
        }
    }

    /// Request `id`'s timeout, as the session offered it (one that holds nothing
    /// before, or without an id).
    pub(crate) fn clock(&self, id: Option<&RequestId>) -> modelctx_transport::RequestClock {
        let id = id.cloned().unwrap_or(RequestId::Number(0));
        let clocks = self
            .clocks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match clocks {
            Some(clocks) => modelctx_transport::RequestClock::from_weak(clocks, id),
            None => modelctx_transport::RequestClock::none(id),
        }
    }
}

/// Builds a [`StreamableHttpClientTransport`].
pub struct StreamableHttpClientBuilder {
    url: String,
    http: Option<reqwest::Client>,
    headers: HeaderMap,
    auth: Option<Arc<dyn AuthHook>>,
    standalone: bool,
    max_event_bytes: usize,
    max_body_bytes: usize,
    reconnect_delay: Duration,
    max_reconnects: u32,
    close_on_session_end: bool,
    resume_streams: bool,
    policy: ReconnectPolicy,
    session: Option<String>,
    protocol_version: Option<String>,
    roots: TlsRoots,
}

modelctx_types::__debug_shows!(StreamableHttpClientBuilder, |v| {
    url: &v.url,
    standalone: &v.standalone,
    ..
});

impl StreamableHttpClientBuilder {
    modelctx_types::__setters! {
        /// Sends everything through `client` (its TLS, proxy, timeouts and redirect policy).
        /// The default client follows redirects only within the endpoint's origin, so
        /// credentials are never replayed to another origin.
        client(client: reqwest::Client) { http = Some(client) }
    }

    /// Trusts `root` (a private CA, or a self-signed server certificate) besides the
    /// built-in roots, in the default client (not in one passed to
    /// [`client`](Self::client)). Read PEM with
    /// [`tls::certificates_from_pem`](crate::tls::certificates_from_pem).
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn add_root_certificate(
        mut self,
        root: rustls::pki_types::CertificateDer<'static>,
    ) -> Self {
        self.roots.push(root);
        self
    }

    /// Adds a header to every POST, GET and DELETE. A header of one meaning
    /// (`Authorization`, `DPoP`, and the protocol's own: see
    /// [`headers::is_single_valued`](crate::headers::is_single_valued)) replaces the value
    /// given before, and the transport's own values (the session id, the negotiated
    /// version, ...) replace these: none is ever sent on two lines.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        crate::headers::add_header(&mut self.headers, name, value);
        self
    }

    modelctx_types::__setters! {
        /// Authenticates every request through `hook`.
        auth(hook: impl AuthHook) { auth = Some(Arc::new(hook)) }

        /// Whether to open the standalone GET stream after initialisation (default true).
        standalone_stream(open: bool) { standalone = open }
    }

    /// The wait before a reconnect when the server sent no `retry` (default 1 s), and
    /// how many reconnects in a row may fail before a stream is given up (default 5).
    #[must_use]
    pub fn reconnect(mut self, delay: Duration, max_attempts: u32) -> Self {
        self.reconnect_delay = delay;
        self.max_reconnects = max_attempts;
        self
    }

    modelctx_types::__setters! {
        /// How the transport behaves when the server cannot be reached or the connection
        /// drops (default [`ReconnectPolicy::never`]: a failure is reported at once).
        ///
        /// With a policy that tries again:
        /// - a request that could not connect (refused, unreachable, TLS handshake failed)
        ///   was never sent, whatever its method: it is tried again after the policy's
        ///   backoff, up to its attempts, then fails as undelivered
        ///   (`SessionError::is_undelivered`);
        /// - a request whose connection dropped after it was sent (the POST, its answer, or
        ///   its response stream that cannot be resumed; the server forgot the session while
        ///   it ran) is sent again only when its method is idempotent
        ///   ([`ReconnectPolicy::is_idempotent`]: lists and reads; never `tools/call`),
        ///   in a new session when the old one is gone (protocol 2025: the saved
        ///   `initialize` is repeated first; 2026-07-28: nothing to repeat) and answered
        ///   once; any other fails with [`modelctx_transport::interrupted`]
        ///   (`SessionError::is_interrupted`: it may or may not have run);
        /// - the standalone GET stream and resumed response streams reconnect with the
        ///   same backoff when the server refuses connections.
        ///
        /// A request in flight at a drop fails as interrupted under any policy.
        /// [`HttpClientHandle::connection_state`] reports `Reconnecting` meanwhile.
        reconnect_policy(policy: ReconnectPolicy) { policy = policy }

        /// The largest SSE event accepted (default 16 MiB). A larger one fails the request
        /// whose stream carried it, saying so, and that stream is closed; the standalone
        /// stream is opened again.
        max_event_bytes(max: usize) { max_event_bytes = max }

        /// The largest response body read whole (default 16 MiB): a JSON answer, or the
        /// body of a refusal (an HTTP error status). The cap holds while the body streams:
        /// a body whose `Content-Length` says more, or that grows past it as it arrives, is
        /// not read further, and its request fails with an error that says so (other
        /// requests, and the session, go on). SSE answers are read event by event, each
        /// capped by [`max_event_bytes`](Self::max_event_bytes).
        max_body_bytes(max: usize) { max_body_bytes = max }

        /// Attaches to an existing session instead of starting a new one: requests carry
        /// this `Mcp-Session-Id` from the start (the first `initialize`, if any, is sent on
        /// it). With [`protocol_version`](Self::protocol_version), reattach to a session
        /// that is already initialised, e.g. to resume a call with a saved token.
        session(id: impl Into<String>) { session = Some(id.into()) }

        /// The protocol version of an attached session (sent as `MCP-Protocol-Version`).
        protocol_version(version: impl Into<String>) { protocol_version = Some(version.into()) }

        /// Whether a request's SSE stream that breaks before its response is resumed
        /// automatically (GET with `Last-Event-ID`, default true). When false the request
        /// fails, and the caller resumes it later with its
        /// [resumption token](HttpClientHandle::resumption_token).
        resume_interrupted_streams(resume: bool) { resume_streams = resume }

        /// When the server forgets the session (HTTP 404), end the transport (the session
        /// runtime then fails every pending request as closed) instead of failing the
        /// in-flight requests and starting a new session on the next request (default).
        close_on_session_end(close: bool) { close_on_session_end = close }
    }

    /// The transport. Fails on a URL that is not `http` or `https`.
    pub fn build(self) -> Result<StreamableHttpClientTransport, TransportError> {
        let parsed = reqwest::Url::parse(&self.url)
            .map_err(|e| TransportError::other(format!("invalid endpoint URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(TransportError::other(
                "the endpoint URL must be http or https",
            ));
        }
        let http = match self.http {
            Some(c) => c,
            None => client_for(&parsed, &self.roots)?,
        };
        let (tx, rx) = mpsc::channel(256);
        let closed = CancellationToken::new();
        let state = State {
            attached: self.session.is_some(),
            session_id: self.session,
            protocol_version: self.protocol_version,
            ..State::default()
        };
        let inner = Arc::new(ClientInner {
            url: self.url,
            http,
            headers: self.headers,
            auth: self.auth,
            standalone: self.standalone,
            max_event_bytes: self.max_event_bytes,
            max_body_bytes: self.max_body_bytes,
            reconnect_delay: self.reconnect_delay,
            max_reconnects: self.max_reconnects,
            close_on_session_end: self.close_on_session_end,
            resume_streams: self.resume_streams,
            policy: self.policy,
            connection: tokio::sync::watch::Sender::new(ConnectionState::Connected),
            degraded: std::sync::atomic::AtomicBool::new(false),
            tx,
            closed: closed.clone(),
            state: Mutex::new(state),
            reinit: tokio::sync::Mutex::new(()),
            clocks: Mutex::new(None),
        });
        Ok(StreamableHttpClientTransport { inner, rx, closed })
    }
}

/// Why an `https` endpoint cannot be reached by a build without TLS.
#[cfg(not(feature = "rustls"))]
const NO_TLS: &str = "an https endpoint needs TLS: enable the `rustls` feature \
    (of modelctx-http, modelctx-sse or modelctx), or pass a reqwest client built with TLS \
    to `client`";

/// An error with its causes (`error sending request` alone does not say that the
/// server's certificate was not trusted, its source does). Shared with the legacy SSE
/// client.
#[doc(hidden)]
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let cause = e.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        source = e.source();
    }
    text
}

/// The certificates a default client trusts besides the built-in roots: empty, and
/// nothing to add, in a build without `rustls`. Shared with the legacy SSE client,
/// whose own `rustls` feature may be off while this crate's is on (features unify).
#[doc(hidden)]
#[derive(Debug, Clone, Default)]
pub struct TlsRoots {
    #[cfg(feature = "rustls")]
    roots: Vec<rustls::pki_types::CertificateDer<'static>>,
}

impl TlsRoots {
    /// Trusts `root` too.
    #[cfg(feature = "rustls")]
    pub fn push(&mut self, root: rustls::pki_types::CertificateDer<'static>) {
        self.roots.push(root);
    }
}

/// The default client for `url`: redirects only within its origin, over rustls with
/// `roots` besides the built-in ones in a build with `rustls`; refused for an `https`
/// URL in a build without it. Shared with the legacy SSE client.
#[doc(hidden)]
pub fn client_for(url: &reqwest::Url, roots: &TlsRoots) -> Result<reqwest::Client, TransportError> {
    #[cfg(not(feature = "rustls"))]
    {
        let _ = roots;
        if url.scheme() == "https" {
            return Err(TransportError::other(NO_TLS));
        }
        default_client(())
    }
    #[cfg(feature = "rustls")]
    {
        let _ = url;
        let tls = crate::tls::client_config(&roots.roots)
            .map_err(|e| TransportError::other(format!("TLS: {e}")))?;
        default_client(tls)
    }
}

/// A client that follows redirects only within the original origin; with `rustls`,
/// over the given TLS configuration.
fn default_client(
    #[cfg(feature = "rustls")] tls: rustls::ClientConfig,
    #[cfg(not(feature = "rustls"))] _tls: (),
) -> Result<reqwest::Client, TransportError> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if attempt.previous().len() >= 10 || !same_origin {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    let builder = reqwest::Client::builder().redirect(policy);
    #[cfg(feature = "rustls")]
    let builder = builder.use_preconfigured_tls(tls);
    builder
        .build()
        .map_err(|e| TransportError::other(format!("cannot build the HTTP client: {e}")))
}

/// The streamable HTTP client transport.
///
/// Every outbound message is a POST; a request's answer (JSON or SSE) flows back through
/// the stream half. The session id and the negotiated version are read as the
/// `initialize` exchange passes through and sent on every later request. See
/// [`HttpClientHandle`] for what can be observed from outside.
pub struct StreamableHttpClientTransport {
    inner: Arc<ClientInner>,
    rx: mpsc::Receiver<TransportMessage>,
    closed: CancellationToken,
}

modelctx_types::__debug_shows!(StreamableHttpClientTransport, |v| { url: &v.inner.url, .. });

impl StreamableHttpClientTransport {
    /// A transport to `url` with default settings.
    pub fn new(url: &str) -> Result<Self, TransportError> {
        Self::builder(url).build()
    }

    /// A builder for a transport to `url`.
    pub fn builder(url: &str) -> StreamableHttpClientBuilder {
        StreamableHttpClientBuilder {
            url: url.to_owned(),
            http: None,
            headers: HeaderMap::new(),
            auth: None,
            standalone: true,
            max_event_bytes: body::DEFAULT_MAX_BODY_BYTES,
            max_body_bytes: body::DEFAULT_MAX_BODY_BYTES,
            reconnect_delay: Duration::from_secs(1),
            max_reconnects: 5,
            close_on_session_end: false,
            resume_streams: true,
            policy: ReconnectPolicy::never(),
            session: None,
            protocol_version: None,
            roots: TlsRoots::default(),
        }
    }

    /// A handle that observes the transport after it was handed to a session.
    pub fn handle(&self) -> HttpClientHandle {
        HttpClientHandle {
            inner: self.inner.clone(),
        }
    }
}

/// Observes a [`StreamableHttpClientTransport`]: session id, negotiated version,
/// resumption tokens.
#[derive(Clone)]
pub struct HttpClientHandle {
    inner: Arc<ClientInner>,
}

modelctx_types::__debug_shows!(HttpClientHandle, |v| {
    session_id: &v.session_id(),
    protocol_version: &v.protocol_version(),
});

impl HttpClientHandle {
    /// The `Mcp-Session-Id` the server issued, while the session lives.
    pub fn session_id(&self) -> Option<String> {
        self.inner.state().session_id.clone()
    }

    /// The protocol version negotiated by `initialize`.
    pub fn protocol_version(&self) -> Option<String> {
        self.inner.state().protocol_version.clone()
    }

    /// The HTTP status the server answered the latest `initialize` POST with, once it
    /// answered: set before the request's answer (or its failure) reaches the session.
    /// A `400`, `404` or `405` here marks a server that may speak only the legacy
    /// HTTP+SSE transport (the spec's backwards-compatibility rule; `modelctx-sse`
    /// falls back on it).
    pub fn initialize_status(&self) -> Option<http::StatusCode> {
        self.inner.state().initialize_status
    }

    /// The newest SSE event id seen on request `id`'s stream: save it, and pass it as
    /// the resumption token of a later request to resume the call.
    pub fn resumption_token(&self, id: &RequestId) -> Option<Arc<str>> {
        self.inner.state().tokens.get(id).cloned()
    }

    /// Where the connection to the server stands, and its changes: `Reconnecting` while
    /// a request waits out the [reconnect policy](StreamableHttpClientBuilder::reconnect_policy)'s
    /// backoff, `Failed` when one ran out of attempts, `Connected` again once the server
    /// answered.
    pub fn connection_state(&self) -> tokio::sync::watch::Receiver<ConnectionState> {
        self.inner.connection.subscribe()
    }

    /// Whether the transport was closed.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }
}

impl Transport for StreamableHttpClientTransport {
    type Sink = HttpClientSink;
    type Stream = HttpClientStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("streamable-http")
    }

    fn split(self) -> (HttpClientSink, HttpClientStream) {
        let weak = Arc::downgrade(&self.inner);
        (
            HttpClientSink { inner: self.inner },
            HttpClientStream {
                rx: self.rx,
                closed: self.closed,
                inner: weak,
            },
        )
    }
}

/// The sending half: one POST per message.
pub struct HttpClientSink {
    inner: Arc<ClientInner>,
}

impl fmt::Debug for HttpClientSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientSink").finish_non_exhaustive()
    }
}

impl MessageSink for HttpClientSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(io::send(self.inner.clone(), message))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(io::close(self.inner.clone()))
    }
}

/// The receiving half: messages from every response stream and the standalone stream.
pub struct HttpClientStream {
    rx: mpsc::Receiver<TransportMessage>,
    closed: CancellationToken,
    inner: std::sync::Weak<ClientInner>,
}

impl fmt::Debug for HttpClientStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientStream").finish_non_exhaustive()
    }
}

impl MessageStream for HttpClientStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                m = self.rx.recv() => m.map(Ok),
                () = self.closed.cancelled() => None,
            }
        })
    }

    fn offer_clocks(&mut self, clocks: Arc<dyn modelctx_transport::RequestClocks>) {
        if let Some(inner) = self.inner.upgrade() {
            *inner.clocks.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::downgrade(&clocks));
        }
    }
}

/// The message text of a JSON-RPC message, for logs and errors.
pub(crate) fn is_response(m: &JsonRpcMessage) -> bool {
    matches!(m, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
}

#[cfg(test)]
mod tests {
    use super::StreamableHttpClientTransport;

    /// Without the `rustls` feature the default client has no TLS: an `https` endpoint
    /// is refused when the transport is built, saying what to do, instead of failing
    /// later with reqwest's "invalid URL scheme".
    #[cfg(not(feature = "rustls"))]
    #[test]
    fn https_without_tls_is_refused_with_the_remedy() {
        let error = StreamableHttpClientTransport::new("https://127.0.0.1:1/mcp").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("`rustls` feature"), "{text}");
        // A reqwest client of the caller's own is taken as it is.
        let own = reqwest::Client::new();
        assert!(
            StreamableHttpClientTransport::builder("https://127.0.0.1:1/mcp")
                .client(own)
                .build()
                .is_ok()
        );
    }

    /// With it, the default client is built over rustls (web-PKI roots and the extra
    /// root), for `https` endpoints and plain ones alike.
    #[cfg(feature = "rustls")]
    #[test]
    fn https_with_tls_builds_and_a_bad_root_is_refused() {
        assert!(StreamableHttpClientTransport::new("https://127.0.0.1:1/mcp").is_ok());
        assert!(StreamableHttpClientTransport::new("http://127.0.0.1:1/mcp").is_ok());
        let junk = rustls::pki_types::CertificateDer::from(vec![1, 2, 3]);
        let error = StreamableHttpClientTransport::builder("https://127.0.0.1:1/mcp")
            .add_root_certificate(junk)
            .build()
            .unwrap_err();
        assert!(error.to_string().contains("root certificate"), "{error}");
    }
}
