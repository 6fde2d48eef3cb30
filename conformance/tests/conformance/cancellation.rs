//! Cancellation both ways: a cancelled or abandoned call stops its handler and fails locally, only our own pending requests are named, `initialize` is never cancelled, late and unknown answers are ignored, and closing fails what is pending.

use std::sync::Arc;
use std::time::Duration;

use modelctx::server::{Server, ServerBuilder};
use modelctx::session::{Canceller, RequestOptions};
use modelctx::transport::{MessageSink, MessageStream, TransportMessage};
use modelctx::types::{
    ErrorCode, JsonRpcMessage, JsonRpcResultResponse, ListRootsRequest, ListRootsResult, RequestId,
    to_raw,
};
use modelctx_conformance::{Connector, Direction, Test, TransportKind, conformance_test, within};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use crate::support::{
    Block, DropSignal, Echo, Pair, Work, assert_echoes, cancel_strays, cancelled_call, client,
    connect, payload,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            abandoning_a_call_posts_one_cancellation => abandoning_a_call_stops_its_handler,
            ["client-transport:http:cancel-posts-frame"]
        ),
        conformance_test!(
            abandoning_a_call_sends_one_cancellation_on_a_stream => abandoning_a_call_stops_its_handler,
            ["protocol:cancel:stream-frame"]
        ),
        conformance_test!(
            cancelling_a_call_notifies_the_server_and_fails_locally,
            [
                "protocol:cancel:abort-signal",
                "protocol:cancel:sender-targeting"
            ]
        ),
        conformance_test!(
            abandoning_a_call_stops_its_handler,
            ["protocol:cancel:abort-signal"]
        ),
        conformance_test!(
            abandoning_one_call_leaves_the_others_running,
            ["protocol:cancel:abort-scoped"]
        ),
        conformance_test!(
            cancellations_name_only_our_own_pending_requests,
            ["protocol:cancel:sender-targeting"]
        ),
        conformance_test!(
            a_cancelled_handler_stops_and_sends_no_response,
            [
                "protocol:cancel:handler-abort-propagates",
                "protocol:cancel:in-flight",
                "protocol:cancel:server-survives"
            ]
        ),
        conformance_test!(
            initialize_is_never_cancelled,
            ["protocol:cancel:initialize-not-cancellable"]
        ),
        conformance_test!(
            a_late_response_is_ignored,
            ["protocol:cancel:late-response-ignored"]
        ),
        conformance_test!(
            the_server_can_cancel_its_own_request,
            ["protocol:cancel:server-to-client"]
        ),
        conformance_test!(
            cancelling_an_unknown_id_is_ignored,
            ["protocol:cancel:unknown-id-ignored"]
        ),
        conformance_test!(
            closing_fails_every_pending_request,
            ["protocol:error:connection-closed"]
        ),
    ]
}

/// A server whose `test/block` handler never finishes on its own and reports on
/// `cancelled` when it is stopped, and whose `test/echo` returns its params.
pub(crate) fn blocking_server(
    cancelled: mpsc::UnboundedSender<Value>,
    started: mpsc::UnboundedSender<()>,
) -> Server {
    with_block(Server::builder("blocker", "1.0.0"), cancelled, started)
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(payload(params)) })
        .build()
}

/// A session with [`blocking_server`]: the pair, then what its stopped handlers report
/// and the starts of its handlers.
async fn connect_blocking(
    connector: &Connector,
) -> (
    Pair,
    mpsc::UnboundedReceiver<Value>,
    mpsc::UnboundedReceiver<()>,
) {
    let (cancelled_tx, cancelled_rx) = mpsc::unbounded_channel();
    let (started, started_rx) = mpsc::unbounded_channel();
    let server = blocking_server(cancelled_tx, started);
    let pair = connect(connector, &server, client()).await;
    (pair, cancelled_rx, started_rx)
}

/// `builder` with a `test/block` handler that reports its start on `started`, never
/// finishes on its own, and sends its params on `cancelled` when it is stopped.
fn with_block(
    builder: ServerBuilder,
    cancelled: mpsc::UnboundedSender<Value>,
    started: mpsc::UnboundedSender<()>,
) -> ServerBuilder {
    builder.request_handler::<Block, _, _>(move |params, cx| {
        let cancelled = cancelled.clone();
        let started = started.clone();
        async move {
            let _stopped = DropSignal::new(cancelled, payload(params));
            let _ = started.send(());
            cx.cancellation().cancelled().await;
            Ok(json!({"unreachable": true}))
        }
    })
}

/// Starts a `test/block` call with `params` and waits until its handler runs: the
/// call's id, a canceller for it, and the task awaiting its outcome.
pub(crate) async fn start_blocked(
    pair: &Pair,
    params: Value,
    started: &mut mpsc::UnboundedReceiver<()>,
) -> (
    RequestId,
    Canceller,
    JoinHandle<Result<Value, modelctx::session::SessionError>>,
) {
    let call = pair
        .client
        .start_request::<Block>(params, RequestOptions::new())
        .unwrap();
    let id = call.id().unwrap();
    let canceller = call.canceller();
    let waiting = tokio::spawn(call);
    within("the handler to start", started.recv()).await;
    (id, canceller, waiting)
}

pub(crate) fn cancellations_sent(log: &[modelctx_conformance::Recorded]) -> Vec<Value> {
    log.iter()
        .filter(|r| r.direction == Direction::Sent)
        .filter_map(|r| match &r.message.message {
            JsonRpcMessage::Notification(n) if n.method == "notifications/cancelled" => {
                serde_json::from_str(n.params.as_ref()?.get()).ok()
            }
            _ => None,
        })
        .collect()
}

/// The one `notifications/cancelled` the client sent, which must name the request `id`.
fn the_one_cancellation(pair: &Pair, id: &RequestId) -> Value {
    let sent = cancellations_sent(&pair.wire.messages());
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["requestId"], serde_json::to_value(id).unwrap());
    sent[0].clone()
}

async fn cancelling_a_call_notifies_the_server_and_fails_locally(connector: Connector) {
    let (pair, mut cancelled_rx, mut started_rx) = connect_blocking(&connector).await;

    let (id, canceller, waiting) = start_blocked(&pair, json!({"v": "job"}), &mut started_rx).await;
    canceller.cancel("the user gave up").await;

    cancelled_call(waiting).await;
    assert_eq!(
        within("the handler to see the cancellation", cancelled_rx.recv()).await,
        Some(json!({"v": "job"}))
    );
    let sent = the_one_cancellation(&pair, &id);
    assert_eq!(sent["reason"], "the user gave up");

    // A completed request is never the target of a cancellation.
    let done = pair
        .client
        .start_request::<Echo>(json!({"v": 1}), RequestOptions::new())
        .unwrap();
    let late = done.canceller();
    assert_eq!(payload(done.await.unwrap()), json!({"v": 1}));
    late.cancel("too late").await;
    pair.client.request::<Echo>(json!({"v": 2})).await.unwrap();
    assert_eq!(cancellations_sent(&pair.wire.messages()).len(), 1);
}

async fn abandoning_a_call_stops_its_handler(connector: Connector) {
    let (pair, mut cancelled_rx, mut started_rx) = connect_blocking(&connector).await;

    // The caller gives up by dropping the task that awaits the call.
    let (id, _, waiting) = start_blocked(&pair, json!({"v": "abandoned"}), &mut started_rx).await;
    waiting.abort();

    assert_eq!(
        within("the handler to be stopped", cancelled_rx.recv()).await,
        Some(json!({"v": "abandoned"}))
    );
    the_one_cancellation(&pair, &id);
    // The session goes on serving.
    let echoed = pair
        .client
        .start_request::<Echo>(json!({"v": "after"}), RequestOptions::new())
        .unwrap();
    assert_eq!(
        payload(within("a later call", echoed).await.unwrap()),
        json!({"v": "after"})
    );
}

async fn abandoning_one_call_leaves_the_others_running(connector: Connector) {
    let (cancelled, mut cancelled_rx) = mpsc::unbounded_channel();
    let (block_started, mut block_started_rx) = mpsc::unbounded_channel();
    let (work_started, mut work_started_rx) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let gate = release.clone();
    let server = with_block(
        Server::builder("two-jobs", "1.0.0"),
        cancelled,
        block_started,
    )
    .request_handler::<Work, _, _>(move |params, _cx| {
        let gate = gate.clone();
        let started = work_started.clone();
        async move {
            let _ = started.send(());
            gate.notified().await;
            Ok(payload(params))
        }
    })
    .build();
    let pair = connect(&connector, &server, client()).await;

    let kept = tokio::spawn({
        let client = pair.client.clone();
        async move { client.request::<Work>(json!({"job": "kept"})).await }
    });
    within("the kept call's handler to start", work_started_rx.recv()).await;
    let abandoned = tokio::spawn({
        let client = pair.client.clone();
        async move { client.request::<Block>(json!({"job": "abandoned"})).await }
    });
    within(
        "the abandoned call's handler to start",
        block_started_rx.recv(),
    )
    .await;
    abandoned.abort();
    assert_eq!(
        within("the abandoned handler to stop", cancelled_rx.recv()).await,
        Some(json!({"job": "abandoned"}))
    );
    // The other call was not touched: released now, it answers.
    release.notify_one();
    let result = within("the kept call", kept).await.unwrap().unwrap();
    assert_eq!(payload(result), json!({"job": "kept"}));
}

/// Runs on every leg, the stateless one included: it looks only at what the client
/// sends, not at the handler (on the stateless leg the cancellation reaches a fresh
/// session, which cannot stop the first POST's handler).
async fn cancellations_name_only_our_own_pending_requests(connector: Connector) {
    let (pair, _cancelled_rx, mut started_rx) = connect_blocking(&connector).await;

    let done = pair
        .client
        .start_request::<Echo>(json!({"v": 1}), RequestOptions::new())
        .unwrap();
    let late = done.canceller();
    assert_eq!(
        payload(within("the echo", done).await.unwrap()),
        json!({"v": 1})
    );
    late.cancel("too late").await;

    let (id, canceller, waiting) =
        start_blocked(&pair, json!({"v": "pending"}), &mut started_rx).await;
    canceller.cancel("changed my mind").await;
    cancelled_call(waiting).await;

    // One cancellation went out, for the pending request; none for the answered one.
    the_one_cancellation(&pair, &id);
}

async fn a_cancelled_handler_stops_and_sends_no_response(connector: Connector) {
    let (pair, mut cancelled_rx, mut started_rx) = connect_blocking(&connector).await;

    let (id, canceller, waiting) = start_blocked(&pair, json!({"v": "a"}), &mut started_rx).await;
    canceller.cancel("stop").await;
    within("the handler to stop", cancelled_rx.recv()).await;
    let _ = waiting.await;

    // The session still serves requests, and nothing ever answered the cancelled one.
    assert_echoes::<Echo>(&pair.client, json!({"v": "after"})).await;
    let answers_it = |m: &JsonRpcMessage| match m {
        JsonRpcMessage::Response(r) => r.id == id,
        JsonRpcMessage::Error(e) => e.id.as_ref() == Some(&id),
        _ => false,
    };
    if connector.kind().serves(TransportKind::StreamableHttp) {
        // The requirement's divergence: the session sends nothing, but streamable HTTP
        // (2025 era, sessions) ends the request's POST with the transport's own -32800
        // (transport:streamable-http:cancelled-request-terminated), which the client
        // ignores: the call above already failed as cancelled.
        let log = pair.wire.wait_for(|log| {
            log.iter()
                .any(|r| r.direction == Direction::Received && answers_it(&r.message.message))
        });
        let answers: Vec<JsonRpcMessage> = within("the POST's end", log)
            .await
            .into_iter()
            .filter(|r| r.direction == Direction::Received)
            .map(|r| r.message.message)
            .filter(|m| answers_it(m))
            .collect();
        assert_eq!(answers.len(), 1, "{answers:?}");
        let JsonRpcMessage::Error(e) = &answers[0] else {
            panic!("the cancelled request got a result: {answers:?}");
        };
        assert_eq!(e.error.code, ErrorCode::REQUEST_CANCELLED);
    } else {
        let answered = pair.wire.received().iter().any(answers_it);
        assert!(!answered, "the cancelled request got a response");
    }
}

async fn initialize_is_never_cancelled(connector: Connector) {
    let (client_side, server_side) = connector.transport_pair().await;
    let (_sink, mut stream) = server_side;
    let short = client().request_timeout(Duration::from_millis(100));
    let connecting = tokio::spawn(short.connect(client_side));

    let first = within("initialize", stream.recv()).await.unwrap().unwrap();
    assert_eq!(first.message.method(), Some("initialize"));
    // Never answered: the connect times out, and the client closes without ever
    // sending notifications/cancelled for initialize.
    let err = within("the connect to time out", connecting)
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    let after = within("the client to close", stream.recv()).await;
    assert!(
        after.is_none(),
        "expected the end of the stream, got {after:?}"
    );
}

async fn a_late_response_is_ignored(connector: Connector) {
    let (client, mut raw) = RawServer::handshake(&connector).await;

    // The client cancels a request; the server answers it anyway, afterwards.
    let call = client
        .start_request::<Echo>(json!({"v": "first"}), RequestOptions::new())
        .unwrap();
    let canceller = call.canceller();
    let waiting = tokio::spawn(call);
    let JsonRpcMessage::Request(first) = raw.next().await else {
        panic!("expected the request");
    };
    canceller.cancel("changed my mind").await;
    let err = within("the call", waiting).await.unwrap().unwrap_err();
    assert!(err.is_cancelled(), "{err}");
    assert_eq!(raw.next().await.method(), Some("notifications/cancelled"));
    raw.answer(first.id.clone(), json!("late")).await;

    // The next request gets its own answer; the late one completed nothing.
    let second = tokio::spawn({
        let client = client.clone();
        async move { client.request::<Echo>(json!({"v": "second"})).await }
    });
    let JsonRpcMessage::Request(req) = raw.next().await else {
        panic!("expected the second request");
    };
    assert_ne!(req.id, first.id);
    raw.answer(req.id, json!("second answer")).await;
    assert_eq!(
        within("the second call", second).await.unwrap().unwrap(),
        json!("second answer")
    );
}

/// A scripted server side that has completed the handshake with a real client.
struct RawServer {
    sink: Box<dyn MessageSink>,
    stream: Box<dyn MessageStream>,
}

impl RawServer {
    async fn handshake(connector: &Connector) -> (modelctx::client::Client, Self) {
        let (client_side, (sink, stream)) = connector.transport_pair().await;
        let connecting = tokio::spawn(client().connect(client_side));
        let mut raw = RawServer { sink, stream };
        let JsonRpcMessage::Request(init) = raw.next().await else {
            panic!("expected initialize");
        };
        let result = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "raw", "version": "0"}
        });
        raw.answer(init.id, result).await;
        let client = within("connect", connecting).await.unwrap().unwrap();
        assert_eq!(raw.next().await.method(), Some("notifications/initialized"));
        (client, raw)
    }

    async fn next(&mut self) -> JsonRpcMessage {
        within("the next client message", self.stream.recv())
            .await
            .expect("open")
            .expect("valid")
            .message
    }

    async fn answer(&self, id: RequestId, result: Value) {
        let response = JsonRpcResultResponse::new(id, to_raw(&result).unwrap());
        self.sink
            .send(TransportMessage::new(response.into()))
            .await
            .unwrap();
    }
}

async fn the_server_can_cancel_its_own_request(connector: Connector) {
    let started = Arc::new(Notify::new());
    let (stopped_tx, mut stopped_rx) = mpsc::unbounded_channel();
    let roots = client().request_handler::<ListRootsRequest, _, _>({
        let started = started.clone();
        move |_, cx| {
            let started = started.clone();
            let stopped = stopped_tx.clone();
            async move {
                let _stopped = DropSignal::new(stopped, ());
                started.notify_one();
                cx.cancellation().cancelled().await;
                Ok(ListRootsResult::new(vec![]))
            }
        }
    });
    let pair = connect(
        &connector,
        &Server::builder("asker", "1.0.0").build(),
        roots,
    )
    .await;

    let call = pair
        .server()
        .peer()
        .start_request::<ListRootsRequest>(None, RequestOptions::new());
    let canceller = call.canceller();
    let waiting = tokio::spawn(call);
    within("the client callback to start", started.notified()).await;
    canceller.cancel("no longer needed").await;
    assert!(
        within("the server call", waiting)
            .await
            .unwrap()
            .unwrap_err()
            .is_cancelled()
    );
    within("the client callback to stop", stopped_rx.recv())
        .await
        .unwrap();
}

async fn cancelling_an_unknown_id_is_ignored(connector: Connector) {
    let server = Server::builder("echo", "1.0.0")
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(payload(params)) })
        .build();
    let pair = connect(&connector, &server, client()).await;
    cancel_strays(&pair, [json!(999), json!("never-sent"), json!(1)]).await;
    assert_eq!(
        payload(pair.client.request::<Echo>(json!({"v": 5})).await.unwrap()),
        json!({"v": 5})
    );
    let errors = pair
        .wire
        .received()
        .into_iter()
        .filter(|m| matches!(m, JsonRpcMessage::Error(_)))
        .count();
    assert_eq!(errors, 0);
}

async fn closing_fails_every_pending_request(connector: Connector) {
    let (pair, _cancelled_rx, mut started_rx) = connect_blocking(&connector).await;

    let calls: Vec<_> = (0..3)
        .map(|i| {
            let client = pair.client.clone();
            tokio::spawn(async move { client.request::<Block>(json!({"v": i})).await })
        })
        .collect();
    for _ in 0..3 {
        within("a handler to start", started_rx.recv()).await;
    }
    pair.server().close().await;
    for call in calls {
        let err = within("the pending call to fail", call)
            .await
            .unwrap()
            .unwrap_err();
        assert!(err.is_closed(), "{err}");
    }
    within("the client to notice", pair.client.closed()).await;
    let after = pair.client.request::<Echo>(json!({"v": 3})).await;
    assert!(after.unwrap_err().is_closed());
}
