//! What a server sends on a `subscriptions/listen` request before its closing answer
//! reaches the subscription before the end, over the real in-memory and stdio
//! transports and a multi-thread runtime (where the client's waits and the session's receive task run
//! on different threads). The unit tests in `src/subscriptions.rs` force the one
//! interleaving that lost the acknowledgement with a scripted transport; this one runs
//! the whole path many times, as the conformance test
//! `the_servers_closing_answer_ends_a_subscription_cleanly` does once per cell.

use std::sync::Arc;
use std::time::Duration;

use modelctx_client::{Client, ConnectMode};
use modelctx_test::within;
use modelctx_transport::{
    BoxTransport, MessageSink, MessageStream, Transport, TransportMessage, boxed,
};
use modelctx_types::{
    JsonRpcMessage, JsonRpcNotification, JsonRpcResultResponse, Meta, ProtocolVersion,
    ServerNotification, SubscriptionFilter, to_raw,
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(5);

/// How many subscriptions are opened and ended over each transport. Before `open`
/// looked in its channel again when the request had ended, this test failed in every
/// one of 20 runs (in-memory, in its first round).
const ROUNDS: usize = 300;

/// A server played by hand: each `subscriptions/listen` is acknowledged, sent one
/// change and answered at once, from a task of its own (the answer is taken directly
/// on that task when the client's receive task has handled the notifications).
fn serve(transport: impl Transport) {
    let (sink, mut stream) = transport.split();
    let sink: Arc<dyn MessageSink> = Arc::new(sink);
    tokio::spawn(async move {
        while let Some(Ok(message)) = stream.recv().await {
            let JsonRpcMessage::Request(request) = message.message else {
                continue;
            };
            let sink = sink.clone();
            tokio::spawn(async move {
                let params: Value = request
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str(p.get()).ok())
                    .unwrap_or_default();
                let tag = json!({Meta::SUBSCRIPTION_ID: request.id});
                let notify = |method: &'static str, mut params: Value| {
                    params["_meta"] = tag.clone();
                    JsonRpcMessage::from(JsonRpcNotification::new(
                        method,
                        Some(to_raw(&params).unwrap()),
                    ))
                };
                let answer = json!({"resultType": "complete", "_meta": tag});
                let sent = [
                    notify(
                        "notifications/subscriptions/acknowledged",
                        json!({"notifications": params["notifications"]}),
                    ),
                    notify("notifications/prompts/list_changed", json!({})),
                    JsonRpcResultResponse::new(request.id.clone(), to_raw(&answer).unwrap()).into(),
                ];
                for message in sent {
                    let message =
                        TransportMessage::new(message).related_to(Some(request.id.clone()));
                    if sink.send(message).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
}

/// Two connected transports of `kind`: the client's, and the one [`serve`] plays.
fn pair(kind: &str) -> (BoxTransport, BoxTransport) {
    match kind {
        "memory" => {
            let (client, server) = modelctx_memory::pair();
            (boxed(client), boxed(server))
        }
        _ => {
            // Two pipes in one process: what one side writes as lines, the other
            // reads and parses.
            let (client_end, server_end) = tokio::io::duplex(64 * 1024);
            let (client_read, client_write) = tokio::io::split(client_end);
            let (server_read, server_write) = tokio::io::split(server_end);
            (
                boxed(modelctx_stdio::StdioTransport::new(
                    client_read,
                    client_write,
                )),
                boxed(modelctx_stdio::StdioTransport::new(
                    server_read,
                    server_write,
                )),
            )
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acknowledgement_and_the_changes_always_come_before_the_end() {
    for (kind, round) in ["memory", "stdio"]
        .into_iter()
        .flat_map(|kind| (0..ROUNDS).map(move |round| (kind, round)))
    {
        let (client_side, server_side) = pair(kind);
        serve(server_side);
        let client = within(
            WAIT,
            "the client to connect",
            Client::builder("order", "1.0.0")
                .mode(ConnectMode::Pin(ProtocolVersion::V2026_07_28))
                .connect(client_side),
        )
        .await
        .unwrap();
        let filter = SubscriptionFilter::new().with_prompts_list_changed(true);
        let mut subscription = within(WAIT, "the acknowledgement", client.subscribe(filter))
            .await
            .unwrap_or_else(|e| panic!("{kind}, round {round}: {e}"));
        let change = within(WAIT, "the change", subscription.next()).await;
        assert!(
            matches!(change, Some(Ok(ServerNotification::PromptListChanged(_)))),
            "{kind}, round {round}: {change:?}"
        );
        let end = within(WAIT, "the end", subscription.next()).await;
        assert!(end.is_none(), "{kind}, round {round}: {end:?}");
    }
}
