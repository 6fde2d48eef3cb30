//! Requests of the stateless era (2026-07-28) in a session's service: the envelope
//! checked, the era's own methods answered, multi round-trip rounds run, and every
//! answer finished for the era.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use futures_core::future::BoxFuture;
use modelctx_session::{RequestContext, parse_params};
use modelctx_types::{
    ErrorData, JsonRpcRequest, Meta, RawValue, ServerCapabilities, SubscriptionFilter,
    SubscriptionsAcknowledgedNotification, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult, to_raw,
};

use super::SessionService;
use crate::mrtr;
use crate::registry;
use crate::request::Context;
use crate::stateless;
use crate::tasks;

/// Runs a handler that may ask for input: its own answer, unless it asks for input it
/// does not have (or is refused for good) first — then the round ends with what it asked
/// for (every input asked concurrently, in one round) or the refusal.
///
/// A call that may become a task (`escalation`, the tasks extension) becomes one when
/// it has run the escalation's window without answering or asking for input.
async fn run_round(
    answer: BoxFuture<'static, Result<Box<RawValue>, ErrorData>>,
    round: &mrtr::Round,
    key: &mrtr::StateKey,
    escalation: Option<tasks::Escalation>,
) -> Result<Box<RawValue>, ErrorData> {
    let mut answer = answer;
    let escalation = match escalation {
        Some(escalation) if escalation.window().is_zero() => {
            return escalation.start(answer).await;
        }
        other => other,
    };
    let window = escalation.as_ref().map(tasks::Escalation::window);
    let finished = tokio::select! {
        biased;
        result = &mut answer => Some(result),
        () = round.wake.notified() => None,
        () = async {
            match window {
                Some(window) => tokio::time::sleep(window).await,
                None => std::future::pending().await,
            }
        } => {
            return match escalation {
                Some(escalation) => escalation.start(answer).await,
                None => answer.await,
            };
        }
    };
    let finished = match finished {
        Some(result) => Some(result),
        // Inputs asked for concurrently register in the same poll; one more poll lets
        // a handler that finishes anyway do so.
        None => match std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(answer.as_mut(), cx))
        })
        .await
        {
            std::task::Poll::Ready(result) => Some(result),
            std::task::Poll::Pending => None,
        },
    };
    match finished {
        Some(result) => match round.fatal() {
            Some(error) => Err(error),
            None => result,
        },
        None if round.must_end() => round.end(key, SystemTime::now()),
        // Woken without anything to end with: cannot happen (every wake follows an
        // ask or a refusal), but the handler's answer is still the answer.
        None => answer.await,
    }
}

impl SessionService {
    /// `subscriptions/listen` (protocol 2026-07-28): acknowledges with the filter, then
    /// sends the changes it asks for, each tagged with the subscription's id (the
    /// request's id), on the request's own stream until the client closes it (which
    /// cancels the request: no answer follows) or the stream breaks. When the server
    /// ends it (`Server::end_subscriptions`) the request is answered with the empty
    /// result naming the subscription. Over `ServerBuilder::max_subscriptions` it is
    /// refused (`-32603`) before any acknowledgement.
    ///
    /// With the tasks extension, `taskIds` asks for `notifications/tasks` (the task as
    /// `tasks/get` would show it) at every change of those tasks the caller may see; the
    /// acknowledgement lists the ones accepted. Asking without declaring the extension
    /// is `-32021`.
    fn listen(
        &self,
        params: Option<Box<RawValue>>,
        context: &RequestContext,
        declares_tasks: bool,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        let params = match parse_params::<SubscriptionsListenRequestParams>(params.as_deref()) {
            Ok(params) => params,
            Err(error) => return Box::pin(async move { Err(error) }),
        };
        let mut filter = params.notifications;
        narrow_to_advertised(&mut filter, &self.server.capabilities);
        let host = match (&filter.task_ids, self.server.tasks()) {
            (Some(_), Some(_)) if !declares_tasks => {
                let error = tasks::missing_extension();
                return Box::pin(async move { Err(error) });
            }
            (Some(_), Some(host)) => Some(host.clone()),
            (Some(_), None) => {
                // No tasks here: none to watch, and the acknowledgement says so.
                filter.task_ids = None;
                None
            }
            (None, _) => None,
        };
        let mut tasks = tasks::TaskWatch::new(host, tasks::owner(context, &self.state));
        let id = context.request_id().clone();
        let peer = context.peer().clone();
        let cancelled = context.cancellation().clone();
        let announcer = self.server.announcer.clone();
        Box::pin(async move {
            let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
            // Refused before any acknowledgement: the streams already open go on.
            let Some(_listening) = announcer.listen(filter.clone(), tx) else {
                return Err(ErrorData::internal_error(
                    "subscription limit reached: this server serves no more subscriptions/listen streams at once",
                ));
            };
            if let Some(ids) = filter.task_ids.as_mut() {
                tasks.accept(ids).await;
            }
            let mut tag = Meta::new();
            tag.set_subscription_id(&id);
            let ack = SubscriptionsAcknowledgedNotificationParams::new(filter).with_meta(tag);
            peer.notify::<SubscriptionsAcknowledgedNotification>(ack)
                .await
                .map_err(|e| e.to_error_data())?;
            loop {
                let change = tokio::select! {
                    () = cancelled.cancelled() => {
                        return Err(ErrorData::internal_error("the subscription was cancelled"));
                    }
                    change = changes.recv() => change,
                    task = tasks.next() => {
                        let Some(params) = tasks.notification(task, &id).await? else { continue };
                        let method = <modelctx_types::ext_tasks::TaskNotification as
                            modelctx_types::NotificationMethod>::METHOD;
                        if peer.notify_raw(Cow::Borrowed(method), Some(params)).await.is_err() {
                            break;
                        }
                        continue;
                    }
                };
                let Some(change) = change else { break };
                let tag = serde_json::json!({ Meta::SUBSCRIPTION_ID: &id });
                let (method, params) = match change {
                    registry::Change::List(kind) => (
                        match kind {
                            registry::ListKind::Tools => "notifications/tools/list_changed",
                            registry::ListKind::Prompts => "notifications/prompts/list_changed",
                            registry::ListKind::Resources => "notifications/resources/list_changed",
                        },
                        serde_json::json!({ "_meta": tag }),
                    ),
                    registry::Change::Resource(uri) => (
                        "notifications/resources/updated",
                        serde_json::json!({ "uri": uri, "_meta": tag }),
                    ),
                };
                let params =
                    to_raw(&params).map_err(|e| ErrorData::internal_error(e.to_string()))?;
                if peer
                    .notify_raw(Cow::Borrowed(method), Some(params))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            to_raw(&SubscriptionsListenResult::new(id))
                .map_err(|e| ErrorData::internal_error(e.to_string()))
        })
    }

    /// A `tools/call` over HTTP: the tool's `x-mcp-header` arguments against the
    /// request's `Mcp-Param-*` headers. Only the tool's name is read unless the tool
    /// marks arguments (most tools do not, and a low-level handler's tool is in no
    /// registry).
    fn check_param_headers(
        &self,
        params: Option<&RawValue>,
        mirrored: &[(String, String)],
    ) -> Result<(), ErrorData> {
        #[derive(serde::Deserialize)]
        struct Name<'a> {
            #[serde(borrow)]
            name: Cow<'a, str>,
        }
        #[derive(serde::Deserialize)]
        struct Arguments {
            arguments: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let Some(params) = params else {
            return Ok(());
        };
        // Most servers have no tool that marks arguments: then nothing is read (a pass
        // over the params costs more than a look at every tool).
        let marking = registry::any(&self.server.registry.tools, |tool| {
            !tool.mirrored.is_empty()
        });
        if !marking {
            return Ok(());
        }
        // Malformed params are the handler's to refuse.
        let Ok(call) = serde_json::from_str::<Name<'_>>(params.get()) else {
            return Ok(());
        };
        let Some(tool) = registry::lookup(&self.server.registry.tools, &call.name) else {
            return Ok(());
        };
        if tool.mirrored.is_empty() {
            return Ok(());
        }
        let Ok(call) = serde_json::from_str::<Arguments>(params.get()) else {
            return Ok(());
        };
        stateless::check_param_headers(&tool.mirrored, call.arguments.as_ref(), mirrored)
    }

    /// The key that seals this server's `requestState`.
    fn state_key(&self) -> Result<mrtr::StateKey, ErrorData> {
        self.server
            .state_key
            .clone()
            .or_else(mrtr::StateKey::process)
            .ok_or_else(|| {
                ErrorData::internal_error("no randomness available for the requestState key")
            })
    }

    /// The envelope of a request of the stateless era, read from its `_meta` or found
    /// in the server's cache.
    fn envelope(&self, context: &RequestContext) -> Result<Arc<stateless::Envelope>, ErrorData> {
        stateless::envelope_cached(
            &self.server.envelopes,
            context.unstable_shared_meta(),
            context.unstable_meta_text(),
            || context.meta(),
        )
    }

    /// A request of the stateless era: its envelope checked, the era's own methods
    /// answered here, every other one served by the same handlers as in a session, and
    /// the answer finished for the era.
    pub(super) fn stateless(
        self: Arc<Self>,
        request: JsonRpcRequest,
        context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        // Taken apart, not cloned: the method's name is owned text.
        let JsonRpcRequest {
            method,
            params: request_params,
            ..
        } = request;
        #[cfg(feature = "tasks")]
        if let Some(host) = self.server.tasks().cloned()
            && matches!(
                method.as_ref(),
                "tasks/get" | "tasks/update" | "tasks/cancel"
            )
        {
            let envelope = match self.envelope(&context) {
                Ok(envelope) => envelope,
                Err(error) => return Box::pin(async move { Err(error) }),
            };
            let owner = tasks::owner(&context, &self.state);
            let cx = Context::new(context, self.state.clone(), self.server.clone())
                .in_stateless_era(envelope);
            let answer = tasks::serve_extension(host, &method, request_params, owner, &cx);
            let info = self.server.info_json.clone();
            let hints = self.server.cache_hints.clone();
            return Box::pin(async move {
                match answer.await {
                    Ok(raw) => stateless::finish_result(&method, &raw, &info, &hints),
                    Err(error) => Err(stateless::finish_error(error)),
                }
            });
        }
        if stateless::removed(&method) {
            let error = ErrorData::method_not_found(&method);
            return Box::pin(async move { Err(error) });
        }
        let envelope = match self.envelope(&context) {
            Ok(envelope) => envelope,
            Err(error) => return Box::pin(async move { Err(error) }),
        };
        let info = self.server.info_json.clone();
        if method == "server/discover" {
            let hints = &self.server.cache_hints;
            let mut capabilities = self.server.capabilities.clone();
            if capabilities.tasks.take().is_some() {
                // The era's tasks are the extension's, not the 2025-11-25 utility's.
                capabilities = capabilities
                    .with_extension(modelctx_types::ext_tasks::EXTENSION_ID, Default::default());
            }
            let result =
                stateless::discover(&capabilities, self.server.instructions.as_deref(), hints)
                    .and_then(|raw| stateless::finish_result(&method, &raw, &info, hints));
            return Box::pin(async move { result });
        }
        if method == "subscriptions/listen" {
            let declares = envelope
                .capabilities
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(modelctx_types::ext_tasks::EXTENSION_ID));
            return self.listen(request_params, &context, declares);
        }
        let mut cx = Context::new(context, self.state.clone(), self.server.clone())
            .in_stateless_era(envelope);
        let mut params = request_params;
        let mut round = None;
        if mrtr::METHODS.contains(&method.as_ref()) {
            let opened = self.state_key().and_then(|key| {
                let mut split = mrtr::split(&method, params.take())?;
                let principal = cx
                    .request
                    .extensions()
                    .get::<modelctx_types::Principal>()
                    .map(|p| p.id());
                let mut opened =
                    mrtr::Round::open(&key, &method, &mut split, principal, SystemTime::now())?;
                opened.set_single_use(self.server.single_use.clone());
                opened.set_lifetime(self.server.state_lifetime);
                Ok((key, split.params, Arc::new(opened)))
            });
            match opened {
                Ok((key, own, opened)) => {
                    params = own;
                    cx = cx.in_round(opened.clone());
                    round = Some((key, opened));
                }
                Err(error) => return Box::pin(async move { Err(error) }),
            }
        }
        if method == "tools/call"
            && let Some(mirrored) = cx.request.mirrored_params()
            && let Err(error) = self.check_param_headers(params.as_deref(), mirrored)
        {
            return Box::pin(async move { Err(error) });
        }
        #[cfg(not(feature = "tasks"))]
        let escalation: Option<tasks::Escalation> = None;
        #[cfg(feature = "tasks")]
        let mut escalation = None;
        #[cfg(feature = "tasks")]
        if method == "tools/call" {
            match tasks::extension_mode(&self.server, &cx, params.as_deref()) {
                Err(error) => return Box::pin(async move { Err(error) }),
                Ok(None) => {}
                Ok(Some(window)) => {
                    if let Some(host) = self.server.tasks().cloned() {
                        let slot = Arc::new(crate::request::Escalating::default());
                        cx = cx.escalating(slot.clone());
                        escalation = Some(tasks::Escalation {
                            host,
                            owner: tasks::owner(&cx.request, &self.state),
                            slot,
                            window,
                        });
                    }
                }
            }
        }
        let answer = self.serve(&method, params, cx);
        let hints = self.server.cache_hints.clone();
        Box::pin(async move {
            let outcome = match round {
                None => answer.await,
                Some((key, round)) => match round.claim().await {
                    Ok(()) => run_round(answer, &round, &key, escalation).await,
                    Err(error) => Err(error),
                },
            };
            match outcome {
                Ok(raw) => stateless::finish_result(&method, &raw, &info, &hints),
                Err(error) => Err(stateless::finish_error(error)),
            }
        })
    }
}

/// Leaves out of a listen filter the kinds this server does not advertise (a list
/// without `listChanged`, resources without `subscribe`): they are neither acknowledged
/// nor delivered. The 2026-07-28 subscriptions pattern: "The `notifications` field in
/// the acknowledgment reflects the subset the server agreed to honor. Notification
/// types the server does not support are omitted."
fn narrow_to_advertised(filter: &mut SubscriptionFilter, capabilities: &ServerCapabilities) {
    let on = |flag: Option<bool>| flag == Some(true);
    if !on(capabilities.tools.as_ref().and_then(|c| c.list_changed)) {
        filter.tools_list_changed = None;
    }
    if !on(capabilities.prompts.as_ref().and_then(|c| c.list_changed)) {
        filter.prompts_list_changed = None;
    }
    let resources = capabilities.resources.as_ref();
    if !on(resources.and_then(|c| c.list_changed)) {
        filter.resources_list_changed = None;
    }
    if !on(resources.and_then(|c| c.subscribe)) {
        filter.resource_subscriptions = None;
    }
}

#[cfg(test)]
mod narrowing_tests {
    use modelctx_types::{ResourcesCapability, ToolsCapability};

    use super::*;

    #[test]
    fn a_listen_filter_keeps_only_what_the_server_advertises() {
        let everything = || {
            SubscriptionFilter::new()
                .with_tools_list_changed(true)
                .with_prompts_list_changed(true)
                .with_resources_list_changed(true)
                .with_resource_subscriptions(vec!["file:///a".to_owned()])
        };
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        let mut capabilities = ServerCapabilities::default();
        capabilities.tools = Some(tools);
        let mut filter = everything();
        narrow_to_advertised(&mut filter, &capabilities);
        assert_eq!(
            filter,
            SubscriptionFilter::new().with_tools_list_changed(true)
        );

        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        capabilities.resources = Some(resources);
        let mut filter = everything();
        narrow_to_advertised(&mut filter, &capabilities);
        assert_eq!(
            filter,
            SubscriptionFilter::new()
                .with_tools_list_changed(true)
                .with_resource_subscriptions(vec!["file:///a".to_owned()])
        );
    }
}
