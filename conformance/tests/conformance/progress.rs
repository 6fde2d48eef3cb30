//! Progress and timeouts: progress notifications reach the caller's callback in order,
//! each request its own token, none after the answer; a request that runs out of time
//! is cancelled and the session goes on; progress resets the timeout up to its maximum.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::server::Server;
use modelctx::session::{Progress, RequestOptions};
use modelctx::types::{
    ErrorData, JsonRpcMessage, ProgressNotification, ProgressNotificationParams, to_raw,
};
use modelctx_conformance::{Connector, Direction, Test, conformance_test, within};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use crate::cancellation::{blocking_server, cancellations_sent};
use crate::support::{Block, Echo, Work, assert_echoes, client, connect, payload, try_connect};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            progress_reaches_the_callback_in_order,
            ["protocol:progress:token-injected"]
        ),
        conformance_test!(
            progress_reaches_the_callback_in_order_in_every_era => progress_reaches_the_callback_in_order,
            ["protocol:progress:callback", "protocol:progress:monotonic"]
        ),
        conformance_test!(
            concurrent_requests_get_distinct_progress_tokens,
            ["protocol:progress:token-unique"]
        ),
        conformance_test!(
            progress_after_completion_is_dropped,
            [
                "protocol:progress:stops-after-completion",
                "protocol:progress:late-dropped-by-client"
            ]
        ),
        conformance_test!(
            without_a_callback_no_token_and_no_progress,
            ["protocol:progress:no-token"]
        ),
        conformance_test!(
            client_progress_reaches_the_server,
            ["protocol:progress:client-to-server"]
        ),
        conformance_test!(
            a_request_times_out_cancels_and_the_session_survives,
            [
                "protocol:timeout:basic",
                "protocol:timeout:sends-cancellation",
                "protocol:timeout:session-survives"
            ]
        ),
        conformance_test!(
            the_session_default_timeout_applies,
            ["protocol:timeout:session-default"]
        ),
        conformance_test!(
            progress_resets_the_timeout,
            ["protocol:timeout:reset-on-progress"]
        ),
        conformance_test!(
            the_maximum_total_timeout_wins_over_progress,
            ["protocol:timeout:max-total"]
        ),
    ]
}

/// A server whose `test/work` handler reports progress 1..=n (n = `steps`) with a total
/// and a message, then returns the token it saw.
fn progress_server() -> Server {
    Server::builder("worker", "1.0.0")
        .request_handler::<Work, _, _>(|params, cx| async move {
            let steps = params["steps"].as_u64().unwrap_or(3);
            for step in 1..=steps {
                let p = Progress::new(step as f64)
                    .with_total(steps as f64)
                    .with_message(format!("step {step}"));
                cx.report_progress(p)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
            }
            // Going backwards is refused at the sender.
            let refused = cx.report_progress(Progress::new(0.5)).await;
            Ok(json!({
                "token": serde_json::to_value(cx.progress_token()).unwrap(),
                "backwards_refused": refused.is_err(),
            }))
        })
        .build()
}

fn collect_progress() -> (RequestOptions, Arc<Mutex<Vec<Progress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| sink.lock().unwrap().push(p));
    (options, seen)
}

async fn progress_reaches_the_callback_in_order(connector: Connector) {
    let pair = connect(&connector, &progress_server(), client()).await;
    let (options, seen) = collect_progress();
    let result = pair
        .client
        .request_with::<Work>(json!({"steps": 3}), options)
        .await
        .unwrap();
    assert!(
        !result["token"].is_null(),
        "the handler saw a progress token"
    );
    assert_eq!(result["backwards_refused"], true);
    let seen = seen.lock().unwrap().clone();
    let values: Vec<_> = seen
        .iter()
        .map(|p| (p.progress, p.total, p.message.clone()))
        .collect();
    assert_eq!(
        values,
        vec![
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
}

async fn concurrent_requests_get_distinct_progress_tokens(connector: Connector) {
    let pair = connect(&connector, &progress_server(), client()).await;
    let (a_options, a_seen) = collect_progress();
    let (b_options, b_seen) = collect_progress();
    let (a, b) = tokio::join!(
        pair.client
            .request_with::<Work>(json!({"steps": 2}), a_options),
        pair.client
            .request_with::<Work>(json!({"steps": 4}), b_options),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a["token"], b["token"]);
    assert_eq!(
        a_seen.lock().unwrap().len(),
        2,
        "each callback gets only its own"
    );
    assert_eq!(b_seen.lock().unwrap().len(), 4);
}

async fn progress_after_completion_is_dropped(connector: Connector) {
    let (late_tx, late_rx) = oneshot::channel::<modelctx::session::Peer>();
    let late_tx = Arc::new(Mutex::new(Some(late_tx)));
    let server = Server::builder("chatty", "1.0.0")
        .request_handler::<Work, _, _>(move |_, cx| {
            let late_tx = late_tx.clone();
            async move {
                cx.report_progress(Progress::new(1.0)).await.ok();
                if let Some(tx) = late_tx.lock().unwrap().take() {
                    let _ = tx.send(cx.peer().clone());
                }
                Ok(json!({"token": serde_json::to_value(cx.progress_token()).unwrap()}))
            }
        })
        .build();
    let pair = connect(&connector, &server, client()).await;
    let (options, seen) = collect_progress();
    let result = pair
        .client
        .request_with::<Work>(json!({}), options)
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);

    // After the response, a stray progress notification for the same token arrives.
    let peer = late_rx.await.unwrap();
    let stray = json!({"progressToken": result["token"], "progress": 2.0});
    peer.notify_raw(
        "notifications/progress".into(),
        Some(to_raw(&stray).unwrap()),
    )
    .await
    .unwrap();
    let is_stray = |r: &modelctx_conformance::Recorded| {
        r.direction == Direction::Received
            && matches!(&r.message.message, JsonRpcMessage::Notification(n)
                if n.method == "notifications/progress"
                    && n.params.as_ref().is_some_and(|p| p.get().contains("2.0")))
    };
    pair.wire.wait_for(|log| log.iter().any(is_stray)).await;
    pair.client.ping().await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1, "the late update was dropped");
}

async fn without_a_callback_no_token_and_no_progress(connector: Connector) {
    let pair = connect(&connector, &progress_server(), client()).await;
    let result = pair
        .client
        .request::<Work>(json!({"steps": 3}))
        .await
        .unwrap();
    assert!(result["token"].is_null(), "no token without a callback");
    let sent = pair.wire.sent();
    let JsonRpcMessage::Request(call) = sent.last().unwrap() else {
        panic!("the last message sent is the call");
    };
    assert!(
        !call
            .params
            .as_ref()
            .unwrap()
            .get()
            .contains("progressToken")
    );
    let progress = pair.wire.received_count("notifications/progress");
    assert_eq!(progress, 0);
}

async fn client_progress_reaches_the_server(connector: Connector) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let server = Server::builder("listener", "1.0.0")
        .notification_handler::<ProgressNotification, _, _>(move |params, _| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(params);
            }
        })
        .build();
    let pair = connect(&connector, &server, client()).await;
    let update = ProgressNotificationParams::new("upload-7", 0.25)
        .with_total(1.0)
        .with_message("uploading");
    pair.client
        .notify::<ProgressNotification>(update.clone())
        .await
        .unwrap();
    let got = within("the server's progress handler", rx.recv())
        .await
        .unwrap();
    assert_eq!(got, update);
}

async fn a_request_times_out_cancels_and_the_session_survives(connector: Connector) {
    let (cancelled_tx, mut cancelled_rx) = mpsc::unbounded_channel();
    let (started, _started_rx) = mpsc::unbounded_channel();
    let pair = connect(
        &connector,
        &blocking_server(cancelled_tx, started),
        client(),
    )
    .await;

    let options = RequestOptions::new().timeout(Duration::from_millis(100));
    let err = pair
        .client
        .request_with::<Block>(json!({"v": "slow"}), options)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // notifications/cancelled was on the wire before the call returned.
    let cancels = cancellations_sent(&pair.wire.messages());
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    let call = pair.wire.sent().into_iter().find_map(|m| match m {
        JsonRpcMessage::Request(r) if r.method == "test/block" => Some(r.id),
        _ => None,
    });
    assert_eq!(
        cancels[0]["requestId"],
        serde_json::to_value(call.expect("the call was sent")).unwrap()
    );
    within("the handler to be cancelled", cancelled_rx.recv()).await;
    assert_echoes::<Echo>(&pair.client, json!({"v": "ok"})).await;
}

async fn the_session_default_timeout_applies(connector: Connector) {
    let (cancelled_tx, _rx) = mpsc::unbounded_channel();
    let (started, _started_rx) = mpsc::unbounded_channel();
    let server = blocking_server(cancelled_tx, started);
    // The default bounds every request, the handshake's (or the 2026-07-28 discovery)
    // too: on a loaded machine that one may outlive 100 ms and be cut off as well. That
    // is the rule at work, not a failure: connect again. Only the blocked call's
    // timeout is certain (its handler never answers), so only it is asserted.
    let pair = within("a handshake inside the default timeout", async {
        loop {
            let impatient = client().request_timeout(Duration::from_millis(100));
            match try_connect(&connector, &server, impatient).await {
                Ok(pair) => break pair,
                Err(e) => assert!(e.is_timeout(), "only the default cuts it off: {e}"),
            }
        }
    })
    .await;
    let err = pair
        .client
        .request::<Block>(json!({"v": 1}))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // A per-request override wins over the default.
    let patient = RequestOptions::new().timeout(Duration::from_secs(10));
    assert_eq!(
        payload(
            pair.client
                .request_with::<Echo>(json!({"v": 2}), patient)
                .await
                .unwrap()
        ),
        json!({"v": 2})
    );
}

/// A server whose `test/work` handler works for `steps` steps of `step_ms` each,
/// reporting progress after every step.
fn slow_worker() -> Server {
    Server::builder("slow-worker", "1.0.0")
        .request_handler::<Work, _, _>(|params, cx| async move {
            let steps = params["steps"].as_u64().unwrap_or(1);
            let step = Duration::from_millis(params["step_ms"].as_u64().unwrap_or(10));
            for i in 1..=steps {
                // Simulated work: the duration is the point of the test.
                tokio::time::sleep(step).await;
                cx.report_progress(Progress::new(i as f64)).await.ok();
            }
            Ok(json!({"done": "finished"}))
        })
        .build()
}

async fn progress_resets_the_timeout(connector: Connector) {
    let pair = connect(&connector, &slow_worker(), client()).await;
    let work = json!({"steps": 6, "step_ms": 100});
    // 600 ms of work against a 300 ms timeout: only progress keeps it alive.
    let resetting = RequestOptions::new()
        .timeout(Duration::from_millis(300))
        .reset_timeout_on_progress(None)
        .on_progress(|_| {});
    assert_eq!(
        payload(
            pair.client
                .request_with::<Work>(work.clone(), resetting)
                .await
                .unwrap()
        ),
        json!({"done": "finished"})
    );
    let plain = RequestOptions::new()
        .timeout(Duration::from_millis(300))
        .on_progress(|_| {});
    let err = pair
        .client
        .request_with::<Work>(work, plain)
        .await
        .unwrap_err();
    assert!(
        err.is_timeout(),
        "without reset the same work times out: {err}"
    );
}

async fn the_maximum_total_timeout_wins_over_progress(connector: Connector) {
    let pair = connect(&connector, &slow_worker(), client()).await;
    // Progress every 20 ms would keep resetting a 200 ms timeout for 2 s; the 400 ms
    // total cap ends it.
    let work = json!({"steps": 100, "step_ms": 20});
    let options = RequestOptions::new()
        .timeout(Duration::from_millis(200))
        .reset_timeout_on_progress(Some(Duration::from_millis(400)))
        .on_progress(|_| {});
    let started = tokio::time::Instant::now();
    let err = pair
        .client
        .request_with::<Work>(work, options)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the cap, not the work, ended it"
    );
}
