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
use crate::common::Meta;
use crate::jsonrpc::RequestId;
use crate::meta::SubscriptionsListenResultMetaObject;
use crate::method::{NotificationMethod, RequestMethod};
use crate::tag::{JsonRpcTag, NotificationTag, RequestTag};

/// The notifications a client opts in to (the schema's `SubscriptionFilter`); the
/// server sends no kind the client did not ask for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs (replaces
    /// `resources/subscribe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// The tasks extension: `notifications/tasks` for these tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

impl SubscriptionFilter {
    /// Opts in to nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `tools_list_changed`.
    #[must_use]
    pub fn with_tools_list_changed(mut self, on: bool) -> Self {
        self.tools_list_changed = Some(on);
        self
    }

    /// Sets `prompts_list_changed`.
    #[must_use]
    pub fn with_prompts_list_changed(mut self, on: bool) -> Self {
        self.prompts_list_changed = Some(on);
        self
    }

    /// Sets `resources_list_changed`.
    #[must_use]
    pub fn with_resources_list_changed(mut self, on: bool) -> Self {
        self.resources_list_changed = Some(on);
        self
    }

    /// Sets `resource_subscriptions`.
    #[must_use]
    pub fn with_resource_subscriptions(mut self, uris: Vec<String>) -> Self {
        self.resource_subscriptions = Some(uris);
        self
    }

    /// Sets `task_ids` (the tasks extension).
    #[must_use]
    pub fn with_task_ids(mut self, ids: Vec<String>) -> Self {
        self.task_ids = Some(ids);
        self
    }
}

/// Parameters of `subscriptions/listen`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionsListenRequestParams {
    /// Metadata: the request's revision and client capabilities. Required by the
    /// schema; `None` is still read, and not written.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// What to receive.
    pub notifications: SubscriptionFilter,
}

impl SubscriptionsListenRequestParams {
    /// Parameters opting in to `notifications`.
    pub fn new(notifications: SubscriptionFilter) -> Self {
        Self {
            meta: None,
            notifications,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
    }
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

/// The answer that ends a `subscriptions/listen` stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionsListenResult {
    /// Metadata, naming the subscription.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionsListenResultMetaObject,
    /// The kind of result (`complete`).
    pub result_type: ResultType,
}

impl SubscriptionsListenResult {
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

/// Parameters of `notifications/subscriptions/acknowledged`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// Metadata (`io.modelcontextprotocol/subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The notifications the server will send on this stream.
    pub notifications: SubscriptionFilter,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// Acknowledges `notifications`.
    pub fn new(notifications: SubscriptionFilter) -> Self {
        Self {
            meta: None,
            notifications,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
    }
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
