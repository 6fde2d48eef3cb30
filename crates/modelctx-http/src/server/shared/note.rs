//! The client's `notifications/initialized` of a shared session: it reaches one
//! service, and the registry records it; a copy elsewhere whose runtime still waits for
//! it is handed one in its place (only then: a client that sent none is refused as by
//! one service).
//!
//! The record says whether the note arrived (`SessionSnapshot::initialized`). Until it
//! does, every copy refuses the session's requests but `ping` (`-32600`) and sends only
//! pings and logging: the copy that ran `initialize` is `Initializing` as on one service,
//! and a copy made from the record starts there too (`SessionConfig::initialize_answered`).
//! The service the note reaches hands it to its runtime *first*, then records it (a new
//! revision, relayed as `Changed` and acknowledged) before answering its POST: recorded
//! first, the note could still be queued when the 202 went out, and a request of the
//! server's own right after it would be refused. Every later save keeps the flag (it never
//! goes back).
//!
//! A copy is handed a note in the client's place only when the record says the client sent
//! it: at once on the `Changed` relay, or before the first later POST or GET that learns it
//! through `touch`. Two traps, both from the client's GET racing its note: a copy started
//! from a record read just before the note was recorded misses that relay (no copy in the
//! map yet), so a copy started without the note touches the record once more after it is in
//! the map; and a task handing a note and a POST's task push separately, so deciding and
//! pushing happen under a per-session gate (`hand_note_first`, a tokio mutex held until the
//! messages are queued), never held across registry I/O (the relay listener takes it too,
//! and holding it across an acknowledgement would deadlock until `CHANGE_WAIT`).

use std::sync::atomic::Ordering;

use modelctx_transport::Extensions;
use modelctx_types::JsonRpcMessage;

use crate::server::session::{INITIALIZED, Messages, SessionState};

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
        messages: &mut Messages,
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
        let mut note = Messages::new();
        let gate = self.hand_note_first(&mut note).await;
        if !note.is_empty() {
            let _ = self.push(note, None, &Extensions::new()).await;
        }
        drop(gate);
    }
}
