//! Tools: `tools/list`, `tools/call` and `notifications/tools/list_changed`.

use serde_json::Value;

use crate::base::ResultType;
use crate::base::TaskMetadata;
use crate::base::{JsonObject, NotificationParams, PaginatedRequestParams};
use crate::content::ContentBlock;
use crate::tool_definition::Tool;

crate::envelope::requests! {
    /// Lists the server's tools (paginated).
    ListToolsRequest = ListTools("tools/list", optional PaginatedRequestParams) -> ListToolsResult, meta |p| p.as_mut().map(|p| &mut p.meta);
    /// Calls a tool.
    CallToolRequest = CallTool("tools/call", required CallToolRequestParams) -> CallToolResult, meta |p| Some(&mut p.meta);
}

crate::envelope::notifications! {
    /// Tells the client the tool list changed.
    ToolListChangedNotification = ToolListChanged("notifications/tools/list_changed", optional NotificationParams);
}

crate::cache::list_result!(ListToolsResult("tools/list") { tools: Tool } "tools");

crate::mrtr::retryable_params! {
    /// Parameters of `tools/call`.
    pub struct CallToolRequestParams {
        /// When present, asks for task-augmented execution.
        task?: TaskMetadata => with_task,
        /// The tool to call.
        pub name: String,
        /// The arguments.
        arguments?: JsonObject => with_arguments,
    }
    /// A call of `name` without arguments.
    new(name: impl Into<String>);
}

crate::setters::wire_struct! {
    /// The result of a tool call. Tool failures (including invalid arguments) are results
    /// with `isError: true`, not protocol errors.
    ///
    /// `structuredContent` is an object up to 2025-11-25 and any JSON value from 2026-07-28
    /// (SEP-2106), so it is kept as a [`Value`].
    pub struct CallToolResult {
        meta => with_meta,
        /// The kind of result (2026-07-28; absent before, which means complete).
        result_type?: ResultType => with_result_type "2026-07-28",
        /// The unstructured result.
        pub content: Vec<ContentBlock>,
        /// The structured result, conforming to the tool's `outputSchema`: a JSON object up
        /// to 2025-11-25, any JSON value from 2026-07-28 (`null` included: kept as
        /// `Some(Value::Null)`).
        #[serde(deserialize_with = "crate::common::null_is_a_value")]
        structured_content?: Value,
        /// Whether the call failed (false when absent).
        is_error?: bool => with_is_error,
    }
    /// A successful result with this content.
    new(content: Vec<ContentBlock>);

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A failed result (`isError: true`) with one text block describing the error.
    pub fn error(message: impl Into<String>) -> Self {
        Self::text(message).with_is_error(true)
    }

    /// A successful structured result; the JSON text is also given as a text block for
    /// clients that ignore `structuredContent`.
    pub fn structured(value: JsonObject) -> Self {
        let text = Value::Object(value.clone()).to_string();
        Self::text(text).with_structured_content(value)
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// Sets `structured_content`: a JSON object (a [`JsonObject`] or an object
    /// [`Value`]) for every revision; any other value only for 2026-07-28 clients.
    #[must_use]
    pub fn with_structured_content(mut self, structured_content: impl Into<Value>) -> Self {
        self.structured_content = Some(structured_content.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestMethod;
    use crate::tool_definition::TaskSupport;
    use serde_json::json;

    /// Found by the property tests (`tests/schema/properties.rs`, a deep run):
    /// a `"structuredContent": null` (any JSON value in 2026-07-28) was dropped.
    #[test]
    fn a_null_structured_result_survives_a_round_trip() {
        let text = r#"{"content":[],"structuredContent":null}"#;
        let result: CallToolResult = serde_json::from_str(text).unwrap();
        assert_eq!(result.structured_content, Some(Value::Null));
        assert_eq!(serde_json::to_string(&result).unwrap(), text);
        let absent: CallToolResult = serde_json::from_str(r#"{"content":[]}"#).unwrap();
        assert_eq!(absent.structured_content, None);
    }

    #[test]
    fn input_schema_round_trips_unchanged() {
        let v = json!({
            "name": "t",
            "inputSchema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "$defs": {"pos": {"type": "integer", "minimum": 0}},
                "properties": {"n": {"$ref": "#/$defs/pos"}, "deep": {"type": "object",
                    "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}},
                "required": ["n"],
                "additionalProperties": false
            },
            "outputSchema": {"type": "object", "additionalProperties": true}
        });
        let t: Tool = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            t.input_schema_dialect(),
            Some("http://json-schema.org/draft-07/schema#")
        );
        assert_eq!(t.input_required().collect::<Vec<_>>(), ["n"]);
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        let bad = json!({"name": "t", "inputSchema": {"type": "string"}});
        assert!(serde_json::from_value::<Tool>(bad).is_err());
        assert!(serde_json::from_value::<Tool>(json!({"name": "t"})).is_err());
    }

    #[test]
    fn call_tool_request_method_checked() {
        let v = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"a": 1}, "task": {"ttl": 60000}}});
        let r: CallToolRequest = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.params.task.as_ref().unwrap().ttl, Some(60000));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        let mut other = v;
        other["method"] = json!("tools/list");
        assert!(serde_json::from_value::<CallToolRequest>(other).is_err());
        fn check<R: RequestMethod<Params = CallToolRequestParams, Result = CallToolResult>>() {}
        check::<CallToolRequest>();
    }

    #[test]
    fn call_tool_result_helpers() {
        let e = CallToolResult::error("boom");
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
        );
        let mut m = JsonObject::new();
        m.insert("x".into(), json!(1));
        let s = CallToolResult::structured(m);
        assert_eq!(s.content[0].as_text(), Some(r#"{"x":1}"#));
        assert_eq!(
            Tool::without_arguments("n").task_support(),
            TaskSupport::Forbidden
        );
    }
}
