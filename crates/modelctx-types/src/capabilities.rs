//! Client and server capabilities, exchanged during `initialize`.
//!
//! Capabilities are an open set: every object keeps keys this SDK does not know (in
//! `extra`), and the sub-objects the specification leaves open are kept as JSON objects.

use std::collections::BTreeMap;

use crate::base::JsonObject;

/// Experimental, non-standard capabilities: name → open object.
pub type ExperimentalCapabilities = BTreeMap<String, JsonObject>;

/// Declares capability objects: each member optional (written only when set), the
/// object `Default` (no member); a last member after `..` is the flattened
/// [`JsonObject`] that keeps the keys this SDK does not know.
macro_rules! capabilities {
    ($(
        $(#[$doc:meta])*
        $name:ident {
            $($(#[$field_doc:meta])* $field:ident: $ty:ty,)*
            $(.. $(#[$extra_doc:meta])* $extra:ident,)?
        }
    )+) => {$(
        $crate::setters::wire_struct! {
            $(#[$doc])*
            #[derive(Default)]
            pub struct $name {
                $($(#[$field_doc])* $field?: $ty,)*
                $(.. $(#[$extra_doc])* $extra,)?
            }
        }
    )+};
}

capabilities! {
    /// `roots` client capability.
    RootsCapability {
        /// Whether the client notifies when its roots change.
        list_changed: bool,
        ..
        /// Other keys.
        extra,
    }

    /// `sampling` client capability.
    SamplingCapability {
        /// Present if the client supports `includeContext` other than `"none"`.
        context: JsonObject,
        /// Present if the client supports `tools` and `toolChoice` in sampling.
        tools: JsonObject,
        ..
        /// Other keys.
        extra,
    }

    /// `elicitation` client capability. An empty object means form mode only.
    ElicitationCapability {
        /// Present if the client supports form mode.
        form: JsonObject,
        /// Present if the client supports URL mode.
        url: JsonObject,
        ..
        /// Other keys.
        extra,
    }
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

capabilities! {
    /// `tasks.requests.sampling` of the client.
    SamplingTaskCapability {
        /// Present if `sampling/createMessage` may be task-augmented.
        create_message: JsonObject,
    }

    /// `tasks.requests.elicitation` of the client.
    ElicitationTaskCapability {
        /// Present if `elicitation/create` may be task-augmented.
        create: JsonObject,
    }

    /// `tasks.requests` of the client.
    ClientTaskRequestsCapability {
        /// Sampling requests.
        sampling: SamplingTaskCapability,
        /// Elicitation requests.
        elicitation: ElicitationTaskCapability,
    }

    /// `tasks` client capability.
    ClientTasksCapability {
        /// Present if the client supports `tasks/list`.
        list: JsonObject,
        /// Present if the client supports `tasks/cancel`.
        cancel: JsonObject,
        /// Which requests may be task-augmented.
        requests: ClientTaskRequestsCapability,
    }

    /// `tasks.requests.tools` of the server.
    ToolsTaskCapability {
        /// Present if `tools/call` may be task-augmented.
        call: JsonObject,
    }

    /// `tasks.requests` of the server.
    ServerTaskRequestsCapability {
        /// Tool requests.
        tools: ToolsTaskCapability,
    }

    /// `tasks` server capability.
    ServerTasksCapability {
        /// Present if the server supports `tasks/list`.
        list: JsonObject,
        /// Present if the server supports `tasks/cancel`.
        cancel: JsonObject,
        /// Which requests may be task-augmented.
        requests: ServerTaskRequestsCapability,
    }

    /// Capabilities a client may support.
    ClientCapabilities {
        /// Experimental, non-standard capabilities.
        experimental: ExperimentalCapabilities,
        /// Present if the client can list roots.
        roots: RootsCapability,
        /// Present if the client can sample an LLM.
        sampling: SamplingCapability,
        /// Present if the client supports elicitation.
        elicitation: ElicitationCapability,
        /// Present if the client supports task-augmented requests.
        tasks: ClientTasksCapability,
        /// Extensions supported, by extension id (2026-07-28), each with its settings.
        extensions: BTreeMap<String, JsonObject>,
        ..
        /// Capabilities this SDK does not know.
        extra,
    }
}

/// The methods [`ClientCapabilities`] and [`ServerCapabilities`] share: `new`, and the
/// setters of `tasks` (of type `$tasks`), `extensions` and `experimental`.
macro_rules! shared_methods {
    ($tasks:ty) => {
        /// No capabilities.
        pub fn new() -> Self {
            Self::default()
        }

        crate::setters::setters! {
            with_tasks(tasks: impl Into<$tasks>),
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
    };
}

impl ClientCapabilities {
    /// Declares `roots`.
    #[must_use]
    pub fn with_roots(mut self, list_changed: bool) -> Self {
        self.roots = Some(RootsCapability {
            list_changed: Some(list_changed),
            ..Default::default()
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

    shared_methods!(ClientTasksCapability);
}

capabilities! {
    /// `prompts` server capability.
    PromptsCapability {
        /// Whether the server notifies when its prompts change.
        list_changed: bool,
        ..
        /// Other keys.
        extra,
    }

    /// `resources` server capability.
    ResourcesCapability {
        /// Whether clients may subscribe to resource updates.
        subscribe: bool,
        /// Whether the server notifies when its resources change.
        list_changed: bool,
        ..
        /// Other keys.
        extra,
    }

    /// `tools` server capability.
    ToolsCapability {
        /// Whether the server notifies when its tools change.
        list_changed: bool,
        ..
        /// Other keys.
        extra,
    }

    /// Capabilities a server may support.
    ServerCapabilities {
        /// Experimental, non-standard capabilities.
        experimental: ExperimentalCapabilities,
        /// Present if the server sends log messages.
        logging: JsonObject,
        /// Present if the server offers argument completion.
        completions: JsonObject,
        /// Present if the server offers prompts.
        prompts: PromptsCapability,
        /// Present if the server offers resources.
        resources: ResourcesCapability,
        /// Present if the server offers tools.
        tools: ToolsCapability,
        /// Present if the server supports task-augmented requests.
        tasks: ServerTasksCapability,
        /// Extensions supported, by extension id (2026-07-28), each with its settings.
        extensions: BTreeMap<String, JsonObject>,
        ..
        /// Capabilities this SDK does not know.
        extra,
    }
}

impl ServerCapabilities {
    /// Declares `tools`.
    #[must_use]
    pub fn with_tools(mut self, list_changed: bool) -> Self {
        self.tools = Some(ToolsCapability {
            list_changed: Some(list_changed),
            ..Default::default()
        });
        self
    }

    /// Declares `prompts`.
    #[must_use]
    pub fn with_prompts(mut self, list_changed: bool) -> Self {
        self.prompts = Some(PromptsCapability {
            list_changed: Some(list_changed),
            ..Default::default()
        });
        self
    }

    /// Declares `resources`.
    #[must_use]
    pub fn with_resources(mut self, subscribe: bool, list_changed: bool) -> Self {
        self.resources = Some(ResourcesCapability {
            subscribe: Some(subscribe),
            list_changed: Some(list_changed),
            ..Default::default()
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

    shared_methods!(ServerTasksCapability);
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
