//! Holding an outbound request's timeout while it waits on something that is not the
//! peer: a user at an authorization server, say.

use std::future::Future;
use std::sync::{Arc, Weak};

use modelctx_types::RequestId;

/// The timeouts of a session's outbound requests, as the session keeps them. A session
/// offers it to its transport ([`MessageStream::offer_clocks`](crate::MessageStream::offer_clocks)).
pub trait RequestClocks: Send + Sync + 'static {
    /// Stops request `id`'s timeout, keeping the budget it had left (nothing for an
    /// unknown or finished request, or one already held).
    fn pause(&self, id: &RequestId);
    /// Restarts it with that budget.
    fn resume(&self, id: &RequestId);
}

/// One request's timeout, for a transport to [`pause`](Self::paused) while the request
/// waits on something other than the peer. Holds nothing once the session is gone.
#[derive(Clone)]
pub struct RequestClock {
    clocks: Weak<dyn RequestClocks>,
    id: RequestId,
}

modelctx_types::__debug_shows!(RequestClock, |v| { id: &v.id });

impl RequestClock {
    /// Request `id`'s timeout in `clocks`.
    pub fn new(clocks: &Arc<dyn RequestClocks>, id: RequestId) -> Self {
        Self {
            clocks: Arc::downgrade(clocks),
            id,
        }
    }

    /// Request `id`'s timeout in the clocks `clocks` points to (a transport keeps the
    /// session's clocks weakly).
    pub fn from_weak(clocks: Weak<dyn RequestClocks>, id: RequestId) -> Self {
        Self { clocks, id }
    }

    /// A clock that holds nothing (no session offered one).
    pub fn none(id: RequestId) -> Self {
        let clocks: Weak<dyn RequestClocks> = Weak::<NoClocks>::new();
        Self { clocks, id }
    }

    /// The request.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Runs `work` with the request's timeout stopped: it restarts, with what was left,
    /// when `work` finishes or is dropped.
    pub async fn paused<F: Future>(&self, work: F) -> F::Output {
        let _held = Held::new(self);
        work.await
    }
}

/// Keeps a request's timeout stopped until dropped.
struct Held<'a>(&'a RequestClock);

impl<'a> Held<'a> {
    fn new(clock: &'a RequestClock) -> Self {
        if let Some(clocks) = clock.clocks.upgrade() {
            clocks.pause(&clock.id);
        }
        Self(clock)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(clocks) = self.0.clocks.upgrade() {
            clocks.resume(&self.0.id);
        }
    }
}

struct NoClocks;

impl RequestClocks for NoClocks {
    fn pause(&self, _: &RequestId) {}
    fn resume(&self, _: &RequestId) {}
}
