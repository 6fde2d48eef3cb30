//! The sans-IO table of outbound requests awaiting their response.
//!
//! It allocates ids (positive integers, never reused in a session), takes ids a caller
//! chose (refused when they could repeat one), holds one slot per in-flight request, and
//! routes progress tokens to their request. It does no I/O and
//! knows nothing of channels beyond the slot values it stores, so its races (a response
//! after cancellation, a response for an unknown id) are tested directly.
//!
//! The table is keyed by `RequestId`, not by the allocated number: a caller may choose a
//! request's id (`RequestOptions::id`, string or number; it is then the wire id, so a
//! `subscriptions/listen` stream is known by it before any answer). A chosen id is refused
//! locally when one like it is in flight, or when it is a number at or below the allocator
//! (the session may have used it, and ids never repeat); a higher number moves the
//! allocator past it. The progress token of a request is its id. Each entry holds its
//! request's deadline and whether it went on the wire; the table keeps the one deadline the
//! session's timer is set for.

use std::collections::HashMap;
use std::sync::Arc;

use modelctx_store::table::shrink_drained;
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

impl<S> Entry<S> {
    fn new(slot: S) -> Self {
        Self {
            slot,
            sent: false,
            deadline: None,
            held: None,
            notify_on_timeout: false,
        }
    }
}

/// A request that timed out, taken out of the table.
#[derive(Debug)]
pub(crate) struct Expired<S> {
    pub(crate) id: RequestId,
    pub(crate) slot: S,
    /// Whether the peer must hear of it with `notifications/cancelled`.
    pub(crate) notify_peer: bool,
}

/// Why a caller's id was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdRefused {
    /// A request with this id is in flight.
    InFlight,
    /// A number this table may already have used (ids never repeat in a session).
    MayRepeat,
}

/// In-flight outbound requests, keyed by their ids: the ones this table allocated and
/// the ones callers chose.
///
/// Keyed by [`RequestId`] rather than by allocated numbers: a caller's id is the id on
/// the wire (a `subscriptions/listen` stream is known by it), so the table must find a
/// response by it. Hashing the enum costs next to nothing over an `i64` (measured with
/// the in-memory and stdio bench rows).
#[derive(Debug)]
pub(crate) struct PendingTable<S, P> {
    next_id: i64,
    /// Allocated ids are `"<prefix><n>"` strings when set (a transport that must tell
    /// where a response belongs, see `TransportInfo::request_id_prefix`).
    prefix: Option<Arc<str>>,
    slots: HashMap<RequestId, Entry<S>>,
    /// The deadline the session's timer is set for: no later than any deadline in the
    /// table. It stays set after its requests complete (so the next request, due later,
    /// needs no new timer) until the timer fires and [`expire`](Self::expire) resets it.
    armed: Option<Instant>,
    /// Progress token -> (request id, progress sink).
    progress: HashMap<ProgressToken, (RequestId, P)>,
}

impl<S, P> Default for PendingTable<S, P> {
    fn default() -> Self {
        Self {
            next_id: 1,
            prefix: None,
            slots: HashMap::new(),
            progress: HashMap::new(),
            armed: None,
        }
    }
}

impl<S, P> PendingTable<S, P> {
    /// A table whose allocated ids are the strings `"<prefix><n>"`.
    pub(crate) fn with_id_prefix(prefix: Option<Arc<str>>) -> Self {
        Self {
            prefix,
            ..Self::default()
        }
    }

    /// Allocates a fresh id and stores `slot` under it.
    pub(crate) fn insert(&mut self, slot: S) -> RequestId {
        let id = loop {
            let n = self.next_id;
            self.next_id += 1;
            match &self.prefix {
                None => break RequestId::Number(n),
                Some(prefix) => {
                    let id = RequestId::String(format!("{prefix}{n}").into());
                    // A caller may have chosen this string: the next number, then.
                    if !self.slots.contains_key(&id) {
                        break id;
                    }
                }
            }
        };
        self.slots.insert(id.clone(), Entry::new(slot));
        id
    }

    /// Stores `slot` under the id a caller chose. Refused when a request with that id is
    /// in flight, or for a number at or below one this table may have used (allocated
    /// ids and earlier caller numbers): a session never repeats an id. A number above
    /// them moves allocation past it. (A string id is only checked against the ids in
    /// flight: the table does not remember every string it saw.)
    pub(crate) fn insert_with_id(&mut self, id: RequestId, slot: S) -> Result<(), IdRefused> {
        if self.slots.contains_key(&id) {
            return Err(IdRefused::InFlight);
        }
        if let RequestId::Number(n) = id {
            if n < self.next_id {
                return Err(IdRefused::MayRepeat);
            }
            self.next_id = n.saturating_add(1);
        }
        self.slots.insert(id, Entry::new(slot));
        Ok(())
    }

    /// Records that request `id` goes on the wire and times out at `deadline`. `None`
    /// when it is no longer in flight (cancelled, or the session closed, before it could
    /// be sent); else whether the timer must be set earlier (to `deadline`).
    pub(crate) fn mark_sent(
        &mut self,
        id: &RequestId,
        deadline: Instant,
        notify_on_timeout: bool,
    ) -> Option<bool> {
        let entry = self.slots.get_mut(id)?;
        entry.sent = true;
        entry.deadline = Some(deadline);
        entry.notify_on_timeout = notify_on_timeout;
        Some(self.arm(deadline))
    }

    /// Holds request `id`'s timeout: its deadline is put aside with the budget it had
    /// left. Nothing for an unknown, unsent or already held request.
    pub(crate) fn hold(&mut self, id: &RequestId, now: Instant) {
        if let Some(entry) = self.slots.get_mut(id)
            && let Some(deadline) = entry.deadline.take()
        {
            entry.held = Some(deadline.saturating_duration_since(now));
        }
    }

    /// Restarts a held timeout with the budget it had left; whether the timer must be
    /// set earlier.
    pub(crate) fn release(&mut self, id: &RequestId, now: Instant) -> bool {
        match self.slots.get_mut(id) {
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
    pub(crate) fn set_deadline(&mut self, id: &RequestId, deadline: Instant) -> bool {
        match self.slots.get_mut(id) {
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
        let due: Vec<RequestId> = self
            .slots
            .iter()
            .filter(|(_, e)| e.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        let expired = due
            .into_iter()
            .filter_map(|id| {
                let entry = self.take_entry(&id)?;
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
    pub(crate) fn route_progress(&mut self, token: ProgressToken, id: RequestId, sink: P) {
        self.progress.insert(token, (id, sink));
    }

    /// Takes the slot of a response's id. An id this table never allocated, or one already
    /// completed or cancelled, yields `None`: the response is ignored.
    pub(crate) fn complete(&mut self, id: &RequestId) -> Option<S> {
        self.remove(id)
    }

    /// Removes request `id` (completion, cancellation, timeout) and its progress route.
    pub(crate) fn remove(&mut self, id: &RequestId) -> Option<S> {
        self.take(id).map(|(slot, _)| slot)
    }

    /// Removes request `id` like [`remove`](Self::remove), also telling whether it had
    /// been sent (so whether the peer must hear of its cancellation).
    pub(crate) fn take(&mut self, id: &RequestId) -> Option<(S, bool)> {
        self.take_entry(id).map(|e| (e.slot, e.sent))
    }

    fn take_entry(&mut self, id: &RequestId) -> Option<Entry<S>> {
        let entry = self.slots.remove(id)?;
        shrink_drained(&mut self.slots);
        if !self.progress.is_empty() {
            self.progress.retain(|_, (rid, _)| rid != id);
            shrink_drained(&mut self.progress);
        }
        Some(entry)
    }

    /// The progress sink for `token`, while its request is in flight.
    pub(crate) fn progress_sink(&self, token: &ProgressToken) -> Option<&P> {
        self.progress.get(token).map(|(_, sink)| sink)
    }

    /// Whether request `id` is still in flight.
    #[cfg(test)]
    pub(crate) fn contains(&self, id: &RequestId) -> bool {
        self.slots.contains_key(id)
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

    fn n(id: &RequestId) -> i64 {
        match id {
            RequestId::Number(n) => *n,
            RequestId::String(_) => panic!("an allocated id is a number"),
        }
    }

    #[test]
    fn a_prefix_makes_allocated_ids_strings_that_skip_a_callers_choice() {
        let mut t = Table::with_id_prefix(Some(Arc::from("i7/")));
        assert_eq!(t.insert("a"), RequestId::from("i7/1"));
        assert_eq!(t.insert_with_id(RequestId::from("i7/2"), "mine"), Ok(()));
        assert_eq!(t.insert("b"), RequestId::from("i7/3"));
        assert_eq!(t.complete(&RequestId::from("i7/2")), Some("mine"));
    }

    #[test]
    fn the_table_gives_its_room_back_as_requests_end() {
        let mut t = Table::default();
        let ids: Vec<_> = (0..5_000).map(|_| t.insert("a")).collect();
        assert!(t.slots.capacity() >= 5_000);
        for id in &ids {
            assert_eq!(t.complete(id), Some("a"));
        }
        assert_eq!(t.slots.capacity(), 0);
    }

    #[test]
    fn ids_are_unique_increasing_and_never_reused() {
        let mut t = Table::default();
        let a = t.insert("a");
        let b = t.insert("b");
        assert!(n(&b) > n(&a) && n(&a) > 0);
        assert_eq!(t.remove(&a), Some("a"));
        let c = t.insert("c");
        assert!(n(&c) > n(&b), "a removed id is not reused");
    }

    #[test]
    fn a_callers_id_is_taken_unless_it_could_repeat_one() {
        let mut t = Table::default();
        let a = t.insert("a");
        let mine = RequestId::from("mine");
        assert_eq!(t.insert_with_id(mine.clone(), "s"), Ok(()));
        assert_eq!(
            t.insert_with_id(mine.clone(), "s2"),
            Err(IdRefused::InFlight)
        );
        assert_eq!(t.insert_with_id(a.clone(), "x"), Err(IdRefused::InFlight));
        assert_eq!(
            t.insert_with_id(RequestId::Number(0), "x"),
            Err(IdRefused::MayRepeat),
            "below the allocator: it may have been used"
        );
        assert_eq!(t.insert_with_id(RequestId::Number(40), "n"), Ok(()));
        assert_eq!(
            n(&t.insert("b")),
            41,
            "allocation moves past a caller's number"
        );
        assert_eq!(t.complete(&mine), Some("s"));
        assert_eq!(t.complete(&RequestId::Number(40)), Some("n"));
        assert_eq!(
            t.insert_with_id(mine.clone(), "again"),
            Ok(()),
            "a string is free again once its request ended"
        );
    }

    #[test]
    fn completion_takes_the_slot_once() {
        let mut t = Table::default();
        let id = t.insert("x");
        assert_eq!(t.complete(&id), Some("x"));
        assert_eq!(t.complete(&id), None, "a second response is ignored");
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn unknown_ids_complete_nothing() {
        let mut t = Table::default();
        let id = t.insert("x");
        assert_eq!(t.complete(&RequestId::Number(n(&id) + 100)), None);
        assert_eq!(t.complete(&RequestId::from(n(&id).to_string())), None);
        assert!(
            t.contains(&id),
            "an unrelated response leaves the request pending"
        );
    }

    #[test]
    fn a_slot_remembers_whether_it_was_sent() {
        let mut t = Table::default();
        let a = t.insert("a");
        let b = t.insert("b");
        let soon = Instant::now();
        assert!(t.mark_sent(&a, soon, true).is_some());
        assert_eq!(t.take(&a), Some(("a", true)));
        assert_eq!(t.take(&b), Some(("b", false)));
        assert!(
            t.mark_sent(&b, soon, true).is_none(),
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
        assert_eq!(t.mark_sent(&a, sec(10), true), Some(true), "first deadline");
        assert_eq!(
            t.mark_sent(&b, sec(20), false),
            Some(false),
            "later: no timer"
        );
        assert_eq!(t.armed(), Some(sec(10)));
        t.complete(&a);
        assert_eq!(
            t.armed(),
            Some(sec(10)),
            "kept: the next request needs no timer"
        );
        assert_eq!(
            t.mark_sent(&c, sec(5), true),
            Some(true),
            "earlier: timer moves"
        );
        assert!(
            !t.set_deadline(&c, sec(30)),
            "a later deadline needs no timer"
        );

        // Nothing is due before its deadline; the timer moves to the earliest left.
        assert!(t.expire(sec(19)).is_empty());
        assert_eq!(t.armed(), Some(sec(20)));
        let due = t.expire(sec(20));
        assert_eq!(due.len(), 1);
        assert_eq!(
            (due[0].id.clone(), due[0].slot, due[0].notify_peer),
            (b, "b", false)
        );
        assert_eq!(t.armed(), Some(sec(30)));
        let due = t.expire(sec(31));
        assert_eq!((due[0].id.clone(), due[0].notify_peer), (c, true));
        assert_eq!(t.armed(), None, "nothing left to time");
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_held_timeout_resumes_with_the_budget_it_had_left() {
        use std::time::Duration;
        let mut t: PendingTable<u8, ()> = PendingTable::default();
        let start = Instant::now();
        let a = t.insert(1);
        t.mark_sent(&a, start + Duration::from_secs(10), true);
        t.hold(&a, start + Duration::from_secs(4));
        // Held: nothing expires, however late.
        assert!(t.expire(start + Duration::from_secs(100)).is_empty());
        // Released at 100 s with the 6 s it had left.
        assert!(t.release(&a, start + Duration::from_secs(100)));
        assert!(t.expire(start + Duration::from_secs(105)).is_empty());
        assert_eq!(t.expire(start + Duration::from_secs(106)).len(), 1);
    }

    #[test]
    fn an_unsent_request_never_times_out() {
        let mut t = Table::default();
        let a = t.insert("a");
        assert!(t.expire(Instant::now()).is_empty());
        assert!(t.contains(&a));
    }

    #[test]
    fn a_response_after_cancellation_is_dropped() {
        let mut t = Table::default();
        let id = t.insert("x");
        assert_eq!(t.remove(&id), Some("x"));
        assert_eq!(t.complete(&id), None);
    }

    #[test]
    fn progress_routes_only_while_in_flight() {
        let mut t = Table::default();
        let a = t.insert("a");
        let b = t.insert("b");
        t.route_progress(ProgressToken::Number(n(&a)), a.clone(), 1);
        t.route_progress(ProgressToken::Number(n(&b)), b.clone(), 2);
        assert_eq!(t.progress_sink(&ProgressToken::Number(n(&a))), Some(&1));
        assert_eq!(t.progress_sink(&ProgressToken::Number(n(&b))), Some(&2));
        t.complete(&a);
        assert_eq!(t.progress_sink(&ProgressToken::Number(n(&a))), None);
        assert_eq!(t.progress_sink(&ProgressToken::Number(n(&b))), Some(&2));
    }

    #[test]
    fn drain_empties_everything() {
        let mut t = Table::default();
        let a = t.insert("a");
        t.route_progress(ProgressToken::Number(n(&a)), a.clone(), 1);
        t.insert("b");
        let mut all = t.drain();
        all.sort();
        assert_eq!(all, vec!["a", "b"]);
        assert_eq!(t.progress_sink(&ProgressToken::Number(n(&a))), None);
    }
}
