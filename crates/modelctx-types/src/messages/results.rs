//! The result unions: [`ServerResult`] and [`ClientResult`], decoded by shape or by
//! the request's method.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::base::{EmptyResult, JsonObject, from_object};
use crate::completion::{CompleteRequest, CompleteResult};
use crate::discover::{DiscoverRequest, DiscoverResult};
use crate::elicitation::{ElicitRequest, ElicitResult};
use crate::lifecycle::{InitializeRequest, InitializeResult};
use crate::mrtr::{InputRequiredResult, is_input_required};
use crate::prompts::{GetPromptRequest, GetPromptResult, ListPromptsRequest, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesRequest, ListResourceTemplatesResult, ListResourcesRequest,
    ListResourcesResult, ReadResourceRequest, ReadResourceResult,
};
use crate::roots::{ListRootsRequest, ListRootsResult};
use crate::sampling::{CreateMessageRequest, CreateMessageResult};
use crate::subscriptions::{SubscriptionsListenRequest, SubscriptionsListenResult};
use crate::tasks::{
    CancelTaskRequest, CancelTaskResult, CreateTaskResult, GetTaskPayloadRequest,
    GetTaskPayloadResult, GetTaskRequest, GetTaskResult, ListTasksRequest, ListTasksResult,
};
use crate::tools::{CallToolRequest, CallToolResult, ListToolsRequest, ListToolsResult};

fn has(map: &JsonObject, key: &str) -> bool {
    map.contains_key(key)
}

fn is_task(map: &JsonObject) -> bool {
    has(map, "taskId") && has(map, "status")
}

/// `{"_meta": {"io.modelcontextprotocol/subscriptionId": ..}, "resultType"?}` and
/// nothing else: the end of a `subscriptions/listen` stream.
fn is_subscriptions_listen(map: &JsonObject) -> bool {
    map.get("_meta")
        .and_then(|m| m.as_object())
        .is_some_and(|m| m.contains_key(crate::common::Meta::SUBSCRIPTION_ID))
        && map.keys().all(|k| k == "_meta" || k == "resultType")
}

crate::setters::untagged_union! {
    /// Every result a server sends.
    ///
    /// Deserialisation picks the variant from the members present, first match wins:
    /// `"resultType": "input_required"` → `InputRequired`, `supportedVersions` →
    /// `Discover`, `protocolVersion` → `Initialize`, `completion` → `Complete`, `messages` →
    /// `GetPrompt`, `prompts` → `ListPrompts`, `resourceTemplates` →
    /// `ListResourceTemplates`, `resources` → `ListResources`, `contents` →
    /// `ReadResource`, `tools` → `ListTools`, `content` → `CallTool`, `tasks` →
    /// `ListTasks`, `task` → `CreateTask`, `taskId` and `status` → `GetTask`, only `_meta`
    /// with `io.modelcontextprotocol/subscriptionId` (and `resultType`) →
    /// `SubscriptionsListen`, anything else → `Empty` (which keeps every member). If the
    /// chosen variant does not decode, that is the error. `CancelTask` (same shape as
    /// `GetTask`) and `GetTaskPayload`
    /// (the shape of another result) are never chosen: use
    /// [`ServerResult::from_method`] when the request's method is known.
    // `initialize` and its result are the large variants; they travel once per
    // session, so they are not boxed (matching stays `Initialize(request)`).
    #[allow(clippy::large_enum_variant)]
    #[derive(Debug, Clone, PartialEq)]
    #[non_exhaustive]
    pub enum ServerResult {
        /// `initialize`.
        Initialize(InitializeResult),
        /// `completion/complete`.
        Complete(CompleteResult),
        /// `prompts/get`.
        GetPrompt(GetPromptResult),
        /// `prompts/list`.
        ListPrompts(ListPromptsResult),
        /// `resources/templates/list`.
        ListResourceTemplates(ListResourceTemplatesResult),
        /// `resources/list`.
        ListResources(ListResourcesResult),
        /// `resources/read`.
        ReadResource(ReadResourceResult),
        /// `tools/call`.
        CallTool(CallToolResult),
        /// `tools/list`.
        ListTools(ListToolsResult),
        /// A task-augmented request's immediate answer.
        CreateTask(CreateTaskResult),
        /// `tasks/get`.
        GetTask(GetTaskResult),
        /// `tasks/result`.
        GetTaskPayload(GetTaskPayloadResult),
        /// `tasks/list`.
        ListTasks(ListTasksResult),
        /// `tasks/cancel`.
        CancelTask(CancelTaskResult),
        /// The interim answer of `tools/call`, `prompts/get` or `resources/read`: input
        /// is needed first (2026-07-28).
        InputRequired(InputRequiredResult),
        /// `server/discover` (2026-07-28).
        Discover(DiscoverResult),
        /// `subscriptions/listen` (2026-07-28).
        SubscriptionsListen(SubscriptionsListenResult),
        /// `ping`, `logging/setLevel`, `resources/subscribe`, ... (any other result).
        Empty(EmptyResult),
    }
    read |map| {
        Ok(if is_input_required(&map) {
            Self::InputRequired(from_object(map)?)
        } else if has(&map, "supportedVersions") {
            Self::Discover(from_object(map)?)
        } else if has(&map, "protocolVersion") {
            Self::Initialize(from_object(map)?)
        } else if has(&map, "completion") {
            Self::Complete(from_object(map)?)
        } else if has(&map, "messages") {
            Self::GetPrompt(from_object(map)?)
        } else if has(&map, "prompts") {
            Self::ListPrompts(from_object(map)?)
        } else if has(&map, "resourceTemplates") {
            Self::ListResourceTemplates(from_object(map)?)
        } else if has(&map, "resources") {
            Self::ListResources(from_object(map)?)
        } else if has(&map, "contents") {
            Self::ReadResource(from_object(map)?)
        } else if has(&map, "tools") {
            Self::ListTools(from_object(map)?)
        } else if has(&map, "content") {
            Self::CallTool(from_object(map)?)
        } else if has(&map, "tasks") {
            Self::ListTasks(from_object(map)?)
        } else if has(&map, "task") {
            Self::CreateTask(from_object(map)?)
        } else if is_task(&map) {
            Self::GetTask(from_object(map)?)
        } else if is_subscriptions_listen(&map) {
            Self::SubscriptionsListen(from_object(map)?)
        } else {
            Self::Empty(from_object(map)?)
        })
    }
}

/// Decodes `result` as `T`, or as an `InputRequiredResult` when it says
/// `"resultType": "input_required"` (2026-07-28 multi round-trip requests).
/// With `task`, a result carrying a `task` is a `CreateTaskResult`.
fn decode_or_input_required<T>(
    result: &RawValue,
    wrap: impl FnOnce(T) -> ServerResult,
    task: bool,
) -> Result<ServerResult, serde_json::Error>
where
    T: for<'a> Deserialize<'a>,
{
    let map: JsonObject = serde_json::from_str(result.get())?;
    if is_input_required(&map) {
        return from_object::<InputRequiredResult, serde_json::Error>(map)
            .map(ServerResult::InputRequired);
    }
    if task && map.contains_key("task") {
        return from_object::<CreateTaskResult, serde_json::Error>(map)
            .map(ServerResult::CreateTask);
    }
    from_object::<T, serde_json::Error>(map).map(wrap)
}

/// Decodes `result` as `T`, or as a `CreateTaskResult` when it carries a `task` and the
/// method may be task-augmented.
fn decode_result<T, R>(
    result: &RawValue,
    wrap: impl FnOnce(T) -> R,
    task: Option<fn(CreateTaskResult) -> R>,
) -> Result<R, serde_json::Error>
where
    T: for<'a> Deserialize<'a>,
{
    if let Some(task) = task {
        let map: JsonObject = serde_json::from_str(result.get())?;
        if map.contains_key("task") {
            return from_object::<CreateTaskResult, serde_json::Error>(map).map(task);
        }
        return from_object::<T, serde_json::Error>(map).map(wrap);
    }
    serde_json::from_str(result.get()).map(wrap)
}

impl ServerResult {
    /// Decodes the result of a request whose method is known: exactly the method's
    /// result type (or `CreateTask` for a task-augmented `tools/call`, or
    /// `InputRequired` for a `tools/call`, `prompts/get` or `resources/read` result with
    /// `"resultType": "input_required"`); unknown methods give `Empty`.
    #[inline]
    pub fn from_method(method: &str, result: &RawValue) -> Result<Self, serde_json::Error> {
        match method {
            DiscoverRequest::METHOD => decode_result(result, Self::Discover, None),
            SubscriptionsListenRequest::METHOD => {
                decode_result(result, Self::SubscriptionsListen, None)
            }
            InitializeRequest::METHOD => decode_result(result, Self::Initialize, None),
            CompleteRequest::METHOD => decode_result(result, Self::Complete, None),
            GetPromptRequest::METHOD => decode_or_input_required(result, Self::GetPrompt, false),
            ListPromptsRequest::METHOD => decode_result(result, Self::ListPrompts, None),
            ListResourceTemplatesRequest::METHOD => {
                decode_result(result, Self::ListResourceTemplates, None)
            }
            ListResourcesRequest::METHOD => decode_result(result, Self::ListResources, None),
            ReadResourceRequest::METHOD => {
                decode_or_input_required(result, Self::ReadResource, false)
            }
            CallToolRequest::METHOD => decode_or_input_required(result, Self::CallTool, true),
            ListToolsRequest::METHOD => decode_result(result, Self::ListTools, None),
            GetTaskRequest::METHOD => decode_result(result, Self::GetTask, None),
            GetTaskPayloadRequest::METHOD => decode_result(result, Self::GetTaskPayload, None),
            ListTasksRequest::METHOD => decode_result(result, Self::ListTasks, None),
            CancelTaskRequest::METHOD => decode_result(result, Self::CancelTask, None),
            _ => decode_result(result, Self::Empty, None),
        }
    }
}

crate::setters::untagged_union! {
    /// Every result a client sends.
    ///
    /// Deserialisation picks the variant from the members present, first match wins:
    /// `model` → `CreateMessage`, `roots` → `ListRoots`, `action` → `Elicit`, `tasks` →
    /// `ListTasks`, `task` → `CreateTask`, `taskId` and `status` → `GetTask`, anything
    /// else → `Empty` (which keeps every member). If the chosen variant does not decode,
    /// that is the error. `CancelTask` and `GetTaskPayload` are never chosen: use
    /// [`ClientResult::from_method`] when the request's method is known.
    #[derive(Debug, Clone, PartialEq)]
    #[non_exhaustive]
    pub enum ClientResult {
        /// `sampling/createMessage`.
        CreateMessage(CreateMessageResult),
        /// `roots/list`.
        ListRoots(ListRootsResult),
        /// `elicitation/create`.
        Elicit(ElicitResult),
        /// A task-augmented request's immediate answer.
        CreateTask(CreateTaskResult),
        /// `tasks/get`.
        GetTask(GetTaskResult),
        /// `tasks/result`.
        GetTaskPayload(GetTaskPayloadResult),
        /// `tasks/list`.
        ListTasks(ListTasksResult),
        /// `tasks/cancel`.
        CancelTask(CancelTaskResult),
        /// `ping` (any other result).
        Empty(EmptyResult),
    }
    read |map| {
        Ok(if has(&map, "model") {
            Self::CreateMessage(from_object(map)?)
        } else if has(&map, "roots") {
            Self::ListRoots(from_object(map)?)
        } else if has(&map, "action") {
            Self::Elicit(from_object(map)?)
        } else if has(&map, "tasks") {
            Self::ListTasks(from_object(map)?)
        } else if has(&map, "task") {
            Self::CreateTask(from_object(map)?)
        } else if is_task(&map) {
            Self::GetTask(from_object(map)?)
        } else {
            Self::Empty(from_object(map)?)
        })
    }
}

impl ClientResult {
    /// Decodes the result of a request whose method is known: exactly the method's
    /// result type (or `CreateTask` for a task-augmented sampling or elicitation);
    /// unknown methods give `Empty`.
    #[inline]
    pub fn from_method(method: &str, result: &RawValue) -> Result<Self, serde_json::Error> {
        match method {
            CreateMessageRequest::METHOD => {
                decode_result(result, Self::CreateMessage, Some(Self::CreateTask))
            }
            ListRootsRequest::METHOD => decode_result(result, Self::ListRoots, None),
            ElicitRequest::METHOD => decode_result(result, Self::Elicit, Some(Self::CreateTask)),
            GetTaskRequest::METHOD => decode_result(result, Self::GetTask, None),
            GetTaskPayloadRequest::METHOD => decode_result(result, Self::GetTaskPayload, None),
            ListTasksRequest::METHOD => decode_result(result, Self::ListTasks, None),
            CancelTaskRequest::METHOD => decode_result(result, Self::CancelTask, None),
            _ => decode_result(result, Self::Empty, None),
        }
    }
}
