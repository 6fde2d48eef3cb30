//! What differs in the revisions before 2025-11-25 (2025-06-18, 2025-03-26,
//! 2024-11-05), and how each difference is carried.
//!
//! The rule: one Rust type reads and writes every revision's form of a definition
//! (fields added later are `Option`s, and what was read is written back as it came).
//! Only where no single type can carry a definition's older shape is there a separate
//! type here, named `<Definition>V<yyyy_mm_dd>`; definitions that only exist in older
//! revisions are also defined here.
//!
//! # Definitions whose shape differs, and the type that carries them
//!
//! | definition | revisions | difference | carried by |
//! |---|---|---|---|
//! | every `*Request` | 06-18, 03-26, 11-05 | bare `{method, params}` (no `jsonrpc`, `id`); params inline | the same request types: `id` and `jsonrpc` are optional on input and written back only if present |
//! | every `*Notification` | 06-18, 03-26, 11-05 | bare `{method, params}` | the same notification types (`jsonrpc` optional) |
//! | `JSONRPCRequest`, `JSONRPCNotification` | 06-18, 03-26, 11-05 | `params._meta.progressToken` spelled out | [`JsonRpcRequest`](crate::JsonRpcRequest), [`JsonRpcNotification`](crate::JsonRpcNotification) |
//! | `JSONRPCError` | 06-18, 03-26, 11-05 | the old name of `JSONRPCErrorResponse`, `id` required | [`JsonRpcError`] (an alias of [`JsonRpcErrorResponse`](crate::JsonRpcErrorResponse)) |
//! | `JSONRPCResponse` | 06-18, 03-26, 11-05 | the result response only (now result or error) | [`JsonRpcResponse`](crate::JsonRpcResponse) (its `Result` variant) |
//! | `JSONRPCMessage` | 06-18, 11-05 | same union, old names | [`JsonRpcMessage`](crate::JsonRpcMessage) |
//! | `JSONRPCMessage` | 03-26 | also batches of requests/notifications and of responses | [`JsonRpcMessageV2025_03_26`] |
//! | `JSONRPCBatchRequest`, `JSONRPCBatchResponse` | 03-26 only | JSON arrays of messages | [`JsonRpcBatchRequest`], [`JsonRpcBatchResponse`] |
//! | `ResourceReference` | 03-26, 11-05 | the old name of `ResourceTemplateReference` | [`ResourceReference`] (an alias) |
//! | `Annotated` | 11-05 only | base with an inline `annotations{audience, priority}` | [`Annotated`]; the inline object is [`Annotations`] |
//! | `EnumSchema` | 06-18 | one object `{type:"string", enum, enumNames?}` | [`EnumSchema`](crate::EnumSchema) (`LegacyTitled`, or `Single(Untitled)` without `enumNames`) |
//! | `PrimitiveSchemaDefinition`, `StringSchema`, `NumberSchema` | 06-18 | no enum forms of SEP-1330, no `default` | the same types |
//! | `ElicitRequest`, `ElicitResult` | 06-18 | no `mode`/URL mode; content values without arrays | [`ElicitRequestParams`](crate::ElicitRequestParams) (`Form` when `mode` is absent), [`ElicitValue`](crate::ElicitValue) |
//! | `SamplingMessage`, `CreateMessageResult` | 06-18, 03-26, 11-05 | `content` is one block, no tool use | [`SamplingContent::Single`](crate::SamplingContent) |
//! | `CreateMessageRequest` | 06-18, 03-26, 11-05 | no `tools`, `toolChoice`, `task` | the same type |
//! | `ClientCapabilities`, `ServerCapabilities` | all | no `tasks`; `sampling`/`elicitation` open objects; 11-05: no `completions` | the same types (unknown keys kept in `extra`) |
//! | `Implementation`, `Prompt`, `PromptArgument`, `PromptReference`, `Resource`, `ResourceTemplate`, `ResourceLink`, `Tool` | all | no `icons`, `websiteUrl`, `description`, `execution`; 03-26/11-05: no `title`, `_meta`, `outputSchema`; 11-05: no tool `annotations` | the same types |
//! | `CallToolResult` | 03-26, 11-05 | no `structuredContent`, no `resource_link` blocks | the same type |
//! | `Annotations` | 03-26 | no `lastModified` | the same type |
//! | content blocks, resource contents, `Root` | 03-26, 11-05 | no `_meta`; 11-05: inline annotations, no audio | the same types |
//! | `ProgressNotification` | 11-05 | no `message` | the same type |
//! | `ClientRequest`, `ServerRequest`, `ClientNotification`, `ServerNotification`, `ClientResult`, `ServerResult` | all | fewer members | the same unions |

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::completion::ResourceTemplateReference;
use crate::content::Annotations;
use crate::error::ErrorData;
use crate::jsonrpc::{InvalidMessage, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcResponse};

/// The schema's `JSONRPCError` (2024-11-05 to 2025-06-18): the old name of
/// `JSONRPCErrorResponse`.
pub type JsonRpcError = JsonRpcErrorResponse;

/// The schema's `ResourceReference` (2024-11-05, 2025-03-26): the old name of
/// `ResourceTemplateReference`.
pub type ResourceReference = ResourceTemplateReference;

crate::setters::optional_members! {
    /// The schema's `Annotated` (2024-11-05): the base of objects carrying annotations.
    pub struct Annotated {
        /// The annotations.
        with_annotations(annotations: impl Into<Annotations>),
    }
    /// No annotations.
    new;
}

/// A batch of requests and notifications (2025-03-26 only).
#[derive(Debug, Clone, Default)]
pub struct JsonRpcBatchRequest(Vec<JsonRpcMessage>);

impl JsonRpcBatchRequest {
    /// A batch of these requests and notifications; `None` if it is empty (JSON-RPC
    /// makes `[]` an invalid request) or if any member is a response.
    pub fn new(messages: Vec<JsonRpcMessage>) -> Option<Self> {
        (!messages.is_empty() && messages.iter().all(|m| m.method().is_some()))
            .then_some(Self(messages))
    }

    /// The requests and notifications, in order.
    pub fn messages(&self) -> &[JsonRpcMessage] {
        &self.0
    }

    /// The requests and notifications, in order.
    pub fn into_messages(self) -> Vec<JsonRpcMessage> {
        self.0
    }
}

/// A batch of responses (2025-03-26 only).
#[derive(Debug, Clone, Default)]
pub struct JsonRpcBatchResponse(pub Vec<JsonRpcResponse>);

impl JsonRpcBatchResponse {
    /// A batch of these responses.
    pub fn new(responses: Vec<JsonRpcResponse>) -> Self {
        Self(responses)
    }
}

impl Serialize for JsonRpcBatchRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for m in &self.0 {
            seq.serialize_element(m)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for JsonRpcBatchRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let messages = Vec::<JsonRpcMessage>::deserialize(deserializer)?;
        Self::new(messages).ok_or_else(|| {
            de::Error::custom("a batch request holds one or more requests and notifications")
        })
    }
}

impl Serialize for JsonRpcBatchResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonRpcBatchResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let responses = Vec::<JsonRpcResponse>::deserialize(deserializer)?;
        if responses.is_empty() {
            return Err(de::Error::invalid_length(0, &"at least one response"));
        }
        Ok(Self(responses))
    }
}

/// The schema's `JSONRPCMessage` of 2025-03-26: a single message or a batch.
///
/// An array whose members are all requests or notifications is a batch request; one
/// whose members are all responses is a batch response; an empty or mixed array is an
/// invalid request.
#[derive(Debug, Clone)]
pub enum JsonRpcMessageV2025_03_26 {
    /// One message.
    Single(JsonRpcMessage),
    /// A batch of requests and notifications.
    BatchRequest(JsonRpcBatchRequest),
    /// A batch of responses.
    BatchResponse(JsonRpcBatchResponse),
}

impl JsonRpcMessageV2025_03_26 {
    /// Parses one message or batch from bytes; the error says which JSON-RPC error
    /// answers the input (see [`JsonRpcMessage::from_slice`]).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'[') {
            return JsonRpcMessage::from_slice(bytes).map(Self::Single);
        }
        // Read as a `str`, as every other message is (no second parser, for bytes).
        let items = std::str::from_utf8(bytes).map(serde_json::from_str::<Vec<Box<RawValue>>>);
        let items = match items {
            Ok(Ok(items)) => items,
            // Not UTF-8, not JSON, or not an array: the single-message parser classifies
            // it.
            _ => return JsonRpcMessage::from_slice(bytes).map(Self::Single),
        };
        let messages = items
            .iter()
            .map(|raw| JsonRpcMessage::from_slice(raw.get().as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_messages(messages)
            .map_err(|reason| InvalidMessage::new(None, ErrorData::invalid_request(reason)))
    }

    fn from_messages(messages: Vec<JsonRpcMessage>) -> Result<Self, &'static str> {
        if messages.is_empty() {
            return Err("an empty batch is an invalid request");
        }
        if messages.iter().all(|m| m.method().is_some()) {
            return Ok(Self::BatchRequest(JsonRpcBatchRequest(messages)));
        }
        let responses = messages
            .into_iter()
            .map(|m| match m {
                JsonRpcMessage::Response(r) => Ok(JsonRpcResponse::Result(r)),
                JsonRpcMessage::Error(e) => Ok(JsonRpcResponse::Error(e)),
                _ => Err("a batch mixes requests and responses"),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::BatchResponse(JsonRpcBatchResponse(responses)))
    }

    /// Serialises to compact JSON.
    pub fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

impl From<JsonRpcMessage> for JsonRpcMessageV2025_03_26 {
    fn from(m: JsonRpcMessage) -> Self {
        Self::Single(m)
    }
}

impl Serialize for JsonRpcMessageV2025_03_26 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Single(m) => m.serialize(serializer),
            Self::BatchRequest(b) => b.serialize(serializer),
            Self::BatchResponse(b) => b.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for JsonRpcMessageV2025_03_26 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Self::from_slice(raw.get().as_bytes()).map_err(|e| de::Error::custom(e.error.message))
    }
}

impl fmt::Display for JsonRpcMessageV2025_03_26 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches() {
        let m = JsonRpcMessageV2025_03_26::from_slice(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
        )
        .unwrap();
        assert!(
            matches!(&m, JsonRpcMessageV2025_03_26::BatchRequest(b) if b.messages().len() == 2)
        );
        let r: JsonRpcMessageV2025_03_26 = serde_json::from_str(
            r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"x"}}]"#,
        )
        .unwrap();
        assert!(matches!(&r, JsonRpcMessageV2025_03_26::BatchResponse(b) if b.0.len() == 2));
        assert_eq!(
            r.to_string(),
            r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"x"}}]"#
        );
        let mixed = JsonRpcMessageV2025_03_26::from_slice(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"result":{}}]"#,
        );
        assert!(mixed.is_err());
        let empty = JsonRpcMessageV2025_03_26::from_slice(b" [ ] ").unwrap_err();
        assert_eq!(empty.error.code, crate::ErrorCode::INVALID_REQUEST);
        assert!(serde_json::from_str::<JsonRpcBatchRequest>("[]").is_err());
        let single: JsonRpcMessageV2025_03_26 =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert!(matches!(single, JsonRpcMessageV2025_03_26::Single(_)));
    }
}
