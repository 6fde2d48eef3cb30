//! Structured output across the eras (SEP-2106). From 2026-07-28 a tool's
//! `outputSchema` may have any root and its `structuredContent` may be any JSON value;
//! up to 2025-11-25 both must describe an object. A tool registered with its natural
//! schema serves each era in that era's shape:
//!
//! - 2026-07-28: the schema and the value as the tool gave them; a non-object value
//!   whose result has no text block gets its JSON text appended (the spec's fallback
//!   for clients that read only `content`).
//! - The handshake era: a non-object-root schema is listed wrapped as
//!   `{type: object, properties: {result: <natural>}, required: [result]}`, and every
//!   value of such a tool (an object too: the wrap follows the tool's schema, not the
//!   value) goes out as `{"result": <value>}`; so does a non-object value of a tool with
//!   no schema. A wrapped value without a text block gets the wrapped JSON as text.
//!
//! Wrapping moves the natural schema under `#/properties/result`, so its same-document
//! references are rewritten to keep resolving: `$ref` and `$dynamicRef` JSON pointers
//! (`#`, `#/...`) in schema positions only (never inside `const`, `enum`, `default`,
//! `examples` or unknown keywords, whose values are data), and never below a subschema
//! carrying `$id` (its references resolve against that embedded base, which moved with
//! it). Anchors (`#name`) resolve anywhere in the resource and stay as they are.

use modelctx_types::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Map, Value};

use crate::schema::is_object_schema;

/// Where a wrapped schema keeps the natural one.
const RESULT_POINTER: &str = "/properties/result";

/// Keywords whose value is one subschema (or, for `items` and `additionalItems` of
/// older drafts, an array of them).
const ONE_SCHEMA: [&str; 12] = [
    "additionalProperties",
    "propertyNames",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAYS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas (`dependencies` of older drafts maps
/// to a subschema or to a list of names).
const SCHEMA_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// The handshake-era listing of a natural output schema: `None` for an object schema
/// (listed as is), else the wrapped schema.
pub(crate) fn legacy_schema(natural: &JsonObject) -> Option<JsonObject> {
    if is_object_schema(natural) {
        return None;
    }
    let mut inner = natural.clone();
    let mut root = Map::new();
    // A dialect belongs at the root of a resource: the wrapper's, unless the natural
    // schema is a resource of its own (`$id`).
    if !inner.contains_key("$id")
        && let Some(dialect) = inner.remove("$schema")
    {
        root.insert("$schema".to_owned(), dialect);
    }
    let mut inner = Value::Object(inner);
    rewrite_refs(&mut inner);
    root.insert("type".to_owned(), Value::from("object"));
    let mut properties = Map::new();
    properties.insert("result".to_owned(), inner);
    root.insert("properties".to_owned(), Value::Object(properties));
    root.insert("required".to_owned(), Value::from(vec!["result"]));
    Some(root)
}

/// Rewrites the same-document references of `schema`, about to move under
/// `#/properties/result`, to point where their targets move.
fn rewrite_refs(schema: &mut Value) {
    let Value::Object(map) = schema else {
        // `true` and `false` hold no references.
        return;
    };
    if map.contains_key("$id") {
        return;
    }
    for key in ["$ref", "$dynamicRef"] {
        if let Some(Value::String(reference)) = map.get_mut(key)
            && (reference == "#" || reference.starts_with("#/"))
        {
            *reference = format!("#{RESULT_POINTER}{}", &reference[1..]);
        }
    }
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if ONE_SCHEMA.contains(&key) {
            match value {
                Value::Array(schemas) => schemas.iter_mut().for_each(rewrite_refs),
                other => rewrite_refs(other),
            }
        } else if SCHEMA_ARRAYS.contains(&key) {
            if let Value::Array(schemas) = value {
                schemas.iter_mut().for_each(rewrite_refs);
            }
        } else if SCHEMA_MAPS.contains(&key)
            && let Value::Object(schemas) = value
        {
            // A `dependencies` entry that lists names is data: only objects descend.
            schemas
                .values_mut()
                .filter(|s| s.is_object() || s.is_boolean())
                .for_each(rewrite_refs);
        }
    }
}

/// Puts a result in the shape of the client's era: `legacy` for the handshake era,
/// `wraps` when the tool's natural output schema has a non-object root.
pub(crate) fn project(result: &mut CallToolResult, legacy: bool, wraps: bool) {
    let Some(structured) = result.structured_content.take() else {
        return;
    };
    let wrap = legacy && (wraps || !structured.is_object());
    let structured = if wrap {
        let mut wrapped = Map::new();
        wrapped.insert("result".to_owned(), structured);
        Value::Object(wrapped)
    } else {
        structured
    };
    // A value a client of the result's era may not read as structured content (a
    // wrapped one, or a non-object for 2026-07-28) is also given as text, unless the
    // tool gave text of its own.
    let fallback = wrap || !structured.is_object();
    if fallback && !result.content.iter().any(|c| c.as_text().is_some()) {
        result
            .content
            .push(ContentBlock::text(structured.to_string()));
    }
    result.structured_content = Some(structured);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn object_schemas_are_listed_as_they_are() {
        assert_eq!(legacy_schema(&object(json!({"type": "object"}))), None);
    }

    #[test]
    fn references_follow_the_schema_under_result() {
        let natural = object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "array",
            "items": {"$ref": "#/$defs/Item"},
            "examples": [[{"$ref": "#/$defs/Item"}]],
            "$defs": {
                "Item": {
                    "type": "object",
                    "properties": {"tag": {"$dynamicRef": "#/$defs/Tag"}, "$ref": {"type": "string"}},
                    "default": {"$ref": "#/literal"}
                },
                "Tag": {"anyOf": [{"$ref": "#/$defs/Name"}, {"const": {"$ref": "#/x"}}]},
                "Name": {"type": "string"},
                "Embedded": {"$id": "https://example.test/embedded", "$ref": "#/$defs/Leaf",
                             "$defs": {"Leaf": {"type": "string"}}}
            }
        }));
        let wrapped = Value::Object(legacy_schema(&natural).unwrap());
        assert_eq!(
            wrapped["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(wrapped["required"], json!(["result"]));
        let inner = &wrapped["properties"]["result"];
        assert!(inner.get("$schema").is_none());
        assert_eq!(inner["items"]["$ref"], "#/properties/result/$defs/Item");
        let defs = &inner["$defs"];
        assert_eq!(
            defs["Item"]["properties"]["tag"]["$dynamicRef"],
            "#/properties/result/$defs/Tag"
        );
        assert_eq!(
            defs["Tag"]["anyOf"][0]["$ref"],
            "#/properties/result/$defs/Name"
        );
        // Data keeps what it says; an embedded resource keeps its own references.
        assert_eq!(inner["examples"], json!([[{"$ref": "#/$defs/Item"}]]));
        assert_eq!(defs["Item"]["default"], json!({"$ref": "#/literal"}));
        assert_eq!(defs["Tag"]["anyOf"][1]["const"], json!({"$ref": "#/x"}));
        assert_eq!(defs["Embedded"]["$ref"], "#/$defs/Leaf");
    }

    #[test]
    fn each_era_gets_its_shape() {
        let text = |r: &CallToolResult| {
            r.content
                .iter()
                .find_map(|c| c.as_text().map(str::to_owned))
        };
        // 2026-07-28: natural, with a text fallback for a non-object value.
        let mut modern = CallToolResult::new(vec![]).with_structured_content(json!([1, 2]));
        project(&mut modern, false, true);
        assert_eq!(modern.structured_content, Some(json!([1, 2])));
        assert_eq!(text(&modern).as_deref(), Some("[1,2]"));
        // The handshake era: wrapped by the schema, objects too.
        let mut object_value = CallToolResult::new(vec![]).with_structured_content(json!({"a": 1}));
        project(&mut object_value, true, true);
        assert_eq!(
            object_value.structured_content,
            Some(json!({"result": {"a": 1}}))
        );
        assert_eq!(
            text(&object_value).as_deref(),
            Some(r#"{"result":{"a":1}}"#)
        );
        // Without a schema, by the value's shape; an author's text stays alone.
        let mut shaped = CallToolResult::text("mine").with_structured_content(json!(null));
        project(&mut shaped, true, false);
        assert_eq!(shaped.structured_content, Some(json!({"result": null})));
        assert_eq!(shaped.content.len(), 1);
        let mut plain = CallToolResult::new(vec![]).with_structured_content(json!({"a": 1}));
        project(&mut plain, true, false);
        assert_eq!(plain.structured_content, Some(json!({"a": 1})));
        assert!(plain.content.is_empty());
    }
}
