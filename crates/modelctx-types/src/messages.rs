//! The unions of every message each side sends: [`ClientRequest`], [`ServerRequest`],
//! [`ClientNotification`], [`ServerNotification`], [`ClientResult`], [`ServerResult`].
//!
//! Requests and notifications are tagged by `method`: an unknown method is an error
//! (use [`ClientRequest::from_json_rpc`] and friends to get the JSON-RPC error that
//! answers it). Results carry no tag, so their deserialisation follows a fixed rule
//! based on which members are present (documented on each enum); when the request's
//! method is known, [`ServerResult::from_method`] / [`ClientResult::from_method`] decode
//! exactly the expected type instead.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::base::{EmptyResult, JsonObject, from_object};
use crate::completion::{CompleteRequest, CompleteResult};
use crate::elicitation::{ElicitRequest, ElicitResult, ElicitationCompleteNotification};
use crate::error::ErrorData;
use crate::jsonrpc::{JSONRPC_VERSION, JsonRpcNotification, JsonRpcRequest, RequestId, to_raw};
use crate::lifecycle::{InitializeRequest, InitializeResult, InitializedNotification, PingRequest};
use crate::logging::{LoggingMessageNotification, SetLevelRequest};
use crate::notifications::{CancelledNotification, ProgressNotification};
use crate::prompts::{
    GetPromptRequest, GetPromptResult, ListPromptsRequest, ListPromptsResult,
    PromptListChangedNotification,
};
use crate::resources::{
    ListResourceTemplatesRequest, ListResourceTemplatesResult, ListResourcesRequest,
    ListResourcesResult, ReadResourceRequest, ReadResourceResult, ResourceListChangedNotification,
    ResourceUpdatedNotification, SubscribeRequest, UnsubscribeRequest,
};
use crate::roots::{ListRootsRequest, ListRootsResult, RootsListChangedNotification};
use crate::sampling::{CreateMessageRequest, CreateMessageResult};
use crate::tasks::{
    CancelTaskRequest, CancelTaskResult, CreateTaskResult, GetTaskPayloadRequest,
    GetTaskPayloadResult, GetTaskRequest, GetTaskResult, ListTasksRequest, ListTasksResult,
    TaskStatusNotification,
};
use crate::tools::{
    CallToolRequest, CallToolResult, ListToolsRequest, ListToolsResult, ToolListChangedNotification,
};

/// Builds `{"jsonrpc","id"?,"method","params"?}` from envelope parts.
fn envelope(
    id: Option<&RequestId>,
    method: &str,
    params: Option<&RawValue>,
) -> Result<JsonObject, ErrorData> {
    let mut map = JsonObject::new();
    map.insert("jsonrpc".to_owned(), Value::from(JSONRPC_VERSION));
    if let Some(id) = id {
        map.insert(
            "id".to_owned(),
            serde_json::to_value(id).map_err(|e| ErrorData::internal_error(e.to_string()))?,
        );
    }
    map.insert("method".to_owned(), Value::from(method));
    if let Some(params) = params {
        let params: Value = serde_json::from_str(params.get())
            .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))?;
        map.insert("params".to_owned(), params);
    }
    Ok(map)
}

fn params_of(map: &mut JsonObject) -> Result<Option<Box<RawValue>>, serde_json::Error> {
    map.remove("params").map(|p| to_raw(&p)).transpose()
}

macro_rules! request_union {
    (
        $(#[$m:meta])*
        $name:ident { $( $(#[$vm:meta])* $variant:ident($ty:ty) ),* $(,)? }
    ) => {
        $(#[$m])*
        // `initialize` and its result are the large variants; they travel once per
        // session, so they are not boxed (matching stays `Initialize(request)`).
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vm])* $variant($ty), )*
        }

        impl $name {
            /// Every method of this union.
            pub const METHODS: &'static [&'static str] = &[$( <$ty>::METHOD, )*];

            /// The method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => <$ty>::METHOD, )*
                }
            }

            /// The request id.
            pub fn id(&self) -> Option<&RequestId> {
                match self {
                    $( Self::$variant(r) => r.id.as_ref(), )*
                }
            }

            /// Decodes a request from its envelope parts: an unknown method gives
            /// `-32601` (method not found), bad parameters `-32602` (invalid params).
            pub fn from_parts(
                id: Option<&RequestId>,
                method: &str,
                params: Option<&RawValue>,
            ) -> Result<Self, ErrorData> {
                let map = envelope(id, method, params)?;
                $(
                    if method == <$ty>::METHOD {
                        return serde_json::from_value(Value::Object(map))
                            .map(Self::$variant)
                            .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")));
                    }
                )*
                Err(ErrorData::method_not_found(method))
            }

            /// Decodes a request off the generic envelope.
            pub fn from_json_rpc(request: &JsonRpcRequest) -> Result<Self, ErrorData> {
                Self::from_parts(Some(&request.id), &request.method, request.params.as_deref())
            }

            /// The generic envelope; `None` when the request has no id.
            pub fn to_json_rpc(&self) -> Option<JsonRpcRequest> {
                let id = self.id()?.clone();
                let mut map = match serde_json::to_value(self).ok()? {
                    Value::Object(map) => map,
                    _ => return None,
                };
                let params = params_of(&mut map).ok()?;
                Some(JsonRpcRequest::new(id, self.method(), params))
            }
        }

        $(
            impl From<$ty> for $name {
                fn from(r: $ty) -> Self {
                    Self::$variant(r)
                }
            }
        )*

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(r) => r.serialize(serializer), )*
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let map = JsonObject::deserialize(deserializer)?;
                let method = match map.get("method") {
                    Some(Value::String(m)) => m.clone(),
                    _ => return Err(de::Error::missing_field("method")),
                };
                $(
                    if method == <$ty>::METHOD {
                        return from_object(map).map(Self::$variant);
                    }
                )*
                Err(de::Error::unknown_variant(&method, Self::METHODS))
            }
        }
    };
}

macro_rules! notification_union {
    (
        $(#[$m:meta])*
        $name:ident { $( $(#[$vm:meta])* $variant:ident($ty:ty) ),* $(,)? }
    ) => {
        $(#[$m])*
        // `initialize` and its result are the large variants; they travel once per
        // session, so they are not boxed (matching stays `Initialize(request)`).
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vm])* $variant($ty), )*
        }

        impl $name {
            /// Every method of this union.
            pub const METHODS: &'static [&'static str] = &[$( <$ty>::METHOD, )*];

            /// The method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => <$ty>::METHOD, )*
                }
            }

            /// Decodes a notification from its method and parameters: an unknown method
            /// gives `-32601`, bad parameters `-32602` (a receiver never answers a
            /// notification, but may log the error).
            pub fn from_parts(method: &str, params: Option<&RawValue>) -> Result<Self, ErrorData> {
                let map = envelope(None, method, params)?;
                $(
                    if method == <$ty>::METHOD {
                        return serde_json::from_value(Value::Object(map))
                            .map(Self::$variant)
                            .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")));
                    }
                )*
                Err(ErrorData::method_not_found(method))
            }

            /// Decodes a notification off the generic envelope.
            pub fn from_json_rpc(notification: &JsonRpcNotification) -> Result<Self, ErrorData> {
                Self::from_parts(&notification.method, notification.params.as_deref())
            }

            /// The generic envelope.
            pub fn to_json_rpc(&self) -> Result<JsonRpcNotification, serde_json::Error> {
                let mut map = match serde_json::to_value(self)? {
                    Value::Object(map) => map,
                    _ => JsonObject::new(),
                };
                let params = params_of(&mut map)?;
                Ok(JsonRpcNotification::new(self.method(), params))
            }
        }

        $(
            impl From<$ty> for $name {
                fn from(n: $ty) -> Self {
                    Self::$variant(n)
                }
            }
        )*

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(n) => n.serialize(serializer), )*
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let map = JsonObject::deserialize(deserializer)?;
                let method = match map.get("method") {
                    Some(Value::String(m)) => m.clone(),
                    _ => return Err(de::Error::missing_field("method")),
                };
                $(
                    if method == <$ty>::METHOD {
                        return from_object(map).map(Self::$variant);
                    }
                )*
                Err(de::Error::unknown_variant(&method, Self::METHODS))
            }
        }
    };
}

request_union! {
    /// Every request a client sends, tagged by `method`.
    ClientRequest {
        /// `ping`.
        Ping(PingRequest),
        /// `initialize`.
        Initialize(InitializeRequest),
        /// `completion/complete`.
        Complete(CompleteRequest),
        /// `logging/setLevel`.
        SetLevel(SetLevelRequest),
        /// `prompts/get`.
        GetPrompt(GetPromptRequest),
        /// `prompts/list`.
        ListPrompts(ListPromptsRequest),
        /// `resources/list`.
        ListResources(ListResourcesRequest),
        /// `resources/templates/list`.
        ListResourceTemplates(ListResourceTemplatesRequest),
        /// `resources/read`.
        ReadResource(ReadResourceRequest),
        /// `resources/subscribe`.
        Subscribe(SubscribeRequest),
        /// `resources/unsubscribe`.
        Unsubscribe(UnsubscribeRequest),
        /// `tools/call`.
        CallTool(CallToolRequest),
        /// `tools/list`.
        ListTools(ListToolsRequest),
        /// `tasks/get`.
        GetTask(GetTaskRequest),
        /// `tasks/result`.
        GetTaskPayload(GetTaskPayloadRequest),
        /// `tasks/list`.
        ListTasks(ListTasksRequest),
        /// `tasks/cancel`.
        CancelTask(CancelTaskRequest),
    }
}

request_union! {
    /// Every request a server sends, tagged by `method`.
    ServerRequest {
        /// `ping`.
        Ping(PingRequest),
        /// `sampling/createMessage`.
        CreateMessage(CreateMessageRequest),
        /// `roots/list`.
        ListRoots(ListRootsRequest),
        /// `elicitation/create`.
        Elicit(ElicitRequest),
        /// `tasks/get`.
        GetTask(GetTaskRequest),
        /// `tasks/result`.
        GetTaskPayload(GetTaskPayloadRequest),
        /// `tasks/list`.
        ListTasks(ListTasksRequest),
        /// `tasks/cancel`.
        CancelTask(CancelTaskRequest),
    }
}

notification_union! {
    /// Every notification a client sends, tagged by `method`.
    ClientNotification {
        /// `notifications/cancelled`.
        Cancelled(CancelledNotification),
        /// `notifications/progress`.
        Progress(ProgressNotification),
        /// `notifications/initialized`.
        Initialized(InitializedNotification),
        /// `notifications/roots/list_changed`.
        RootsListChanged(RootsListChangedNotification),
        /// `notifications/tasks/status`.
        TaskStatus(TaskStatusNotification),
    }
}

notification_union! {
    /// Every notification a server sends, tagged by `method`.
    ServerNotification {
        /// `notifications/cancelled`.
        Cancelled(CancelledNotification),
        /// `notifications/progress`.
        Progress(ProgressNotification),
        /// `notifications/message`.
        LoggingMessage(LoggingMessageNotification),
        /// `notifications/resources/updated`.
        ResourceUpdated(ResourceUpdatedNotification),
        /// `notifications/resources/list_changed`.
        ResourceListChanged(ResourceListChangedNotification),
        /// `notifications/tools/list_changed`.
        ToolListChanged(ToolListChangedNotification),
        /// `notifications/prompts/list_changed`.
        PromptListChanged(PromptListChangedNotification),
        /// `notifications/elicitation/complete`.
        ElicitationComplete(ElicitationCompleteNotification),
        /// `notifications/tasks/status`.
        TaskStatus(TaskStatusNotification),
    }
}

macro_rules! result_union {
    (
        $(#[$m:meta])*
        $name:ident {
            $( $(#[$vm:meta])* $variant:ident($ty:ty) ),* $(,)?
        }
    ) => {
        $(#[$m])*
        // `initialize` and its result are the large variants; they travel once per
        // session, so they are not boxed (matching stays `Initialize(request)`).
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vm])* $variant($ty), )*
        }

        $(
            impl From<$ty> for $name {
                fn from(r: $ty) -> Self {
                    Self::$variant(r)
                }
            }
        )*

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(r) => r.serialize(serializer), )*
                }
            }
        }
    };
}

fn has(map: &JsonObject, key: &str) -> bool {
    map.contains_key(key)
}

fn is_task(map: &JsonObject) -> bool {
    has(map, "taskId") && has(map, "status")
}

result_union! {
    /// Every result a server sends.
    ///
    /// Deserialisation picks the variant from the members present, first match wins:
    /// `protocolVersion` → `Initialize`, `completion` → `Complete`, `messages` →
    /// `GetPrompt`, `prompts` → `ListPrompts`, `resourceTemplates` →
    /// `ListResourceTemplates`, `resources` → `ListResources`, `contents` →
    /// `ReadResource`, `tools` → `ListTools`, `content` → `CallTool`, `tasks` →
    /// `ListTasks`, `task` → `CreateTask`, `taskId` and `status` → `GetTask`, anything
    /// else → `Empty` (which keeps every member). If the chosen variant does not decode,
    /// that is the error. `CancelTask` (same shape as `GetTask`) and `GetTaskPayload`
    /// (the shape of another result) are never chosen: use
    /// [`ServerResult::from_method`] when the request's method is known.
    ServerResult {
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
        /// `ping`, `logging/setLevel`, `resources/subscribe`, ... (any other result).
        Empty(EmptyResult),
    }
}

impl<'de> Deserialize<'de> for ServerResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        Ok(if has(&map, "protocolVersion") {
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
        } else {
            Self::Empty(from_object(map)?)
        })
    }
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
    /// result type (or `CreateTask` for a task-augmented `tools/call`); unknown methods
    /// give `Empty`.
    pub fn from_method(method: &str, result: &RawValue) -> Result<Self, serde_json::Error> {
        match method {
            InitializeRequest::METHOD => decode_result(result, Self::Initialize, None),
            CompleteRequest::METHOD => decode_result(result, Self::Complete, None),
            GetPromptRequest::METHOD => decode_result(result, Self::GetPrompt, None),
            ListPromptsRequest::METHOD => decode_result(result, Self::ListPrompts, None),
            ListResourceTemplatesRequest::METHOD => {
                decode_result(result, Self::ListResourceTemplates, None)
            }
            ListResourcesRequest::METHOD => decode_result(result, Self::ListResources, None),
            ReadResourceRequest::METHOD => decode_result(result, Self::ReadResource, None),
            CallToolRequest::METHOD => {
                decode_result(result, Self::CallTool, Some(Self::CreateTask))
            }
            ListToolsRequest::METHOD => decode_result(result, Self::ListTools, None),
            GetTaskRequest::METHOD => decode_result(result, Self::GetTask, None),
            GetTaskPayloadRequest::METHOD => decode_result(result, Self::GetTaskPayload, None),
            ListTasksRequest::METHOD => decode_result(result, Self::ListTasks, None),
            CancelTaskRequest::METHOD => decode_result(result, Self::CancelTask, None),
            _ => decode_result(result, Self::Empty, None),
        }
    }
}

result_union! {
    /// Every result a client sends.
    ///
    /// Deserialisation picks the variant from the members present, first match wins:
    /// `model` → `CreateMessage`, `roots` → `ListRoots`, `action` → `Elicit`, `tasks` →
    /// `ListTasks`, `task` → `CreateTask`, `taskId` and `status` → `GetTask`, anything
    /// else → `Empty` (which keeps every member). If the chosen variant does not decode,
    /// that is the error. `CancelTask` and `GetTaskPayload` are never chosen: use
    /// [`ClientResult::from_method`] when the request's method is known.
    ClientResult {
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
}

impl<'de> Deserialize<'de> for ClientResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorCode, JsonRpcMessage};
    use serde_json::json;

    #[test]
    fn request_union_dispatch_and_errors() {
        let msg: JsonRpcMessage =
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}"#
                .parse()
                .unwrap();
        let JsonRpcMessage::Request(req) = msg else {
            panic!()
        };
        let r = ClientRequest::from_json_rpc(&req).unwrap();
        assert_eq!(r.method(), "tools/call");
        assert_eq!(r.id(), Some(&RequestId::Number(5)));
        let back = r.to_json_rpc().unwrap();
        assert_eq!(back.params.unwrap().get(), r#"{"name":"x"}"#);

        let err = ClientRequest::from_parts(Some(&RequestId::Number(1)), "nope", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::METHOD_NOT_FOUND);
        let err =
            ClientRequest::from_parts(Some(&RequestId::Number(1)), "tools/call", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        // A server request is not a client request.
        assert!(
            serde_json::from_value::<ClientRequest>(
                json!({"jsonrpc":"2.0","id":1,"method":"roots/list"})
            )
            .is_err()
        );
        let s: ServerRequest =
            serde_json::from_value(json!({"jsonrpc":"2.0","id":1,"method":"roots/list"})).unwrap();
        assert!(matches!(s, ServerRequest::ListRoots(_)));
    }

    #[test]
    fn notification_union() {
        let n: ServerNotification = serde_json::from_value(json!({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x"}
        }))
        .unwrap();
        assert_eq!(n.method(), "notifications/message");
        let env = n.to_json_rpc().unwrap();
        assert_eq!(env.method, "notifications/message");
        let c = ClientNotification::from_parts("notifications/initialized", None).unwrap();
        assert!(matches!(c, ClientNotification::Initialized(_)));
    }

    #[test]
    fn result_rules() {
        let r: ServerResult = serde_json::from_value(json!({})).unwrap();
        assert!(matches!(r, ServerResult::Empty(_)));
        let r: ServerResult =
            serde_json::from_value(json!({"content": [], "isError": true})).unwrap();
        assert!(matches!(r, ServerResult::CallTool(_)));
        let r: ServerResult = serde_json::from_value(json!({"tools": []})).unwrap();
        assert!(matches!(r, ServerResult::ListTools(_)));
        let r: ServerResult = serde_json::from_value(json!({"taskId": "t", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": null}))
        .unwrap();
        assert!(matches!(r, ServerResult::GetTask(_)));
        let raw = to_raw(&json!({"taskId": "t", "status": "cancelled",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": null}))
        .unwrap();
        assert!(matches!(
            ServerResult::from_method("tasks/cancel", &raw).unwrap(),
            ServerResult::CancelTask(_)
        ));
        let raw = to_raw(&json!({"task": {"taskId": "t", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": 1000}}))
        .unwrap();
        assert!(matches!(
            ServerResult::from_method("tools/call", &raw).unwrap(),
            ServerResult::CreateTask(_)
        ));
        let c: ClientResult = serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert!(matches!(c, ClientResult::Elicit(_)));
        let c: ClientResult = serde_json::from_value(json!({"role": "assistant", "model": "m",
            "content": {"type": "text", "text": "x"}}))
        .unwrap();
        assert!(matches!(c, ClientResult::CreateMessage(_)));
    }
}
