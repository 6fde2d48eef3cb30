//! Which caller a stateful session belongs to.
//!
//! A session is bound to the authenticated caller ([`Principal`], which a layer in
//! front of the endpoint attaches, as `modelctx-oauth`'s resource server does) whose
//! `initialize` made it, for as long as the session lives: the binding is part of the
//! session, not of a table that could forget it, and a shared session's record carries
//! it to every service (`SessionSnapshot::owner`). A request naming the session with
//! another caller (or none) is answered as for an unknown session (`404`), so a leaked
//! session id is of no use to another user; an id no session has is unknown to
//! everyone, never bound to whoever presents it first. A session made without a
//! caller (no authentication in front, or one opened out of band) is bound to none and
//! served to whoever names it, as before.

use std::sync::Arc;

use modelctx_types::Principal;

use super::SessionState;

impl SessionState {
    /// Binds the session to `caller`, the caller of its `initialize` (once: a session
    /// keeps its first owner). Nothing without a caller.
    pub(crate) fn bind_owner(&self, caller: Option<&Principal>) {
        let Some(caller) = caller else { return };
        if self.owner_id().is_some() {
            return;
        }
        let owner: Arc<str> = Arc::from(caller.id());
        if let Some(shared) = &self.shared {
            shared.bind_owner(&owner);
        }
        let _ = self.owner.set(owner);
    }

    /// Whether `caller` may use the session: it is bound to no one, or to `caller`.
    pub(crate) fn admits(&self, caller: Option<&Principal>) -> bool {
        match self.owner_id() {
            None => true,
            Some(owner) => caller.is_some_and(|c| c.id() == owner),
        }
    }

    /// The id of the caller the session belongs to, bound here or recorded elsewhere.
    fn owner_id(&self) -> Option<&str> {
        if let Some(owner) = self.owner.get() {
            return Some(owner);
        }
        self.shared.as_ref().and_then(|s| s.owner())
    }
}
