//! The notification unions: [`ClientNotification`] and [`ServerNotification`].

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::base::JsonObject;
use crate::elicitation::ElicitationCompleteNotification;
use crate::error::ErrorData;
use crate::jsonrpc::JsonRpcNotification;
use crate::lifecycle::InitializedNotification;
use crate::logging::LoggingMessageNotification;
use crate::notifications::{CancelledNotification, ProgressNotification};
use crate::prompts::PromptListChangedNotification;
use crate::resources::{ResourceListChangedNotification, ResourceUpdatedNotification};
use crate::roots::RootsListChangedNotification;
use crate::subscriptions::SubscriptionsAcknowledgedNotification;
use crate::tasks::TaskStatusNotification;
use crate::tools::ToolListChangedNotification;

use super::union::method_union;
use super::{envelope, params_of};

method_union! {
    notification
    /// Every notification a client sends, tagged by `method`.
    pub enum ClientNotification {
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

method_union! {
    notification
    /// Every notification a server sends, tagged by `method`.
    pub enum ServerNotification {
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
        /// `notifications/subscriptions/acknowledged` (2026-07-28).
        SubscriptionsAcknowledged(SubscriptionsAcknowledgedNotification),
    }
}
