//! The state a server keeps per session that another process needs to continue the
//! session, as a [`SessionRegistry`](crate::SessionRegistry) records it.

use modelctx_types::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};
use serde::{Deserialize, Serialize};

/// What a server keeps per session that another process needs to continue the
/// session: the negotiated revision, what the client declared, whether its
/// `notifications/initialized` arrived, and what it asked of the server since (its
/// log level, its resource subscriptions).
///
/// A server role exports it through [`SharedSession::save`](crate::SharedSession::save) after
/// `initialize` and after each change; a process that takes over the session starts
/// from it ([`SharedSession::restored`](crate::SharedSession::restored)) without a handshake. The transport records
/// `initialized` when the client's note reaches it, and keeps it in every later save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionSnapshot {
    /// The protocol revision `initialize` negotiated.
    pub protocol_version: ProtocolVersion,
    /// The client's name and version.
    pub client_info: Implementation,
    /// The capabilities the client declared.
    pub client_capabilities: ClientCapabilities,
    /// Whether the client's `notifications/initialized` arrived (at any process): until
    /// then every process refuses the session's requests other than `ping`, as one
    /// process would. Once true it stays true. A record without it reads as `true`:
    /// it was written by a version that did not record the note and served such a
    /// session as initialised, so a session it recorded goes on being served.
    #[serde(default = "initialized_by_default")]
    pub initialized: bool,
    /// The minimum level of log messages the client set (`logging/setLevel`); `None`:
    /// every message passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// The URIs the client subscribed to (`resources/subscribe`), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<String>,
    /// The id of the caller (`modelctx_types::Principal`) the session belongs to:
    /// the one whose `initialize` made it. Every process sharing the session serves it
    /// to that caller only. `None`: a session made without an authenticated caller,
    /// served to whoever names it (or recorded by a version that did not bind sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// What [`SessionSnapshot::initialized`] reads as when a record lacks it.
fn initialized_by_default() -> bool {
    true
}

impl SessionSnapshot {
    /// The state right after `initialize`: the client's `notifications/initialized`
    /// has not arrived, no log level, no subscriptions.
    pub fn new(
        protocol_version: ProtocolVersion,
        client_info: Implementation,
        client_capabilities: ClientCapabilities,
    ) -> Self {
        Self {
            protocol_version,
            client_info,
            client_capabilities,
            initialized: false,
            log_level: None,
            subscriptions: Vec::new(),
            owner: None,
        }
    }

    /// With whether the client's `notifications/initialized` arrived.
    #[must_use]
    pub fn with_initialized(mut self, initialized: bool) -> Self {
        self.initialized = initialized;
        self
    }

    /// With the client's minimum log level.
    #[must_use]
    pub fn with_log_level(mut self, level: Option<LoggingLevel>) -> Self {
        self.log_level = level;
        self
    }

    /// With the client's resource subscriptions (kept sorted, without repeats).
    #[must_use]
    pub fn with_subscriptions(mut self, uris: impl IntoIterator<Item = String>) -> Self {
        let mut uris: Vec<String> = uris.into_iter().collect();
        uris.sort();
        uris.dedup();
        self.subscriptions = uris;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> SessionSnapshot {
        SessionSnapshot::new(
            ProtocolVersion::V2025_11_25,
            Implementation::new("c", "1"),
            ClientCapabilities::default(),
        )
    }

    #[test]
    fn whether_the_note_arrived_is_always_written_and_read_back() {
        for initialized in [false, true] {
            let written = snapshot().with_initialized(initialized);
            let text = serde_json::to_string(&written).unwrap();
            assert!(
                text.contains(&format!(r#""initialized":{initialized}"#)),
                "{text}"
            );
            let read: SessionSnapshot = serde_json::from_str(&text).unwrap();
            assert_eq!(read, written);
        }
        assert!(!snapshot().initialized, "a new session waits for the note");
    }

    #[test]
    fn a_record_without_the_field_reads_as_initialised() {
        let text = r#"{"protocolVersion":"2025-11-25","clientInfo":{"name":"c","version":"1"},"clientCapabilities":{}}"#;
        let read: SessionSnapshot = serde_json::from_str(text).unwrap();
        assert!(read.initialized);
    }
}
