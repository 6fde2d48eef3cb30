//! A state-machine property test of the session runtime: under arbitrary interleavings of
//! requests both ways, responses (late, duplicate, for unknown ids), cancellations both
//! ways, reused ids, the in-flight bound and a disconnect from either side, the session
//! answers every request exactly once (a request cancelled while it runs, or cut off by the
//! disconnect, never), every call it made ends once, and no entry is left behind.
//!
//! One session (client or server role, handshake skipped) faces the scripted
//! [`MockPeer`] on a current-thread runtime with paused time, so a message that never
//! comes fails at once instead of after a real timeout. The test keeps a model of what
//! the session must do and checks, at the end, the whole wire against it: the multiset
//! of answers per id, the `notifications/cancelled` the session sent, the outcome of
//! every call it made, every handler future dropped. Empty tables are observed through
//! the public API, not read: every inbound id can be used again (a leftover entry would
//! refuse it as a duplicate), the in-flight bound admits its full count of new requests
//! (a leftover would answer -32005), and every outbound id can be chosen again (a
//! leftover would refuse it locally).
//!
//! Not covered: a request cancelled while it waits for a handler slot (it never reaches the
//! service, so the model cannot tell when its entry goes; here the bound on running
//! handlers equals the in-flight bound), and races between threads (one thread by design:
//! the model must be exact).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use modelctx_memory::MockPeer;
use modelctx_session::{
    Canceller, Peer, RequestContext, RequestOptions, Service, SessionConfig, SessionError,
    TOO_MANY_REQUESTS, parse_params, start,
};
use modelctx_types::{
    ErrorCode, ErrorData, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, RawValue, RequestId,
    to_raw,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

/// The session's bound on inbound requests in flight (and on running handlers).
const IN_FLIGHT: usize = 4;

/// How long any one expected event may take (virtual time: an event that never comes
/// fails at once, the runtime being idle).
const WAIT: Duration = Duration::from_secs(5);

/// The error code the peer answers the session's calls with when it fails them.
const PEER_FAILURE: ErrorCode = ErrorCode(-32001);

/// One step of a script.
#[derive(Debug, Clone)]
enum Op {
    /// The peer sends a request whose handler waits until released.
    Hold,
    /// The peer sends a request whose handler answers at once.
    Quick,
    /// The peer sends a quick request with the id of an earlier inbound request.
    Reuse(usize),
    /// The handler of an earlier inbound request may finish.
    Release(usize),
    /// The peer cancels an earlier inbound request.
    CancelInbound(usize),
    /// The session sends a request to the peer.
    Call,
    /// The peer answers one of the session's requests (again, perhaps), with a result
    /// or an error.
    Answer(usize, bool),
    /// The peer answers an id the session never used.
    AnswerUnknown,
    /// The session cancels one of its requests.
    CancelCall(usize),
    /// The session's caller drops one of its requests.
    DropCall(usize),
    /// The peer closes the connection (`true`) or the session does; ends the script.
    Disconnect(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Hold),
        2 => Just(Op::Quick),
        1 => any::<usize>().prop_map(Op::Reuse),
        3 => any::<usize>().prop_map(Op::Release),
        2 => any::<usize>().prop_map(Op::CancelInbound),
        3 => Just(Op::Call),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(i, ok)| Op::Answer(i, ok)),
        1 => Just(Op::AnswerUnknown),
        1 => any::<usize>().prop_map(Op::CancelCall),
        1 => any::<usize>().prop_map(Op::DropCall),
        1 => any::<bool>().prop_map(Op::Disconnect),
    ]
}

/// What the test service reports.
#[derive(Debug)]
enum Event {
    /// The handler of request instance `n` started.
    Started(u64),
    /// The handler future of instance `n` ended: it finished or was dropped.
    Finished(u64),
}

/// `hold` waits for its instance's gate, `quick` answers at once; both answer
/// `{"n": n}`, the instance number the request carries.
struct TestService {
    events: mpsc::UnboundedSender<Event>,
    gates: Mutex<HashMap<u64, Arc<Semaphore>>>,
}

impl TestService {
    fn gate(&self, n: u64) -> Arc<Semaphore> {
        let mut gates = self.gates.lock().unwrap();
        gates
            .entry(n)
            .or_insert_with(|| Arc::new(Semaphore::new(0)))
            .clone()
    }
}

/// Reports [`Event::Finished`] when the handler future that holds it goes away.
struct Finish(u64, mpsc::UnboundedSender<Event>);

impl Drop for Finish {
    fn drop(&mut self) {
        let _ = self.1.send(Event::Finished(self.0));
    }
}

impl Service for TestService {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        _cx: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        Box::pin(async move {
            let params: Value = parse_params(request.params.as_deref())?;
            let n = params["n"].as_u64().expect("every test request carries n");
            let _ = self.events.send(Event::Started(n));
            let _finish = Finish(n, self.events.clone());
            if request.method == "hold" {
                let gate = self.gate(n);
                gate.acquire().await.expect("gates stay open").forget();
            }
            Ok(to_raw(&json!({ "n": n })).unwrap())
        })
    }

    fn handle_notification(
        self: Arc<Self>,
        _notification: JsonRpcNotification,
        _peer: Peer,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// An answer as seen on the wire: a result's `n` (none for a ping's), or an error code.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Answer {
    Result(Option<u64>),
    Error(i64),
}

/// Everything the session sent, as the peer read it.
#[derive(Debug, Default)]
struct Wire {
    answers: Vec<(RequestId, Answer)>,
    /// Requests from the session, by id.
    requests: Vec<RequestId>,
    /// `notifications/cancelled` from the session, by request id.
    cancels: Vec<RequestId>,
}

impl Wire {
    fn absorb(&mut self, message: JsonRpcMessage) {
        match message {
            JsonRpcMessage::Response(r) => {
                let result: Value = serde_json::from_str(r.result.get()).unwrap();
                self.answers
                    .push((r.id, Answer::Result(result["n"].as_u64())));
            }
            JsonRpcMessage::Error(e) => {
                let id = e.id.expect("the session answers with the request's id");
                self.answers.push((id, Answer::Error(e.error.code.0)));
            }
            JsonRpcMessage::Request(r) => self.requests.push(r.id),
            JsonRpcMessage::Notification(n) => {
                assert_eq!(n.method, "notifications/cancelled", "unexpected {n:?}");
                let params: Value =
                    serde_json::from_str(n.params.as_deref().map_or("{}", RawValue::get)).unwrap();
                let id: RequestId = serde_json::from_value(params["requestId"].clone()).unwrap();
                self.cancels.push(id);
            }
        }
    }
}

/// How one of the session's calls must end.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Pending,
    Result(u64),
    PeerError,
    Cancelled,
    Dropped,
    Closed,
}

struct Call {
    id: RequestId,
    k: u64,
    task: JoinHandle<Result<Box<RawValue>, SessionError>>,
    canceller: Canceller,
    outcome: Outcome,
}

/// An inbound request instance.
struct Inbound {
    id: RequestId,
    n: u64,
    hold: bool,
}

/// The session under test, the peer, and the model of what the session must do.
struct Run {
    peer: Peer,
    mock: MockPeer,
    events: mpsc::UnboundedReceiver<Event>,
    service: Arc<TestService>,
    wire: Wire,
    started: HashSet<u64>,
    finished: HashSet<u64>,
    /// Inbound requests whose handler runs: id -> instance.
    in_flight: HashMap<RequestId, u64>,
    inbound: Vec<Inbound>,
    calls: Vec<Call>,
    expected_answers: Vec<(RequestId, Answer)>,
    expected_cancels: Vec<RequestId>,
    next: u64,
    pings: u64,
}

impl Run {
    fn new(server: bool) -> Self {
        let (transport, mock) = MockPeer::pair();
        let (tx, events) = mpsc::unbounded_channel();
        let service = Arc::new(TestService {
            events: tx,
            gates: Mutex::new(HashMap::new()),
        });
        let config = if server {
            SessionConfig::server()
        } else {
            SessionConfig::client()
        };
        let config = config
            .pre_initialized()
            .max_requests_in_flight(IN_FLIGHT)
            .max_concurrent_requests(IN_FLIGHT)
            .request_timeout(Duration::from_secs(3600));
        let peer = start(transport, service.clone(), config);
        Self {
            peer,
            mock: mock.with_timeout(WAIT),
            events,
            service,
            wire: Wire::default(),
            started: HashSet::new(),
            finished: HashSet::new(),
            in_flight: HashMap::new(),
            inbound: Vec::new(),
            calls: Vec::new(),
            expected_answers: Vec::new(),
            expected_cancels: Vec::new(),
            next: 0,
            pings: 0,
        }
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Reads the wire until `done` holds.
    async fn read_until(&mut self, done: impl Fn(&Wire) -> bool) {
        while !done(&self.wire) {
            let message = self.mock.next_message().await;
            self.wire.absorb(message);
        }
    }

    /// Waits until the service reported `event`.
    async fn event(&mut self, started: Option<u64>, finished: Option<u64>) {
        loop {
            if started.is_none_or(|n| self.started.contains(&n))
                && finished.is_none_or(|n| self.finished.contains(&n))
            {
                return;
            }
            match tokio::time::timeout(WAIT, self.events.recv()).await {
                Ok(Some(Event::Started(n))) => assert!(self.started.insert(n), "{n} twice"),
                Ok(Some(Event::Finished(n))) => assert!(self.finished.insert(n), "{n} twice"),
                Ok(None) => unreachable!("the service lives as long as the session"),
                Err(_) => panic!("no event started={started:?} finished={finished:?}"),
            }
        }
    }

    /// The peer pings and reads up to the answer: everything the peer sent before has
    /// been handled by the session.
    async fn barrier(&mut self) {
        self.pings += 1;
        let id = RequestId::from(format!("ping-{}", self.pings));
        self.mock.request(id.clone(), "ping", Value::Null).await;
        let ping = (id, Answer::Result(None));
        self.read_until(|w| w.answers.contains(&ping)).await;
        self.wire.answers.retain(|a| *a != ping);
    }

    /// The peer sends request instance `n` with `id`; the model says how it is answered.
    async fn send_inbound(&mut self, id: RequestId, hold: bool) {
        let n = self.fresh();
        let method = if hold { "hold" } else { "quick" };
        self.mock
            .request(id.clone(), method, json!({ "n": n }))
            .await;
        self.inbound.push(Inbound {
            id: id.clone(),
            n,
            hold,
        });
        self.barrier().await;
        if self.in_flight.contains_key(&id) {
            self.expect(id, Answer::Error(ErrorCode::INVALID_REQUEST.0));
        } else if self.in_flight.len() >= IN_FLIGHT {
            self.expect(id, Answer::Error(TOO_MANY_REQUESTS.0));
        } else if hold {
            self.event(Some(n), None).await;
            self.in_flight.insert(id, n);
        } else {
            self.event(Some(n), Some(n)).await;
            self.expect(id, Answer::Result(Some(n)));
        }
    }

    fn expect(&mut self, id: RequestId, answer: Answer) {
        self.expected_answers.push((id, answer));
    }

    /// Lets hold instance `i` finish; waits for its answer when it is running.
    async fn release(&mut self, i: usize) {
        let (id, n) = (self.inbound[i].id.clone(), self.inbound[i].n);
        self.service.gate(n).add_permits(1);
        if self.in_flight.get(&id) == Some(&n) {
            self.in_flight.remove(&id);
            let answer = (id.clone(), Answer::Result(Some(n)));
            self.expect(id, answer.1.clone());
            self.read_until(|w| w.answers.contains(&answer)).await;
            self.event(None, Some(n)).await;
        }
    }

    async fn step(&mut self, op: Op) {
        match op {
            Op::Hold | Op::Quick => {
                let k = self.fresh();
                // Numbers and strings, both kinds of id.
                let id = if k.is_multiple_of(2) {
                    RequestId::from(k as i64)
                } else {
                    RequestId::from(format!("in-{k}"))
                };
                self.send_inbound(id, matches!(op, Op::Hold)).await;
            }
            Op::Reuse(i) if !self.inbound.is_empty() => {
                let id = self.inbound[i % self.inbound.len()].id.clone();
                self.send_inbound(id, false).await;
            }
            Op::Release(i) if !self.inbound.is_empty() => {
                self.release(i % self.inbound.len()).await;
            }
            Op::CancelInbound(i) if !self.inbound.is_empty() => {
                let id = self.inbound[i % self.inbound.len()].id.clone();
                self.mock
                    .notify(
                        "notifications/cancelled",
                        json!({ "requestId": id, "reason": "test" }),
                    )
                    .await;
                self.barrier().await;
                // A cancellation names an id: whichever request runs under it is
                // dropped, and never answered.
                if let Some(n) = self.in_flight.remove(&id) {
                    self.event(None, Some(n)).await;
                }
            }
            Op::Call => self.call(None).await,
            Op::Answer(i, ok) if !self.calls.is_empty() => {
                let len = self.calls.len();
                let call = &mut self.calls[i % len];
                let id = call.id.clone();
                if ok {
                    self.mock.respond(id, json!({ "n": call.k })).await;
                } else {
                    self.mock
                        .respond_error(id, ErrorData::new(PEER_FAILURE, "no"))
                        .await;
                }
                if call.outcome == Outcome::Pending {
                    call.outcome = if ok {
                        Outcome::Result(call.k)
                    } else {
                        Outcome::PeerError
                    };
                }
                self.barrier().await;
            }
            Op::AnswerUnknown => {
                let k = self.fresh();
                self.mock
                    .respond(format!("nobody-{k}"), json!({ "n": k }))
                    .await;
                self.mock.respond(1_000_000 + k as i64, json!({})).await;
                self.barrier().await;
            }
            Op::CancelCall(i) if !self.calls.is_empty() => {
                let len = self.calls.len();
                let call = &mut self.calls[i % len];
                call.canceller.cancel("test").await;
                if call.outcome == Outcome::Pending {
                    call.outcome = Outcome::Cancelled;
                    let id = call.id.clone();
                    self.expected_cancels.push(id.clone());
                    self.read_until(|w| w.cancels.contains(&id)).await;
                }
            }
            Op::DropCall(i) if !self.calls.is_empty() => {
                let len = self.calls.len();
                let call = &mut self.calls[i % len];
                if call.outcome == Outcome::Pending {
                    call.task.abort();
                    call.outcome = Outcome::Dropped;
                    let id = call.id.clone();
                    self.expected_cancels.push(id.clone());
                    self.read_until(|w| w.cancels.contains(&id)).await;
                }
            }
            Op::Disconnect(_) => unreachable!("scripts end at their first disconnect"),
            // An op on an empty list: nothing to do.
            _ => {}
        }
    }

    /// The session calls the peer, with a chosen id (`reuse`) or a fresh one.
    async fn call(&mut self, reuse: Option<RequestId>) {
        let k = self.fresh();
        let id = reuse.unwrap_or_else(|| RequestId::from(format!("out-{k}")));
        let handle = self.peer.start_raw(
            "test/call".into(),
            Some(to_raw(&json!({ "k": k })).unwrap()),
            RequestOptions::new().id(id.clone()),
        );
        assert_eq!(handle.id(), Some(id.clone()), "the id {id} was refused");
        let canceller = handle.canceller();
        let task = tokio::spawn(handle);
        let sent = self.wire.requests.iter().filter(|r| **r == id).count();
        self.read_until(|w| w.requests.iter().filter(|r| **r == id).count() > sent)
            .await;
        self.calls.push(Call {
            id,
            k,
            task,
            canceller,
            outcome: Outcome::Pending,
        });
    }

    /// Ends the session from one side; what is in flight fails or is dropped.
    async fn disconnect(&mut self, by_peer: bool) {
        if by_peer {
            self.mock.close().await;
            tokio::time::timeout(WAIT, self.peer.closed())
                .await
                .expect("the session ends when its peer goes");
        } else {
            self.peer.close().await;
        }
        for call in &mut self.calls {
            if call.outcome == Outcome::Pending {
                call.outcome = Outcome::Closed;
            }
        }
        for n in std::mem::take(&mut self.in_flight).into_values() {
            self.event(None, Some(n)).await;
        }
        // The rest of what the session sent, up to the end of its stream.
        while let Some(message) = self.mock.next().await {
            self.wire.absorb(message.message);
        }
    }

    /// Ends a script that did not disconnect: releases every handler, answers every
    /// call, then shows through the public API that no table kept an entry.
    async fn finish(&mut self) {
        for i in 0..self.inbound.len() {
            if self.inbound[i].hold {
                self.release(i).await;
            }
        }
        for i in 0..self.calls.len() {
            if self.calls[i].outcome == Outcome::Pending {
                let call = &mut self.calls[i];
                call.outcome = Outcome::Result(call.k);
                self.mock
                    .respond(call.id.clone(), json!({ "n": call.k }))
                    .await;
            }
        }
        self.barrier().await;
        // Every inbound id can be used again: no entry is left under any of them.
        let ids: Vec<RequestId> = self.inbound.iter().map(|r| r.id.clone()).collect();
        for id in dedup(ids) {
            self.send_inbound(id, false).await;
        }
        // The in-flight bound admits its full count: nothing is counted that is gone.
        let first = self.inbound.len();
        for _ in 0..IN_FLIGHT {
            self.step(Op::Hold).await;
        }
        // (`send_inbound` waits for each handler to start: a refusal would fail there.)
        for i in first..self.inbound.len() {
            self.release(i).await;
        }
        // Every outbound id can be chosen again: no entry is left under any of them.
        let ids: Vec<RequestId> = self.calls.iter().map(|c| c.id.clone()).collect();
        for id in ids {
            self.call(Some(id)).await;
            let call = self.calls.last_mut().unwrap();
            call.outcome = Outcome::Result(call.k);
            self.mock
                .respond(call.id.clone(), json!({ "n": call.k }))
                .await;
        }
        self.barrier().await;
    }

    /// The invariants, once the script is over.
    async fn check(&mut self) {
        for call in &mut self.calls {
            let got = tokio::time::timeout(WAIT, &mut call.task)
                .await
                .expect("every call ends");
            let ended = match got {
                Err(e) if e.is_cancelled() => Outcome::Dropped,
                Err(e) => panic!("call {} panicked: {e}", call.id),
                Ok(Ok(raw)) => {
                    let result: Value = serde_json::from_str(raw.get()).unwrap();
                    Outcome::Result(result["n"].as_u64().unwrap())
                }
                Ok(Err(e)) if e.protocol_error().map(|p| p.code) == Some(PEER_FAILURE) => {
                    Outcome::PeerError
                }
                Ok(Err(e)) if e.is_cancelled() => Outcome::Cancelled,
                Ok(Err(e)) if e.is_closed() => Outcome::Closed,
                Ok(Err(e)) => panic!("call {} failed unexpectedly: {e}", call.id),
            };
            assert_eq!(ended, call.outcome, "call {}", call.id);
        }
        let mut expected = self.expected_answers.clone();
        let mut answers = self.wire.answers.clone();
        expected.sort();
        answers.sort();
        assert_eq!(answers, expected, "the answers on the wire");
        let mut cancels = self.wire.cancels.clone();
        let mut expected_cancels = self.expected_cancels.clone();
        cancels.sort();
        expected_cancels.sort();
        assert_eq!(cancels, expected_cancels, "the session's cancellations");
        let mut requests = self.wire.requests.clone();
        let mut made: Vec<RequestId> = self.calls.iter().map(|c| c.id.clone()).collect();
        requests.sort();
        made.sort();
        assert_eq!(requests, made, "the session's requests");
        // Every handler future that started has ended.
        while let Ok(event) = self.events.try_recv() {
            match event {
                Event::Started(n) => assert!(self.started.insert(n)),
                Event::Finished(n) => assert!(self.finished.insert(n)),
            }
        }
        assert_eq!(self.started, self.finished, "handler futures left behind");
    }
}

fn dedup(ids: Vec<RequestId>) -> Vec<RequestId> {
    let mut seen = HashSet::new();
    ids.into_iter()
        .filter(|id| seen.insert(id.clone()))
        .collect()
}

fn run(server: bool, script: Vec<Op>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async move {
        let mut run = Run::new(server);
        let mut disconnected = false;
        for op in script {
            if let Op::Disconnect(by_peer) = op {
                run.disconnect(by_peer).await;
                disconnected = true;
                break;
            }
            run.step(op).await;
        }
        if !disconnected {
            run.finish().await;
            run.disconnect(false).await;
        }
        run.check().await;
    });
}

proptest! {
    #![proptest_config(ProptestConfig {
        // `PROPTEST_CASES` for a deeper run.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(96),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Issue 25, "Fuzzing", property tests: the session never answers one request
    /// twice and never leaves a pending entry behind, whatever the interleaving of
    /// requests, responses, cancellations and disconnects, in both roles.
    #[test]
    fn every_request_is_answered_once_and_nothing_is_left_behind(
        server in any::<bool>(),
        script in proptest::collection::vec(op(), 1..40),
    ) {
        run(server, script);
    }
}
