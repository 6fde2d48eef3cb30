//! Multi round-trip requests (2026-07-28, SEP-2322).
//!
//! Instead of sending its own requests to the client, a server answers `tools/call`,
//! `prompts/get` or `resources/read` with an [`InputRequiredResult`]: the
//! `sampling/createMessage`, `roots/list` and `elicitation/create` requests it needs
//! answered ([`InputRequests`], by key) and an opaque `requestState`. The client
//! retries the original request with the answers ([`InputResponses`], same keys) and
//! the `requestState` in its params. The embedded requests have neither `jsonrpc` nor
//! `id`: they are the request types' bare form.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::{JsonObject, ResultType, from_object, str_member};
use crate::common::Meta;
use crate::elicitation::{ElicitRequest, ElicitResult};
use crate::roots::{ListRootsRequest, ListRootsResult};
use crate::sampling::{CreateMessageRequest, CreateMessageResult};

crate::setters::untagged_union! {
    /// A request a server needs answered before it can finish (the schema's
    /// `InputRequest`), told apart by `method`.
    #[derive(Debug, Clone, PartialEq)]
    #[non_exhaustive]
    pub enum InputRequest {
        /// `sampling/createMessage`.
        CreateMessage(CreateMessageRequest),
        /// `roots/list`.
        ListRoots(ListRootsRequest),
        /// `elicitation/create`.
        Elicit(ElicitRequest),
    }
    read |map| {
        match str_member(&map, "method") {
            Some(CreateMessageRequest::METHOD) => from_object(map).map(Self::CreateMessage),
            Some(ListRootsRequest::METHOD) => from_object(map).map(Self::ListRoots),
            Some(ElicitRequest::METHOD) => from_object(map).map(Self::Elicit),
            Some(other) => Err(de::Error::custom(format!(
                "unknown input request method {other:?}"
            ))),
            None => Err(de::Error::missing_field("method")),
        }
    }
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::CreateMessage(_) => CreateMessageRequest::METHOD,
            Self::ListRoots(_) => ListRootsRequest::METHOD,
            Self::Elicit(_) => ElicitRequest::METHOD,
        }
    }
}

/// The input requests of an [`InputRequiredResult`], by a key the server chooses
/// (the schema's `InputRequests`).
pub type InputRequests = BTreeMap<String, InputRequest>;

crate::setters::untagged_union! {
    /// The client's answer to one [`InputRequest`] (the schema's `InputResponse`).
    ///
    /// Deserialisation picks the variant from the members present: `model` →
    /// `CreateMessage`, `roots` → `ListRoots`, `action` → `Elicit`; anything else is an
    /// error.
    #[derive(Debug, Clone, PartialEq)]
    #[non_exhaustive]
    pub enum InputResponse {
        /// The answer to `sampling/createMessage`.
        CreateMessage(CreateMessageResult),
        /// The answer to `roots/list`.
        ListRoots(ListRootsResult),
        /// The answer to `elicitation/create`.
        Elicit(ElicitResult),
    }
    read |map| {
        match answer_member(&map) {
            Some("model") => from_object(map).map(Self::CreateMessage),
            Some("roots") => from_object(map).map(Self::ListRoots),
            Some(_) => from_object(map).map(Self::Elicit),
            None => Err(de::Error::custom(ANSWER_SHAPE)),
        }
    }
}

/// What an input response must have to be told apart.
const ANSWER_SHAPE: &str = "an input response is an object with `model`, `roots` or `action`";

/// The member that tells an input response's kind: `model` (sampling), `roots` or
/// `action` (elicitation), looked for in that order.
fn answer_member(map: &JsonObject) -> Option<&'static str> {
    ["model", "roots", "action"]
        .into_iter()
        .find(|k| map.contains_key(*k))
}

/// The client's answers, by the keys of the server's [`InputRequests`] (the schema's
/// `InputResponses`).
///
/// Each answer is kept as the JSON it came in and decoded when it is read
/// ([`InputResponses::get`], [`InputResponses::get_as`]): a server whose handlers never
/// ask for input carries no code to decode sampling, roots or elicitation results.
/// Reading the map checks each answer's shape only (an object with `model`, `roots` or
/// `action`).
///
/// ```
/// use modelctx_types::{ElicitResult, InputResponse, InputResponses};
///
/// let answers = InputResponses::new().with("name", ElicitResult::decline());
/// let answer: ElicitResult = answers.get_as("name").unwrap().unwrap();
/// assert_eq!(answer, ElicitResult::decline());
/// assert!(matches!(answers.get("name"), Some(Ok(InputResponse::Elicit(_)))));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct InputResponses(BTreeMap<String, Value>);

impl InputResponses {
    /// No answers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `response` as the answer under `key`, replacing an earlier one.
    #[inline]
    pub fn insert(&mut self, key: impl Into<String>, response: impl Into<InputResponse>) {
        let value = serde_json::to_value(response.into()).unwrap_or(Value::Null);
        self.0.insert(key.into(), value);
    }

    /// These answers and `response` under `key`.
    pub fn with(mut self, key: impl Into<String>, response: impl Into<InputResponse>) -> Self {
        self.insert(key, response);
        self
    }

    /// The answer under `key`, decoded (`None`: no answer under that key).
    #[inline]
    pub fn get(&self, key: &str) -> Option<Result<InputResponse, serde_json::Error>> {
        self.get_as(key)
    }

    /// The answer under `key` decoded as `R`, such as [`ElicitResult`] (`None`: no
    /// answer under that key).
    pub fn get_as<R: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Option<Result<R, serde_json::Error>> {
        self.0.get(key).map(R::deserialize)
    }

    /// The answer under `key` as it was sent.
    pub fn raw(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The keys answered, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// How many answers there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'de> Deserialize<'de> for InputResponses {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, Value>::deserialize(deserializer)?;
        if map
            .values()
            .all(|v| v.as_object().and_then(answer_member).is_some())
        {
            Ok(Self(map))
        } else {
            Err(de::Error::custom(ANSWER_SHAPE))
        }
    }
}

impl<K: Into<String>, R: Into<InputResponse>> FromIterator<(K, R)> for InputResponses {
    fn from_iter<I: IntoIterator<Item = (K, R)>>(iter: I) -> Self {
        let mut responses = Self::new();
        for (key, response) in iter {
            responses.insert(key, response);
        }
        responses
    }
}

impl From<BTreeMap<String, InputResponse>> for InputResponses {
    #[inline]
    fn from(map: BTreeMap<String, InputResponse>) -> Self {
        map.into_iter().collect()
    }
}

/// The answers as sent, by key.
impl IntoIterator for InputResponses {
    type Item = (String, Value);
    type IntoIter = std::collections::btree_map::IntoIter<String, Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Declares the params of a request that may be retried with input responses
/// (`tools/call`, `prompts/get`, `resources/read`): `_meta`, `input_responses` and
/// `request_state` (2026-07-28), then the request's own members (a
/// [`wire_struct!`](crate::setters::wire_struct) body), with `new` as declared and the
/// items that follow.
macro_rules! retryable_params {
    ($(#[$doc:meta])* pub struct $name:ident { $($body:tt)* } $($rest:tt)*) => {
        $crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                meta => with_meta,
                /// The client's answers to the input requests of an earlier `InputRequiredResult`,
                /// by key (2026-07-28, multi round-trip requests).
                input_responses?: $crate::mrtr::InputResponses => with_input_responses "2026-07-28",
                /// The opaque `requestState` of an earlier `InputRequiredResult`, echoed back
                /// (2026-07-28, multi round-trip requests).
                request_state?: String => with_request_state "2026-07-28",
                $($body)*
            }
            $($rest)*
        }
    };
}

pub(crate) use retryable_params;

crate::setters::optional_members! {
    /// The schema's `InputResponseRequestParams`: the members a retried request adds to
    /// its params. `tools/call`, `prompts/get` and `resources/read` carry them as
    /// `input_responses` and `request_state` on their own params types.
    pub struct InputResponseRequestParams {
        /// Metadata (the request's `io.modelcontextprotocol/*` keys).
        #[serde(rename = "_meta")]
        with_meta(meta: impl Into<Meta>),
        /// The answers.
        with_input_responses(input_responses: impl Into<InputResponses>),
        /// The `requestState` of the `InputRequiredResult`, echoed back unchanged.
        with_request_state(request_state: impl Into<String>),
    }
    /// Empty parameters.
    new;
}

crate::setters::wire_struct! {
    /// The interim answer of a multi round-trip request: the server needs input first
    /// (the schema's `InputRequiredResult`, `resultType: "input_required"`).
    ///
    /// At least one of `input_requests` and `request_state` must be present.
    pub struct InputRequiredResult {
        meta => with_meta,
        /// Always [`ResultType::InputRequired`] when built by this SDK.
        pub result_type: ResultType,
        /// What the client must answer, by key.
        input_requests?: InputRequests,
        /// Opaque server state the client echoes back on the retry.
        request_state?: String => with_request_state,
    }
    /// An interim result asking for these inputs.
    pub fn new(input_requests: impl Into<InputRequests>) -> Self {
        Self {
            meta: None,
            result_type: ResultType::InputRequired,
            input_requests: Some(input_requests.into()),
            request_state: None,
        }
    }

    /// An interim result carrying only state (the client retries at once).
    pub fn with_state_only(request_state: impl Into<String>) -> Self {
        Self {
            meta: None,
            result_type: ResultType::InputRequired,
            input_requests: None,
            request_state: Some(request_state.into()),
        }
    }
}

/// The answer to a request that may need input first: an [`InputRequiredResult`] or
/// the method's own result `R` (the `result` of `CallToolResultResponse`,
/// `GetPromptResultResponse` and `ReadResourceResultResponse`).
///
/// Read by `resultType`: `"input_required"` is `InputRequired`; anything else,
/// including no `resultType` (earlier revisions), is `Complete`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequiredOr<R> {
    /// The server needs input; retry with the answers.
    InputRequired(InputRequiredResult),
    /// The final result.
    Complete(R),
}

impl<R: Serialize> Serialize for InputRequiredOr<R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::InputRequired(r) => r.serialize(serializer),
            Self::Complete(r) => r.serialize(serializer),
        }
    }
}

impl<'de, R: for<'a> Deserialize<'a>> Deserialize<'de> for InputRequiredOr<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        if is_input_required(&map) {
            from_object(map).map(Self::InputRequired)
        } else {
            from_object(map).map(Self::Complete)
        }
    }
}

/// Whether a result object says `"resultType": "input_required"`.
pub(crate) fn is_input_required(map: &JsonObject) -> bool {
    matches!(map.get("resultType"), Some(Value::String(t)) if t == "input_required")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::to_raw;
    use crate::messages::ServerResult;
    use crate::tools::CallToolResult;
    use serde_json::json;

    #[test]
    fn input_required_or_reads_by_result_type() {
        let interim = json!({"resultType": "input_required", "requestState": "s",
            "inputRequests": {"r": {"method": "roots/list"}}});
        let r: InputRequiredOr<CallToolResult> = serde_json::from_value(interim.clone()).unwrap();
        let InputRequiredOr::InputRequired(ir) = &r else {
            panic!("{r:?}")
        };
        assert_eq!(
            ir.input_requests.as_ref().unwrap()["r"].method(),
            "roots/list"
        );
        assert_eq!(serde_json::to_value(&r).unwrap(), interim);
        // No resultType (an earlier revision's server) is complete.
        let done: InputRequiredOr<CallToolResult> =
            serde_json::from_value(json!({"content": []})).unwrap();
        assert!(matches!(done, InputRequiredOr::Complete(_)));
        // The embedded requests have no id; a request with an unknown method is refused.
        assert!(serde_json::from_value::<InputRequest>(json!({"method": "tools/call"})).is_err());
    }

    #[test]
    fn server_result_from_method_knows_input_required() {
        let raw = to_raw(&json!({"resultType": "input_required", "requestState": "x"})).unwrap();
        for method in ["tools/call", "prompts/get", "resources/read"] {
            assert!(matches!(
                ServerResult::from_method(method, &raw).unwrap(),
                ServerResult::InputRequired(_)
            ));
        }
        let raw = to_raw(&json!({"resultType": "complete", "content": [],
            "structuredContent": [1, 2]}))
        .unwrap();
        let ServerResult::CallTool(r) = ServerResult::from_method("tools/call", &raw).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.structured_content, Some(json!([1, 2])));
    }

    #[test]
    fn input_responses_by_shape() {
        let v = json!({"a": {"action": "decline"}, "b": {"roots": []}});
        let r: InputResponses = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(r.get("a"), Some(Ok(InputResponse::Elicit(_)))));
        assert!(matches!(r.get("b"), Some(Ok(InputResponse::ListRoots(_)))));
        assert!(r.get("c").is_none());
        assert_eq!(r.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        assert!(serde_json::from_value::<InputResponse>(json!({})).is_err());
        // The map checks each answer's shape; a well-shaped answer with bad members
        // fails when it is read.
        assert!(serde_json::from_value::<InputResponses>(json!({"a": {}})).is_err());
        assert!(serde_json::from_value::<InputResponses>(json!({"a": 5})).is_err());
        let late: InputResponses = serde_json::from_value(json!({"a": {"action": 5}})).unwrap();
        assert!(late.get("a").unwrap().is_err());
        assert!(late.get_as::<ElicitResult>("a").unwrap().is_err());
    }
}
