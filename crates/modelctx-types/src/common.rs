//! Small types shared by many messages: `_meta`, progress tokens, cursors.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::ClientCapabilities;
use crate::jsonrpc::RequestId;
use crate::lifecycle::Implementation;
use crate::logging::LoggingLevel;

/// A progress token: associates `notifications/progress` with the request that asked
/// for them. A string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(Arc<str>),
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<i32> for ProgressToken {
    fn from(n: i32) -> Self {
        Self::Number(n.into())
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        Self::String(s.into())
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        Self::String(s.into())
    }
}

/// An opaque pagination cursor, issued by the server and handed back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cursor(pub String);

impl From<&str> for Cursor {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl From<String> for Cursor {
    fn from(s: String) -> Self {
        Self(s)
    }
}

/// The `_meta` member: an open object whose keys all survive a round trip.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meta(pub Map<String, Value>);

impl Meta {
    /// The key under which a request asks for progress notifications.
    pub const PROGRESS_TOKEN: &'static str = "progressToken";
    /// A request's protocol revision (2026-07-28, required on every request).
    pub const PROTOCOL_VERSION: &'static str = "io.modelcontextprotocol/protocolVersion";
    /// A request's client capabilities (2026-07-28, required on every request).
    pub const CLIENT_CAPABILITIES: &'static str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's `Implementation` on a request (2026-07-28, should be sent).
    pub const CLIENT_INFO: &'static str = "io.modelcontextprotocol/clientInfo";
    /// The log level a request opts in to; without it no `notifications/message` may be
    /// sent for the request (2026-07-28, replaces `logging/setLevel`).
    pub const LOG_LEVEL: &'static str = "io.modelcontextprotocol/logLevel";
    /// The server's `Implementation` on a result (2026-07-28, should be sent).
    pub const SERVER_INFO: &'static str = "io.modelcontextprotocol/serverInfo";
    /// The `subscriptions/listen` stream a notification belongs to, and the id the
    /// server gives a subscription in its result (2026-07-28).
    pub const SUBSCRIPTION_ID: &'static str = "io.modelcontextprotocol/subscriptionId";

    /// An empty `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The progress token, when present and well formed.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        self.0
            .get(Self::PROGRESS_TOKEN)
            .and_then(|v| ProgressToken::deserialize(v).ok())
    }

    /// Sets the progress token.
    pub fn set_progress_token(&mut self, token: ProgressToken) {
        let value = match token {
            ProgressToken::Number(n) => Value::from(n),
            ProgressToken::String(s) => Value::from(&*s),
        };
        self.0.insert(Self::PROGRESS_TOKEN.to_owned(), value);
    }

    /// A key's value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Sets a key.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.0.insert(key.into(), value)
    }

    /// A key's value read as `T`, if present and well formed.
    fn typed<T: for<'de> Deserialize<'de>>(&self, key: &str) -> Option<T> {
        self.0.get(key).and_then(|v| T::deserialize(v).ok())
    }

    /// Sets a key to a serialisable value.
    fn set_typed<T: Serialize>(&mut self, key: &str, value: &T) {
        // The SDK's own types always serialise.
        if let Ok(value) = serde_json::to_value(value) {
            self.0.insert(key.to_owned(), value);
        }
    }

    /// `io.modelcontextprotocol/protocolVersion`, when a string.
    pub fn protocol_version(&self) -> Option<&str> {
        self.0.get(Self::PROTOCOL_VERSION).and_then(Value::as_str)
    }

    /// Sets `io.modelcontextprotocol/protocolVersion`.
    pub fn set_protocol_version(&mut self, version: impl Into<String>) {
        self.0.insert(
            Self::PROTOCOL_VERSION.to_owned(),
            Value::String(version.into()),
        );
    }

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

/// Reads an optional member whose value may be `null`: a `null` there is kept (written
/// back as `null`), not read as "absent" the way `Option<Value>` reads it. For members
/// the schema leaves open (`data` of an error, `structuredContent`), so a round trip
/// keeps what the peer sent (found by the property tests, issue 25).
pub(crate) fn null_is_a_value<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}
