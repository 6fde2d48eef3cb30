//! The notification unions: [`ClientNotification`] and [`ServerNotification`].

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::base::{JsonObject, from_object};
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

use super::{envelope, params_of};

/// Every notification a client sends, tagged by `method`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl ClientNotification {
    /// Every method of this union.
    pub const METHODS: &'static [&'static str] = &[
        CancelledNotification::METHOD,
        ProgressNotification::METHOD,
        InitializedNotification::METHOD,
        RootsListChangedNotification::METHOD,
        TaskStatusNotification::METHOD,
    ];

    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Cancelled(_) => CancelledNotification::METHOD,
            Self::Progress(_) => ProgressNotification::METHOD,
            Self::Initialized(_) => InitializedNotification::METHOD,
            Self::RootsListChanged(_) => RootsListChangedNotification::METHOD,
            Self::TaskStatus(_) => TaskStatusNotification::METHOD,
        }
    }

    /// Decodes a notification from its method and parameters: an unknown method
    /// gives `-32601`, bad parameters `-32602` (a receiver never answers a
    /// notification, but may log the error).
    #[inline]
    pub fn from_parts(method: &str, params: Option<&RawValue>) -> Result<Self, ErrorData> {
        let map = Value::Object(envelope(None, method, params)?);
        let decoded = match method {
            CancelledNotification::METHOD => serde_json::from_value(map).map(Self::Cancelled),
            ProgressNotification::METHOD => serde_json::from_value(map).map(Self::Progress),
            InitializedNotification::METHOD => serde_json::from_value(map).map(Self::Initialized),
            RootsListChangedNotification::METHOD => {
                serde_json::from_value(map).map(Self::RootsListChanged)
            }
            TaskStatusNotification::METHOD => serde_json::from_value(map).map(Self::TaskStatus),
            _ => return Err(ErrorData::method_not_found(method)),
        };
        decoded.map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))
    }

    /// Decodes a notification off the generic envelope.
    #[inline]
    pub fn from_json_rpc(notification: &JsonRpcNotification) -> Result<Self, ErrorData> {
        Self::from_parts(&notification.method, notification.params.as_deref())
    }

    /// The generic envelope.
    #[inline]
    pub fn to_json_rpc(&self) -> Result<JsonRpcNotification, serde_json::Error> {
        let mut map = match serde_json::to_value(self)? {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        let params = params_of(&mut map)?;
        Ok(JsonRpcNotification::new(self.method(), params))
    }
}

impl From<CancelledNotification> for ClientNotification {
    fn from(n: CancelledNotification) -> Self {
        Self::Cancelled(n)
    }
}

impl From<ProgressNotification> for ClientNotification {
    fn from(n: ProgressNotification) -> Self {
        Self::Progress(n)
    }
}

impl From<InitializedNotification> for ClientNotification {
    fn from(n: InitializedNotification) -> Self {
        Self::Initialized(n)
    }
}

impl From<RootsListChangedNotification> for ClientNotification {
    fn from(n: RootsListChangedNotification) -> Self {
        Self::RootsListChanged(n)
    }
}

impl From<TaskStatusNotification> for ClientNotification {
    fn from(n: TaskStatusNotification) -> Self {
        Self::TaskStatus(n)
    }
}

impl Serialize for ClientNotification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Cancelled(n) => n.serialize(serializer),
            Self::Progress(n) => n.serialize(serializer),
            Self::Initialized(n) => n.serialize(serializer),
            Self::RootsListChanged(n) => n.serialize(serializer),
            Self::TaskStatus(n) => n.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ClientNotification {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        let method = match map.get("method") {
            Some(Value::String(m)) => m.clone(),
            _ => return Err(de::Error::missing_field("method")),
        };
        match method.as_str() {
            CancelledNotification::METHOD => from_object(map).map(Self::Cancelled),
            ProgressNotification::METHOD => from_object(map).map(Self::Progress),
            InitializedNotification::METHOD => from_object(map).map(Self::Initialized),
            RootsListChangedNotification::METHOD => from_object(map).map(Self::RootsListChanged),
            TaskStatusNotification::METHOD => from_object(map).map(Self::TaskStatus),
            _ => Err(de::Error::unknown_variant(&method, Self::METHODS)),
        }
    }
}

/// Every notification a server sends, tagged by `method`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl ServerNotification {
    /// Every method of this union.
    pub const METHODS: &'static [&'static str] = &[
        CancelledNotification::METHOD,
        ProgressNotification::METHOD,
        LoggingMessageNotification::METHOD,
        ResourceUpdatedNotification::METHOD,
        ResourceListChangedNotification::METHOD,
        ToolListChangedNotification::METHOD,
        PromptListChangedNotification::METHOD,
        ElicitationCompleteNotification::METHOD,
        TaskStatusNotification::METHOD,
        SubscriptionsAcknowledgedNotification::METHOD,
    ];

    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Cancelled(_) => CancelledNotification::METHOD,
            Self::Progress(_) => ProgressNotification::METHOD,
            Self::LoggingMessage(_) => LoggingMessageNotification::METHOD,
            Self::ResourceUpdated(_) => ResourceUpdatedNotification::METHOD,
            Self::ResourceListChanged(_) => ResourceListChangedNotification::METHOD,
            Self::ToolListChanged(_) => ToolListChangedNotification::METHOD,
            Self::PromptListChanged(_) => PromptListChangedNotification::METHOD,
            Self::ElicitationComplete(_) => ElicitationCompleteNotification::METHOD,
            Self::TaskStatus(_) => TaskStatusNotification::METHOD,
            Self::SubscriptionsAcknowledged(_) => SubscriptionsAcknowledgedNotification::METHOD,
        }
    }

    /// Decodes a notification from its method and parameters: an unknown method
    /// gives `-32601`, bad parameters `-32602` (a receiver never answers a
    /// notification, but may log the error).
    #[inline]
    pub fn from_parts(method: &str, params: Option<&RawValue>) -> Result<Self, ErrorData> {
        let map = Value::Object(envelope(None, method, params)?);
        let decoded = match method {
            CancelledNotification::METHOD => serde_json::from_value(map).map(Self::Cancelled),
            ProgressNotification::METHOD => serde_json::from_value(map).map(Self::Progress),
            LoggingMessageNotification::METHOD => {
                serde_json::from_value(map).map(Self::LoggingMessage)
            }
            ResourceUpdatedNotification::METHOD => {
                serde_json::from_value(map).map(Self::ResourceUpdated)
            }
            ResourceListChangedNotification::METHOD => {
                serde_json::from_value(map).map(Self::ResourceListChanged)
            }
            ToolListChangedNotification::METHOD => {
                serde_json::from_value(map).map(Self::ToolListChanged)
            }
            PromptListChangedNotification::METHOD => {
                serde_json::from_value(map).map(Self::PromptListChanged)
            }
            ElicitationCompleteNotification::METHOD => {
                serde_json::from_value(map).map(Self::ElicitationComplete)
            }
            TaskStatusNotification::METHOD => serde_json::from_value(map).map(Self::TaskStatus),
            SubscriptionsAcknowledgedNotification::METHOD => {
                serde_json::from_value(map).map(Self::SubscriptionsAcknowledged)
            }
            _ => return Err(ErrorData::method_not_found(method)),
        };
        decoded.map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))
    }

    /// Decodes a notification off the generic envelope.
    #[inline]
    pub fn from_json_rpc(notification: &JsonRpcNotification) -> Result<Self, ErrorData> {
        Self::from_parts(&notification.method, notification.params.as_deref())
    }

    /// The generic envelope.
    #[inline]
    pub fn to_json_rpc(&self) -> Result<JsonRpcNotification, serde_json::Error> {
        let mut map = match serde_json::to_value(self)? {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        let params = params_of(&mut map)?;
        Ok(JsonRpcNotification::new(self.method(), params))
    }
}

impl From<CancelledNotification> for ServerNotification {
    fn from(n: CancelledNotification) -> Self {
        Self::Cancelled(n)
    }
}

impl From<ProgressNotification> for ServerNotification {
    fn from(n: ProgressNotification) -> Self {
        Self::Progress(n)
    }
}

impl From<LoggingMessageNotification> for ServerNotification {
    fn from(n: LoggingMessageNotification) -> Self {
        Self::LoggingMessage(n)
    }
}

impl From<ResourceUpdatedNotification> for ServerNotification {
    fn from(n: ResourceUpdatedNotification) -> Self {
        Self::ResourceUpdated(n)
    }
}

impl From<ResourceListChangedNotification> for ServerNotification {
    fn from(n: ResourceListChangedNotification) -> Self {
        Self::ResourceListChanged(n)
    }
}

impl From<ToolListChangedNotification> for ServerNotification {
    fn from(n: ToolListChangedNotification) -> Self {
        Self::ToolListChanged(n)
    }
}

impl From<PromptListChangedNotification> for ServerNotification {
    fn from(n: PromptListChangedNotification) -> Self {
        Self::PromptListChanged(n)
    }
}

impl From<ElicitationCompleteNotification> for ServerNotification {
    fn from(n: ElicitationCompleteNotification) -> Self {
        Self::ElicitationComplete(n)
    }
}

impl From<TaskStatusNotification> for ServerNotification {
    fn from(n: TaskStatusNotification) -> Self {
        Self::TaskStatus(n)
    }
}

impl From<SubscriptionsAcknowledgedNotification> for ServerNotification {
    fn from(n: SubscriptionsAcknowledgedNotification) -> Self {
        Self::SubscriptionsAcknowledged(n)
    }
}

impl Serialize for ServerNotification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Cancelled(n) => n.serialize(serializer),
            Self::Progress(n) => n.serialize(serializer),
            Self::LoggingMessage(n) => n.serialize(serializer),
            Self::ResourceUpdated(n) => n.serialize(serializer),
            Self::ResourceListChanged(n) => n.serialize(serializer),
            Self::ToolListChanged(n) => n.serialize(serializer),
            Self::PromptListChanged(n) => n.serialize(serializer),
            Self::ElicitationComplete(n) => n.serialize(serializer),
            Self::TaskStatus(n) => n.serialize(serializer),
            Self::SubscriptionsAcknowledged(n) => n.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ServerNotification {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        let method = match map.get("method") {
            Some(Value::String(m)) => m.clone(),
            _ => return Err(de::Error::missing_field("method")),
        };
        match method.as_str() {
            CancelledNotification::METHOD => from_object(map).map(Self::Cancelled),
            ProgressNotification::METHOD => from_object(map).map(Self::Progress),
            LoggingMessageNotification::METHOD => from_object(map).map(Self::LoggingMessage),
            ResourceUpdatedNotification::METHOD => from_object(map).map(Self::ResourceUpdated),
            ResourceListChangedNotification::METHOD => {
                from_object(map).map(Self::ResourceListChanged)
            }
            ToolListChangedNotification::METHOD => from_object(map).map(Self::ToolListChanged),
            PromptListChangedNotification::METHOD => from_object(map).map(Self::PromptListChanged),
            ElicitationCompleteNotification::METHOD => {
                from_object(map).map(Self::ElicitationComplete)
            }
            TaskStatusNotification::METHOD => from_object(map).map(Self::TaskStatus),
            SubscriptionsAcknowledgedNotification::METHOD => {
                from_object(map).map(Self::SubscriptionsAcknowledged)
            }
            _ => Err(de::Error::unknown_variant(&method, Self::METHODS)),
        }
    }
}
