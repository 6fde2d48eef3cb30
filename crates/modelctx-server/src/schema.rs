//! JSON Schema: generation from Rust types (schemars, 2020-12; feature `schemars`),
//! validation (jsonschema, local references only — a `$ref` is never fetched; feature
//! `schema-validation`), and the few schema reads the registries need either way.
//!
//! A validation report (`Compiled::check`: tool arguments and output, prompt arguments,
//! template variables) names the first 10 violations, each cut to 300 characters, then "and
//! more", and stops the validator there: it goes back to the caller, so it must not grow
//! with the input.

use modelctx_types::JsonObject;
#[cfg(feature = "schemars")]
use schemars::JsonSchema;
use serde_json::{Map, Value};

/// Arguments of a tool or prompt that takes none.
#[cfg(feature = "schemars")]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

/// A compiled schema, built once at registration.
#[cfg(feature = "schema-validation")]
pub(crate) struct Compiled {
    validator: jsonschema::Validator,
}

#[cfg(feature = "schema-validation")]
impl Compiled {
    /// Compiles `schema`; a schema that does not compile (or whose `$ref` points outside
    /// the document, which we never fetch) is an error.
    pub(crate) fn new(schema: &JsonObject) -> Result<Self, String> {
        let value = Value::Object(schema.clone());
        jsonschema::options()
            .build(&value)
            .map(|validator| Self { validator })
            .map_err(|e| format!("the schema does not compile: {e}"))
    }

    /// Checks `instance`, describing its violations: the first [`MAX_PROBLEMS`], each
    /// cut to [`MAX_PROBLEM_CHARS`], then a note that there are more. The report goes
    /// back to the caller, so it must not grow with the input (SECURITY.md case 15: 100,000
    /// bad items made a 4.7 MB message, one line each), and the validator stops looking
    /// once the report is full.
    pub(crate) fn check(&self, instance: &Value) -> Result<(), String> {
        let mut problems: Vec<String> = self
            .validator
            .iter_errors(instance)
            .take(MAX_PROBLEMS + 1)
            .map(|e| {
                let path = e.instance_path().to_string();
                let problem = if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{path}: {e}")
                };
                shorten(problem)
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        if problems.len() > MAX_PROBLEMS {
            problems.truncate(MAX_PROBLEMS);
            problems.push("and more".to_owned());
        }
        Err(problems.join("; "))
    }
}

/// How many violations a validation report names.
#[cfg(feature = "schema-validation")]
const MAX_PROBLEMS: usize = 10;

/// The longest description of one violation, in characters: a violation at the root
/// describes the instance, which may be as large as the body cap.
#[cfg(feature = "schema-validation")]
const MAX_PROBLEM_CHARS: usize = 300;

/// `problem`, cut to [`MAX_PROBLEM_CHARS`] characters with an ellipsis.
#[cfg(feature = "schema-validation")]
fn shorten(problem: String) -> String {
    match problem.char_indices().nth(MAX_PROBLEM_CHARS) {
        Some((at, _)) => format!("{}…", &problem[..at]),
        None => problem,
    }
}

/// The JSON Schema (2020-12) of `T`, as an object.
#[cfg(feature = "schemars")]
pub(crate) fn schema_of<T: JsonSchema + ?Sized>() -> JsonObject {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    match schema.to_value() {
        Value::Object(map) => map,
        // `true` accepts anything: the same as an empty schema.
        Value::Bool(true) => Map::new(),
        other => {
            let mut map = Map::new();
            map.insert("not".to_owned(), other);
            map
        }
    }
}

/// Whether a schema describes JSON objects only.
pub(crate) fn is_object_schema(schema: &JsonObject) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// An object schema with the single required property `result` holding `inner`; the
/// `$schema` and `$defs` of `inner` move to the root so its references still resolve.
#[cfg(feature = "schemars")]
pub(crate) fn wrap_as_result(mut inner: JsonObject) -> JsonObject {
    let mut root = Map::new();
    if let Some(dialect) = inner.remove("$schema") {
        root.insert("$schema".to_owned(), dialect);
    }
    let defs = inner.remove("$defs");
    inner.remove("title");
    root.insert("type".to_owned(), Value::from("object"));
    let mut properties = Map::new();
    properties.insert("result".to_owned(), Value::Object(inner));
    root.insert("properties".to_owned(), Value::Object(properties));
    root.insert("required".to_owned(), Value::from(vec!["result"]));
    if let Some(defs) = defs {
        root.insert("$defs".to_owned(), defs);
    }
    root
}

/// Turns string values (prompt arguments, URI template variables) into the JSON types
/// the schema's properties ask for: numbers, integers and booleans are parsed; anything
/// that does not parse stays a string, for validation to report.
pub(crate) fn coerce_strings(
    schema: &JsonObject,
    values: impl IntoIterator<Item = (String, String)>,
) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for (name, text) in values {
        let types = properties
            .and_then(|p| p.get(&name))
            .and_then(Value::as_object)
            .map(|p| declared_types(schema, p))
            .unwrap_or_default();
        out.insert(name, coerce(&text, &types));
    }
    Value::Object(out)
}

fn declared_types(root: &JsonObject, property: &JsonObject) -> Vec<String> {
    let mut property = property;
    // Follow one local `$ref` (`#/$defs/Name`).
    if let Some(target) = property
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| root.get("$defs")?.get(name)?.as_object())
    {
        property = target;
    }
    match property.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn coerce(text: &str, types: &[String]) -> Value {
    let wants = |t: &str| types.iter().any(|x| x == t);
    if wants("string") || types.is_empty() {
        return Value::from(text);
    }
    if wants("integer")
        && let Ok(n) = text.parse::<i64>()
    {
        return Value::from(n);
    }
    if wants("number")
        && let Ok(n) = text.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(n)
    {
        return Value::Number(n);
    }
    if wants("boolean")
        && let Ok(b) = text.parse::<bool>()
    {
        return Value::Bool(b);
    }
    if wants("null") && text.is_empty() {
        return Value::Null;
    }
    Value::from(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_become_the_declared_types() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": ["number", "null"]},
            "b": {"type": "boolean"}, "s": {"type": "string"}}});
        let schema = schema.as_object().unwrap();
        let values = [
            ("n", "42"),
            ("x", "1.5"),
            ("b", "true"),
            ("s", "7"),
            ("other", "z"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        assert_eq!(
            coerce_strings(schema, values),
            json!({"n": 42, "x": 1.5, "b": true, "s": "7", "other": "z"})
        );
    }

    #[cfg(all(feature = "schemars", feature = "schema-validation"))]
    #[test]
    fn a_wrapped_schema_keeps_its_definitions_at_the_root() {
        let inner = json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "array", "items": {"$ref": "#/$defs/Point"},
            "$defs": {"Point": {"type": "object"}}});
        let wrapped = wrap_as_result(inner.as_object().unwrap().clone());
        let compiled = Compiled::new(&wrapped).unwrap();
        assert!(compiled.check(&json!({"result": [{}]})).is_ok());
        assert!(compiled.check(&json!({"result": [1]})).is_err());
        assert!(compiled.check(&json!([])).is_err());
    }

    /// SECURITY.md case 15: the report names the first violations only, each cut
    /// short, however many the input holds and however large it is.
    #[cfg(feature = "schema-validation")]
    #[test]
    fn a_report_stays_short_whatever_the_input() {
        let schema = json!({"type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
            "required": ["items"]});
        let compiled = Compiled::new(schema.as_object().unwrap()).unwrap();
        let items: Vec<Value> = (0..10_000).map(|i| json!(i.to_string())).collect();
        let report = compiled.check(&json!({"items": items})).unwrap_err();
        assert_eq!(
            report.matches("is not of type").count(),
            MAX_PROBLEMS,
            "{report}"
        );
        assert!(report.starts_with("/items/0: "), "{report}");
        assert!(report.ends_with("; and more"), "{report}");
        // A violation at the root describes the whole instance: cut short.
        let big = json!(["x".repeat(100_000)]);
        let report = compiled.check(&big).unwrap_err();
        assert!(report.chars().count() <= MAX_PROBLEM_CHARS + 1, "{report}");
        assert!(report.ends_with('…'), "{report}");
        // One violation: named in full.
        let report = compiled.check(&json!({"items": [1, "2"]})).unwrap_err();
        assert_eq!(report, r#"/items/1: "2" is not of type "integer""#);
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn a_remote_reference_is_never_fetched() {
        let schema = json!({"$ref": "https://example.invalid/schema.json"});
        assert!(Compiled::new(schema.as_object().unwrap()).is_err());
    }
}
