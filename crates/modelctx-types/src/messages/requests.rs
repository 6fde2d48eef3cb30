//! The request unions: [`ClientRequest`] and [`ServerRequest`].

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::base::JsonObject;
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

use super::union::method_union;
use super::{envelope, params_of};

method_union! {
    request
    /// Every request a client sends, tagged by `method`.
    // `initialize` and its result are the large variants; they travel once per
    // session, so they are not boxed (matching stays `Initialize(request)`).
    #[allow(clippy::large_enum_variant)]
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
}

method_union! {
    request
    /// Every request a server sends, tagged by `method`.
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
}
