//! Wire types of the Model Context Protocol.
//!
//! This crate holds the serde types of every message of MCP revisions 2025-11-25 and
//! 2026-07-28 and what differs in 2025-06-18, 2025-03-26 and 2024-11-05, the JSON-RPC
//! envelope, the
//! error codes the specification names, and a marker type per method that ties the
//! method name to its parameter and result types. It has no async code and does no I/O:
//! it depends on serde and serde_json only.
//!
//! ```
//! use modelctx_types::{ErrorCode, JsonRpcMessage, ProtocolVersion};
//!
//! let msg: JsonRpcMessage = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.parse().unwrap();
//! assert_eq!(msg.method(), Some("ping"));
//!
//! let err = r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.parse::<JsonRpcMessage>().unwrap_err();
//! assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
//!
//! assert!(ProtocolVersion::V2025_06_18.is_handshake());
//! ```
//!
//! # Conventions
//! - Wire structs are `#[non_exhaustive]`: build them with their constructors
//!   (`new(required...)`) and `with_*` methods for optional members.
//! - `_meta` and open objects keep unknown keys; enums the spec may extend keep
//!   unknown values (an `Unknown` variant); content blocks of an unknown `type` are kept
//!   whole.
//! - Every schema definition has a type of the same name, except: `JSONRPC` is spelled
//!   `JsonRpc` and `URL` `Url`; `Error` is [`ErrorData`]; the generic `Request`,
//!   `Notification` and `Result` are [`GenericRequest`], [`GenericNotification`] and
//!   [`GenericResult`]; `EmptyResult`, `ReadResourceRequestParams`,
//!   `SubscribeRequestParams`, `UnsubscribeRequestParams`, `JSONRPCError` and
//!   `ResourceReference` are aliases.
//! - Each `*Request` type is the whole JSON-RPC request (`jsonrpc`, `id`, `method`,
//!   `params`), checks its `method` when read, and implements [`RequestMethod`]; each
//!   `*Notification` likewise implements [`NotificationMethod`]. Most are aliases of
//!   the generic [`Request<M>`](Request) and [`Notification<M>`](Notification) over a
//!   marker per method ([`methods`]), with the method's own constructors. The unions
//!   [`ClientRequest`], [`ServerRequest`], [`ClientNotification`],
//!   [`ServerNotification`], [`ClientResult`] and [`ServerResult`] decode any message
//!   of one side.
//!
//! ```
//! use modelctx_types::{CallToolRequest, CallToolRequestParams, CallToolResult, RequestMethod};
//!
//! let req = CallToolRequest::new(1, CallToolRequestParams::new("echo"));
//! assert_eq!(
//!     serde_json::to_string(&req).unwrap(),
//!     r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#
//! );
//! let result: <CallToolRequest as RequestMethod>::Result = CallToolResult::text("hi");
//! assert!(!result.is_error());
//! ```
//!
//! # Older revisions
//! One type carries every revision's form of a definition wherever it can: members
//! added later are optional, and what was read is written back as it came (the bare
//! `{method, params}` requests of earlier schemas included). Definitions that only
//! exist in older revisions are [`Annotated`], [`JsonRpcBatchRequest`],
//! [`JsonRpcBatchResponse`], [`JsonRpcError`] and [`ResourceReference`]; the only shape
//! no single type can carry is the 2025-03-26 `JSONRPCMessage` with batches,
//! [`JsonRpcMessageV2025_03_26`]. The `legacy` module's source lists every difference.
//!
//! # Revision 2026-07-28
//! The types carry 2026-07-28 (stateless MCP), but the runtime does not negotiate it
//! yet: [`ProtocolVersion::V2026_07_28`] is in [`ProtocolVersion::ALL`], not in
//! [`ProtocolVersion::HANDSHAKE`]. Definitions that keep their name are the same types,
//! with the new members as `Option`s written only when set:
//! - every result: `result_type` ([`ResultType`]); the list results and
//!   [`ReadResourceResult`]: `ttl_ms` and `cache_scope` ([`CacheScope`]);
//! - `tools/call`, `prompts/get`, `resources/read` params: `input_responses` and
//!   `request_state` (multi round-trip requests, [`InputRequiredResult`]);
//! - `_meta` stays the open [`Meta`]; its `io.modelcontextprotocol/*` keys are constants
//!   and accessors on [`Meta`], and [`RequestMetaObject`], [`ResultMetaObject`],
//!   [`NotificationMetaObject`] type it in full;
//! - `structuredContent` may be any JSON value (`structured_content` is a `Value` in
//!   [`CallToolResult`] and [`ToolResultContent`]); `outputSchema` may be any schema object;
//! - capabilities: `extensions`; URL elicitation: `elicitation_id` is optional;
//! - `sampling/createMessage`, `elicitation/create` and `roots/list` travel without `id`
//!   and `jsonrpc` inside [`InputRequests`] (the request types' bare form).
//!
//! New definitions have new types: [`DiscoverRequest`], the `subscriptions/listen`
//! types ([`SubscriptionsListenRequest`], [`SubscriptionFilter`], ...), the MRTR types
//! ([`InputRequest`], [`InputResponse`], [`InputRequiredOr`]), the typed
//! `*ResultResponse` aliases of [`ResultResponse`], and the named errors
//! ([`UnsupportedProtocolVersionError`], [`ParseError`], ...). The unions gained
//! `server/discover`, `subscriptions/listen`, `notifications/subscriptions/acknowledged`
//! and the `InputRequired`, `Discover` and `SubscriptionsListen` results.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod base;
mod cache;
mod caller;
mod capabilities;
mod common;
mod completion;
mod content;
mod discover;
mod elicitation;
mod elicitation_schema;
mod envelope;
mod error;
pub mod ext_tasks;
mod jsonrpc;
mod legacy;
mod lifecycle;
mod logging;
#[doc(hidden)]
pub mod members;
mod messages;
mod meta;
mod method;
pub mod methods;
pub mod mirror;
mod mrtr;
mod named_errors;
mod notifications;
mod open_enum;
mod prompts;
mod resources;
mod responses;
mod roots;
mod sampling;
mod setters;
#[doc(hidden)]
pub mod shallow;
mod subscriptions;
mod tag;
mod tasks;
mod tool_definition;
mod tools;
mod unknown_keys;
mod version;

pub use base::{
    EmptyResult, GenericNotification, GenericRequest, GenericResult, JsonArray, JsonObject,
    JsonValue, NotificationParams, PaginatedRequest, PaginatedRequestParams, PaginatedResult,
    RequestParams, ResultType, TaskAugmentedRequestParams, TaskMetadata,
};
pub use cache::{CacheScope, CacheableResult};
pub use caller::{Offering, Permissions, Principal};
pub use capabilities::{
    ClientCapabilities, ClientTaskRequestsCapability, ClientTasksCapability, ElicitationCapability,
    ElicitationTaskCapability, ExperimentalCapabilities, PromptsCapability, ResourcesCapability,
    RootsCapability, SamplingCapability, SamplingTaskCapability, ServerCapabilities,
    ServerTaskRequestsCapability, ServerTasksCapability, ToolsCapability, ToolsTaskCapability,
};
pub use common::{Cursor, Meta, ProgressToken};
pub use completion::{
    CompleteArgument, CompleteContext, CompleteRequest, CompleteRequestParams, CompleteResult,
    Completion, CompletionReference, PromptReference, ResourceTemplateReference,
};
pub use content::{
    Annotations, AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, Role, SamplingMessageContentBlock, TextContent,
    TextOrBlobResourceContents, TextResourceContents, ToolResultContent, ToolUseContent,
};
pub use discover::{DiscoverRequest, DiscoverResult};
pub use elicitation::{
    ElicitAction, ElicitRequest, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestUrlParams, ElicitResult, ElicitationCompleteNotification,
    ElicitationCompleteNotificationParams, UrlElicitationRequiredData, UrlElicitationRequiredError,
};
pub use elicitation_schema::{
    BooleanSchema, ElicitValue, EnumSchema, FormMismatch, LegacyTitledEnumSchema,
    MultiSelectEnumSchema, NumberSchema, NumberType, PrimitiveSchemaDefinition, RequestedSchema,
    SchemaProperties, SingleSelectEnumSchema, StringFormat, StringSchema, TitledEnumItems,
    TitledEnumOption, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledEnumItems,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
pub use envelope::{Notification, Request};
pub use error::{ErrorCode, ErrorData};
pub use jsonrpc::{
    InvalidMessage, JSONRPC_VERSION, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, JsonRpcResultResponse, RequestId, to_raw,
};
pub use legacy::{
    Annotated, JsonRpcBatchRequest, JsonRpcBatchResponse, JsonRpcError, JsonRpcMessageV2025_03_26,
    ResourceReference,
};
pub use lifecycle::{
    BaseMetadata, Icon, IconTheme, Icons, Implementation, InitializeRequest,
    InitializeRequestParams, InitializeResult, InitializedNotification, PingRequest,
};
pub use logging::{
    LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParams, SetLevelRequest,
    SetLevelRequestParams,
};
pub use messages::{
    ClientNotification, ClientRequest, ClientResult, ServerNotification, ServerRequest,
    ServerResult,
};
pub use meta::{
    MetaObject, NotificationMetaObject, RequestMetaObject, ResultMetaObject,
    SubscriptionsListenResultMetaObject,
};
#[doc(hidden)]
pub use method::MetaSlot;
pub use method::{NotificationMethod, RequestMethod};
pub use mrtr::{
    InputRequest, InputRequests, InputRequiredOr, InputRequiredResult, InputResponse,
    InputResponseRequestParams, InputResponses,
};
pub use named_errors::{
    HeaderMismatchError, InternalError, InvalidParamsError, InvalidRequestError,
    MethodNotFoundError, MissingRequiredClientCapabilityData, MissingRequiredClientCapabilityError,
    ParseError, UnsupportedProtocolVersionData, UnsupportedProtocolVersionError,
};
pub use notifications::{
    CancelledNotification, CancelledNotificationParams, ProgressNotification,
    ProgressNotificationParams,
};
pub use prompts::{
    GetPromptRequest, GetPromptRequestParams, GetPromptResult, ListPromptsRequest,
    ListPromptsResult, Prompt, PromptArgument, PromptListChangedNotification, PromptMessage,
};
pub use resources::{
    ListResourceTemplatesRequest, ListResourceTemplatesResult, ListResourcesRequest,
    ListResourcesResult, ReadResourceRequest, ReadResourceRequestParams, ReadResourceResult,
    Resource, ResourceListChangedNotification, ResourceRequestParams, ResourceTemplate,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParams, SubscribeRequest,
    SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};
pub use responses::{
    CallToolResultResponse, CompleteResultResponse, DiscoverResultResponse,
    GetPromptResultResponse, ListPromptsResultResponse, ListResourceTemplatesResultResponse,
    ListResourcesResultResponse, ListToolsResultResponse, ReadResourceResultResponse,
    ResultResponse, SubscriptionsListenResultResponse,
};
pub use roots::{ListRootsRequest, ListRootsResult, Root, RootsListChangedNotification};
pub use sampling::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, IncludeContext,
    ModelHint, ModelPreferences, SamplingContent, SamplingMessage, StopReason, ToolChoice,
    ToolChoiceMode,
};
pub use subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequest,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
pub use tasks::{
    CancelTaskRequest, CancelTaskRequestParams, CancelTaskResult, CreateTaskResult,
    GetTaskPayloadRequest, GetTaskPayloadRequestParams, GetTaskPayloadResult, GetTaskRequest,
    GetTaskRequestParams, GetTaskResult, ListTasksRequest, ListTasksResult, RelatedTaskMetadata,
    Task, TaskStatus, TaskStatusNotification, TaskStatusNotificationParams,
};
pub use tool_definition::{TaskSupport, Tool, ToolAnnotations, ToolExecution};
pub use tools::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ListToolsRequest, ListToolsResult,
    ToolListChangedNotification,
};
pub use version::ProtocolVersion;

/// Re-exported so users can name the raw payload type.
pub use serde_json::value::RawValue;
