//! Typed result responses (2026-07-28): the whole JSON-RPC response of one method,
//! `{"jsonrpc": "2.0", "id", "result"}`, with `result` typed.
//!
//! The schema names one per method (`ListToolsResultResponse`, ...); here they are
//! aliases of one generic [`ResultResponse`]. For `tools/call`, `prompts/get` and
//! `resources/read` the result may be an `InputRequiredResult`, hence
//! [`InputRequiredOr`].

use serde::{Deserialize, Serialize};

use crate::completion::CompleteResult;
use crate::discover::DiscoverResult;
use crate::jsonrpc::RequestId;
use crate::mrtr::InputRequiredOr;
use crate::prompts::{GetPromptResult, ListPromptsResult};
use crate::resources::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use crate::subscriptions::SubscriptionsListenResult;
use crate::tag::JsonRpcTag;
use crate::tools::{CallToolResult, ListToolsResult};

/// A successful JSON-RPC response whose `result` is an `R` (the generic
/// `JsonRpcResultResponse` keeps the result as raw JSON instead).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResultResponse<R> {
    jsonrpc: JsonRpcTag,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result.
    pub result: R,
}

impl<R> ResultResponse<R> {
    /// A response to request `id`.
    pub fn new(id: impl Into<RequestId>, result: R) -> Self {
        Self {
            jsonrpc: JsonRpcTag::new(),
            id: id.into(),
            result,
        }
    }
}

/// The response to `tools/call` (the schema's `CallToolResultResponse`).
pub type CallToolResultResponse = ResultResponse<InputRequiredOr<CallToolResult>>;
/// The response to `prompts/get` (the schema's `GetPromptResultResponse`).
pub type GetPromptResultResponse = ResultResponse<InputRequiredOr<GetPromptResult>>;
/// The response to `resources/read` (the schema's `ReadResourceResultResponse`).
pub type ReadResourceResultResponse = ResultResponse<InputRequiredOr<ReadResourceResult>>;
/// The response to `completion/complete` (the schema's `CompleteResultResponse`).
pub type CompleteResultResponse = ResultResponse<CompleteResult>;
/// The response to `server/discover` (the schema's `DiscoverResultResponse`).
pub type DiscoverResultResponse = ResultResponse<DiscoverResult>;
/// The response to `prompts/list` (the schema's `ListPromptsResultResponse`).
pub type ListPromptsResultResponse = ResultResponse<ListPromptsResult>;
/// The response to `resources/templates/list` (the schema's
/// `ListResourceTemplatesResultResponse`).
pub type ListResourceTemplatesResultResponse = ResultResponse<ListResourceTemplatesResult>;
/// The response to `resources/list` (the schema's `ListResourcesResultResponse`).
pub type ListResourcesResultResponse = ResultResponse<ListResourcesResult>;
/// The response to `tools/list` (the schema's `ListToolsResultResponse`).
pub type ListToolsResultResponse = ResultResponse<ListToolsResult>;
/// The response to `subscriptions/listen` (the schema's
/// `SubscriptionsListenResultResponse`).
pub type SubscriptionsListenResultResponse = ResultResponse<SubscriptionsListenResult>;
