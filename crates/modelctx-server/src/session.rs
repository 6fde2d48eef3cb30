//! Per-session state: what the client declared, its log level and resource
//! subscriptions. It lives in the session's service, never in a global.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use modelctx_session::{CancellationToken, Peer};
use modelctx_types::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};

/// What one session knows about its client and what the client asked of it.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    pub(crate) info: OnceLock<Implementation>,
    pub(crate) capabilities: OnceLock<ClientCapabilities>,
    pub(crate) protocol_version: OnceLock<ProtocolVersion>,
    /// Fires when the client sends `notifications/initialized`.
    pub(crate) initialized: CancellationToken,
    /// The session's peer (not related to any request), set right after start.
    pub(crate) peer: OnceLock<Peer>,
    /// The minimum level set with `logging/setLevel`; everything passes until then.
    log_level: Mutex<Option<LoggingLevel>>,
    /// URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
    /// The session's key for binding tasks to it: random, made on first use.
    task_key: OnceLock<Option<Arc<str>>>,
}

impl SessionState {
    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *self.log_level.lock().unwrap_or_else(|p| p.into_inner()) = Some(level);
    }

    /// Whether a message at `level` passes the client's chosen minimum.
    pub(crate) fn logs(&self, level: &LoggingLevel) -> bool {
        let threshold = self.log_level.lock().unwrap_or_else(|p| p.into_inner());
        threshold.as_ref().is_none_or(|t| level.passes(t))
    }

    pub(crate) fn subscribe(&self, uri: &str) {
        self.subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uri.to_owned());
    }

    pub(crate) fn unsubscribe(&self, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uri)
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(uri)
    }

    /// The key tasks created on this session are bound to (`None` only when the
    /// system has no randomness to offer).
    pub(crate) fn task_key(&self) -> Option<Arc<str>> {
        self.task_key
            .get_or_init(|| {
                let mut bytes = [0u8; 16];
                getrandom::fill(&mut bytes).ok()?;
                Some(
                    bytes
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                        .into(),
                )
            })
            .clone()
    }

    /// The session's peer while it is open and initialised.
    pub(crate) fn live_peer(&self) -> Option<&Peer> {
        self.peer
            .get()
            .filter(|p| !p.is_closed() && p.is_initialized())
    }
}
