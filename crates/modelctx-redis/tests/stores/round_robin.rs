//! The 2026-07-28 era is stateless: two instances behind a round-robin balancer serve
//! its clients with nothing shared but configuration and the stores. Two streamable HTTP
//! services on loopback, an HTTP forwarder that sends every request to the next
//! instance (no affinity), one 2026 client: a tool call, a multi round-trip elicitation
//! whose retry lands on the other instance (the `requestState` key is shared
//! configuration), and a task created on one instance and read on the other through
//! `modelctx_redis::TaskStore`.

use std::sync::Arc;
use std::time::Duration;

use modelctx::client::{Client, ConnectMode, FormAnswer};
use modelctx::http::{StreamableHttpClientTransport, StreamableHttpService};
use modelctx::server::{Context, Server, TaskConfig, ToolDef};
use modelctx::session::SessionError;
use modelctx::types::{CallToolResult, ElicitValue, TaskSupport, Tool};
use serde_json::json;
use tokio::sync::watch;

use modelctx_test::round_robin::{RoundRobin, Served, served};

use crate::support::{RedisServer, WITHIN};
use modelctx_test::{ask_for_name, within};

/// One instance: a tool that asks for a name (answering with the instance that saw the
/// answer), a tool that becomes a task at once and finishes when `gate` opens; tasks in
/// Redis, `requestState` sealed with `key`.
fn instance(
    name: &'static str,
    key: [u8; 32],
    tasks: modelctx_redis::TaskStore,
    gate: watch::Receiver<bool>,
) -> Server {
    let no_args = || json!({"type": "object"}).as_object().unwrap().clone();
    let greet = ToolDef::with_schema(
        Tool::new("greet", no_args()),
        move |_, cx: Context| async move {
            let who = ask_for_name(&cx).await?;
            Ok::<_, String>(format!("Hello, {who}! (from {name})"))
        },
    );
    let long = ToolDef::with_schema(Tool::new("long", no_args()), move |_, _cx: Context| {
        let mut gate = gate.clone();
        async move {
            let _ = gate.wait_for(|open| *open).await;
            Ok::<_, String>(format!("done on {name}"))
        }
    })
    .task_support(TaskSupport::Optional)
    .task_window(Duration::ZERO);
    Server::builder(name, "1.0.0")
        .request_state_key(key)
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(10)))
        .task_store(Arc::new(tasks))
        .tool(greet)
        .unwrap()
        .tool(long)
        .unwrap()
        .build()
}

/// Serves `server` over streamable HTTP on loopback; returns its base URL.
async fn serve(server: Server) -> String {
    crate::support::serve(StreamableHttpService::new(move |transport| {
        server.serve(transport);
    }))
    .await
}

async fn task_store(redis: &RedisServer) -> modelctx_redis::TaskStore {
    modelctx_redis::TaskStore::new(
        redis.connection().await,
        modelctx_redis::TaskStoreConfig::default().prefix("rr:"),
    )
}

/// Two instances (keys `key_a`, `key_b`) behind a round-robin forwarder; a 2026 client
/// that answers "Ada" and follows tasks.
async fn setup(
    redis: &RedisServer,
    key_a: [u8; 32],
    key_b: [u8; 32],
) -> (Client, watch::Receiver<Vec<Served>>, watch::Sender<bool>) {
    let (open, gate) = watch::channel(false);
    let a = serve(instance("a", key_a, task_store(redis).await, gate.clone())).await;
    let b = serve(instance("b", key_b, task_store(redis).await, gate)).await;
    let (balancer, log) = RoundRobin::serve_logged(vec![a, b]).await;
    let transport = StreamableHttpClientTransport::builder(&format!("{balancer}/mcp"))
        .build()
        .unwrap();
    let client = Client::builder("round-robin", "1.0.0")
        .mode(ConnectMode::Discover)
        .tasks(TaskConfig::new())
        .form_elicitation(|form, _cx| async move {
            let mut answer = form.prefilled;
            answer.insert("name".to_owned(), ElicitValue::String("Ada".to_owned()));
            Ok(FormAnswer::Accept(answer))
        });
    let client = within(WITHIN, "connect", client.connect(transport))
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_str(), "2026-07-28");
    (client, log, open)
}

/// A call of `greet`, the elicitation in it answered.
async fn greet(client: &Client) -> Result<CallToolResult, SessionError> {
    within(
        WITHIN,
        "greet",
        client.call_tool("greet", serde_json::Map::new()),
    )
    .await
}

/// The instances that served `tools/call`: two rounds, the retry on the other instance.
fn two_rounds_on_both(log: &watch::Receiver<Vec<Served>>) -> Vec<usize> {
    let calls = served(&log.borrow(), "tools/call");
    assert_eq!(calls.len(), 2, "two rounds: {:?}", log.borrow());
    assert_ne!(calls[0], calls[1], "the retry went to the other instance");
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_behind_a_round_robin_serve_the_stateless_era() {
    let redis = RedisServer::start();
    let key = [7; 32];
    let (client, mut log, open) = setup(&redis, key, key).await;

    // The elicitation: the first round is answered InputRequired by one instance, the
    // retry with the answer reaches the other, which opens the requestState.
    let greeting = greet(&client).await.unwrap();
    let calls = two_rounds_on_both(&log);
    let second = ["a", "b"][calls[1]];
    assert_eq!(
        greeting.content[0].as_text(),
        Some(format!("Hello, Ada! (from {second})").as_str())
    );

    // The task: created by the instance that got the call, followed with tasks/get on
    // both; it finishes only once the other instance has answered a tasks/get for it
    // from Redis.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("long", serde_json::Map::new()).await }
    });
    let creator = within(WITHIN, "the task's call", async {
        loop {
            if let Some(&i) = served(&log.borrow_and_update(), "tools/call").get(2) {
                return i;
            }
            log.changed().await.unwrap();
        }
    })
    .await;
    within(WITHIN, "a tasks/get on the other instance", async {
        loop {
            if served(&log.borrow_and_update(), "tasks/get").contains(&(1 - creator)) {
                return;
            }
            log.changed().await.unwrap();
        }
    })
    .await;
    open.send_replace(true);
    let result = within(WITHIN, "the task's result", call)
        .await
        .unwrap()
        .unwrap();
    let creator = ["a", "b"][creator];
    assert_eq!(
        result.content[0].as_text(),
        Some(format!("done on {creator}").as_str())
    );
    assert!(
        redis.keys().await.iter().any(|k| k.starts_with("rr:task:")),
        "the task is in Redis"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_sealed_with_another_instances_key_is_refused() {
    let redis = RedisServer::start();
    let (client, log, _open) = setup(&redis, [1; 32], [2; 32]).await;
    let refused = greet(&client).await.unwrap_err();
    two_rounds_on_both(&log);
    let error = refused.protocol_error().expect("a JSON-RPC error");
    assert_eq!(
        error.code,
        modelctx::types::ErrorCode::INVALID_PARAMS,
        "{error:?}"
    );
}
