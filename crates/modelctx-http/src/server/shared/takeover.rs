//! Answer streams of shared sessions that outlive the service running them.
//!
//! A POST's request still running once the POST is handled is recorded in the event
//! store's `RunStore` (`begin_run`); its record ends after its response is stored.
//! A client that resumes such a stream on another service (`Last-Event-ID` naming a
//! stream not open here) is *followed*: the service replays what is stored, then
//! polls the store for what the running service adds, until the answer is stored. When
//! the running service stopped (its liveness lapsed, or its copy of the session ended),
//! one follower takes the run over and finishes the answer on the same stream:
//!
//! - the server says the request may run again (a read-only or idempotent tool, a
//!   read): it runs it here; the re-run's notifications at positions already stored are
//!   not sent again (the client has them, or gets them from the replay), its response
//!   and requests go after the stored events. Events are matched by position: a re-run
//!   that reports differently from the first run is not detected.
//! - otherwise: the request is answered with an error saying it was interrupted and may
//!   or may not have run; it is not run again.
//!
//! Only a shared session whose `EventStore::runs()` is `Some` records runs; otherwise none
//! of this runs. A POST's single request (not `initialize`, not a batch) still in flight
//! once the POST is handled is recorded under the routing lock, so a request answered at
//! once costs nothing; `terminate` gives the session's runs up at once (graceful shutdown).
//! Every listening service says it is alive every `keep_alive_interval`. A follower polls
//! `state` and `replay_after` (50 ms doubling to 500 ms while nothing is new) until the
//! client leaves, the session ends, the record is gone, or ten store errors in a row. On
//! `Orphaned` it tries `take_over`; the winner reads the store once more, then ends the
//! record if the response was stored, or installs the stream here under its wire number and
//! either pushes the request into its local copy (after the missed
//! `notifications/initialized`, as a POST would) or answers it `-32603` with `INTERRUPTED`.
//!
//! Trap: the store writes behind what the service sends, so a killed service may have sent
//! events it never stored, and the client's `Last-Event-ID` is then *ahead* of the store. A
//! follower therefore sends nothing until the store catches up while a run is recorded, and
//! `take_over` says how far the stream is stored (`TakenRun::last_stored`): a client ahead
//! of it goes on from its own position; a stream stored beyond the client but no longer
//! replayable ends the run unanswered. A re-run's notifications at positions up to
//! `skip_until` are dropped, its response and requests moved past them.
//!
//! Invariant: each position of a stream is sent once; the store refuses a second write of a
//! position, which fences a stalled owner's late events. Limits: a stalled owner past the
//! liveness time is taken over while it runs (an idempotent call then runs twice); a
//! relayed cancellation that arrives while no service holds the request is lost.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use modelctx_transport::Extensions;
use modelctx_types::{ErrorCode, ErrorData, JsonRpcErrorResponse, JsonRpcMessage, RequestId};

use crate::server::event_store::{EventId, EventStore};
use crate::server::session::{
    EventSender, Messages, Route, Routes, SessionState, StreamState, chain, queue,
};

/// The first pause between two polls of a followed stream; it doubles up to
/// [`MAX_PAUSE`] while nothing new is stored.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_millis(500);
/// Store errors in a row after which a follower ends its connection (the client
/// reconnects and tries again, within its own bound).
const MAX_FAILURES: u32 = 10;

/// The answer to a request whose service stopped before answering it, when it may not
/// run again.
pub(crate) const INTERRUPTED: &str = "Interrupted: the server process running this request stopped before answering; \
     the request may or may not have run, and was not run again (the server does not mark it as safe to repeat)";

impl SessionState {
    /// The run store of a shared session's event store, if it has one.
    fn run_store(&self) -> Option<(&Arc<dyn EventStore>, &str)> {
        let shared = self.shared.as_ref()?;
        let store = self.config.event_store.as_ref()?;
        store.runs()?;
        Some((store, shared.instance()))
    }

    /// Records the request answered on `stream_id` (`request`: its text) as running in
    /// this service, if it still runs: called once the POST is handled, so a request
    /// answered at once costs nothing.
    pub(crate) fn begin_run(&self, stream_id: u64, request: Arc<str>) {
        let Some((store, instance)) = self.run_store() else {
            return;
        };
        let Some(runs) = store.runs() else { return };
        let wire = self.wire_stream(stream_id);
        let mut routes = self.routes();
        let Some(stream) = routes.streams.get_mut(&stream_id) else {
            return;
        };
        if stream.open_requests == 1 && !stream.run {
            stream.run = true;
            runs.begin(&self.id, wire, instance, request);
        }
    }

    /// The stream answering a recorded run is complete (its response is stored).
    pub(crate) fn end_run(&self, stream_id: u64, stream: &StreamState) {
        if !stream.run {
            return;
        }
        if let Some((store, instance)) = self.run_store()
            && let Some(runs) = store.runs()
        {
            runs.end(&self.id, self.wire_stream(stream_id), instance);
        }
    }

    /// The session ends here with runs unanswered: other services may take them over
    /// at once.
    pub(crate) fn release_runs(&self, routes: &Routes) {
        let Some((store, instance)) = self.run_store() else {
            return;
        };
        let Some(runs) = store.runs() else { return };
        for (id, stream) in &routes.streams {
            if stream.run {
                runs.release(&self.id, self.wire_stream(*id), instance);
            }
        }
    }

    /// Whether the next event on `stream_id` is a re-run's `notification` at a position
    /// a stopped service stored already: counted, not stored or sent. A response or
    /// request there goes after the stored events instead.
    pub(crate) fn replayed_position(
        routes: &mut Routes,
        stream_id: u64,
        notification: bool,
    ) -> bool {
        let Some(stream) = routes.streams.get_mut(&stream_id) else {
            return false;
        };
        if stream.skip_until == 0 || stream.next_seq > stream.skip_until {
            return false;
        }
        if notification {
            stream.next_seq += 1;
            return true;
        }
        stream.next_seq = stream.skip_until + 1;
        false
    }

    /// Whether this session records its running requests (shared, with a store that
    /// keeps runs).
    pub(crate) fn records_runs(&self) -> bool {
        self.run_store().is_some()
    }

    /// Whether a resumption from `after` is followed (see the module docs): a shared
    /// session's stream not open here, with a store that records runs.
    pub(crate) fn follows(&self, after: EventId) -> bool {
        // Another service's GET stream is not followed but taken over (`resume`): the
        // standalone stream has no run to wait for, and its hold moves here.
        if self.foreign_standalone(after.stream) {
            return false;
        }
        let local = self.local_stream(after.stream);
        self.run_store().is_some() && !self.routes().streams.contains_key(&local)
    }

    /// Resumes a stream open on another service, or on none: what is stored after
    /// `after`, then what is stored later, until its answer is (see the module docs).
    /// `extensions`: the resuming GET's, for a re-run. `Err` when `after` cannot be
    /// mapped.
    pub(crate) async fn follow(
        self: &Arc<Self>,
        after: EventId,
        extensions: Extensions,
    ) -> Result<futures::stream::BoxStream<'static, Bytes>, ()> {
        let store = self.config.event_store.clone().ok_or(())?;
        let replay = match store.replay_after(&self.id, after).await {
            Some(replay) => replay,
            // A service writes behind what it sends: the client may be ahead of the
            // store (more so when that service stopped). Followed while a run is
            // recorded; otherwise the id cannot be mapped.
            None => {
                let runs = store.runs().ok_or(())?;
                match runs.state(&self.id, after.stream).await {
                    Some(crate::RunState::Running | crate::RunState::Orphaned) => Vec::new(),
                    _ => return Err(()),
                }
            }
        };
        let mut follower = Follower {
            stream: after.stream,
            last: after.seq,
            answered: HashSet::new(),
            retry: self.config.retry_interval,
        };
        let first = follower.take(replay);
        let (tx, rx) = queue(self.config.stream_queue);
        tokio::spawn(self.clone().follow_run(store, follower, tx, extensions));
        Ok(futures::StreamExt::boxed(chain(first, rx)))
    }

    async fn follow_run(
        self: Arc<Self>,
        store: Arc<dyn EventStore>,
        mut f: Follower,
        tx: EventSender,
        extensions: Extensions,
    ) {
        let Some((_, instance)) = self.run_store() else {
            return;
        };
        let instance: Arc<str> = Arc::from(instance);
        let Some(runs) = store.runs() else { return };
        let mut pause = FIRST_PAUSE;
        let mut failures = 0;
        loop {
            if tx.is_closed() || self.closed.is_cancelled() {
                return;
            }
            // The state first: a run found finished has all its events stored.
            let state = runs.state(&self.id, f.stream).await;
            let stored = store
                .replay_after(
                    &self.id,
                    EventId {
                        stream: f.stream,
                        seq: f.last,
                    },
                )
                .await;
            let stored = match (state, stored) {
                (_, Some(stored)) => Some(stored),
                // Ahead of the store (see `follow`): nothing new to send yet.
                (Some(crate::RunState::Running | crate::RunState::Orphaned), None) => {
                    Some(Vec::new())
                }
                _ => None,
            };
            let (Some(state), Some(stored)) = (state, stored) else {
                failures += 1;
                if failures >= MAX_FAILURES {
                    return;
                }
                self.pause(&tx, pause).await;
                continue;
            };
            failures = 0;
            let got = !stored.is_empty();
            if !f.send(&tx, stored).await {
                return;
            }
            match state {
                crate::RunState::Finished => return,
                crate::RunState::Orphaned => {
                    if let Some(run) = runs.take_over(&self.id, f.stream, &instance).await {
                        self.continue_run(&store, &instance, f, tx, run, &extensions)
                            .await;
                        return;
                    }
                }
                _ => {
                    pause = if got {
                        FIRST_PAUSE
                    } else {
                        (pause * 2).min(MAX_PAUSE)
                    };
                    self.pause(&tx, pause).await;
                }
            }
        }
    }

    /// Waits `pause`, or less when the client leaves or the session ends.
    async fn pause(&self, tx: &EventSender, pause: Duration) {
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = tx.closed() => {}
            () = self.closed.cancelled() => {}
        }
    }

    /// Finishes the answer of the run this service took over on `f`'s stream (see the
    /// module docs); `tx` is the resuming client's connection.
    async fn continue_run(
        &self,
        store: &Arc<dyn EventStore>,
        instance: &str,
        mut f: Follower,
        tx: EventSender,
        run: crate::TakenRun,
        extensions: &Extensions,
    ) {
        let Some(runs) = store.runs() else { return };
        let wire = f.stream;
        // Everything the stopped service stored: nothing more comes from it.
        let stored = store
            .replay_after(
                &self.id,
                EventId {
                    stream: wire,
                    seq: f.last,
                },
            )
            .await;
        let sent = match stored {
            Some(stored) => f.send(&tx, stored).await,
            // The client is ahead of what the stopped service stored (it stopped
            // before writing what it had sent): the client's position is the one to
            // go on from.
            None if run.last_stored.is_none_or(|last| last <= f.last) => !tx.is_closed(),
            // Stored beyond the client but not replayable (trimmed, or a write lost):
            // the stream cannot go on without a gap; it ends unanswered.
            None => {
                runs.end(&self.id, wire, instance);
                return;
            }
        };
        if !sent {
            // The client left: the next one to resume the stream takes it over.
            runs.release(&self.id, wire, instance);
            return;
        }
        let Ok(JsonRpcMessage::Request(request)) = run.request.parse::<JsonRpcMessage>() else {
            runs.end(&self.id, wire, instance);
            return;
        };
        if f.answered.contains(&request.id) {
            // Answered and stored just before its service stopped.
            runs.end(&self.id, wire, instance);
            return;
        }
        let rerun = self
            .shared
            .as_ref()
            .is_some_and(|shared| shared.may_rerun(&request));
        let local = self.local_stream(wire);
        {
            let mut routes = self.routes();
            if self.closed.is_cancelled()
                || routes.streams.contains_key(&local)
                || routes.requests.contains_key(&request.id)
            {
                runs.release(&self.id, wire, instance);
                return;
            }
            routes.streams.insert(
                local,
                StreamState {
                    next_seq: f.last + 1,
                    conn: Some(tx),
                    open_requests: 1,
                    run: true,
                    skip_until: f.last,
                    ..StreamState::default()
                },
            );
            routes
                .requests
                .insert(request.id.clone(), Route::Sse(local));
            if !rerun {
                let error = JsonRpcMessage::Error(JsonRpcErrorResponse::new(
                    Some(request.id.clone()),
                    ErrorData::internal_error(INTERRUPTED),
                ));
                if let Ok(data) = serde_json::to_string(&error) {
                    // Stored, sent, and the run ended: the stream is complete.
                    self.complete(
                        &mut routes,
                        &request.id,
                        data,
                        Some(ErrorCode::INTERNAL_ERROR),
                    );
                }
                return;
            }
            // A re-run numbers its events from the start of the stream: those at
            // positions already stored are matched, not sent again.
            if let Some(stream) = routes.streams.get_mut(&local) {
                stream.next_seq = 1;
            }
        }
        let mut messages: Messages = smallvec::smallvec![JsonRpcMessage::Request(request)];
        // As for a POST: a copy whose runtime still waits for the client's
        // `notifications/initialized`, which the registry says went elsewhere, is
        // handed one first.
        let gate = self.hand_note_first(&mut messages).await;
        // The session ending meanwhile releases the run (`release_runs`).
        let _ = self.push(messages, None, extensions).await;
        drop(gate);
    }
}

/// Where a follower is on the stream it follows.
struct Follower {
    /// The stream's number in event ids.
    stream: u64,
    /// The last event sent to the client.
    last: u64,
    /// The requests whose responses passed (a run may have been answered just before
    /// its service stopped).
    answered: HashSet<RequestId>,
    retry: Duration,
}

impl Follower {
    /// Encodes stored events for the client, noting the last one and any answers.
    fn take(&mut self, events: Vec<(EventId, Arc<str>)>) -> Vec<Bytes> {
        let after = self.last;
        events
            .into_iter()
            .filter(|(id, _)| id.seq > after)
            .map(|(id, data)| {
                self.last = self.last.max(id.seq);
                match data.parse::<JsonRpcMessage>() {
                    Ok(JsonRpcMessage::Response(r)) => {
                        self.answered.insert(r.id);
                    }
                    Ok(JsonRpcMessage::Error(JsonRpcErrorResponse { id: Some(id), .. })) => {
                        self.answered.insert(id);
                    }
                    _ => {}
                }
                let retry = (id.seq == 0).then_some(self.retry);
                crate::sse::encode_message(Some(id), &data, retry)
            })
            .collect()
    }

    /// Sends stored events on; false when the client left.
    async fn send(&mut self, tx: &EventSender, events: Vec<(EventId, Arc<str>)>) -> bool {
        for event in self.take(events) {
            if tx.send(event).await.is_err() {
                return false;
            }
        }
        true
    }
}
