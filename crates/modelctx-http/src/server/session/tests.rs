//! The session's routing, streams and resumption.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use modelctx_transport::{Extensions, MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::{JsonRpcMessage, RequestId};
use tokio::sync::{mpsc, oneshot};

use super::{Answer, HttpServerTransport, SessionState};
use crate::server::config::StreamableHttpServerConfig;
use crate::server::event_store::{EventId, InMemoryEventStore};

fn note(i: usize) -> TransportMessage {
    let text = format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"i":{i}}}}}"#);
    TransportMessage::new(text.parse().unwrap())
}

fn request(id: i64) -> JsonRpcMessage {
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"}}"#);
    text.parse().unwrap()
}

fn answer(id: i64) -> TransportMessage {
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
    TransportMessage::new(text.parse().unwrap())
}

/// A stateful session with the default configuration, past its handshake: its state,
/// and its transport as the runtime holds it.
fn initialized_session() -> (Arc<SessionState>, HttpServerTransport) {
    let config = StreamableHttpServerConfig::default();
    let state = SessionState::new(Arc::from("s"), true, Arc::new(config), None);
    let transport = HttpServerTransport {
        state: state.clone(),
        pre_initialized: true,
        stateless_era: false,
    };
    (state, transport)
}

fn open(state: &SessionState, id: i64) -> (u64, oneshot::Receiver<()>) {
    match state.open_answer(&[RequestId::Number(id)]) {
        Answer::Sse {
            stream, handled, ..
        } => (stream, handled),
        Answer::Json(..) => panic!("expected an SSE answer"),
    }
}

/// Opens the SSE answer of request `id` and pushes the request on it: the signal of
/// the request's being handled.
async fn open_and_push(state: &SessionState, id: i64) -> oneshot::Receiver<()> {
    let (stream, handled) = open(state, id);
    state
        .push(
            smallvec::smallvec![request(id)],
            Some(stream),
            &Extensions::new(),
        )
        .await
        .unwrap();
    handled
}

#[tokio::test]
async fn the_routes_give_their_room_back_as_requests_end() {
    let (state, transport) = initialized_session();
    let (sink, _stream) = transport.split();
    for id in 1..=2_000 {
        open(&state, id);
    }
    let room = || {
        let routes = state.routes();
        (routes.requests.capacity(), routes.streams.capacity())
    };
    assert!(room().0 >= 2_000 && room().1 >= 2_000, "{:?}", room());
    for id in 1..=2_000 {
        sink.send(answer(id)).await.unwrap();
    }
    let kept = modelctx_store::table::KEPT_CAPACITY;
    assert!(room().0 <= kept && room().1 <= kept, "{:?}", room());
}

#[tokio::test]
async fn an_sse_head_waits_until_the_runtime_handled_the_post() {
    let (state, transport) = initialized_session();
    let (sink, mut stream) = transport.split();

    // Released when the runtime comes back for the next message (a handler that
    // is still running).
    let mut handled = open_and_push(&state, 1).await;
    stream.recv().await.unwrap().unwrap();
    assert!(handled.try_recv().is_err(), "not yet handled");
    let next = stream.recv();
    assert!(handled.await.is_err(), "released by the next recv");
    drop(next);

    // Released by the stream's first event (a transport user that answers before
    // asking for more).
    let mut handled = open_and_push(&state, 2).await;
    stream.recv().await.unwrap().unwrap();
    assert!(handled.try_recv().is_err(), "not yet handled");
    sink.send(answer(2)).await.unwrap();
    assert!(handled.await.is_err(), "released by the answer");

    // Released when the session ends.
    let handled = open_and_push(&state, 3).await;
    state.terminate();
    assert!(handled.await.is_err(), "released by the end");
}

/// An event store whose first replay answers only once `go` is sent, saying on
/// `called` that it was asked (a remote store's round trip, made observable).
struct SlowReplay {
    inner: InMemoryEventStore,
    called: mpsc::UnboundedSender<()>,
    go: Mutex<Option<oneshot::Receiver<()>>>,
}

impl crate::server::event_store::EventStore for SlowReplay {
    fn store(&self, session: &str, id: EventId, data: Arc<str>) {
        self.inner.store(session, id, data);
    }

    fn replay_after(
        &self,
        session: &str,
        after: EventId,
    ) -> BoxFuture<'static, crate::server::event_store::Replay> {
        // What was stored when asked; the answer comes later.
        let snapshot = self.inner.replay_after(session, after);
        let go = self.go.lock().unwrap().take();
        let _ = self.called.send(());
        Box::pin(async move {
            if let Some(go) = go {
                let _ = go.await;
            }
            snapshot.await
        })
    }

    fn forget_session(&self, session: &str) {
        self.inner.forget_session(session);
    }
}

#[tokio::test]
async fn events_routed_while_the_store_reads_reach_the_resumed_stream_once() {
    let (called, mut asked) = mpsc::unbounded_channel();
    let (go, gate) = oneshot::channel();
    let store = SlowReplay {
        inner: InMemoryEventStore::new(),
        called,
        go: Mutex::new(Some(gate)),
    };
    let config = StreamableHttpServerConfig::default()
        .stream_queue(2)
        .event_store(Arc::new(store));
    let state = SessionState::new(Arc::from("s"), true, Arc::new(config), None);
    let unread = state.open_standalone().unwrap();
    for i in 0..5 {
        state.route_outbound(note(i)).unwrap();
    }
    assert!(!state.has_live_connection(), "the slow reader was cut off");
    drop(unread);
    let resuming = tokio::spawn({
        let state = state.clone();
        async move { state.resume(EventId { stream: 0, seq: 0 }).await }
    });
    tokio::time::timeout(std::time::Duration::from_secs(5), asked.recv())
        .await
        .unwrap();
    // Routed while the store is being read: not in its answer, not on any
    // connection.
    for i in 5..8 {
        state.route_outbound(note(i)).unwrap();
    }
    go.send(()).unwrap();
    let resumed = tokio::time::timeout(std::time::Duration::from_secs(5), resuming)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // And after: on the new connection.
    for i in 8..10 {
        state.route_outbound(note(i)).unwrap();
    }
    state.terminate();
    let text = String::from_utf8(resumed.collect::<Vec<Bytes>>().await.concat()).unwrap();
    let mut at = 0;
    for i in 0..10 {
        let needle = format!(r#""i":{i}}}"#);
        assert_eq!(text.matches(&needle).count(), 1, "note {i} once: {text}");
        let found = text.find(&needle).unwrap();
        assert!(found >= at, "note {i} in order: {text}");
        at = found;
    }
}

#[tokio::test]
async fn a_slow_reader_is_cut_off_and_resumes_from_the_store() {
    let config = StreamableHttpServerConfig::default()
        .stream_queue(2)
        .event_store(Arc::new(InMemoryEventStore::new()));
    let state = SessionState::new(Arc::from("s"), true, Arc::new(config), None);
    // Never polled: a reader that does not read.
    let unread = state.open_standalone().unwrap();
    for i in 0..10 {
        state.route_outbound(note(i)).unwrap();
    }
    assert!(
        !state.has_live_connection(),
        "the connection was dropped, not grown"
    );
    // What the slow reader still gets: the priming event and what fit the queue.
    let got: Vec<Bytes> = unread.collect().await;
    assert_eq!(got.len(), 3);
    // Everything is in the store, in order, for a resumption after the priming id.
    let resumed = state.resume(EventId { stream: 0, seq: 0 }).await.unwrap();
    state.terminate();
    let events: Vec<Bytes> = resumed.collect().await;
    assert_eq!(events.len(), 10);
    let text = String::from_utf8(events.concat()).unwrap();
    let first = text.find(r#""i":0"#).unwrap();
    let last = text.find(r#""i":9"#).unwrap();
    assert!(first < last);
}

/// Polls `future` once, in the test's own task context.
async fn poll_once<F: std::future::Future + Unpin>(future: &mut F) -> std::task::Poll<F::Output> {
    std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut *future).poll(cx)))
        .await
}

#[tokio::test]
async fn the_runtime_waiting_before_any_queue_exists_receives_what_is_queued_later() {
    let (state, transport) = initialized_session();
    let (_sink, mut stream) = transport.split();
    {
        // The runtime asks first: no queue yet, so its receive waits.
        let mut receiving = stream.recv();
        assert!(poll_once(&mut receiving).await.is_pending());
        // No direct entry was offered: the message has to wait, so the queue is made
        // now, and the waiting receive is woken to take it.
        let queued = state
            .push(
                std::iter::once(request(1)).collect(),
                None,
                &Extensions::new(),
            )
            .await;
        assert_eq!(queued, Ok(true));
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), receiving)
            .await
            .unwrap()
            .expect("a message")
            .expect("readable");
        assert!(matches!(got.message, JsonRpcMessage::Request(r) if r.id == RequestId::Number(1)));
    }
    // Closed: what follows is the end of the stream.
    state.finish_inbound();
    let end = tokio::time::timeout(std::time::Duration::from_secs(5), stream.recv()).await;
    assert!(end.unwrap().is_none());
}

#[tokio::test]
async fn a_session_that_never_queued_ends_its_runtimes_waiting_stream_when_it_takes_no_more() {
    let (state, transport) = initialized_session();
    let (_sink, mut stream) = transport.split();
    let mut receiving = stream.recv();
    assert!(poll_once(&mut receiving).await.is_pending());
    // Stops taking messages without ending the session (a stateless session's end of
    // its POST): no queue was ever made, and the waiting receive is told.
    state.finish_inbound();
    assert!(!state.is_open());
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), receiving)
        .await
        .unwrap();
    assert!(ended.is_none());
    assert_eq!(
        state
            .push(
                std::iter::once(request(2)).collect(),
                None,
                &Extensions::new()
            )
            .await,
        Err(())
    );
}
