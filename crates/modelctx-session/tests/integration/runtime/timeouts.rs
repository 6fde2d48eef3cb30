//! Timeouts of outbound requests, on paused time.

use super::*;

// ---------------------------------------------------------------------------------------
// Timeouts (paused time: the clock only moves when every task waits)
// ---------------------------------------------------------------------------------------

/// Runs `fut` while driving `call` (which runs its progress callbacks), failing if the
/// call ends first.
async fn while_pending<T>(call: &mut RawCall, fut: impl Future<Output = T>) -> T {
    tokio::select! {
        biased;
        result = call => panic!("the call ended early: {result:?}"),
        value = fut => value,
    }
}

/// Awaits `call` on this task until it times out, then checks that
/// `notifications/cancelled` for it was already on the wire when it returned (no other
/// task ran in between). Returns how long the call took.
async fn expect_timeout(mock: &mut MockPeer, call: RawCall) -> Duration {
    let id = id_num(&call.id().unwrap());
    let t0 = Instant::now();
    let err = call.await.unwrap_err();
    let elapsed = t0.elapsed();
    assert!(err.is_timeout(), "{err}");
    let queued = mock
        .next()
        .now_or_never()
        .expect("notifications/cancelled is sent before the call returns")
        .expect("a message");
    let JsonRpcMessage::Notification(note) = queued.message else {
        panic!("expected notifications/cancelled, got {:?}", queued.message);
    };
    assert_eq!(note.method, "notifications/cancelled");
    let (cancelled_id, reason) = cancelled_params(&note);
    assert_eq!(cancelled_id, id);
    assert!(!reason.is_empty());
    elapsed
}

/// A harness on a pre-initialized client session whose requests time out after `timeout`.
fn client_timing_out_after(timeout: Duration) -> Harness {
    Harness::new(
        SessionConfig::client()
            .pre_initialized()
            .request_timeout(timeout),
    )
}

fn assert_about(elapsed: Duration, expected: Duration) {
    assert!(
        elapsed >= expected && elapsed < expected + Duration::from_millis(20),
        "took {elapsed:?}, expected {expected:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_session_default_timeout_applies_and_the_session_survives() {
    let mut h = client_timing_out_after(Duration::from_millis(300));

    let (call, req) = sent(&mut h, "slow", RequestOptions::new()).await;
    let elapsed = expect_timeout(&mut h.mock, call).await;
    assert_about(elapsed, Duration::from_millis(300));

    // A late response is ignored; the session goes on.
    h.mock
        .respond(req.id.clone(), json!({ "late": true }))
        .await;
    let (call, next) = sent(&mut h, "next", RequestOptions::new()).await;
    assert!(id_num(&next.id) > id_num(&req.id));
    h.mock.respond(next.id, json!({ "ok": true })).await;
    assert_eq!(params_of(Some(&call.await.unwrap())), json!({ "ok": true }));
    h.ping_sync(1).await;
}

#[tokio::test(start_paused = true)]
async fn a_per_request_timeout_overrides_the_default() {
    let mut h = client_timing_out_after(Duration::from_millis(100));

    // Longer than the default: still pending past 100 ms, answered at 400 ms.
    let t0 = Instant::now();
    let options = RequestOptions::new().timeout(Duration::from_millis(500));
    let (mut call, req) = sent(&mut h, "long", options).await;
    while_pending(&mut call, tokio::time::sleep(Duration::from_millis(400))).await;
    h.mock.respond(req.id, json!({ "ok": 1 })).await;
    call.await.unwrap();
    assert_about(t0.elapsed(), Duration::from_millis(400));

    // Shorter than the default.
    let options = RequestOptions::new().timeout(Duration::from_millis(30));
    let (call, _) = sent(&mut h, "short", options).await;
    let elapsed = expect_timeout(&mut h.mock, call).await;
    assert_about(elapsed, Duration::from_millis(30));
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let (opts, mut rx) = resetting_on_progress(None);
    let t0 = Instant::now();
    let (mut call, req) = sent(&mut h, "work", opts).await;
    let token = params_of(req.params.as_deref())["_meta"]["progressToken"].clone();

    while_pending(&mut call, tokio::time::sleep(Duration::from_millis(700))).await;
    h.mock
        .notify("notifications/progress", progress_note(&token, 1.0))
        .await;
    assert_eq!(while_pending(&mut call, rx.recv()).await, Some(1.0));
    // Past the first deadline (1000 ms), within the one the update set (1700 ms).
    while_pending(&mut call, tokio::time::sleep(Duration::from_millis(700))).await;
    h.mock.respond(req.id, json!({ "done": true })).await;
    call.await.unwrap();
    assert_about(t0.elapsed(), Duration::from_millis(1400));

    // Without updates, the same options time out after the plain timeout.
    let (opts, _rx) = resetting_on_progress(None);
    let (call, _) = sent(&mut h, "work", opts).await;
    assert_about(
        expect_timeout(&mut h.mock, call).await,
        Duration::from_millis(1000),
    );
}

#[tokio::test(start_paused = true)]
async fn the_max_total_timeout_holds_despite_progress() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let (opts, mut rx) = resetting_on_progress(Some(Duration::from_millis(2500)));
    let t0 = Instant::now();
    let (mut call, req) = sent(&mut h, "work", opts).await;
    let token = params_of(req.params.as_deref())["_meta"]["progressToken"].clone();

    for value in [1.0, 2.0, 3.0] {
        while_pending(&mut call, tokio::time::sleep(Duration::from_millis(700))).await;
        h.mock
            .notify("notifications/progress", progress_note(&token, value))
            .await;
        assert_eq!(while_pending(&mut call, rx.recv()).await, Some(value));
    }
    // The last update, at 2100 ms, would extend to 3100 ms; the hard limit is 2500 ms.
    expect_timeout(&mut h.mock, call).await;
    assert_about(t0.elapsed(), Duration::from_millis(2500));

    // The session is usable afterwards.
    let mut ping = Box::pin(h.peer.ping());
    assert!(ping.as_mut().now_or_never().is_none());
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap();
}

/// Options with a 1000 ms timeout that each progress update resets (never past `max`
/// in all), and the channel their progress callback forwards each value to.
fn resetting_on_progress(
    max: Option<Duration>,
) -> (RequestOptions, tokio::sync::mpsc::UnboundedReceiver<f64>) {
    let (opts, rx) = progress_options();
    let opts = opts
        .timeout(Duration::from_millis(1000))
        .reset_timeout_on_progress(max);
    (opts, rx)
}
