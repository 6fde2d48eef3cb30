//! The hold of a shared session's standalone (GET) stream, as the stream sees it: named
//! when a GET connects here, recorded or refused by the registry, released when its
//! connection ends, lost to a resumption elsewhere, and handed over; and the end of a
//! shared session for every service.
//!
//! What is routed here while the hold is being recorded waits behind it
//! (`StreamState::claiming`/`pending`), so one copy's messages keep their order; a shared
//! copy's backlog waits for the hold, not for the GET's head. A holder whose connection has
//! ended gives its hold up (`release_stream`, through the relay queue); so does a copy
//! that ends. A message the registry relayed to a hold that had ended is kept for the next
//! hold (`Claim::late`), first on it, here or handed over (see `hold.rs`).

use std::collections::VecDeque;
use std::sync::Arc;

use modelctx_types::JsonRpcMessage;

use super::hold::HAND_OVER_WAIT;
use super::registry::Relayed;
use super::state::{LastHold, SharedState, is_announcement};
use crate::server::event_store::EventId;
use crate::server::session::{Routes, STANDALONE, SessionState, StreamState};

impl SessionState {
    /// Ends a shared session for every service: its record goes (every service then
    /// answers 404), its stored events too, and every other copy is told to end, with
    /// the requests it holds. At most once: a copy that misses the word ends at its next
    /// request or keepalive, when it finds the record gone.
    pub(crate) async fn end_everywhere(&self, shared: &SharedState) {
        let registry = shared.registry();
        if let Err(e) = registry.remove(&self.id).await {
            self.report(format!("the session's record was not removed: {e}"));
        }
        if let Some(store) = &self.config.event_store {
            store.forget_session(&self.id);
        }
        let ended = Relayed::ended(self.id.to_string());
        if let Err(e) = registry.relay(None, ended).await {
            self.report(format!("the session's end was not relayed: {e}"));
        }
    }

    /// A shared session's standalone stream connected here: names the hold the service
    /// records next (see [`claiming_holder`](Self::claiming_holder)). A hold this
    /// copy had is replaced by it (same service).
    pub(crate) fn start_claim(&self, stream: &mut StreamState) {
        if let Some(shared) = &self.shared {
            let holder = shared.new_holder();
            stream.claim.last = Some(Box::new(LastHold {
                holder: holder.clone(),
                from: stream.next_seq,
                until: None,
            }));
            stream.claim.holder = Some(holder);
            stream.claim.recording = true;
        }
    }

    /// Where the last resumption of the standalone stream here left the client (the
    /// stream it named and the last event it has).
    pub(crate) fn replayed_to(&self) -> Option<EventId> {
        self.routes()
            .streams
            .get(&STANDALONE)
            .and_then(|s| s.claim.replayed_to)
    }

    /// Another service took the standalone stream over from `holder`, or opened it
    /// after `holder` was released (see
    /// [`RelayedKind::HandOver`](super::registry::RelayedKind::HandOver)). If `holder`
    /// is this copy's latest hold, its connection ends (what waited for the hold goes
    /// to the registry, as in [`unclaim`](Self::unclaim)), and the answer is what the
    /// new holder sends first: where to read what the hold sent that the client may
    /// not have (with `after`, the last event the client has, in a resumption: the
    /// events after the returned id and before the returned position, on this copy's
    /// standalone stream), and the messages relayed to the hold after its connection
    /// ended.
    pub(crate) fn let_go(
        &self,
        holder: &str,
        after: Option<EventId>,
    ) -> (Option<(EventId, u64)>, Vec<String>) {
        let mut routes = self.routes();
        let Some(stream) = routes.standalone() else {
            return (None, Vec::new());
        };
        let late = (stream.claim.late)
            .take_if(|late| &*late.holder == holder)
            .map_or_else(Vec::new, |late| late.messages.into());
        let Some(hold) = stream.claim.last.as_mut().filter(|h| &*h.holder == holder) else {
            return (None, late);
        };
        let until = *hold.until.get_or_insert(stream.next_seq);
        let from = match after {
            Some(after) if after.stream == self.stream_base => hold.from.max(after.seq + 1),
            Some(_) => hold.from,
            // A plain GET: the client reads nothing of the old connection again but
            // what never reached it (the backlog: the last events, which found the
            // connection ended).
            None => until.saturating_sub(stream.backlog.len() as u64),
        };
        // Events that found no connection: stored, and handed over from the store.
        stream.backlog.clear();
        let mut pending = VecDeque::new();
        if stream.claim.holder.as_deref() == Some(holder) {
            stream.claim.holder = None;
            stream.claim.recording = false;
            stream.conn = None;
            pending = std::mem::take(&mut stream.claim.pending);
        }
        drop(routes);
        self.pending_to_registry(pending);
        let stored = (from >= 1 && from < until).then_some((
            EventId {
                stream: self.stream_base,
                seq: from - 1,
            },
            until,
        ));
        (stored, late)
    }

    /// This copy ends with messages relayed to its ended hold still kept for the next
    /// hold: they go back to the registry (for the holder now, or kept for the next),
    /// since no hand-over will ask this copy for them.
    pub(crate) fn late_to_registry(&self, routes: &mut Routes) {
        if let Some(late) = routes.standalone().and_then(|s| s.claim.late.take()) {
            self.relayed_to_registry(late.messages);
        }
    }

    /// No hold asked for what reached `holder` late within the time a new GET and its
    /// hand-over take (its release was lost, say, and the hold lapsed): it goes back
    /// to the registry, for the holder now or kept for the next.
    fn late_unasked(&self, holder: &str) {
        let unasked = (self.routes().standalone())
            .and_then(|s| s.claim.late.take_if(|late| &*late.holder == holder));
        if let Some(late) = unasked {
            self.relayed_to_registry(late.messages);
        }
    }

    /// A hand-over's answer that came after this service stopped waiting for it:
    /// `events` go on the stream if `holder` still holds it here (after what it sent
    /// meanwhile), else back to the registry. Late, but not lost.
    pub(crate) fn deliver_handed(&self, holder: &str, events: Vec<String>) {
        let mut routes = self.routes();
        if standalone_claimed_by(&mut routes, holder).is_some() {
            for data in &events {
                self.deliver_standalone(&mut routes, data, false);
            }
        } else {
            drop(routes);
            self.relayed_to_registry(events);
        }
    }

    /// What waited for a hold that did not happen goes to the registry, which relays
    /// it to the holder.
    pub(crate) fn pending_to_registry(&self, pending: impl IntoIterator<Item = (String, bool)>) {
        if let Some(shared) = &self.shared {
            for (data, announcement) in pending {
                if !shared.to_client(&data, announcement) {
                    self.report("relay queue full, message for the GET stream dropped".into());
                }
            }
        }
    }

    /// Messages another service relayed (never announcements) go back to the
    /// registry, for the holder now or kept for the next.
    pub(crate) fn relayed_to_registry(&self, messages: impl IntoIterator<Item = String>) {
        self.pending_to_registry(messages.into_iter().map(|data| (data, false)));
    }

    /// The hold on the standalone stream being recorded, if any.
    pub(crate) fn claiming_holder(&self) -> Option<Arc<str>> {
        let routes = self.routes();
        let stream = routes.streams.get(&STANDALONE)?;
        stream
            .claim
            .recording
            .then(|| stream.claim.holder.clone())
            .flatten()
    }

    /// The hold `holder` is recorded: the messages `kept` for the stream while no
    /// service held it go out first, then what waited meanwhile.
    pub(crate) fn claimed(&self, holder: &Arc<str>, kept: Vec<String>) {
        let mut routes = self.routes();
        let Some(stream) = standalone_claimed_by(&mut routes, holder) else {
            let kept = kept.into_iter().map(|data| {
                let announcement = serde_json::from_str::<JsonRpcMessage>(&data)
                    .is_ok_and(|m| is_announcement(&m));
                (data, announcement)
            });
            if routes
                .standalone()
                .is_some_and(|s| s.claim.holder.is_some())
            {
                // Replaced meanwhile (the client reconnected): what was kept goes
                // behind what waits for the newer hold, whose recording delivers it.
                for (data, announcement) in kept {
                    self.deliver_standalone(&mut routes, &data, announcement);
                }
            } else {
                // Let go meanwhile (another service took the stream over): to the
                // registry, for the holder now.
                drop(routes);
                self.pending_to_registry(kept);
            }
            return;
        };
        stream.claim.recording = false;
        // Events that found no connection before: the channel is empty (what came
        // while claiming waited in `pending`) and holds as many as the backlog.
        if let Some(conn) = &stream.conn {
            for event in stream.backlog.drain(..) {
                let _ = conn.try_send(event);
            }
        }
        // What reached this copy's previous hold too late for it was relayed before
        // anything the registry kept since.
        let late = stream
            .claim
            .late
            .take()
            .map(|l| l.messages)
            .unwrap_or_default();
        let pending = std::mem::take(&mut stream.claim.pending);
        for data in late
            .iter()
            .chain(&kept)
            .chain(pending.iter().map(|(data, _)| data))
        {
            self.deliver(&mut routes, STANDALONE, data);
        }
    }

    /// The registry refused the hold `holder` (another service holds the GET stream):
    /// the connection opened for it ends unused, and what waited for it goes to the
    /// registry, which relays it to the holder.
    pub(crate) fn unclaim(&self, holder: &Arc<str>) {
        let mut routes = self.routes();
        let Some(stream) = standalone_claimed_by(&mut routes, holder) else {
            return;
        };
        stream.claim.holder = None;
        stream.claim.recording = false;
        stream.conn = None;
        // Never held: nothing was sent under it.
        if stream
            .claim
            .last
            .as_ref()
            .is_some_and(|h| &h.holder == holder)
        {
            stream.claim.last = None;
        }
        let pending = std::mem::take(&mut stream.claim.pending);
        drop(routes);
        self.pending_to_registry(pending);
    }

    /// Whether `holder` is this copy's recorded hold on a GET stream still connected.
    pub(crate) fn holds(&self, holder: &Arc<str>) -> bool {
        standalone_claimed_by(&mut self.routes(), holder).is_some_and(|s| s.has_live_conn())
    }

    /// The connection of hold `holder` has ended (its response body was dropped): the
    /// hold is given up at once, so a new GET may open the stream on any service.
    pub(crate) fn stream_gone(&self, holder: &Arc<str>) {
        let mut routes = self.routes();
        let Some(stream) = standalone_claimed_by(&mut routes, holder) else {
            return;
        };
        stream.conn = None;
        self.release_hold(&mut routes);
    }

    /// Another service took the GET stream over (a resumption there): the connection
    /// here ends, as a resumed connection's predecessor does on one service; what comes
    /// next goes to the new holder.
    pub(crate) fn lost_hold(&self, holder: &Arc<str>) {
        let mut routes = self.routes();
        if let Some(stream) = standalone_claimed_by(&mut routes, holder) {
            stream.claim.holder = None;
            stream.claim.recording = false;
            stream.conn = None;
            end_hold(stream);
        }
    }

    /// Whether the stream numbered `wire` in event ids is another service's standalone
    /// stream of this shared session (standalone streams are numbered by their base).
    pub(crate) fn foreign_standalone(&self, wire: u64) -> bool {
        self.shared.is_some() && wire != self.stream_base && wire != 0 && wire & 0xffff_ffff == 0
    }

    /// Delivers `data`, relayed by another service, on the GET stream, if it is open
    /// here. Otherwise (its connection ended, or another service took the stream
    /// over, after the registry relayed it here) the hold, if any, is released and
    /// `data` is kept for the next hold: first on it when it is here, handed over
    /// first when it is another service's (which asks this one: the registry names
    /// the released hold, see [`let_go`](Self::let_go)). Given back to the registry at
    /// once, it would go behind what the registry kept after the release; it goes
    /// there only when no hold asks for it within the lease and a hand-over's wait
    /// (the release was lost and the hold lapsed, say).
    pub(crate) fn deliver_relayed(self: &Arc<Self>, data: &str) {
        let mut routes = self.routes();
        if standalone_here(&routes) {
            // Relayed: never an announcement (the registry drops those while a
            // service holds the stream).
            self.deliver_standalone(&mut routes, data, false);
            return;
        }
        self.release_hold(&mut routes);
        let held = routes.standalone().and_then(|stream| {
            let holder = stream.claim.last.as_ref()?.holder.clone();
            Some((stream, holder))
        });
        let Some((stream, holder)) = held else {
            // No hold here to keep it for (one refused meanwhile): to the registry.
            drop(routes);
            self.relayed_to_registry([data.to_owned()]);
            return;
        };
        let first = stream
            .claim
            .late
            .as_ref()
            .is_none_or(|l| l.holder != holder);
        let (older, dropped) = stream
            .claim
            .keep_late(&holder, data, self.config.stream_queue);
        drop(routes);
        if let Some(older) = older {
            self.relayed_to_registry(older.messages);
        }
        if dropped {
            self.backlog_full();
        }
        if first {
            // What no hold asks for in time goes to the registry.
            let session = Arc::downgrade(self);
            let unasked = self.config.stream_lease + HAND_OVER_WAIT;
            tokio::spawn(async move {
                tokio::time::sleep(unasked).await;
                if let Some(session) = session.upgrade() {
                    session.late_unasked(&holder);
                }
            });
        }
    }

    /// Sends `data`, a message for the standalone stream, through the registry when the
    /// session is shared and its GET stream is not open here (`true`): to the service
    /// holding it, or kept for the next. `false`: it goes on the stream here.
    pub(crate) fn relay_standalone(
        &self,
        routes: &mut Routes,
        data: &str,
        announcement: bool,
    ) -> bool {
        match &self.shared {
            Some(shared) if !standalone_here(routes) => {
                self.to_registry(routes, shared, data, announcement);
                true
            }
            _ => false,
        }
    }

    /// `data` to the registry, for the GET stream's holder (or kept for the next), once
    /// the hold this copy may still name is released.
    fn to_registry(
        &self,
        routes: &mut Routes,
        shared: &SharedState,
        data: &str,
        announcement: bool,
    ) {
        self.release_claim(routes, shared);
        if !shared.to_client(data, announcement) {
            self.report("relay queue full, message for the GET stream dropped".into());
        }
    }

    /// Releases this copy's hold on the GET stream, when the session is shared and the
    /// hold is this copy's.
    pub(crate) fn release_hold(&self, routes: &mut Routes) {
        if let Some(shared) = &self.shared {
            self.release_claim(routes, shared);
        }
    }

    /// Releases this copy's hold on the GET stream (its connection ended), if it has
    /// one: later messages are kept in the registry for the next holder. True when it
    /// had one.
    fn release_claim(&self, routes: &mut Routes, shared: &SharedState) -> bool {
        let Some(stream) = routes.standalone() else {
            return false;
        };
        match stream.claim.holder.take() {
            Some(holder) => {
                stream.claim.recording = false;
                end_hold(stream);
                // Released once what the hold stored is readable by every service:
                // one that takes the stream over next reads it all.
                let flushed = match &self.config.event_store {
                    Some(store) => store.flushed(&self.id),
                    None => Box::pin(futures::future::ready(())),
                };
                shared.release(holder, flushed);
                true
            }
            None => false,
        }
    }
}

/// The standalone stream, if `holder` is its current hold here.
fn standalone_claimed_by<'r>(routes: &'r mut Routes, holder: &str) -> Option<&'r mut StreamState> {
    routes
        .standalone()
        .filter(|s| s.claim.holder.as_deref() == Some(holder))
}

/// The standalone stream's hold here ended: its last position is the one before
/// `next_seq`.
fn end_hold(stream: &mut StreamState) {
    if let Some(hold) = &mut stream.claim.last {
        hold.until.get_or_insert(stream.next_seq);
    }
}

/// Whether the standalone stream is connected here.
fn standalone_here(routes: &Routes) -> bool {
    routes
        .streams
        .get(&STANDALONE)
        .is_some_and(StreamState::has_live_conn)
}
