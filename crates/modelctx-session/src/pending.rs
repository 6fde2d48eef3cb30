//! The sans-IO table of outbound requests awaiting their response.
//!
//! It allocates ids (positive integers, never reused in a session), holds one slot per
//! in-flight request, and routes progress tokens to their request. It does no I/O and
//! knows nothing of channels beyond the slot values it stores, so its races (a response
//! after cancellation, a response for an unknown id) are tested directly.

use std::collections::HashMap;

use modelctx_types::{ProgressToken, RequestId};

/// In-flight outbound requests, keyed by the ids this table allocated.
#[derive(Debug)]
pub(crate) struct PendingTable<S, P> {
    next_id: i64,
    /// Request id -> (slot, whether the request went on the wire).
    slots: HashMap<i64, (S, bool)>,
    /// Progress token -> (request id, progress sink).
    progress: HashMap<ProgressToken, (i64, P)>,
}

impl<S, P> Default for PendingTable<S, P> {
    fn default() -> Self {
        Self {
            next_id: 1,
            slots: HashMap::new(),
            progress: HashMap::new(),
        }
    }
}

impl<S, P> PendingTable<S, P> {
    /// Allocates a fresh id and stores `slot` under it.
    pub(crate) fn insert(&mut self, slot: S) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.slots.insert(id, (slot, false));
        id
    }

    /// Records that request `id` went on the wire; `false` when it is no longer in flight
    /// (cancelled, or the session closed, before it could be sent).
    pub(crate) fn mark_sent(&mut self, id: i64) -> bool {
        match self.slots.get_mut(&id) {
            Some((_, sent)) => {
                *sent = true;
                true
            }
            None => false,
        }
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
        self.slots.drain().map(|(_, (s, _))| s).collect()
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
        assert!(t.mark_sent(a));
        assert_eq!(t.take(a), Some(("a", true)));
        assert_eq!(t.take(b), Some(("b", false)));
        assert!(!t.mark_sent(b), "a removed request cannot be marked sent");
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
