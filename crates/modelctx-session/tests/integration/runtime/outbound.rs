//! Outbound requests: their ids, their answers, their cancellation.

use super::*;

// ---------------------------------------------------------------------------------------
// Outbound requests
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn outbound_ids_are_unique_increasing_and_correlated() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let handles: Vec<_> = (0..3)
        .map(|i| start_req(&h.peer, "work", json!({ "i": i }), RequestOptions::new()))
        .collect();
    let ids: Vec<i64> = handles.iter().map(|h| id_num(&h.id().unwrap())).collect();
    assert!(ids[0] > 0 && ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");
    let calls: Vec<_> = handles.into_iter().map(tokio::spawn).collect();

    let mut wire = Vec::new();
    for _ in 0..3 {
        let req = h.mock.expect_request("work").await;
        wire.push((
            id_num(&req.id),
            params_of(req.params.as_deref())["i"].clone(),
        ));
    }
    wire.sort_by_key(|(id, _)| *id);
    let expected: Vec<_> = ids
        .iter()
        .zip(0..3)
        .map(|(id, i)| (*id, json!(i)))
        .collect();
    assert_eq!(wire, expected, "each wire id carries its own request");

    // Answered out of order, each call gets its own result.
    for (id, i) in wire.iter().rev() {
        h.mock.respond(*id, json!({ "answer": i })).await;
    }
    for (call, i) in calls.into_iter().zip(0..3) {
        let result = call.await.unwrap().unwrap();
        assert_eq!(params_of(Some(&result)), json!({ "answer": i }));
    }

    // Ids are never reused.
    let next = start_req(&h.peer, "work", Value::Null, RequestOptions::new());
    assert!(id_num(&next.id().unwrap()) > ids[2]);
}

#[tokio::test]
async fn a_peer_error_response_fails_the_call_with_it() {
    let mut h = Harness::new(SessionConfig::client());
    h.client_handshake().await;
    let call = tokio::spawn(request(&h.peer, "tools/call", json!({ "name": "x" })));
    let req = h.mock.expect_request("tools/call").await;
    h.mock
        .respond_error(
            req.id,
            ErrorData::invalid_params("unknown tool").with_data(json!({ "name": "x" })),
        )
        .await;
    let err = call.await.unwrap().unwrap_err();
    let data = err.protocol_error().expect("a protocol error");
    assert_eq!(data.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(data.message, "unknown tool");
    assert_eq!(data.data, Some(json!({ "name": "x" })));
}

#[tokio::test]
async fn the_canceller_sends_cancelled_and_fails_the_call() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    let handle = start_req(
        &h.peer,
        "sampling/createMessage",
        json!({ "maxTokens": 10 }),
        RequestOptions::new(),
    );
    let id = handle.id().unwrap();
    let canceller = handle.canceller();
    let call = tokio::spawn(handle);
    let req = h.mock.expect_request("sampling/createMessage").await;
    assert_eq!(req.id, id);

    canceller.cancel("user pressed stop").await;
    let note = h.mock.expect_notification("notifications/cancelled").await;
    assert_eq!(
        params_of(note.params.as_deref()),
        json!({ "requestId": id_num(&id), "reason": "user pressed stop" })
    );
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_cancelled(), "{err}");

    // Cancelling again sends nothing: the next message is the ping sent after it.
    canceller.cancel("again").await;
    h.ping_out().await;
}

#[tokio::test]
async fn late_and_unknown_responses_are_ignored() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    // Request A is cancelled; request B is in flight.
    let a = start_req(&h.peer, "a", Value::Null, RequestOptions::new());
    let a_id = a.id().unwrap();
    let a_cancel = a.canceller();
    let a_call = tokio::spawn(a);
    h.mock.expect_request("a").await;
    a_cancel.cancel("no longer needed").await;
    h.mock.expect_notification("notifications/cancelled").await;
    assert!(a_call.await.unwrap().unwrap_err().is_cancelled());

    let mut b = start_req(&h.peer, "b", Value::Null, RequestOptions::new());
    let b_id = b.id().unwrap();
    assert!((&mut b).now_or_never().is_none());
    h.mock.expect_request("b").await;

    // A late response for A, a response for an id never used, an error for one too.
    h.mock.respond(a_id, json!({ "from": "a" })).await;
    h.mock.respond(12345, json!({ "from": "nobody" })).await;
    h.mock.respond("b", json!({ "from": "string id" })).await;
    h.mock
        .respond_error(777, ErrorData::internal_error("stray"))
        .await;
    h.ping_sync(1).await;
    assert!(
        (&mut b).now_or_never().is_none(),
        "a stray response completed another request"
    );

    h.mock.respond(b_id, json!({ "from": "b" })).await;
    let result = b.await.unwrap();
    assert_eq!(params_of(Some(&result)), json!({ "from": "b" }));
}

#[tokio::test]
async fn dropping_a_request_sends_cancelled() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let (handle, req) = sent(&mut h, "slow/thing", RequestOptions::new()).await;
    let id = id_num(&req.id);
    drop(handle);
    h.expect_cancelled(id).await;

    // The same when the task awaiting it is aborted.
    let handle = start_req(&h.peer, "slow/other", Value::Null, RequestOptions::new());
    let id = id_num(&handle.id().unwrap());
    let task = tokio::spawn(handle);
    h.mock.expect_request("slow/other").await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    h.expect_cancelled(id).await;
}

#[tokio::test]
async fn initialize_is_never_announced_as_cancelled() {
    let mut h = Harness::new(SessionConfig::client());

    // Dropped: no notifications/cancelled. The next message is the cancellation of the
    // ping dropped after it (both drops spawn their announcement, in order).
    let mut init = start_req(&h.peer, "initialize", init_params(), RequestOptions::new());
    assert!((&mut init).now_or_never().is_none());
    let init_req = h.mock.expect_request("initialize").await;
    drop(init);
    let (ping, ping_req) = sent(&mut h, "ping", RequestOptions::new()).await;
    let ping_id = id_num(&ping_req.id);
    drop(ping);
    h.expect_cancelled(ping_id).await;
    assert_ne!(ping_id, id_num(&init_req.id));
    h.ping_sync(1).await;
}

#[tokio::test]
async fn a_cancelled_initialize_fails_locally_without_announcement() {
    let mut h = Harness::new(SessionConfig::client());

    let init = start_req(&h.peer, "initialize", init_params(), RequestOptions::new());
    let canceller = init.canceller();
    let call = tokio::spawn(init);
    h.mock.expect_request("initialize").await;
    canceller.cancel("giving up").await;
    assert!(call.await.unwrap().unwrap_err().is_cancelled());
    // Nothing was sent for it: the next message is the ping sent afterwards.
    h.ping_out().await;
}

#[tokio::test]
async fn a_request_cancelled_before_it_is_polled_never_goes_out() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let handle = start_req(&h.peer, "never/sent", Value::Null, RequestOptions::new());
    handle.canceller().cancel("changed my mind").await;
    let err = handle.await.unwrap_err();
    assert!(err.is_cancelled(), "{err}");

    // Neither the request nor a cancellation for it went out: the ping answer is next.
    h.mock.request(1, "ping", Value::Null).await;
    match h.mock.next_message().await {
        JsonRpcMessage::Response(r) => assert_eq!(r.id, RequestId::from(1)),
        other => panic!("expected the ping answer first, got {other:?}"),
    }
}

#[tokio::test]
async fn a_request_dropped_before_it_is_polled_leaves_no_trace() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    drop(start_req(
        &h.peer,
        "never/sent",
        Value::Null,
        RequestOptions::new(),
    ));
    let next = start_req(&h.peer, "after", Value::Null, RequestOptions::new());
    let waiting = tokio::spawn(next);

    // The dropped request never reached the wire, and nothing announced it.
    let r = h.mock.expect_request("after").await;
    h.mock.respond(r.id.clone(), json!({"ok": true})).await;
    assert_eq!(waiting.await.unwrap().unwrap().get(), r#"{"ok":true}"#);
    h.mock.request(9, "ping", Value::Null).await;
    match h.mock.next_message().await {
        JsonRpcMessage::Response(r) => assert_eq!(r.id, RequestId::from(9)),
        other => panic!("expected the ping answer, got {other:?}"),
    }
}
