//! The kept sessions of the stateless era (2026-07-28): idle sessions an endpoint keeps
//! between POSTs, each lent to one POST at a time. Session-less mode's JSON POSTs of the
//! handshake era have a pool of their own (see [`post`](super::post)).
//!
//! A request of the era brings everything it needs (its envelope, its headers in
//! [`EraRead`](modelctx_transport::EraRead)) and leaves nothing in its session (the era
//! has no handshake, no `logging/setLevel`, no `resources/subscribe`; tasks are not
//! bound to a session without an id), so one session serves POST after POST, one at a
//! time, and a POST skips starting and ending a session runtime.
//!
//! A session goes back to the pool when its POST ends only if it is idle (no route, no
//! stream), open, and its answer did not stream, up to `KEPT_ERA_SESSIONS`; otherwise it
//! ends with its last answer. A session that served `initialize` is never kept. Shutdown
//! (`close_all_sessions`) and the service's drop end the kept sessions, and a session lent
//! meanwhile ends with its POST. One request at a time per lent session, so ids never
//! meet; a request that has ended fires its token, the sink drops its late notifications
//! (see `session::outbound`), and a handler that keeps its `Context` cannot close the
//! session through it later (see `Peer::close`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::session::SessionState;

/// How many idle sessions of the stateless era an endpoint keeps: about as many as
/// POSTs of the era it serves at once. Each is a session runtime waiting for its next
/// message (a few KiB).
pub(super) const KEPT_ERA_SESSIONS: usize = 64;

/// The idle sessions of the stateless era an endpoint keeps for its next POSTs, at most
/// [`KEPT_ERA_SESSIONS`]. [`acquire`](Self::acquire) lends one to a POST; the
/// [`KeptSession`] it answers hands it back when the POST ends.
#[derive(Default)]
pub(super) struct KeptSessions {
    idle: Mutex<Vec<Arc<SessionState>>>,
    /// How many times [`end_all`](Self::end_all) ended the pool: a session lent before
    /// the last time is not kept when its POST ends.
    ends: AtomicU64,
}

impl KeptSessions {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<SessionState>>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A session for one POST of the stateless era: an idle one kept from an earlier
    /// POST, else a new one from `new`. `keep`: whether the POST's request leaves its
    /// session as it found it. `None` when a new session cannot be made.
    pub(super) fn acquire(
        &self,
        keep: bool,
        new: impl FnOnce() -> Option<Arc<SessionState>>,
    ) -> Option<KeptSession<'_>> {
        loop {
            // The count read with the pop, under the pool's lock (see `end_all`).
            let (kept, lent_at) = {
                let mut idle = self.lock();
                (idle.pop(), self.ends.load(Ordering::Acquire))
            };
            match kept {
                Some(session) if session.is_open() => {
                    return Some(KeptSession {
                        pool: self,
                        session,
                        keep,
                        lent_at,
                    });
                }
                // Ended meanwhile (its runtime stopped): dropped.
                Some(session) => session.end_era(),
                None => break,
            }
        }
        let lent_at = self.ends.load(Ordering::Acquire);
        let session = new()?;
        session.lend_era();
        Some(KeptSession {
            pool: self,
            session,
            keep,
            lent_at,
        })
    }

    /// Ends the kept sessions (a kept session's runtime holds the session: it ends only
    /// when told).
    pub(super) fn end_all(&self) {
        let kept = {
            let mut idle = self.lock();
            // Under the lock: a lease handed back after this sees the new count.
            self.ends.fetch_add(1, Ordering::AcqRel);
            std::mem::take(&mut *idle)
        };
        for session in kept {
            session.end_era();
        }
    }

    /// How many idle sessions are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The idle session lent next.
    #[cfg(test)]
    pub(super) fn next(&self) -> Option<Arc<SessionState>> {
        self.lock().last().cloned()
    }
}

/// A session of the stateless era lent to one POST: handed back to its pool when the
/// POST ends (answered, or dropped with its connection), kept if it is idle.
pub(super) struct KeptSession<'a> {
    pool: &'a KeptSessions,
    session: Arc<SessionState>,
    /// Whether the POST's request leaves its session as it found it.
    keep: bool,
    /// The pool's count of ends when the session was lent.
    lent_at: u64,
}

impl KeptSession<'_> {
    /// The session lent.
    pub(super) fn session(&self) -> &Arc<SessionState> {
        &self.session
    }
}

impl Drop for KeptSession<'_> {
    fn drop(&mut self) {
        if !self.session.take_back_era(self.keep) {
            return;
        }
        let mut kept = self.pool.lock();
        let ended_since = self.pool.ends.load(Ordering::Acquire) != self.lent_at;
        if !ended_since && kept.len() < KEPT_ERA_SESSIONS {
            kept.push(self.session.clone());
        } else {
            drop(kept);
            self.session.end_era();
        }
    }
}
