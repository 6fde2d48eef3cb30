//! Client and server capabilities, exchanged during `initialize`.
//!
//! Capabilities are an open set: every object keeps keys this SDK does not know (in
//! `extra`), and the sub-objects the specification leaves open are kept as JSON objects.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::JsonObject;

/// Experimental, non-standard capabilities: name → open object.
pub type ExperimentalCapabilities = BTreeMap<String, JsonObject>;

/// `roots` client capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RootsCapability {
    /// Whether the client notifies when its roots change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `sampling` client capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingCapability {
    /// Present if the client supports `includeContext` other than `"none"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Present if the client supports `tools` and `toolChoice` in sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `elicitation` client capability. An empty object means form mode only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitationCapability {
    /// Present if the client supports form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// Present if the client supports URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationCapability {
    /// Whether form mode is supported (declared, or implied by an empty object).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// `tasks.requests.sampling` of the client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingTaskCapability {
    /// Present if `sampling/createMessage` may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_message: Option<JsonObject>,
}

/// `tasks.requests.elicitation` of the client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitationTaskCapability {
    /// Present if `elicitation/create` may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<JsonObject>,
}

/// `tasks.requests` of the client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientTaskRequestsCapability {
    /// Sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingTaskCapability>,
    /// Elicitation requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationTaskCapability>,
}

/// `tasks` client capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientTasksCapability {
    /// Present if the client supports `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// Present if the client supports `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// Which requests may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ClientTaskRequestsCapability>,
}

/// `tasks.requests.tools` of the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolsTaskCapability {
    /// Present if `tools/call` may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<JsonObject>,
}

/// `tasks.requests` of the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerTaskRequestsCapability {
    /// Tool requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsTaskCapability>,
}

/// `tasks` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerTasksCapability {
    /// Present if the server supports `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// Present if the server supports `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// Which requests may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ServerTaskRequestsCapability>,
}

/// Capabilities a client may support.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<ExperimentalCapabilities>,
    /// Present if the client can list roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Present if the client can sample an LLM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Present if the client supports elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Present if the client supports task-augmented requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ClientTasksCapability>,
    /// Extensions supported, by extension id (2026-07-28), each with its settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, JsonObject>>,
    /// Capabilities this SDK does not know.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ClientCapabilities {
    /// No capabilities.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares `roots`.
    #[must_use]
    pub fn with_roots(mut self, list_changed: bool) -> Self {
        self.roots = Some(RootsCapability {
            list_changed: Some(list_changed),
            extra: JsonObject::new(),
        });
        self
    }

    /// Declares `sampling` (without context inclusion or tools).
    #[must_use]
    pub fn with_sampling(mut self) -> Self {
        self.sampling.get_or_insert_with(Default::default);
        self
    }

    /// Declares `sampling.tools`.
    #[must_use]
    pub fn with_sampling_tools(mut self) -> Self {
        self.sampling.get_or_insert_with(Default::default).tools = Some(JsonObject::new());
        self
    }

    /// Declares `sampling.context`.
    #[must_use]
    pub fn with_sampling_context(mut self) -> Self {
        self.sampling.get_or_insert_with(Default::default).context = Some(JsonObject::new());
        self
    }

    /// Declares `elicitation.form`.
    #[must_use]
    pub fn with_elicitation_form(mut self) -> Self {
        self.elicitation.get_or_insert_with(Default::default).form = Some(JsonObject::new());
        self
    }

    /// Declares `elicitation.url`.
    #[must_use]
    pub fn with_elicitation_url(mut self) -> Self {
        self.elicitation.get_or_insert_with(Default::default).url = Some(JsonObject::new());
        self
    }

    crate::setters::setters! {
        with_tasks(tasks: impl Into<ClientTasksCapability>),
    }

    /// Declares the extension `id` (2026-07-28) with these settings.
    #[must_use]
    pub fn with_extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions
            .get_or_insert_with(BTreeMap::new)
            .insert(id.into(), settings);
        self
    }

    crate::setters::setters! {
        with_experimental(experimental: impl Into<ExperimentalCapabilities>),
    }
}

/// `prompts` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptsCapability {
    /// Whether the server notifies when its prompts change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `resources` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourcesCapability {
    /// Whether clients may subscribe to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server notifies when its resources change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `tools` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolsCapability {
    /// Whether the server notifies when its tools change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Capabilities a server may support.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<ExperimentalCapabilities>,
    /// Present if the server sends log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Present if the server offers argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Present if the server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Present if the server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Present if the server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Present if the server supports task-augmented requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ServerTasksCapability>,
    /// Extensions supported, by extension id (2026-07-28), each with its settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, JsonObject>>,
    /// Capabilities this SDK does not know.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ServerCapabilities {
    /// No capabilities.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares `tools`.
    #[must_use]
    pub fn with_tools(mut self, list_changed: bool) -> Self {
        self.tools = Some(ToolsCapability {
            list_changed: Some(list_changed),
            extra: JsonObject::new(),
        });
        self
    }

    /// Declares `prompts`.
    #[must_use]
    pub fn with_prompts(mut self, list_changed: bool) -> Self {
        self.prompts = Some(PromptsCapability {
            list_changed: Some(list_changed),
            extra: JsonObject::new(),
        });
        self
    }

    /// Declares `resources`.
    #[must_use]
    pub fn with_resources(mut self, subscribe: bool, list_changed: bool) -> Self {
        self.resources = Some(ResourcesCapability {
            subscribe: Some(subscribe),
            list_changed: Some(list_changed),
            extra: JsonObject::new(),
        });
        self
    }

    /// Declares `logging`.
    #[must_use]
    pub fn with_logging(mut self) -> Self {
        self.logging = Some(JsonObject::new());
        self
    }

    /// Declares `completions`.
    #[must_use]
    pub fn with_completions(mut self) -> Self {
        self.completions = Some(JsonObject::new());
        self
    }

    /// Declares `tasks` with `list`, `cancel` and task-augmented `tools/call`.
    #[must_use]
    pub fn with_tool_tasks(mut self) -> Self {
        self.tasks = Some(ServerTasksCapability {
            list: Some(JsonObject::new()),
            cancel: Some(JsonObject::new()),
            requests: Some(ServerTaskRequestsCapability {
                tools: Some(ToolsTaskCapability {
                    call: Some(JsonObject::new()),
                }),
            }),
        });
        self
    }

    crate::setters::setters! {
        with_tasks(tasks: impl Into<ServerTasksCapability>),
    }

    /// Declares the extension `id` (2026-07-28) with these settings.
    #[must_use]
    pub fn with_extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions
            .get_or_insert_with(BTreeMap::new)
            .insert(id.into(), settings);
        self
    }

    crate::setters::setters! {
        with_experimental(experimental: impl Into<ExperimentalCapabilities>),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn capabilities_keep_unknown_keys() {
        let v = json!({
            "experimental": {"x": {"a": 1}},
            "roots": {"listChanged": true, "future": 1},
            "elicitation": {},
            "sampling": {"tools": {}},
            "tasks": {"list": {}, "requests": {"sampling": {"createMessage": {}}}},
            "brandNew": {"k": [1]}
        });
        let c: ClientCapabilities = serde_json::from_value(v.clone()).unwrap();
        assert!(c.elicitation.as_ref().unwrap().supports_form());
        assert!(!c.elicitation.as_ref().unwrap().supports_url());
        assert_eq!(serde_json::to_value(&c).unwrap(), v);
    }

    #[test]
    fn server_builder() {
        let s = ServerCapabilities::new()
            .with_tools(true)
            .with_resources(true, false)
            .with_logging();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"tools": {"listChanged": true},
                   "resources": {"subscribe": true, "listChanged": false},
                   "logging": {}})
        );
    }
}
