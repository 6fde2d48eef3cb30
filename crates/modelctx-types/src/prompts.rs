//! Prompts: `prompts/list`, `prompts/get` and `notifications/prompts/list_changed`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::{NotificationParams, PaginatedRequestParams};
use crate::common::{Cursor, Meta};
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

    with!(
        with_title => title: String,
        with_description => description: String,
        with_required => required: bool,
    );
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

    with!(
        with_title => title: String,
        with_description => description: String,
        with_arguments => arguments: Vec<PromptArgument>,
        with_icons => icons: Vec<Icon>,
        with_meta => meta: Meta,
    );
}

request! {
    /// Lists the server's prompts (paginated).
    ListPromptsRequest, ListPromptsMethod = "prompts/list",
    optional params: PaginatedRequestParams, result: ListPromptsResult
}

/// The answer to `prompts/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListPromptsResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
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
            next_cursor: None,
            prompts,
        }
    }

    with!(with_meta => meta: Meta, with_next_cursor => next_cursor: Cursor);
}

/// Parameters of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
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
            name: name.into(),
            arguments: None,
        }
    }

    with!(with_meta => meta: Meta, with_arguments => arguments: BTreeMap<String, String>);

    /// Adds one argument.
    #[must_use]
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }
}

request! {
    /// Gets a prompt, filled in with arguments.
    GetPromptRequest, GetPromptMethod = "prompts/get",
    params: GetPromptRequestParams, result: GetPromptResult
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
            description: None,
            messages,
        }
    }

    with!(with_meta => meta: Meta, with_description => description: String);
}

notification! {
    /// Tells the client the prompt list changed.
    PromptListChangedNotification, PromptListChangedMethod = "notifications/prompts/list_changed",
    optional params: NotificationParams
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
