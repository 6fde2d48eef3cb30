//! The HTTP header names of the streamable HTTP transport (lower case, as `http` wants).

/// The session id header (`Mcp-Session-Id`).
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// The negotiated revision header (`MCP-Protocol-Version`).
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The SSE resumption header (`Last-Event-ID`).
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The headers of a request as its handlers see them
/// (`Context::extensions().get::<http::HeaderMap>()`): the credentials in them
/// (`Authorization`, `Proxy-Authorization`, `Cookie`, `DPoP`) marked sensitive, so a
/// handler that logs the map with `{:?}` does not write them out. They are still there
/// to read: a layer in front has already checked them.
#[cfg(feature = "server")]
pub fn sensitive_headers(mut headers: http::HeaderMap) -> http::HeaderMap {
    use http::header::{AUTHORIZATION, COOKIE, HeaderName, PROXY_AUTHORIZATION};
    // Names, not text: a lookup by `&str` parses the name each time.
    static DPOP: HeaderName = HeaderName::from_static("dpop");
    for name in [&AUTHORIZATION, &PROXY_AUTHORIZATION, &COOKIE, &DPOP] {
        // `entry` reserves room for an insertion (a full map grows): look first.
        if !headers.contains_key(name) {
            continue;
        }
        if let http::header::Entry::Occupied(mut entry) = headers.entry(name) {
            for value in entry.iter_mut() {
                value.set_sensitive(true);
            }
        }
    }
    headers
}
