//! Sampling: `sampling/createMessage` (server asks the client to call an LLM), with
//! tools and tool choice (2025-11-25).

use serde::Deserialize;
use serde::de::Deserializer;
use serde_json::Value;

use crate::base::JsonObject;
use crate::base::TaskMetadata;
use crate::content::{Role, SamplingMessageContentBlock};
use crate::tool_definition::Tool;

crate::envelope::requests! {
    /// Asks the client to sample an LLM.
    CreateMessageRequest = CreateMessage("sampling/createMessage", required CreateMessageRequestParams) -> CreateMessageResult;
}

crate::open_enum::open_enum! {
    /// Which servers' context to include in a sampling prompt (`includeContext`).
    pub enum IncludeContext {
        /// No context (the default).
        None = "none",
        /// The requesting server's context (soft-deprecated; needs `sampling.context`).
        ThisServer = "thisServer",
        /// Every server's context (soft-deprecated; needs `sampling.context`).
        AllServers = "allServers",
    }

    /// Why sampling stopped: an open string with these standard values.
    pub enum StopReason {
        /// The assistant's turn ended naturally.
        EndTurn = "endTurn",
        /// A stop sequence was met.
        StopSequence = "stopSequence",
        /// The token limit was reached.
        MaxTokens = "maxTokens",
        /// The model wants to use tools.
        ToolUse = "toolUse",
    }

    /// How the model may use tools (`toolChoice.mode`).
    pub enum ToolChoiceMode {
        /// The model decides (the default).
        Auto = "auto",
        /// The model must use at least one tool.
        Required = "required",
        /// The model must not use tools.
        None = "none",
    }
}

crate::setters::wire_struct! {
    /// Controls tool use in sampling.
    #[derive(Default)]
    pub struct ToolChoice {
        /// The mode (`auto` when absent).
        mode?: ToolChoiceMode,
    }
    /// A choice with this mode.
    pub fn new(mode: ToolChoiceMode) -> Self {
        Self { mode: Some(mode) }
    }
}

crate::setters::wire_struct! {
    /// A hint for model selection. Keys other than `name` are kept for the client to
    /// interpret.
    #[derive(Default)]
    pub struct ModelHint {
        /// A (sub)string of a model name.
        name?: String,
        ..
        /// Other keys.
        extra,
    }
    /// A hint naming a model.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            extra: JsonObject::new(),
        }
    }
}

crate::setters::wire_struct! {
    /// The server's (advisory) model preferences; priorities are 0 to 1.
    #[derive(Default)]
    pub struct ModelPreferences {
        /// Hints, evaluated in order.
        hints?: Vec<ModelHint> => with_hints,
        /// How much cost matters.
        cost_priority?: f64 => with_cost_priority,
        /// How much speed matters.
        speed_priority?: f64 => with_speed_priority,
        /// How much capability matters.
        intelligence_priority?: f64 => with_intelligence_priority,
    }
    /// No preferences.
    pub fn new() -> Self {
        Self::default()
    }
}

crate::setters::untagged_union! {
    /// The content of a sampling message: one block, or (2025-11-25) an array of blocks.
    /// Earlier revisions only use the single form.
    #[derive(Debug, Clone, PartialEq)]
    pub enum SamplingContent {
        /// One block.
        Single(SamplingMessageContentBlock),
        /// Several blocks.
        Multiple(Vec<SamplingMessageContentBlock>),
    }
}

impl SamplingContent {
    /// The blocks, whichever the form.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            Self::Single(b) => std::slice::from_ref(b),
            Self::Multiple(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(deserializer)? {
            Value::Array(items) => items
                .into_iter()
                .map(serde_json::from_value)
                .collect::<Result<Vec<_>, _>>()
                .map(Self::Multiple)
                .map_err(D::Error::custom),
            other => serde_json::from_value(other)
                .map(Self::Single)
                .map_err(D::Error::custom),
        }
    }
}

crate::setters::wire_struct! {
    /// A message sent to or received from an LLM.
    pub struct SamplingMessage {
        /// Who speaks.
        pub role: Role,
        /// The content.
        pub content: SamplingContent,
        meta => with_meta,
    }
    /// A message.
    new(role: Role, content: impl Into<SamplingContent>);

    crate::content::text_messages!(SamplingMessageContentBlock);
}

crate::setters::wire_struct! {
    /// Parameters of `sampling/createMessage`.
    pub struct CreateMessageRequestParams {
        meta => with_meta,
        /// When present, asks for task-augmented execution.
        task?: TaskMetadata => with_task,
        /// The conversation.
        pub messages: Vec<SamplingMessage>,
        /// Model preferences.
        model_preferences?: ModelPreferences => with_model_preferences,
        /// A system prompt.
        system_prompt?: String => with_system_prompt,
        /// Context to include.
        include_context?: IncludeContext => with_include_context,
        /// Sampling temperature.
        temperature?: f64 => with_temperature,
        /// The maximum number of tokens to sample.
        pub max_tokens: u64,
        /// Stop sequences.
        stop_sequences?: Vec<String> => with_stop_sequences,
        /// Provider-specific metadata.
        metadata?: JsonObject => with_metadata,
        /// Tools the model may use (needs the client's `sampling.tools`).
        tools?: Vec<Tool> => with_tools,
        /// How the model may use tools.
        tool_choice?: ToolChoice => with_tool_choice,
    }
    /// Parameters sampling at most `max_tokens` after `messages`.
    new(messages: Vec<SamplingMessage>, max_tokens: u64);

    /// Checks the spec's rules for tools in the conversation: a message holding tool
    /// results holds nothing else, and every tool use is the assistant's and is
    /// answered, by id, in the user message right after it. The error names the first
    /// message that breaks one (both roles check: a server before it asks, a client
    /// before its callback sees the request).
    ///
    /// ```
    /// use modelctx_types::{
    ///     CreateMessageRequestParams, Role, SamplingMessage, SamplingMessageContentBlock,
    ///     ToolUseContent,
    /// };
    ///
    /// let call = ToolUseContent::new("a", "weather", Default::default());
    /// let uses = SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::from(call));
    /// let params = CreateMessageRequestParams::new(vec![uses], 100);
    /// assert!(params.check_tool_messages().unwrap_err().contains("no tool result"));
    /// ```
    pub fn check_tool_messages(&self) -> Result<(), String> {
        let messages = &self.messages;
        for (i, message) in messages.iter().enumerate() {
            let blocks = message.content.blocks();
            let results = blocks
                .iter()
                .filter(|b| matches!(b, SamplingMessageContentBlock::ToolResult(_)))
                .count();
            if results > 0 && results < blocks.len() {
                return Err(format!("message {i} mixes tool results with other content"));
            }
            let uses: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    SamplingMessageContentBlock::ToolUse(u) => Some(u.id.as_str()),
                    _ => None,
                })
                .collect();
            if uses.is_empty() {
                continue;
            }
            if message.role != Role::Assistant {
                return Err(format!(
                    "message {i} holds tool use but is not the assistant's"
                ));
            }
            let answered: Vec<&str> = messages
                .get(i + 1)
                .filter(|next| next.role == Role::User)
                .map(|next| {
                    next.content
                        .blocks()
                        .iter()
                        .filter_map(|b| match b {
                            SamplingMessageContentBlock::ToolResult(r) => {
                                Some(r.tool_use_id.as_str())
                            }
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            if let Some(id) = uses.iter().find(|id| !answered.contains(id)) {
                return Err(format!(
                    "tool use {id:?} (message {i}) has no tool result in the user message after it"
                ));
            }
        }
        Ok(())
    }
}

crate::setters::wire_struct! {
    /// The client's answer to `sampling/createMessage`.
    pub struct CreateMessageResult {
        meta => with_meta,
        /// Who speaks (normally the assistant).
        pub role: Role,
        /// The sampled content.
        pub content: SamplingContent,
        /// The model that generated it.
        pub model: String,
        /// Why sampling stopped.
        stop_reason?: StopReason => with_stop_reason,
    }
    /// A result.
    new(role: Role, content: impl Into<SamplingContent>, model: impl Into<String>);

    /// An assistant text answer.
    pub fn assistant_text(text: impl Into<String>, model: impl Into<String>) -> Self {
        Self::new(
            Role::Assistant,
            SamplingMessageContentBlock::text(text),
            model,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_single_or_array_and_open_strings() {
        let r: CreateMessageResult = serde_json::from_value(json!({
            "role": "assistant", "model": "m", "stopReason": "safety",
            "content": [{"type": "tool_use", "id": "u", "name": "t", "input": {}},
                        {"type": "text", "text": "x"}]
        }))
        .unwrap();
        assert_eq!(r.content.blocks().len(), 2);
        assert_eq!(r.stop_reason, Some(StopReason::Unknown("safety".into())));
        let single =
            CreateMessageResult::assistant_text("hi", "m").with_stop_reason(StopReason::EndTurn);
        assert_eq!(
            serde_json::to_value(&single).unwrap(),
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"},
                   "model": "m", "stopReason": "endTurn"})
        );
        let p: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [], "maxTokens": 10, "includeContext": "otherServers",
            "toolChoice": {"mode": "required"}
        }))
        .unwrap();
        assert_eq!(
            p.include_context,
            Some(IncludeContext::Unknown("otherServers".into()))
        );
        assert!(
            serde_json::from_value::<CreateMessageRequestParams>(json!({"messages": []})).is_err()
        );
    }

    #[test]
    fn tool_messages_must_balance_and_not_mix() {
        use crate::{ToolResultContent, ToolUseContent};
        let tool_use = |id: &str| -> SamplingMessageContentBlock {
            ToolUseContent::new(id, "t", JsonObject::new()).into()
        };
        let tool_result =
            |id: &str| -> SamplingMessageContentBlock { ToolResultContent::new(id, vec![]).into() };
        let check = |messages: &[SamplingMessage]| {
            CreateMessageRequestParams::new(messages.to_vec(), 10).check_tool_messages()
        };
        let ask = SamplingMessage::user_text("go");
        let uses = SamplingMessage::new(Role::Assistant, vec![tool_use("a"), tool_use("b")]);
        let both = SamplingMessage::new(Role::User, vec![tool_result("a"), tool_result("b")]);
        check(&[ask.clone(), uses.clone(), both]).unwrap();
        let one = SamplingMessage::new(Role::User, tool_result("a"));
        let missing = check(&[ask.clone(), uses.clone(), one]).unwrap_err();
        assert!(
            missing.contains("\"b\"") && missing.contains("message 1"),
            "{missing}"
        );
        assert!(check(&[ask.clone(), uses.clone()]).is_err());
        let not_assistant = SamplingMessage::new(Role::User, tool_use("a"));
        assert!(
            check(&[not_assistant])
                .unwrap_err()
                .contains("not the assistant's")
        );
        let mixed = SamplingMessage::new(
            Role::User,
            vec![SamplingMessageContentBlock::text("x"), tool_result("a")],
        );
        assert!(check(&[mixed]).unwrap_err().contains("mixes"));
    }
}
