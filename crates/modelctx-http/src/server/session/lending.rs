//! A session of the stateless era lent to one POST at a time by the endpoint's pool of
//! kept sessions (see [`kept`](crate::server::kept)): its answers do not end it while it
//! is kept.

use std::sync::atomic::Ordering;

use super::SessionState;

impl SessionState {
    /// Marks a new session of the stateless era as one its endpoint keeps between
    /// POSTs: its answers no longer end it; [`take_back_era`](Self::take_back_era) or
    /// [`end_era`](Self::end_era) does.
    pub(crate) fn lend_era(&self) {
        self.reusable.store(true, Ordering::Release);
    }

    /// The end of a POST a session of the stateless era was lent to: `true` when the
    /// session may serve the next POST (`keep`, still lendable — its answer did not
    /// stream — idle: nothing in flight, no stream open, and open). Otherwise it is no
    /// longer kept: it ends with its last answer, or now when it has none to give.
    pub(crate) fn take_back_era(&self, keep: bool) -> bool {
        let routes = self.routes();
        if keep
            && self.reusable.load(Ordering::Acquire)
            && routes.requests.is_empty()
            && routes.streams.is_empty()
            && self.is_open()
        {
            return true;
        }
        self.reusable.store(false, Ordering::Release);
        if routes.requests.is_empty() {
            self.finish_inbound();
        }
        false
    }

    /// Ends a session of the stateless era that is not kept (its endpoint has enough,
    /// or is gone): it takes no more messages.
    pub(crate) fn end_era(&self) {
        self.reusable.store(false, Ordering::Release);
        self.finish_inbound();
    }
}
