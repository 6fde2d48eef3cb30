//! Content blocks (text, image, audio, resource links, embedded resources, tool use and
//! tool results), annotations, roles and resource contents.
//!
//! Content unions are tagged by `type`: a block whose `type` this SDK does not know
//! deserialises to the `Unknown` variant, which keeps the whole object and writes it
//! back unchanged. A known `type` with a malformed body is an error.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::base::{JsonObject, from_object, str_member};
use crate::common::Meta;
use crate::lifecycle::Icon;
use crate::resources::Resource;

open_enum! {
    /// The sender or recipient of messages and data in a conversation.
    Role {
        /// The user.
        User = "user",
        /// The assistant (the model).
        Assistant = "assistant",
    }
}

/// Optional hints to the client about how to use or display an object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who the object is intended for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::base::ser_opt_f64"
    )]
    pub priority: Option<f64>,
    /// When the object was last modified (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// No annotations.
    pub fn new() -> Self {
        Self::default()
    }

    with!(
        with_audience => audience: Vec<Role>,
        with_priority => priority: f64,
        with_last_modified => last_modified: String,
    );
}

tag!(TextTag = "text");
tag!(ImageTag = "image");
tag!(AudioTag = "audio");
tag!(ResourceLinkTag = "resource_link");
tag!(EmbeddedResourceTag = "resource");
tag!(ToolUseTag = "tool_use");
tag!(ToolResultTag = "tool_result");

/// Text provided to or from an LLM (`"type": "text"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextContent {
    #[serde(rename = "type")]
    kind: TextTag,
    /// The text.
    pub text: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextContent {
    /// A text block.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            kind: TextTag,
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }

    with!(with_annotations => annotations: Annotations, with_meta => meta: Meta);
}

/// An image, base64-encoded (`"type": "image"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImageContent {
    #[serde(rename = "type")]
    kind: ImageTag,
    /// The base64-encoded image data.
    pub data: String,
    /// The MIME type of the image.
    pub mime_type: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ImageContent {
    /// An image block from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            kind: ImageTag,
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    with!(with_annotations => annotations: Annotations, with_meta => meta: Meta);
}

/// Audio, base64-encoded (`"type": "audio"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AudioContent {
    #[serde(rename = "type")]
    kind: AudioTag,
    /// The base64-encoded audio data.
    pub data: String,
    /// The MIME type of the audio.
    pub mime_type: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl AudioContent {
    /// An audio block from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            kind: AudioTag,
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    with!(with_annotations => annotations: Annotations, with_meta => meta: Meta);
}

/// A link to a resource the server can read (`"type": "resource_link"`): a
/// [`Resource`] with a type tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    #[serde(rename = "type")]
    kind: ResourceLinkTag,
    /// The URI of the resource.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource represents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The size in bytes of the raw content, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ResourceLink {
    /// A link to `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::from(Resource::new(uri, name))
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_mime_type => mime_type: String,
        with_annotations => annotations: Annotations,
        with_size => size: u64,
        with_icons => icons: Vec<Icon>,
        with_meta => meta: Meta,
    );

    /// The resource this links to, without the tag.
    pub fn into_resource(self) -> Resource {
        let mut r = Resource::new(self.uri, self.name);
        r.title = self.title;
        r.description = self.description;
        r.mime_type = self.mime_type;
        r.annotations = self.annotations;
        r.size = self.size;
        r.icons = self.icons;
        r.meta = self.meta;
        r
    }
}

impl From<Resource> for ResourceLink {
    fn from(r: Resource) -> Self {
        Self {
            kind: ResourceLinkTag,
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            annotations: r.annotations,
            size: r.size,
            icons: r.icons,
            meta: r.meta,
        }
    }
}

/// A resource's contents embedded in a prompt or tool result (`"type": "resource"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmbeddedResource {
    #[serde(rename = "type")]
    kind: EmbeddedResourceTag,
    /// The contents.
    pub resource: TextOrBlobResourceContents,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl EmbeddedResource {
    /// Embeds these contents.
    pub fn new(resource: impl Into<TextOrBlobResourceContents>) -> Self {
        Self {
            kind: EmbeddedResourceTag,
            resource: resource.into(),
            annotations: None,
            meta: None,
        }
    }

    with!(with_annotations => annotations: Annotations, with_meta => meta: Meta);
}

/// A model's request to call a tool, in sampling (`"type": "tool_use"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolUseContent {
    #[serde(rename = "type")]
    kind: ToolUseTag,
    /// A unique id matching tool results to this use.
    pub id: String,
    /// The tool to call.
    pub name: String,
    /// The arguments.
    pub input: JsonObject,
    /// Metadata (clients should preserve it in later sampling requests).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ToolUseContent {
    /// A tool use with an id, a tool name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: JsonObject) -> Self {
        Self {
            kind: ToolUseTag,
            id: id.into(),
            name: name.into(),
            input,
            meta: None,
        }
    }

    with!(with_meta => meta: Meta);
}

/// The result of a tool use, given back to the model (`"type": "tool_result"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResultContent {
    #[serde(rename = "type")]
    kind: ToolResultTag,
    /// The id of the tool use this answers.
    pub tool_use_id: String,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<JsonObject>,
    /// Whether the tool use failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ToolResultContent {
    /// A tool result for `tool_use_id` with this content.
    pub fn new(tool_use_id: impl Into<String>, content: Vec<ContentBlock>) -> Self {
        Self {
            kind: ToolResultTag,
            tool_use_id: tool_use_id.into(),
            content,
            structured_content: None,
            is_error: None,
            meta: None,
        }
    }

    with!(
        with_structured_content => structured_content: JsonObject,
        with_is_error => is_error: bool,
        with_meta => meta: Meta,
    );
}

/// Content of prompts and tool results: text, image, audio, resource link or embedded
/// resource, tagged by `type`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"`.
    Audio(AudioContent),
    /// `"resource_link"`.
    ResourceLink(ResourceLink),
    /// `"resource"`.
    Resource(EmbeddedResource),
    /// A block of a type this SDK does not know, kept whole.
    Unknown(JsonObject),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text))
    }

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

    /// The `type` tag.
    pub fn kind(&self) -> &str {
        match self {
            Self::Text(_) => TextTag::VALUE,
            Self::Image(_) => ImageTag::VALUE,
            Self::Audio(_) => AudioTag::VALUE,
            Self::ResourceLink(_) => ResourceLinkTag::VALUE,
            Self::Resource(_) => EmbeddedResourceTag::VALUE,
            Self::Unknown(m) => str_member(m, "type").unwrap_or(""),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        Self::Text(c)
    }
}
impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> Self {
        Self::Image(c)
    }
}
impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> Self {
        Self::Audio(c)
    }
}
impl From<ResourceLink> for ContentBlock {
    fn from(c: ResourceLink) -> Self {
        Self::ResourceLink(c)
    }
}
impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> Self {
        Self::Resource(c)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(c) => c.serialize(serializer),
            Self::Image(c) => c.serialize(serializer),
            Self::Audio(c) => c.serialize(serializer),
            Self::ResourceLink(c) => c.serialize(serializer),
            Self::Resource(c) => c.serialize(serializer),
            Self::Unknown(m) => m.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        Ok(match str_member(&map, "type") {
            Some(TextTag::VALUE) => Self::Text(from_object(map)?),
            Some(ImageTag::VALUE) => Self::Image(from_object(map)?),
            Some(AudioTag::VALUE) => Self::Audio(from_object(map)?),
            Some(ResourceLinkTag::VALUE) => Self::ResourceLink(from_object(map)?),
            Some(EmbeddedResourceTag::VALUE) => Self::Resource(from_object(map)?),
            Some(_) => Self::Unknown(map),
            None => return Err(de::Error::missing_field("type")),
        })
    }
}

/// Content of sampling messages: text, image, audio, tool use or tool result, tagged by
/// `type`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SamplingMessageContentBlock {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"`.
    Audio(AudioContent),
    /// `"tool_use"`.
    ToolUse(ToolUseContent),
    /// `"tool_result"`.
    ToolResult(ToolResultContent),
    /// A block of a type this SDK does not know, kept whole.
    Unknown(JsonObject),
}

impl SamplingMessageContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text))
    }

    /// The `type` tag.
    pub fn kind(&self) -> &str {
        match self {
            Self::Text(_) => TextTag::VALUE,
            Self::Image(_) => ImageTag::VALUE,
            Self::Audio(_) => AudioTag::VALUE,
            Self::ToolUse(_) => ToolUseTag::VALUE,
            Self::ToolResult(_) => ToolResultTag::VALUE,
            Self::Unknown(m) => str_member(m, "type").unwrap_or(""),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for SamplingMessageContentBlock {
    fn from(c: TextContent) -> Self {
        Self::Text(c)
    }
}
impl From<ImageContent> for SamplingMessageContentBlock {
    fn from(c: ImageContent) -> Self {
        Self::Image(c)
    }
}
impl From<AudioContent> for SamplingMessageContentBlock {
    fn from(c: AudioContent) -> Self {
        Self::Audio(c)
    }
}
impl From<ToolUseContent> for SamplingMessageContentBlock {
    fn from(c: ToolUseContent) -> Self {
        Self::ToolUse(c)
    }
}
impl From<ToolResultContent> for SamplingMessageContentBlock {
    fn from(c: ToolResultContent) -> Self {
        Self::ToolResult(c)
    }
}

impl Serialize for SamplingMessageContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(c) => c.serialize(serializer),
            Self::Image(c) => c.serialize(serializer),
            Self::Audio(c) => c.serialize(serializer),
            Self::ToolUse(c) => c.serialize(serializer),
            Self::ToolResult(c) => c.serialize(serializer),
            Self::Unknown(m) => m.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingMessageContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        Ok(match str_member(&map, "type") {
            Some(TextTag::VALUE) => Self::Text(from_object(map)?),
            Some(ImageTag::VALUE) => Self::Image(from_object(map)?),
            Some(AudioTag::VALUE) => Self::Audio(from_object(map)?),
            Some(ToolUseTag::VALUE) => Self::ToolUse(from_object(map)?),
            Some(ToolResultTag::VALUE) => Self::ToolResult(from_object(map)?),
            Some(_) => Self::Unknown(map),
            None => return Err(de::Error::missing_field("type")),
        })
    }
}

/// The common part of a resource's contents (the schema's `ResourceContents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceContents {
    /// The URI of the resource.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ResourceContents {
    /// Contents of `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            meta: None,
        }
    }

    with!(with_mime_type => mime_type: String, with_meta => meta: Meta);
}

/// A resource's contents as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The URI of the resource.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextResourceContents {
    /// Text contents of `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
        }
    }

    with!(with_mime_type => mime_type: String, with_meta => meta: Meta);
}

/// A resource's contents as base64-encoded binary data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The URI of the resource.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The base64-encoded data.
    pub blob: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl BlobResourceContents {
    /// Binary contents of `uri`, already base64-encoded.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            blob: blob.into(),
            meta: None,
        }
    }

    with!(with_mime_type => mime_type: String, with_meta => meta: Meta);
}

/// `TextResourceContents | BlobResourceContents`: told apart by a `text` or a `blob`
/// member (an object with `text` is text contents).
#[derive(Debug, Clone, PartialEq)]
pub enum TextOrBlobResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl TextOrBlobResourceContents {
    /// The URI of the resource.
    pub fn uri(&self) -> &str {
        match self {
            Self::Text(t) => &t.uri,
            Self::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Text(t) => t.mime_type.as_deref(),
            Self::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

impl From<TextResourceContents> for TextOrBlobResourceContents {
    fn from(c: TextResourceContents) -> Self {
        Self::Text(c)
    }
}
impl From<BlobResourceContents> for TextOrBlobResourceContents {
    fn from(c: BlobResourceContents) -> Self {
        Self::Blob(c)
    }
}

impl Serialize for TextOrBlobResourceContents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(c) => c.serialize(serializer),
            Self::Blob(c) => c.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for TextOrBlobResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        if map.contains_key("text") {
            Ok(Self::Text(from_object(map)?))
        } else if map.contains_key("blob") {
            Ok(Self::Blob(from_object(map)?))
        } else {
            Err(de::Error::custom(
                "resource contents need a `text` or a `blob` member",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
