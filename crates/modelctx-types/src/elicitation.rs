//! Elicitation: `elicitation/create` in form mode (see
//! [`RequestedSchema`](crate::RequestedSchema) for the form) and URL mode (2025-11-25),
//! `notifications/elicitation/complete` and the `-32042` URL-elicitation-required
//! error.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::base::TaskMetadata;
use crate::base::from_object;
use crate::elicitation_schema::{ElicitValue, RequestedSchema};
use crate::error::{ErrorCode, ErrorData};
use crate::jsonrpc::{JsonRpcErrorResponse, RequestId};
use crate::tag::fixed_tag;

crate::envelope::requests! {
    /// Asks the client to elicit information from the user.
    ElicitRequest = Elicit("elicitation/create", required ElicitRequestParams) -> ElicitResult;
}

crate::envelope::notifications! {
    /// Tells the client an out-of-band (URL) elicitation completed.
    ElicitationCompleteNotification = ElicitationComplete("notifications/elicitation/complete", required ElicitationCompleteNotificationParams);
}

fixed_tag! {
    FormModeTag, FormModeValue = "form";
    UrlModeTag, UrlModeValue = "url";
}

crate::setters::wire_struct! {
    /// Parameters of a form-mode `elicitation/create`.
    pub struct ElicitRequestFormParams {
        meta => with_meta,
        /// When present, asks for task-augmented execution.
        task?: TaskMetadata => with_task,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<FormModeTag> = Some(FormModeTag::new()),
        /// What is asked and why.
        pub message: String,
        /// The form.
        pub requested_schema: RequestedSchema,
    }
    /// A form request (`mode` is written as `"form"`).
    new(message: impl Into<String>, requested_schema: RequestedSchema);

    /// Omits `mode` (the 2025-06-18 form, which had no modes).
    #[must_use]
    pub fn without_mode(mut self) -> Self {
        self.mode = None;
        self
    }
}

crate::setters::wire_struct! {
    /// Parameters of a URL-mode `elicitation/create`.
    pub struct ElicitRequestUrlParams {
        meta => with_meta,
        /// When present, asks for task-augmented execution.
        task?: TaskMetadata => with_task,
        mode: UrlModeTag,
        /// Why the interaction is needed.
        pub message: String,
        /// An id unique within the server (opaque to the client). Required in 2025-11-25;
        /// 2026-07-28 removed it (a server correlates retries through `requestState`).
        elicitation_id?: String,
        /// The URL the user should open.
        pub url: String,
    }
    /// A URL request with an elicitation id (the 2025-11-25 form).
    pub fn new(
        message: impl Into<String>,
        elicitation_id: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        Self {
            meta: None,
            task: None,
            mode: UrlModeTag::new(),
            message: message.into(),
            elicitation_id: Some(elicitation_id.into()),
            url: url.into(),
        }
    }

    /// A URL request without an elicitation id (the 2026-07-28 form, sent inside an
    /// `InputRequiredResult`).
    pub fn without_elicitation_id(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            meta: None,
            task: None,
            mode: UrlModeTag::new(),
            message: message.into(),
            elicitation_id: None,
            url: url.into(),
        }
    }

    /// The elicitation id, `""` when absent (2026-07-28).
    pub fn elicitation_id(&self) -> &str {
        self.elicitation_id.as_deref().unwrap_or_default()
    }
}

crate::setters::untagged_union! {
    /// `ElicitRequestFormParams | ElicitRequestURLParams`, told apart by `mode` (absent or
    /// `"form"`: form; `"url"`: URL; anything else is an error).
    #[derive(Debug, Clone, PartialEq)]
    pub enum ElicitRequestParams {
        /// Form mode.
        Form(ElicitRequestFormParams),
        /// URL mode.
        Url(ElicitRequestUrlParams),
    }
    read |map| {
        match map.get("mode") {
            None => Ok(Self::Form(from_object(map)?)),
            Some(m) if m == FormModeTag::VALUE => Ok(Self::Form(from_object(map)?)),
            Some(m) if m == UrlModeTag::VALUE => Ok(Self::Url(from_object(map)?)),
            Some(other) => Err(de::Error::custom(format!(
                "unsupported elicitation mode {other}"
            ))),
        }
    }
}

impl ElicitRequestParams {
    /// The mode name.
    pub fn mode(&self) -> &'static str {
        match self {
            Self::Form(_) => FormModeTag::VALUE,
            Self::Url(_) => UrlModeTag::VALUE,
        }
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            Self::Form(p) => &p.message,
            Self::Url(p) => &p.message,
        }
    }
}

crate::open_enum::open_enum! {
    /// What the user did.
    pub enum ElicitAction {
        /// Submitted or confirmed.
        Accept = "accept",
        /// Explicitly declined.
        Decline = "decline",
        /// Dismissed without choosing.
        Cancel = "cancel",
    }
}

crate::setters::wire_struct! {
    /// The client's answer to `elicitation/create`.
    pub struct ElicitResult {
        meta => with_meta,
        /// What the user did.
        pub action: ElicitAction,
        /// The submitted form (only for an accepted form).
        content?: BTreeMap<String, ElicitValue> => with_content,
    }
    /// A result with this action and no content.
    new(action: ElicitAction);

    /// An accepted form with these values.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        Self::new(ElicitAction::Accept).with_content(content)
    }

    /// A declined request.
    pub fn decline() -> Self {
        Self::new(ElicitAction::Decline)
    }

    /// A cancelled request.
    pub fn cancel() -> Self {
        Self::new(ElicitAction::Cancel)
    }
}

crate::setters::wire_struct! {
    /// Parameters of `notifications/elicitation/complete` (inline in the schema).
    pub struct ElicitationCompleteNotificationParams {
        meta,
        /// The completed elicitation.
        pub elicitation_id: String,
    }
    /// Parameters for `elicitation_id`.
    new(elicitation_id: impl Into<String>);
}

crate::setters::wire_struct! {
    /// The `data` of a `-32042` error: the URL elicitations to complete first.
    pub struct UrlElicitationRequiredData {
        /// The elicitations (URL mode, with ids).
        pub elicitations: Vec<ElicitRequestUrlParams>,
        ..
        /// Other keys.
        extra,
    }
    /// Data listing `elicitations`.
    new(elicitations: Vec<ElicitRequestUrlParams>);

    /// Reads it from an error, if the error is a well-formed `-32042`.
    #[inline]
    pub fn from_error(error: &ErrorData) -> Option<Self> {
        if error.code != ErrorCode::URL_ELICITATION_REQUIRED {
            return None;
        }
        Self::deserialize(error.data.as_ref()?).ok()
    }
}

impl ErrorData {
    /// `-32042`: the user must complete these URL elicitations first.
    #[inline]
    pub fn url_elicitation_required(elicitations: Vec<ElicitRequestUrlParams>) -> Self {
        UrlElicitationRequiredError::new(None, elicitations).to_error_data()
    }
}

/// A `-32042` error response (the schema's `URLElicitationRequiredError`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UrlElicitationRequiredError {
    /// The id of the request this answers.
    pub id: Option<RequestId>,
    /// The error message.
    pub message: String,
    /// The elicitations.
    pub data: UrlElicitationRequiredData,
}

impl UrlElicitationRequiredError {
    /// An error answering `id` with these elicitations.
    pub fn new(id: Option<RequestId>, elicitations: Vec<ElicitRequestUrlParams>) -> Self {
        let message = if elicitations.len() == 1 {
            "This request requires more information."
        } else {
            "This request requires more information (several elicitations)."
        };
        Self {
            id,
            message: message.to_owned(),
            data: UrlElicitationRequiredData::new(elicitations),
        }
    }

    /// The error object.
    #[inline]
    pub fn to_error_data(&self) -> ErrorData {
        let mut error = ErrorData::new(ErrorCode::URL_ELICITATION_REQUIRED, self.message.clone());
        error.data = serde_json::to_value(&self.data).ok();
        error
    }

    /// The generic error response.
    #[inline]
    pub fn to_response(&self) -> JsonRpcErrorResponse {
        JsonRpcErrorResponse::new(self.id.clone(), self.to_error_data())
    }

    /// Reads it from a generic error response, if it is a well-formed `-32042`.
    pub fn from_response(response: &JsonRpcErrorResponse) -> Option<Self> {
        Some(Self {
            id: response.id.clone(),
            message: response.error.message.clone().into_owned(),
            data: UrlElicitationRequiredData::from_error(&response.error)?,
        })
    }
}

impl Serialize for UrlElicitationRequiredError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_response().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for UrlElicitationRequiredError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let response = JsonRpcErrorResponse::deserialize(deserializer)?;
        if response.error.code != ErrorCode::URL_ELICITATION_REQUIRED {
            return Err(de::Error::custom("expected error code -32042"));
        }
        let data = response
            .error
            .data
            .as_ref()
            .ok_or_else(|| de::Error::missing_field("data"))?;
        let data = UrlElicitationRequiredData::deserialize(data).map_err(de::Error::custom)?;
        Ok(Self {
            id: response.id,
            message: response.error.message.into_owned(),
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mode_dispatch() {
        let form: ElicitRequestParams = serde_json::from_value(json!({
            "message": "m", "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap();
        assert_eq!(form.mode(), "form");
        let url: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "m", "elicitationId": "e", "url": "https://x"
        }))
        .unwrap();
        assert_eq!(url.mode(), "url");
        assert!(
            serde_json::from_value::<ElicitRequestParams>(json!({"mode": "voice", "message": "m"}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<ElicitRequestUrlParams>(json!({
            "message": "m", "elicitationId": "e", "url": "https://x"}))
            .is_err()
        );
    }

    /// Found by the `elicitation_schema` fuzz target (built without jsonschema, so
    /// without serde_json's `float_roundtrip`): a number in a form answer changed by one
    /// ulp when written back and read again. The workspace now always asks for exact
    /// float parsing.
    #[test]
    fn numbers_survive_a_round_trip_exactly() {
        let text = format!("{}1.25", "2".repeat(48));
        let first: ElicitValue = serde_json::from_str(&text).unwrap();
        let again: ElicitValue =
            serde_json::from_str(&serde_json::to_string(&first).unwrap()).unwrap();
        assert_eq!(first, again);
        assert_eq!(first, ElicitValue::Number(text.parse::<f64>().unwrap()));
    }

    #[test]
    fn elicit_result_values() {
        let r: ElicitResult = serde_json::from_value(json!({
            "action": "accept", "content": {"a": "s", "b": 2, "c": true, "d": ["x"], "e": 1.5}
        }))
        .unwrap();
        let c = r.content.unwrap();
        assert_eq!(c["b"], ElicitValue::Integer(2));
        assert_eq!(c["e"], ElicitValue::Number(1.5));
        assert_eq!(c["d"], ElicitValue::StringArray(vec!["x".into()]));
    }

    #[test]
    fn url_elicitation_required_error_round_trip() {
        let e = UrlElicitationRequiredError::new(
            Some(RequestId::from(4)),
            vec![ElicitRequestUrlParams::new("auth", "e1", "https://a")],
        );
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["error"]["code"], json!(-32042));
        assert_eq!(v["error"]["data"]["elicitations"][0]["mode"], json!("url"));
        assert_eq!(
            serde_json::from_value::<UrlElicitationRequiredError>(v).unwrap(),
            e
        );
        let data = ErrorData::url_elicitation_required(vec![ElicitRequestUrlParams::new(
            "auth",
            "e2",
            "https://b",
        )]);
        assert_eq!(
            UrlElicitationRequiredData::from_error(&data)
                .unwrap()
                .elicitations[0]
                .elicitation_id(),
            "e2"
        );
    }

    #[test]
    fn url_elicitation_required_says_one_elicitation_or_several() {
        let one = vec![ElicitRequestUrlParams::new("auth", "e1", "https://a")];
        let two = vec![
            one[0].clone(),
            ElicitRequestUrlParams::new("pay", "e2", "https://b"),
        ];
        assert_eq!(
            UrlElicitationRequiredError::new(None, one.clone()).message,
            "This request requires more information."
        );
        assert_eq!(
            ErrorData::url_elicitation_required(two).message,
            "This request requires more information (several elicitations)."
        );
        assert_eq!(
            ErrorData::url_elicitation_required(one.clone()),
            UrlElicitationRequiredError::new(None, one).to_error_data()
        );
    }
}
