//! The content block types, one per `type`, and their tags.

use serde_json::Value;

use super::Annotations;
use super::ContentBlock;
use super::resource_contents::TextOrBlobResourceContents;
use crate::base::JsonObject;
use crate::common::Meta;
use crate::tag::fixed_tag;

fixed_tag! {
    TextTag, TextValue = "text";
    ImageTag, ImageValue = "image";
    AudioTag, AudioValue = "audio";
    ResourceLinkTag, ResourceLinkValue = "resource_link";
    EmbeddedResourceTag, EmbeddedResourceValue = "resource";
    ToolUseTag, ToolUseValue = "tool_use";
    ToolResultTag, ToolResultValue = "tool_result";
}

/// Declares content blocks of one `type` that carry annotations: the tag, the members
/// given, then `annotations` and `_meta`, with `new` taking each member given (as
/// `impl Into`) and the setters of the two.
macro_rules! annotated_blocks {
    ($(
        $(#[$doc:meta])*
        $name:ident($tag:ident) {
            $($(#[$field_doc:meta])* $field:ident: $ty:ty,)+
        }
        $(#[$new_doc:meta])*
        new;
    )+) => {$(
        $crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                #[serde(rename = "type")]
                kind: $tag,
                $(
                    $(#[$field_doc])*
                    pub $field: $ty,
                )+
                /// Annotations.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub annotations: Option<Annotations>,
                /// Metadata.
                #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
                pub meta: Option<Meta>,
            }
        }

        impl $name {
            $(#[$new_doc])*
            pub fn new($($field: impl Into<$ty>),+) -> Self {
                Self {
                    kind: $tag::new(),
                    $($field: $field.into(),)+
                    annotations: None,
                    meta: None,
                }
            }

            crate::setters::setters! {
                with_annotations(annotations: impl Into<Annotations>),
                with_meta(meta: impl Into<Meta>),
            }
        }
    )+};
}

annotated_blocks! {
    /// Text provided to or from an LLM (`"type": "text"`).
    TextContent(TextTag) {
        /// The text.
        text: String,
    }
    /// A text block.
    new;

    /// An image, base64-encoded (`"type": "image"`).
    ImageContent(ImageTag) {
        /// The base64-encoded image data.
        data: String,
        /// The MIME type of the image.
        mime_type: String,
    }
    /// An image block from base64 data and a MIME type.
    new;

    /// Audio, base64-encoded (`"type": "audio"`).
    AudioContent(AudioTag) {
        /// The base64-encoded audio data.
        data: String,
        /// The MIME type of the audio.
        mime_type: String,
    }
    /// An audio block from base64 data and a MIME type.
    new;

    /// A resource's contents embedded in a prompt or tool result (`"type": "resource"`).
    EmbeddedResource(EmbeddedResourceTag) {
        /// The contents.
        resource: TextOrBlobResourceContents,
    }
    /// Embeds these contents.
    new;
}

/// Declares a resource description ([`Resource`], [`ResourceTemplate`], and with a
/// `type` tag, given after the name, [`ResourceLink`](crate::ResourceLink)): its address (`uri` or
/// `uri_template`), name, title, description, MIME type, annotations, size (when
/// `size` is named), icons and `_meta`, with `new(address, name)` and the setters.
macro_rules! resource {
    (
        $(#[$doc:meta])*
        pub struct $name:ident $(($tag:ident))? {
            $(#[$address_doc:meta])*
            $address:ident,
            description: $description_doc:literal,
            mime_type: $mime_type_doc:literal,
            $($size:ident,)?
        }
        $(#[$new_doc:meta])*
        new;
    ) => {
        $crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                $(
                    #[serde(rename = "type")]
                    kind: $tag,
                )?
                $(#[$address_doc])*
                pub $address: String,
                /// The programmatic name.
                pub name: String,
                /// A display name.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub title: Option<String>,
                #[doc = $description_doc]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub description: Option<String>,
                #[doc = $mime_type_doc]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub mime_type: Option<String>,
                /// Annotations.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub annotations: Option<$crate::content::Annotations>,
                $(
                    /// The size in bytes of the raw content, if known.
                    #[serde(default, skip_serializing_if = "Option::is_none")]
                    pub $size: Option<u64>,
                )?
                /// Icons.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub icons: Option<Vec<$crate::lifecycle::Icon>>,
                /// Metadata.
                #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
                pub meta: Option<$crate::common::Meta>,
            }
        }

        impl $name {
            $(#[$new_doc])*
            pub fn new($address: impl Into<String>, name: impl Into<String>) -> Self {
                Self {
                    $(kind: $tag::new(),)?
                    $address: $address.into(),
                    name: name.into(),
                    title: None,
                    description: None,
                    mime_type: None,
                    annotations: None,
                    $($size: None,)?
                    icons: None,
                    meta: None,
                }
            }

            $crate::setters::setters! {
                with_title(title: impl Into<String>),
                with_description(description: impl Into<String>),
                with_mime_type(mime_type: impl Into<String>),
                with_annotations(annotations: impl Into<$crate::content::Annotations>),
                with_icons(icons: impl Into<Vec<$crate::lifecycle::Icon>>),
                with_meta(meta: impl Into<$crate::common::Meta>),
                $(with_size($size: impl Into<u64>),)?
            }
        }
    };
}

pub(crate) use resource;

resource! {
    /// A link to a resource the server can read (`"type": "resource_link"`): a
    /// [`Resource`](crate::Resource) with a type tag.
    pub struct ResourceLink(ResourceLinkTag) {
        /// The URI of the resource.
        uri,
        description: "What the resource represents.",
        mime_type: "The MIME type, if known.",
        size,
    }
    /// A link to `uri` named `name`.
    new;
}

crate::setters::wire_struct! {
    /// A model's request to call a tool, in sampling (`"type": "tool_use"`).
    pub struct ToolUseContent {
        #[serde(rename = "type")]
        kind: ToolUseTag = ToolUseTag::new(),
        /// A unique id matching tool results to this use.
        pub id: String,
        /// The tool to call.
        pub name: String,
        /// The arguments.
        pub input: JsonObject,
        /// Metadata (clients should preserve it in later sampling requests).
        meta => with_meta,
    }
    /// A tool use with an id, a tool name and arguments.
    new(id: impl Into<String>, name: impl Into<String>, input: JsonObject);
}

crate::setters::wire_struct! {
    /// The result of a tool use, given back to the model (`"type": "tool_result"`).
    ///
    /// `structuredContent` is an object up to 2025-11-25 and any JSON value from 2026-07-28
    /// (SEP-2106), so it is kept as a [`Value`].
    pub struct ToolResultContent {
        #[serde(rename = "type")]
        kind: ToolResultTag = ToolResultTag::new(),
        /// The id of the tool use this answers.
        pub tool_use_id: String,
        /// The unstructured result.
        pub content: Vec<ContentBlock>,
        /// The structured result: a JSON object up to 2025-11-25, any JSON value from
        /// 2026-07-28 (`null` included: kept as `Some(Value::Null)`).
        #[serde(deserialize_with = "crate::common::null_is_a_value")]
        structured_content?: Value,
        /// Whether the tool use failed.
        is_error?: bool => with_is_error,
        meta => with_meta,
    }
    /// A tool result for `tool_use_id` with this content.
    new(tool_use_id: impl Into<String>, content: Vec<ContentBlock>);

    /// Sets `structured_content`: a JSON object for every revision, any other value
    /// only for 2026-07-28.
    #[must_use]
    pub fn with_structured_content(mut self, structured_content: impl Into<Value>) -> Self {
        self.structured_content = Some(structured_content.into());
        self
    }
}
