//! Tools: `tools/list`, `tools/call` and `notifications/tools/list_changed`.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::{JsonObject, NotificationParams, PaginatedRequestParams};
use crate::common::{Cursor, Meta};
use crate::content::ContentBlock;
use crate::lifecycle::Icon;
use crate::tasks::TaskMetadata;

/// Checks that a tool schema is an object whose `type` is `"object"`; every other key
/// (`$schema`, `$defs`, `additionalProperties`, ...) is kept untouched.
fn object_schema<'de, D: Deserializer<'de>>(deserializer: D) -> Result<JsonObject, D::Error> {
    let map = JsonObject::deserialize(deserializer)?;
    match map.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(map),
        _ => Err(de::Error::custom(
            "a tool schema must have \"type\": \"object\"",
        )),
    }
}

fn optional_object_schema<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<JsonObject>, D::Error> {
    object_schema(deserializer).map(Some)
}

open_enum! {
    /// Whether a tool supports task-augmented execution.
    TaskSupport {
        /// Never (the default when absent).
        Forbidden = "forbidden",
        /// The client may ask for a task.
        Optional = "optional",
        /// The client must ask for a task.
        Required = "required",
    }
}

/// Execution-related properties of a tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolExecution {
    /// Task support (`forbidden` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

impl ToolExecution {
    /// No execution properties.
    pub fn new() -> Self {
        Self::default()
    }

    with!(with_task_support => task_support: TaskSupport);
}

/// Hints describing a tool's behaviour. Untrusted unless the server is trusted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no further effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No hints.
    pub fn new() -> Self {
        Self::default()
    }

    with!(
        with_title => title: String,
        with_read_only_hint => read_only_hint: bool,
        with_destructive_hint => destructive_hint: bool,
        with_idempotent_hint => idempotent_hint: bool,
        with_open_world_hint => open_world_hint: bool,
    );
}

/// A tool the client can call.
///
/// `input_schema` and `output_schema` are kept as JSON objects, so every JSON Schema
/// keyword (`$schema`, `$defs`, `additionalProperties`, ...) survives a round trip; on
/// input their `type` must be `"object"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// The programmatic name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (2020-12 unless `$schema` says otherwise).
    #[serde(deserialize_with = "object_schema")]
    pub input_schema: JsonObject,
    /// Execution properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// JSON Schema of `structuredContent` in results.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_object_schema"
    )]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Tool {
    /// A tool with a name and an input schema (a JSON object with `"type": "object"`).
    pub fn new(name: impl Into<String>, input_schema: JsonObject) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            execution: None,
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// A tool taking no arguments: `{"type":"object","additionalProperties":false}`.
    pub fn without_arguments(name: impl Into<String>) -> Self {
        let mut schema = JsonObject::new();
        schema.insert("type".to_owned(), Value::from("object"));
        schema.insert("additionalProperties".to_owned(), Value::Bool(false));
        Self::new(name, schema)
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_execution => execution: ToolExecution,
        with_output_schema => output_schema: JsonObject,
        with_annotations => annotations: ToolAnnotations,
        with_icons => icons: Vec<Icon>,
        with_meta => meta: Meta,
    );

    /// The input schema's `$schema` dialect, if declared.
    pub fn input_schema_dialect(&self) -> Option<&str> {
        self.input_schema.get("$schema").and_then(Value::as_str)
    }

    /// The input schema's `properties`.
    pub fn input_properties(&self) -> Option<&JsonObject> {
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
    }

    /// The input schema's `required` names.
    pub fn input_required(&self) -> impl Iterator<Item = &str> {
        self.input_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }

    /// What to display: the title, else `annotations.title`, else the name.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.name)
    }

    /// The task support level (`forbidden` when absent).
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support.clone())
            .unwrap_or(TaskSupport::Forbidden)
    }
}

request! {
    /// Lists the server's tools (paginated).
    ListToolsRequest, ListToolsMethod = "tools/list",
    optional params: PaginatedRequestParams, result: ListToolsResult
}

/// The answer to `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Present when there may be more tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// The tools.
    pub tools: Vec<Tool>,
}

impl ListToolsResult {
    /// A page of tools.
    pub fn new(tools: Vec<Tool>) -> Self {
        Self {
            meta: None,
            next_cursor: None,
            tools,
        }
    }

    with!(with_meta => meta: Meta, with_next_cursor => next_cursor: Cursor);
}

/// Parameters of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// When present, asks for task-augmented execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// The tool to call.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
}

impl CallToolRequestParams {
    /// A call of `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            meta: None,
            task: None,
            name: name.into(),
            arguments: None,
        }
    }

    with!(
        with_meta => meta: Meta,
        with_task => task: TaskMetadata,
        with_arguments => arguments: JsonObject,
    );
}

request! {
    /// Calls a tool.
    CallToolRequest, CallToolMethod = "tools/call",
    params: CallToolRequestParams, result: CallToolResult
}

/// The result of a tool call. Tool failures (including invalid arguments) are results
/// with `isError: true`, not protocol errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result (conforming to the tool's `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<JsonObject>,
    /// Whether the call failed (false when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl CallToolResult {
    /// A successful result with this content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            meta: None,
            content,
            structured_content: None,
            is_error: None,
        }
    }

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

    with!(
        with_meta => meta: Meta,
        with_structured_content => structured_content: JsonObject,
        with_is_error => is_error: bool,
    );
}

notification! {
    /// Tells the client the tool list changed.
    ToolListChangedNotification, ToolListChangedMethod = "notifications/tools/list_changed",
    optional params: NotificationParams
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestMethod;
    use serde_json::json;

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
