//! The stateless era (protocol 2026-07-28) on the server's endpoint: which POSTs belong
//! to it, the header rules it adds (`MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//! must match the body, else `400` with `-32020`), and the HTTP status an answer gets
//! from the JSON-RPC error it carries (`404` for an unknown method, `400` for a request
//! the server refused as malformed).
//!
//! Checks, in the order the official suite expects: header missing, then header ≠ body
//! version, then `Mcp-Method` and (for `tools/call`, `prompts/get`, `resources/read`)
//! `Mcp-Name` (trimmed, `=?base64?…?=` decoded strictly), each `-32020`, echoing the
//! request id. The mirrored members and `_meta` come from one quick scan of the params
//! (`members::find_with`); [`MetaCache`] keeps up to 16 plain `_meta` texts (keys without
//! escapes, no `progressToken`), and a request whose `_meta` text starts with a kept one
//! takes it by comparing bytes (an object's text is never a proper prefix of another
//! value's). Anything the scan does not settle as serde would goes through the serde pass
//! and hands no `_meta` down, so edge cases behave alike.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderName, StatusCode};
use modelctx_types::{
    ErrorCode, ErrorData, JsonRpcMessage, JsonRpcRequest, Meta, ProtocolVersion, RawValue, members,
    mirror,
};
use serde::Deserialize;
use std::borrow::Cow;
use std::convert::Infallible;

use crate::headers::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use modelctx_transport::{FoundMeta, MetaPlace};
use std::sync::Arc;

use super::config::StreamableHttpServerConfig;
use super::reply;
use super::request::VersionHeader;

/// The headers this endpoint reads on every POST, as `HeaderName`s: a lookup by `&str`
/// parses (and hashes) the name each time.
pub(super) static PROTOCOL_VERSION_HEADER: HeaderName =
    HeaderName::from_static(MCP_PROTOCOL_VERSION);
/// `Mcp-Session-Id` (see [`PROTOCOL_VERSION_HEADER`]).
pub(super) static SESSION_ID_HEADER: HeaderName = HeaderName::from_static(MCP_SESSION_ID);
/// `Mcp-Method`: the request's method, mirrored.
static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`: the tool or prompt name, or the resource URI, mirrored.
static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Whether a POST belongs to the stateless era: its `MCP-Protocol-Version` names no
/// version of the session era (the stateless era's, or one the server will refuse with
/// the versions it serves) and it names no session, or, without the header, its one
/// request carries the era's envelope in `_meta`.
/// `by_headers` is [`stateless_by_headers`] of the POST's headers.
pub(super) fn is_stateless(by_headers: Option<bool>, messages: &[JsonRpcMessage]) -> bool {
    if let Some(by_headers) = by_headers {
        return by_headers;
    }
    matches!(messages, [JsonRpcMessage::Request(r)] if body_version(r).is_some())
}

/// Whether a POST naming no session, whose one request carries the era's envelope in
/// `_meta`, has an `MCP-Protocol-Version` header naming another revision (one of the
/// handshake era, which [`stateless_by_headers`] would send there). Such a request is
/// the era's, its header contradicting its body: checked as the era's and refused with
/// `400` and `-32020` (the 2026-07-28 transport: "If the values do not match, the server
/// MUST reject the request with 400 Bad Request and a HeaderMismatch JSON-RPC error"),
/// not served as a handshake-era request without its session.
pub(super) fn contradicts_its_header(headers: &HeaderMap, messages: &[JsonRpcMessage]) -> bool {
    // The cheap tests first: a request whose params cannot hold the envelope (every one
    // of the handshake era) is decided without a header lookup or a parse.
    match messages {
        [JsonRpcMessage::Request(r)]
            if may_name_a_version(r) && !headers.contains_key(&SESSION_ID_HEADER) =>
        {
            let header = headers.get(&PROTOCOL_VERSION_HEADER);
            let header = header.and_then(|v| v.to_str().ok());
            body_version(r).is_some_and(|v| Some(v.as_str()) != header)
        }
        _ => false,
    }
}

/// [`is_stateless`] when the headers decide it (`MCP-Protocol-Version` is there):
/// known before the body is read. `version`: that header, read.
pub(super) fn stateless_by_headers(headers: &HeaderMap, version: &VersionHeader) -> Option<bool> {
    match version {
        VersionHeader::Absent => None,
        VersionHeader::Handshake(_) => Some(false),
        // The era's own revision: a request of the era whatever else it carries. The
        // 2026-07-28 transport (basic/transports/streamable-http, "Earlier Streamable
        // HTTP Revisions") says of traffic shaped like the earlier revisions': "An
        // `Mcp-Session-Id` header on a request: ignore it, and do not mint or echo
        // session IDs." So a 2026-07-28 request naming a session (live or not) is
        // served as any other of the era, never refused in the handshake era's terms.
        VersionHeader::Stateless => Some(true),
        // A version neither era knows, on a request of a session: the session era
        // refuses it, the way handshake-era clients expect.
        VersionHeader::Other => Some(!headers.contains_key(&SESSION_ID_HEADER)),
    }
}

/// Whether a POST that sends a single-valued header more than once claims the
/// stateless era (and is refused in its terms, see [`refuse_repeated`]): one of its
/// `MCP-Protocol-Version` lines names no handshake-era revision, or it carries
/// `Mcp-Method` (which only the era's clients send).
fn claims_the_era(headers: &HeaderMap) -> bool {
    headers.contains_key(&MCP_METHOD)
        || headers.get_all(&PROTOCOL_VERSION_HEADER).iter().any(|v| {
            v.to_str()
                .ok()
                .and_then(ProtocolVersion::handshake)
                .is_none()
        })
}

/// The answer to a request that sends a header of one meaning more than once
/// ([`crate::headers::repeated_header`]), refused before its body is read (so no
/// request id: the error's is `null`): a POST of the stateless era (when the endpoint
/// serves it) with `400` and `-32020` (`HeaderMismatch`), as a comma-joined line that
/// does not match the body is; any other with `400` and `-32600`, as the handshake era
/// refuses a bad request.
pub(super) fn refuse_repeated(
    config: &StreamableHttpServerConfig,
    method: &http::Method,
    headers: &HeaderMap,
    repeated: &crate::headers::RepeatedHeader,
) -> Response {
    if config.stateless_era && method == http::Method::POST && claims_the_era(headers) {
        let error = ErrorData::header_mismatch(format!("Header mismatch: {repeated}"));
        reply::report(config, StatusCode::BAD_REQUEST, error.message.to_string());
        return reply::error_response(
            StatusCode::BAD_REQUEST,
            modelctx_types::JsonRpcErrorResponse::new(None, error),
        );
    }
    reply::reject(
        config,
        StatusCode::BAD_REQUEST,
        format!("Bad Request: {repeated}"),
    )
}

/// The parts of a request's params the headers mirror, as their JSON text (borrowed
/// from the body: nothing is built for the members skipped or read here).
#[derive(Deserialize, Default)]
struct Mirrored<'a> {
    #[serde(rename = "_meta", borrow)]
    meta: Option<BodyMeta<'a>>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    uri: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow)]
    task_id: Option<&'a RawValue>,
}

/// The one member of a request's `_meta` the headers mirror (the rest is skipped, not
/// built).
#[derive(Deserialize, Default)]
struct BodyMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    protocol_version: Option<&'a RawValue>,
}

impl BodyMeta<'_> {
    fn protocol_version(&self) -> Option<Cow<'_, str>> {
        modelctx_types::members::string(self.protocol_version?.get())
    }
}

fn mirrored(request: &JsonRpcRequest) -> Mirrored<'_> {
    request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<Mirrored<'_>>(p.get()).ok())
        .unwrap_or_default()
}

/// Whether `request`'s params hold the envelope's version key anywhere: without it,
/// [`body_version`] is `None` (a quick test, no parse).
fn may_name_a_version(request: &JsonRpcRequest) -> bool {
    request
        .params
        .as_deref()
        .is_some_and(|raw| members::holds(raw.get(), [Meta::PROTOCOL_VERSION]))
}

fn body_version(request: &JsonRpcRequest) -> Option<String> {
    if !may_name_a_version(request) {
        return None;
    }
    mirrored(request)
        .meta?
        .protocol_version()
        .map(Cow::into_owned)
}

/// The `_meta` texts this endpoint read on requests of the era, with what the header
/// check wants of them: a client sends the same `_meta` (its envelope) with every
/// request, and a text found here again is neither scanned nor copied again (see
/// [`read_params`]). Only a `_meta` without a progress token is kept (one with a token
/// differs from request to request). Bounded: [`MetaCache::MAX_ENTRIES`] texts of at
/// most [`MetaCache::MAX_TEXT`] bytes, the oldest replaced first.
#[derive(Default)]
pub(super) struct MetaCache {
    entries: std::sync::Mutex<KnownMetas>,
}

#[derive(Default)]
struct KnownMetas {
    metas: Vec<Arc<KnownMeta>>,
    /// The entry replaced next once `metas` is full.
    next: usize,
}

/// One `_meta` text of [`MetaCache`]: a JSON object whose top-level keys have no
/// escapes, none of them `progressToken`.
struct KnownMeta {
    text: Arc<str>,
    /// Its `io.modelcontextprotocol/protocolVersion`, when that is a string.
    version: Option<Box<str>>,
}

impl MetaCache {
    /// How many `_meta` texts are kept (the clients of one endpoint rarely differ).
    const MAX_ENTRIES: usize = 16;
    /// The longest `_meta` text kept.
    const MAX_TEXT: usize = 4096;

    fn lock(&self) -> std::sync::MutexGuard<'_, KnownMetas> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kept text `rest` starts with, if any.
    fn find(&self, rest: &str) -> Option<Arc<KnownMeta>> {
        let entries = self.lock();
        entries
            .metas
            .iter()
            .find(|known| rest.as_bytes().starts_with(known.text.as_bytes()))
            .cloned()
    }

    fn put(&self, known: Arc<KnownMeta>) {
        let mut entries = self.lock();
        if entries.metas.len() < Self::MAX_ENTRIES {
            entries.metas.push(known);
        } else {
            let next = entries.next;
            entries.metas[next] = known;
            entries.next = (next + 1) % Self::MAX_ENTRIES;
        }
    }
}

/// What the header check reads of a request's params: the members the headers mirror
/// (their JSON text) and `_meta`.
struct ReadParams<'a> {
    name: Option<&'a str>,
    uri: Option<&'a str>,
    task_id: Option<&'a str>,
    /// `_meta`'s protocol version, when it is a string (read from the text; for a kept
    /// `_meta`, see `known`).
    version: Option<Cow<'a, str>>,
    /// The kept `_meta` the params carry, when they carry one.
    known: Option<Arc<KnownMeta>>,
    /// `_meta` as found, for the layers above.
    meta: Option<FoundMeta>,
}

impl ReadParams<'_> {
    /// `_meta`'s protocol version, when it is a string.
    fn version(&self) -> Option<&str> {
        match &self.known {
            Some(known) => known.version.as_deref(),
            None => self.version.as_deref(),
        }
    }
}

/// Reads the params by one quick scan ([`members::find_with`]), skipping a `_meta` whose
/// text is in `cache` by comparing it instead of scanning it, and keeping a new plain
/// one there. `None` for anything the scan does not settle the way the serde pass
/// ([`mirrored`]) would (not an object, a key with escapes or twice, a `_meta` that is
/// not an object or whose protocol version or progress token is not settled): the
/// caller then takes that pass.
fn read_params<'a>(params: &'a str, cache: &MetaCache) -> Option<ReadParams<'a>> {
    let mut hit = None;
    let [meta, name, uri, task_id] =
        members::find_with(params, ["_meta", "name", "uri", "taskId"], |k, rest| {
            if k != 0 {
                return None;
            }
            let known = cache.find(rest)?;
            let len = known.text.len();
            hit = Some(known);
            Some(len)
        })?;
    let mut read = ReadParams {
        name,
        uri,
        task_id,
        version: None,
        known: None,
        meta: None,
    };
    let Some(meta) = meta else {
        return Some(read);
    };
    let at = Some(MetaPlace {
        offset: meta.as_ptr() as usize - params.as_ptr() as usize,
        params_len: params.len(),
    });
    let found = |text, plain, shared| FoundMeta {
        text,
        plain,
        shared,
        at,
    };
    if let Some(known) = hit {
        read.meta = Some(found(known.text.clone(), true, true));
        read.known = Some(known);
        return Some(read);
    }
    if !meta.starts_with('{') {
        return None;
    }
    let [version, token] = members::find(meta, [Meta::PROTOCOL_VERSION, Meta::PROGRESS_TOKEN])?;
    read.version = version.and_then(modelctx_types::members::string);
    let text: Arc<str> = Arc::from(meta);
    let plain = token.is_none();
    let shared = plain && text.len() <= MetaCache::MAX_TEXT;
    if shared {
        cache.put(Arc::new(KnownMeta {
            text: text.clone(),
            version: read.version.as_deref().map(Box::from),
        }));
    }
    read.meta = Some(found(text, plain, shared));
    Some(read)
}

/// Checks the headers the era requires against the body. A body that lacks what a
/// header mirrors is left to the server, which answers it as malformed (`-32602`).
/// Returns the request's `_meta` as found on the way, when the quick read found it
/// (see [`read_params`]), for the session.
/// `known` is the POST's `MCP-Protocol-Version` as [`VersionHeader::read`] read it: the
/// era's own revision is not looked up again.
pub(super) fn check_headers(
    headers: &HeaderMap,
    known: &VersionHeader,
    request: &JsonRpcRequest,
    cache: &MetaCache,
) -> Result<Option<FoundMeta>, ErrorData> {
    let version = match known {
        VersionHeader::Stateless => ProtocolVersion::V2026_07_28.as_str(),
        _ => header_value(headers, &PROTOCOL_VERSION_HEADER, "MCP-Protocol-Version")?,
    };
    let read = request
        .params
        .as_deref()
        .and_then(|p| read_params(p.get(), cache));
    let body = match read {
        Some(read) => read,
        None => {
            let body = mirrored(request);
            ReadParams {
                name: body.name.map(RawValue::get),
                uri: body.uri.map(RawValue::get),
                task_id: body.task_id.map(RawValue::get),
                version: body.meta.as_ref().and_then(|m| {
                    m.protocol_version
                        .map(RawValue::get)
                        .and_then(modelctx_types::members::string)
                }),
                known: None,
                meta: None,
            }
        }
    };
    if let Some(in_body) = body.version()
        && in_body != version
    {
        return Err(ErrorData::header_mismatch(format!(
            "Header mismatch: MCP-Protocol-Version header value {version:?} does not match the body's _meta protocol version {in_body:?}"
        )));
    }
    // A revision the era does not speak (and the body does not contradict) is refused
    // for what it is before anything else is checked: an `initialize` of the handshake
    // era sent with a malformed version would otherwise be told that it lacks
    // `Mcp-Method`. `400` with `-32022` and the revisions this endpoint serves, as the
    // 2026-07-28 transport asks ("If the server does not implement the requested
    // protocol version [...] it MUST respond with `400 Bad Request` and an
    // `UnsupportedProtocolVersionError` listing its supported versions").
    if version != ProtocolVersion::V2026_07_28.as_str() {
        return Err(unsupported_version(version));
    }
    let method = header_value(headers, &MCP_METHOD, "Mcp-Method")?;
    if method != request.method.as_ref() {
        return Err(ErrorData::header_mismatch(format!(
            "Header mismatch: Mcp-Method header value {method:?} does not match the body's method {:?}",
            request.method.as_ref()
        )));
    }
    let found = body.meta;
    let named = match request.method.as_ref() {
        "tools/call" | "prompts/get" => body.name,
        "resources/read" => body.uri,
        "tasks/get" | "tasks/update" | "tasks/cancel" => body.task_id,
        _ => return Ok(found),
    };
    let raw = header_value(headers, &MCP_NAME, "Mcp-Name")?;
    let name = mirror::decode_header_value(raw).ok_or_else(|| {
        ErrorData::header_mismatch(format!(
            "Header mismatch: the Mcp-Name header value {raw:?} is not valid (bad Base64 encoding)"
        ))
    })?;
    if let Some(in_body) = named.and_then(modelctx_types::members::string)
        && *in_body != name
    {
        return Err(ErrorData::header_mismatch(format!(
            "Header mismatch: Mcp-Name header value {name:?} does not match the body value {in_body:?}"
        )));
    }
    Ok(found)
}

/// `-32022` for a request whose `MCP-Protocol-Version` header names `requested`, which
/// this endpoint does not serve. The error's data lists what `server/discover` lists (the
/// stateless era's revision), as the era's error must; the message also names the
/// revisions of the handshake era, which the endpoint serves through `initialize`.
fn unsupported_version(requested: &str) -> ErrorData {
    let supported = [ProtocolVersion::V2026_07_28.as_str()];
    let handshake: Vec<&str> = ProtocolVersion::HANDSHAKE
        .iter()
        .map(|v| v.as_str())
        .collect();
    ErrorData::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version {requested:?} (MCP-Protocol-Version): this server \
             serves {} without a handshake, and {} through initialize",
            supported.join(", "),
            handshake.join(", ")
        ),
    )
    .with_data(serde_json::json!({"supported": supported, "requested": requested}))
}

/// A header's value: required, and visible ASCII (or spaces and tabs).
fn header_value<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    shown: &str,
) -> Result<&'h str, ErrorData> {
    let value = headers.get(name).ok_or_else(|| {
        ErrorData::header_mismatch(format!(
            "Header mismatch: the {shown} header is required in protocol version 2026-07-28"
        ))
    })?;
    value.to_str().map_err(|_| {
        ErrorData::header_mismatch(format!(
            "Header mismatch: the {shown} header holds characters a header value may not"
        ))
    })
}

/// The request's `Mcp-Param-{Name}` headers: `(name, value)`, the name lower-cased and
/// without the prefix. Bytes that are not visible ASCII stay (lossily) in the value, so
/// the server's check refuses it (`mirror::decode_header_value`).
pub(super) fn mirrored_params(headers: &HeaderMap) -> Vec<(String, String)> {
    let mut mirrored = Vec::new();
    // By name first: most requests have no such header, and a look at each name costs
    // less than a walk over every value.
    for name in headers.keys() {
        let Some(param) = name.as_str().strip_prefix("mcp-param-") else {
            continue;
        };
        for value in headers.get_all(name) {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            mirrored.push((param.to_owned(), value));
        }
    }
    mirrored
}

/// The HTTP status of an answer of the era, from the error it carries: `404` for an
/// unknown method, `400` for a request refused as malformed (bad JSON-RPC, invalid
/// params, header mismatch, missing client capability, unsupported version); `200`
/// for results and every other error.
pub(super) fn status_of(body: &str) -> StatusCode {
    // An answer with no member named `error` anywhere is a result: no need to parse it.
    if !body.contains("\"error\"") {
        return StatusCode::OK;
    }
    #[derive(Deserialize)]
    struct Probe {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: i64,
    }
    let code = serde_json::from_str::<Probe>(body)
        .ok()
        .and_then(|p| p.error)
        .map(|e| ErrorCode(e.code));
    status_for(code)
}

/// The HTTP status of an answer of the era that carries error `code` (`None` for a
/// result): see [`status_of`].
pub(super) fn status_for(code: Option<ErrorCode>) -> StatusCode {
    match code {
        Some(ErrorCode::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            ErrorCode::PARSE_ERROR
            | ErrorCode::INVALID_REQUEST
            | ErrorCode::INVALID_PARAMS
            | ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// The answer to a request of the era: when the handler has answered by now and sent
/// nothing else, one `application/json` body whose status follows [`status_of`];
/// otherwise (progress or log messages on the way) an SSE stream, with proxies told not
/// to buffer it. `on_abandon` is called only for a stream (it builds what cancels the
/// request when the client closes the stream early): a complete answer costs nothing
/// for it.
pub(super) fn response(
    mut events: futures::stream::BoxStream<'static, Bytes>,
    on_abandon: impl FnOnce() -> Box<dyn FnOnce() + Send>,
) -> Response {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // One event (the answer) is the usual case: no vector for it.
    let mut first = None;
    let mut ready = Vec::new();
    // Polling with a waker that does nothing is sound: a pending stream is polled again
    // by hyper, with its own waker, before anything waits on it.
    let complete = loop {
        match events.poll_next_unpin(&mut cx) {
            std::task::Poll::Ready(Some(event)) if first.is_none() => first = Some(event),
            std::task::Poll::Ready(Some(event)) => ready.push(event),
            std::task::Poll::Ready(None) => break true,
            std::task::Poll::Pending => break false,
        }
    };
    if complete
        && ready.is_empty()
        && let Some(event) = &first
        && let Some(json) = sse_data(event)
    {
        let (status, body) = match json {
            SseData::Line(line) => {
                let status = status_of(line);
                // `line` lies inside `event`: its body is that slice, not a copy.
                let start = line.as_ptr() as usize - event.as_ptr() as usize;
                (status, Body::from(event.slice(start..start + line.len())))
            }
            SseData::Joined(text) => (status_of(&text), Body::from(text)),
        };
        return reply::json_body(status, body);
    }
    let ready: Vec<Bytes> = first.into_iter().chain(ready).collect();
    let body = if complete {
        Body::from(Bytes::from(ready.concat()))
    } else {
        let events = futures::stream::iter(ready).chain(events);
        let events = CancelOnDrop {
            events: events.boxed(),
            on_abandon: Some(on_abandon()),
        };
        Body::from_stream(events.map(Ok::<_, Infallible>))
    };
    reply::event_stream(body)
}

/// An SSE body that, dropped before its end (the client closed the stream), runs
/// `on_abandon`: in this era that cancels the stream's request.
struct CancelOnDrop {
    events: futures::stream::BoxStream<'static, Bytes>,
    on_abandon: Option<Box<dyn FnOnce() + Send>>,
}

impl futures::Stream for CancelOnDrop {
    type Item = Bytes;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Bytes>> {
        let next = self.events.poll_next_unpin(cx);
        if let std::task::Poll::Ready(None) = next {
            // Ended by the server: nothing to cancel.
            self.on_abandon = None;
        }
        next
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(on_abandon) = self.on_abandon.take() {
            on_abandon();
        }
    }
}

/// `notifications/cancelled` for request `id`, as the client would have sent it.
pub(super) fn cancelled(id: &modelctx_types::RequestId) -> JsonRpcMessage {
    let params = serde_json::json!({
        "requestId": id,
        "reason": "the client closed the response stream",
    });
    JsonRpcMessage::Notification(modelctx_types::JsonRpcNotification::new(
        "notifications/cancelled",
        modelctx_types::to_raw(&params).ok(),
    ))
}

/// The data of one SSE event.
enum SseData<'a> {
    /// The event's one `data:` line, as this transport writes every JSON-RPC message.
    Line(&'a str),
    /// Its `data:` lines joined.
    Joined(String),
}

/// The data of one SSE event (its `data:` lines joined), if it has any.
fn sse_data(event: &[u8]) -> Option<SseData<'_>> {
    let text = std::str::from_utf8(event).ok()?;
    let mut lines = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l));
    let first = lines.next()?;
    match lines.next() {
        None => Some(SseData::Line(first)),
        Some(second) => {
            let mut joined = [first, second].join("\n");
            for line in lines {
                joined.push('\n');
                joined.push_str(line);
            }
            Some(SseData::Joined(joined))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::{Value, json};

    /// [`check_headers`] with the version header read as the POST reads it.
    fn check(
        headers: &HeaderMap,
        request: &JsonRpcRequest,
        cache: &MetaCache,
    ) -> Result<Option<FoundMeta>, ErrorData> {
        check_headers(headers, &VersionHeader::read(headers), request, cache)
    }

    fn request(method: &str, params: Value) -> JsonRpcRequest {
        let text = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        match JsonRpcMessage::from_slice(text.to_string().as_bytes()).unwrap() {
            JsonRpcMessage::Request(r) => r,
            _ => unreachable!(),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn envelope() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}})
    }

    #[test]
    fn which_posts_belong_to_the_era() {
        let call = JsonRpcMessage::Request(request("tools/list", json!({"_meta": envelope()})));
        let plain = JsonRpcMessage::Request(request("tools/list", json!({})));
        let era = headers(&[("mcp-protocol-version", "2026-07-28")]);
        let old = headers(&[("mcp-protocol-version", "2025-11-25")]);
        let odd = headers(&[("mcp-protocol-version", "v999.0.0")]);
        let by = |h: &HeaderMap| stateless_by_headers(h, &VersionHeader::read(h));
        assert!(is_stateless(by(&era), std::slice::from_ref(&plain)));
        assert!(is_stateless(by(&odd), std::slice::from_ref(&plain)));
        assert!(!is_stateless(by(&old), std::slice::from_ref(&plain)));
        assert!(is_stateless(
            by(&HeaderMap::new()),
            std::slice::from_ref(&call)
        ));
        assert!(!is_stateless(
            by(&HeaderMap::new()),
            std::slice::from_ref(&plain)
        ));
        // The era's envelope under a handshake-era header, no session: the era's
        // request with a contradicting header; agreeing, or on a session, it is not.
        assert!(contradicts_its_header(&old, std::slice::from_ref(&call)));
        assert!(!contradicts_its_header(&old, std::slice::from_ref(&plain)));
        assert!(!contradicts_its_header(&era, std::slice::from_ref(&call)));
        let mut on_session = old.clone();
        on_session.insert("mcp-session-id", HeaderValue::from_static("s"));
        assert!(!contradicts_its_header(
            &on_session,
            std::slice::from_ref(&call)
        ));
        let mut session = odd.clone();
        session.insert("mcp-session-id", HeaderValue::from_static("s"));
        assert_eq!(by(&session), Some(false));
        // The era's own revision with a session id: the id is ignored, the request is
        // the era's (the 2026-07-28 transport's "ignore it").
        let mut named = era.clone();
        named.insert("mcp-session-id", HeaderValue::from_static("s"));
        assert_eq!(by(&named), Some(true));
        let mut old_named = old.clone();
        old_named.insert("mcp-session-id", HeaderValue::from_static("s"));
        assert_eq!(by(&old_named), Some(false));
    }

    #[test]
    fn a_version_the_era_does_not_speak_is_refused_for_what_it_is() {
        let cache = MetaCache::default();
        // A handshake-era `initialize` with a malformed version and no `Mcp-Method`.
        let init = request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}),
        );
        let error = check(
            &headers(&[("mcp-protocol-version", "garbage")]),
            &init,
            &cache,
        )
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert!(error.message.contains("\"garbage\""), "{}", error.message);
        assert!(!error.message.contains("Mcp-Method"), "{}", error.message);
        let data = error.data.unwrap();
        assert_eq!(data["requested"], "garbage");
        assert_eq!(
            data["supported"],
            json!(["2026-07-28"]),
            "what server/discover lists"
        );
        assert!(error.message.contains("2025-11-25"), "{}", error.message);
        // A body that says another revision than the header: still a mismatch.
        let list = request("tools/list", json!({"_meta": envelope()}));
        let error = check(
            &headers(&[
                ("mcp-protocol-version", "2099-01-01"),
                ("mcp-method", "tools/list"),
            ]),
            &list,
            &cache,
        )
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::HEADER_MISMATCH);
    }

    #[test]
    fn headers_must_mirror_the_body() {
        let cache = MetaCache::default();
        let call = request(
            "tools/call",
            json!({"name": "weather", "arguments": {}, "_meta": envelope()}),
        );
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "  weather "),
        ];
        assert!(check(&headers(&good), &call, &cache).is_ok());
        let encoded = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?d2VhdGhlcg==?="),
        ]);
        assert!(check(&encoded, &call, &cache).is_ok());
        for bad in [
            vec![("mcp-method", "tools/call"), ("mcp-name", "weather")],
            vec![
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "weather"),
            ],
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-name", "weather"),
            ],
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "TOOLS/CALL"),
                ("mcp-name", "weather"),
            ],
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
            ],
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "wrong"),
            ],
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?d2Vhd!!!GhlcgZ==?="),
            ],
        ] {
            let error = check(&headers(&bad), &call, &cache).unwrap_err();
            assert_eq!(error.code, ErrorCode::HEADER_MISMATCH, "{bad:?}");
        }
        // A key spelled with escapes is read as the key it spells; a key twice is no
        // params serde reads.
        let h = headers(&good);
        let escaped = JsonRpcMessage::from_slice(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"n\u0061me":"other","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        let Ok(JsonRpcMessage::Request(escaped)) = escaped else {
            panic!("a request")
        };
        let error = check(&h, &escaped, &cache).unwrap_err();
        assert!(error.message.contains("\"other\""), "{}", error.message);
        let version = JsonRpcMessage::from_slice(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"weather","_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"2025-11-25"}}}"#,
        );
        let Ok(JsonRpcMessage::Request(version)) = version else {
            panic!("a request")
        };
        let error = check(&h, &version, &cache).unwrap_err();
        assert!(error.message.contains("2025-11-25"), "{}", error.message);
        // A key twice is no params serde reads: nothing in the body to mirror.
        let mut twice = request("tools/call", json!({}));
        twice.params = RawValue::from_string(r#"{"name":"a","name":"b"}"#.to_owned()).ok();
        assert!(check(&h, &twice, &cache).is_ok());
        // No protocol version in the body: the server answers that (-32602).
        let bare = request("server/discover", json!({}));
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "server/discover"),
        ]);
        assert!(check(&h, &bare, &cache).is_ok());
    }

    #[test]
    fn a_meta_read_before_is_found_again_and_checked_the_same() {
        let cache = MetaCache::default();
        let good = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "weather"),
        ]);
        let call = |meta: Value| {
            request(
                "tools/call",
                json!({"name": "weather", "arguments": {"a": [1, "}"]}, "_meta": meta}),
            )
        };
        // The first request's `_meta` is read and kept; the second's is the same text:
        // found, not copied (the same `Arc`), and read as plain (no progress token).
        let first = check(&good, &call(envelope()), &cache).unwrap().unwrap();
        let second = check(&good, &call(envelope()), &cache).unwrap().unwrap();
        assert!(Arc::ptr_eq(&first.text, &second.text));
        assert!(second.plain && second.shared);
        assert_eq!(
            serde_json::from_str::<Value>(&second.text).unwrap(),
            envelope()
        );
        // A kept `_meta` still has its version checked against the header.
        let old = headers(&[
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "weather"),
        ]);
        let error = check(&old, &call(envelope()), &cache).unwrap_err();
        assert_eq!(error.code, ErrorCode::HEADER_MISMATCH);
        // ...and the name after it against `Mcp-Name`.
        let mut moved = call(envelope());
        moved.params =
            RawValue::from_string(format!(r#"{{"_meta":{},"name":"other"}}"#, first.text)).ok();
        let error = check(&good, &moved, &cache).unwrap_err();
        assert!(error.message.contains("other"), "{}", error.message);
        // A progress token: found, neither plain nor kept.
        let mut with_token = envelope();
        with_token["progressToken"] = json!(5);
        let found = check(&good, &call(with_token), &cache).unwrap().unwrap();
        assert!(!found.plain && !found.shared);
        // What the quick read does not settle goes the serde way: no `_meta` handed on,
        // the same checks.
        let mut odd = call(json!(null));
        odd.params = RawValue::from_string(
            r#"{"name":"weather","_meta":{"progress\u0054oken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#
                .to_owned(),
        )
        .ok();
        assert!(check(&good, &odd, &cache).unwrap().is_none());
        assert!(check(&good, &call(json!(null)), &cache).unwrap().is_none());
        // Bounded: at most `MAX_ENTRIES` texts, the oldest replaced.
        for n in 0..3 * MetaCache::MAX_ENTRIES {
            let mut each = envelope();
            each["n"] = json!(n);
            let found = check(&good, &call(each), &cache).unwrap().unwrap();
            assert!(found.shared);
            assert!(cache.lock().metas.len() <= MetaCache::MAX_ENTRIES);
        }
        let again = check(&good, &call(envelope()), &cache).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&first.text, &again.text));
    }

    #[tokio::test]
    async fn a_complete_answer_is_its_event_data_as_json() {
        let body = |r: Response| async move {
            let status = r.status();
            let kind = r.headers()[http::header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .to_owned();
            let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
            (status, kind, String::from_utf8(bytes.to_vec()).unwrap())
        };
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        let not_found = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}"#;
        let one = |data: &str| {
            let event = crate::sse::encode_message(None, data, None);
            futures::stream::iter(vec![event]).boxed()
        };
        let never = || -> Box<dyn FnOnce() + Send> { panic!("a complete answer has no stream") };
        let (status, kind, text) = body(response(one(answer), never)).await;
        assert_eq!(
            (status, kind.as_str(), text.as_str()),
            (StatusCode::OK, "application/json", answer)
        );
        let (status, _, text) = body(response(one(not_found), never)).await;
        assert_eq!((status, text.as_str()), (StatusCode::NOT_FOUND, not_found));
        // Data of several lines (not what the session writes, but SSE allows it): joined.
        let lines = Bytes::from_static(b"event: message\ndata: {\"a\":\ndata: 1}\n\n");
        let (_, kind, text) =
            body(response(futures::stream::iter(vec![lines]).boxed(), never)).await;
        assert_eq!(
            (kind.as_str(), text.as_str()),
            ("application/json", "{\"a\":\n1}")
        );
        // Two events: an SSE body with both.
        let two = futures::stream::iter(vec![
            crate::sse::encode_message(None, r#"{"jsonrpc":"2.0","method":"n"}"#, None),
            crate::sse::encode_message(None, answer, None),
        ])
        .boxed();
        let (_, kind, text) = body(response(two, never)).await;
        assert_eq!(kind, "text/event-stream");
        assert!(
            text.contains(answer) && text.matches("data: ").count() == 2,
            "{text}"
        );
    }

    #[test]
    fn statuses_follow_the_error() {
        let error = |code: i64| {
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m"}}).to_string()
        };
        assert_eq!(status_of(&error(-32601)), StatusCode::NOT_FOUND);
        for code in [-32602, -32020, -32021, -32022, -32600] {
            assert_eq!(status_of(&error(code)), StatusCode::BAD_REQUEST);
        }
        assert_eq!(status_of(&error(-32603)), StatusCode::OK);
        assert_eq!(
            status_of(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}).to_string()),
            StatusCode::OK
        );
    }
}
