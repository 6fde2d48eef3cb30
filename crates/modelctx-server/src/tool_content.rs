//! The values a tool function's output converts into a result ([`IntoToolResult`]):
//! content, a whole result, or structured output ([`Json`]).

use modelctx_types::{CallToolResult, ContentBlock, JsonObject};
#[cfg(feature = "schemars")]
use schemars::JsonSchema;
#[cfg(feature = "schemars")]
use serde::Serialize;
#[cfg(feature = "schemars")]
use serde_json::Value;

#[cfg(feature = "schemars")]
use crate::schema::schema_of;

/// What a tool function may return.
///
/// Content (`String`, `&'static str`, [`ContentBlock`], `Vec<ContentBlock>`) becomes the
/// result's `content`; a whole [`CallToolResult`] is sent as is; `Json` (feature
/// `schemars`) is structured output: its type's schema is the tool's `outputSchema` and
/// the value goes into
/// `structuredContent`, mirrored as JSON text in `content`.
pub trait IntoToolResult: Send + 'static {
    /// The JSON Schema of the structured output, if the type has one.
    fn output_schema() -> Option<JsonObject> {
        None
    }

    /// Converts the value; `wrap` says the output schema is not an object schema, so
    /// the value goes under a `result` key. An `Err` becomes an `isError` result.
    fn into_tool_result(self, wrap: bool) -> Result<CallToolResult, String>;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        Ok(CallToolResult::new(vec![self]))
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        Ok(CallToolResult::new(self))
    }
}

/// Structured tool output: `T`'s JSON Schema becomes the tool's `outputSchema` (wrapped
/// as `{"result": ...}` when `T` is not an object type), the value its
/// `structuredContent`, and its JSON text a `text` block of `content`. Needs feature
/// `schemars`.
#[cfg(feature = "schemars")]
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

#[cfg(feature = "schemars")]
impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Json<T> {
    fn output_schema() -> Option<JsonObject> {
        Some(schema_of::<T>())
    }

    fn into_tool_result(self, wrap: bool) -> Result<CallToolResult, String> {
        let value = serde_json::to_value(&self.0)
            .map_err(|e| format!("cannot serialise the tool's result: {e}"))?;
        let structured = match value {
            Value::Object(map) if !wrap => map,
            other => {
                let mut map = JsonObject::new();
                map.insert("result".to_owned(), other);
                map
            }
        };
        Ok(structured_result(structured))
    }
}

/// A result carrying `structured` plus its JSON text as the one content block.
#[cfg(feature = "schemars")]
pub(crate) fn structured_result(structured: JsonObject) -> CallToolResult {
    let text = Value::Object(structured.clone()).to_string();
    CallToolResult::new(vec![ContentBlock::text(text)]).with_structured_content(structured)
}

#[cfg(all(test, feature = "schemars"))]
mod tests {
    use super::*;

    #[test]
    fn json_output_wraps_non_objects() {
        let wrapped = Json(vec![1, 2]).into_tool_result(true).unwrap();
        let structured = wrapped.structured_content.unwrap();
        assert_eq!(structured.clone(), serde_json::json!({"result": [1, 2]}));
        assert_eq!(wrapped.content[0].as_text(), Some(r#"{"result":[1,2]}"#));
    }
}
