//! The stateless era (2026-07-28): every request carries its own envelope in `_meta`
//! (protocol version, client capabilities, optionally client info and log level) and is
//! served on it alone; there is no handshake and no per-session client state.
//!
//! The same handlers serve both eras. This module checks the envelope, answers what the
//! era changes (`server/discover`; methods the era removed are unknown methods), and
//! finishes every result the way the era wants it (`resultType`, the server's identity
//! in `_meta`, caching hints) and every error (resource-not-found is `-32602`).

use modelctx_types::{
    ClientCapabilities, DiscoverResult, ErrorCode, ErrorData, Implementation, LoggingLevel, Meta,
    ProtocolVersion, RawValue, ServerCapabilities, mirror, to_raw,
};
use serde_json::{Map, Value, json};

/// The protocol versions served without a handshake.
pub(crate) const VERSIONS: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

/// Methods of the handshake era that 2026-07-28 removed: unknown methods here.
const REMOVED: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
];

/// Methods whose complete results carry caching hints (`ttlMs`, `cacheScope`).
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// What one request says about its client.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Option<Implementation>,
    /// The lowest level the client wants log messages at; none are sent without it.
    pub(crate) log_level: Option<LoggingLevel>,
}

/// Reads and checks a request's envelope.
///
/// Missing or malformed members are `-32602`; a version this server does not serve is
/// `-32022` with the versions it serves in `data.supported` and the one asked for in
/// `data.requested`.
pub(crate) fn envelope(meta: Option<&Meta>) -> Result<Envelope, ErrorData> {
    let missing = |key: &str| {
        ErrorData::invalid_params(format!(
            "Invalid params: the request's _meta must carry \"{key}\" (protocol version 2026-07-28 has no initialize handshake: every request says who is asking)"
        ))
    };
    let meta = meta.ok_or_else(|| missing(Meta::PROTOCOL_VERSION))?;
    let requested = match meta.get(Meta::PROTOCOL_VERSION) {
        None => return Err(missing(Meta::PROTOCOL_VERSION)),
        Some(Value::String(v)) => v.as_str(),
        Some(other) => {
            return Err(ErrorData::invalid_params(format!(
                "Invalid params: \"{}\" must be a string, got {other}",
                Meta::PROTOCOL_VERSION
            )));
        }
    };
    let Some(version) = VERSIONS.iter().find(|v| v.as_str() == requested).cloned() else {
        return Err(unsupported_version(requested));
    };
    let capabilities = match meta.get(Meta::CLIENT_CAPABILITIES) {
        None => return Err(missing(Meta::CLIENT_CAPABILITIES)),
        Some(value) => {
            <ClientCapabilities as serde::Deserialize>::deserialize(value).map_err(|e| {
                ErrorData::invalid_params(format!(
                    "Invalid params: \"{}\" is not a capabilities object: {e}",
                    Meta::CLIENT_CAPABILITIES
                ))
            })?
        }
    };
    let info = match meta.get(Meta::CLIENT_INFO) {
        None => None,
        Some(value) => Some(
            <Implementation as serde::Deserialize>::deserialize(value).map_err(|e| {
                ErrorData::invalid_params(format!(
                    "Invalid params: \"{}\" is not a name and version: {e}",
                    Meta::CLIENT_INFO
                ))
            })?,
        ),
    };
    let log_level = match meta.get(Meta::LOG_LEVEL) {
        None => None,
        Some(value) => {
            let level = <LoggingLevel as serde::Deserialize>::deserialize(value)
                .ok()
                .filter(|l| l.severity().is_some())
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!(
                        "Invalid params: \"{}\" must be one of debug, info, notice, warning, error, critical, alert, emergency; got {value}",
                        Meta::LOG_LEVEL
                    ))
                })?;
            Some(level)
        }
    };
    Ok(Envelope {
        version,
        capabilities,
        info,
        log_level,
    })
}

/// `-32022`: the versions this server serves and the one asked for.
pub(crate) fn unsupported_version(requested: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version {requested:?}: this server serves {} without a handshake",
            VERSIONS.map(|v| v.as_str().to_owned()).join(", ")
        ),
    )
    .with_data(json!({
        "supported": VERSIONS.map(|v| v.as_str().to_owned()),
        "requested": requested,
    }))
}

/// Whether the era removed `method` (it is then an unknown method).
pub(crate) fn removed(method: &str) -> bool {
    REMOVED.contains(&method)
}

/// The answer to `server/discover`.
pub(crate) fn discover(
    capabilities: &ServerCapabilities,
    instructions: Option<&str>,
    hints: &CacheHints,
) -> Result<Box<RawValue>, ErrorData> {
    let mut result = DiscoverResult::new(
        VERSIONS.map(|v| v.as_str().to_owned()).to_vec(),
        capabilities.clone(),
        hints.ttl_ms,
        hints.scope.clone(),
    );
    if let Some(text) = instructions {
        result = result.with_instructions(text);
    }
    to_raw(&result).map_err(|e| ErrorData::internal_error(format!("cannot encode: {e}")))
}

/// The caching hints a server puts on cacheable results its handlers leave without:
/// by default `ttlMs` 0 (stale at once) and `cacheScope` `"private"` (never shared
/// across authorization contexts) — nothing served stale, nothing shared, unless the
/// server says so.
#[derive(Debug, Clone)]
pub(crate) struct CacheHints {
    pub(crate) ttl_ms: u64,
    pub(crate) scope: modelctx_types::CacheScope,
}

impl CacheHints {
    pub(crate) fn new(ttl: std::time::Duration, scope: modelctx_types::CacheScope) -> Self {
        Self {
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            scope,
        }
    }

    /// How long one page of a list stays fresh: the shortest `ttl` among the page's
    /// entries, an entry without hints of its own having the server's (`self`); an
    /// empty page has the server's.
    pub(crate) fn page_ttl<'a>(&self, page: impl IntoIterator<Item = Option<&'a Self>>) -> u64 {
        page.into_iter()
            .map(|hints| hints.unwrap_or(self).ttl_ms)
            .min()
            .unwrap_or(self.ttl_ms)
    }

    /// Who may share a list's pages: the scope every entry of the whole list has
    /// (`public` only when all are), so every page of one list has the same scope, as
    /// the spec requires; `private` when they differ. An entry without hints of its own
    /// has the server's (`self`); an empty list has the server's.
    pub(crate) fn list_scope<'a>(
        &self,
        all: impl IntoIterator<Item = Option<&'a Self>>,
    ) -> modelctx_types::CacheScope {
        let mut all = all.into_iter().map(|hints| &hints.unwrap_or(self).scope);
        match all.next() {
            None => self.scope.clone(),
            Some(first) if all.all(|s| s == first) => first.clone(),
            Some(_) => modelctx_types::CacheScope::Private,
        }
    }
}

impl Default for CacheHints {
    fn default() -> Self {
        Self {
            ttl_ms: 0,
            scope: modelctx_types::CacheScope::Private,
        }
    }
}

/// The members of a result [`finish_result`] may add, as the handler left them.
#[derive(serde::Deserialize)]
struct Present<'a> {
    #[serde(rename = "resultType", default, borrow)]
    result_type: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "ttlMs", default)]
    ttl_ms: Option<serde::de::IgnoredAny>,
    #[serde(rename = "cacheScope", default)]
    cache_scope: Option<serde::de::IgnoredAny>,
    #[serde(rename = "_meta", default)]
    meta: Option<serde::de::IgnoredAny>,
}

/// [`finish_result`] without building the result as a map: when the handler's object
/// has no `_meta`, every member to add is new, so it is appended to the object's text
/// (one scan of the result, no tree). `None` leaves the result to the general path
/// (a `_meta` to add to, or not an object).
fn finish_by_appending(
    method: &str,
    raw: &RawValue,
    server_info: &RawValue,
    hints: &CacheHints,
) -> Option<Box<RawValue>> {
    let text = raw.get().trim();
    let present: Present<'_> = serde_json::from_str(text).ok()?;
    if present.meta.is_some() || !text.ends_with('}') {
        return None;
    }
    // A member the probe saw as absent but whose name is in the text (a `null` value,
    // or the name inside a nested value) is for the general path to judge.
    let unsure = |seen: bool, name: &str| !seen && text.contains(name);
    if unsure(present.result_type.is_some(), "\"resultType\"")
        || unsure(present.ttl_ms.is_some(), "\"ttlMs\"")
        || unsure(present.cache_scope.is_some(), "\"cacheScope\"")
        || unsure(false, "\"_meta\"")
    {
        return None;
    }
    let head = text[..text.len() - 1].trim_end();
    let info = server_info.get();
    let mut out = String::with_capacity(text.len() + info.len() + 96);
    out.push_str(head);
    let member = |out: &mut String, name: &str, value: &str| {
        if !out.ends_with('{') {
            out.push(',');
        }
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
        out.push_str(value);
    };
    let complete = match &present.result_type {
        None => {
            member(&mut out, "resultType", "\"complete\"");
            true
        }
        Some(kind) => kind == "complete",
    };
    if complete && CACHEABLE.contains(&method) {
        if present.ttl_ms.is_none() {
            member(&mut out, "ttlMs", &hints.ttl_ms.to_string());
        }
        if present.cache_scope.is_none() {
            let scope = serde_json::to_string(hints.scope.as_str()).ok()?;
            member(&mut out, "cacheScope", &scope);
        }
    }
    let meta = format!(
        "{{{}:{info}}}",
        serde_json::to_string(Meta::SERVER_INFO).ok()?
    );
    member(&mut out, "_meta", &meta);
    out.push('}');
    RawValue::from_string(out).ok()
}

/// Finishes a result for the era: `resultType` (`"complete"` unless the handler said
/// otherwise), the server's identity in `_meta`, and for a complete result of a
/// cacheable method the caching hints `hints` unless the handler set its own.
/// `server_info` is the server's `Implementation`, encoded once when the server was
/// built.
pub(crate) fn finish_result(
    method: &str,
    raw: &RawValue,
    server_info: &RawValue,
    hints: &CacheHints,
) -> Result<Box<RawValue>, ErrorData> {
    if let Some(done) = finish_by_appending(method, raw, server_info, hints) {
        return Ok(done);
    }
    let mut result: Map<String, Value> = serde_json::from_str(raw.get()).map_err(|e| {
        ErrorData::internal_error(format!("the handler's result is not a JSON object: {e}"))
    })?;
    let complete = match result.get("resultType") {
        None => {
            result.insert("resultType".to_owned(), Value::from("complete"));
            true
        }
        Some(kind) => kind == "complete",
    };
    if complete && CACHEABLE.contains(&method) {
        result
            .entry("ttlMs")
            .or_insert_with(|| Value::from(hints.ttl_ms));
        result
            .entry("cacheScope")
            .or_insert_with(|| Value::from(hints.scope.as_str()));
    }
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta
        && !meta.contains_key(Meta::SERVER_INFO)
    {
        let info = serde_json::from_str::<Value>(server_info.get())
            .map_err(|e| ErrorData::internal_error(format!("cannot encode: {e}")))?;
        meta.insert(Meta::SERVER_INFO.to_owned(), info);
    }
    to_raw(&result).map_err(|e| ErrorData::internal_error(format!("cannot encode: {e}")))
}

/// Checks a `tools/call`'s `Mcp-Param-{Name}` headers (`mirrored`: lower-cased names
/// without the prefix) against the arguments its tool marks with `x-mcp-header`: an
/// argument that has a value needs its header, equal to it (after `=?base64?…?=`
/// decoding; integers in decimal, booleans as `true`/`false`), else `-32020`.
pub(crate) fn check_param_headers(
    input_schema: &Map<String, Value>,
    arguments: Option<&Map<String, Value>>,
    mirrored: &[(String, String)],
) -> Result<(), ErrorData> {
    let schema = Value::Object(input_schema.clone());
    let arguments = arguments.map(|a| Value::Object(a.clone()));
    for marked in mirror::mirrored_params(&schema) {
        // No value (or one a header cannot mirror): no header is expected.
        let Some(expected) = mirror::argument_text(arguments.as_ref(), &marked.path) else {
            continue;
        };
        let header = &marked.header;
        let name = header.to_ascii_lowercase();
        let Some((_, raw)) = mirrored.iter().find(|(n, _)| *n == name) else {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header is required (argument {:?} has a value)",
                marked.path.join(".")
            )));
        };
        let got = mirror::decode_header_value(raw).ok_or_else(|| {
            ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header value is not valid (bad characters or Base64)"
            ))
        })?;
        if got != expected {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: Mcp-Param-{header} header value {got:?} does not match the argument's value {expected:?}"
            )));
        }
    }
    Ok(())
}

/// Finishes an error for the era: resource-not-found is `-32602` with `data.uri`
/// (2026-07-28 must not send `-32002`).
pub(crate) fn finish_error(mut error: ErrorData) -> ErrorData {
    if error.code == ErrorCode::RESOURCE_NOT_FOUND {
        error.code = ErrorCode::RESOURCE_NOT_FOUND_V2026_07_28;
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(value: Value) -> Meta {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_envelope_needs_a_served_version_and_capabilities() {
        let ok = envelope(Some(&meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/logLevel": "info",
        }))))
        .unwrap();
        assert_eq!(ok.version, ProtocolVersion::V2026_07_28);
        assert!(ok.capabilities.elicitation.is_some());
        assert_eq!(ok.info.unwrap().name, "c");
        assert_eq!(ok.log_level, Some(LoggingLevel::Info));

        let e = envelope(None).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let e = envelope(Some(&meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"
        }))))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("clientCapabilities"));

        let e = envelope(Some(&meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {},
        }))))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))
        );

        let e = envelope(Some(&meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "loud",
        }))))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn appending_finishes_results_as_the_general_path_does() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let hints = CacheHints::new(
            std::time::Duration::from_secs(2),
            modelctx_types::CacheScope::Public,
        );
        for (method, result) in [
            ("tools/list", json!({"tools": []})),
            ("tools/list", json!({})),
            ("tools/list", json!({"tools": [], "ttlMs": 5})),
            (
                "resources/read",
                json!({"contents": [], "cacheScope": "private"}),
            ),
            (
                "tools/call",
                json!({"content": [{"type": "text", "text": "x"}]}),
            ),
            (
                "tools/call",
                json!({"resultType": "input_required", "requestState": "s"}),
            ),
            ("tools/call", json!({"resultType": null, "content": []})),
            (
                "tools/call",
                json!({"content": [], "structuredContent": {"resultType": 1}}),
            ),
            (
                "tools/call",
                json!({"content": [], "structuredContent": {"_meta": 1}}),
            ),
        ] {
            let raw = to_raw(&result).unwrap();
            let general = {
                let mut map: Map<String, Value> = serde_json::from_value(result.clone()).unwrap();
                let complete = match map.get("resultType") {
                    None => {
                        map.insert("resultType".into(), json!("complete"));
                        true
                    }
                    Some(kind) => kind == "complete",
                };
                if complete && CACHEABLE.contains(&method) {
                    map.entry("ttlMs").or_insert(json!(2000));
                    map.entry("cacheScope").or_insert(json!("public"));
                }
                map.insert(
                    "_meta".into(),
                    json!({Meta::SERVER_INFO: {"name": "s", "version": "1"}}),
                );
                Value::Object(map)
            };
            let done: Value =
                serde_json::from_str(finish_result(method, &raw, &info, &hints).unwrap().get())
                    .unwrap();
            assert_eq!(done, general, "{method} {result}");
            // No member twice (a parsed value would hide it): each name occurs as often
            // in the text as in the general path's.
            let text = finish_result(method, &raw, &info, &hints).unwrap();
            let expected = serde_json::to_string(&general).unwrap();
            for name in ["\"resultType\"", "\"ttlMs\"", "\"cacheScope\"", "\"_meta\""] {
                assert_eq!(
                    text.get().matches(name).count(),
                    expected.matches(name).count(),
                    "{name} in {}",
                    text.get()
                );
            }
        }
    }

    #[test]
    fn results_get_their_type_identity_and_caching_hints() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let raw = to_raw(&json!({"tools": []})).unwrap();
        let done: Value = serde_json::from_str(
            finish_result("tools/list", &raw, &info, &CacheHints::default())
                .unwrap()
                .get(),
        )
        .unwrap();
        assert_eq!(
            done,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}})
        );
        let raw = to_raw(&json!({"content": [], "_meta": {"k": 1}})).unwrap();
        let done: Value = serde_json::from_str(
            finish_result("tools/call", &raw, &info, &CacheHints::default())
                .unwrap()
                .get(),
        )
        .unwrap();
        assert_eq!(done["resultType"], "complete");
        assert_eq!(done["_meta"]["k"], 1);
        assert!(done.get("ttlMs").is_none());
        let raw = to_raw(&json!({"resultType": "input_required", "requestState": "x"})).unwrap();
        let done: Value = serde_json::from_str(
            finish_result("resources/read", &raw, &info, &CacheHints::default())
                .unwrap()
                .get(),
        )
        .unwrap();
        assert!(
            done.get("ttlMs").is_none(),
            "interim results are not cacheable"
        );
    }

    #[test]
    fn marked_arguments_need_matching_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "query": {"type": "string"},
        }});
        let schema = schema.as_object().unwrap();
        let args = json!({"region": "us-west1", "limit": 42, "query": "q"});
        let args = args.as_object();
        let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        assert!(
            check_param_headers(schema, args, &h(&[("region", "us-west1"), ("limit", "42")]))
                .is_ok()
        );
        assert!(
            check_param_headers(
                schema,
                args,
                &h(&[("region", "=?base64?dXMtd2VzdDE=?="), ("limit", "42")])
            )
            .is_ok()
        );
        for bad in [
            h(&[("limit", "42")]),
            h(&[("region", "us-east1"), ("limit", "42")]),
            h(&[("region", "=?base64?dXMtd2VzdDE?="), ("limit", "42")]),
            h(&[("region", "us-west1"), ("limit", "\u{0}")]),
        ] {
            let e = check_param_headers(schema, args, &bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::HEADER_MISMATCH, "{bad:?}");
        }
        // No value: no header expected.
        assert!(check_param_headers(schema, json!({}).as_object(), &[]).is_ok());
    }

    #[test]
    fn resource_not_found_is_invalid_params_with_the_uri() {
        let e = finish_error(ErrorData::resource_not_found("file:///x"));
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"uri": "file:///x"})));
        assert!(e.is_resource_not_found());
    }
}
