//! The sans-IO table of outbound requests awaiting their response.
//!
//! It allocates ids (positive integers, never reused in a session), holds one slot per
//! in-flight request, and routes progress tokens to their request. It does no I/O and
//! knows nothing of channels beyond the slot values it stores, so its races (a response
//! after cancellation, a response for an unknown id) are tested directly.

use std::collections::HashMap;

use modelctx_types::{ProgressToken, RequestId};
use tokio::time::Instant;

/// One in-flight request.
#[derive(Debug)]
struct Entry<S> {
    slot: S,
    /// Whether the request went on the wire.
    sent: bool,
    /// When it times out (set when it is sent).
    deadline: Option<Instant>,
    /// While its timeout is held (the transport waits on something other than the
    /// peer): the budget it had left.
    held: Option<std::time::Duration>,
    /// Whether the peer hears of its timeout with `notifications/cancelled` (not for
    /// `initialize`).
    notify_on_timeout: bool,
}

/// A request that timed out, taken out of the table.
#[derive(Debug)]
pub(crate) struct Expired<S> {
    pub(crate) id: i64,
    pub(crate) slot: S,
    /// Whether the peer must hear of it with `notifications/cancelled`.
    pub(crate) notify_peer: bool,
}

/// In-flight outbound requests, keyed by the ids this table allocated.
#[derive(Debug)]
pub(crate) struct PendingTable<S, P> {
    next_id: i64,
    slots: HashMap<i64, Entry<S>>,
    /// The deadline the session's timer is set for: no later than any deadline in the
    /// table. It stays set after its requests complete (so the next request, due later,
    /// needs no new timer) until the timer fires and [`expire`](Self::expire) resets it.
    armed: Option<Instant>,
    /// Progress token -> (request id, progress sink).
    progress: HashMap<ProgressToken, (i64, P)>,
}

impl<S, P> Default for PendingTable<S, P> {
    fn default() -> Self {
        Self {
            next_id: 1,
            slots: HashMap::new(),
            progress: HashMap::new(),
            armed: None,
        }
    }
}

impl<S, P> PendingTable<S, P> {
    /// Allocates a fresh id and stores `slot` under it.
    pub(crate) fn insert(&mut self, slot: S) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let entry = Entry {
            slot,
            sent: false,
            deadline: None,
            held: None,
            notify_on_timeout: false,
        };
        self.slots.insert(id, entry);
        id
    }

    /// Records that request `id` goes on the wire and times out at `deadline`. `None`
    /// when it is no longer in flight (cancelled, or the session closed, before it could
    /// be sent); else whether the timer must be set earlier (to `deadline`).
    pub(crate) fn mark_sent(
        &mut self,
        id: i64,
        deadline: Instant,
        notify_on_timeout: bool,
    ) -> Option<bool> {
        let entry = self.slots.get_mut(&id)?;
        entry.sent = true;
        entry.deadline = Some(deadline);
        entry.notify_on_timeout = notify_on_timeout;
        Some(self.arm(deadline))
    }

    /// Holds request `id`'s timeout: its deadline is put aside with the budget it had
    /// left. Nothing for an unknown, unsent or already held request.
    pub(crate) fn hold(&mut self, id: i64, now: Instant) {
        if let Some(entry) = self.slots.get_mut(&id)
            && let Some(deadline) = entry.deadline.take()
        {
            entry.held = Some(deadline.saturating_duration_since(now));
        }
    }

    /// Restarts a held timeout with the budget it had left; whether the timer must be
    /// set earlier.
    pub(crate) fn release(&mut self, id: i64, now: Instant) -> bool {
        match self.slots.get_mut(&id) {
            Some(entry) => match entry.held.take() {
                Some(left) => {
                    let deadline = now + left;
                    entry.deadline = Some(deadline);
                    self.arm(deadline)
                }
                None => false,
            },
            None => false,
        }
    }

    /// Moves request `id`'s deadline (a progress update restarted its timeout); whether
    /// the timer must be set earlier.
    pub(crate) fn set_deadline(&mut self, id: i64, deadline: Instant) -> bool {
        match self.slots.get_mut(&id) {
            // A held timeout stays held; the budget it resumes with is the new one.
            Some(entry) if entry.held.is_some() => {
                entry.held = Some(deadline.saturating_duration_since(Instant::now()));
                false
            }
            Some(entry) => {
                entry.deadline = Some(deadline);
                self.arm(deadline)
            }
            None => false,
        }
    }

    fn arm(&mut self, deadline: Instant) -> bool {
        let earlier = self.armed.is_none_or(|armed| deadline < armed);
        if earlier {
            self.armed = Some(deadline);
        }
        earlier
    }

    /// The deadline the session's timer should wait for.
    pub(crate) fn armed(&self) -> Option<Instant> {
        self.armed
    }

    /// Takes out every request due by `now`, and sets the timer for the earliest
    /// deadline left (or none).
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<Expired<S>> {
        let due: Vec<i64> = self
            .slots
            .iter()
            .filter(|(_, e)| e.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        let expired = due
            .into_iter()
            .filter_map(|id| {
                let entry = self.take_entry(id)?;
                Some(Expired {
                    id,
                    notify_peer: entry.sent && entry.notify_on_timeout,
                    slot: entry.slot,
                })
            })
            .collect();
        self.armed = self.slots.values().filter_map(|e| e.deadline).min();
        expired
    }

    /// Routes progress notifications carrying `token` to request `id` until it completes.
    pub(crate) fn route_progress(&mut self, token: ProgressToken, id: i64, sink: P) {
        self.progress.insert(token, (id, sink));
    }

    /// Takes the slot of a response's id. An id this table never allocated, or one already
    /// completed or cancelled, yields `None`: the response is ignored.
    pub(crate) fn complete(&mut self, id: &RequestId) -> Option<S> {
        match id {
            RequestId::Number(n) => self.remove(*n),
            RequestId::String(_) => None,
        }
    }

    /// Removes request `id` (completion, cancellation, timeout) and its progress route.
    pub(crate) fn remove(&mut self, id: i64) -> Option<S> {
        self.take(id).map(|(slot, _)| slot)
    }

    /// Removes request `id` like [`remove`](Self::remove), also telling whether it had
    /// been sent (so whether the peer must hear of its cancellation).
    pub(crate) fn take(&mut self, id: i64) -> Option<(S, bool)> {
        self.take_entry(id).map(|e| (e.slot, e.sent))
    }

    fn take_entry(&mut self, id: i64) -> Option<Entry<S>> {
        let entry = self.slots.remove(&id)?;
        if !self.progress.is_empty() {
            self.progress.retain(|_, (rid, _)| *rid != id);
        }
        Some(entry)
    }

    /// The progress sink for `token`, while its request is in flight.
    pub(crate) fn progress_sink(&self, token: &ProgressToken) -> Option<&P> {
        self.progress.get(token).map(|(_, sink)| sink)
    }

    /// Whether request `id` is still in flight.
    #[cfg(test)]
    pub(crate) fn contains(&self, id: i64) -> bool {
        self.slots.contains_key(&id)
    }

    /// Removes every slot (the transport closed).
    pub(crate) fn drain(&mut self) -> Vec<S> {
        self.progress.clear();
        self.slots.drain().map(|(_, e)| e.slot).collect()
    }

    /// The number of requests in flight.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Table = PendingTable<&'static str, u8>;

    #[test]
    fn ids_are_unique_increasing_and_never_reused() {
        let mut t = Table::default();
        let a = t.insert("a");
        let b = t.insert("b");
        assert!(b > a && a > 0);
        assert_eq!(t.remove(a), Some("a"));
        let c = t.insert("c");
        assert!(c > b, "a removed id is not reused");
    }

    #[test]
    fn completion_takes_the_slot_once() {
        let mut t = Table::default();
        let id = t.insert("x");
        assert_eq!(t.complete(&RequestId::Number(id)), Some("x"));
        assert_eq!(
            t.complete(&RequestId::Number(id)),
            None,
            "a second response is ignored"
        );
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn unknown_and_string_ids_complete_nothing() {
        let mut t = Table::default();
        let id = t.insert("x");
        assert_eq!(t.complete(&RequestId::Number(id + 100)), None);
        assert_eq!(t.complete(&RequestId::from(id.to_string())), None);
        assert!(
            t.contains(id),
            "an unrelated response leaves the request pending"
        );
    }

    #[test]
    fn a_slot_remembers_whether_it_was_sent() {
        let mut t = Table::default();
        let a = t.insert("a");
        let b = t.insert("b");
        let soon = Instant::now();
        assert!(t.mark_sent(a, soon, true).is_some());
        assert_eq!(t.take(a), Some(("a", true)));
        assert_eq!(t.take(b), Some(("b", false)));
        assert!(
            t.mark_sent(b, soon, true).is_none(),
            "a removed request cannot be marked sent"
        );
    }

    #[test]
    fn the_timer_is_set_only_for_an_earlier_deadline_and_kept_after_completion() {
        let mut t = Table::default();
        let now = Instant::now();
        let sec = |n: u64| now + std::time::Duration::from_secs(n);
        let a = t.insert("a");
        let b = t.insert("b");
        let c = t.insert("c");
        assert_eq!(t.mark_sent(a, sec(10), true), Some(true), "first deadline");
        assert_eq!(
            t.mark_sent(b, sec(20), false),
            Some(false),
            "later: no timer"
        );
        assert_eq!(t.armed(), Some(sec(10)));
        t.complete(&RequestId::Number(a));
        assert_eq!(
            t.armed(),
            Some(sec(10)),
            "kept: the next request needs no timer"
        );
        assert_eq!(
            t.mark_sent(c, sec(5), true),
            Some(true),
            "earlier: timer moves"
        );
        assert!(
            !t.set_deadline(c, sec(30)),
            "a later deadline needs no timer"
        );

        // Nothing is due before its deadline; the timer moves to the earliest left.
        assert!(t.expire(sec(19)).is_empty());
        assert_eq!(t.armed(), Some(sec(20)));
        let due = t.expire(sec(20));
        assert_eq!(due.len(), 1);
        assert_eq!(
            (due[0].id, due[0].slot, due[0].notify_peer),
            (b, "b", false)
        );
        assert_eq!(t.armed(), Some(sec(30)));
        let due = t.expire(sec(31));
        assert_eq!((due[0].id, due[0].notify_peer), (c, true));
        assert_eq!(t.armed(), None, "nothing left to time");
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_held_timeout_resumes_with_the_budget_it_had_left() {
        use std::time::Duration;
        let mut t: PendingTable<u8, ()> = PendingTable::default();
        let start = Instant::now();
        let a = t.insert(1);
        t.mark_sent(a, start + Duration::from_secs(10), true);
        t.hold(a, start + Duration::from_secs(4));
        // Held: nothing expires, however late.
        assert!(t.expire(start + Duration::from_secs(100)).is_empty());
        // Released at 100 s with the 6 s it had left.
        assert!(t.release(a, start + Duration::from_secs(100)));
        assert!(t.expire(start + Duration::from_secs(105)).is_empty());
        assert_eq!(t.expire(start + Duration::from_secs(106)).len(), 1);
    }

    #[test]
    fn an_unsent_request_never_times_out() {
        let mut t = Table::default();
        let a = t.insert("a");
        assert!(t.expire(Instant::now()).is_empty());
        assert!(t.contains(a));
    }

    #[test]
    fn a_response_after_cancellation_is_dropped() {
        let mut t = Table::default();
        let id = t.insert("x");
        assert_eq!(t.remove(id), Some("x"));
        assert_eq!(t.complete(&RequestId::Number(id)), None);
    }

    #[test]
    fn progress_routes_only_while_in_flight() {
        let mut t = Table::default();
        let a = t.insert("a");
        let b = t.insert("b");
        t.route_progress(ProgressToken::Number(a), a, 1);
        t.route_progress(ProgressToken::Number(b), b, 2);
        assert_eq!(t.progress_sink(&ProgressToken::Number(a)), Some(&1));
        assert_eq!(t.progress_sink(&ProgressToken::Number(b)), Some(&2));
        t.complete(&RequestId::Number(a));
        assert_eq!(t.progress_sink(&ProgressToken::Number(a)), None);
        assert_eq!(t.progress_sink(&ProgressToken::Number(b)), Some(&2));
    }

    #[test]
    fn drain_empties_everything() {
        let mut t = Table::default();
        let a = t.insert("a");
        t.route_progress(ProgressToken::Number(a), a, 1);
        t.insert("b");
        let mut all = t.drain();
        all.sort();
        assert_eq!(all, vec!["a", "b"]);
        assert_eq!(t.progress_sink(&ProgressToken::Number(a)), None);
    }
}
