//! Content blocks (text, image, audio, resource links, embedded resources, tool use and
//! tool results), annotations, roles and resource contents.
//!
//! Content unions are tagged by `type`: a block whose `type` this SDK does not know
//! deserialises to the `Unknown` variant, which keeps the whole object and writes it
//! back unchanged. A known `type` with a malformed body is an error.

mod blocks;
mod resource_contents;
mod tagged;

pub use blocks::{
    AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent, ToolResultContent,
    ToolUseContent,
};
pub use resource_contents::{
    BlobResourceContents, ResourceContents, TextOrBlobResourceContents, TextResourceContents,
};

pub(crate) use blocks::resource;

use blocks::{
    AudioTag, EmbeddedResourceTag, ImageTag, ResourceLinkTag, TextTag, ToolResultTag, ToolUseTag,
};

crate::open_enum::open_enum! {
    /// The sender or recipient of messages and data in a conversation.
    pub enum Role {
        /// The user.
        User = "user",
        /// The assistant (the model).
        Assistant = "assistant",
    }
}

crate::setters::wire_struct! {
    /// Optional hints to the client about how to use or display an object.
    #[derive(Default)]
    pub struct Annotations {
        /// Who the object is intended for.
        audience?: Vec<Role> => with_audience,
        /// Importance from 0 (least) to 1 (most).
        priority?: f64 => with_priority,
        /// When the object was last modified (ISO 8601).
        last_modified?: String => with_last_modified,
    }
    /// No annotations.
    pub fn new() -> Self {
        Self::default()
    }
}

tagged::tagged_union! {
    /// Content of prompts and tool results: text, image, audio, resource link or embedded
    /// resource, tagged by `type`.
    pub enum ContentBlock: "a content block (an object with a `type`)" {
        /// `"text"`.
        Text(TextContent) = TextTag,
        /// `"image"`.
        Image(ImageContent) = ImageTag,
        /// `"audio"`.
        Audio(AudioContent) = AudioTag,
        /// `"resource_link"`.
        ResourceLink(ResourceLink) = ResourceLinkTag,
        /// `"resource"`.
        Resource(EmbeddedResource) = EmbeddedResourceTag,
    }
}

/// Both unions start with text: `text` builds a text block, `as_text` reads one.
macro_rules! text_block {
    () => {
        /// A text block.
        pub fn text(text: impl Into<String>) -> Self {
            Self::Text(TextContent::new(text))
        }

        /// The text of a text block.
        pub fn as_text(&self) -> Option<&str> {
            match self {
                Self::Text(t) => Some(&t.text),
                _ => None,
            }
        }
    };
}

impl ContentBlock {
    text_block!();

    /// An image block.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent::new(data, mime_type))
    }

    /// An audio block.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent::new(data, mime_type))
    }

    /// A resource link block.
    pub fn resource_link(link: impl Into<ResourceLink>) -> Self {
        Self::ResourceLink(link.into())
    }

    /// An embedded resource block.
    pub fn resource(contents: impl Into<TextOrBlobResourceContents>) -> Self {
        Self::Resource(EmbeddedResource::new(contents))
    }
}

tagged::tagged_union! {
    /// Content of sampling messages: text, image, audio, tool use or tool result, tagged by
    /// `type`.
    pub enum SamplingMessageContentBlock: "a sampling content block (an object with a `type`)" {
        /// `"text"`.
        Text(TextContent) = TextTag,
        /// `"image"`.
        Image(ImageContent) = ImageTag,
        /// `"audio"`.
        Audio(AudioContent) = AudioTag,
        /// `"tool_use"`.
        ToolUse(ToolUseContent) = ToolUseTag,
        /// `"tool_result"`.
        ToolResult(ToolResultContent) = ToolResultTag,
    }
}

impl SamplingMessageContentBlock {
    text_block!();
}

/// The `user_text` and `assistant_text` of a message type with `new(role, content)`,
/// its content a text block of the union given.
macro_rules! text_messages {
    ($union:ident) => {
        /// A user message with text.
        pub fn user_text(text: impl Into<String>) -> Self {
            Self::new($crate::content::Role::User, $union::text(text))
        }

        /// An assistant message with text.
        pub fn assistant_text(text: impl Into<String>) -> Self {
            Self::new($crate::content::Role::Assistant, $union::text(text))
        }
    };
}

pub(crate) use text_messages;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Found by the property tests (`tests/schema/properties.rs`): a
    /// `"structuredContent": null` (any JSON value in 2026-07-28) was dropped.
    #[test]
    fn a_null_structured_tool_result_survives_a_round_trip() {
        let text =
            r#"{"type":"tool_result","toolUseId":"u","content":[],"structuredContent":null}"#;
        let block: ToolResultContent = serde_json::from_str(text).unwrap();
        assert_eq!(block.structured_content, Some(Value::Null));
        assert_eq!(serde_json::to_string(&block).unwrap(), text);
        let absent: ToolResultContent =
            serde_json::from_str(r#"{"type":"tool_result","toolUseId":"u","content":[]}"#).unwrap();
        assert_eq!(absent.structured_content, None);
    }

    #[test]
    fn content_dispatches_on_type_and_keeps_unknown() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "hi", "_meta": {"k": 1}},
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA=="}},
            {"type": "hologram", "depth": 3, "nested": {"x": [1]}}
        ]))
        .unwrap();
        assert_eq!(blocks[0].as_text(), Some("hi"));
        assert!(matches!(blocks[1], ContentBlock::Image(_)));
        assert!(matches!(blocks[2], ContentBlock::ResourceLink(_)));
        assert!(matches!(
            &blocks[3],
            ContentBlock::Resource(EmbeddedResource {
                resource: TextOrBlobResourceContents::Blob(_),
                ..
            })
        ));
        assert_eq!(blocks[4].kind(), "hologram");
        let back = serde_json::to_value(&blocks[4]).unwrap();
        assert_eq!(
            back,
            json!({"type": "hologram", "depth": 3, "nested": {"x": [1]}})
        );
        let meta = serde_json::to_value(&blocks[0]).unwrap();
        assert_eq!(
            meta,
            json!({"type": "text", "text": "hi", "_meta": {"k": 1}})
        );
    }

    #[test]
    fn known_type_with_bad_body_fails_and_missing_type_fails() {
        assert!(serde_json::from_value::<ContentBlock>(json!({"type": "text"})).is_err());
        assert!(serde_json::from_value::<ContentBlock>(json!({"text": "x"})).is_err());
        assert!(
            serde_json::from_value::<TextContent>(json!({"type": "image", "text": "x"})).is_err()
        );
    }

    #[test]
    fn text_decodes_alike_whether_type_comes_first_or_not() {
        let cases = [
            r#"{"type":"text","text":"hi","annotations":{"priority":0.5},"_meta":{"k":1}}"#,
            r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#,
            r#"{"type":"resource","resource":{"uri":"file:///b","text":"t"}}"#,
            r#"{"type":"hologram","depth":3,"nested":{"x":[1]}}"#,
        ];
        for text in cases {
            // `type` first (decoded straight into the struct), then last (collected).
            let first: ContentBlock = serde_json::from_str(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            let mut members: Vec<(String, Value)> =
                value.as_object().unwrap().clone().into_iter().collect();
            members.sort_by_key(|(k, _)| k == "type");
            let last = format!(
                "{{{}}}",
                members
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            assert!(last.ends_with(&format!("\"type\":{}}}", value["type"])));
            let last: ContentBlock = serde_json::from_str(&last).unwrap();
            assert_eq!(first, last, "{text}");
            assert_eq!(serde_json::to_value(&first).unwrap(), value, "{text}");
        }
    }

    #[test]
    fn a_leading_type_is_checked_like_any_other() {
        let bad = [
            r#"{"type":"text"}"#,                          // known type, body missing
            r#"{"type":"text","text":7}"#,                 // known type, bad body
            r#"{"type":"text","type":"text","text":"x"}"#, // duplicate member
            r#"{"type":7,"text":"x"}"#,                    // type not a string
            r#"{"text":"x"}"#,                             // no type
            r#"{}"#,
            r#"[]"#,
            r#""text""#,
        ];
        for text in bad {
            assert!(
                serde_json::from_str::<ContentBlock>(text).is_err(),
                "{text}"
            );
        }
        let b: SamplingMessageContentBlock =
            serde_json::from_str(r#"{"type":"tool_use","id":"u","name":"n","input":{}}"#).unwrap();
        assert_eq!(b.kind(), "tool_use");
        let unknown: SamplingMessageContentBlock =
            serde_json::from_str(r#"{"type":"sketch","strokes":[]}"#).unwrap();
        assert_eq!(unknown.kind(), "sketch");
    }

    #[test]
    fn sampling_blocks_and_roles() {
        let b: SamplingMessageContentBlock = serde_json::from_value(json!({
            "type": "tool_result", "toolUseId": "u1",
            "content": [{"type": "text", "text": "ok"}], "isError": false
        }))
        .unwrap();
        assert_eq!(b.kind(), "tool_result");
        let role: Role = serde_json::from_value(json!("system")).unwrap();
        assert_eq!(role, Role::Unknown("system".into()));
        assert_eq!(serde_json::to_value(&role).unwrap(), json!("system"));
        assert_eq!(Role::from("user"), Role::User);
    }
}
