//! Client-side validation of a tool's `structuredContent` against the `outputSchema`
//! the tool advertised (jsonschema, local references only: a `$ref` is never fetched).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use modelctx_types::{CallToolResult, Tool};
use serde_json::Value;

/// One compiled output schema.
pub(crate) struct Compiled(jsonschema::Validator);

/// The output schemas of the tools the client listed, by name: `Some` when the tool has
/// a schema that compiles, `None` when it has none (or one we cannot compile without
/// fetching, which we never do — that tool's results go unchecked).
#[derive(Default)]
pub(crate) struct OutputSchemas {
    by_name: Mutex<HashMap<String, Option<Arc<Compiled>>>>,
}

impl OutputSchemas {
    fn compile(tool: &Tool) -> Option<Arc<Compiled>> {
        let schema = Value::Object(tool.output_schema.clone()?);
        jsonschema::options()
            .build(&schema)
            .ok()
            .map(|v| Arc::new(Compiled(v)))
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
    /// `structuredContent` that fits the schema.
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
}
