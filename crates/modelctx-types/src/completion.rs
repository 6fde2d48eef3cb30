//! Argument completion: `completion/complete`.

use std::collections::BTreeMap;

use serde::de::{self};

use crate::base::ResultType;
use crate::base::{from_object, str_member};
use crate::tag::fixed_tag;

crate::envelope::requests! {
    /// Asks the server for completion options.
    CompleteRequest = Complete("completion/complete", required CompleteRequestParams) -> CompleteResult, meta |p| Some(&mut p.meta);
}

fixed_tag! {
    PromptRefTag, PromptRefValue = "ref/prompt";
    ResourceRefTag, ResourceRefValue = "ref/resource";
}

crate::setters::wire_struct! {
    /// Identifies a prompt (`"type": "ref/prompt"`).
    pub struct PromptReference {
        #[serde(rename = "type")]
        kind: PromptRefTag = PromptRefTag::new(),
        /// The prompt's name.
        pub name: String,
        /// A display name.
        title?: String => with_title,
    }
    /// A reference to the prompt `name`.
    new(name: impl Into<String>);
}

crate::setters::wire_struct! {
    /// Identifies a resource or resource template (`"type": "ref/resource"`; the
    /// `ResourceReference` of 2024-11-05 and 2025-03-26).
    pub struct ResourceTemplateReference {
        #[serde(rename = "type")]
        kind: ResourceRefTag = ResourceRefTag::new(),
        /// The URI or URI template.
        pub uri: String,
    }
    /// A reference to `uri`.
    new(uri: impl Into<String>);
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
    read |map| {
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

crate::setters::wire_struct! {
    /// The argument being completed.
    pub struct CompleteArgument {
        /// The argument's name.
        pub name: String,
        /// The value typed so far.
        pub value: String,
    }
    /// The argument `name` with the partial `value`.
    new(name: impl Into<String>, value: impl Into<String>);
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

crate::setters::wire_struct! {
    /// Parameters of `completion/complete`.
    pub struct CompleteRequestParams {
        meta => with_meta,
        /// What is being completed.
        #[serde(rename = "ref")]
        pub reference: CompletionReference,
        /// The argument.
        pub argument: CompleteArgument,
        /// Extra context.
        context?: CompleteContext => with_context,
    }
    /// Parameters completing `argument` of `reference`.
    new(reference: impl Into<CompletionReference>, argument: CompleteArgument);
}

crate::setters::wire_struct! {
    /// The completion options.
    #[derive(Default)]
    pub struct Completion {
        /// The values (at most 100).
        pub values: Vec<String>,
        /// The total number of options, possibly more than sent.
        total?: u64 => with_total,
        /// Whether there are more options than sent.
        has_more?: bool => with_has_more,
    }
    /// Options with these values.
    new(values: Vec<String>);

    /// The largest number of values a result may carry.
    pub const MAX_VALUES: usize = 100;
}

crate::setters::wire_struct! {
    /// The answer to `completion/complete`.
    pub struct CompleteResult {
        meta => with_meta,
        /// The kind of result (2026-07-28; absent before, which means complete).
        result_type?: ResultType => with_result_type "2026-07-28",
        /// The options.
        pub completion: Completion,
    }
    /// A result with these options.
    new(completion: Completion);

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
