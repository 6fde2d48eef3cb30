//! The typed `_meta` objects of 2026-07-28: what a request, a result and a
//! notification reserve under `io.modelcontextprotocol/*`.
//!
//! Messages keep `_meta` as the open [`Meta`] map (every key survives, and the same
//! message types carry every revision); these types are the schema's named shapes of
//! it, for reading or building one in full. Each converts to [`Meta`] and is read from
//! one with `from_meta`. The reserved keys are constants on [`Meta`].

use serde::{Deserialize, Serialize};

use crate::capabilities::ClientCapabilities;
use crate::common::{Meta, ProgressToken};
use crate::jsonrpc::RequestId;
use crate::lifecycle::Implementation;
use crate::logging::LoggingLevel;

/// Declares typed accessors of `_meta` members: for each key (named by a constant on
/// [`Meta`]), the getter (the member when present and well formed) and the setter.
macro_rules! typed_members {
    ($($key:literal = $const:ident: $get:ident, $set:ident($arg:ident: &$ty:ty);)+) => {
        /// Typed access to the members of the 2026-07-28 envelope kept in `_meta`.
        impl Meta {$(
            #[doc = concat!("`", $key, "`, when present and well formed.")]
            #[inline]
            pub fn $get(&self) -> Option<$ty> {
                self.typed(Self::$const)
            }

            #[doc = concat!("Sets `", $key, "`.")]
            #[inline]
            pub fn $set(&mut self, $arg: &$ty) {
                self.set_typed(Self::$const, $arg);
            }
        )+}
    };
}

typed_members! {
    "io.modelcontextprotocol/clientCapabilities" = CLIENT_CAPABILITIES:
        client_capabilities, set_client_capabilities(capabilities: &ClientCapabilities);
    "io.modelcontextprotocol/clientInfo" = CLIENT_INFO:
        client_info, set_client_info(info: &Implementation);
    "io.modelcontextprotocol/logLevel" = LOG_LEVEL:
        log_level, set_log_level(level: &LoggingLevel);
    "io.modelcontextprotocol/serverInfo" = SERVER_INFO:
        server_info, set_server_info(info: &Implementation);
    "io.modelcontextprotocol/subscriptionId" = SUBSCRIPTION_ID:
        subscription_id, set_subscription_id(id: &RequestId);
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

crate::setters::wire_struct! {
    /// The `_meta` of a 2026-07-28 request (the schema's `RequestMetaObject`): the
    /// protocol revision and client capabilities every request carries, now that there is
    /// no `initialize`.
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
        #[serde(rename = "io.modelcontextprotocol/clientInfo")]
        client_info?: Implementation => with_client_info,
        /// The log level this request opts in to; absent, the server sends no
        /// `notifications/message` for it.
        #[serde(rename = "io.modelcontextprotocol/logLevel")]
        log_level?: LoggingLevel => exact with_log_level,
        /// Asks for `notifications/progress` with this token.
        #[serde(rename = "progressToken")]
        progress_token?: ProgressToken => with_progress_token,
        ..
        /// Every other key.
        extra,
    }
    /// The required members: the revision and the client's capabilities.
    new(protocol_version: impl Into<String>, client_capabilities: ClientCapabilities);
}

crate::setters::optional_members! {
    /// The `_meta` of a 2026-07-28 result (the schema's `ResultMetaObject`).
    pub struct ResultMetaObject {
        /// Who the server is (servers should say so on every result).
        #[serde(rename = "io.modelcontextprotocol/serverInfo")]
        with_server_info(server_info: impl Into<Implementation>),
        ..
        /// Every other key.
        extra,
    }
    /// An empty `_meta`.
    new;
}

crate::setters::optional_members! {
    /// The `_meta` of a 2026-07-28 notification (the schema's `NotificationMetaObject`).
    pub struct NotificationMetaObject {
        /// The `subscriptions/listen` stream this notification belongs to: the id of the
        /// `subscriptions/listen` request.
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        with_subscription_id(subscription_id: impl Into<RequestId>),
        ..
        /// Every other key.
        extra,
    }
    /// An empty `_meta`.
    new;
}

crate::setters::wire_struct! {
    /// The `_meta` of a `subscriptions/listen` result (the schema's
    /// `SubscriptionsListenResultMetaObject`): the subscription's id is required.
    pub struct SubscriptionsListenResultMetaObject {
        /// The subscription the stream carried (the `subscriptions/listen` request's id).
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        pub subscription_id: RequestId,
        /// Who the server is.
        #[serde(rename = "io.modelcontextprotocol/serverInfo")]
        server_info?: Implementation => with_server_info,
        ..
        /// Every other key.
        extra,
    }
    /// A `_meta` naming the subscription.
    new(subscription_id: impl Into<RequestId>);
}

/// Each typed `_meta` object reads from a [`Meta`] and becomes one the same way.
macro_rules! meta_objects {
    ($($ty:ident: $from:literal;)*) => {$(
        impl $ty {
            #[doc = concat!("Reads it from ", $from, "; fails when a reserved key is malformed ",
                "or a key it requires is missing.")]
            #[inline]
            pub fn from_meta(meta: &Meta) -> Result<Self, serde_json::Error> {
                Self::deserialize(meta.as_map())
            }
        }

        impl From<$ty> for Meta {
            #[inline]
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
