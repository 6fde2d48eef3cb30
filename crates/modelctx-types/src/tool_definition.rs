//! One tool as a server lists it: its name, schemas, annotations and execution hints.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use crate::base::JsonObject;
use crate::lifecycle::Icon;

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

crate::open_enum::open_enum! {
    /// Whether a tool supports task-augmented execution.
    pub enum TaskSupport {
        /// Never (the default when absent).
        Forbidden = "forbidden",
        /// The client may ask for a task.
        Optional = "optional",
        /// The client must ask for a task.
        Required = "required",
    }
}

crate::setters::optional_members! {
    /// Execution-related properties of a tool.
    pub struct ToolExecution {
        /// Task support (`forbidden` when absent).
        with_task_support(task_support: impl Into<TaskSupport>),
    }
    /// No execution properties.
    new;
}

crate::setters::optional_members! {
    /// Hints describing a tool's behaviour. Untrusted unless the server is trusted.
    pub struct ToolAnnotations {
        /// A human-readable title.
        with_title(title: impl Into<String>),
        /// The tool does not modify its environment (default false).
        with_read_only_hint(read_only_hint: impl Into<bool>),
        /// The tool may perform destructive updates (default true).
        with_destructive_hint(destructive_hint: impl Into<bool>),
        /// Repeated calls with the same arguments have no further effect (default false).
        with_idempotent_hint(idempotent_hint: impl Into<bool>),
        /// The tool interacts with an open world of external entities (default true).
        with_open_world_hint(open_world_hint: impl Into<bool>),
    }
    /// No hints.
    new;
}

crate::setters::wire_struct! {
    /// A tool the client can call.
    ///
    /// `input_schema` and `output_schema` are kept as JSON objects, so every JSON Schema
    /// keyword (`$schema`, `$defs`, `additionalProperties`, ...) survives a round trip; on
    /// input the `type` of `input_schema` must be `"object"` (every revision says so).
    pub struct Tool {
        /// The programmatic name.
        pub name: String,
        /// A human-readable title.
        title?: String => with_title,
        /// What the tool does.
        description?: String => with_description,
        /// JSON Schema of the arguments (2020-12 unless `$schema` says otherwise).
        #[serde(deserialize_with = "object_schema")]
        pub input_schema: JsonObject,
        /// Execution properties.
        execution?: ToolExecution => with_execution,
        /// JSON Schema of `structuredContent` in results. Up to 2025-11-25 its `type` was
        /// `"object"`; from 2026-07-28 it may be any JSON Schema 2020-12 object (SEP-2106),
        /// so any object is read.
        output_schema?: JsonObject => with_output_schema,
        /// Behaviour hints.
        annotations?: ToolAnnotations => with_annotations,
        /// Icons.
        icons?: Vec<Icon> => with_icons,
        meta => with_meta,
    }
    /// A tool with a name and an input schema (a JSON object with `"type": "object"`).
    new(name: impl Into<String>, input_schema: JsonObject);

    /// A tool taking no arguments: `{"type":"object","additionalProperties":false}`.
    pub fn without_arguments(name: impl Into<String>) -> Self {
        let mut schema = JsonObject::new();
        schema.insert("type".to_owned(), Value::from("object"));
        schema.insert("additionalProperties".to_owned(), Value::Bool(false));
        Self::new(name, schema)
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
