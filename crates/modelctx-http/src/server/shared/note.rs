//! The client's `notifications/initialized` of a shared session: it reaches one
//! service, and the registry records it; a copy elsewhere whose runtime still waits for
//! it is handed one in its place (only then: a client that sent none is refused as by
//! one service).

use std::sync::atomic::Ordering;

use modelctx_transport::Extensions;
use modelctx_types::JsonRpcMessage;

use crate::server::session::{INITIALIZED, SessionState};

impl SessionState {
    /// Notes that the client's `notifications/initialized` is among `messages`, which
    /// go to the runtime here: nothing is to be handed to it in its place.
    pub(crate) fn note_from_client(&self, messages: &[JsonRpcMessage]) {
        if self.shared.is_some() && messages.iter().any(|m| m.method() == Some(INITIALIZED)) {
            self.initialized_note.store(true, Ordering::Relaxed);
        }
    }

    /// Puts a `notifications/initialized` in front of `messages` when the runtime here
    /// needs one in place of the client's ([`missed_initialized`](Self::missed_initialized)).
    /// For a shared session, the answer holds the session's gate: keep it until
    /// `messages` are pushed, so that no message pushed meanwhile by another task goes
    /// before the note. `None` at once for a session that is not shared.
    pub(crate) async fn hand_note_first(
        &self,
        messages: &mut Vec<JsonRpcMessage>,
    ) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        self.shared.as_ref()?;
        let gate = self.note_gate.lock().await;
        if self.missed_initialized(messages)
            && let Ok(note) = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.parse()
        {
            messages.insert(0, note);
        }
        Some(gate)
    }

    /// Whether this copy of a shared session must hand its runtime a
    /// `notifications/initialized` the client sent to another process: the runtime
    /// here started before the note arrived (it ran `initialize` here, or continues a
    /// session whose note had not arrived) and still refuses every request but `ping`,
    /// while the registry says the client did send it. Only then: a client that sent
    /// no note is refused here as by the process that ran its handshake.
    pub(crate) fn missed_initialized(&self, messages: &[JsonRpcMessage]) -> bool {
        let Some(shared) = &self.shared else {
            return false;
        };
        if messages.iter().any(|m| m.method() == Some(INITIALIZED)) {
            self.initialized_note.store(true, Ordering::Relaxed);
            return false;
        }
        shared.started_uninitialized()
            && shared.client_initialized()
            && (shared.is_restored() || self.negotiated.get().is_some())
            && !self.initialized_note.swap(true, Ordering::Relaxed)
    }

    /// Hands the session's runtime the client's `notifications/initialized` when the
    /// registry says it arrived at another service and the runtime here still waits
    /// for it (see [`missed_initialized`](Self::missed_initialized)).
    pub(crate) async fn hand_missed_initialized(&self) {
        let mut note = Vec::new();
        let gate = self.hand_note_first(&mut note).await;
        if !note.is_empty() {
            let _ = self.push(note, None, &Extensions::new()).await;
        }
        drop(gate);
    }
}
