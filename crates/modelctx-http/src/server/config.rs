//! Server settings, the Origin/Host checks and the CORS helper.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, Method, header};

use super::admission::SessionRateLimit;
use super::event_store::{EventStore, InMemoryEventStore};
use super::shared::registry::SessionRegistry;
use crate::headers::{LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};

/// A request the transport refused before any session saw it, as reported to
/// [`StreamableHttpServerConfig::on_error`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Rejection {
    /// The HTTP status sent back (`200 OK` for a fault on a stream already answered,
    /// such as a reader too slow to keep its connection).
    pub status: http::StatusCode,
    /// Why, in words.
    pub reason: String,
}

impl Rejection {
    /// A rejection with `status`, for reason `reason` (transports built on this crate's
    /// protections report theirs the same way).
    pub fn new(status: http::StatusCode, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
        }
    }
}

/// The callback that hears about every transport-level rejection.
pub type ErrorCallback = Arc<dyn Fn(&Rejection) + Send + Sync>;

/// Which `Origin` headers the server accepts. A request without `Origin` (not from a
/// browser) always passes this check; the [`HostPolicy`] still applies to it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OriginPolicy {
    /// Origins on a loopback host (`localhost`, `127.0.0.1`, `[::1]`), any port, plus
    /// the listed ones (exact `scheme://host[:port]`). The default, with an empty list.
    LoopbackAnd(Vec<String>),
    /// Exactly the listed origins.
    Only(Vec<String>),
    /// Every origin (behind a proxy that checks it; never for a local server).
    Any,
}

/// Which `Host` headers the server accepts (DNS-rebinding protection: a rebound
/// request looks same-origin, so the `Host` is the only tell).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostPolicy {
    /// `localhost`, `127.0.0.1` and `[::1]`, any port, plus the listed host names
    /// (with or without a port). The default, with an empty list.
    LoopbackAnd(Vec<String>),
    /// Every host (behind a reverse proxy that checks it).
    Any,
}

/// Settings of a [`StreamableHttpService`](super::StreamableHttpService).
#[derive(Clone)]
#[non_exhaustive]
pub struct StreamableHttpServerConfig {
    /// Sessions with `Mcp-Session-Id` (default) or session-less (a fresh session per POST).
    pub stateful: bool,
    /// Answer each request POST with one `application/json` body instead of an SSE stream.
    /// The body carries the response only: a request a handler sends the client fails at
    /// once (`-32600`), its notifications (progress, log messages) are dropped; messages
    /// not related to a request still go on the standalone GET stream.
    pub json_response: bool,
    /// Where SSE events are kept for `Last-Event-ID` replay; `None` turns resumability
    /// (event ids, priming events) off. Default: a bounded [`InMemoryEventStore`].
    pub event_store: Option<Arc<dyn EventStore>>,
    /// The `retry` (ms) sent with each priming event, telling clients how soon to
    /// reconnect after the server closes a stream early (default 1 s).
    pub retry_interval: Duration,
    /// Accepted `Origin` headers.
    pub origins: OriginPolicy,
    /// Accepted `Host` headers.
    pub hosts: HostPolicy,
    /// The largest POST body accepted; larger draws 413 (default 4 MiB).
    pub max_body_bytes: usize,
    /// How long reading a POST body may take (default 30 s); slower draws 408.
    pub body_timeout: Duration,
    /// How long a connection may take to send a request's headers (default 10 s), when
    /// served by [`StreamableHttpService::serve`](super::StreamableHttpService::serve);
    /// a slower client is disconnected.
    pub header_read_timeout: Duration,
    /// A session with no request and no open stream for this long is ended
    /// (default 300 s; `None` keeps sessions until DELETE).
    pub session_idle_timeout: Option<Duration>,
    /// The most sessions alive at once; an initialize beyond it draws 503 (default
    /// 10 000). A session counts once its `initialize` was answered with a result, and
    /// while that `initialize` runs; a failed one leaves nothing behind.
    pub max_sessions: usize,
    /// Events queued for one SSE connection; a reader that falls this far behind is
    /// disconnected and resumes with `Last-Event-ID` (default 256).
    pub stream_queue: usize,
    /// Messages queued towards one session's handlers before a POST waits (default 64).
    pub inbound_queue: usize,
    /// Hears about every transport-level rejection.
    pub on_error: Option<ErrorCallback>,
    /// Where sessions are recorded for other services (processes) behind the same
    /// endpoint; `None` (default): this service's sessions are its own. See
    /// [`StreamableHttpServerConfig::session_registry`].
    pub session_registry: Option<Arc<dyn SessionRegistry>>,
    /// How long a shared session's GET stream stays held by the service serving it
    /// without a renewal (default 30 s; renewed every third of it while the stream is
    /// open). A service that dies holding a stream blocks a new GET (409) for at most
    /// this long. See [`StreamableHttpServerConfig::stream_lease`].
    pub stream_lease: Duration,
    /// How many new sessions one client address may start; `None` (default): no
    /// limit. See [`StreamableHttpServerConfig::session_rate_limit`].
    pub session_rate_limit: Option<SessionRateLimit>,
    /// Serve protocol 2026-07-28 (the stateless era) beside the session era; see
    /// [`StreamableHttpServerConfig::stateless_era`].
    pub(crate) stateless_era: bool,
    /// Serve the handshake era (2025-11-25 and before) too; see
    /// [`StreamableHttpServerConfig::handshake_era`].
    pub(crate) handshake_era: bool,
}

modelctx_types::__debug_shows!(StreamableHttpServerConfig, |v| {
    stateful: &v.stateful,
    json_response: &v.json_response,
    event_store: &v.event_store.is_some(),
    origins: &v.origins,
    hosts: &v.hosts,
    max_body_bytes: &v.max_body_bytes,
    session_idle_timeout: &v.session_idle_timeout,
    max_sessions: &v.max_sessions,
    session_registry: &v.session_registry.is_some(),
    session_rate_limit: &v.session_rate_limit,
    ..
});

impl Default for StreamableHttpServerConfig {
    fn default() -> Self {
        Self {
            stateful: true,
            json_response: false,
            event_store: Some(Arc::new(InMemoryEventStore::new())),
            retry_interval: Duration::from_secs(1),
            origins: OriginPolicy::LoopbackAnd(Vec::new()),
            hosts: HostPolicy::LoopbackAnd(Vec::new()),
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            body_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            session_idle_timeout: Some(Duration::from_secs(300)),
            max_sessions: 10_000,
            stream_queue: 256,
            inbound_queue: 64,
            on_error: None,
            session_registry: None,
            stream_lease: Duration::from_secs(30),
            session_rate_limit: None,
            stateless_era: true,
            handshake_era: true,
        }
    }
}

impl StreamableHttpServerConfig {
    /// The default POST body cap: 4 MiB.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

    modelctx_types::__setters! {
        /// Whether the endpoint also serves protocol 2026-07-28, the stateless era (on by
        /// default): a POST whose `MCP-Protocol-Version` names a version without a
        /// handshake and no session (or whose request carries the era's envelope in
        /// `_meta`) is checked against the era's header rules and served by a session of
        /// the era lent to it alone; every other POST is served as before. Such sessions
        /// start serving at once and are kept (at most 64, idle) for later POSTs of the
        /// era, so the factory runs once per session, not once per POST. The factory's
        /// server must serve the era too (`ServerBuilder::stateless_era`, also on by
        /// default).
        stateless_era(on: bool) { stateless_era = on }

        /// Whether the endpoint also serves the handshake era (protocol 2025-11-25 and
        /// before; on by default). Off, it serves protocol 2026-07-28 only (the stateless
        /// era, which must then be on): a POST of the handshake era (an `initialize`, or
        /// any message without the era's headers and envelope) is answered `400` with
        /// `-32022`, naming the revisions served in `data.supported`, and GET and DELETE
        /// are `405 Method Not Allowed` (`Allow: POST`) whatever `Mcp-Session-Id` or
        /// `Last-Event-ID` they carry; no session is ever made.
        handshake_era(on: bool) { handshake_era = on }
    }

    /// Session-less mode (handshake era): no session ids, a pre-initialised session per
    /// POST, no GET stream, and handlers cannot send requests to the client. With
    /// [`json_response`](Self::json_response), a POST of one request that changes no
    /// session state (not `initialize`, `logging/setLevel` or a resource subscription)
    /// is served by an idle session kept from an earlier POST, as in the stateless era.
    /// In either answer mode a handler's request context is good for its request only:
    /// its cancellation fires when the request ends, and what it sends or closes
    /// afterwards is refused or ignored. The stateless era (protocol 2026-07-28,
    /// [`stateless_era`](Self::stateless_era)) is another thing: it needs no session by
    /// design and is on in either mode.
    #[must_use]
    pub fn sessionless(mut self) -> Self {
        self.stateful = false;
        self
    }

    /// Answer request POSTs with a single JSON body, which carries the response only: a
    /// request a handler sends the client fails at once (`-32600`), its notifications
    /// are dropped; the standalone GET stream is unaffected.
    #[must_use]
    pub fn json_response(mut self) -> Self {
        self.json_response = true;
        self
    }

    modelctx_types::__setters! {
        /// Uses `store` for resumability.
        event_store(store: Arc<dyn EventStore>) { event_store = Some(store) }
    }

    /// Turns resumability off (no event ids, no priming events).
    #[must_use]
    pub fn without_event_store(mut self) -> Self {
        self.event_store = None;
        self
    }

    modelctx_types::__setters! {
        /// Sets the `retry` interval sent to clients.
        retry_interval(retry: Duration) { retry_interval = retry }
    }

    crate::__protection_setters!();

    modelctx_types::__setters! {
        /// Sets (or, with `None`, removes) the idle timeout of sessions.
        session_idle_timeout(timeout: Option<Duration>) { session_idle_timeout = timeout }

        /// Shares sessions with every service given the same registry (processes behind one
        /// load balancer, no sticky sessions): any of them serves any session's requests.
        ///
        /// Each session's record holds what the server role needs to continue it (the
        /// negotiated revision, client info and capabilities, log level, subscriptions),
        /// saved before the answer to the request that changed it goes out. A request for
        /// a session this service does not hold starts a local session from the record,
        /// already initialised. Every request refreshes the record's expiry
        /// ([`session_idle_timeout`](Self::session_idle_timeout), 24 h when that is
        /// `None`); [`max_sessions`](Self::max_sessions) counts the records of all services;
        /// DELETE removes the record, and every service then answers 404. A registry that
        /// cannot be reached draws 503. Stateful mode only.
        session_registry(registry: Arc<dyn SessionRegistry>) { session_registry = Some(registry) }

        /// With a [`session_registry`](Self::session_registry): how long the hold on a
        /// session's GET stream lasts without a renewal. One GET stream per session holds
        /// across services (a second GET draws 409 wherever it lands; a GET with
        /// `Last-Event-ID` takes the stream over, as on one service); the service serving
        /// the stream renews its hold every third of the lease and gives it up when the
        /// connection ends, so one that dies without giving it up blocks new GETs for at
        /// most the lease (at least 30 ms).
        stream_lease(lease: Duration) { stream_lease = lease.max(Duration::from_millis(30)) }

        /// Sets the session cap. Only sessions whose `initialize` was answered with a
        /// result count (and a new session while its `initialize` runs): a failed
        /// `initialize`, or a notification named `initialize`, leaves no session behind.
        max_sessions(max: usize) { max_sessions = max }

        /// Limits how many new sessions (`initialize` POSTs without a session) one client
        /// address may start: `limit.burst` at once, then one more every `limit.every`;
        /// beyond it the POST draws `429 Too Many Requests` with `Retry-After`. An IPv6
        /// address counts by its /64. A POST whose caller a layer in front authenticated
        /// (one that put a [`Principal`](modelctx_types::Principal) in its
        /// [`Extensions`](modelctx_transport::Extensions), as `modelctx-oauth` does) is not
        /// limited: an authenticated caller is accountable by its token.
        ///
        /// Off by default. A failed handshake already costs the server nothing past its
        /// POST (see [`max_sessions`](Self::max_sessions)), so what this bounds is one
        /// address opening valid sessions until the cap is reached; and behind a reverse
        /// proxy every client has the proxy's address, where a per-address limit would
        /// throttle everyone together (limit at the proxy there). Turn it on for a server
        /// reachable without authentication, e.g. `SessionRateLimit::new(20,
        /// Duration::from_secs(3))` (20 at once, then 20 a minute).
        ///
        /// The address is the connection's: [`serve`](super::StreamableHttpService::serve)
        /// provides it; a router served elsewhere needs axum's
        /// `into_make_service_with_connect_info::<SocketAddr>()` (or
        /// [`hosting::serve_router`](super::hosting::serve_router)). Without it, no limit
        /// applies.
        session_rate_limit(limit: Option<SessionRateLimit>) { session_rate_limit = limit }

        /// Sets the per-connection event queue.
        stream_queue(events: usize) { stream_queue = events.max(1) }
    }
}

/// The setters of the protections every HTTP endpoint of the SDK shares (origins,
/// hosts, body cap and timeout, header timeout, the rejection callback), inside the
/// `impl` of a config with those fields: streamable HTTP's and legacy SSE's. Not a
/// public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __protection_setters {
    () => {
        modelctx_types::__setters! {
            /// Sets the accepted origins.
            origins(origins: $crate::OriginPolicy) { origins = origins }

            /// Sets the accepted hosts.
            hosts(hosts: $crate::HostPolicy) { hosts = hosts }

            /// Sets the body cap.
            max_body_bytes(max: usize) { max_body_bytes = max }

            /// Sets the body read timeout.
            body_timeout(timeout: ::std::time::Duration) { body_timeout = timeout }

            /// Sets the header read timeout.
            header_read_timeout(timeout: ::std::time::Duration) { header_read_timeout = timeout }

            /// Hears about every transport-level rejection.
            on_error(callback: impl Fn(&$crate::Rejection) + Send + Sync + 'static) { on_error = Some(::std::sync::Arc::new(callback)) }
        }
    };
}

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The host part of `host[:port]` (IPv6 literals keep their brackets).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        };
    }
    // Up to the port, found by byte (`split` on a char builds a searcher).
    let end = authority
        .bytes()
        .position(|b| b == b':')
        .unwrap_or(authority.len());
    &authority[..end]
}

fn is_loopback(authority: &str) -> bool {
    let host = host_name(authority);
    LOOPBACK.iter().any(|l| host.eq_ignore_ascii_case(l))
}

impl OriginPolicy {
    /// Whether a request with this `Origin` header value may pass.
    pub fn allows(&self, origin: &str) -> bool {
        let listed = |list: &[String]| list.iter().any(|o| o.eq_ignore_ascii_case(origin));
        match self {
            OriginPolicy::Any => true,
            OriginPolicy::Only(list) => listed(list),
            OriginPolicy::LoopbackAnd(list) => {
                if listed(list) {
                    return true;
                }
                let authority = origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"));
                authority.is_some_and(|a| !a.contains('/') && !a.contains('@') && is_loopback(a))
            }
        }
    }
}

impl HostPolicy {
    /// Whether a request with this `Host` header value (`host[:port]`) may pass.
    pub fn allows(&self, host: &str) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::LoopbackAnd(list) => {
                is_loopback(host)
                    || list.iter().any(|h| {
                        h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(host_name(host))
                    })
            }
        }
    }
}

/// A CORS layer for browser clients: allows `origins`, the MCP methods and request
/// headers, and exposes `Mcp-Session-Id` so scripts can read it. Apply it around the
/// router (`router.layer(cors_layer(..))`); the server's own Origin check still applies.
pub fn cors_layer(origins: &[&str]) -> tower_http::cors::CorsLayer {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let values: Vec<http::HeaderValue> = origins
        .iter()
        .filter_map(|o| http::HeaderValue::from_str(o).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(values))
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers([
            header::CONTENT_TYPE,
            header::ACCEPT,
            header::AUTHORIZATION,
            HeaderName::from_static(MCP_SESSION_ID),
            HeaderName::from_static(MCP_PROTOCOL_VERSION),
            HeaderName::from_static(LAST_EVENT_ID),
        ])
        .expose_headers([
            HeaderName::from_static(MCP_SESSION_ID),
            HeaderName::from_static(MCP_PROTOCOL_VERSION),
        ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_defaults() {
        let o = OriginPolicy::LoopbackAnd(vec!["https://app.example".into()]);
        assert!(o.allows("http://localhost:3000"));
        assert!(o.allows("http://127.0.0.1"));
        assert!(o.allows("http://[::1]:8080"));
        assert!(o.allows("https://app.example"));
        assert!(!o.allows("http://evil.example"));
        assert!(!o.allows("http://localhost.evil.example"));
        assert!(!o.allows("http://evil@localhost"));
        assert!(!o.allows("null"));
        let h = HostPolicy::LoopbackAnd(vec!["mcp.example".into()]);
        assert!(h.allows("127.0.0.1:9000"));
        assert!(h.allows("localhost"));
        assert!(h.allows("mcp.example:443"));
        assert!(!h.allows("evil.example"));
        assert!(!h.allows("127.0.0.1.evil.example"));
    }
}
