//! Closing the session, its end, and the order of what it sends.

use super::*;

// ---------------------------------------------------------------------------------------
// Close
// ---------------------------------------------------------------------------------------

/// The request `call` runs fails as closed within `prompt`.
async fn expect_closed_within<T: std::fmt::Debug>(
    prompt: Duration,
    call: tokio::task::JoinHandle<Result<T, modelctx_session::SessionError>>,
) {
    let err = tokio::time::timeout(prompt, call)
        .await
        .expect("fails promptly")
        .unwrap()
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
}

#[tokio::test]
async fn closing_fails_pending_requests_and_cancels_handlers() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    let (_, token) = h.start_slow(1).await;
    let first = tokio::spawn(request(&h.peer, "sampling/createMessage", json!({})));
    h.mock.expect_request("sampling/createMessage").await;
    let (opts, _rx) = progress_options();
    let second = tokio::spawn(start_req(&h.peer, "roots/list", Value::Null, opts));
    h.mock.expect_request("roots/list").await;
    assert!(!h.peer.is_closed());

    h.mock.close().await;
    let prompt = Duration::from_secs(1);
    expect_closed_within(prompt, first).await;
    expect_closed_within(prompt, second).await;
    tokio::time::timeout(prompt, h.peer.closed())
        .await
        .expect("closed() resolves");
    assert!(h.peer.is_closed());
    tokio::time::timeout(prompt, token.cancelled())
        .await
        .expect("the running handler is cancelled");

    // The session closes its end; the cancelled handler never answered.
    h.mock.expect_closed().await;
    // Later calls fail at once.
    assert!(
        request(&h.peer, "roots/list", Value::Null)
            .await
            .unwrap_err()
            .is_closed()
    );
    assert!(
        h.peer
            .notify_raw(Cow::Borrowed("notifications/message"), None)
            .await
            .unwrap_err()
            .is_closed()
    );
    assert!(h.peer.ping().await.unwrap_err().is_closed());
}

// ---------------------------------------------------------------------------------------
// The session's end
// ---------------------------------------------------------------------------------------

/// A sink that takes each message only on its second poll (a write that does not finish
/// at once, like a pipe under load), recording what it took and when it was closed.
struct SlowSink {
    log: Arc<std::sync::Mutex<Vec<String>>>,
    closed: Arc<Notify>,
}

impl modelctx_transport::MessageSink for SlowSink {
    fn send(
        &self,
        message: modelctx_transport::TransportMessage,
    ) -> BoxFuture<'_, Result<(), modelctx_transport::TransportError>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            let text = serde_json::to_string(&message.message).unwrap();
            self.log.lock().unwrap().push(text);
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.log.lock().unwrap().push("closed".to_owned());
            self.closed.notify_one();
        })
    }
}

/// The inbound side: the test's messages, then the end of the stream.
struct Inbound(mpsc::UnboundedReceiver<modelctx_transport::TransportMessage>);

impl modelctx_transport::MessageStream for Inbound {
    fn recv(
        &mut self,
    ) -> BoxFuture<
        '_,
        Option<Result<modelctx_transport::TransportMessage, modelctx_transport::TransportError>>,
    > {
        Box::pin(async move { self.0.recv().await.map(Ok) })
    }
}

#[tokio::test]
async fn answers_given_at_once_leave_before_the_sink_closes_when_the_peer_stops_sending() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let closed = Arc::new(Notify::new());
    let (tx, rx) = mpsc::unbounded_channel();
    let (events, _events) = mpsc::unbounded_channel();
    let service = Arc::new(TestService {
        events,
        release: Arc::new(Notify::new()),
    });
    let peer = start(
        (
            SlowSink {
                log: log.clone(),
                closed: closed.clone(),
            },
            Inbound(rx),
        ),
        service,
        SessionConfig::server(),
    );
    // A ping (answered by the runtime itself) and a request refused before the
    // handshake, then the peer closes its side (stdin reaches EOF).
    let ping = JsonRpcRequest::new(RequestId::from(1), "ping", None);
    let early = JsonRpcRequest::new(RequestId::from(2), "tools/list", None);
    tx.send(modelctx_transport::TransportMessage::new(ping.into()))
        .unwrap();
    tx.send(modelctx_transport::TransportMessage::new(early.into()))
        .unwrap();
    drop(tx);
    tokio::time::timeout(Duration::from_secs(5), peer.closed())
        .await
        .expect("the session ends when its input does");
    tokio::time::timeout(Duration::from_secs(5), closed.notified())
        .await
        .expect("the sink is closed");
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(
        log[..2].iter().any(|l| l.contains(r#""id":1,"result":{}"#)),
        "{log:?}"
    );
    assert!(
        log[..2].iter().any(|l| l.contains(r#""id":2,"error""#)),
        "{log:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Notifications and responses keep their order
// ---------------------------------------------------------------------------------------

/// A client service whose `hold` notification handler waits until released (so later
/// notifications queue behind it) and whose `mark` handler records its call, at call
/// time, before its future runs.
struct Ordering {
    called: Arc<std::sync::Mutex<Vec<String>>>,
    release: Arc<Notify>,
}

impl Service for Ordering {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        _context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        Box::pin(async move { Err(ErrorData::method_not_found(&request.method)) })
    }

    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        _peer: Peer,
    ) -> BoxFuture<'static, ()> {
        self.called
            .lock()
            .unwrap()
            .push(notification.method.to_string());
        let release = self.release.clone();
        Box::pin(async move {
            if notification.method == "hold" {
                release.notified().await;
            }
        })
    }
}

#[tokio::test]
async fn a_response_never_overtakes_a_notification_sent_before_it() {
    let (transport, mut mock) = MockPeer::pair();
    let called = Arc::new(std::sync::Mutex::new(Vec::new()));
    let release = Arc::new(Notify::new());
    let service = Arc::new(Ordering {
        called: called.clone(),
        release: release.clone(),
    });
    let peer = start(
        transport,
        service,
        SessionConfig::client().pre_initialized(),
    );

    let call = tokio::spawn(start_req(&peer, "work", json!({}), RequestOptions::new()));
    let request = mock.expect_request("work").await;
    // A handler still running (so the next ones queue), a notification, then the
    // answer: when the caller sees the answer, the notification's handler was called.
    mock.notify("hold", json!({})).await;
    mock.notify("mark", json!({})).await;
    mock.respond(request.id, json!({"done": true})).await;
    let answer = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call is answered")
        .unwrap()
        .unwrap();
    assert_eq!(params_of(Some(&answer)), json!({"done": true}));
    assert_eq!(*called.lock().unwrap(), ["hold", "mark"]);
    release.notify_one();
}

/// A peer that floods requests and never reads its answers: once the sink is full, the
/// answers waiting for room are bounded (the handlers' by the in-flight bound, the
/// runtime's own — pings, refusals — by a fixed cap, the rest dropped), so the flood
/// costs a bounded number of tasks; the session keeps reading, and serves the peer
/// again once it reads.
#[tokio::test]
async fn a_peer_that_never_reads_costs_bounded_tasks() {
    const IN_FLIGHT: usize = 16;
    const RUNTIME_ANSWERS: usize = 64;
    let channel = modelctx_memory::DEFAULT_CAPACITY;
    let mut h = Harness::new(
        SessionConfig::server()
            .pre_initialized()
            .max_requests_in_flight(IN_FLIGHT),
    );
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    h.ping_sync(0).await;
    let before = tasks();
    let flood = 4 * channel as i64;
    for id in 1..=flood {
        h.mock.request(id, "ping", Value::Null).await;
    }
    for id in flood + 1..=2 * flood {
        h.mock.request(id, "echo", json!({"id": id})).await;
    }
    // Everything was taken: the service sees a notification sent after the flood.
    h.mock.notify("notifications/marker", json!({})).await;
    h.notified("notifications/marker").await;
    let waiting = tasks() - before;
    assert!(
        waiting <= IN_FLIGHT + RUNTIME_ANSWERS,
        "{waiting} tasks wait for a peer that does not read"
    );

    // The peer reads: the channel's worth, the capped runtime answers, the handlers'
    // answers; the rest was dropped.
    let (mut pongs, mut echoes) = (0, 0);
    for _ in 0..channel + RUNTIME_ANSWERS + IN_FLIGHT {
        match h.mock.next_message().await {
            JsonRpcMessage::Response(r) if id_num(&r.id) <= flood => pongs += 1,
            JsonRpcMessage::Response(_) => echoes += 1,
            other => panic!("expected an answer, got {other:?}"),
        }
    }
    assert_eq!((pongs, echoes), (channel + RUNTIME_ANSWERS, IN_FLIGHT));
    h.ping_sync(-1).await;
    h.mock.request(-2, "echo", json!({"again": true})).await;
    assert_eq!(h.mock.expect_result(-2).await, json!({"again": true}));
}

/// SECURITY.md case 27, a progress flood: a caller that does not take its updates
/// (here: the request's future is not polled) holds at most a bounded backlog, whose
/// last entry is the latest update; the callback sees them in order.
#[tokio::test]
async fn a_progress_flood_is_bounded_for_a_caller_that_falls_behind() {
    const BACKLOG: usize = 32;
    let mut h = Harness::new(SessionConfig::client().pre_initialized());
    let (options, mut values) = progress_options();
    let mut call = start_req(&h.peer, "work", Value::Null, options);
    // One poll sends the request; then the caller looks away.
    tokio::select! {
        biased;
        _ = &mut call => panic!("answered before it was asked"),
        () = std::future::ready(()) => {}
    }
    let JsonRpcMessage::Request(request) = h.mock.next_message().await else {
        panic!("expected the request")
    };
    let token = params_of(request.params.as_deref())["_meta"]["progressToken"].clone();
    let flood = 10_000;
    for i in 1..=flood {
        h.mock
            .notify(
                "notifications/progress",
                progress_note(&token, f64::from(i)),
            )
            .await;
    }
    // Notifications are handled in order: once the marker is seen, all were routed.
    h.mock.notify("notifications/marker", json!({})).await;
    h.notified("notifications/marker").await;
    h.mock.respond(request.id, json!({"done": true})).await;
    tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the answer within 5 s")
        .expect("the answer");
    let seen = drain(&mut values);
    assert_eq!(seen.len(), BACKLOG, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order: {seen:?}");
    assert_eq!(seen.last(), Some(&f64::from(flood)), "the latest arrives");
}
