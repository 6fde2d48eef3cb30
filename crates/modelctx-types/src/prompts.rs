//! Prompts: `prompts/list`, `prompts/get` and `notifications/prompts/list_changed`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::ResultType;
use crate::base::{NotificationParams, PaginatedRequestParams};
use crate::common::Meta;
use crate::content::{ContentBlock, Role};
use crate::lifecycle::Icon;

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

    crate::setters::setters! {
        with_title(title: impl Into<String>),
        with_description(description: impl Into<String>),
        with_required(required: impl Into<bool>),
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

    crate::setters::setters! {
        with_title(title: impl Into<String>),
        with_description(description: impl Into<String>),
        with_arguments(arguments: impl Into<Vec<PromptArgument>>),
        with_icons(icons: impl Into<Vec<Icon>>),
        with_meta(meta: impl Into<Meta>),
    }
}

crate::envelope::requests! {
    /// Lists the server's prompts (paginated).
    ListPromptsRequest = ListPrompts("prompts/list", optional PaginatedRequestParams) -> ListPromptsResult, meta |p| p.as_mut().map(|p| &mut p.meta);
}

crate::cache::list_result!(ListPromptsResult("prompts/list") { prompts: Prompt } "prompts");

crate::mrtr::retryable_params! {
    /// Parameters of `prompts/get`.
    pub struct GetPromptRequestParams {
        /// The prompt's name.
        pub name: String,
        /// Template arguments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub arguments: Option<BTreeMap<String, String>>,
    }
    /// Parameters asking for `name` without arguments.
    pub fn new(name: impl Into<String>) {
        name: name.into(),
        arguments: None,
    }

    crate::setters::setters! {
        with_arguments(arguments: impl Into<BTreeMap<String, String>>),
    }

    /// Adds one argument.
    #[must_use]
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
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

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_description(description: impl Into<String>),
        with_result_type(result_type: impl Into<ResultType>) "2026-07-28",
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
