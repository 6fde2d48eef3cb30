//! The header mirroring rules of protocol 2026-07-28 over streamable HTTP (SEP-2243):
//! how a value travels in `Mcp-Name` or `Mcp-Param-{Name}` (as is, or in the
//! `=?base64?…?=` form), and which tool arguments a tool's `inputSchema` marks with
//! `x-mcp-header`. Shared by both roles: a client mirrors with it, a server checks.

use serde_json::{Map, Value};

/// One argument a tool mirrors into a header: the `Mcp-Param-{header}` name part and the
/// chain of `properties` keys that leads to the argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredParam {
    /// The header's name part, as the schema writes it.
    pub header: String,
    /// The `properties` keys from the schema's root to the argument.
    pub path: Vec<String>,
}

/// The arguments `input_schema` marks with `x-mcp-header` that are reachable from its
/// root through `properties` alone (the only ones a header may mirror).
pub fn mirrored_params(input_schema: &Value) -> Vec<MirroredParam> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<MirroredParam>) {
        let Some(Value::Object(properties)) = schema.get("properties") else {
            return;
        };
        for (name, property) in properties {
            path.push(name.clone());
            if let Some(Value::String(header)) = property.get("x-mcp-header") {
                out.push(MirroredParam {
                    header: header.clone(),
                    path: path.clone(),
                });
            }
            walk(property, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(input_schema, &mut Vec::new(), &mut out);
    out
}

/// Checks `input_schema`'s `x-mcp-header` annotations: each a non-empty HTTP token,
/// unique without regard to case, on a string, integer or boolean property reachable
/// from the root through `properties` alone. A client drops a tool that breaks them.
pub fn check_mirrored_params(input_schema: &Value) -> Result<(), String> {
    fn walk(schema: &Value, reachable: bool, seen: &mut Vec<String>) -> Result<(), String> {
        match schema {
            Value::Object(map) => {
                if let Some(header) = map.get("x-mcp-header") {
                    check_annotation(map, header, reachable, seen)?;
                }
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("properties", Value::Object(properties)) => {
                            for property in properties.values() {
                                walk(property, reachable, seen)?;
                            }
                        }
                        ("x-mcp-header", _) => {}
                        _ => walk(value, false, seen)?,
                    }
                }
                Ok(())
            }
            Value::Array(items) => items.iter().try_for_each(|v| walk(v, false, seen)),
            _ => Ok(()),
        }
    }
    walk(input_schema, true, &mut Vec::new())
}

fn check_annotation(
    property: &Map<String, Value>,
    header: &Value,
    reachable: bool,
    seen: &mut Vec<String>,
) -> Result<(), String> {
    let Value::String(name) = header else {
        return Err("x-mcp-header must be a string".to_owned());
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("x-mcp-header {name:?} is not an HTTP header token"));
    }
    if !reachable {
        return Err(format!(
            "x-mcp-header {name:?} is not reachable through properties alone"
        ));
    }
    let primitive = matches!(
        property.get("type").and_then(Value::as_str),
        Some("string" | "integer" | "boolean")
    );
    if !primitive {
        return Err(format!(
            "x-mcp-header {name:?} is not on a string, integer or boolean"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if seen.contains(&lower) {
        return Err(format!("x-mcp-header {name:?} appears twice"));
    }
    seen.push(lower);
    Ok(())
}

/// The text a header mirrors for the argument at `path` in `arguments` (before
/// [`header_value`] encodes it): a string as is, an integer in decimal, a boolean as
/// `true`/`false`; `None` for a missing or null value, or one a header cannot mirror.
pub fn argument_text(arguments: Option<&Value>, path: &[String]) -> Option<String> {
    let mut value = arguments?;
    for key in path {
        value = value.get(key)?;
    }
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// A value as a header carries it: as is when it is plain visible ASCII without
/// surrounding spaces, else `=?base64?…?=` (also for a value that looks like that form,
/// so it is not taken for one).
pub fn header_value(value: &str) -> String {
    let visible = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let plain = visible && !padded && !is_sentinel(value);
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64_encode(value.as_bytes()))
    }
}

/// What a header carries: the value as sent (without surrounding whitespace), or
/// decoded from `=?base64?…?=`; `None` when it holds characters a header value may not,
/// or its Base64 is invalid (both are header mismatches).
/// A value sent as is comes back borrowed.
pub fn decode_header_value(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    if raw
        .bytes()
        .any(|c| c != b'\t' && !(b' '..=b'~').contains(&c))
    {
        return None;
    }
    let value = raw.trim();
    if is_sentinel(value) {
        let encoded = &value["=?base64?".len()..value.len() - "?=".len()];
        String::from_utf8(base64_decode(encoded)?)
            .ok()
            .map(std::borrow::Cow::Owned)
    } else {
        Some(std::borrow::Cow::Borrowed(value))
    }
}

fn is_sentinel(value: &str) -> bool {
    value.len() >= "=?base64??=".len() && value.starts_with("=?base64?") && value.ends_with("?=")
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard padded Base64 (RFC 4648 §4).
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Strict standard Base64: padded to a multiple of four, no other characters.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| ALPHABET.iter().position(|&a| a == c).map(|p| p as u32);
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.len() / 4;
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != groups) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let group = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&group[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_travel_plain_or_in_base64() {
        assert_eq!(header_value("us-west1"), "us-west1");
        assert_eq!(header_value(""), "");
        assert_eq!(
            header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        for value in ["us-west1", "Hello, 世界", " padded ", "=?base64?literal?="] {
            assert_eq!(decode_header_value(&header_value(value)).unwrap(), value);
        }
    }

    #[test]
    fn decoding_is_strict() {
        assert_eq!(decode_header_value("  weather ").unwrap(), "weather");
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        // Without the closing marker it is a literal value.
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").unwrap(),
            "=?base64?SGVsbG8="
        );
        assert!(
            decode_header_value("=?base64?SGVsbG8?=").is_none(),
            "bad padding"
        );
        assert!(decode_header_value("=?base64?SGVs!!!bG8=?=").is_none());
        assert!(decode_header_value("a\u{0}b").is_none());
        assert!(base64_decode("SG==SGVs").is_none());
    }

    #[test]
    fn marked_arguments_and_their_values() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {
                "n": {"type": "integer", "x-mcp-header": "N"}}},
            "query": {"type": "string"},
        }});
        let marked = mirrored_params(&schema);
        assert_eq!(marked.len(), 2);
        let args = json!({"region": "eu", "nested": {"n": 42}, "query": "q"});
        let values: Vec<Option<String>> = marked
            .iter()
            .map(|m| argument_text(Some(&args), &m.path))
            .collect();
        assert!(values.contains(&Some("eu".to_owned())));
        assert!(values.contains(&Some("42".to_owned())));
        assert_eq!(
            argument_text(Some(&json!({"region": null})), &["region".to_owned()]),
            None
        );
        assert!(check_mirrored_params(&schema).is_ok());
    }

    #[test]
    fn annotations_follow_the_rules() {
        for bad in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {
                "a": {"type": "string", "x-mcp-header": "X"},
                "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"properties": {"a": {"type": "array", "items": {
                "type": "string", "x-mcp-header": "A"}}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
        ] {
            assert!(check_mirrored_params(&bad).is_err(), "{bad}");
        }
    }
}
