//! The JSON-RPC 2.0 envelope: requests, notifications, result and error responses.
//!
//! Parameters and results travel as [`RawValue`]: the envelope is parsed once and a
//! payload is only decoded into its typed form by whoever handles it. Parsing is strict
//! where the specification is strict — `jsonrpc` must be `"2.0"`, an `id` is never
//! `null`, a key may not appear twice — and tolerant of unknown keys.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::common::Meta;
use crate::error::{ErrorCode, ErrorData};

mod members;

use members::{MethodName, Version};

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a string or an integer, never `null`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id (the form this SDK allocates).
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<i32> for RequestId {
    fn from(n: i32) -> Self {
        Self::Number(n.into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.into())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        Self::String(s.into())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => serializer.serialize_i64(*n),
            Self::String(s) => serializer.serialize_str(s),
        }
    }
}

/// An id field as read off the wire: a valid id, or an explicit `null`.
enum IdOrNull {
    Id(RequestId),
    Null,
}

struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = IdOrNull;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<IdOrNull, E> {
        Ok(IdOrNull::Id(RequestId::Number(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<IdOrNull, E> {
        i64::try_from(v)
            .map(|n| IdOrNull::Id(RequestId::Number(n)))
            .map_err(|_| E::custom("request id out of range"))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<IdOrNull, E> {
        // JSON-RPC discourages fractional ids; an integral float is read as the integer.
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            Ok(IdOrNull::Id(RequestId::Number(v as i64)))
        } else {
            Err(E::custom("request id must be an integer or a string"))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<IdOrNull, E> {
        Ok(IdOrNull::Id(RequestId::String(v.into())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<IdOrNull, E> {
        Ok(IdOrNull::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<IdOrNull, E> {
        Ok(IdOrNull::Null)
    }
}

impl<'de> Deserialize<'de> for IdOrNull {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match deserializer.deserialize_any(IdVisitor)? {
            IdOrNull::Id(id) => Ok(id),
            IdOrNull::Null => Err(de::Error::custom("request id must not be null")),
        }
    }
}

/// A request: expects exactly one response with the same id.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JsonRpcRequest {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: Cow<'static, str>,
    /// The parameters, undecoded.
    pub params: Option<Box<RawValue>>,
}

impl JsonRpcRequest {
    /// A request with the given id, method and (already serialised) parameters.
    pub fn new(
        id: RequestId,
        method: impl Into<Cow<'static, str>>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Self {
            id,
            method: method.into(),
            params,
        }
    }

    /// Whether this request carries the per-request envelope of 2026-07-28: a protocol
    /// version in its `_meta`. That era has no handshake, so a transport or session
    /// recognises it from the request alone.
    ///
    /// ```
    /// use modelctx_types::{JsonRpcRequest, RawValue, RequestId};
    ///
    /// let params = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
    /// let params = RawValue::from_string(params.to_owned()).unwrap();
    /// let request = JsonRpcRequest::new(RequestId::Number(1), "tools/list", Some(params));
    /// assert!(request.carries_envelope());
    /// assert_eq!(request.envelope_version().as_deref(), Some("2026-07-28"));
    ///
    /// let bare = JsonRpcRequest::new(RequestId::Number(2), "tools/list", None);
    /// assert!(!bare.carries_envelope());
    /// ```
    pub fn carries_envelope(&self) -> bool {
        self.envelope_meta()
            .is_some_and(|meta| meta.protocol_version().is_some())
    }

    /// The protocol version the per-request envelope of 2026-07-28 names, if this
    /// request carries one (see [`carries_envelope`](Self::carries_envelope)).
    pub fn envelope_version(&self) -> Option<String> {
        self.envelope_meta()?.protocol_version().map(str::to_owned)
    }

    /// The `_meta` of the params, decoded only when the raw text names a protocol
    /// version: most requests are answered without decoding anything.
    fn envelope_meta(&self) -> Option<Meta> {
        let params = self.params.as_deref()?;
        if !crate::members::holds(params.get(), [Meta::PROTOCOL_VERSION]) {
            return None;
        }
        #[derive(Deserialize)]
        struct MetaOnly {
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        serde_json::from_str::<MetaOnly>(params.get()).ok()?.meta
    }
}

/// A notification: never answered.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JsonRpcNotification {
    /// The method name.
    pub method: Cow<'static, str>,
    /// The parameters, undecoded.
    pub params: Option<Box<RawValue>>,
}

impl JsonRpcNotification {
    /// A notification with the given method and (already serialised) parameters.
    pub fn new(method: impl Into<Cow<'static, str>>, params: Option<Box<RawValue>>) -> Self {
        Self {
            method: method.into(),
            params,
        }
    }
}

/// A successful response (the schema's `JSONRPCResultResponse`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JsonRpcResultResponse {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result, undecoded.
    pub result: Box<RawValue>,
}

impl JsonRpcResultResponse {
    /// A response carrying `result` for request `id`.
    pub fn new(id: RequestId, result: Box<RawValue>) -> Self {
        Self { id, result }
    }
}

/// An error response (the schema's `JSONRPCErrorResponse`).
///
/// The id is absent only when the request's id could not be read (a parse error, or a
/// message too malformed to find it); it is then omitted from the wire form.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JsonRpcErrorResponse {
    /// The id of the request this answers, when it could be read.
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorData,
}

impl JsonRpcErrorResponse {
    /// An error response to request `id`.
    pub fn new(id: Option<RequestId>, error: ErrorData) -> Self {
        Self { id, error }
    }
}

crate::setters::untagged_union! {
    /// Any JSON-RPC message that can be decoded off the wire or encoded to be sent.
    #[derive(Debug, Clone)]
    pub enum JsonRpcMessage {
        /// A request.
        Request(JsonRpcRequest),
        /// A notification.
        Notification(JsonRpcNotification),
        /// A successful response.
        Response(JsonRpcResultResponse),
        /// An error response.
        Error(JsonRpcErrorResponse),
    }
}

impl JsonRpcMessage {
    /// Parses one message from bytes.
    ///
    /// The error says which JSON-RPC error answers the input: [`ErrorCode::PARSE_ERROR`]
    /// when the bytes are not JSON, [`ErrorCode::INVALID_REQUEST`] when they are JSON but
    /// not a message (with the request id when it could be read).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        // JSON text is UTF-8, and serde_json does not check the strings it skips. Checked
        // once, here: the text is then read as a `str`, whose strings and raw values
        // need no second check.
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::parse(text),
            Err(e) => Err(InvalidMessage::new(
                None,
                ErrorData::parse_error(format!("Parse error: not UTF-8: {e}")),
            )),
        }
    }

    fn parse(text: &str) -> Result<Self, InvalidMessage> {
        match serde_json::from_str::<Object>(text) {
            Ok(Object(envelope)) => envelope.classify(),
            Err(err) => Err(InvalidMessage::from_serde(text, err)),
        }
    }

    /// Serialises the message to its compact JSON form (no embedded newline).
    pub fn to_vec(&self) -> Vec<u8> {
        // Serialising these types cannot fail: every field is a string, an integer,
        // an already-valid raw JSON value or a `serde_json::Value`.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The method name of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            _ => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Request(r) => Some(&r.id),
            Self::Response(r) => Some(&r.id),
            Self::Error(e) => e.id.as_ref(),
            Self::Notification(_) => None,
        }
    }
}

impl std::str::FromStr for JsonRpcMessage {
    type Err = InvalidMessage;

    /// Parses one message from a string; see [`JsonRpcMessage::from_slice`].
    fn from_str(text: &str) -> Result<Self, InvalidMessage> {
        Self::parse(text)
    }
}

crate::setters::untagged_union! {
    /// A response to a request: a result or an error (the schema's `JSONRPCResponse`; in
    /// revisions before 2025-11-25 that name meant the result response only, which the
    /// `Result` variant carries).
    #[derive(Debug, Clone)]
    pub enum JsonRpcResponse {
        /// A successful response.
        Result(JsonRpcResultResponse),
        /// An error response.
        Error(JsonRpcErrorResponse),
    }
}

impl JsonRpcResponse {
    /// The id of the request this answers (absent only on some error responses).
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Result(r) => Some(&r.id),
            Self::Error(e) => e.id.as_ref(),
        }
    }
}

impl From<JsonRpcResponse> for JsonRpcMessage {
    fn from(r: JsonRpcResponse) -> Self {
        match r {
            JsonRpcResponse::Result(r) => Self::Response(r),
            JsonRpcResponse::Error(e) => Self::Error(e),
        }
    }
}

impl<'de> Deserialize<'de> for JsonRpcResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match JsonRpcMessage::deserialize(deserializer)? {
            JsonRpcMessage::Response(r) => Ok(Self::Result(r)),
            JsonRpcMessage::Error(e) => Ok(Self::Error(e)),
            _ => Err(de::Error::custom("expected a JSON-RPC response")),
        }
    }
}

/// Why bytes could not be read as a JSON-RPC message, and the error that answers them.
///
/// A message that is recognisably a *response* ([`InvalidMessage::is_response`]) is never
/// answered: its error only says what was wrong, and its id names the request of ours
/// it was meant to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMessage {
    /// The id of the offending request (or response), when one could be read.
    pub id: Option<RequestId>,
    /// The error to answer with: a parse error or an invalid request.
    pub error: ErrorData,
    /// The input has no `method` but a `result` or an `error`.
    response: bool,
}

impl InvalidMessage {
    pub(crate) fn new(id: Option<RequestId>, error: ErrorData) -> Self {
        Self {
            id,
            error,
            response: false,
        }
    }

    fn invalid(id: Option<RequestId>, reason: impl Into<Cow<'static, str>>) -> Self {
        Self::new(id, ErrorData::invalid_request(reason))
    }

    /// A malformed response: the reason says what was wrong with it.
    fn invalid_response(id: Option<RequestId>, reason: impl fmt::Display) -> Self {
        Self {
            id,
            error: ErrorData::invalid_request(format!("Invalid response: {reason}")),
            response: true,
        }
    }

    /// Whether the input is recognisably a response — no `method`, and a `result` or an
    /// `error` — that could not be read (an error object without `message`, a `code`
    /// that is not an integer, both `result` and `error`, an id that is no id, ...). An
    /// object with an id and none of `method`, `result` and `error` is not one: it is
    /// an invalid request, answered with `-32600` like any JSON that is not a message.
    /// A response is never answered: the receiver fails the request it answers
    /// ([`InvalidMessage::id`](InvalidMessage#structfield.id), when one could be read)
    /// or reports and drops it.
    pub fn is_response(&self) -> bool {
        self.response
    }

    fn from_serde(text: &str, err: serde_json::Error) -> Self {
        use serde_json::error::Category;
        match err.classify() {
            Category::Syntax | Category::Eof | Category::Io => {
                Self::new(None, ErrorData::parse_error(format!("Parse error: {err}")))
            }
            // The reader stops at the first member of the wrong shape: what follows may
            // still not be JSON, which is a parse error whatever came before.
            Category::Data if serde_json::from_str::<de::IgnoredAny>(text).is_err() => {
                Self::new(None, ErrorData::parse_error(format!("Parse error: {err}")))
            }
            Category::Data => {
                // Valid JSON of the wrong shape (only here, off the path of well-formed
                // messages, is it read a second time): recover the id to answer it, and
                // whether it was meant as a response, which is never answered.
                match serde_json::from_str::<Shape>(text) {
                    Ok(shape) if shape.is_response() => match shape.error_fault() {
                        Some(fault) => Self::invalid_response(shape.id, fault),
                        None => Self::invalid_response(shape.id, err),
                    },
                    Ok(shape) => Self::invalid(shape.id, format!("Invalid request: {err}")),
                    Err(_) => Self::invalid(None, format!("Invalid request: {err}")),
                }
            }
        }
    }

    /// Whether the input was not JSON at all.
    pub fn is_parse_error(&self) -> bool {
        self.error.code == ErrorCode::PARSE_ERROR
    }

    /// The error response that answers the input.
    pub fn into_response(self) -> JsonRpcErrorResponse {
        JsonRpcErrorResponse::new(self.id, self.error)
    }
}

impl fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for InvalidMessage {}

/// Every member a JSON-RPC message may have; serde's derive rejects a repeated key.
/// Read through [`Object`]: the derive alone would also take a JSON array as the
/// members in order (`["2.0", 1, "ping"]` as a ping).
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jsonrpc: Option<Version>,
    #[serde(default, deserialize_with = "present_id")]
    id: Option<IdOrNull>,
    #[serde(default)]
    method: Option<MethodName>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<ErrorData>,
}

/// An [`Envelope`] read from a JSON object only.
struct Object(Envelope);

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectOnly;
        impl<'de> Visitor<'de> for ObjectOnly {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Object, A::Error> {
                Envelope::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }
        deserializer.deserialize_map(ObjectOnly)
    }
}

/// Which members a message that did not decode has: enough to find its id and to tell
/// a response from a request. Members are only noted (the error object is kept raw).
#[derive(Deserialize)]
struct Shape {
    #[serde(default, deserialize_with = "lenient_id")]
    id: Option<RequestId>,
    #[serde(default, deserialize_with = "present")]
    method: bool,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default)]
    error: Option<Box<RawValue>>,
}

impl Shape {
    fn is_response(&self) -> bool {
        !self.method && (self.result || self.error.is_some())
    }

    /// What is wrong with the error object, when that is what could not be read.
    fn error_fault(&self) -> Option<String> {
        let error = self.error.as_deref()?;
        let fault = serde_json::from_str::<ErrorData>(error.get()).err()?;
        Some(format!("its error object cannot be read: {fault}"))
    }
}

/// An id of the JSON-RPC form, or `None` for `null` or anything else.
fn lenient_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<RequestId>, D::Error> {
    let raw = Box::<RawValue>::deserialize(deserializer)?;
    Ok(serde_json::from_str::<RequestId>(raw.get()).ok())
}

/// The member is there, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    de::IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// `Option`'s own impl would read `null` as absent; an explicit `null` must stay visible.
fn present_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<IdOrNull>, D::Error> {
    IdOrNull::deserialize(deserializer).map(Some)
}

impl Envelope {
    fn classify(self) -> Result<JsonRpcMessage, InvalidMessage> {
        let id = match self.id {
            None => None,
            Some(IdOrNull::Id(id)) => Some(id),
            Some(IdOrNull::Null) if self.error.is_some() && self.method.is_none() => None,
            Some(IdOrNull::Null) => {
                let response = self.method.is_none() && self.result.is_some();
                return Err(if response {
                    InvalidMessage::invalid_response(None, "its id must not be null")
                } else {
                    InvalidMessage::invalid(None, "request id must not be null")
                });
            }
        };
        // Recognisably a response (see `Shape::is_response`): never answered, so its
        // faults are told apart from a request's.
        let response = self.method.is_none() && (self.result.is_some() || self.error.is_some());
        let fail = |reason: &'static str| {
            Err(if response {
                InvalidMessage::invalid_response(id.clone(), reason)
            } else {
                InvalidMessage::invalid(id.clone(), reason)
            })
        };
        if !matches!(self.jsonrpc, Some(Version(true))) {
            return fail("jsonrpc must be \"2.0\"");
        }
        if let Some(params) = &self.params {
            if response {
                return fail("a response has no params");
            }
            let first = params.get().as_bytes().first();
            if !matches!(first, Some(b'{') | Some(b'[')) {
                return fail("params must be an object or an array");
            }
        }
        match (self.method, self.result, self.error) {
            (Some(MethodName(method)), None, None) => Ok(match id {
                Some(id) => JsonRpcMessage::Request(JsonRpcRequest {
                    id,
                    method,
                    params: self.params,
                }),
                None => JsonRpcMessage::Notification(JsonRpcNotification {
                    method,
                    params: self.params,
                }),
            }),
            (None, Some(result), None) => match id {
                Some(id) => Ok(JsonRpcMessage::Response(JsonRpcResultResponse {
                    id,
                    result,
                })),
                None => fail("a result response needs an id"),
            },
            (None, None, Some(error)) => {
                Ok(JsonRpcMessage::Error(JsonRpcErrorResponse { id, error }))
            }
            (None, Some(_), Some(_)) => fail("it has both result and error"),
            _ => fail("not a request, notification or response"),
        }
    }
}

impl<'de> Deserialize<'de> for JsonRpcMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Object::deserialize(deserializer)?
            .0
            .classify()
            .map_err(|e| de::Error::custom(e.error.message))
    }
}

impl Serialize for JsonRpcRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("JSONRPCRequest", 4)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for JsonRpcNotification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("JSONRPCNotification", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for JsonRpcResultResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("JSONRPCResultResponse", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("result", &self.result)?;
        s.end()
    }
}

impl Serialize for JsonRpcErrorResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("JSONRPCErrorResponse", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        if let Some(id) = &self.id {
            s.serialize_field("id", id)?;
        }
        s.serialize_field("error", &self.error)?;
        s.end()
    }
}

crate::setters::variant_of!(JsonRpcMessage {
    Request(JsonRpcRequest) "expected a JSON-RPC request",
    Notification(JsonRpcNotification) "expected a JSON-RPC notification",
    Response(JsonRpcResultResponse) "expected a JSON-RPC result response",
    Error(JsonRpcErrorResponse) "expected a JSON-RPC error response",
});

/// Serialises a value into a raw JSON value (for parameters and results).
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<JsonRpcMessage, InvalidMessage> {
        s.parse()
    }

    #[test]
    fn classifies_each_kind() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(JsonRpcMessage::Request(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(JsonRpcMessage::Notification(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(JsonRpcMessage::Response(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#),
            Ok(JsonRpcMessage::Error(JsonRpcErrorResponse { id: None, .. }))
        ));
    }

    /// Found by the `jsonrpc_decode` fuzz target: serde's derived struct reader also
    /// takes a JSON array as the fields in order, so `["2.0", 1, "ping"]` was a ping.
    #[test]
    fn an_array_is_never_a_message() {
        for text in [
            r#"["2.0",1,"ping"]"#,
            r#"["2.0"]"#,
            "[]",
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST, "{text}");
        }
    }

    /// Found by the `jsonrpc_decode` fuzz target: input that is not JSON got -32600
    /// when its first value already had the wrong shape (the parser stopped there).
    #[test]
    fn input_that_is_not_json_is_a_parse_error_whatever_its_shape() {
        for text in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"params":1=}]"#,
            r#"{"jsonrpc":2,"id":1,"method":"ping""#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping",,}"#,
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.error.code, ErrorCode::PARSE_ERROR, "{text}");
            assert!(err.id.is_none());
        }
    }

    /// Found by the `jsonrpc_decode` fuzz target: serde_json does not check the UTF-8
    /// of strings it skips, so bytes that are not JSON (JSON is UTF-8) decoded as a
    /// message when the bad bytes sat in an unknown member.
    #[test]
    fn input_that_is_not_utf8_is_a_parse_error() {
        for text in [
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"junk\":\"\xff\"}"[..],
            b"{\"jsonrpc\":2,\"junk\":\"\xff\"}",
        ] {
            let err = JsonRpcMessage::from_slice(text).unwrap_err();
            assert_eq!(err.error.code, ErrorCode::PARSE_ERROR);
        }
    }

    #[test]
    fn rejects_null_id_on_request() {
        let err = parse(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).unwrap_err();
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    }

    #[test]
    fn rejects_duplicate_keys_and_keeps_case() {
        let err = parse(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#).unwrap_err();
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
        // "ID" is not "id": this is a notification with an unknown extra member.
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","ID":1,"method":"ping"}"#),
            Ok(JsonRpcMessage::Notification(_))
        ));
    }

    #[test]
    fn not_json_is_a_parse_error_and_bad_shape_keeps_the_id() {
        assert!(parse("{not json").unwrap_err().is_parse_error());
        let err = parse(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).unwrap_err();
        assert_eq!(err.id, Some(RequestId::Number(7)));
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
        let err = parse(r#"{"jsonrpc":"2.0","id":7,"method":3}"#).unwrap_err();
        assert_eq!(err.id, Some(RequestId::Number(7)));
    }

    /// Found by the session property tests: a response whose error object
    /// could not be read was an invalid request, which a receiver answers.
    #[test]
    fn a_malformed_response_is_told_apart_from_a_request() {
        for (text, id) in [
            (
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000}}"#,
                Some(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":"x","message":"m"}}"#,
                Some(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":1.5,"message":"m"}}"#,
                Some(3),
            ),
            (r#"{"jsonrpc":"2.0","id":3,"error":"boom"}"#, Some(3)),
            (
                r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}}"#,
                Some(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"result":{},"params":{}}"#,
                Some(3),
            ),
            (r#"{"jsonrpc":"1.0","id":3,"result":{}}"#, Some(3)),
            (r#"{"jsonrpc":"2.0","id":null,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","error":{"message":"no code"}}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":{},"error":{"code":1,"message":"m"}}"#,
                None,
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.is_response(), "{text}: {err}");
            assert_eq!(err.id, id.map(RequestId::Number), "{text}");
            assert!(
                err.error.message.starts_with("Invalid response: "),
                "{text}: {err}"
            );
        }
        // With a method (whatever its value), or with neither result nor error (an id
        // alone: SECURITY.md case 6 answers it), it is not.
        for text in [
            r#"{"jsonrpc":"2.0","id":3,"method":3}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","result":{}}"#,
            r#"{"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":3}"#,
            r#"{"jsonrpc":"2.0","id":null}"#,
            "[]",
            "{not json",
        ] {
            let err = parse(text).unwrap_err();
            assert!(!err.is_response(), "{text}: {err}");
        }
    }

    #[test]
    fn serialises_compactly_with_version_first() {
        let msg = JsonRpcMessage::Request(JsonRpcRequest::new(
            RequestId::Number(1),
            "tools/list",
            Some(to_raw(&serde_json::json!({"cursor": "c"})).unwrap()),
        ));
        assert_eq!(
            String::from_utf8(msg.to_vec()).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}"#
        );
    }
}
