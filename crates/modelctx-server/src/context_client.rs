//! Requests from a handler to its client: sampling, elicitation (form and URL) and
//! roots, each refused locally — nothing is sent — when the client did not declare
//! what the request needs.

use std::collections::BTreeMap;
use std::fmt;

use modelctx_session::SessionError;
use modelctx_types::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequest, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitValue, ElicitationCompleteNotification, ElicitationCompleteNotificationParams,
    EnumSchema, ErrorData, IncludeContext, ListRootsRequest, MultiSelectEnumSchema,
    PrimitiveSchemaDefinition, ProtocolVersion, RequestedSchema, Role, Root, SamplingContent,
    SamplingMessage, SamplingMessageContentBlock, SingleSelectEnumSchema,
};
#[cfg(feature = "schemars")]
use schemars::JsonSchema;
#[cfg(feature = "schemars")]
use schemars::generate::SchemaSettings;
#[cfg(feature = "schemars")]
use serde::de::DeserializeOwned;
#[cfg(feature = "schemars")]
use serde_json::{Map, Value, json};

use crate::mrtr::{self, Asked};
use crate::request::Context;
use modelctx_types::{ElicitResult, InputRequest, ListRootsResult};

/// The submitted values of a form, by field name.
pub type FormValues = BTreeMap<String, ElicitValue>;

/// How the user answered an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// Accepted: the submitted form (checked against the form), or `()` for a URL
    /// request, where accepting only means the user agreed to open the link.
    Accepted(T),
    /// Explicitly declined.
    Declined,
    /// Dismissed without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The accepted value, if the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(value) => Some(value),
            Self::Declined | Self::Cancelled => None,
        }
    }

    /// Whether the user accepted.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Self::Accepted(_))
    }
}

/// Why a request to the client failed: refused locally, an answer that does not fit, or
/// the session's error (the client's JSON-RPC error, a timeout, a closed connection).
///
/// Converts into the [`ErrorData`] a handler returns, so `?` works in handlers: a local
/// refusal becomes `-32602`, the client's error passes through unchanged.
#[derive(Debug)]
pub struct ClientRequestError {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Refused before sending: an undeclared capability or invalid parameters.
    Refused(String),
    /// The typed form does not fit the spec's restricted form schema (only typed forms,
    /// feature `schemars`, can be unfit).
    #[cfg_attr(not(feature = "schemars"), allow(dead_code))]
    UnfitForm(String),
    /// The client's answer does not match what was asked.
    InvalidAnswer(String),
    Session(SessionError),
}

impl ClientRequestError {
    fn refused(reason: impl Into<String>) -> Self {
        Self {
            kind: Kind::Refused(reason.into()),
        }
    }

    fn invalid_answer(reason: impl Into<String>) -> Self {
        Self {
            kind: Kind::InvalidAnswer(reason.into()),
        }
    }

    /// Whether the request was refused locally (nothing was sent): the client did not
    /// declare the capability or mode it needs, or its parameters break the spec's rules.
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, Kind::Refused(_) | Kind::UnfitForm(_))
    }

    /// Whether a typed form could not be expressed as the spec's restricted form schema.
    pub fn is_unfit_form(&self) -> bool {
        matches!(self.kind, Kind::UnfitForm(_))
    }

    /// Whether the client's answer did not match the request (e.g. a form answer
    /// outside the form's schema).
    pub fn is_invalid_answer(&self) -> bool {
        matches!(self.kind, Kind::InvalidAnswer(_))
    }

    /// The session error, when the request was sent and failed there.
    pub fn session_error(&self) -> Option<&SessionError> {
        match &self.kind {
            Kind::Session(e) => Some(e),
            _ => None,
        }
    }

    /// The JSON-RPC error the client answered with, if it did.
    pub fn protocol_error(&self) -> Option<&ErrorData> {
        self.session_error()?.protocol_error()
    }

    /// The JSON-RPC error reporting this failure: `-32602` for a local refusal, the
    /// client's own error when it answered with one, `-32603` otherwise.
    pub fn to_error_data(&self) -> ErrorData {
        match &self.kind {
            Kind::Refused(reason) => ErrorData::invalid_params(reason.clone()),
            Kind::UnfitForm(_) | Kind::InvalidAnswer(_) => {
                ErrorData::internal_error(self.to_string())
            }
            Kind::Session(e) => e.to_error_data(),
        }
    }
}

impl fmt::Display for ClientRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Refused(reason) => write!(f, "refused: {reason}"),
            Kind::UnfitForm(reason) => write!(f, "the type cannot be a form: {reason}"),
            Kind::InvalidAnswer(reason) => write!(f, "invalid answer from the client: {reason}"),
            Kind::Session(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ClientRequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Session(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SessionError> for ClientRequestError {
    fn from(e: SessionError) -> Self {
        Self {
            kind: Kind::Session(e),
        }
    }
}

impl From<ClientRequestError> for ErrorData {
    fn from(e: ClientRequestError) -> Self {
        e.to_error_data()
    }
}

impl Context {
    fn declared(&self) -> Result<&modelctx_types::ClientCapabilities, ClientRequestError> {
        self.client_capabilities()
            .ok_or_else(|| ClientRequestError::refused("the client has not initialised yet"))
    }

    /// In the stateless era, the client lacks `what`: with a round, the request fails
    /// with `-32021` whatever the handler makes of the refusal returned here.
    fn missing(&self, what: &str, required: serde_json::Value) -> ClientRequestError {
        if let Some(round) = &self.round {
            round.fail(mrtr::missing_capability(what, required));
        }
        ClientRequestError::refused(format!("the client did not declare {what}"))
    }

    /// Where an input the handler asks for comes from: in a session, a request to the
    /// client (`Ok(None)`); in the stateless era, the client's answer on this retry, or
    /// (not answered yet) the end of the round, which asks for it — this call then never
    /// returns, and the handler runs again from the start on the retry.
    async fn input<R: serde::de::DeserializeOwned>(
        &self,
        request: impl FnOnce() -> InputRequest,
    ) -> Result<Option<R>, ClientRequestError> {
        if self.envelope.is_none() {
            return Ok(None);
        }
        if let Some(run) = self.escalated() {
            // A task of the tasks extension: the input waits among its inputRequests
            // until a tasks/update answers it.
            let answer = run.ask_input(self.input_key.as_deref(), request()).await?;
            return serde_json::from_value(answer)
                .map(Some)
                .map_err(|e| ClientRequestError::invalid_answer(e.to_string()));
        }
        let Some(round) = &self.round else {
            return Err(ClientRequestError::refused(
                "in protocol 2026-07-28 only tools/call, prompts/get and resources/read may ask the client for input",
            ));
        };
        match round.ask::<R>(self.input_key.as_deref(), request) {
            Ok(Asked::Answered(answer)) => Ok(Some(answer)),
            Ok(Asked::Pending) => std::future::pending().await,
            Err(error) => Err(ClientRequestError::invalid_answer(error.message)),
        }
    }

    /// Sends a request to the client in a session: directly, related to this request;
    /// for a request running as a task, through the task's side channel (tagged with
    /// the task, carried by the client's next `tasks/result`, the task
    /// `input_required` meanwhile).
    async fn ask_client<M: modelctx_types::RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        match &self.task {
            Some(run) => run.request::<M>(params).await,
            None => self.peer().request::<M>(params).await,
        }
    }

    /// Sends `M` to the client as a task (protocol 2025-11-25): the client answers at
    /// once with the task, and the handle polls it, waits for its result or cancels it.
    /// Refused locally unless the client declared task support for `M`
    /// (`tasks.requests.sampling.createMessage`, `tasks.requests.elicitation.create`).
    pub async fn request_as_task<M: modelctx_types::RequestMethod>(
        &self,
        params: M::Params,
        task: modelctx_types::TaskMetadata,
    ) -> Result<modelctx_session::tasks::TaskHandle<M::Result>, SessionError> {
        let kinds = self
            .client_capabilities()
            .and_then(|c| c.tasks.as_ref())
            .and_then(|t| t.requests.as_ref());
        let declared = match M::METHOD {
            "sampling/createMessage" => kinds
                .and_then(|k| k.sampling.as_ref())
                .is_some_and(|s| s.create_message.is_some()),
            "elicitation/create" => kinds
                .and_then(|k| k.elicitation.as_ref())
                .is_some_and(|e| e.create.is_some()),
            _ => false,
        };
        if !declared || self.envelope.is_some() {
            return Err(SessionError::refused(format!(
                "the client did not declare task support for {}",
                M::METHOD
            )));
        }
        modelctx_session::tasks::start_task::<M>(
            self.peer(),
            params,
            task,
            modelctx_session::RequestOptions::default(),
        )
        .await
    }

    fn speaks_2025_11_25(&self) -> bool {
        self.protocol_version()
            .is_some_and(|v| v.at_least(&ProtocolVersion::V2025_11_25))
    }

    /// Asks the client to sample its LLM (`sampling/createMessage`).
    ///
    /// Refused locally, with nothing sent, when the client did not declare `sampling`;
    /// when the request (or its conversation) uses tools without `sampling.tools`; when
    /// `includeContext` is `thisServer`/`allServers` without `sampling.context`; when a
    /// message has no content, or array content / tool blocks on a revision before
    /// 2025-11-25; and when tool results are mixed with other content or a tool use is
    /// not answered in the user message right after it.
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ClientRequestError> {
        let caps = self.declared()?;
        let Some(sampling) = &caps.sampling else {
            return Err(self.missing(
                "the sampling capability",
                serde_json::json!({"sampling": {}}),
            ));
        };
        let tool_blocks = params.messages.iter().any(|m| {
            m.content.blocks().iter().any(|b| {
                matches!(
                    b,
                    SamplingMessageContentBlock::ToolUse(_)
                        | SamplingMessageContentBlock::ToolResult(_)
                )
            })
        });
        let uses_tools = params.tools.is_some() || params.tool_choice.is_some() || tool_blocks;
        if uses_tools && sampling.tools.is_none() {
            return Err(ClientRequestError::refused(
                "the client did not declare sampling.tools, needed for tools in sampling",
            ));
        }
        let wants_context = matches!(
            params.include_context,
            Some(IncludeContext::ThisServer | IncludeContext::AllServers)
        );
        if wants_context && sampling.context.is_none() {
            return Err(ClientRequestError::refused(
                "the client did not declare sampling.context, needed for includeContext thisServer/allServers",
            ));
        }
        let modern = self.speaks_2025_11_25();
        for (i, message) in params.messages.iter().enumerate() {
            match &message.content {
                SamplingContent::Multiple(blocks) if blocks.is_empty() => {
                    return Err(ClientRequestError::refused(format!(
                        "message {i} has no content"
                    )));
                }
                SamplingContent::Multiple(_) if !modern => {
                    return Err(ClientRequestError::refused(format!(
                        "message {i} has array content, which needs protocol 2025-11-25"
                    )));
                }
                _ => {}
            }
        }
        if uses_tools && !modern {
            return Err(ClientRequestError::refused(
                "tools in sampling need protocol 2025-11-25",
            ));
        }
        check_tool_messages(&params.messages).map_err(ClientRequestError::refused)?;
        let ask = || InputRequest::from(CreateMessageRequest::without_id(params.clone()));
        if let Some(answer) = self.input::<CreateMessageResult>(ask).await? {
            return Ok(answer);
        }
        Ok(self.ask_client::<CreateMessageRequest>(params).await?)
    }

    /// Asks the user to fill in a form derived from `T` (`elicitation/create`, form
    /// mode) and returns the typed answer.
    ///
    /// `T`'s JSON Schema (from `schemars`) is reduced to the spec's restricted form: a
    /// flat object of strings (with `email`/`uri`/`date`/`date-time` formats), numbers,
    /// integers, booleans and enums (single- or multi-select, titled when variants carry
    /// a title or description), with defaults. A `T` outside that is refused
    /// ([`ClientRequestError::is_unfit_form`]). The accepted answer is checked against
    /// the form and decoded into `T`; a mismatch is
    /// [`ClientRequestError::is_invalid_answer`]. Needs feature `schemars`.
    #[cfg(feature = "schemars")]
    pub async fn elicit_form<T: JsonSchema + DeserializeOwned>(
        &self,
        message: impl Into<String>,
    ) -> Result<Elicited<T>, ClientRequestError> {
        let schema = form_schema::<T>()?;
        match self.elicit_form_schema(message, schema).await? {
            Elicited::Accepted(values) => {
                let object: Map<String, Value> = values
                    .into_iter()
                    .map(|(k, v)| (k, serde_json::to_value(v).unwrap_or(Value::Null)))
                    .collect();
                serde_json::from_value(Value::Object(object))
                    .map(Elicited::Accepted)
                    .map_err(|e| ClientRequestError::invalid_answer(e.to_string()))
            }
            Elicited::Declined => Ok(Elicited::Declined),
            Elicited::Cancelled => Ok(Elicited::Cancelled),
        }
    }

    /// Asks the user to fill in `schema` (`elicitation/create`, form mode). Refused
    /// locally when the client lacks form mode or `schema` is not a valid JSON Schema
    /// (an unknown `$schema` dialect, titled choices without options, a name twice in
    /// `required`, a bound that is not finite); an accepted answer is checked against
    /// `schema` on arrival ([`RequestedSchema::check_answer`]).
    pub async fn elicit_form_schema(
        &self,
        message: impl Into<String>,
        schema: RequestedSchema,
    ) -> Result<Elicited<FormValues>, ClientRequestError> {
        let caps = self.declared()?;
        if !caps.elicitation.as_ref().is_some_and(|e| e.supports_form()) {
            return Err(self.missing(
                "form-mode elicitation",
                serde_json::json!({"elicitation": {"form": {}}}),
            ));
        }
        check_form(&schema)?;
        // The request is made only when it is sent (an answered retry makes none).
        let message = message.into();
        let modern = self.speaks_2025_11_25();
        let form = |message: String| {
            let params = ElicitRequestFormParams::new(message, schema.clone());
            ElicitRequestParams::Form(if modern {
                params
            } else {
                params.without_mode()
            })
        };
        let ask = || InputRequest::from(ElicitRequest::without_id(form(message.clone())));
        let result = match self.input::<ElicitResult>(ask).await? {
            Some(answer) => answer,
            None => self.ask_client::<ElicitRequest>(form(message)).await?,
        };
        match result.action {
            ElicitAction::Accept => {
                let values = result.content.unwrap_or_default();
                if let Err(e) = schema.check_answer(&values) {
                    return Err(ClientRequestError::invalid_answer(format!(
                        "the form answer does not match the form: {e}"
                    )));
                }
                Ok(Elicited::Accepted(values))
            }
            ElicitAction::Decline => Ok(Elicited::Declined),
            ElicitAction::Cancel => Ok(Elicited::Cancelled),
            other => Err(ClientRequestError::invalid_answer(format!(
                "unknown elicitation action {other:?}"
            ))),
        }
    }

    /// Asks the user to open `url` out of band (`elicitation/create`, URL mode). Refused
    /// locally when the client lacks URL mode or `url` is not an absolute URL. `Accepted`
    /// only means the user agreed to open it; send
    /// [`notify_elicitation_complete`](Self::notify_elicitation_complete) when the flow
    /// ends.
    pub async fn elicit_url(
        &self,
        message: impl Into<String>,
        elicitation_id: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<Elicited<()>, ClientRequestError> {
        let caps = self.declared()?;
        if !caps.elicitation.as_ref().is_some_and(|e| e.supports_url()) || !self.speaks_2025_11_25()
        {
            return Err(self.missing(
                "URL-mode elicitation",
                serde_json::json!({"elicitation": {"url": {}}}),
            ));
        }
        let url = url.into();
        if !is_absolute_url(&url) {
            return Err(ClientRequestError::refused(format!(
                "{url:?} is not an absolute URL"
            )));
        }
        let params = if self.envelope.is_some() {
            // 2026-07-28 has no elicitation ids: the retry itself says the flow ended.
            ElicitRequestUrlParams::without_elicitation_id(message, url)
        } else {
            ElicitRequestUrlParams::new(message, elicitation_id, url)
        };
        let params = ElicitRequestParams::Url(params);
        let ask = || InputRequest::from(ElicitRequest::without_id(params.clone()));
        let result = match self.input::<ElicitResult>(ask).await? {
            Some(answer) => answer,
            None => self.ask_client::<ElicitRequest>(params).await?,
        };
        match result.action {
            ElicitAction::Accept => Ok(Elicited::Accepted(())),
            ElicitAction::Decline => Ok(Elicited::Declined),
            ElicitAction::Cancel => Ok(Elicited::Cancelled),
            other => Err(ClientRequestError::invalid_answer(format!(
                "unknown elicitation action {other:?}"
            ))),
        }
    }

    /// Tells the client the URL elicitation `elicitation_id` completed
    /// (`notifications/elicitation/complete`). Refused when the client lacks URL mode.
    pub async fn notify_elicitation_complete(
        &self,
        elicitation_id: impl Into<String>,
    ) -> Result<(), SessionError> {
        let url_mode = self
            .client_capabilities()
            .and_then(|c| c.elicitation.as_ref())
            .is_some_and(|e| e.supports_url());
        if !url_mode {
            return Err(SessionError::refused(
                "the client did not declare URL-mode elicitation",
            ));
        }
        self.notify::<ElicitationCompleteNotification>(ElicitationCompleteNotificationParams::new(
            elicitation_id,
        ))
        .await
    }

    /// Asks the client for its roots (`roots/list`). Refused locally when the client did
    /// not declare `roots`.
    pub async fn list_roots(&self) -> Result<Vec<Root>, ClientRequestError> {
        if self.declared()?.roots.is_none() {
            return Err(self.missing("the roots capability", serde_json::json!({"roots": {}})));
        }
        let ask = || InputRequest::from(ListRootsRequest::without_id());
        if let Some(answer) = self.input::<ListRootsResult>(ask).await? {
            return Ok(answer.roots);
        }
        Ok(self.ask_client::<ListRootsRequest>(None).await?.roots)
    }

    /// The `-32042` error to return from a handler that cannot go on until the user
    /// completes these URL elicitations; the caller gets them, unchanged, in
    /// `data.elicitations`.
    pub fn url_elicitation_required(
        &self,
        elicitations: impl IntoIterator<Item = ElicitRequestUrlParams>,
    ) -> ErrorData {
        ErrorData::url_elicitation_required(elicitations.into_iter().collect())
    }
}

/// Refuses what a JSON Schema 2020-12 validator would not compile: a `$schema` that
/// names no JSON Schema dialect, titled choices with no option (`oneOf`/`anyOf` need at
/// least one), a field name listed twice in `required`, and a bound that is not a finite
/// number.
fn check_form(schema: &RequestedSchema) -> Result<(), ClientRequestError> {
    let invalid =
        |reason: String| ClientRequestError::refused(format!("invalid form schema: {reason}"));
    if let Some(dialect) = &schema.schema
        && !is_dialect(dialect)
    {
        return Err(invalid(format!("{dialect:?} names no JSON Schema dialect")));
    }
    if let Some(required) = &schema.required
        && let Some((_, name)) = required
            .iter()
            .enumerate()
            .find(|(i, name)| required[..*i].contains(name))
    {
        return Err(invalid(format!("`required` lists {name:?} twice")));
    }
    for (name, field) in &schema.properties.0 {
        let empty_choice = match field {
            PrimitiveSchemaDefinition::Enum(EnumSchema::Single(
                SingleSelectEnumSchema::Titled(s),
            )) => s.one_of.is_empty(),
            PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Titled(
                m,
            ))) => m.items.any_of.is_empty(),
            _ => false,
        };
        if empty_choice {
            return Err(invalid(format!("field `{name}` offers no option")));
        }
        if let PrimitiveSchemaDefinition::Number(n) = field
            && [n.minimum, n.maximum]
                .iter()
                .flatten()
                .any(|b| !b.is_finite())
        {
            return Err(invalid(format!(
                "field `{name}` has a bound that is not a finite number"
            )));
        }
    }
    Ok(())
}

/// Whether `uri` names a JSON Schema dialect (draft-04 to 2020-12, or the current one),
/// with or without a trailing `#`, over http or https.
fn is_dialect(uri: &str) -> bool {
    let uri = uri.trim_end_matches('#');
    let path = uri
        .strip_prefix("https://json-schema.org/")
        .or_else(|| uri.strip_prefix("http://json-schema.org/"));
    matches!(
        path,
        Some(
            "draft/2020-12/schema"
                | "draft/2019-09/schema"
                | "draft-07/schema"
                | "draft-06/schema"
                | "draft-04/schema"
                | "schema"
        )
    )
}

fn is_absolute_url(url: &str) -> bool {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
                && !rest.is_empty()
                && !url.chars().any(char::is_whitespace)
        }
        None => false,
    }
}

/// The spec's rules for tools in sampling messages: a message holding tool results holds
/// nothing else, and every assistant tool use is answered, by id, in the user message
/// right after it.
fn check_tool_messages(messages: &[SamplingMessage]) -> Result<(), String> {
    for (i, message) in messages.iter().enumerate() {
        let blocks = message.content.blocks();
        let results = blocks
            .iter()
            .filter(|b| matches!(b, SamplingMessageContentBlock::ToolResult(_)))
            .count();
        if results > 0 && results < blocks.len() {
            return Err(format!("message {i} mixes tool results with other content"));
        }
        let uses: Vec<&str> = blocks
            .iter()
            .filter_map(|b| match b {
                SamplingMessageContentBlock::ToolUse(u) => Some(u.id.as_str()),
                _ => None,
            })
            .collect();
        if uses.is_empty() {
            continue;
        }
        if message.role != Role::Assistant {
            return Err(format!(
                "message {i} holds tool use but is not the assistant's"
            ));
        }
        let answered: Vec<&str> = messages
            .get(i + 1)
            .filter(|next| next.role == Role::User)
            .map(|next| {
                next.content
                    .blocks()
                    .iter()
                    .filter_map(|b| match b {
                        SamplingMessageContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(id) = uses.iter().find(|id| !answered.contains(id)) {
            return Err(format!(
                "tool use {id:?} (message {i}) has no tool result in the user message after it"
            ));
        }
    }
    Ok(())
}

/// The form schema of `T`: its JSON Schema reduced to the spec's restricted subset, or an
/// error naming the field that does not fit.
///
/// ```
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Rsvp {
///     /// Your name.
///     name: String,
///     guests: u8,
///     vegetarian: Option<bool>,
/// }
/// let schema = modelctx_server::form_schema::<Rsvp>().unwrap();
/// assert_eq!(schema.required, Some(vec!["name".to_owned(), "guests".to_owned()]));
///
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Nested { address: Rsvp }
/// assert!(modelctx_server::form_schema::<Nested>().unwrap_err().is_unfit_form());
/// ```
///
/// Needs feature `schemars`.
#[cfg(feature = "schemars")]
pub fn form_schema<T: JsonSchema>() -> Result<RequestedSchema, ClientRequestError> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    reduce_form(schema.as_value()).map_err(|reason| ClientRequestError {
        kind: Kind::UnfitForm(format!("{}: {reason}", T::schema_name())),
    })
}

#[cfg(feature = "schemars")]
fn reduce_form(root: &Value) -> Result<RequestedSchema, String> {
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form must be a struct with named fields".to_owned());
    }
    let empty = Map::new();
    let properties = match root.get("properties") {
        Some(Value::Object(p)) => p,
        None => &empty,
        Some(_) => return Err("`properties` is not an object".to_owned()),
    };
    let mut reduced = Map::new();
    for (name, field) in properties {
        reduced.insert(name.clone(), reduce_field(name, field)?);
    }
    let mut form = json!({"type": "object", "properties": reduced});
    if let Some(required) = root
        .get("required")
        .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()))
    {
        form["required"] = required.clone();
    }
    serde_json::from_value(form).map_err(|e| e.to_string())
}

/// Strips `null` from a nullable (optional) field's schema.
#[cfg(feature = "schemars")]
fn without_null(field: &Map<String, Value>) -> Map<String, Value> {
    let mut field = field.clone();
    if let Some(Value::Array(types)) = field.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() == 1 {
            field.insert("type".to_owned(), rest[0].clone());
        }
    }
    if let Some(Value::Array(values)) = field.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = field.get(key) {
            let rest: Vec<&Value> = options
                .iter()
                .filter(|o| {
                    o.get("type").and_then(Value::as_str) != Some("null")
                        && !o.get("const").is_some_and(Value::is_null)
                })
                .collect();
            if rest.len() == 1 && options.len() == 2 {
                if let Some(inner) = rest[0].as_object() {
                    let mut merged = without_null(inner);
                    field.remove(key);
                    for (k, v) in field {
                        merged.entry(k).or_insert(v);
                    }
                    return merged;
                }
            } else if rest.len() != options.len() {
                let rest: Vec<Value> = rest.into_iter().cloned().collect();
                field.insert(key.to_owned(), Value::Array(rest));
            }
        }
    }
    if field.get("default").is_some_and(Value::is_null) {
        field.remove("default");
    }
    field
}

#[cfg(feature = "schemars")]
fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = from.get(*key) {
            to.insert((*key).to_owned(), v.clone());
        }
    }
}

/// `[{const, title}]` from a titled enum's options, or `None` when they are not all
/// string constants.
#[cfg(feature = "schemars")]
fn titled_options(options: &[Value]) -> Option<Vec<Value>> {
    options
        .iter()
        .map(|o| {
            let value = o.get("const")?.as_str()?;
            let title = o
                .get("title")
                .or_else(|| o.get("description"))
                .and_then(Value::as_str)
                .unwrap_or(value);
            Some(json!({"const": value, "title": title}))
        })
        .collect()
}

#[cfg(feature = "schemars")]
fn string_values(values: &[Value]) -> Option<Vec<Value>> {
    values
        .iter()
        .map(|v| v.as_str().map(|_| v.clone()))
        .collect()
}

#[cfg(feature = "schemars")]
fn reduce_field(name: &str, field: &Value) -> Result<Value, String> {
    let unfit = |what: &str| {
        Err(format!(
            "field `{name}` is {what}; a form holds only strings, numbers, integers, booleans and enums"
        ))
    };
    let Some(field) = field.as_object() else {
        return unfit("not described by a schema object");
    };
    let field = without_null(field);
    let mut out = Map::new();
    copy(&field, &mut out, &["title", "description", "default"]);
    let kind = field.get("type").and_then(Value::as_str);
    let options = field
        .get("oneOf")
        .or_else(|| field.get("anyOf"))
        .and_then(Value::as_array);
    match kind {
        Some("string") | None if field.get("enum").is_some() => {
            let values = field.get("enum").and_then(Value::as_array);
            let Some(values) = values.and_then(|v| string_values(v)) else {
                return unfit("an enum of non-string values");
            };
            out.insert("type".into(), "string".into());
            out.insert("enum".into(), Value::Array(values));
        }
        Some("string") | None if field.get("const").and_then(Value::as_str).is_some() => {
            out.insert("type".into(), "string".into());
            out.insert("enum".into(), json!([field["const"]]));
        }
        Some("string") | None if options.is_some() => {
            let Some(titled) = options.and_then(|o| titled_options(o)) else {
                return unfit("a choice among non-string or structured values");
            };
            out.insert("type".into(), "string".into());
            out.insert("oneOf".into(), Value::Array(titled));
        }
        Some("string") => {
            out.insert("type".into(), "string".into());
            copy(&field, &mut out, &["minLength", "maxLength"]);
            if let Some(format) = field.get("format").and_then(Value::as_str)
                && ["email", "uri", "date", "date-time"].contains(&format)
            {
                out.insert("format".into(), format.into());
            }
        }
        Some(number @ ("integer" | "number")) => {
            out.insert("type".into(), number.into());
            copy(&field, &mut out, &["minimum", "maximum"]);
        }
        Some("boolean") => {
            out.insert("type".into(), "boolean".into());
        }
        Some("array") => {
            let Some(items) = field.get("items").and_then(Value::as_object) else {
                return unfit("a list without an item schema");
            };
            let item_options = items
                .get("oneOf")
                .or_else(|| items.get("anyOf"))
                .and_then(Value::as_array);
            let reduced_items = if let Some(values) = items.get("enum").and_then(Value::as_array) {
                let Some(values) = string_values(values) else {
                    return unfit("a list of non-string choices");
                };
                json!({"type": "string", "enum": values})
            } else if let Some(titled) = item_options.and_then(|o| titled_options(o)) {
                json!({"anyOf": titled})
            } else {
                return unfit("a list of something other than enum choices");
            };
            out.insert("type".into(), "array".into());
            out.insert("items".into(), reduced_items);
            copy(&field, &mut out, &["minItems", "maxItems"]);
        }
        Some("object") => return unfit("a nested object"),
        Some(other) => return unfit(&format!("of type `{other}`")),
        None => return unfit("of no single type"),
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelctx_types::{ToolResultContent, ToolUseContent};
    #[cfg(feature = "schemars")]
    use serde::Deserialize;
    use serde_json::{Map, Value, json};

    #[cfg(feature = "schemars")]
    #[derive(JsonSchema, Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Color {
        Red,
        Green,
    }

    #[cfg(feature = "schemars")]
    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    enum Size {
        /// Small
        S,
        /// Large
        L,
    }

    #[cfg(feature = "schemars")]
    fn default_count() -> i64 {
        3
    }

    #[cfg(feature = "schemars")]
    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Everything {
        /// The email.
        #[schemars(email)]
        email: String,
        #[serde(default = "default_count")]
        count: i64,
        ratio: Option<f64>,
        ok: bool,
        color: Color,
        maybe_color: Option<Color>,
        size: Size,
        colors: Vec<Color>,
        sizes: Vec<Size>,
    }

    #[cfg(feature = "schemars")]
    #[test]
    fn a_flat_struct_becomes_a_form() {
        let schema = form_schema::<Everything>().unwrap();
        let value = serde_json::to_value(&schema).unwrap();
        let props = &value["properties"];
        assert_eq!(props["email"]["format"], "email", "{value}");
        assert_eq!(props["email"]["description"], "The email.");
        assert_eq!(props["count"]["type"], "integer");
        assert_eq!(props["count"]["default"], 3, "{value}");
        assert_eq!(props["ratio"]["type"], "number");
        assert_eq!(props["color"]["enum"], json!(["red", "green"]));
        assert_eq!(
            props["maybe_color"]["enum"],
            json!(["red", "green"]),
            "{value}"
        );
        assert_eq!(
            props["size"]["oneOf"],
            json!([{"const": "S", "title": "Small"}, {"const": "L", "title": "Large"}]),
            "{value}"
        );
        assert!(
            matches!(
                schema.properties.get("colors"),
                Some(PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(
                    MultiSelectEnumSchema::Untitled(_)
                )))
            ),
            "{value}"
        );
        assert!(
            matches!(
                schema.properties.get("sizes"),
                Some(PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(
                    MultiSelectEnumSchema::Titled(_)
                )))
            ),
            "{value}"
        );
        assert!(matches!(
            schema.properties.get("size"),
            Some(PrimitiveSchemaDefinition::Enum(EnumSchema::Single(
                SingleSelectEnumSchema::Titled(_)
            )))
        ));
        let required = schema.required.unwrap();
        assert!(required.contains(&"email".to_owned()) && !required.contains(&"ratio".to_owned()));
    }

    #[cfg(feature = "schemars")]
    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        x: i32,
    }

    #[cfg(feature = "schemars")]
    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Nested {
        inner: Inner,
    }

    #[cfg(feature = "schemars")]
    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Listy {
        names: Vec<String>,
    }

    #[cfg(feature = "schemars")]
    #[test]
    fn unfit_types_are_refused_with_the_field_named() {
        let err = form_schema::<Nested>().unwrap_err();
        assert!(err.is_unfit_form() && err.is_refused());
        assert!(err.to_string().contains("`inner`"), "{err}");
        let err = form_schema::<Listy>().unwrap_err();
        assert!(err.to_string().contains("`names`"), "{err}");
        assert!(form_schema::<String>().unwrap_err().is_unfit_form());
    }

    #[test]
    fn forms_no_json_schema_validator_would_compile_are_refused() {
        let form = |value: Value| -> RequestedSchema { serde_json::from_value(value).unwrap() };
        let ok = form(
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema#",
            "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        );
        assert!(check_form(&ok).is_ok());
        for (bad, why) in [
            (
                json!({"$schema": "https://example.test/mine", "type": "object", "properties": {}}),
                "dialect",
            ),
            (
                json!({"type": "object", "properties": {}, "required": ["a", "a"]}),
                "twice",
            ),
            (
                json!({"type": "object", "properties": {"c": {"type": "string", "oneOf": []}}}),
                "no option",
            ),
            (
                json!({"type": "object", "properties": {"c": {"type": "array", "items": {"anyOf": []}}}}),
                "no option",
            ),
        ] {
            let err = check_form(&form(bad)).unwrap_err();
            assert!(err.is_refused() && err.to_string().contains(why), "{err}");
        }
        let infinite = RequestedSchema::new().with_property(
            "n",
            modelctx_types::NumberSchema::new(modelctx_types::NumberType::Number)
                .with_maximum(f64::INFINITY),
            false,
        );
        assert!(
            check_form(&infinite)
                .unwrap_err()
                .to_string()
                .contains("finite")
        );
        assert!(is_dialect("http://json-schema.org/draft-07/schema#") && !is_dialect("draft-07"));
    }

    #[test]
    fn tool_messages_are_checked() {
        let uses = SamplingMessage::new(
            Role::Assistant,
            vec![
                ToolUseContent::new("a", "t", Map::new()).into(),
                ToolUseContent::new("b", "t", Map::new()).into(),
            ],
        );
        let one = SamplingMessage::new(
            Role::User,
            SamplingMessageContentBlock::from(ToolResultContent::new("a", vec![])),
        );
        assert!(
            check_tool_messages(&[uses.clone(), one])
                .unwrap_err()
                .contains("\"b\"")
        );
        let mixed = SamplingMessage::new(
            Role::User,
            vec![
                SamplingMessageContentBlock::text("x"),
                ToolResultContent::new("a", vec![]).into(),
            ],
        );
        assert!(check_tool_messages(&[mixed]).unwrap_err().contains("mixes"));
        assert!(is_absolute_url("https://a.test/x") && !is_absolute_url("a.test/x"));
    }
}
