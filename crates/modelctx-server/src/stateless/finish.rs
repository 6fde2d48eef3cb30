//! Finishing a result for the era: its `resultType`, the server's identity in `_meta`
//! and, for cacheable results, caching hints; appended to the result's text when it
//! can be, else through the general path.
//!
//! A result that names none of the members added is not read (one loop over its bytes,
//! `may_name`); a name or an escape anywhere takes the quick top-level scan, and what that
//! does not settle the map. The new members are written into a string of the exact final
//! size, which becomes the result's `RawValue` without a second parse (see `built_raw`).
//! `tools/call`'s `Mcp-Param-*` check (`check_param_headers`) reads only the tool's name
//! unless the tool marks arguments with `x-mcp-header` (found once at registration,
//! `RegisteredTool::mirrored`).

use modelctx_types::{ErrorData, Meta, RawValue, members, to_raw};
use serde_json::{Map, Value};

use super::CacheHints;

/// Methods whose complete results carry caching hints (`ttlMs`, `cacheScope`).
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// The members of a result [`finish_result`] may add, as the handler left them.
struct Present<'a> {
    result_type: Option<std::borrow::Cow<'a, str>>,
    ttl_ms: bool,
    cache_scope: bool,
}

/// [`finish_result`] without building the result as a map: when the handler's object
/// has no `_meta`, every member to add is new, so it is appended to the object's text
/// (one scan of the result's top level, no tree). `None` leaves the result to the
/// general path (a `_meta` to add to, a `resultType` that is not a plain string, or
/// what the scan does not settle: not an object, a key with escapes or twice).
fn finish_by_appending(
    method: &str,
    raw: &RawValue,
    server_info: &RawValue,
    hints: &CacheHints,
) -> Option<Box<RawValue>> {
    let text = raw.get().trim();
    const NAMES: [&str; 4] = ["resultType", "ttlMs", "cacheScope", "_meta"];
    // A result that names none of the members anywhere, and has no escapes (a key may
    // be spelled with them), has none of them: nothing to read.
    let [result_type, ttl_ms, cache_scope, meta] = if may_name(text, &NAMES) {
        members::find(text, NAMES)?
    } else if text.starts_with('{') {
        [None; 4]
    } else {
        return None;
    };
    if meta.is_some() || !text.ends_with('}') {
        return None;
    }
    // Present means named, whatever the value (`null` included), as on the general path.
    let present = Present {
        result_type: match result_type {
            None => None,
            Some(kind) => Some(members::string(kind)?),
        },
        ttl_ms: ttl_ms.is_some(),
        cache_scope: cache_scope.is_some(),
    };
    if present.result_type.as_deref() == Some("input_required") {
        // Checked and cleaned on the general path.
        return None;
    }
    let head = text[..text.len() - 1].trim_end();
    let info = server_info.get();
    let complete = match &present.result_type {
        None => true,
        Some(kind) => kind == "complete",
    };
    let cacheable = complete && CACHEABLE.contains(&method);
    let ttl = (cacheable && !present.ttl_ms).then(|| hints.ttl_ms.to_string());
    let scope = match cacheable && !present.cache_scope {
        true => Some(serde_json::to_string(hints.scope.as_str()).ok()?),
        false => None,
    };
    // Every member is `,"name":value`; the server's identity is
    // `,"_meta":{"<SERVER_INFO>":<info>}` (the key needs no escaping).
    let member_len = |name: &str, value: &str| name.len() + value.len() + 4;
    let result_type_len = if present.result_type.is_none() {
        member_len("resultType", "\"complete\"")
    } else {
        0
    };
    let len = head.len()
        + result_type_len
        + ttl.as_deref().map_or(0, |v| member_len("ttlMs", v))
        + scope.as_deref().map_or(0, |v| member_len("cacheScope", v))
        + member_len("_meta", "")
        + Meta::SERVER_INFO.len()
        + info.len()
        + 5
        + 1;
    // `len` exactly (one more when the object was empty: no comma): the text becomes
    // the result without a copy or a reallocation.
    let mut out = String::with_capacity(len);
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
    if present.result_type.is_none() {
        member(&mut out, "resultType", "\"complete\"");
    }
    if let Some(ttl) = &ttl {
        member(&mut out, "ttlMs", ttl);
    }
    if let Some(scope) = &scope {
        member(&mut out, "cacheScope", scope);
    }
    member(&mut out, "_meta", "{\"");
    out.push_str(Meta::SERVER_INFO);
    out.push_str("\":");
    out.push_str(info);
    out.push('}');
    out.push('}');
    // Built from valid pieces: the handler's object (a `RawValue`) without its `}`,
    // members whose values are JSON already; no second parse.
    crate::built_raw::built_raw(out)
}

/// Whether `text` may name one of `names`: it holds one as a JSON string (`"name"`)
/// somewhere, or it has a backslash (an escape may spell one). One pass, no search per
/// name.
fn may_name(text: &str, names: &[&str]) -> bool {
    // One loop over the bytes: a result is short, and a search call per quote costs
    // more than the bytes between them.
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'\\' {
            return true;
        }
        if c != b'"' {
            continue;
        }
        let rest = &b[i + 1..];
        let named = names.iter().any(|n| {
            let n = n.as_bytes();
            rest.first() == n.first() && rest.starts_with(n) && rest.get(n.len()) == Some(&b'"')
        });
        if named {
            return true;
        }
    }
    false
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
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        check_input_required(&mut result)?;
    }
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

/// An interim `input_required` result names at least one input request or carries
/// `requestState` (else the client has nothing to answer and nothing to echo: an
/// internal error, never sent as it is), and carries no caching hints.
fn check_input_required(result: &mut Map<String, Value>) -> Result<(), ErrorData> {
    let asks = result
        .get("inputRequests")
        .and_then(Value::as_object)
        .is_some_and(|requests| !requests.is_empty());
    let state = result
        .get("requestState")
        .and_then(Value::as_str)
        .is_some_and(|state| !state.is_empty());
    if !asks && !state {
        return Err(ErrorData::internal_error(
            "the handler's input_required result carries neither inputRequests nor requestState",
        ));
    }
    result.remove("ttlMs");
    result.remove("cacheScope");
    Ok(())
}

#[cfg(test)]
mod tests {
    use modelctx_types::Implementation;
    use serde_json::json;

    use super::*;

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
    fn a_member_spelled_with_escapes_is_found_before_anything_is_appended() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let finish = |text: &str| -> Value {
            let raw = RawValue::from_string(text.to_owned()).unwrap();
            let done = finish_result("tools/call", &raw, &info, &CacheHints::default()).unwrap();
            serde_json::from_str(done.get()).unwrap()
        };
        // The handler's own `_meta`, its key escaped: kept, the identity added to it.
        let done = finish(r#"{"\u005fmeta":{"a":1},"content":[]}"#);
        assert_eq!(done["_meta"]["a"], 1, "{done}");
        assert_eq!(done["_meta"][Meta::SERVER_INFO]["name"], "s", "{done}");
        let done = finish(r#"{"result\u0054ype":"input_required","requestState":"s"}"#);
        assert_eq!(done["resultType"], "input_required", "{done}");
        // Escapes elsewhere, and the names as values, change nothing.
        let done = finish(r#"{"content":[{"type":"text","text":"say \"_meta\""}]}"#);
        assert_eq!(done["resultType"], "complete", "{done}");
        assert_eq!(done["content"][0]["text"], "say \"_meta\"", "{done}");
        let done = finish(r#"{"content":[{"type":"text","text":"resultType"}]}"#);
        assert_eq!(done["resultType"], "complete", "{done}");
        assert!(may_name(r#"{"a":"\n"}"#, &["b"]));
        assert!(may_name(r#"{"a":{"b":1}}"#, &["b"]));
        assert!(!may_name(r#"{"a":"bc","bb":1}"#, &["b"]));
    }

    #[test]
    fn results_get_their_type_identity_and_caching_hints() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let finish = |method, raw: &RawValue| -> Value {
            let done = finish_result(method, raw, &info, &CacheHints::default()).unwrap();
            serde_json::from_str(done.get()).unwrap()
        };
        let raw = to_raw(&json!({"tools": []})).unwrap();
        let done = finish("tools/list", &raw);
        assert_eq!(
            done,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}})
        );
        let raw = to_raw(&json!({"content": [], "_meta": {"k": 1}})).unwrap();
        let done = finish("tools/call", &raw);
        assert_eq!(done["resultType"], "complete");
        assert_eq!(done["_meta"]["k"], 1);
        assert!(done.get("ttlMs").is_none());
        let raw = to_raw(&json!({"resultType": "input_required", "requestState": "x"})).unwrap();
        let done = finish("resources/read", &raw);
        assert!(
            done.get("ttlMs").is_none(),
            "interim results are not cacheable"
        );
    }

    #[test]
    fn an_interim_result_asks_or_carries_state_and_has_no_hints() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let hints = CacheHints::default();
        for empty in [
            json!({"resultType": "input_required"}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"resultType": "input_required", "requestState": ""}),
        ] {
            let raw = to_raw(&empty).unwrap();
            let refused = finish_result("tools/call", &raw, &info, &hints).unwrap_err();
            assert_eq!(
                refused.code,
                modelctx_types::ErrorCode::INTERNAL_ERROR,
                "{empty}"
            );
        }
        let raw = to_raw(&json!({"resultType": "input_required", "requestState": "x",
            "ttlMs": 5, "cacheScope": "public"}))
        .unwrap();
        let done: Value = serde_json::from_str(
            finish_result("resources/read", &raw, &info, &hints)
                .unwrap()
                .get(),
        )
        .unwrap();
        assert_eq!(done["requestState"], "x");
        assert!(
            done.get("ttlMs").is_none() && done.get("cacheScope").is_none(),
            "{done}"
        );
    }
}
