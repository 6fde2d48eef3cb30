//! Server settings.

use std::time::Duration;

use modelctx_http::{ErrorCallback, HostPolicy, OriginPolicy, StreamableHttpServerConfig};

/// Settings of an [`SseService`](super::SseService). The protections are those of
/// streamable HTTP, on by default: Origin and Host limited to loopback names, a 4 MiB
/// body cap, read timeouts, bounded queues and a session cap.
#[derive(Clone)]
#[non_exhaustive]
pub struct SseServerConfig {
    /// The path of the event stream (`GET`, default `/sse`).
    pub sse_path: String,
    /// The path messages are POSTed to (default `/messages`). The `endpoint` event
    /// names it as is, so behind a path prefix (a nested router, a proxy) give the
    /// path the client sees.
    pub message_path: String,
    /// Accepted `Origin` headers.
    pub origins: OriginPolicy,
    /// Accepted `Host` headers.
    pub hosts: HostPolicy,
    /// The largest POST body accepted; larger draws 413 (default 4 MiB).
    pub max_body_bytes: usize,
    /// How long reading a POST body may take (default 30 s); slower draws 408. A
    /// message its session does not take within this time either draws 503.
    pub body_timeout: Duration,
    /// How long a connection may take to send a request's headers (default 10 s),
    /// when served by [`SseService::serve`](super::SseService::serve).
    pub header_read_timeout: Duration,
    /// The most sessions (open event streams) at once; a `GET` beyond it draws 503
    /// (default 10 000).
    pub max_sessions: usize,
    /// Events queued for one stream (default 256). When the queue is full a sender
    /// waits for the reader; one that stays full for
    /// [`send_timeout`](Self::send_timeout) ends the session (the legacy transport
    /// cannot resume a stream).
    pub stream_queue: usize,
    /// How long one outbound message may wait for room in a full stream queue
    /// (default 30 s).
    pub send_timeout: Duration,
    /// Messages queued towards one session's handlers before a POST waits (default 64).
    pub inbound_queue: usize,
    /// A comment sent on an idle stream this often, so proxies keep it and a vanished
    /// client is noticed (default 15 s; `None` for none).
    pub keep_alive: Option<Duration>,
    /// Hears about every transport-level rejection.
    pub on_error: Option<ErrorCallback>,
    /// How long a new stream may go without its `initialize` answered with a result
    /// before the session is ended (default 30 s; `None`: as long as the client keeps
    /// the connection). A stream holds its place under
    /// [`max_sessions`](Self::max_sessions) from the `GET`; this bounds how long one
    /// that never completes a handshake keeps it. A failed `initialize` ends its
    /// session at once, after its error is sent.
    pub handshake_timeout: Option<Duration>,
}

modelctx_types::__debug_shows!(SseServerConfig, |v| {
    sse_path: &v.sse_path,
    message_path: &v.message_path,
    origins: &v.origins,
    hosts: &v.hosts,
    max_body_bytes: &v.max_body_bytes,
    max_sessions: &v.max_sessions,
    keep_alive: &v.keep_alive,
    handshake_timeout: &v.handshake_timeout,
    ..
});

impl Default for SseServerConfig {
    fn default() -> Self {
        Self {
            sse_path: "/sse".to_owned(),
            message_path: "/messages".to_owned(),
            origins: OriginPolicy::LoopbackAnd(Vec::new()),
            hosts: HostPolicy::LoopbackAnd(Vec::new()),
            max_body_bytes: StreamableHttpServerConfig::DEFAULT_MAX_BODY_BYTES,
            body_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            max_sessions: 10_000,
            stream_queue: 256,
            send_timeout: Duration::from_secs(30),
            inbound_queue: 64,
            keep_alive: Some(Duration::from_secs(15)),
            on_error: None,
            handshake_timeout: Some(Duration::from_secs(30)),
        }
    }
}

impl SseServerConfig {
    /// The protections of a streamable HTTP endpoint (origins, hosts, body cap and
    /// timeout, header timeout, session cap, queues, error callback), for an SSE
    /// endpoint served beside it; the paths and the keep-alive keep their defaults.
    pub fn matching(http: &StreamableHttpServerConfig) -> Self {
        Self {
            origins: http.origins.clone(),
            hosts: http.hosts.clone(),
            max_body_bytes: http.max_body_bytes,
            body_timeout: http.body_timeout,
            header_read_timeout: http.header_read_timeout,
            max_sessions: http.max_sessions,
            stream_queue: http.stream_queue,
            inbound_queue: http.inbound_queue,
            on_error: http.on_error.clone(),
            ..Self::default()
        }
    }

    /// Sets the event stream's path and the message path.
    #[must_use]
    pub fn paths(mut self, sse: impl Into<String>, messages: impl Into<String>) -> Self {
        self.sse_path = sse.into();
        self.message_path = messages.into();
        self
    }

    modelctx_http::__protection_setters!();

    modelctx_types::__setters! {
        /// Sets the session cap.
        max_sessions(max: usize) { max_sessions = max }
    }

    /// Sets the per-stream event queue and how long a sender may wait on it.
    #[must_use]
    pub fn stream_queue(mut self, events: usize, send_timeout: Duration) -> Self {
        self.stream_queue = events.max(1);
        self.send_timeout = send_timeout;
        self
    }

    modelctx_types::__setters! {
        /// Sets (or, with `None`, turns off) the handshake deadline (see
        /// [`handshake_timeout`](Self::handshake_timeout)).
        handshake_timeout(timeout: Option<Duration>) { handshake_timeout = timeout }

        /// Sets (or, with `None`, turns off) the keep-alive comment.
        keep_alive(every: Option<Duration>) { keep_alive = every }
    }
}
