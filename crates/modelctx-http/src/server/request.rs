//! Reading a request: its `Accept` and `MCP-Protocol-Version` headers, its body, and
//! the session it names (this service's own, or, with a session registry, one shared
//! with other services).
//!
//! Trap: peers may send any *supported* `MCP-Protocol-Version` on a session that negotiated
//! another (the official suite does); the server accepts it and keeps the negotiated
//! revision. Only malformed or unsupported values get 400.

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use modelctx_transport::Extensions;
use modelctx_types::Principal;
use modelctx_types::{
    ErrorData, InvalidMessage, JsonRpcErrorResponse, JsonRpcMessage, ProtocolVersion, RawValue,
};

use super::reply::{bad_message, error_response};
use super::session::{Messages, SessionState};
use super::table::Inner;
use super::{era, hosting};

/// Whether `Accept` allows every one of `mimes` (`type/subtype`), wildcards included.
/// One pass over the header's media ranges, as bytes (a media range is ASCII), that stops
/// once all are allowed: it runs on every request.
pub(super) fn accepts<const N: usize>(headers: &HeaderMap, mimes: [&str; N]) -> bool {
    let mut allowed = [false; N];
    for value in headers.get_all(header::ACCEPT) {
        if lists_exactly(value.as_bytes(), &mimes) {
            return true;
        }
        let mut rest = value.as_bytes();
        while !rest.is_empty() {
            // One media range: up to its parameters (`;`) or the next range (`,`).
            let end = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
            let item = &rest[..end];
            rest = rest.get(end + 1..).unwrap_or_default();
            let range = match item.iter().position(|&b| b == b';') {
                Some(at) => &item[..at],
                None => item,
            }
            .trim_ascii();
            if range == b"*/*" {
                return true;
            }
            let kind = range.strip_suffix(b"/*");
            for (mime, allowed) in mimes.iter().zip(&mut allowed) {
                *allowed = *allowed
                    || range.eq_ignore_ascii_case(mime.as_bytes())
                    || kind.is_some_and(|k| {
                        mime.len() > k.len()
                            && mime.as_bytes()[k.len()] == b'/'
                            && k.eq_ignore_ascii_case(&mime.as_bytes()[..k.len()])
                    });
            }
            if !allowed.contains(&false) {
                return true;
            }
        }
    }
    false
}

/// Whether `value` is `mimes` joined with `", "`: what clients send (the types a
/// transport asks for, in its order), settled with a comparison instead of a parse.
fn lists_exactly(value: &[u8], mimes: &[&str]) -> bool {
    let mut rest = value;
    for (i, mime) in mimes.iter().enumerate() {
        if i > 0 {
            let Some(after) = rest.strip_prefix(b", ") else {
                return false;
            };
            rest = after;
        }
        let Some(after) = rest.strip_prefix(mime.as_bytes()) else {
            return false;
        };
        rest = after;
    }
    rest.is_empty() && !mimes.is_empty()
}

pub(super) fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Resolves the session a non-initialize request names.
pub(super) fn find_session(
    inner: &Inner,
    headers: &HeaderMap,
) -> Result<Arc<SessionState>, Response> {
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

/// Resolves the session a request names: this service's own map, or, with a session
/// registry, the registry (every request touches the session's record there). A
/// session bound to another caller than `caller` is answered as unknown (see
/// `session/owner.rs`).
pub(super) async fn resolve_session(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    caller: Option<&Principal>,
) -> Result<Arc<SessionState>, Response> {
    let session = match &inner.sharing {
        None => find_session(inner, headers)?,
        Some(sharing) => sharing.find_session(inner, headers).await?,
    };
    if !session.admits(caller) {
        return Err(inner.reject(StatusCode::NOT_FOUND, "Not Found: no such session"));
    }
    Ok(session)
}

/// The session a GET or DELETE names, checked alike for both: in session-less mode
/// the request is refused `405` with `stateless`; otherwise the session is resolved
/// for the request's caller and its `MCP-Protocol-Version` checked.
pub(super) async fn named_session(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &http::Extensions,
    stateless: &'static str,
) -> Result<Arc<SessionState>, Response> {
    if !inner.config.stateful {
        return Err(inner.reject(StatusCode::METHOD_NOT_ALLOWED, stateless));
    }
    let session = resolve_session(inner, headers, caller_of(extensions)).await?;
    protocol_version(
        inner,
        headers,
        &VersionHeader::read(headers),
        Some(&session),
    )?;
    Ok(session)
}

/// The authenticated caller a layer in front attached to a request (`extensions`: the
/// HTTP request's).
fn caller_of(extensions: &http::Extensions) -> Option<&Principal> {
    extensions.get::<Extensions>()?.get::<Principal>()
}

/// Checks `MCP-Protocol-Version` and returns the revision the request speaks: the
/// session's negotiated one when there is a session, else the header's, else 2025-03-26.
///
/// Only a malformed or unsupported header is refused. A supported revision other than
/// the negotiated one is accepted, as the spec asks (and as the official conformance
/// suite, which sends `2025-03-26` on a 2025-11-25 session, expects); the session keeps
/// speaking the revision it negotiated.
pub(super) fn protocol_version(
    inner: &Inner,
    headers: &HeaderMap,
    version: &VersionHeader,
    session: Option<&SessionState>,
) -> Result<ProtocolVersion, Response> {
    let negotiated = session.and_then(SessionState::negotiated_version);
    match version {
        VersionHeader::Handshake(v) => Ok(negotiated.cloned().unwrap_or_else(|| v.clone())),
        VersionHeader::Absent => Ok(negotiated.cloned().unwrap_or(ProtocolVersion::V2025_03_26)),
        VersionHeader::Stateless | VersionHeader::Other => {
            let value = headers
                .get(&era::PROTOCOL_VERSION_HEADER)
                .map(|v| format!("{v:?}"))
                .unwrap_or_default();
            Err(inner.reject(
                StatusCode::BAD_REQUEST,
                // Other SDKs' clients look for this literal while negotiating.
                format!("Bad Request: Unsupported protocol version {value} (MCP-Protocol-Version)"),
            ))
        }
    }
}

/// A request's `MCP-Protocol-Version` header, read once for every check that asks.
pub(super) enum VersionHeader {
    Absent,
    /// A revision of the handshake era.
    Handshake(ProtocolVersion),
    /// The stateless era's revision.
    Stateless,
    /// Any other value (one no era knows, or not text).
    Other,
}

impl VersionHeader {
    pub(super) fn read(headers: &HeaderMap) -> Self {
        let Some(value) = headers.get(&era::PROTOCOL_VERSION_HEADER) else {
            return Self::Absent;
        };
        let value = value.to_str().ok();
        if let Some(v) = value.and_then(ProtocolVersion::handshake) {
            Self::Handshake(v)
        } else if value == Some(ProtocolVersion::V2026_07_28.as_str()) {
            Self::Stateless
        } else {
            Self::Other
        }
    }
}

/// Reads the whole body, at most `max_body_bytes`, within `body_timeout`.
pub(super) async fn read_body<B>(inner: &Inner, body: B) -> Result<Bytes, Response>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    hosting::read_body(body, inner.config.max_body_bytes, inner.config.body_timeout)
        .await
        .map_err(|r| inner.reject(r.status, r.reason))
}

/// A body that is no message (or a batch holding one): the 400 that answers it, and
/// the responses in it that could not be read, for the session whose calls they name.
pub(super) struct BadBody {
    pub(super) answer: Response,
    pub(super) invalid_responses: Vec<InvalidMessage>,
}

impl From<Response> for BadBody {
    fn from(answer: Response) -> Self {
        Self {
            answer,
            invalid_responses: Vec::new(),
        }
    }
}

/// The body's messages and whether it was a batch; `Err` answers 400.
pub(super) fn parse_body(inner: &Inner, bytes: &[u8]) -> Result<(Messages, bool), BadBody> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let items = serde_json::from_slice::<Vec<Box<RawValue>>>(bytes).map_err(|e| {
            bad_message(
                &inner.config,
                ErrorData::parse_error(format!("Parse error: {e}")),
            )
        })?;
        if items.is_empty() {
            return Err(
                bad_message(&inner.config, ErrorData::invalid_request("empty batch")).into(),
            );
        }
        let mut messages = Messages::with_capacity(items.len());
        let mut first_fault = None;
        let mut invalid_responses = Vec::new();
        for item in &items {
            match JsonRpcMessage::from_slice(item.get().as_bytes()) {
                Ok(m) => messages.push(m),
                Err(invalid) => {
                    if first_fault.is_none() {
                        first_fault = Some(invalid.error.clone());
                    }
                    if invalid.is_response() {
                        invalid_responses.push(invalid);
                    }
                }
            }
        }
        return match first_fault {
            None => Ok((messages, true)),
            Some(error) => Err(BadBody {
                answer: bad_message(&inner.config, error),
                invalid_responses,
            }),
        };
    }
    JsonRpcMessage::from_slice(bytes)
        .map(|m| (smallvec::smallvec![m], false))
        .map_err(|invalid| {
            let status = StatusCode::BAD_REQUEST;
            inner.report(status, invalid.error.message.to_string());
            if invalid.is_response() {
                // The spec's error body for a refused response has no id (the id is
                // the server's own, not one the client asked with).
                let answer = error_response(
                    status,
                    JsonRpcErrorResponse::new(None, invalid.error.clone()),
                );
                BadBody {
                    answer,
                    invalid_responses: vec![invalid],
                }
            } else {
                error_response(status, invalid.into_response()).into()
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn accept_wildcards() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&h, ["application/json", "text/event-stream"]));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/html"));
        assert!(!accepts(&h, ["application/json"]));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*;q=0.8"));
        assert!(accepts(&h, ["text/event-stream"]));
        assert!(accepts(&h, ["application/json", "text/event-stream"]));
        h.insert(header::ACCEPT, HeaderValue::from_static("Text/*"));
        assert!(accepts(&h, ["text/event-stream"]) && !accepts(&h, ["application/json"]));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/"));
        assert!(!accepts(&h, ["text/event-stream"]));
        // Bytes outside ASCII in another media range (obs-text) spoil only that range.
        let value = HeaderValue::from_bytes(b"text/caf\xe9, application/json").unwrap();
        h.insert(header::ACCEPT, value);
        assert!(accepts(&h, ["application/json"]) && !accepts(&h, ["text/event-stream"]));
        // The common form, settled without a parse, and the same types in another order.
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json"),
        );
        assert!(accepts(&h, ["application/json", "text/event-stream"]));
        assert!(lists_exactly(
            b"application/json, text/event-stream",
            &["application/json", "text/event-stream"]
        ));
        assert!(!lists_exactly(
            b"application/json, text/event-streams",
            &["application/json", "text/event-stream"]
        ));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        // Each type may come in a header line of its own.
        h.append(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        assert!(accepts(&h, ["application/json", "text/event-stream"]));
    }
}
