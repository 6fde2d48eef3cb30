//! The streamable HTTP client with the spec's backwards-compatibility fallback: the
//! `initialize` POST answered 400, 404 or 405 means a server that may speak only the
//! legacy transport, so the same URL is opened as a legacy event stream and
//! `initialize` is sent again there.
//!
//! The decision reads `HttpClientHandle::initialize_status`, set before the failure reaches
//! the stream; the sink then routes to the legacy sink. The fallback lives in this crate
//! because `modelctx-http` cannot name the legacy transport (this crate depends on it for
//! the protections and the auth hook), the client role knows no transports, and the facade
//! holds no logic. In the fallback a probe goes to the streamable URL and is refused there.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{HeaderName, HeaderValue, StatusCode};
use modelctx_http::{
    AuthHook, HttpClientHandle, HttpClientSink, HttpClientStream, StreamableHttpClientBuilder,
    StreamableHttpClientTransport,
};
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportError, TransportMessage};
use modelctx_types::{ErrorData, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcRequest};

use super::{SseClientBuilder, SseClientSink, SseClientStream, TRANSPORT_ERROR};

/// Which transport a [`FallbackClientTransport`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ActiveTransport {
    /// Streamable HTTP (2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (2024-11-05).
    LegacySse,
}

/// Builds a [`FallbackClientTransport`]. Custom headers, the auth hook and the
/// `reqwest::Client` apply to both transports.
pub struct FallbackClientBuilder {
    http: StreamableHttpClientBuilder,
    sse: SseClientBuilder,
}

modelctx_types::__debug_shows!(FallbackClientBuilder, |v| { sse: &v.sse, .. });

impl FallbackClientBuilder {
    /// Sends everything through `client`.
    #[must_use]
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.http = self.http.client(client.clone());
        self.sse = self.sse.client(client);
        self
    }

    /// Trusts `root` (a private CA, or a self-signed certificate) in the default
    /// client of either transport (feature `rustls`).
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn add_root_certificate(
        mut self,
        root: rustls::pki_types::CertificateDer<'static>,
    ) -> Self {
        self.http = self.http.add_root_certificate(root.clone());
        self.sse = self.sse.add_root_certificate(root);
        self
    }

    /// Adds a header to every request of either transport.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.http = self.http.header(name.clone(), value.clone());
        self.sse = self.sse.header(name, value);
        self
    }

    /// Authenticates every request of either transport through `hook`.
    #[must_use]
    pub fn auth(mut self, hook: impl AuthHook) -> Self {
        let hook: Arc<dyn AuthHook> = Arc::new(hook);
        self.http = self.http.auth(hook.clone());
        self.sse = self.sse.auth_shared(hook);
        self
    }

    /// How long the fallback waits for the legacy stream's `endpoint` event
    /// (default 10 s).
    #[must_use]
    pub fn endpoint_timeout(mut self, timeout: Duration) -> Self {
        self.sse = self.sse.endpoint_timeout(timeout);
        self
    }

    /// The largest response body either transport reads whole (default 16 MiB; see
    /// [`StreamableHttpClientBuilder::max_body_bytes`]).
    #[must_use]
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.http = self.http.max_body_bytes(max);
        self.sse = self.sse.max_body_bytes(max);
        self
    }

    /// Adjusts the streamable HTTP transport (its other settings).
    #[must_use]
    pub fn streamable(
        mut self,
        adjust: impl FnOnce(StreamableHttpClientBuilder) -> StreamableHttpClientBuilder,
    ) -> Self {
        self.http = adjust(self.http);
        self
    }

    /// The transport. Fails on a URL that is not `http` or `https`.
    pub fn build(self) -> Result<FallbackClientTransport, TransportError> {
        let http = self.http.build()?;
        let shared = Arc::new(Shared {
            sse: self.sse,
            http: http.handle(),
            legacy: Mutex::new(None),
            active: Mutex::new(None),
            init: Mutex::new(None),
        });
        Ok(FallbackClientTransport { http, shared })
    }
}

struct Shared {
    sse: SseClientBuilder,
    http: HttpClientHandle,
    /// The legacy transport's sink, once the fallback happened.
    legacy: Mutex<Option<SseClientSink>>,
    active: Mutex<Option<ActiveTransport>>,
    /// The latest `initialize`, to send again over the legacy transport.
    init: Mutex<Option<JsonRpcRequest>>,
}

impl Shared {
    fn legacy(&self) -> Option<SseClientSink> {
        self.legacy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn active(&self) -> Option<ActiveTransport> {
        *self.active.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_active(&self, active: ActiveTransport) {
        *self.active.lock().unwrap_or_else(|p| p.into_inner()) = Some(active);
    }
}

/// A streamable HTTP client transport that falls back to the legacy HTTP+SSE
/// transport on the same URL, as the spec's backwards-compatibility section describes:
/// when the server answers the `initialize` POST with 400, 404 or 405, the transport
/// opens the URL as a legacy event stream, sends `initialize` again there, and speaks
/// the legacy transport from then on. [`FallbackHandle::active`] says which one is in
/// use.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_sse::{ActiveTransport, FallbackClientTransport};
///
/// let transport = FallbackClientTransport::new("http://127.0.0.1:8000/sse")?;
/// let handle = transport.handle();
/// // ... `Client::builder(..).connect(transport).await?` ...
/// if handle.active() == Some(ActiveTransport::LegacySse) {
///     println!("the server speaks only the legacy transport");
/// }
/// # Ok(()) }
/// ```
pub struct FallbackClientTransport {
    http: StreamableHttpClientTransport,
    shared: Arc<Shared>,
}

modelctx_types::__debug_shows!(FallbackClientTransport, |v| {
    http: &v.http,
    active: &v.shared.active(),
});

impl FallbackClientTransport {
    /// A transport to `url` with default settings.
    pub fn new(url: &str) -> Result<Self, TransportError> {
        Self::builder(url).build()
    }

    /// A builder for a transport to `url`.
    pub fn builder(url: &str) -> FallbackClientBuilder {
        FallbackClientBuilder {
            http: StreamableHttpClientTransport::builder(url),
            sse: SseClientBuilder::new(url),
        }
    }

    /// A handle that tells which transport is in use, after the transport was handed
    /// to a session.
    pub fn handle(&self) -> FallbackHandle {
        FallbackHandle {
            shared: self.shared.clone(),
        }
    }
}

/// Observes a [`FallbackClientTransport`].
#[derive(Clone)]
pub struct FallbackHandle {
    shared: Arc<Shared>,
}

modelctx_types::__debug_shows!(FallbackHandle, |v| { active: &v.active() });

impl FallbackHandle {
    /// The transport in use: `None` until the server answered `initialize` or any
    /// request over streamable HTTP (and while the fallback is connecting).
    pub fn active(&self) -> Option<ActiveTransport> {
        self.shared.active()
    }

    /// The streamable HTTP transport's handle (session id, negotiated version).
    pub fn streamable(&self) -> &HttpClientHandle {
        &self.shared.http
    }
}

impl Transport for FallbackClientTransport {
    type Sink = FallbackSink;
    type Stream = FallbackStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("streamable-http")
    }

    fn split(self) -> (FallbackSink, FallbackStream) {
        let (http_sink, http_stream) = self.http.split();
        (
            FallbackSink {
                http: http_sink,
                shared: self.shared.clone(),
            },
            FallbackStream {
                http: http_stream,
                legacy: None,
                shared: self.shared,
            },
        )
    }
}

/// The sending half: streamable HTTP, or the legacy transport after the fallback.
pub struct FallbackSink {
    http: HttpClientSink,
    shared: Arc<Shared>,
}

impl fmt::Debug for FallbackSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackSink").finish_non_exhaustive()
    }
}

impl MessageSink for FallbackSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            if let Some(legacy) = self.shared.legacy() {
                return legacy.send(message).await;
            }
            if let JsonRpcMessage::Request(r) = &message.message
                && r.method == "initialize"
            {
                *self.shared.init.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.clone());
            }
            self.http.send(message).await
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(legacy) = self.shared.legacy() {
                legacy.close().await;
            }
            self.http.close().await;
        })
    }
}

/// The receiving half.
pub struct FallbackStream {
    http: HttpClientStream,
    legacy: Option<SseClientStream>,
    shared: Arc<Shared>,
}

modelctx_types::__debug_shows!(FallbackStream, |v| { active: &v.shared.active(), .. });

/// The statuses that send a client to the legacy transport.
fn refused_streamable(status: Option<StatusCode>) -> bool {
    matches!(
        status,
        Some(StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED)
    )
}

impl FallbackStream {
    /// Opens the legacy transport and sends `init` there. `Err` is the answer to give
    /// `initialize` when that fails.
    async fn fall_back(&mut self, init: JsonRpcRequest) -> Result<(), JsonRpcMessage> {
        let status = self.shared.http.initialize_status();
        let failed = |reason: String| {
            let error = ErrorData::new(
                TRANSPORT_ERROR,
                format!(
                    "the server refused streamable HTTP (HTTP {}), and the legacy SSE \
                     transport failed too: {reason}",
                    status.map_or(0, |s| s.as_u16())
                ),
            );
            JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(init.id.clone()), error))
        };
        let transport = self
            .shared
            .sse
            .clone()
            .connect()
            .await
            .map_err(|e| failed(e.to_string()))?;
        let (sink, stream) = transport.split();
        *self.shared.legacy.lock().unwrap_or_else(|p| p.into_inner()) = Some(sink.clone());
        self.shared.set_active(ActiveTransport::LegacySse);
        self.legacy = Some(stream);
        sink.send(TransportMessage::new(JsonRpcMessage::Request(init.clone())))
            .await
            .map_err(|e| failed(e.to_string()))
    }
}

impl MessageStream for FallbackStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            loop {
                if let Some(legacy) = &mut self.legacy {
                    return legacy.recv().await;
                }
                let received = self.http.recv().await;
                let Some(Ok(m)) = &received else {
                    return received;
                };
                if self.shared.active().is_some() {
                    return received;
                }
                let init = self
                    .shared
                    .init
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                let Some(init) = init.filter(|i| m.message.id() == Some(&i.id)) else {
                    // A server answering over streamable HTTP before any `initialize`
                    // (protocol 2026-07-28 has none) settles it too.
                    if matches!(m.message, JsonRpcMessage::Response(_)) {
                        self.shared.set_active(ActiveTransport::StreamableHttp);
                    }
                    return received;
                };
                let refused = matches!(m.message, JsonRpcMessage::Error(_))
                    && refused_streamable(self.shared.http.initialize_status());
                if !refused {
                    self.shared.set_active(ActiveTransport::StreamableHttp);
                    return received;
                }
                if let Err(answer) = self.fall_back(init).await {
                    return Some(Ok(TransportMessage::new(answer)));
                }
            }
        })
    }
}
