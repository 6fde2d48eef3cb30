//! `subscriptions/listen` (2026-07-28): one long-lived request whose response stream
//! carries the change notifications the client opted in to. It replaces the HTTP GET
//! stream and `resources/subscribe`/`resources/unsubscribe`.
//!
//! The server first sends `notifications/subscriptions/acknowledged` with the filter
//! it accepted, then tags every notification of the stream with
//! `_meta["io.modelcontextprotocol/subscriptionId"]` (the listen request's id); when the
//! stream ends it answers the request with a [`SubscriptionsListenResult`].

use serde::{Deserialize, Serialize};

use crate::base::ResultType;
use crate::jsonrpc::RequestId;
use crate::meta::SubscriptionsListenResultMetaObject;
use crate::method::{NotificationMethod, RequestMethod};
use crate::tag::{JsonRpcTag, NotificationTag, RequestTag};

crate::setters::wire_struct! {
    /// The notifications a client opts in to (the schema's `SubscriptionFilter`); the
    /// server sends no kind the client did not ask for.
    #[derive(Default)]
    pub struct SubscriptionFilter {
        /// `notifications/tools/list_changed`.
        tools_list_changed?: bool => exact with_tools_list_changed,
        /// `notifications/prompts/list_changed`.
        prompts_list_changed?: bool => exact with_prompts_list_changed,
        /// `notifications/resources/list_changed`.
        resources_list_changed?: bool => exact with_resources_list_changed,
        /// `notifications/resources/updated` for these URIs (replaces
        /// `resources/subscribe`).
        resource_subscriptions?: Vec<String> => exact with_resource_subscriptions,
        /// The tasks extension: `notifications/tasks` for these tasks.
        task_ids?: Vec<String> => exact with_task_ids "the tasks extension",
    }
    /// Opts in to nothing.
    pub fn new() -> Self {
        Self::default()
    }
}

crate::setters::wire_struct! {
    /// Parameters of `subscriptions/listen`.
    pub struct SubscriptionsListenRequestParams {
        /// Metadata: the request's revision and client capabilities. Required by the
        /// schema; `None` is still read, and not written.
        meta => with_meta,
        /// What to receive.
        pub notifications: SubscriptionFilter,
    }
    /// Parameters opting in to `notifications`.
    new(notifications: SubscriptionFilter);
}

/// Opens the stream of change notifications (2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionsListenRequest {
    jsonrpc: JsonRpcTag,
    /// The request id; it is also the subscription's id.
    pub id: RequestId,
    method: RequestTag<SubscriptionsListenRequest>,
    /// The parameters.
    pub params: SubscriptionsListenRequestParams,
}

impl SubscriptionsListenRequest {
    /// The method name, `"subscriptions/listen"`.
    pub const METHOD: &'static str = <Self as RequestMethod>::METHOD;

    /// A request with an id and parameters.
    pub fn new(id: impl Into<RequestId>, params: SubscriptionsListenRequestParams) -> Self {
        Self {
            jsonrpc: JsonRpcTag::new(),
            id: id.into(),
            method: RequestTag::new(),
            params,
        }
    }
}

impl RequestMethod for SubscriptionsListenRequest {
    const METHOD: &'static str = "subscriptions/listen";
    type Params = SubscriptionsListenRequestParams;
    type Result = SubscriptionsListenResult;
}

crate::setters::wire_struct! {
    /// The answer that ends a `subscriptions/listen` stream.
    pub struct SubscriptionsListenResult {
        /// Metadata, naming the subscription.
        #[serde(rename = "_meta")]
        pub meta: SubscriptionsListenResultMetaObject,
        /// The kind of result (`complete`).
        pub result_type: ResultType,
    }
    /// The end of subscription `subscription_id`.
    pub fn new(subscription_id: impl Into<RequestId>) -> Self {
        Self {
            meta: SubscriptionsListenResultMetaObject::new(subscription_id),
            result_type: ResultType::Complete,
        }
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: SubscriptionsListenResultMetaObject) -> Self {
        self.meta = meta;
        self
    }
}

crate::setters::wire_struct! {
    /// Parameters of `notifications/subscriptions/acknowledged`.
    pub struct SubscriptionsAcknowledgedNotificationParams {
        /// Metadata (`io.modelcontextprotocol/subscriptionId`).
        meta => with_meta,
        /// The notifications the server will send on this stream.
        pub notifications: SubscriptionFilter,
    }
    /// Acknowledges `notifications`.
    new(notifications: SubscriptionFilter);
}

/// The first message of a `subscriptions/listen` stream: what the server accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionsAcknowledgedNotification {
    jsonrpc: JsonRpcTag,
    method: NotificationTag<SubscriptionsAcknowledgedNotification>,
    /// The parameters.
    pub params: SubscriptionsAcknowledgedNotificationParams,
}

impl SubscriptionsAcknowledgedNotification {
    /// The method name, `"notifications/subscriptions/acknowledged"`.
    pub const METHOD: &'static str = <Self as NotificationMethod>::METHOD;

    /// A notification with these parameters.
    pub fn new(params: SubscriptionsAcknowledgedNotificationParams) -> Self {
        Self {
            jsonrpc: JsonRpcTag::new(),
            method: NotificationTag::new(),
            params,
        }
    }
}

impl NotificationMethod for SubscriptionsAcknowledgedNotification {
    const METHOD: &'static str = "notifications/subscriptions/acknowledged";
    type Params = SubscriptionsAcknowledgedNotificationParams;
}
