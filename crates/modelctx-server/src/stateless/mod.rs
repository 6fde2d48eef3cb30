//! The stateless era (2026-07-28): every request carries its own envelope in `_meta`
//! (protocol version, client capabilities, optionally client info and log level) and is
//! served on it alone; there is no handshake and no per-session client state.
//!
//! The same handlers serve both eras. This module checks the envelope, answers what the
//! era changes (`server/discover`; methods the era removed are unknown methods), and
//! finishes every result the way the era wants it (`resultType`, the server's identity
//! in `_meta`, caching hints) and every error (resource-not-found is `-32602`).
//!
//! The session decides the era: a server session configured for it
//! (`SessionConfig::unstable_stateless_era`, set by `serve_with`) moves from `New` to
//! `Phase::Stateless` on a first request whose `_meta` carries
//! `io.modelcontextprotocol/protocolVersion`, or starts there when its transport says it
//! carries one such request (`Transport::carries_stateless_era`). In that phase the session
//! answers no ping itself, sends no requests, and sends notifications only through a peer
//! related to a request. `Context` takes client info, capabilities, version and log level
//! from the envelope (no `logLevel`: no log messages). Missing envelope keys are `-32602`;
//! a version the server does not serve is `-32022` with `data.supported` and `requested`.

mod cache;
mod envelope;
mod finish;
mod hints;

use modelctx_types::{
    DiscoverResult, ErrorCode, ErrorData, ProtocolVersion, RawValue, ServerCapabilities, mirror,
    to_raw,
};
use serde_json::{Map, Value};

pub(crate) use cache::{EnvelopeCache, envelope_cached};
pub(crate) use envelope::Envelope;
pub(crate) use finish::finish_result;
pub(crate) use hints::CacheHints;

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

/// Checks a `tools/call`'s `Mcp-Param-{Name}` headers (`mirrored`: lower-cased names
/// without the prefix) against the arguments its tool marks with `x-mcp-header`
/// (`marked`, see `mirror::mirrored_params`): an argument that has a value needs its
/// header, equal to it (after `=?base64?…?=` decoding; booleans as `true`/`false`,
/// integers compared as numbers, so `42.0` matches `42`), else `-32020`.
pub(crate) fn check_param_headers(
    marked: &[mirror::MirroredParam],
    arguments: Option<&Map<String, Value>>,
    mirrored: &[(String, String)],
) -> Result<(), ErrorData> {
    if marked.is_empty() {
        return Ok(());
    }
    let arguments = arguments.map(|a| Value::Object(a.clone()));
    for marked in marked {
        // No value (or one a header cannot mirror): no header is expected.
        let Some(expected) = mirror::argument_text(arguments.as_ref(), &marked.path) else {
            continue;
        };
        let header = &marked.header;
        let name = header.to_ascii_lowercase();
        let mut sent = mirrored.iter().filter(|(n, _)| *n == name);
        let Some((_, raw)) = sent.next() else {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header is required (argument {:?} has a value)",
                marked.path.join(".")
            )));
        };
        // Sent twice, it has no one value to compare: refused, never read first-wins
        // (a proxy reading the other line would see another request).
        if sent.next().is_some() {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header is sent on more than one line; it must be sent once"
            )));
        }
        let got = mirror::decode_header_value(raw).ok_or_else(|| {
            ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header value is not valid (bad characters or Base64)"
            ))
        })?;
        if got != expected && !same_integer(arguments.as_ref(), &marked.path, &got) {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: Mcp-Param-{header} header value {got:?} does not match the argument's value {expected:?}"
            )));
        }
    }
    Ok(())
}

/// Whether the argument at `path` is an integer that `header` names as a number: the
/// transport asks servers to compare integers numerically (`42.0` and `42` are equal).
/// Only a decimal whose fraction is all zeros can name an integer; no float rounding.
fn same_integer(arguments: Option<&Value>, path: &[String], header: &str) -> bool {
    let mut value = arguments;
    for key in path {
        value = value.and_then(|v| v.get(key));
    }
    let Some(Value::Number(n)) = value else {
        return false;
    };
    let Some(argument) = n
        .as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
    else {
        return false;
    };
    let whole = match header.split_once('.') {
        None => header,
        Some((whole, fraction)) if !fraction.is_empty() && fraction.bytes().all(|b| b == b'0') => {
            whole
        }
        Some(_) => return false,
    };
    whole.parse::<i128>() == Ok(argument)
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
    use serde_json::json;

    use super::*;

    #[test]
    fn marked_arguments_need_matching_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "query": {"type": "string"},
        }});
        let schema = &mirror::mirrored_params(&schema);
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
            // Twice, the first line matching: no one value, refused.
            h(&[
                ("region", "us-west1"),
                ("region", "us-east1"),
                ("limit", "42"),
            ]),
            h(&[("region", "us-west1"), ("limit", "42"), ("limit", "42")]),
        ] {
            let e = check_param_headers(schema, args, &bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::HEADER_MISMATCH, "{bad:?}");
        }
        // No value: no header expected.
        assert!(check_param_headers(schema, json!({}).as_object(), &[]).is_ok());
        // Integers compare as numbers; a string argument stays a string.
        for same in ["42.0", "42.000", "+42", "042"] {
            let headers = h(&[("region", "us-west1"), ("limit", same)]);
            assert!(
                check_param_headers(schema, args, &headers).is_ok(),
                "{same}"
            );
        }
        for other in ["42.5", "43", "4.2e1", "42.", "forty-two"] {
            let headers = h(&[("region", "us-west1"), ("limit", other)]);
            let e = check_param_headers(schema, args, &headers).unwrap_err();
            assert_eq!(e.code, ErrorCode::HEADER_MISMATCH, "{other}");
        }
        let zip = json!({"type": "object", "properties": {
            "zip": {"type": "string", "x-mcp-header": "Zip"},
        }});
        let zip = &mirror::mirrored_params(&zip);
        let headers = h(&[("zip", "42.0")]);
        let e = check_param_headers(zip, json!({"zip": "42"}).as_object(), &headers).unwrap_err();
        assert_eq!(e.code, ErrorCode::HEADER_MISMATCH);
    }

    #[test]
    fn resource_not_found_is_invalid_params_with_the_uri() {
        let e = finish_error(ErrorData::resource_not_found("file:///x"));
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"uri": "file:///x"})));
        assert!(e.is_resource_not_found());
    }
}
