//! Typed callbacks for the requests a server sends: `sampling/createMessage`,
//! `elicitation/create` (form and URL mode) and `roots/list`.
//!
//! Configuring a callback declares its capability, and only then; sub-capabilities are
//! explicit ([`SamplingSupport`], one callback per elicitation mode, `listChanged` for
//! roots). Every callback runs on the request's own task, never in the receive loop, and
//! is dropped when the server cancels the request (watch
//! [`CallbackContext::cancellation`](crate::CallbackContext::cancellation)).
//!
//! Without a callback the client answers as the spec says: `roots/list` `-32601`,
//! `elicitation/create` `-32602` (also for a mode it did not declare), and
//! `sampling/createMessage` `-32601`.
//!
//! The builder keeps the callbacks until `connect`; there `Callbacks::declare` adds the
//! capabilities they imply (a declared `elicitation: {}` stays as it is), `install`
//! registers the request handlers plus a `-32602` fallback for `elicitation/create` and the
//! `notifications/elicitation/complete` filter, and `attach` starts notifying a managed
//! `RootsList` after the handshake.
//!
//! Trap: server and client each check sampling tool messages (tool_use/tool_result balance,
//! no mixed tool_result content) with their own copy of the check, since neither crate may
//! depend on the other; keep the two in step.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::{Peer, RequestContext, encode_result, parse_params};
use modelctx_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCompleteNotificationParams, ErrorCode, ErrorData, JsonObject,
    ListRootsResult, RawValue, Root, SamplingMessageContentBlock,
};

use crate::elicitation::{
    FormAnswer, FormRequest, Tracker, UrlAnswer, UrlRequest, apply_defaults, check_schema,
    validate_answer,
};
use crate::roots::{RootsList, check_all};
use crate::{ClientBuilder, NotificationFn, RequestFn};

const SAMPLING: &str = "sampling/createMessage";
const ELICITATION: &str = "elicitation/create";
const ROOTS: &str = "roots/list";
const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// What a sampling callback supports beyond plain messages: the `sampling.tools` and
/// `sampling.context` sub-capabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SamplingSupport {
    /// Declares `sampling.tools`: requests may carry `tools` and `toolChoice`.
    pub tools: bool,
    /// Declares `sampling.context`: requests may ask for `includeContext` other than
    /// `none`.
    pub context: bool,
}

impl SamplingSupport {
    /// Plain sampling: `sampling: {}`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also declares `sampling.tools`.
    #[must_use]
    pub fn with_tools(mut self) -> Self {
        self.tools = true;
        self
    }

    /// Also declares `sampling.context`.
    #[must_use]
    pub fn with_context(mut self) -> Self {
        self.context = true;
        self
    }
}

/// The error a sampling callback returns when the user refuses the request: code `-1`,
/// "User rejected sampling request".
pub fn sampling_rejected() -> ErrorData {
    ErrorData::new(ErrorCode::USER_REJECTED, "User rejected sampling request")
}

type Callback<P, R> =
    dyn Fn(P, RequestContext) -> BoxFuture<'static, Result<R, ErrorData>> + Send + Sync;
type RootsFn =
    dyn Fn(RequestContext) -> BoxFuture<'static, Result<Vec<Root>, ErrorData>> + Send + Sync;
type CompleteFn = dyn Fn(String) + Send + Sync;

#[derive(Clone)]
enum RootsSource {
    Managed(RootsList),
    Callback(Arc<RootsFn>),
}

/// The typed callbacks a builder holds until `connect`.
#[derive(Default)]
pub(crate) struct Callbacks {
    sampling: Option<(
        SamplingSupport,
        Arc<Callback<CreateMessageRequestParams, CreateMessageResult>>,
    )>,
    form: Option<Arc<Callback<FormRequest, FormAnswer>>>,
    url: Option<Arc<Callback<UrlRequest, UrlAnswer>>>,
    roots: Option<(bool, RootsSource)>,
    on_complete: Option<Arc<CompleteFn>>,
}

fn erase<P, R, F, Fut>(callback: F) -> Arc<Callback<P, R>>
where
    P: Send + 'static,
    F: Fn(P, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorData>> + Send + 'static,
{
    Arc::new(move |params, cx| Box::pin(callback(params, cx)))
}

impl ClientBuilder {
    /// Answers `sampling/createMessage` with `callback` and declares `sampling` (with
    /// the sub-capabilities in `support`). Return [`sampling_rejected`] when the user
    /// refuses. Requests violating the tool rules are answered `-32602` without calling
    /// the callback; a result with array content (or tool use) for a request without
    /// tools is refused.
    #[must_use]
    pub fn sampling<F, Fut>(mut self, support: SamplingSupport, callback: F) -> Self
    where
        F: Fn(CreateMessageRequestParams, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorData>> + Send + 'static,
    {
        self.callbacks.sampling = Some((support, erase(callback)));
        self
    }

    /// Answers form-mode `elicitation/create` with `callback` and declares
    /// `elicitation.form`. The callback sees the schema's defaults prefilled; an accepted
    /// answer gets defaults for the fields left out and is checked against the form
    /// before it is sent. A schema outside the spec's restricted subset is answered
    /// `-32602` without calling the callback.
    #[must_use]
    pub fn form_elicitation<F, Fut>(mut self, callback: F) -> Self
    where
        F: Fn(FormRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<FormAnswer, ErrorData>> + Send + 'static,
    {
        self.callbacks.form = Some(erase(callback));
        self
    }

    /// Answers URL-mode `elicitation/create` with `callback` and declares
    /// `elicitation.url`. An accepted request's id becomes known, so its
    /// `notifications/elicitation/complete` is delivered.
    #[must_use]
    pub fn url_elicitation<F, Fut>(mut self, callback: F) -> Self
    where
        F: Fn(UrlRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<UrlAnswer, ErrorData>> + Send + 'static,
    {
        self.callbacks.url = Some(erase(callback));
        self
    }

    /// Called with the id of each `notifications/elicitation/complete` for a URL
    /// elicitation this client knows of; unknown or finished ids are ignored.
    #[must_use]
    pub fn on_elicitation_complete(
        mut self,
        callback: impl Fn(String) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.on_complete = Some(Arc::new(callback));
        self
    }

    /// Answers `roots/list` from a managed list and declares `roots` (with
    /// `listChanged` when `list_changed`; then every change to the list sends
    /// `notifications/roots/list_changed`).
    #[must_use]
    pub fn roots(mut self, roots: RootsList, list_changed: bool) -> Self {
        self.callbacks.roots = Some((list_changed, RootsSource::Managed(roots)));
        self
    }

    /// Answers `roots/list` with `callback` and declares `roots` (`listChanged` as
    /// given; send the notification yourself with `Client::notify`). Roots that are not
    /// `file://` URIs are refused rather than sent.
    #[must_use]
    pub fn roots_callback<F, Fut>(mut self, list_changed: bool, callback: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Root>, ErrorData>> + Send + 'static,
    {
        let callback: Arc<RootsFn> = Arc::new(move |cx| Box::pin(callback(cx)));
        self.callbacks.roots = Some((list_changed, RootsSource::Callback(callback)));
        self
    }
}

impl Callbacks {
    /// Adds the capabilities the configured callbacks imply to `caps`.
    pub(crate) fn declare(&self, mut caps: ClientCapabilities) -> ClientCapabilities {
        if let Some((support, _)) = &self.sampling {
            let sampling = caps.sampling.get_or_insert_with(Default::default);
            if support.tools {
                sampling.tools.get_or_insert_with(JsonObject::new);
            }
            if support.context {
                sampling.context.get_or_insert_with(JsonObject::new);
            }
        }
        if self.url.is_some() || self.form.is_some() {
            let fresh = caps.elicitation.is_none();
            let elicitation = caps.elicitation.get_or_insert_with(Default::default);
            if self.url.is_some() {
                elicitation.url.get_or_insert_with(JsonObject::new);
            }
            // An empty object already means form; keep a declared `{}` as it is.
            if self.form.is_some() && (fresh || !elicitation.supports_form()) {
                elicitation.form.get_or_insert_with(JsonObject::new);
            }
        }
        if let Some((list_changed, _)) = &self.roots {
            let roots = caps.roots.get_or_insert_with(Default::default);
            roots.list_changed = Some(*list_changed);
        }
        caps
    }

    /// Installs the request and notification handlers for `declared` capabilities.
    pub(crate) fn install(
        &self,
        declared: &ClientCapabilities,
        tracker: &Arc<Tracker>,
        requests: &mut HashMap<Cow<'static, str>, Arc<RequestFn>>,
        notifications: &mut HashMap<Cow<'static, str>, Arc<NotificationFn>>,
    ) {
        if let Some((_, callback)) = &self.sampling {
            let tools = declared
                .sampling
                .as_ref()
                .is_some_and(|s| s.tools.is_some());
            let callback = callback.clone();
            let handler: Arc<RequestFn> = Arc::new(move |params, cx| {
                Box::pin(answer_sampling(callback.clone(), tools, params, cx))
            });
            requests.insert(Cow::Borrowed(SAMPLING), handler);
        }
        let elicitation = declared.elicitation.as_ref();
        let form = self
            .form
            .clone()
            .filter(|_| elicitation.is_some_and(|e| e.supports_form()));
        let url = self
            .url
            .clone()
            .filter(|_| elicitation.is_some_and(|e| e.supports_url()));
        if form.is_some() || url.is_some() || !requests.contains_key(ELICITATION) {
            let tracker = tracker.clone();
            let handler: Arc<RequestFn> = Arc::new(move |params, cx| {
                Box::pin(answer_elicitation(
                    form.clone(),
                    url.clone(),
                    tracker.clone(),
                    params,
                    cx,
                ))
            });
            requests.insert(Cow::Borrowed(ELICITATION), handler);
        }
        if let Some((_, source)) = &self.roots {
            let source = source.clone();
            let handler: Arc<RequestFn> =
                Arc::new(move |_params, cx| Box::pin(answer_roots(source.clone(), cx)));
            requests.insert(Cow::Borrowed(ROOTS), handler);
        }
        let user = notifications.remove(ELICITATION_COMPLETE);
        let on_complete = self.on_complete.clone();
        let tracker = tracker.clone();
        let handler: Arc<NotificationFn> = Arc::new(move |params, peer| {
            let known = parse_params::<ElicitationCompleteNotificationParams>(params.as_deref())
                .ok()
                .filter(|p| tracker.complete(&p.elicitation_id));
            let Some(known) = known else {
                return Box::pin(async {});
            };
            if let Some(callback) = &on_complete {
                callback(known.elicitation_id);
            }
            match &user {
                Some(user) => user(params, peer),
                None => Box::pin(async {}),
            }
        });
        notifications.insert(Cow::Borrowed(ELICITATION_COMPLETE), handler);
    }

    /// Starts notifying `peer` of roots changes, when the client declared
    /// `roots.listChanged` for a managed list.
    pub(crate) fn attach(&self, declared: &ClientCapabilities, peer: &Peer) {
        let list_changed = declared
            .roots
            .as_ref()
            .is_some_and(|r| r.list_changed == Some(true));
        if let Some((_, RootsSource::Managed(list))) = &self.roots
            && list_changed
        {
            list.watch(peer);
        }
    }
}

async fn answer_sampling(
    callback: Arc<Callback<CreateMessageRequestParams, CreateMessageResult>>,
    tools_declared: bool,
    params: Option<Box<RawValue>>,
    cx: RequestContext,
) -> Result<Box<RawValue>, ErrorData> {
    let params = parse_params::<CreateMessageRequestParams>(params.as_deref())?;
    let with_tools = params.tools.is_some() || params.tool_choice.is_some();
    if with_tools && !tools_declared {
        return Err(ErrorData::invalid_params(
            "this client did not declare sampling.tools; the request carries tools",
        ));
    }
    params
        .check_tool_messages()
        .map_err(ErrorData::invalid_params)?;
    let result = callback(params.clone(), cx).await?;
    if params.tools.is_none() {
        if matches!(result.content, modelctx_types::SamplingContent::Multiple(_)) {
            return Err(ErrorData::internal_error(
                "the sampling callback returned array content for a request without tools",
            ));
        }
        if result
            .content
            .blocks()
            .iter()
            .any(|b| matches!(b, SamplingMessageContentBlock::ToolUse(_)))
        {
            return Err(ErrorData::internal_error(
                "the sampling callback returned tool use for a request without tools",
            ));
        }
    }
    encode_result(&result)
}

async fn answer_elicitation(
    form: Option<Arc<Callback<FormRequest, FormAnswer>>>,
    url: Option<Arc<Callback<UrlRequest, UrlAnswer>>>,
    tracker: Arc<Tracker>,
    params: Option<Box<RawValue>>,
    cx: RequestContext,
) -> Result<Box<RawValue>, ErrorData> {
    if form.is_none() && url.is_none() {
        return Err(ErrorData::invalid_params(
            "this client does not support elicitation",
        ));
    }
    let params = parse_params::<ElicitRequestParams>(params.as_deref())?;
    let result = match params {
        ElicitRequestParams::Form(params) => {
            let Some(callback) = form else {
                return Err(ErrorData::invalid_params(
                    "this client did not declare form-mode elicitation",
                ));
            };
            check_schema(&params.requested_schema)
                .map_err(|e| ErrorData::invalid_params(format!("invalid requestedSchema: {e}")))?;
            let schema = params.requested_schema.clone();
            match callback(FormRequest::new(params), cx).await? {
                FormAnswer::Accept(mut content) => {
                    apply_defaults(&schema, &mut content);
                    validate_answer(&schema, &content).map_err(|e| {
                        ErrorData::internal_error(format!(
                            "the form answer does not match the requested schema: {e}"
                        ))
                    })?;
                    ElicitResult::accept(content)
                }
                FormAnswer::Decline => ElicitResult::decline(),
                FormAnswer::Cancel => ElicitResult::cancel(),
            }
        }
        ElicitRequestParams::Url(params) => {
            // 2025-11-25 requires the id; 2026-07-28, which asks inside an answer,
            // dropped it (the retry itself ends the flow: nothing to track).
            let id = params.elicitation_id.clone();
            if id.is_none() && !cx.is_embedded() {
                return Err(ErrorData::invalid_params(
                    "Invalid params: missing field `elicitationId`",
                ));
            }
            let Some(callback) = url else {
                return Err(ErrorData::invalid_params(
                    "this client did not declare URL-mode elicitation",
                ));
            };
            match callback(UrlRequest { params }, cx).await? {
                UrlAnswer::Accept => {
                    if let Some(id) = &id {
                        tracker.expect(id);
                    }
                    ElicitResult::new(modelctx_types::ElicitAction::Accept)
                }
                UrlAnswer::Decline => ElicitResult::decline(),
                UrlAnswer::Cancel => ElicitResult::cancel(),
            }
        }
    };
    encode_result(&result)
}

async fn answer_roots(source: RootsSource, cx: RequestContext) -> Result<Box<RawValue>, ErrorData> {
    let roots = match source {
        RootsSource::Managed(list) => list.roots(),
        RootsSource::Callback(callback) => {
            let roots = callback(cx).await?;
            check_all(&roots).map_err(|e| ErrorData::internal_error(e.to_string()))?;
            roots
        }
    };
    encode_result(&ListRootsResult::new(roots))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_capabilities_follow_the_callbacks() {
        let none = Callbacks::default().declare(ClientCapabilities::new());
        assert_eq!(serde_json::to_value(none).unwrap(), serde_json::json!({}));
        let builder = crate::Client::builder("c", "1")
            .sampling(SamplingSupport::new().with_tools(), |_, _| async {
                Ok(CreateMessageResult::assistant_text("x", "m"))
            })
            .url_elicitation(|_, _| async { Ok(UrlAnswer::Decline) })
            .form_elicitation(|_, _| async { Ok(FormAnswer::Cancel) })
            .roots(RootsList::default(), true);
        let caps = builder.callbacks.declare(ClientCapabilities::new());
        assert_eq!(
            serde_json::to_value(caps).unwrap(),
            serde_json::json!({
                "sampling": {"tools": {}},
                "elicitation": {"form": {}, "url": {}},
                "roots": {"listChanged": true}
            })
        );
    }
}
