//! The typed `_meta` objects of 2026-07-28: what a request, a result and a
//! notification reserve under `io.modelcontextprotocol/*`.
//!
//! Messages keep `_meta` as the open [`Meta`] map (every key survives, and the same
//! message types carry every revision); these types are the schema's named shapes of
//! it, for reading or building one in full. Each converts to [`Meta`] and is read from
//! one with `from_meta`. The reserved keys are constants on [`Meta`].

use serde::{Deserialize, Serialize};

use crate::base::JsonObject;
use crate::capabilities::ClientCapabilities;
use crate::common::{Meta, ProgressToken};
use crate::jsonrpc::RequestId;
use crate::lifecycle::Implementation;
use crate::logging::LoggingLevel;

/// Typed access to the members of the 2026-07-28 envelope kept in `_meta`.
impl Meta {
    /// `io.modelcontextprotocol/clientCapabilities`, when present and well formed.
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.typed(Self::CLIENT_CAPABILITIES)
    }

    /// Sets `io.modelcontextprotocol/clientCapabilities`.
    pub fn set_client_capabilities(&mut self, capabilities: &ClientCapabilities) {
        self.set_typed(Self::CLIENT_CAPABILITIES, capabilities);
    }

    /// `io.modelcontextprotocol/clientInfo`, when present and well formed.
    pub fn client_info(&self) -> Option<Implementation> {
        self.typed(Self::CLIENT_INFO)
    }

    /// Sets `io.modelcontextprotocol/clientInfo`.
    pub fn set_client_info(&mut self, info: &Implementation) {
        self.set_typed(Self::CLIENT_INFO, info);
    }

    /// `io.modelcontextprotocol/logLevel`, when present and well formed.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.typed(Self::LOG_LEVEL)
    }

    /// Sets `io.modelcontextprotocol/logLevel`.
    pub fn set_log_level(&mut self, level: &LoggingLevel) {
        self.set_typed(Self::LOG_LEVEL, level);
    }

    /// `io.modelcontextprotocol/serverInfo`, when present and well formed.
    pub fn server_info(&self) -> Option<Implementation> {
        self.typed(Self::SERVER_INFO)
    }

    /// Sets `io.modelcontextprotocol/serverInfo`.
    pub fn set_server_info(&mut self, info: &Implementation) {
        self.set_typed(Self::SERVER_INFO, info);
    }

    /// `io.modelcontextprotocol/subscriptionId`, when present and well formed.
    pub fn subscription_id(&self) -> Option<RequestId> {
        self.typed(Self::SUBSCRIPTION_ID)
    }

    /// Sets `io.modelcontextprotocol/subscriptionId`.
    pub fn set_subscription_id(&mut self, id: &RequestId) {
        self.set_typed(Self::SUBSCRIPTION_ID, id);
    }
}

/// The schema's `MetaObject`: any `_meta` (an open object).
pub type MetaObject = Meta;

fn to_meta<T: Serialize>(value: &T) -> Meta {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(map)) => Meta::from(map),
        // Every type here serialises to an object.
        _ => Meta::new(),
    }
}

/// The `_meta` of a 2026-07-28 request (the schema's `RequestMetaObject`): the
/// protocol revision and client capabilities every request carries, now that there is
/// no `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestMetaObject {
    /// The revision the request speaks (must match the `MCP-Protocol-Version` header on
    /// HTTP).
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub protocol_version: String,
    /// The client's capabilities for this request (servers must not infer them from
    /// earlier requests).
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: ClientCapabilities,
    /// Who the client is (self-reported, for display and logs).
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// The log level this request opts in to; absent, the server sends no
    /// `notifications/message` for it.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// Asks for `notifications/progress` with this token.
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestMetaObject {
    /// The required members: the revision and the client's capabilities.
    pub fn new(
        protocol_version: impl Into<String>,
        client_capabilities: ClientCapabilities,
    ) -> Self {
        Self {
            protocol_version: protocol_version.into(),
            client_capabilities,
            client_info: None,
            log_level: None,
            progress_token: None,
            extra: JsonObject::new(),
        }
    }

    crate::setters::setters! {
        with_client_info(client_info: impl Into<Implementation>),
        with_log_level(log_level: LoggingLevel),
    }

    /// Sets `progress_token`.
    #[must_use]
    pub fn with_progress_token(mut self, token: impl Into<ProgressToken>) -> Self {
        self.progress_token = Some(token.into());
        self
    }
}

/// The `_meta` of a 2026-07-28 result (the schema's `ResultMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResultMetaObject {
    /// Who the server is (servers should say so on every result).
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResultMetaObject {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    crate::setters::setters! {
        with_server_info(server_info: impl Into<Implementation>),
    }
}

/// The `_meta` of a 2026-07-28 notification (the schema's `NotificationMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NotificationMetaObject {
    /// The `subscriptions/listen` stream this notification belongs to: the id of the
    /// `subscriptions/listen` request.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl NotificationMetaObject {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    crate::setters::setters! {
        with_subscription_id(subscription_id: impl Into<RequestId>),
    }
}

/// The `_meta` of a `subscriptions/listen` result (the schema's
/// `SubscriptionsListenResultMetaObject`): the subscription's id is required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionsListenResultMetaObject {
    /// The subscription the stream carried (the `subscriptions/listen` request's id).
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: RequestId,
    /// Who the server is.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsListenResultMetaObject {
    /// A `_meta` naming the subscription.
    pub fn new(subscription_id: impl Into<RequestId>) -> Self {
        Self {
            subscription_id: subscription_id.into(),
            server_info: None,
            extra: JsonObject::new(),
        }
    }

    crate::setters::setters! {
        with_server_info(server_info: impl Into<Implementation>),
    }
}

/// Each typed `_meta` object reads from a [`Meta`] and becomes one the same way.
macro_rules! meta_objects {
    ($($ty:ident: $from:literal;)*) => {$(
        impl $ty {
            #[doc = concat!("Reads it from ", $from, "; fails when a reserved key is malformed ",
                "or a key it requires is missing.")]
            pub fn from_meta(meta: &Meta) -> Result<Self, serde_json::Error> {
                Self::deserialize(meta.as_map())
            }
        }

        impl From<$ty> for Meta {
            fn from(value: $ty) -> Self {
                to_meta(&value)
            }
        }
    )*};
}

meta_objects! {
    RequestMetaObject: "a request's `_meta`";
    ResultMetaObject: "a result's `_meta`";
    NotificationMetaObject: "a notification's `_meta`";
    SubscriptionsListenResultMetaObject: "a `subscriptions/listen` result's `_meta`";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_meta_converts_both_ways() {
        let typed = RequestMetaObject::new("2026-07-28", ClientCapabilities::new())
            .with_client_info(Implementation::new("c", "1"))
            .with_progress_token(3);
        let meta = Meta::from(typed.clone());
        assert_eq!(meta.protocol_version(), Some("2026-07-28"));
        assert_eq!(meta.progress_token(), Some(ProgressToken::Number(3)));
        assert_eq!(meta.client_info().unwrap().name, "c");
        assert_eq!(RequestMetaObject::from_meta(&meta).unwrap(), typed);
        // The required keys are required.
        let mut partial = Meta::new();
        partial.set_protocol_version("2026-07-28");
        assert!(RequestMetaObject::from_meta(&partial).is_err());
        let mut n = Meta::new();
        n.set_subscription_id(&RequestId::from("listen-1"));
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            json!({"io.modelcontextprotocol/subscriptionId": "listen-1"})
        );
    }
}
