//! The generic shapes every message builds on: the base request, notification and
//! result, the common parameter objects, pagination.

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer};
use serde_json::{Map, Value};

use crate::common::{Cursor, Meta, ProgressToken};
use crate::jsonrpc::RequestId;
use crate::tag::JsonRpcTag;

/// A JSON object (open: every key is kept); the schema's `JSONObject` (2026-07-28).
pub type JsonObject = Map<String, Value>;

/// Any JSON value (the schema's `JSONValue`, 2026-07-28).
///
/// The 2026-07-28 schema's `JSONValue` leaves out `null` and non-integer numbers; this
/// alias reads and writes every JSON value.
pub type JsonValue = Value;

/// A JSON array (the schema's `JSONArray`, 2026-07-28).
pub type JsonArray = Vec<Value>;

/// Reads a present `id` member: an explicit `null` is an error, not "absent".
pub(crate) fn de_some_id<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<RequestId>, D::Error> {
    RequestId::deserialize(deserializer).map(Some)
}

/// Decodes a JSON object into `T`, mapping the error into the deserializer's.
pub(crate) fn from_object<T: DeserializeOwned, E: de::Error>(map: JsonObject) -> Result<T, E> {
    serde_json::from_value(Value::Object(map)).map_err(E::custom)
}

/// The string member `key` of an object, if it is a string.
pub(crate) fn str_member<'a>(map: &'a JsonObject, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

crate::open_enum::open_enum! {
    /// What kind of result a response carries (the schema's `ResultType`, 2026-07-28).
    ///
    /// Every result of 2026-07-28 names its kind in `resultType`; a result without the
    /// member (every earlier revision) is to be read as [`ResultType::Complete`].
    pub enum ResultType {
        /// `"complete"`: the request is done and the result is final.
        Complete = "complete",
        /// `"input_required"`: an [`InputRequiredResult`](crate::InputRequiredResult); the
        /// client answers its input requests and retries the request.
        InputRequired = "input_required",
    }
}

impl ResultType {
    /// The kind of a result whose `resultType` is `value` (absent means complete).
    pub fn or_complete(value: Option<&Self>) -> Self {
        value.cloned().unwrap_or(Self::Complete)
    }
}

/// Declares the generic request and notification shapes: a method, open parameters and
/// every other member, with `new(method)`.
macro_rules! generic_messages {
    ($($(#[$doc:meta])* $name:ident, $new_doc:literal;)+) => {$(
        crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                /// The method name.
                pub method: String,
                /// The parameters: an open object.
                params?: JsonObject => with_params,
                ..
                /// Any other member (e.g. `jsonrpc` and `id` of a full JSON-RPC message).
                extra,
            }
            #[doc = $new_doc]
            new(method: impl Into<String>);
        }
    )+};
}

generic_messages! {
    /// The generic request shape (the schema's `Request`): a method and open parameters.
    GenericRequest, "A request shape with a method and no parameters.";
    /// The generic notification shape (the schema's `Notification`).
    GenericNotification, "A notification shape with a method and no parameters.";
}

crate::setters::optional_members! {
    /// The generic result (the schema's `Result`): `_meta` plus any other keys, all kept.
    pub struct GenericResult {
        meta,
        /// The kind of result (2026-07-28; absent before, which means complete).
        with_result_type(result_type: impl Into<ResultType>),
        ..
        /// Every other key of the result.
        extra,
    }
    /// An empty result, `{}`.
    new;

    /// Adds a key.
    #[must_use]
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }
}

/// A result that carries no data (the schema's `EmptyResult`, an alias of `Result`).
pub type EmptyResult = GenericResult;

crate::setters::optional_members! {
    /// Parameters every request may carry: `_meta` (with `progressToken`).
    pub struct RequestParams {
        /// Metadata; `progressToken` asks for progress notifications.
        #[serde(rename = "_meta")]
        with_meta(meta: impl Into<Meta>),
    }
    /// Empty parameters.
    new;

    /// Asks for progress notifications with this token.
    #[must_use]
    pub fn with_progress_token(mut self, token: impl Into<ProgressToken>) -> Self {
        self.meta
            .get_or_insert_with(Meta::new)
            .set_progress_token(token.into());
        self
    }
}

crate::setters::optional_members! {
    /// Parameters every notification may carry: `_meta`.
    pub struct NotificationParams {
        meta,
    }
    /// Empty parameters.
    new;
}

crate::setters::optional_members! {
    /// Parameters of a request that may be task-augmented (the schema's
    /// `TaskAugmentedRequestParams`).
    pub struct TaskAugmentedRequestParams {
        meta,
        /// When present, asks for task-augmented execution.
        with_task(task: impl Into<TaskMetadata>),
    }
    /// Empty parameters.
    new;
}

crate::setters::optional_members! {
    /// Parameters of a paginated list request.
    pub struct PaginatedRequestParams {
        meta,
        /// Where to continue listing, from a previous result's `nextCursor`.
        with_cursor(cursor: impl Into<Cursor>),
    }
    /// Parameters asking for the first page.
    new;

    /// Parameters asking for the page after `cursor`.
    pub fn after(cursor: impl Into<Cursor>) -> Self {
        Self::new().with_cursor(cursor)
    }
}

crate::setters::wire_struct! {
    /// The generic paginated request (the schema's `PaginatedRequest`): any list method.
    pub struct PaginatedRequest {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        jsonrpc: Option<JsonRpcTag>,
        /// The request id (`None` only in the bare form of earlier revisions).
        #[serde(deserialize_with = "de_some_id")]
        id?: RequestId,
        /// The list method.
        pub method: String,
        /// The parameters.
        params?: PaginatedRequestParams => with_params,
    }
    /// A list request with an id and a method.
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            id: Some(id.into()),
            method: method.into(),
            params: None,
        }
    }
}

crate::setters::optional_members! {
    /// The generic paginated result (the schema's `PaginatedResult`).
    pub struct PaginatedResult {
        meta,
        /// The kind of result (2026-07-28; absent before, which means complete).
        with_result_type(result_type: impl Into<ResultType>),
        /// Present when there may be more results.
        with_next_cursor(next_cursor: impl Into<Cursor>),
    }
    /// A last page.
    new;
}

crate::setters::optional_members! {
    /// Asks for task-augmented execution (the `task` member of request parameters).
    pub struct TaskMetadata {
        /// Requested retention from creation, in milliseconds.
        with_ttl(ttl: impl Into<u64>),
    }
    /// No requested retention.
    new;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generic_result_keeps_unknown_keys_and_meta() {
        let v = json!({"_meta": {"a/b": 1}, "x": [1, 2], "y": {"z": null}});
        let r: GenericResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.meta.as_ref().unwrap().get("a/b"), Some(&json!(1)));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }

    #[test]
    fn request_params_progress_token() {
        let p = RequestParams::new().with_progress_token(7);
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"_meta": {"progressToken": 7}})
        );
    }

    #[test]
    fn paginated_request_rejects_null_id() {
        let err = serde_json::from_value::<PaginatedRequest>(
            json!({"jsonrpc":"2.0","id":null,"method":"tools/list"}),
        );
        assert!(err.is_err());
        let v = json!({"method":"tools/list","params":{"cursor":"c"}});
        let ok: PaginatedRequest = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(ok.id, None);
        assert_eq!(serde_json::to_value(&ok).unwrap(), v);
    }
}
