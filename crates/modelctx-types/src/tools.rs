//! Tools: `tools/list`, `tools/call` and `notifications/tools/list_changed`.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::ResultType;
use crate::base::{JsonObject, NotificationParams, PaginatedRequestParams};
use crate::common::Meta;
use crate::content::ContentBlock;
use crate::lifecycle::Icon;
use crate::mrtr::InputResponses;
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

/// Whether a tool supports task-augmented execution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never (the default when absent).
    Forbidden,
    /// The client may ask for a task.
    Optional,
    /// The client must ask for a task.
    Required,
    /// A value this SDK does not know, kept verbatim.
    Unknown(String),
}

impl TaskSupport {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
            Self::Unknown(s) => s,
        }
    }
}

impl fmt::Display for TaskSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for TaskSupport {
    fn from(s: &str) -> Self {
        match s {
            "forbidden" => Self::Forbidden,
            "optional" => Self::Optional,
            "required" => Self::Required,
            other => Self::Unknown(other.to_owned()),
        }
    }
}

impl From<String> for TaskSupport {
    fn from(s: String) -> Self {
        match s.as_str() {
            "forbidden" => Self::Forbidden,
            "optional" => Self::Optional,
            "required" => Self::Required,
            _ => Self::Unknown(s),
        }
    }
}

impl Serialize for TaskSupport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskSupport {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
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

    crate::setters::setters! {
        with_task_support(task_support: impl Into<TaskSupport>),
    }
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

    crate::setters::setters! {
        with_title(title: impl Into<String>),
        with_read_only_hint(read_only_hint: impl Into<bool>),
        with_destructive_hint(destructive_hint: impl Into<bool>),
        with_idempotent_hint(idempotent_hint: impl Into<bool>),
        with_open_world_hint(open_world_hint: impl Into<bool>),
    }
}

/// A tool the client can call.
///
/// `input_schema` and `output_schema` are kept as JSON objects, so every JSON Schema
/// keyword (`$schema`, `$defs`, `additionalProperties`, ...) survives a round trip; on
/// input the `type` of `input_schema` must be `"object"` (every revision says so).
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
    /// JSON Schema of `structuredContent` in results. Up to 2025-11-25 its `type` was
    /// `"object"`; from 2026-07-28 it may be any JSON Schema 2020-12 object (SEP-2106),
    /// so any object is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

    crate::setters::setters! {
        with_title(title: impl Into<String>),
        with_description(description: impl Into<String>),
        with_execution(execution: impl Into<ToolExecution>),
        with_output_schema(output_schema: impl Into<JsonObject>),
        with_annotations(annotations: impl Into<ToolAnnotations>),
        with_icons(icons: impl Into<Vec<Icon>>),
        with_meta(meta: impl Into<Meta>),
    }

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

crate::envelope::requests! {
    /// Lists the server's tools (paginated).
    ListToolsRequest = ListTools("tools/list", optional PaginatedRequestParams) -> ListToolsResult, meta |p| p.as_mut().map(|p| &mut p.meta);
}

crate::cache::list_result!(ListToolsResult("tools/list") { tools: Tool } "tools");

/// Parameters of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The client's answers to the input requests of an earlier `InputRequiredResult`,
    /// by key (2026-07-28, multi round-trip requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque `requestState` of an earlier `InputRequiredResult`, echoed back
    /// (2026-07-28, multi round-trip requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
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
            input_responses: None,
            request_state: None,
            task: None,
            name: name.into(),
            arguments: None,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_task(task: impl Into<TaskMetadata>),
        with_arguments(arguments: impl Into<JsonObject>),
        with_input_responses(input_responses: impl Into<InputResponses>) "2026-07-28",
        with_request_state(request_state: impl Into<String>) "2026-07-28",
    }
}

crate::envelope::requests! {
    /// Calls a tool.
    CallToolRequest = CallTool("tools/call", required CallToolRequestParams) -> CallToolResult, meta |p| Some(&mut p.meta);
}

/// The result of a tool call. Tool failures (including invalid arguments) are results
/// with `isError: true`, not protocol errors.
///
/// `structuredContent` is an object up to 2025-11-25 and any JSON value from 2026-07-28
/// (SEP-2106), so it is kept as a [`Value`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result (2026-07-28; absent before, which means complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result, conforming to the tool's `outputSchema`: a JSON object up
    /// to 2025-11-25, any JSON value from 2026-07-28 (`null` included: kept as
    /// `Some(Value::Null)`).
    #[serde(
        default,
        deserialize_with = "crate::common::null_is_a_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the call failed (false when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl CallToolResult {
    /// A successful result with this content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            meta: None,
            result_type: None,
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

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
    }

    /// Sets `structured_content`: a JSON object (a [`JsonObject`] or an object
    /// [`Value`]) for every revision; any other value only for 2026-07-28 clients.
    #[must_use]
    pub fn with_structured_content(mut self, structured_content: impl Into<Value>) -> Self {
        self.structured_content = Some(structured_content.into());
        self
    }

    crate::setters::setters! {
        with_is_error(is_error: impl Into<bool>),
        with_result_type(result_type: impl Into<ResultType>) "2026-07-28",
    }
}

crate::envelope::notifications! {
    /// Tells the client the tool list changed.
    ToolListChangedNotification = ToolListChanged("notifications/tools/list_changed", optional NotificationParams);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestMethod;
    use serde_json::json;

    /// Found by the property tests (issue 25, `tests/schema/properties.rs`, a deep run):
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
