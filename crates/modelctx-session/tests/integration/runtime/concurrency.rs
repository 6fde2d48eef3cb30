//! The bounds on concurrent work, and cancellation of inbound requests.

use super::*;

// ---------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------

/// A harness on a pre-initialized server session, its settings adjusted by `adjust`.
fn pre_initialized_server(adjust: impl FnOnce(SessionConfig) -> SessionConfig) -> Harness {
    Harness::new(adjust(SessionConfig::server().pre_initialized()))
}

#[tokio::test]
async fn a_stuck_handler_delays_neither_ping_nor_other_requests() {
    let mut h = Harness::new(SessionConfig::server());
    h.serve_handshake().await;

    h.start_slow(1).await;
    h.assert_echoed(2, json!({ "n": 2 })).await;
    h.ping_sync(3).await;

    h.release.notify_one();
    assert_eq!(h.mock.expect_result(1).await, json!({ "released": true }));
}

#[tokio::test]
async fn the_concurrency_bound_queues_requests_but_never_ping() {
    let mut h = pre_initialized_server(|config| config.max_concurrent_requests(1));

    h.start_slow(1).await;
    h.mock.request(2, "echo", json!({ "n": 2 })).await;
    // Ping is answered while the only slot is taken, and the echo has not started.
    h.ping_sync(3).await;
    assert!(h.started_so_far().is_empty());

    h.release.notify_one();
    assert_eq!(
        h.next_responses(2).await,
        [RequestId::from(1), RequestId::from(2)]
    );
    assert_eq!(h.started_so_far(), ["echo"]);
}

#[tokio::test]
async fn beyond_the_in_flight_bound_a_request_is_refused_at_once() {
    let mut h = pre_initialized_server(|config| config.max_requests_in_flight(2));

    h.start_slow(1).await;
    h.start_slow(2).await;
    // A third is refused without running, with the bound in the error.
    let err = h.error_answer(3, "echo", json!({})).await;
    assert_eq!(err.code, modelctx_session::TOO_MANY_REQUESTS);
    assert!(err.message.contains("at most 2"), "{}", err.message);
    assert_eq!(err.data, Some(json!({"limit": 2})));
    assert!(h.started_so_far().is_empty());
    // Ping is never refused.
    h.ping_sync(4).await;

    h.release.notify_one();
    h.release.notify_one();
    assert_eq!(
        h.next_responses(2).await,
        [RequestId::from(1), RequestId::from(2)]
    );
    // Room again: the refused request, sent again, runs.
    h.assert_echoed(3, json!({"again": 3})).await;
}

#[tokio::test]
async fn a_shared_handler_limit_bounds_the_work_of_several_sessions() {
    let limit = modelctx_session::HandlerLimit::new(1);
    let config = || {
        SessionConfig::server()
            .pre_initialized()
            .handler_limit(limit.clone())
    };
    let mut a = Harness::new(config());
    let mut b = Harness::new(config());

    a.mock.request(1, "slow", Value::Null).await;
    a.started("slow").await;
    assert_eq!(limit.available(), 0);
    // The other session's request waits for the shared slot; its pings do not.
    b.mock.request(1, "echo", json!({"b": 1})).await;
    b.ping_sync(2).await;
    assert!(b.started_so_far().is_empty());

    a.release.notify_one();
    assert_eq!(a.mock.expect_result(1).await, json!({"released": true}));
    assert_eq!(b.mock.expect_result(1).await, json!({"b": 1}));
    assert_eq!(b.started_so_far(), ["echo"]);
}

#[tokio::test]
async fn a_duplicate_inbound_id_in_flight_is_rejected() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.start_slow(1).await;
    h.expect_invalid_request(1, "echo", json!({})).await;
    h.release.notify_one();
    assert_eq!(h.mock.expect_result(1).await, json!({ "released": true }));
    // Once answered, the id may be used again.
    h.assert_echoed(1, json!({ "again": true })).await;
}

// ---------------------------------------------------------------------------------------
// Inbound cancellation
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn inbound_cancellation_fires_the_token_and_suppresses_the_response() {
    let mut h = Harness::new(SessionConfig::server());
    h.serve_handshake().await;

    let (id, token1) = h.start_slow(1).await;
    assert_eq!(id, RequestId::from(1));
    h.mock
        .notify(
            "notifications/cancelled",
            json!({ "requestId": 1, "reason": "changed my mind" }),
        )
        .await;
    tokio::time::timeout(Duration::from_secs(5), token1.cancelled())
        .await
        .expect("the handler's token fires");
    // No response for it: the ping answer comes next.
    h.ping_sync(3).await;

    // A second slow request, and cancellations for ids not in flight: ignored.
    let (_, token2) = h.start_slow(2).await;
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": 99 }))
        .await;
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": "nope" }))
        .await;
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": 1 }))
        .await;
    h.ping_sync(4).await;
    assert!(!token2.is_cancelled(), "only the cancelled request's token");

    // Release one waiter. Had request 1's handler kept running, it would be first in line
    // and answer id 1; it was dropped, so request 2 answers.
    h.release.notify_one();
    assert_eq!(h.mock.expect_result(2).await, json!({ "released": true }));

    // A cancellation for a request already answered changes nothing.
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": 2 }))
        .await;
    h.assert_echoed(5, json!({ "alive": true })).await;
}
