//! Prompts: `prompts/list`, `prompts/get` and `notifications/prompts/list_changed`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::ResultType;
use crate::base::{NotificationParams, PaginatedRequestParams};
use crate::cache::CacheScope;
use crate::common::{Cursor, Meta};
use crate::content::{ContentBlock, Role};
use crate::lifecycle::Icon;
use crate::mrtr::InputResponses;

/// An argument a prompt accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl PromptArgument {
    /// An argument named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            required: None,
        }
    }

    /// Sets `title`.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `required`.
    #[must_use]
    pub fn with_required(mut self, required: impl Into<bool>) -> Self {
        self.required = Some(required.into());
        self
    }
}

/// A prompt or prompt template the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments for templating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Prompt {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            arguments: None,
            icons: None,
            meta: None,
        }
    }

    /// Sets `title`.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `arguments`.
    #[must_use]
    pub fn with_arguments(mut self, arguments: impl Into<Vec<PromptArgument>>) -> Self {
        self.arguments = Some(arguments.into());
        self
    }

    /// Sets `icons`.
    #[must_use]
    pub fn with_icons(mut self, icons: impl Into<Vec<Icon>>) -> Self {
        self.icons = Some(icons.into());
        self
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }
}

crate::envelope::requests! {
    /// Lists the server's prompts (paginated).
    ListPromptsRequest = ListPrompts("prompts/list", optional PaginatedRequestParams) -> ListPromptsResult, meta |p| p.as_mut().map(|p| &mut p.meta);
}

/// The answer to `prompts/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListPromptsResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result (2026-07-28; absent before, which means complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// How long the client may cache this result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache this result: one authorization context or anyone (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Present when there may be more prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// The prompts.
    pub prompts: Vec<Prompt>,
}

impl ListPromptsResult {
    /// A page of prompts.
    pub fn new(prompts: Vec<Prompt>) -> Self {
        Self {
            meta: None,
            result_type: None,
            ttl_ms: None,
            cache_scope: None,
            next_cursor: None,
            prompts,
        }
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }

    /// Sets `next_cursor`.
    #[must_use]
    pub fn with_next_cursor(mut self, next_cursor: impl Into<Cursor>) -> Self {
        self.next_cursor = Some(next_cursor.into());
        self
    }

    /// Sets `result_type` (2026-07-28).
    #[must_use]
    pub fn with_result_type(mut self, result_type: impl Into<ResultType>) -> Self {
        self.result_type = Some(result_type.into());
        self
    }

    /// Sets `ttl_ms` (2026-07-28).
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Sets `cache_scope` (2026-07-28).
    #[must_use]
    pub fn with_cache_scope(mut self, cache_scope: impl Into<CacheScope>) -> Self {
        self.cache_scope = Some(cache_scope.into());
        self
    }
}

/// Parameters of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptRequestParams {
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
    /// The prompt's name.
    pub name: String,
    /// Template arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

impl GetPromptRequestParams {
    /// Parameters asking for `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            meta: None,
            input_responses: None,
            request_state: None,
            name: name.into(),
            arguments: None,
        }
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }

    /// Sets `arguments`.
    #[must_use]
    pub fn with_arguments(mut self, arguments: impl Into<BTreeMap<String, String>>) -> Self {
        self.arguments = Some(arguments.into());
        self
    }

    /// Adds one argument.
    #[must_use]
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }

    /// Sets `input_responses` (2026-07-28).
    #[must_use]
    pub fn with_input_responses(mut self, input_responses: impl Into<InputResponses>) -> Self {
        self.input_responses = Some(input_responses.into());
        self
    }

    /// Sets `request_state` (2026-07-28).
    #[must_use]
    pub fn with_request_state(mut self, request_state: impl Into<String>) -> Self {
        self.request_state = Some(request_state.into());
        self
    }
}

crate::envelope::requests! {
    /// Gets a prompt, filled in with arguments.
    GetPromptRequest = GetPrompt("prompts/get", required GetPromptRequestParams) -> GetPromptResult, meta |p| Some(&mut p.meta);
}

/// A message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// The content.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A message.
    pub fn new(role: Role, content: impl Into<ContentBlock>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }

    /// A user message with text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, ContentBlock::text(text))
    }

    /// An assistant message with text.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, ContentBlock::text(text))
    }
}

/// The answer to `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result (2026-07-28; absent before, which means complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// A description of the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl GetPromptResult {
    /// A result with these messages.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self {
            meta: None,
            result_type: None,
            description: None,
            messages,
        }
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }

    /// Sets `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `result_type` (2026-07-28).
    #[must_use]
    pub fn with_result_type(mut self, result_type: impl Into<ResultType>) -> Self {
        self.result_type = Some(result_type.into());
        self
    }
}

crate::envelope::notifications! {
    /// Tells the client the prompt list changed.
    PromptListChangedNotification = PromptListChanged("notifications/prompts/list_changed", optional NotificationParams);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompt_result_round_trip() {
        let r = GetPromptResult::new(vec![PromptMessage::user_text("hi")]).with_description("d");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            json!({"description": "d", "messages": [{"role": "user",
                   "content": {"type": "text", "text": "hi"}}]})
        );
        assert_eq!(serde_json::from_value::<GetPromptResult>(v).unwrap(), r);
    }
}
