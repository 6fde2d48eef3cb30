//! The lifecycle rules: which messages may flow in which phase, for each role.
//!
//! Server: `New` until it answers `initialize`, `Initializing` until the client's
//! `notifications/initialized`, then `Operational`. Client: `New` until it sends
//! `initialize`, `Initializing` until it sends `notifications/initialized`, then
//! `Operational`. Ping flows in every phase. A server configured for the stateless era
//! (2026-07-28) moves from `New` straight to `Stateless` on a request carrying the
//! per-request envelope (`_meta["io.modelcontextprotocol/protocolVersion"]`): no
//! handshake, every request stands alone, and the server sends no requests of its own.
//! Pure functions over the phase, so the rules are tested without any I/O.
//!
//! A server session starts in `New`, in `Operational` (`SessionConfig::pre_initialized`),
//! or in `Initializing` (`SessionConfig::initialize_answered`: a shared session whose
//! `initialize` another process answered; a second `initialize` is then refused, as on the
//! process that answered it). A server that receives `notifications/initialized` while it
//! is still answering `initialize` (a pipelining client) becomes operational as soon as the
//! answer is out; requests sent before the answer are still refused.

use std::sync::atomic::{AtomicU8, Ordering};

use modelctx_types::ErrorData;

/// Which side of the conversation a session plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The client: sends `initialize`, serves sampling, elicitation and roots.
    Client,
    /// The server: answers `initialize`, serves tools, resources and prompts.
    Server,
}

/// A phase of the lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Phase {
    New = 0,
    Initializing = 1,
    Operational = 2,
    /// The stateless era (2026-07-28): serving, with no handshake behind it.
    Stateless = 3,
}

impl Phase {
    /// The protocol era, for tracing: `"2026"` in the stateless era (2026-07-28),
    /// `"2025"` otherwise (the handshake revisions, 2024-11-05 to 2025-11-25).
    pub(crate) fn era(self) -> &'static str {
        if self == Phase::Stateless {
            "2026"
        } else {
            "2025"
        }
    }

    /// Whether requests are served (after the handshake, or in the stateless era).
    pub(crate) fn is_serving(self) -> bool {
        matches!(self, Phase::Operational | Phase::Stateless)
    }
}

/// The phase, shared between the receive task and every sender.
#[derive(Debug)]
pub(crate) struct PhaseCell(AtomicU8);

impl PhaseCell {
    pub(crate) fn new(phase: Phase) -> Self {
        Self(AtomicU8::new(phase as u8))
    }

    pub(crate) fn get(&self) -> Phase {
        match self.0.load(Ordering::Acquire) {
            0 => Phase::New,
            1 => Phase::Initializing,
            2 => Phase::Operational,
            _ => Phase::Stateless,
        }
    }

    /// Moves from `from` to `to`; false when the phase was not `from`.
    pub(crate) fn advance(&self, from: Phase, to: Phase) -> bool {
        self.0
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

pub(crate) const PING: &str = "ping";
pub(crate) const DISCOVER: &str = "server/discover";
pub(crate) const INITIALIZE: &str = "initialize";
pub(crate) const INITIALIZED: &str = "notifications/initialized";
pub(crate) const CANCELLED: &str = "notifications/cancelled";
pub(crate) const PROGRESS: &str = "notifications/progress";
const LOG_MESSAGE: &str = "notifications/message";

/// Whether an inbound request may be served now; the error answers it otherwise.
/// A second `initialize` is caught by the caller (it needs a one-shot flag).
pub(crate) fn check_inbound_request(
    role: Role,
    phase: Phase,
    method: &str,
) -> Result<(), ErrorData> {
    if method == PING || phase.is_serving() {
        return Ok(());
    }
    match (role, method) {
        (Role::Server, INITIALIZE) if phase == Phase::New => Ok(()),
        _ => Err(ErrorData::invalid_request(format!(
            "Received request {method} before initialization was complete"
        ))),
    }
}

/// Whether an outbound request may be sent now; the reason otherwise.
pub(crate) fn check_outbound_request(role: Role, phase: Phase, method: &str) -> Result<(), String> {
    if role == Role::Client && phase == Phase::Stateless {
        return Ok(());
    }
    // A client may ask which eras the server speaks before it commits to one.
    if role == Role::Client && phase == Phase::New && method == DISCOVER {
        return Ok(());
    }
    if phase == Phase::Stateless {
        return Err(format!(
            "cannot send {method}: the stateless era (2026-07-28) has no requests from the server; a handler asks the client for input through an input-required result"
        ));
    }
    if method == PING {
        return Ok(());
    }
    match role {
        Role::Client if method == INITIALIZE => match phase {
            Phase::New => Ok(()),
            _ => Err("initialize was already sent on this session".into()),
        },
        _ if phase == Phase::Operational => Ok(()),
        Role::Client => Err(format!(
            "cannot send {method} before the initialization handshake completed"
        )),
        Role::Server => Err(format!(
            "cannot send {method} before the client sent notifications/initialized"
        )),
    }
}

/// Whether an outbound notification may be sent now; the reason otherwise.
pub(crate) fn check_outbound_notification(
    role: Role,
    phase: Phase,
    method: &str,
) -> Result<(), String> {
    if phase == Phase::Stateless && role == Role::Client && method == CANCELLED {
        // The era's one client notification (stdio, in-memory; over HTTP closing the
        // response stream cancels).
        return Ok(());
    }
    if phase == Phase::Stateless {
        // Everything travels with the request it belongs to in this era (progress and
        // log messages with their request, change notifications with the
        // `subscriptions/listen` request that asked for them): see `Peer::notify_raw`.
        return Err(format!(
            "cannot send {method} in the stateless era (2026-07-28) outside a request"
        ));
    }
    if phase == Phase::Operational || method == CANCELLED || method == PROGRESS {
        return Ok(());
    }
    match role {
        Role::Client if method == INITIALIZED && phase == Phase::Initializing => Ok(()),
        Role::Server if method == LOG_MESSAGE => Ok(()),
        _ => Err(format!(
            "cannot send {method} before the initialization handshake completed"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_accepts_only_ping_and_one_initialize_before_initialized() {
        assert!(check_inbound_request(Role::Server, Phase::New, "ping").is_ok());
        assert!(check_inbound_request(Role::Server, Phase::New, "initialize").is_ok());
        assert!(check_inbound_request(Role::Server, Phase::New, "tools/list").is_err());
        assert!(check_inbound_request(Role::Server, Phase::Initializing, "tools/list").is_err());
        assert!(check_inbound_request(Role::Server, Phase::Initializing, "initialize").is_err());
        assert!(check_inbound_request(Role::Server, Phase::Operational, "tools/list").is_ok());
    }

    #[test]
    fn server_sends_only_ping_and_logging_before_initialized() {
        assert!(check_outbound_request(Role::Server, Phase::Initializing, "ping").is_ok());
        assert!(check_outbound_request(Role::Server, Phase::Initializing, "roots/list").is_err());
        assert!(
            check_outbound_notification(Role::Server, Phase::Initializing, LOG_MESSAGE).is_ok()
        );
        assert!(
            check_outbound_notification(
                Role::Server,
                Phase::Initializing,
                "notifications/tools/list_changed"
            )
            .is_err()
        );
    }

    #[test]
    fn client_sends_initialize_once_then_initialized() {
        assert!(check_outbound_request(Role::Client, Phase::New, "initialize").is_ok());
        assert!(check_outbound_request(Role::Client, Phase::New, "tools/list").is_err());
        assert!(check_outbound_request(Role::Client, Phase::Initializing, "initialize").is_err());
        assert!(
            check_outbound_notification(Role::Client, Phase::Initializing, INITIALIZED).is_ok()
        );
        assert!(check_outbound_notification(Role::Client, Phase::New, INITIALIZED).is_err());
        assert!(check_outbound_request(Role::Client, Phase::Operational, "tools/list").is_ok());
    }

    #[test]
    fn phase_advances_only_from_the_expected_phase() {
        let p = PhaseCell::new(Phase::New);
        assert!(!p.advance(Phase::Initializing, Phase::Operational));
        assert!(p.advance(Phase::New, Phase::Initializing));
        assert_eq!(p.get(), Phase::Initializing);
    }

    #[test]
    fn the_stateless_era_serves_everything_and_sends_only_request_scoped_messages() {
        assert!(check_inbound_request(Role::Server, Phase::Stateless, "tools/list").is_ok());
        assert!(check_outbound_request(Role::Server, Phase::Stateless, "roots/list").is_err());
        assert!(check_outbound_request(Role::Server, Phase::Stateless, PING).is_err());
        assert!(check_outbound_notification(Role::Server, Phase::Stateless, PROGRESS).is_err());
        assert!(check_outbound_notification(Role::Client, Phase::Stateless, CANCELLED).is_ok());
        assert!(
            check_outbound_notification(
                Role::Client,
                Phase::Stateless,
                "notifications/roots/list_changed"
            )
            .is_err()
        );
        assert!(
            check_outbound_notification(
                Role::Server,
                Phase::Stateless,
                "notifications/tools/list_changed"
            )
            .is_err()
        );
        let cell = PhaseCell::new(Phase::New);
        assert!(cell.advance(Phase::New, Phase::Stateless));
        assert_eq!(cell.get(), Phase::Stateless);
        assert!(cell.get().is_serving());
    }
}
