//! Requests from a handler to its client: sampling, elicitation (form and URL) and
//! roots, each refused locally — nothing is sent — when the client did not declare
//! what the request needs.

mod answer;
mod checks;
#[cfg(feature = "schemars")]
mod form;

use modelctx_session::SessionError;
use modelctx_types::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequest, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, ElicitationCompleteNotification, ElicitationCompleteNotificationParams,
    ErrorData, IncludeContext, InputRequest, ListRootsRequest, ListRootsResult, ProtocolVersion,
    RequestedSchema, Root, SamplingContent, SamplingMessageContentBlock,
};
#[cfg(feature = "schemars")]
use schemars::JsonSchema;
#[cfg(feature = "schemars")]
use serde::de::DeserializeOwned;
#[cfg(feature = "schemars")]
use serde_json::{Map, Value};

pub use answer::{ClientRequestError, ClientRequestErrorKind, Elicited, FormValues};
use checks::{check_form, is_absolute_url};
#[cfg(feature = "schemars")]
pub use form::form_schema;

use crate::mrtr::{self, Asked};
use crate::request::Context;

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
        #[cfg(feature = "tasks")]
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
        #[cfg(feature = "tasks")]
        if let Some(run) = &self.task {
            return run.request::<M>(params).await;
        }
        self.peer().request::<M>(params).await
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
        params
            .check_tool_messages()
            .map_err(ClientRequestError::refused)?;
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
        self.elicit(
            || form(message.clone()),
            |result| {
                let values = result.content.unwrap_or_default();
                if let Err(e) = schema.check_answer(&values) {
                    return Err(ClientRequestError::invalid_answer(format!(
                        "the form answer does not match the form: {e}"
                    )));
                }
                Ok(values)
            },
        )
        .await
    }

    /// Makes the elicitation `params` build: taken from the retry's answers in the
    /// stateless era, asked of the client otherwise. An accepted answer is read by
    /// `accepted`; a declined or cancelled one says so; any other action is refused.
    async fn elicit<T>(
        &self,
        params: impl Fn() -> ElicitRequestParams,
        accepted: impl FnOnce(ElicitResult) -> Result<T, ClientRequestError>,
    ) -> Result<Elicited<T>, ClientRequestError> {
        let ask = || InputRequest::from(ElicitRequest::without_id(params()));
        let result = match self.input::<ElicitResult>(ask).await? {
            Some(answer) => answer,
            None => self.ask_client::<ElicitRequest>(params()).await?,
        };
        match result.action {
            ElicitAction::Accept => accepted(result).map(Elicited::Accepted),
            ElicitAction::Decline => Ok(Elicited::Declined),
            ElicitAction::Cancel => Ok(Elicited::Cancelled),
            other => Err(ClientRequestError::invalid_answer(format!(
                "unknown elicitation action {other:?}"
            ))),
        }
    }

    /// Asks the user to open `url` out of band (`elicitation/create`, URL mode). Refused
    /// locally when `url` is not an absolute URL (checked first, whoever the client is) or
    /// the client lacks URL mode. `Accepted`
    /// only means the user agreed to open it; send
    /// [`notify_elicitation_complete`](Self::notify_elicitation_complete) when the flow
    /// ends.
    pub async fn elicit_url(
        &self,
        message: impl Into<String>,
        elicitation_id: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<Elicited<()>, ClientRequestError> {
        let url = url.into();
        if !is_absolute_url(&url) {
            return Err(ClientRequestError::refused(format!(
                "{url:?} is not an absolute URL"
            )));
        }
        let caps = self.declared()?;
        if !caps.elicitation.as_ref().is_some_and(|e| e.supports_url()) || !self.speaks_2025_11_25()
        {
            return Err(self.missing(
                "URL-mode elicitation",
                serde_json::json!({"elicitation": {"url": {}}}),
            ));
        }
        let params = if self.envelope.is_some() {
            // 2026-07-28 has no elicitation ids: the retry itself says the flow ended.
            ElicitRequestUrlParams::without_elicitation_id(message, url)
        } else {
            ElicitRequestUrlParams::new(message, elicitation_id, url)
        };
        let params = ElicitRequestParams::Url(params);
        self.elicit(|| params.clone(), |_| Ok(())).await
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
