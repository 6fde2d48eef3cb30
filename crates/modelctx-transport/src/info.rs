//! What a transport tells the session that runs over it.

use std::sync::Arc;

/// What a transport tells the session that runs over it, read as the session starts
/// (by the role and by the session runtime, before the transport is split:
/// [`Transport::info`](crate::Transport::info)); never on a message's path. Its name,
/// its own session id, and the facts of the transport that the server applies on top
/// of any session settings. A wrapper forwards it in one call.
///
/// ```
/// use modelctx_transport::TransportInfo;
///
/// let info = TransportInfo::new("pipe").with_session_id("s-1");
/// assert_eq!(info.kind, "pipe");
/// assert_eq!(info.session_id.as_deref(), Some("s-1"));
/// // A custom transport starts with a handshake and can carry requests to the peer.
/// assert!(!info.starts_initialized);
/// assert!(info.allows_outbound_requests);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct TransportInfo {
    /// A short name of the transport (`"stdio"`, `"memory"`, `"streamable-http"`,
    /// `"sse"`), for diagnostics: the session runtime records it in the session's
    /// tracing span. `"custom"` unless set.
    pub kind: &'static str,
    /// The transport's own session id, when it has one as the session starts (the
    /// servers of streamable HTTP and legacy SSE): recorded in the session's tracing
    /// span.
    pub session_id: Option<Arc<str>>,
    /// The session's state shared with other processes, when the transport keeps it
    /// beyond this one (streamable HTTP with a shared session registry): the server
    /// role then starts from the stored state and saves its changes.
    pub shared_session: Option<Arc<dyn modelctx_store::SharedSession>>,
    /// What the ids of the session's outbound requests start with, when the transport
    /// needs them to name where they were sent from: the session then numbers its
    /// requests `"<prefix><n>"` (strings) instead of `n`, so that a response reaching
    /// another process of the same server can be sent on to this one (streamable HTTP
    /// with a shared session registry). Numbers when unset.
    pub request_id_prefix: Option<Arc<str>>,
    /// Whether the session starts already initialised, with no handshake of its own:
    /// true for a session-less streamable HTTP POST (every POST is a fresh session that
    /// serves at once). The server applies it whatever session settings it was given.
    pub starts_initialized: bool,
    /// Whether the session may send requests to the peer: false when nothing can carry
    /// them (session-less streamable HTTP has no stream back to the client), so a
    /// handler's request fails at once instead of waiting. True unless set.
    pub allows_outbound_requests: bool,
    /// Whether the session is not a lasting one: it serves requests that each stand
    /// alone, possibly of several clients in turn (a session-less streamable HTTP POST,
    /// and a session of the 2026-07-28 era that streamable HTTP lends POST after POST).
    /// State bound to "the session" cannot be: tasks bind to the caller's
    /// [`Principal`](modelctx_types::Principal) alone.
    pub sessionless: bool,
    /// Whether this transport's session serves requests of the stateless era (protocol
    /// 2026-07-28), which need no handshake: a session that serves the era starts
    /// serving at once, and each such request comes with what the transport read of it
    /// ([`TransportMessage::era`](crate::TransportMessage::era)). Streamable HTTP knows
    /// it from the request's headers. Unstable.
    #[doc(hidden)]
    pub stateless_era: bool,
}

impl TransportInfo {
    /// A transport named `kind`, with nothing else to tell.
    pub fn new(kind: &'static str) -> Self {
        Self {
            kind,
            session_id: None,
            shared_session: None,
            request_id_prefix: None,
            starts_initialized: false,
            allows_outbound_requests: true,
            sessionless: false,
            stateless_era: false,
        }
    }

    modelctx_types::__setters! {
        /// Sets the transport's own session id.
        with_session_id(id: impl Into<Arc<str>>) { session_id = Some(id.into()) }

        /// Sets the session's state shared with other processes.
        with_shared_session(shared: Arc<dyn modelctx_store::SharedSession>) { shared_session = Some(shared) }

        /// Sets what the ids of the session's outbound requests start with.
        with_request_id_prefix(prefix: Arc<str>) { request_id_prefix = Some(prefix) }

        /// Sets whether the session starts already initialised.
        with_starts_initialized(on: bool) { starts_initialized = on }

        /// Sets whether the session may send requests to the peer.
        with_allows_outbound_requests(on: bool) { allows_outbound_requests = on }

        /// Sets whether the session is not a lasting one.
        with_sessionless(on: bool) { sessionless = on }

        /// Sets whether the session serves requests of the stateless era. Unstable.
        #[doc(hidden)]
        with_stateless_era(on: bool) { stateless_era = on }
    }
}

impl Default for TransportInfo {
    /// A `"custom"` transport with nothing else to tell.
    fn default() -> Self {
        Self::new("custom")
    }
}

modelctx_types::__debug_shows!(TransportInfo, |v| {
    kind: &v.kind,
    session_id: &v.session_id,
    shared_session: &v.shared_session.is_some(),
    request_id_prefix: &v.request_id_prefix,
    starts_initialized: &v.starts_initialized,
    allows_outbound_requests: &v.allows_outbound_requests,
    sessionless: &v.sessionless,
});
