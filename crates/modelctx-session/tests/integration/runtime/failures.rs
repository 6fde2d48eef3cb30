//! Handler errors, notifications, and responses that cannot be read.

use super::*;

// ---------------------------------------------------------------------------------------
// Handler errors and notifications
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_handler_answers_internal_error_and_the_session_lives_on() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    let err = h.error_answer(1, "panic", Value::Null).await;
    assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
    assert!(!err.message.contains("secret"), "{}", err.message);
    assert!(!err.message.contains("hunter2"), "{}", err.message);
    assert!(err.data.is_none());

    h.assert_echoed(2, json!({ "after": "panic" })).await;
}

#[tokio::test]
async fn handler_errors_reach_the_wire_with_their_codes() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    let err = h.error_answer(1, "no/such/method", Value::Null).await;
    assert_eq!(err.code, ErrorCode::METHOD_NOT_FOUND);
    assert!(err.message.contains("no/such/method"), "{}", err.message);

    let err = h.error_answer(2, "typed", json!({ "count": "many" })).await;
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    let err = h.error_answer(3, "typed", Value::Null).await;
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);

    assert_eq!(
        h.answer(4, "typed", json!({ "count": 3 })).await,
        json!({ "count": 3 })
    );
}

#[tokio::test]
async fn notifications_are_delivered_in_order_and_never_answered() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.mock
        .notify("notifications/roots/list_changed", json!({ "n": 1 }))
        .await;
    // A notification named like a request method is still never answered.
    h.mock.notify("echo", json!({ "n": 2 })).await;
    h.mock
        .notify("notifications/unknown", json!({ "n": 3 }))
        .await;
    h.ping_sync(1).await;

    let mut seen = Vec::new();
    for _ in 0..3 {
        match h.next_event().await {
            Event::Notification(n) => {
                seen.push((
                    n.method.to_string(),
                    params_of(n.params.as_deref())["n"].clone(),
                ));
            }
            other => panic!("a notification ran a request handler: {other:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            ("notifications/roots/list_changed".to_owned(), json!(1)),
            ("echo".to_owned(), json!(2)),
            ("notifications/unknown".to_owned(), json!(3)),
        ]
    );
}

#[tokio::test]
async fn errors_without_id_reach_the_service_in_order_and_are_never_answered() {
    for role in [SessionConfig::server(), SessionConfig::client()] {
        let mut h = Harness::new(role.pre_initialized());
        // A request of ours in flight: an error without id answers none of them.
        let (call, sent) = sent(&mut h, "echo", RequestOptions::new()).await;

        h.mock.notify("notifications/a", json!({ "n": 1 })).await;
        h.mock
            .send_json(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            )
            .await;
        h.mock
            .send_json(r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"no id at all"}}"#)
            .await;
        h.mock.notify("notifications/b", json!({ "n": 2 })).await;
        // Answered as the very next message: nothing answered the errors.
        h.ping_sync(1).await;

        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(match h.next_event().await {
                Event::Notification(n) => n.method.to_string(),
                Event::PeerError(e) => format!("error {}: {}", e.code, e.message),
                other => panic!("unexpected event {other:?}"),
            });
        }
        assert_eq!(
            seen,
            [
                "notifications/a",
                "error -32700: Parse error",
                "error -32600: no id at all",
                "notifications/b",
            ]
        );
        // The request still waits for its own answer.
        h.mock.respond(sent.id, json!({ "mine": true })).await;
        assert_eq!(
            params_of(Some(&call.await.unwrap())),
            json!({ "mine": true })
        );
    }
}

#[tokio::test]
async fn a_notification_handler_that_waits_holds_back_the_later_ones() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    // The first handler does not finish at once; the two after it wait their turn.
    h.mock.notify("notifications/slow", json!({ "n": 1 })).await;
    h.mock.notify("notifications/a", json!({ "n": 2 })).await;
    h.mock.notify("notifications/b", json!({ "n": 3 })).await;
    h.ping_sync(1).await;
    assert!(
        h.events.try_recv().is_err(),
        "a later notification overtook the waiting handler"
    );

    h.release.notify_one();
    let mut seen = Vec::new();
    for _ in 0..3 {
        match h.next_event().await {
            Event::Notification(n) => seen.push(params_of(n.params.as_deref())["n"].clone()),
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(seen, [json!(1), json!(2), json!(3)]);

    // Later ones still arrive, in order.
    h.mock.notify("notifications/c", json!({ "n": 4 })).await;
    match h.next_event().await {
        Event::Notification(n) => assert_eq!(params_of(n.params.as_deref())["n"], json!(4)),
        other => panic!("unexpected event {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Responses that cannot be read
// ---------------------------------------------------------------------------------------

/// The in-memory transport plus a way in for text as if read off a wire: decoded with
/// `JsonRpcMessage::from_slice`, as stdio and HTTP decode, so text that is no valid
/// message reaches the session as the transport error those transports give.
struct WireTransport {
    inner: MemoryTransport,
    raw: mpsc::UnboundedReceiver<String>,
}

struct WireStream {
    inner: MemoryStream,
    raw: mpsc::UnboundedReceiver<String>,
}

impl Transport for WireTransport {
    type Sink = MemorySink;
    type Stream = WireStream;

    fn split(self) -> (MemorySink, WireStream) {
        let (sink, inner) = self.inner.split();
        (
            sink,
            WireStream {
                inner,
                raw: self.raw,
            },
        )
    }
}

impl MessageStream for WireStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                Some(text) = self.raw.recv() => Some(
                    JsonRpcMessage::from_slice(text.as_bytes())
                        .map(TransportMessage::new)
                        .map_err(TransportError::invalid),
                ),
                next = self.inner.recv() => next,
            }
        })
    }
}

/// A harness whose mock can also write raw text.
fn wire_harness(config: SessionConfig) -> (Harness, mpsc::UnboundedSender<String>) {
    let (inner, mock) = MockPeer::pair();
    let (tx, raw) = mpsc::unbounded_channel();
    (
        Harness::over(WireTransport { inner, raw }, mock, config),
        tx,
    )
}

/// Waits for the service to hear of a peer error.
async fn peer_error(h: &mut Harness) -> ErrorData {
    match h.next_event().await {
        Event::PeerError(e) => e,
        other => panic!("expected a peer error, got {other:?}"),
    }
}

/// Found by the property tests: a response whose error object could not be
/// read was taken for an invalid request — the session answered the peer's *response*
/// with `-32600`, and the call waited for its timeout. Now the call fails as soon as the
/// response arrives (with a one-hour timeout, the bounded wait shows it did not time
/// out), the service hears of it, nothing goes back, and the session goes on.
#[tokio::test]
async fn a_response_that_cannot_be_read_fails_its_call_at_once_and_is_never_answered() {
    let cases = [
        (
            r#""error":{"code":-32000}"#,
            "error object cannot be read: missing field `message`",
        ),
        (
            r#""error":{"code":"oops","message":"m"}"#,
            "error object cannot be read",
        ),
        (
            r#""error":{"code":1.5,"message":"m"}"#,
            "error object cannot be read",
        ),
        (
            r#""result":{},"error":{"code":-32000,"message":"m"}"#,
            "both result and error",
        ),
    ];
    for config in [SessionConfig::server(), SessionConfig::client()] {
        let (mut h, raw) = wire_harness(config.pre_initialized());
        let options = || RequestOptions::new().timeout(Duration::from_secs(3600));
        for (n, (members, says)) in cases.into_iter().enumerate() {
            let (call, req) = sent(&mut h, "echo", options()).await;
            let id = serde_json::to_string(&req.id).unwrap();
            raw.send(format!(r#"{{"jsonrpc":"2.0","id":{id},{members}}}"#))
                .unwrap();
            let err = tokio::time::timeout(Duration::from_secs(5), call)
                .await
                .expect("the call fails at once, not at its timeout")
                .unwrap_err();
            assert!(err.is_invalid_response(), "{members}: {err}");
            assert!(!err.is_timeout());
            let text = err.to_string();
            assert!(text.starts_with("invalid response from peer: "), "{text}");
            assert!(text.contains(says), "{members}: {text}");
            assert_eq!(err.to_error_data().code, ErrorCode::INTERNAL_ERROR);
            // The service hears of it, naming the request.
            let heard = peer_error(&mut h).await;
            assert_eq!(heard.code, ErrorCode::INTERNAL_ERROR);
            assert!(
                heard.message.contains(&format!("to request {}", req.id)),
                "{heard:?}"
            );
            // Nothing answered the response: the ping's answer is the next message.
            h.ping_sync(100 + n as i64).await;
            // The next call is answered as usual.
            let (call, req) = sent(&mut h, "echo", options()).await;
            h.mock.respond(req.id, json!({ "n": n })).await;
            assert_eq!(params_of(Some(&call.await.unwrap())), json!({ "n": n }));
        }
    }
}

/// A response that cannot be read and answers none of our requests (an unknown id, or
/// none at all) is reported to the service and dropped: never answered, and a call in
/// flight keeps waiting for its own answer.
#[tokio::test]
async fn a_response_that_cannot_be_read_for_an_unknown_id_is_reported_and_dropped() {
    let (mut h, raw) = wire_harness(SessionConfig::client().pre_initialized());
    let (call, req) = sent(&mut h, "echo", RequestOptions::new()).await;
    for text in [
        r#"{"jsonrpc":"2.0","id":999,"error":{"code":-32000}}"#,
        r#"{"jsonrpc":"2.0","error":{"code":"x","message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
    ] {
        raw.send(text.to_owned()).unwrap();
        let heard = peer_error(&mut h).await;
        assert_eq!(heard.code, ErrorCode::INTERNAL_ERROR, "{text}");
        assert!(
            heard.message.starts_with("invalid response from peer"),
            "{heard:?}"
        );
    }
    h.ping_sync(1).await;
    h.mock.respond(req.id, json!({ "mine": true })).await;
    assert_eq!(
        params_of(Some(&call.await.unwrap())),
        json!({ "mine": true })
    );
    // A request that is not valid is still answered, as before.
    raw.send(r#"{"jsonrpc":"2.0","id":7,"method":3}"#.to_owned())
        .unwrap();
    let error = h.mock.expect_error(Some(RequestId::Number(7))).await;
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
}
