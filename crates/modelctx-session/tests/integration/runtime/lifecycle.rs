//! Ping in every phase, and what each role allows before, during and after the handshake.

use super::*;

// ---------------------------------------------------------------------------------------
// Ping
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn server_answers_ping_in_every_phase_and_pings_out() {
    let mut h = Harness::new(SessionConfig::server());

    // New: ping is answered with an empty object.
    assert_eq!(h.answer(1, "ping", Value::Null).await, json!({}));

    // The server's own ping goes out before initialize and resolves only on the answer.
    let mut ping = Box::pin(h.peer.ping());
    assert!(ping.as_mut().now_or_never().is_none());
    let req = h.mock.expect_request("ping").await;
    assert!(req.params.is_none());
    assert!(
        ping.as_mut().now_or_never().is_none(),
        "ping resolved before the answer"
    );
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap();

    // Initializing (initialize answered, notifications/initialized not yet received).
    h.mock.request(2, "initialize", init_params()).await;
    h.mock.expect_result(2).await;
    assert_eq!(h.answer(3, "ping", Value::Null).await, json!({}));
    assert!(!h.peer.is_initialized());

    // Operational.
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    assert_eq!(h.answer(4, "ping", Value::Null).await, json!({}));
    assert!(h.peer.is_initialized());
    // A string id is echoed as a string.
    h.mock.request("p", "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result("p").await, json!({}));

    h.ping_out().await;
}

#[tokio::test]
async fn client_answers_ping_in_every_phase_and_pings_out() {
    let mut h = Harness::new(SessionConfig::client());
    assert_eq!(h.peer.role(), Role::Client);

    // New.
    assert_eq!(h.answer(1, "ping", Value::Null).await, json!({}));
    let mut ping = Box::pin(h.peer.ping());
    assert!(ping.as_mut().now_or_never().is_none());
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap();

    // Initializing: initialize sent and answered, notifications/initialized not sent.
    let init = tokio::spawn(request(&h.peer, "initialize", init_params()));
    let req = h.mock.expect_request("initialize").await;
    assert_eq!(h.answer(2, "ping", Value::Null).await, json!({}));
    h.mock.respond(req.id, server_init_result()).await;
    init.await.unwrap().unwrap();
    assert_eq!(h.answer(3, "ping", Value::Null).await, json!({}));
    h.ping_out().await;

    // Operational.
    h.send_initialized().await;
    assert_eq!(h.answer(4, "ping", Value::Null).await, json!({}));
}

// ---------------------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn server_rejects_requests_before_initialize() {
    let mut h = Harness::new(SessionConfig::server());

    let err = h.expect_invalid_request(1, "echo", json!({ "x": 1 })).await;
    assert!(err.message.contains("echo"), "{}", err.message);

    // The handshake still works afterwards, and the rejected request never ran.
    h.serve_handshake().await;
    h.echo(2).await;
    let started = h.started_so_far();
    assert_eq!(started, ["initialize", "echo"]);
}

#[tokio::test]
async fn a_server_started_past_an_initialize_answered_elsewhere_waits_for_initialized() {
    // What a process continuing a shared session runs when another process answered
    // `initialize` and the client's `notifications/initialized` has not arrived.
    let mut h = Harness::new(SessionConfig::server().initialize_answered());
    assert!(!h.peer.is_initialized());

    // Only ping is served; `initialize` too is refused (it was answered).
    h.expect_invalid_request(1, "echo", json!({ "x": 1 })).await;
    h.expect_invalid_request(2, "initialize", init_params())
        .await;
    h.ping_sync(3).await;
    assert_eq!(h.started_so_far(), Vec::<String>::new());

    // The note makes it operational, as after a handshake of its own.
    h.initialized_makes_it_operational(4).await;
}

#[tokio::test]
async fn server_serves_initialize_once_then_waits_for_initialized() {
    let mut h = Harness::new(SessionConfig::server());

    h.mock.request(1, "initialize", init_params()).await;
    let result = h.mock.expect_result(1).await;
    assert_eq!(result["serverInfo"]["name"], "test");
    assert!(!h.peer.is_initialized());

    // A second initialize is refused, and never reaches the service.
    h.expect_invalid_request(2, "initialize", init_params())
        .await;

    // Between the initialize response and notifications/initialized: rejected.
    h.expect_invalid_request(3, "echo", json!({ "x": 3 })).await;
    assert_eq!(h.started_so_far(), ["initialize"]);

    // notifications/initialized makes the session operational and reaches the service.
    h.initialized_makes_it_operational(4).await;

    // Still only once, even when operational.
    h.expect_invalid_request(5, "initialize", init_params())
        .await;
    assert_eq!(h.started_so_far(), ["echo"]);
}

#[tokio::test]
async fn a_pipelined_handshake_still_becomes_operational() {
    let mut h = Harness::new(SessionConfig::server());

    // The client sends notifications/initialized without waiting for the answer.
    h.mock.request(1, "initialize", init_params()).await;
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    let result = h.mock.expect_result(1).await;
    assert_eq!(result["serverInfo"]["name"], "test");
    assert_eq!(h.notified("notifications/initialized").await, Value::Null);

    // Once the answer is out, the session is operational: no second notification needed.
    h.echo(2).await;
    assert!(h.peer.is_initialized());
}

#[tokio::test]
async fn server_failed_initialize_may_be_retried() {
    let mut h = Harness::new(SessionConfig::server());

    h.mock
        .request(1, "initialize", json!({ "fail": true }))
        .await;
    let err = h.mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
    // Still in the first phase: other requests are rejected.
    h.expect_invalid_request(2, "echo", json!({})).await;

    // The retry is served, and the session then completes its handshake.
    h.serve_handshake().await;
    h.assert_echoed(3, json!({ "ok": true })).await;
}

#[tokio::test]
async fn server_refuses_outbound_requests_until_initialized_but_may_log() {
    let mut h = Harness::new(SessionConfig::server());

    // New: a request is refused locally, a log message goes out.
    let refused = start_req(&h.peer, "roots/list", Value::Null, RequestOptions::new());
    assert!(refused.id().is_none());
    let err = refused.await.unwrap_err();
    assert!(err.is_refused(), "{err}");
    h.notify_refused("notifications/tools/list_changed").await;
    h.peer
        .notify_raw(
            Cow::Borrowed("notifications/message"),
            Some(raw(json!({ "level": "info", "data": "starting" }))),
        )
        .await
        .unwrap();
    // The refused request left nothing on the wire: the log message comes next.
    let log = h.mock.expect_notification("notifications/message").await;
    assert_eq!(
        params_of(log.params.as_deref()),
        json!({ "level": "info", "data": "starting" })
    );

    // Initializing: still refused.
    h.mock.request(1, "initialize", init_params()).await;
    h.mock.expect_result(1).await;
    let err = request(&h.peer, "roots/list", Value::Null)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    h.ping_sync(2).await;

    // Operational: the request goes out.
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    h.ping_sync(3).await;
    let call = tokio::spawn(request(&h.peer, "roots/list", Value::Null));
    let req = h.mock.expect_request("roots/list").await;
    h.mock.respond(req.id, json!({ "roots": [] })).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({ "roots": [] }));
}

#[tokio::test]
async fn client_sends_initialize_once_then_initialized_then_anything() {
    let mut h = Harness::new(SessionConfig::client());

    // Before the handshake: other requests and notifications/initialized are refused.
    let err = request(&h.peer, "tools/list", Value::Null)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    h.notify_refused("notifications/initialized").await;
    // An inbound request other than ping is rejected before the handshake.
    h.expect_invalid_request(1, "roots/list", Value::Null).await;

    // initialize: allowed once; the refused requests left nothing on the wire.
    let init = tokio::spawn(request(&h.peer, "initialize", init_params()));
    let req = h.mock.expect_request("initialize").await;
    assert_eq!(params_of(req.params.as_deref()), init_params());
    h.mock.respond(req.id, server_init_result()).await;
    assert_eq!(init.await.unwrap().unwrap(), server_init_result());
    let err = request(&h.peer, "initialize", init_params())
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    let err = request(&h.peer, "tools/list", Value::Null)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    assert!(!h.peer.is_initialized());

    // notifications/initialized: operational.
    h.send_initialized().await;
    assert!(h.peer.is_initialized());
    let call = tokio::spawn(request(&h.peer, "tools/list", Value::Null));
    let req = h.mock.expect_request("tools/list").await;
    h.mock.respond(req.id, json!({ "tools": [] })).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({ "tools": [] }));

    // Inbound requests are now served.
    h.assert_echoed(2, json!({ "y": 1 })).await;
}
