//! Prompts: `prompts/list`, `prompts/get` and `notifications/prompts/list_changed`.

use std::collections::BTreeMap;

use crate::base::ResultType;
use crate::base::{NotificationParams, PaginatedRequestParams};
use crate::content::{ContentBlock, Role};
use crate::lifecycle::Icon;

crate::envelope::requests! {
    /// Lists the server's prompts (paginated).
    ListPromptsRequest = ListPrompts("prompts/list", optional PaginatedRequestParams) -> ListPromptsResult, meta |p| p.as_mut().map(|p| &mut p.meta);
    /// Gets a prompt, filled in with arguments.
    GetPromptRequest = GetPrompt("prompts/get", required GetPromptRequestParams) -> GetPromptResult, meta |p| Some(&mut p.meta);
}

crate::envelope::notifications! {
    /// Tells the client the prompt list changed.
    PromptListChangedNotification = PromptListChanged("notifications/prompts/list_changed", optional NotificationParams);
}

crate::setters::wire_struct! {
    /// An argument a prompt accepts.
    pub struct PromptArgument {
        /// The programmatic name.
        pub name: String,
        /// A display name.
        title?: String => with_title,
        /// What the argument is.
        description?: String => with_description,
        /// Whether it must be given.
        required?: bool => with_required,
    }
    /// An argument named `name`.
    new(name: impl Into<String>);
}

crate::setters::wire_struct! {
    /// A prompt or prompt template the server offers.
    pub struct Prompt {
        /// The programmatic name.
        pub name: String,
        /// A display name.
        title?: String => with_title,
        /// What the prompt provides.
        description?: String => with_description,
        /// The arguments for templating.
        arguments?: Vec<PromptArgument> => with_arguments,
        /// Icons.
        icons?: Vec<Icon> => with_icons,
        meta => with_meta,
    }
    /// A prompt named `name`.
    new(name: impl Into<String>);
}

crate::cache::list_result!(ListPromptsResult("prompts/list") { prompts: Prompt } "prompts");

crate::mrtr::retryable_params! {
    /// Parameters of `prompts/get`.
    pub struct GetPromptRequestParams {
        /// The prompt's name.
        pub name: String,
        /// Template arguments.
        arguments?: BTreeMap<String, String> => with_arguments,
    }
    /// Parameters asking for `name` without arguments.
    new(name: impl Into<String>);

    /// Adds one argument.
    #[must_use]
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }
}

crate::setters::wire_struct! {
    /// A message of a prompt.
    pub struct PromptMessage {
        /// Who speaks.
        pub role: Role,
        /// The content.
        pub content: ContentBlock,
    }
    /// A message.
    new(role: Role, content: impl Into<ContentBlock>);

    crate::content::text_messages!(ContentBlock);
}

crate::setters::wire_struct! {
    /// The answer to `prompts/get`.
    pub struct GetPromptResult {
        meta => with_meta,
        /// The kind of result (2026-07-28; absent before, which means complete).
        result_type?: ResultType => with_result_type "2026-07-28",
        /// A description of the prompt.
        description?: String => with_description,
        /// The messages.
        pub messages: Vec<PromptMessage>,
    }
    /// A result with these messages.
    new(messages: Vec<PromptMessage>);
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
