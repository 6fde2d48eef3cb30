//! Argument completion: `completion/complete`.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::base::ResultType;
use crate::base::{JsonObject, from_object, str_member};
use crate::common::Meta;
use crate::tag::fixed_tag;

fixed_tag! {
    PromptRefTag, PromptRefValue = "ref/prompt";
    ResourceRefTag, ResourceRefValue = "ref/resource";
}

/// Identifies a prompt (`"type": "ref/prompt"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptReference {
    #[serde(rename = "type")]
    kind: PromptRefTag,
    /// The prompt's name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl PromptReference {
    /// A reference to the prompt `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            kind: PromptRefTag::new(),
            name: name.into(),
            title: None,
        }
    }

    crate::setters::setters! {
        with_title(title: impl Into<String>),
    }
}

/// Identifies a resource or resource template (`"type": "ref/resource"`; the
/// `ResourceReference` of 2024-11-05 and 2025-03-26).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplateReference {
    #[serde(rename = "type")]
    kind: ResourceRefTag,
    /// The URI or URI template.
    pub uri: String,
}

impl ResourceTemplateReference {
    /// A reference to `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            kind: ResourceRefTag::new(),
            uri: uri.into(),
        }
    }
}

crate::setters::untagged_union! {
    /// `PromptReference | ResourceTemplateReference`, told apart by `type`.
    #[derive(Debug, Clone, PartialEq)]
    pub enum CompletionReference {
        /// A prompt.
        Prompt(PromptReference),
        /// A resource template.
        Resource(ResourceTemplateReference),
    }
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        match str_member(&map, "type") {
            Some(PromptRefTag::VALUE) => Ok(Self::Prompt(from_object(map)?)),
            Some(ResourceRefTag::VALUE) => Ok(Self::Resource(from_object(map)?)),
            Some(other) => Err(de::Error::unknown_variant(
                other,
                &[PromptRefTag::VALUE, ResourceRefTag::VALUE],
            )),
            None => Err(de::Error::missing_field("type")),
        }
    }
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// The value typed so far.
    pub value: String,
}

impl CompleteArgument {
    /// The argument `name` with the partial `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

crate::setters::optional_members! {
    /// Extra context for a completion.
    pub struct CompleteContext {
        /// Already-resolved arguments.
        with_arguments(arguments: impl Into<BTreeMap<String, String>>),
    }
    /// No context.
    new;
}

/// Parameters of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument.
    pub argument: CompleteArgument,
    /// Extra context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
}

impl CompleteRequestParams {
    /// Parameters completing `argument` of `reference`.
    pub fn new(reference: impl Into<CompletionReference>, argument: CompleteArgument) -> Self {
        Self {
            meta: None,
            reference: reference.into(),
            argument,
            context: None,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_context(context: impl Into<CompleteContext>),
    }
}

crate::envelope::requests! {
    /// Asks the server for completion options.
    CompleteRequest = Complete("completion/complete", required CompleteRequestParams) -> CompleteResult, meta |p| Some(&mut p.meta);
}

/// The completion options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// The values (at most 100).
    pub values: Vec<String>,
    /// The total number of options, possibly more than sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more options than sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// The largest number of values a result may carry.
    pub const MAX_VALUES: usize = 100;

    /// Options with these values.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            values,
            total: None,
            has_more: None,
        }
    }

    crate::setters::setters! {
        with_total(total: impl Into<u64>),
        with_has_more(has_more: impl Into<bool>),
    }
}

/// The answer to `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result (2026-07-28; absent before, which means complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The options.
    pub completion: Completion,
}

impl CompleteResult {
    /// A result with these options.
    pub fn new(completion: Completion) -> Self {
        Self {
            meta: None,
            result_type: None,
            completion,
        }
    }

    /// A result with these values, truncated to 100 (`hasMore` set when truncated).
    pub fn values(mut values: Vec<String>) -> Self {
        let total = values.len();
        let mut completion = if total > Completion::MAX_VALUES {
            values.truncate(Completion::MAX_VALUES);
            Completion::new(values).with_has_more(true)
        } else {
            Completion::new(values)
        };
        completion.total = Some(total as u64);
        Self::new(completion)
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_result_type(result_type: impl Into<ResultType>) "2026-07-28",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reference_dispatch() {
        let p: CompleteRequestParams = serde_json::from_value(json!({
            "ref": {"type": "ref/resource", "uri": "file:///{x}"},
            "argument": {"name": "x", "value": "a"},
            "context": {"arguments": {"y": "b"}}
        }))
        .unwrap();
        assert!(matches!(p.reference, CompletionReference::Resource(_)));
        assert!(
            serde_json::from_value::<CompletionReference>(json!({"type": "ref/x", "uri": "u"}))
                .is_err()
        );
        let r = CompleteResult::values((0..150).map(|i| i.to_string()).collect());
        assert_eq!(r.completion.values.len(), 100);
        assert_eq!(r.completion.has_more, Some(true));
    }
}
