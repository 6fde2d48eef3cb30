//! The answers a session gives: the SSE stream (or JSON bodies) answering a POST's
//! requests, the standalone GET stream, and their resumption from the event store.
//!
//! Per-connection queues are bounded: a reader that falls behind is disconnected and
//! resumes from the `EventStore`. Event ids are `stream-seq` (stream 0 is the GET stream),
//! and every stream starts with a priming event carrying `retry`.
//!
//! `EventStore::store` and `forget_session` are synchronous, called under the session's
//! routing mutex (a remote store queues them and writes behind); `replay_after` returns a
//! future awaited with no lock held, so a store may read over the network. A resumption
//! reads the store, *then* puts the new connection in place and notes the stream's next
//! sequence number (the cutoff); if events were routed while it read (to the replaced
//! connection, or nowhere) it reads once more up to the cutoff. Everything from the cutoff
//! on goes to the new connection, so each event reaches the client once, in order. This
//! needs the store's contract: a replay reflects every `store` made before it (a
//! write-behind store sends reads through its write queue), and `EventStore::flushed`
//! resolves once every earlier `store` is readable from any service.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::StreamExt;
use modelctx_types::RequestId;
use tokio::sync::oneshot;

use super::{
    Answer, EraAnswer, Ready, Route, Routes, STANDALONE, SessionState, StreamState, chain, queue,
};
use crate::server::event_store::EventId;

impl SessionState {
    /// Opens the answer for a POST carrying `ids` (SSE stream or JSON waiters).
    pub(crate) fn open_answer(&self, ids: &[RequestId]) -> Answer {
        let mut routes = self.routes();
        if self.config.json_response {
            let mut waiter = |id: &RequestId| {
                let (tx, rx) = oneshot::channel();
                routes.requests.insert(id.clone(), Route::Json(tx));
                rx
            };
            let first = ids.first().map(&mut waiter);
            let rest = ids.iter().skip(1).map(waiter).collect();
            return Answer::Json(first, rest);
        }
        let stream_id = routes.next_stream;
        routes.next_stream += 1;
        for id in ids {
            routes.requests.insert(id.clone(), Route::Sse(stream_id));
        }
        let (tx, rx) = queue(self.config.stream_queue);
        let (handled_tx, handled) = oneshot::channel();
        let mut stream = StreamState {
            open_requests: ids.len(),
            conn: Some(tx),
            handled: Some(handled_tx),
            ..StreamState::default()
        };
        let first: Ready = self.priming(stream_id, &mut stream).into_iter().collect();
        routes.streams.insert(stream_id, stream);
        Answer::Sse {
            events: chain(first, rx),
            stream: stream_id,
            handled,
        }
    }

    /// Opens the answer of a request of the stateless era (see [`Route::Era`]): no
    /// stream yet, only the receiver of what the answer becomes.
    pub(crate) fn open_era_answer(&self, id: &RequestId) -> oneshot::Receiver<EraAnswer> {
        let (tx, rx) = oneshot::channel();
        self.routes().requests.insert(id.clone(), Route::Era(tx));
        rx
    }

    /// What the answer opened with [`open_era_answer`](Self::open_era_answer) has
    /// become, now that its POST's head is due: its response, or a stream — the one its
    /// first message built, or, for a request still running with nothing sent, one
    /// built now. `None` when the request was dropped unanswered (the session ended).
    pub(crate) fn settle_era_answer(
        &self,
        id: &RequestId,
        mut answer: oneshot::Receiver<EraAnswer>,
    ) -> Option<EraAnswer> {
        {
            let mut routes = self.routes();
            if let Some(Route::Era(_)) = routes.requests.get(id) {
                let (_, events) = self.open_stream(&mut routes, id);
                return Some(EraAnswer::Stream(events));
            }
        }
        // Whatever settled it did so under the routes' lock: it is in the channel.
        answer.try_recv().ok()
    }

    /// Turns request `id`'s [`Route::Era`] into an SSE stream of its own (nothing is
    /// primed: a session of the era is not resumable): the stream's id and events.
    pub(crate) fn open_stream(
        &self,
        routes: &mut Routes,
        id: &RequestId,
    ) -> (u64, futures::stream::BoxStream<'static, Bytes>) {
        // A session whose answer streams is not lent again: the stream's end (or its
        // client's leaving it) concerns its request's id, which may name a later
        // request by then.
        self.reusable.store(false, Ordering::Release);
        let stream_id = routes.next_stream;
        routes.next_stream += 1;
        let (tx, rx) = queue(self.config.stream_queue);
        routes.streams.insert(
            stream_id,
            StreamState {
                open_requests: 1,
                conn: Some(tx),
                ..StreamState::default()
            },
        );
        routes.requests.insert(id.clone(), Route::Sse(stream_id));
        (stream_id, chain(Vec::new(), rx).boxed())
    }

    /// The priming event of a new stream (id, empty data, `retry`), when resumable.
    pub(crate) fn priming(&self, stream_id: u64, stream: &mut StreamState) -> Option<Bytes> {
        let store = self.config.event_store.as_ref()?;
        if !self.stateful {
            return None;
        }
        let id = EventId {
            stream: self.wire_stream(stream_id),
            seq: stream.next_seq,
        };
        stream.next_seq += 1;
        // The data of every priming event: one text for the process, not one per stream
        // or per session.
        static EMPTY: OnceLock<Arc<str>> = OnceLock::new();
        store.store(&self.id, id, EMPTY.get_or_init(|| Arc::from("")).clone());
        Some(crate::sse::encode_message(
            Some(id),
            "",
            Some(self.config.retry_interval),
        ))
    }

    /// Opens the standalone GET stream; `None` when one is already connected.
    pub(crate) fn open_standalone(&self) -> Option<futures::stream::BoxStream<'static, Bytes>> {
        let mut routes = self.routes();
        let stream = routes.streams.get_mut(&STANDALONE)?;
        if stream.has_live_conn() {
            return None;
        }
        let (tx, rx) = queue(self.config.stream_queue);
        let mut first = Vec::new();
        if let Some(priming) = self.priming(STANDALONE, stream) {
            first.push(priming);
        }
        // A shared session's backlog waits for the hold (`claimed`): the registry may
        // refuse it, the stream being open on another service.
        if self.shared.is_none() {
            first.extend(stream.backlog.drain(..));
        }
        stream.conn = Some(tx);
        self.start_claim(stream);
        Some(chain(first, rx).boxed())
    }

    /// Resumes the stream `after` belongs to: its later events, then (if the stream is
    /// still open) what comes next, on a connection that replaces any older one. `Err`
    /// when the id cannot be mapped.
    ///
    /// The store is read with no lock held (a remote store does I/O). Events routed
    /// while it was read went to the connection being replaced, or nowhere: once the new
    /// connection is in place (everything from `cutoff` on goes to it), the store is read
    /// again for the events in between, so the client gets each event once, in order.
    pub(crate) async fn resume(
        &self,
        after: EventId,
    ) -> Result<futures::stream::BoxStream<'static, Bytes>, ()> {
        let store = self.config.event_store.clone().ok_or(())?;
        // Another service's GET stream: its events after `after`, then this copy's
        // standalone stream, held here from now on (the client lost the other).
        let foreign = self.foreign_standalone(after.stream);
        let local = if foreign {
            STANDALONE
        } else {
            self.local_stream(after.stream)
        };
        let open_before = self.routes().streams.contains_key(&local);
        let mut replay = store.replay_after(&self.id, after).await.ok_or(())?;
        let last = replay.last().map_or(after.seq, |(id, _)| id.seq);
        let (cutoff, rx) = {
            let mut routes = self.routes();
            match routes.streams.get_mut(&local) {
                Some(stream) => {
                    // A resumption replaces the connection it resumes: the client lost
                    // it, even if the server has not noticed yet.
                    if !foreign {
                        stream.backlog.clear();
                    }
                    let (tx, rx) = queue(self.config.stream_queue);
                    stream.conn = Some(tx);
                    if local == STANDALONE {
                        // A hold starts after a stored event (its priming, if none came
                        // before): what it sends is read back after that event.
                        if stream.next_seq == 0 && self.shared.is_some() {
                            let _ = self.priming(STANDALONE, stream);
                        }
                        self.start_claim(stream);
                        stream.claim.replayed_to = Some(EventId {
                            stream: after.stream,
                            seq: last,
                        });
                    }
                    (Some(stream.next_seq), Some(rx))
                }
                // The stream is complete: the store holds all there is.
                None => (None, None),
            }
        };
        let missed = match cutoff {
            // This copy's stream numbers its own events: the other's are all stored.
            Some(_) if foreign => false,
            Some(cutoff) => last + 1 < cutoff,
            // Completed while the store was read: its last events came after the read.
            None => open_before,
        };
        if missed {
            let since = EventId {
                stream: after.stream,
                seq: last,
            };
            let more = store.replay_after(&self.id, since).await.ok_or(())?;
            replay.extend(
                more.into_iter()
                    .filter(|(id, _)| id.seq > last && cutoff.is_none_or(|c| id.seq < c)),
            );
        }
        let first: Vec<Bytes> = replay
            .iter()
            .map(|(id, data)| {
                let retry = (id.seq == 0).then_some(self.config.retry_interval);
                crate::sse::encode_message(Some(*id), data, retry)
            })
            .collect();
        Ok(match rx {
            Some(rx) => chain(first, rx).boxed(),
            None => futures::stream::iter(first).boxed(),
        })
    }

    /// Closes the connection carrying request `id`'s stream without ending the stream;
    /// the client resumes it with `Last-Event-ID` after the `retry` interval. Only
    /// meaningful with an event store (otherwise the rest of the stream is lost).
    pub(crate) fn close_request_stream(&self, id: &RequestId) -> bool {
        let mut routes = self.routes();
        let Some(Route::Sse(stream_id)) = routes.requests.get(id) else {
            return false;
        };
        let stream_id = *stream_id;
        routes
            .streams
            .get_mut(&stream_id)
            .is_some_and(|s| s.conn.take().is_some())
    }

    /// Closes the standalone stream's connection (the client reconnects).
    pub(crate) fn close_standalone_stream(&self) -> bool {
        self.routes()
            .streams
            .get_mut(&STANDALONE)
            .is_some_and(|s| s.conn.take().is_some())
    }

    /// The runtime has handled the messages answered on stream `stream_id`.
    pub(crate) fn release(&self, stream_id: u64) {
        if let Some(stream) = self.routes().streams.get_mut(&stream_id) {
            stream.handled = None;
        }
    }
}
