//! Client-side validation of a tool's `structuredContent` against the `outputSchema`
//! the tool advertised (jsonschema, local references only: a `$ref` is never fetched).
//!
//! A schema without `$schema` is read as JSON Schema 2020-12; one that declares draft-04,
//! -06, -07, 2019-09 or 2020-12 is read in that dialect. A schema the client cannot use
//! (another dialect, or a reference it would have to fetch) is never taken as "anything
//! goes": the tool's successful results are refused, with the reason.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use modelctx_types::{CallToolResult, Tool};
use serde_json::Value;

/// One compiled output schema.
pub(crate) struct Compiled(jsonschema::Validator);

/// A tool's output schema as the client can use it: compiled, or why it cannot be.
type Usable = Result<Arc<Compiled>, String>;

/// The output schemas of the tools the client listed, by name: `None` when the tool has
/// none, else the compiled schema or why the client cannot use it.
#[derive(Default)]
pub(crate) struct OutputSchemas {
    by_name: Mutex<HashMap<String, Option<Usable>>>,
}

impl OutputSchemas {
    fn compile(tool: &Tool) -> Option<Usable> {
        let schema = Value::Object(tool.output_schema.clone()?);
        if let Some(dialect) = schema.get("$schema") {
            let known = dialect.as_str().is_some_and(|uri| {
                use jsonschema::Draft;
                matches!(
                    Draft::from_schema_uri(uri),
                    Draft::Draft4
                        | Draft::Draft6
                        | Draft::Draft7
                        | Draft::Draft201909
                        | Draft::Draft202012
                )
            });
            if !known {
                return Some(Err(format!(
                    "the outputSchema of tool {} declares the JSON Schema dialect {dialect}, which \
                     this client does not support (it validates 2020-12, 2019-09, draft-07, \
                     draft-06 and draft-04)",
                    tool.name
                )));
            }
        }
        let compiled = jsonschema::options()
            .offline()
            .build(&schema)
            .map(|v| Arc::new(Compiled(v)))
            .map_err(|e| {
                format!(
                    "the outputSchema of tool {} cannot be used (references are never fetched): {e}",
                    tool.name
                )
            });
        Some(compiled)
    }

    /// Remembers the schemas of `tools` (one page of a listing).
    pub(crate) fn remember(&self, tools: &[Tool]) {
        let compiled: Vec<_> = tools
            .iter()
            .map(|t| (t.name.clone(), Self::compile(t)))
            .collect();
        self.by_name
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(compiled);
    }

    /// Replaces everything with the schemas of a complete listing.
    pub(crate) fn replace(&self, tools: &[Tool]) {
        let compiled: HashMap<_, _> = tools
            .iter()
            .map(|t| (t.name.clone(), Self::compile(t)))
            .collect();
        *self.by_name.lock().unwrap_or_else(|p| p.into_inner()) = compiled;
    }

    /// Whether the tool was seen in a listing.
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.by_name
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(name)
    }

    /// Checks a successful result of tool `name`: with an output schema, it must carry
    /// `structuredContent` (any JSON value, `null` included) that fits the schema; with
    /// a schema the client cannot use, it is refused.
    pub(crate) fn check(&self, name: &str, result: &CallToolResult) -> Result<(), String> {
        if result.is_error() {
            return Ok(());
        }
        let schema = self
            .by_name
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
            .flatten();
        let Some(schema) = schema else {
            return Ok(());
        };
        let schema = schema?;
        let Some(structured) = &result.structured_content else {
            return Err(format!(
                "tool {name} has an outputSchema but its result has no structuredContent"
            ));
        };
        let instance = structured;
        let problems: Vec<String> = schema
            .0
            .iter_errors(instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{path}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the structuredContent of tool {name} does not match its outputSchema: {}",
                problems.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool_with_output(schema: Value) -> Tool {
        let mut tool = Tool::new("t", json!({"type": "object"}).as_object().unwrap().clone());
        tool.output_schema = schema.as_object().cloned();
        tool
    }

    #[test]
    fn structured_content_is_checked_unless_the_result_is_an_error() {
        let schemas = OutputSchemas::default();
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        schemas.remember(&[tool_with_output(schema)]);
        let good = CallToolResult::new(vec![]).with_structured_content(json!({"n": 1}));
        assert!(schemas.check("t", &good).is_ok());
        let bad = CallToolResult::new(vec![]).with_structured_content(json!({"n": "one"}));
        assert!(
            schemas
                .check("t", &bad)
                .unwrap_err()
                .contains("outputSchema")
        );
        assert!(
            schemas
                .check("t", &CallToolResult::text("no structure"))
                .is_err()
        );
        let error = CallToolResult::error("failed").with_structured_content(json!({"n": "one"}));
        assert!(schemas.check("t", &error).is_ok());
        assert!(schemas.check("unknown", &bad).is_ok());
    }

    #[test]
    fn a_schema_the_client_cannot_use_refuses_the_results() {
        let named = |name: &str, schema: Value| {
            let mut tool = tool_with_output(schema);
            tool.name = name.to_owned();
            tool
        };
        let schemas = OutputSchemas::default();
        schemas.remember(&[
            named(
                "odd",
                json!({"$schema": "https://example.com/dialect", "type": "object"}),
            ),
            named(
                "remote",
                json!({"properties": {"n": {"$ref": "https://example.com/n.json"}}}),
            ),
            named(
                "draft7",
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
            ),
        ]);
        let result = CallToolResult::new(vec![]).with_structured_content(json!({"n": 1}));
        let odd = schemas.check("odd", &result).unwrap_err();
        assert!(
            odd.contains("dialect") && odd.contains("example.com"),
            "{odd}"
        );
        let remote = schemas.check("remote", &result).unwrap_err();
        assert!(remote.contains("never fetched"), "{remote}");
        assert!(schemas.check("draft7", &result).is_ok());
    }
}
