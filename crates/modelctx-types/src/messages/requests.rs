//! The request unions: [`ClientRequest`] and [`ServerRequest`].

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::base::{JsonObject, from_object};
use crate::completion::CompleteRequest;
use crate::discover::DiscoverRequest;
use crate::elicitation::ElicitRequest;
use crate::error::ErrorData;
use crate::jsonrpc::{JsonRpcRequest, RequestId};
use crate::lifecycle::{InitializeRequest, PingRequest};
use crate::logging::SetLevelRequest;
use crate::prompts::{GetPromptRequest, ListPromptsRequest};
use crate::resources::{
    ListResourceTemplatesRequest, ListResourcesRequest, ReadResourceRequest, SubscribeRequest,
    UnsubscribeRequest,
};
use crate::roots::ListRootsRequest;
use crate::sampling::CreateMessageRequest;
use crate::subscriptions::SubscriptionsListenRequest;
use crate::tasks::{CancelTaskRequest, GetTaskPayloadRequest, GetTaskRequest, ListTasksRequest};
use crate::tools::{CallToolRequest, ListToolsRequest};

use super::{envelope, params_of};

/// Every request a client sends, tagged by `method`.
// `initialize` and its result are the large variants; they travel once per
// session, so they are not boxed (matching stays `Initialize(request)`).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientRequest {
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
    /// `server/discover` (2026-07-28).
    Discover(DiscoverRequest),
    /// `subscriptions/listen` (2026-07-28).
    SubscriptionsListen(SubscriptionsListenRequest),
}

impl ClientRequest {
    /// Every method of this union.
    pub const METHODS: &'static [&'static str] = &[
        PingRequest::METHOD,
        InitializeRequest::METHOD,
        CompleteRequest::METHOD,
        SetLevelRequest::METHOD,
        GetPromptRequest::METHOD,
        ListPromptsRequest::METHOD,
        ListResourcesRequest::METHOD,
        ListResourceTemplatesRequest::METHOD,
        ReadResourceRequest::METHOD,
        SubscribeRequest::METHOD,
        UnsubscribeRequest::METHOD,
        CallToolRequest::METHOD,
        ListToolsRequest::METHOD,
        GetTaskRequest::METHOD,
        GetTaskPayloadRequest::METHOD,
        ListTasksRequest::METHOD,
        CancelTaskRequest::METHOD,
        DiscoverRequest::METHOD,
        SubscriptionsListenRequest::METHOD,
    ];

    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Ping(_) => PingRequest::METHOD,
            Self::Initialize(_) => InitializeRequest::METHOD,
            Self::Complete(_) => CompleteRequest::METHOD,
            Self::SetLevel(_) => SetLevelRequest::METHOD,
            Self::GetPrompt(_) => GetPromptRequest::METHOD,
            Self::ListPrompts(_) => ListPromptsRequest::METHOD,
            Self::ListResources(_) => ListResourcesRequest::METHOD,
            Self::ListResourceTemplates(_) => ListResourceTemplatesRequest::METHOD,
            Self::ReadResource(_) => ReadResourceRequest::METHOD,
            Self::Subscribe(_) => SubscribeRequest::METHOD,
            Self::Unsubscribe(_) => UnsubscribeRequest::METHOD,
            Self::CallTool(_) => CallToolRequest::METHOD,
            Self::ListTools(_) => ListToolsRequest::METHOD,
            Self::GetTask(_) => GetTaskRequest::METHOD,
            Self::GetTaskPayload(_) => GetTaskPayloadRequest::METHOD,
            Self::ListTasks(_) => ListTasksRequest::METHOD,
            Self::CancelTask(_) => CancelTaskRequest::METHOD,
            Self::Discover(_) => DiscoverRequest::METHOD,
            Self::SubscriptionsListen(_) => SubscriptionsListenRequest::METHOD,
        }
    }

    /// The request id.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Ping(r) => r.id.as_ref(),
            Self::Initialize(r) => r.id.as_ref(),
            Self::Complete(r) => r.id.as_ref(),
            Self::SetLevel(r) => r.id.as_ref(),
            Self::GetPrompt(r) => r.id.as_ref(),
            Self::ListPrompts(r) => r.id.as_ref(),
            Self::ListResources(r) => r.id.as_ref(),
            Self::ListResourceTemplates(r) => r.id.as_ref(),
            Self::ReadResource(r) => r.id.as_ref(),
            Self::Subscribe(r) => r.id.as_ref(),
            Self::Unsubscribe(r) => r.id.as_ref(),
            Self::CallTool(r) => r.id.as_ref(),
            Self::ListTools(r) => r.id.as_ref(),
            Self::GetTask(r) => r.id.as_ref(),
            Self::GetTaskPayload(r) => r.id.as_ref(),
            Self::ListTasks(r) => r.id.as_ref(),
            Self::CancelTask(r) => r.id.as_ref(),
            Self::Discover(r) => Some(&r.id),
            Self::SubscriptionsListen(r) => Some(&r.id),
        }
    }

    /// Decodes a request from its envelope parts: an unknown method gives
    /// `-32601` (method not found), bad parameters `-32602` (invalid params).
    #[inline]
    pub fn from_parts(
        id: Option<&RequestId>,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Self, ErrorData> {
        let map = Value::Object(envelope(id, method, params)?);
        let decoded = match method {
            PingRequest::METHOD => serde_json::from_value(map).map(Self::Ping),
            InitializeRequest::METHOD => serde_json::from_value(map).map(Self::Initialize),
            CompleteRequest::METHOD => serde_json::from_value(map).map(Self::Complete),
            SetLevelRequest::METHOD => serde_json::from_value(map).map(Self::SetLevel),
            GetPromptRequest::METHOD => serde_json::from_value(map).map(Self::GetPrompt),
            ListPromptsRequest::METHOD => serde_json::from_value(map).map(Self::ListPrompts),
            ListResourcesRequest::METHOD => serde_json::from_value(map).map(Self::ListResources),
            ListResourceTemplatesRequest::METHOD => {
                serde_json::from_value(map).map(Self::ListResourceTemplates)
            }
            ReadResourceRequest::METHOD => serde_json::from_value(map).map(Self::ReadResource),
            SubscribeRequest::METHOD => serde_json::from_value(map).map(Self::Subscribe),
            UnsubscribeRequest::METHOD => serde_json::from_value(map).map(Self::Unsubscribe),
            CallToolRequest::METHOD => serde_json::from_value(map).map(Self::CallTool),
            ListToolsRequest::METHOD => serde_json::from_value(map).map(Self::ListTools),
            GetTaskRequest::METHOD => serde_json::from_value(map).map(Self::GetTask),
            GetTaskPayloadRequest::METHOD => serde_json::from_value(map).map(Self::GetTaskPayload),
            ListTasksRequest::METHOD => serde_json::from_value(map).map(Self::ListTasks),
            CancelTaskRequest::METHOD => serde_json::from_value(map).map(Self::CancelTask),
            DiscoverRequest::METHOD => serde_json::from_value(map).map(Self::Discover),
            SubscriptionsListenRequest::METHOD => {
                serde_json::from_value(map).map(Self::SubscriptionsListen)
            }
            _ => return Err(ErrorData::method_not_found(method)),
        };
        decoded.map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))
    }

    /// Decodes a request off the generic envelope.
    #[inline]
    pub fn from_json_rpc(request: &JsonRpcRequest) -> Result<Self, ErrorData> {
        Self::from_parts(
            Some(&request.id),
            &request.method,
            request.params.as_deref(),
        )
    }

    /// The generic envelope; `None` when the request has no id.
    #[inline]
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

impl From<PingRequest> for ClientRequest {
    fn from(r: PingRequest) -> Self {
        Self::Ping(r)
    }
}

impl From<InitializeRequest> for ClientRequest {
    fn from(r: InitializeRequest) -> Self {
        Self::Initialize(r)
    }
}

impl From<CompleteRequest> for ClientRequest {
    fn from(r: CompleteRequest) -> Self {
        Self::Complete(r)
    }
}

impl From<SetLevelRequest> for ClientRequest {
    fn from(r: SetLevelRequest) -> Self {
        Self::SetLevel(r)
    }
}

impl From<GetPromptRequest> for ClientRequest {
    fn from(r: GetPromptRequest) -> Self {
        Self::GetPrompt(r)
    }
}

impl From<ListPromptsRequest> for ClientRequest {
    fn from(r: ListPromptsRequest) -> Self {
        Self::ListPrompts(r)
    }
}

impl From<ListResourcesRequest> for ClientRequest {
    fn from(r: ListResourcesRequest) -> Self {
        Self::ListResources(r)
    }
}

impl From<ListResourceTemplatesRequest> for ClientRequest {
    fn from(r: ListResourceTemplatesRequest) -> Self {
        Self::ListResourceTemplates(r)
    }
}

impl From<ReadResourceRequest> for ClientRequest {
    fn from(r: ReadResourceRequest) -> Self {
        Self::ReadResource(r)
    }
}

impl From<SubscribeRequest> for ClientRequest {
    fn from(r: SubscribeRequest) -> Self {
        Self::Subscribe(r)
    }
}

impl From<UnsubscribeRequest> for ClientRequest {
    fn from(r: UnsubscribeRequest) -> Self {
        Self::Unsubscribe(r)
    }
}

impl From<CallToolRequest> for ClientRequest {
    fn from(r: CallToolRequest) -> Self {
        Self::CallTool(r)
    }
}

impl From<ListToolsRequest> for ClientRequest {
    fn from(r: ListToolsRequest) -> Self {
        Self::ListTools(r)
    }
}

impl From<GetTaskRequest> for ClientRequest {
    fn from(r: GetTaskRequest) -> Self {
        Self::GetTask(r)
    }
}

impl From<GetTaskPayloadRequest> for ClientRequest {
    fn from(r: GetTaskPayloadRequest) -> Self {
        Self::GetTaskPayload(r)
    }
}

impl From<ListTasksRequest> for ClientRequest {
    fn from(r: ListTasksRequest) -> Self {
        Self::ListTasks(r)
    }
}

impl From<CancelTaskRequest> for ClientRequest {
    fn from(r: CancelTaskRequest) -> Self {
        Self::CancelTask(r)
    }
}

impl From<DiscoverRequest> for ClientRequest {
    fn from(r: DiscoverRequest) -> Self {
        Self::Discover(r)
    }
}

impl From<SubscriptionsListenRequest> for ClientRequest {
    fn from(r: SubscriptionsListenRequest) -> Self {
        Self::SubscriptionsListen(r)
    }
}

impl Serialize for ClientRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Ping(r) => r.serialize(serializer),
            Self::Initialize(r) => r.serialize(serializer),
            Self::Complete(r) => r.serialize(serializer),
            Self::SetLevel(r) => r.serialize(serializer),
            Self::GetPrompt(r) => r.serialize(serializer),
            Self::ListPrompts(r) => r.serialize(serializer),
            Self::ListResources(r) => r.serialize(serializer),
            Self::ListResourceTemplates(r) => r.serialize(serializer),
            Self::ReadResource(r) => r.serialize(serializer),
            Self::Subscribe(r) => r.serialize(serializer),
            Self::Unsubscribe(r) => r.serialize(serializer),
            Self::CallTool(r) => r.serialize(serializer),
            Self::ListTools(r) => r.serialize(serializer),
            Self::GetTask(r) => r.serialize(serializer),
            Self::GetTaskPayload(r) => r.serialize(serializer),
            Self::ListTasks(r) => r.serialize(serializer),
            Self::CancelTask(r) => r.serialize(serializer),
            Self::Discover(r) => r.serialize(serializer),
            Self::SubscriptionsListen(r) => r.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ClientRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        let method = match map.get("method") {
            Some(Value::String(m)) => m.clone(),
            _ => return Err(de::Error::missing_field("method")),
        };
        match method.as_str() {
            PingRequest::METHOD => from_object(map).map(Self::Ping),
            InitializeRequest::METHOD => from_object(map).map(Self::Initialize),
            CompleteRequest::METHOD => from_object(map).map(Self::Complete),
            SetLevelRequest::METHOD => from_object(map).map(Self::SetLevel),
            GetPromptRequest::METHOD => from_object(map).map(Self::GetPrompt),
            ListPromptsRequest::METHOD => from_object(map).map(Self::ListPrompts),
            ListResourcesRequest::METHOD => from_object(map).map(Self::ListResources),
            ListResourceTemplatesRequest::METHOD => {
                from_object(map).map(Self::ListResourceTemplates)
            }
            ReadResourceRequest::METHOD => from_object(map).map(Self::ReadResource),
            SubscribeRequest::METHOD => from_object(map).map(Self::Subscribe),
            UnsubscribeRequest::METHOD => from_object(map).map(Self::Unsubscribe),
            CallToolRequest::METHOD => from_object(map).map(Self::CallTool),
            ListToolsRequest::METHOD => from_object(map).map(Self::ListTools),
            GetTaskRequest::METHOD => from_object(map).map(Self::GetTask),
            GetTaskPayloadRequest::METHOD => from_object(map).map(Self::GetTaskPayload),
            ListTasksRequest::METHOD => from_object(map).map(Self::ListTasks),
            CancelTaskRequest::METHOD => from_object(map).map(Self::CancelTask),
            DiscoverRequest::METHOD => from_object(map).map(Self::Discover),
            SubscriptionsListenRequest::METHOD => from_object(map).map(Self::SubscriptionsListen),
            _ => Err(de::Error::unknown_variant(&method, Self::METHODS)),
        }
    }
}

/// Every request a server sends, tagged by `method`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerRequest {
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

impl ServerRequest {
    /// Every method of this union.
    pub const METHODS: &'static [&'static str] = &[
        PingRequest::METHOD,
        CreateMessageRequest::METHOD,
        ListRootsRequest::METHOD,
        ElicitRequest::METHOD,
        GetTaskRequest::METHOD,
        GetTaskPayloadRequest::METHOD,
        ListTasksRequest::METHOD,
        CancelTaskRequest::METHOD,
    ];

    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Ping(_) => PingRequest::METHOD,
            Self::CreateMessage(_) => CreateMessageRequest::METHOD,
            Self::ListRoots(_) => ListRootsRequest::METHOD,
            Self::Elicit(_) => ElicitRequest::METHOD,
            Self::GetTask(_) => GetTaskRequest::METHOD,
            Self::GetTaskPayload(_) => GetTaskPayloadRequest::METHOD,
            Self::ListTasks(_) => ListTasksRequest::METHOD,
            Self::CancelTask(_) => CancelTaskRequest::METHOD,
        }
    }

    /// The request id.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Ping(r) => r.id.as_ref(),
            Self::CreateMessage(r) => r.id.as_ref(),
            Self::ListRoots(r) => r.id.as_ref(),
            Self::Elicit(r) => r.id.as_ref(),
            Self::GetTask(r) => r.id.as_ref(),
            Self::GetTaskPayload(r) => r.id.as_ref(),
            Self::ListTasks(r) => r.id.as_ref(),
            Self::CancelTask(r) => r.id.as_ref(),
        }
    }

    /// Decodes a request from its envelope parts: an unknown method gives
    /// `-32601` (method not found), bad parameters `-32602` (invalid params).
    #[inline]
    pub fn from_parts(
        id: Option<&RequestId>,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Self, ErrorData> {
        let map = Value::Object(envelope(id, method, params)?);
        let decoded = match method {
            PingRequest::METHOD => serde_json::from_value(map).map(Self::Ping),
            CreateMessageRequest::METHOD => serde_json::from_value(map).map(Self::CreateMessage),
            ListRootsRequest::METHOD => serde_json::from_value(map).map(Self::ListRoots),
            ElicitRequest::METHOD => serde_json::from_value(map).map(Self::Elicit),
            GetTaskRequest::METHOD => serde_json::from_value(map).map(Self::GetTask),
            GetTaskPayloadRequest::METHOD => serde_json::from_value(map).map(Self::GetTaskPayload),
            ListTasksRequest::METHOD => serde_json::from_value(map).map(Self::ListTasks),
            CancelTaskRequest::METHOD => serde_json::from_value(map).map(Self::CancelTask),
            _ => return Err(ErrorData::method_not_found(method)),
        };
        decoded.map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))
    }

    /// Decodes a request off the generic envelope.
    #[inline]
    pub fn from_json_rpc(request: &JsonRpcRequest) -> Result<Self, ErrorData> {
        Self::from_parts(
            Some(&request.id),
            &request.method,
            request.params.as_deref(),
        )
    }

    /// The generic envelope; `None` when the request has no id.
    #[inline]
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

impl From<PingRequest> for ServerRequest {
    fn from(r: PingRequest) -> Self {
        Self::Ping(r)
    }
}

impl From<CreateMessageRequest> for ServerRequest {
    fn from(r: CreateMessageRequest) -> Self {
        Self::CreateMessage(r)
    }
}

impl From<ListRootsRequest> for ServerRequest {
    fn from(r: ListRootsRequest) -> Self {
        Self::ListRoots(r)
    }
}

impl From<ElicitRequest> for ServerRequest {
    fn from(r: ElicitRequest) -> Self {
        Self::Elicit(r)
    }
}

impl From<GetTaskRequest> for ServerRequest {
    fn from(r: GetTaskRequest) -> Self {
        Self::GetTask(r)
    }
}

impl From<GetTaskPayloadRequest> for ServerRequest {
    fn from(r: GetTaskPayloadRequest) -> Self {
        Self::GetTaskPayload(r)
    }
}

impl From<ListTasksRequest> for ServerRequest {
    fn from(r: ListTasksRequest) -> Self {
        Self::ListTasks(r)
    }
}

impl From<CancelTaskRequest> for ServerRequest {
    fn from(r: CancelTaskRequest) -> Self {
        Self::CancelTask(r)
    }
}

impl Serialize for ServerRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Ping(r) => r.serialize(serializer),
            Self::CreateMessage(r) => r.serialize(serializer),
            Self::ListRoots(r) => r.serialize(serializer),
            Self::Elicit(r) => r.serialize(serializer),
            Self::GetTask(r) => r.serialize(serializer),
            Self::GetTaskPayload(r) => r.serialize(serializer),
            Self::ListTasks(r) => r.serialize(serializer),
            Self::CancelTask(r) => r.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ServerRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        let method = match map.get("method") {
            Some(Value::String(m)) => m.clone(),
            _ => return Err(de::Error::missing_field("method")),
        };
        match method.as_str() {
            PingRequest::METHOD => from_object(map).map(Self::Ping),
            CreateMessageRequest::METHOD => from_object(map).map(Self::CreateMessage),
            ListRootsRequest::METHOD => from_object(map).map(Self::ListRoots),
            ElicitRequest::METHOD => from_object(map).map(Self::Elicit),
            GetTaskRequest::METHOD => from_object(map).map(Self::GetTask),
            GetTaskPayloadRequest::METHOD => from_object(map).map(Self::GetTaskPayload),
            ListTasksRequest::METHOD => from_object(map).map(Self::ListTasks),
            CancelTaskRequest::METHOD => from_object(map).map(Self::CancelTask),
            _ => Err(de::Error::unknown_variant(&method, Self::METHODS)),
        }
    }
}
