//! The HTTP header names of the streamable HTTP transport (lower case, as `http` wants).

/// The session id header (`Mcp-Session-Id`).
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// The negotiated revision header (`MCP-Protocol-Version`).
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The SSE resumption header (`Last-Event-ID`).
pub const LAST_EVENT_ID: &str = "last-event-id";
/// Asks a reverse proxy not to buffer a response (`X-Accel-Buffering: no`): every SSE
/// answer of both HTTP transports sends it, so its events pass on as they come.
pub const X_ACCEL_BUFFERING: &str = "x-accel-buffering";

/// The headers of a request as its handlers see them
/// (`Context::extensions().get::<http::HeaderMap>()`): the credentials in them
/// (`Authorization`, `Proxy-Authorization`, `Cookie`, `DPoP`) marked sensitive, so a
/// handler that logs the map with `{:?}` does not write them out. They are still there
/// to read: a layer in front has already checked them.
#[cfg(feature = "server")]
pub fn sensitive_headers(mut headers: http::HeaderMap) -> http::HeaderMap {
    use http::header::{AUTHORIZATION, COOKIE, HeaderName, PROXY_AUTHORIZATION};
    static DPOP: HeaderName = HeaderName::from_static("dpop");
    // One pass over the lines, comparing names (a standard name is an enum, a custom
    // one its bytes): cheaper than a hashed lookup of each of the four.
    for (name, value) in headers.iter_mut() {
        if name == AUTHORIZATION || name == PROXY_AUTHORIZATION || name == COOKIE || name == DPOP {
            value.set_sensitive(true);
        }
    }
    headers
}

/// The headers the protocol gives one meaning each, besides every `Mcp-Param-{Name}`:
/// sent more than once, they are ambiguous (a proxy that reads the last line routes or
/// authorizes another request than the server that reads the first would run).
const SINGLE_VALUED: [&str; 5] = [
    "mcp-method",
    "mcp-name",
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    LAST_EVENT_ID,
];

/// Of [`SINGLE_VALUED`], those whose values never hold a comma: one that does is a
/// list. (`Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` may hold one — a resource URI, an
/// argument such as `"Seattle, WA"` — and are compared with the body instead.)
const NEVER_A_LIST: [&str; 3] = [MCP_PROTOCOL_VERSION, MCP_SESSION_ID, LAST_EVENT_ID];

/// The prefix of the headers that mirror tool arguments (`Mcp-Param-{Name}`).
const PARAM_PREFIX: &str = "mcp-param-";

/// Whether the protocol (or the authorization on it) gives header `name` one meaning:
/// `Mcp-Method`, `Mcp-Name`, each `Mcp-Param-{Name}`, `MCP-Protocol-Version`,
/// `Mcp-Session-Id`, `Last-Event-ID`, `Authorization` and `DPoP`. A server refuses a
/// request that sends one of them twice; the client transport never does.
pub fn is_single_valued(name: &http::HeaderName) -> bool {
    let name = name.as_str();
    SINGLE_VALUED.contains(&name)
        || name.starts_with(PARAM_PREFIX)
        || name == "authorization"
        || name == "dpop"
}

/// Adds `name: value` to `map`, the extra headers a client transport sends: one of a
/// single meaning ([`is_single_valued`]) replaces the value given before, any other is
/// added beside the values it has, so none of one meaning is ever sent on two lines.
pub fn add_header(map: &mut http::HeaderMap, name: http::HeaderName, value: http::HeaderValue) {
    if is_single_valued(&name) {
        map.insert(name, value);
    } else {
        map.append(name, value);
    }
}

/// A header the protocol gives one meaning, sent more than once: on several lines, or
/// as a comma-separated list on one (see [`repeated_header`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepeatedHeader {
    /// The header's name, lower-cased (as `http` keeps it).
    pub name: String,
    /// Whether it came as one line holding a list (else on several lines).
    pub as_list: bool,
}

impl RepeatedHeader {
    /// A repeated header named `name` (lower-cased here).
    pub fn new(name: &str, as_list: bool) -> Self {
        Self {
            name: name.to_ascii_lowercase(),
            as_list,
        }
    }

    /// The header's name as the specification spells it (`Mcp-Session-Id`,
    /// `Mcp-Param-Region`, ...).
    pub fn shown(&self) -> String {
        match self.name.as_str() {
            MCP_PROTOCOL_VERSION => "MCP-Protocol-Version".to_owned(),
            LAST_EVENT_ID => "Last-Event-ID".to_owned(),
            "dpop" => "DPoP".to_owned(),
            name => name
                .split('-')
                .map(|part| {
                    let mut chars = part.chars();
                    chars.next().map_or_else(String::new, |first| {
                        first.to_ascii_uppercase().to_string() + chars.as_str()
                    })
                })
                .collect::<Vec<_>>()
                .join("-"),
        }
    }
}

impl std::fmt::Display for RepeatedHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.as_list {
            "as a list"
        } else {
            "on more than one line"
        };
        write!(
            f,
            "the {} header is sent {how}; it must be sent once, with one value",
            self.shown()
        )
    }
}

/// The first header of `headers` that the protocol gives one meaning and that is sent
/// more than once: `Mcp-Method`, `Mcp-Name`, each `Mcp-Param-{Name}`,
/// `MCP-Protocol-Version`, `Mcp-Session-Id` or `Last-Event-ID` on more than one line, or
/// one of the last three as a comma-separated list. `None` when each is sent at most
/// once. The server refuses such a request rather than pick one of the values (see
/// [`RepeatedHeader`]).
pub fn repeated_header(headers: &http::HeaderMap) -> Option<RepeatedHeader> {
    // A name on more than one line makes the map hold more values than names: only then
    // is each name looked up (most requests repeat nothing).
    if headers.len() != headers.keys_len() {
        for key in headers.keys() {
            let name = key.as_str();
            if !SINGLE_VALUED.contains(&name) && !name.starts_with(PARAM_PREFIX) {
                continue;
            }
            // By the map's own key: a `&str` would be parsed into a header name again.
            if headers.get_all(key).iter().nth(1).is_some() {
                return Some(RepeatedHeader::new(name, false));
            }
        }
    }
    // One pass over the values, no lookups: a list where the protocol allows one value.
    headers
        .iter()
        .find(|(name, value)| {
            NEVER_A_LIST.contains(&name.as_str()) && value.as_bytes().contains(&b',')
        })
        .map(|(name, _)| RepeatedHeader::new(name.as_str(), true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};

    fn map(lines: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in lines {
            h.append(*name, HeaderValue::from_static(value));
        }
        h
    }

    #[test]
    fn a_single_valued_header_sent_twice_or_as_a_list_is_found() {
        let once = map(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "file:///a,b"),
            ("mcp-param-region", "Seattle, WA"),
            ("mcp-protocol-version", "2026-07-28"),
            ("accept", "application/json"),
            ("accept", "text/event-stream"),
        ]);
        assert_eq!(repeated_header(&once), None);
        for (lines, name, as_list) in [
            (
                &[("mcp-method", "tools/list"), ("mcp-method", "tools/call")][..],
                "Mcp-Method",
                false,
            ),
            (&[("mcp-name", "a"), ("mcp-name", "b")], "Mcp-Name", false),
            (
                &[("mcp-param-region", "a"), ("mcp-param-region", "b")],
                "Mcp-Param-Region",
                false,
            ),
            (
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-protocol-version", "2025-11-25"),
                ],
                "MCP-Protocol-Version",
                false,
            ),
            (
                &[("mcp-protocol-version", "2026-07-28, 2025-11-25")],
                "MCP-Protocol-Version",
                true,
            ),
            (
                &[("mcp-session-id", "a"), ("mcp-session-id", "b")],
                "Mcp-Session-Id",
                false,
            ),
            (&[("mcp-session-id", "a,b")], "Mcp-Session-Id", true),
            (
                &[("last-event-id", "1"), ("last-event-id", "2")],
                "Last-Event-ID",
                false,
            ),
            (&[("last-event-id", "1, 2")], "Last-Event-ID", true),
        ] {
            let found = repeated_header(&map(lines)).expect("found");
            assert_eq!((found.shown().as_str(), found.as_list), (name, as_list));
            assert!(found.to_string().contains(name), "{found}");
        }
    }
}
