//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) of protocol
//! 2026-07-28: the server decides which calls become tasks, the client polls them with
//! `tasks/get`, answers their input with `tasks/update` and cancels them with
//! `tasks/cancel`. A scripted client (`MockPeer`) sends raw messages; every wait is
//! bounded by the mock's timeout or `within`.

use std::time::Duration;

use modelctx_memory::MockPeer;
use modelctx_server::{Context, NoArgs, Server, TaskConfig, ToolDef};
use modelctx_test::{Gate, within};
use modelctx_types::{ErrorCode, RequestedSchema, TaskSupport, ext_tasks::EXTENSION_ID};
use serde_json::{Value, json};

use crate::support::{envelope, serve};

/// The envelope of a request, declaring the tasks extension when `tasks`.
fn meta(tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"elicitation": {}, "extensions": {EXTENSION_ID: {}}})
    } else {
        json!({})
    };
    envelope(capabilities)
}

fn with_meta(mut params: Value, tasks: bool) -> Value {
    params["_meta"] = meta(tasks);
    params
}

/// Bounds every wait of these tests.
const WAIT: Duration = Duration::from_secs(10);

fn name_form() -> RequestedSchema {
    serde_json::from_value(json!({
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
    }))
    .unwrap()
}

/// Tool `name` (task support `support`): waits for the gate, then answers `answer`.
fn gated(
    gate: &Gate,
    name: &str,
    support: TaskSupport,
    answer: Result<&'static str, &'static str>,
) -> ToolDef {
    let gate = gate.clone();
    ToolDef::new(name, move |_: NoArgs, _cx: Context| {
        let gate = gate.clone();
        async move {
            gate.passed().await;
            answer.map_err(str::to_owned)
        }
    })
    .task_support(support)
}

/// `slow` (optional; waits for the gate), `needs_task` (required), `asks` (optional, a
/// task at once, asks for two names), `quick` (optional, answers at once), `plain`.
fn server(gate: &Gate) -> Server {
    let slow = gated(gate, "slow", TaskSupport::Optional, Ok("slow done"));
    let needs_task = gated(
        gate,
        "needs_task",
        TaskSupport::Required,
        Err("it went wrong"),
    );
    let asks = ToolDef::new("asks", |_: NoArgs, cx: Context| async move {
        let (a, b) = (cx.with_input_key("first"), cx.with_input_key("second"));
        let (first, second) = tokio::join!(
            a.elicit_form_schema("First?", name_form()),
            b.elicit_form_schema("Second?", name_form())
        );
        let name = |answer: Result<modelctx_server::Elicited<_>, _>| {
            answer
                .ok()
                .and_then(|e: modelctx_server::Elicited<modelctx_server::FormValues>| e.accepted())
                .and_then(|form| form.get("name").cloned())
                .map(|v| serde_json::to_value(v).unwrap())
        };
        Ok::<_, String>(format!("{:?} {:?}", name(first), name(second)))
    })
    .task_support(TaskSupport::Optional)
    .task_window(Duration::ZERO);
    let quick = ToolDef::new("quick", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("at once")
    })
    .task_support(TaskSupport::Optional);
    let plain = ToolDef::new("plain", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("plain")
    });
    let mut builder = Server::builder("tasks", "1.0.0").tasks(
        TaskConfig::new()
            .sync_window(Duration::from_millis(5))
            .poll_interval(Duration::from_millis(20)),
    );
    for tool in [slow, needs_task, asks, quick, plain] {
        builder = builder.tool(tool).unwrap();
    }
    builder.build()
}

/// Sends `method` with `params` and the envelope, and returns its result.
async fn call(mock: &mut MockPeer, id: i64, method: &'static str, params: Value) -> Value {
    mock.request(id, method, with_meta(params, true)).await;
    mock.expect_result(id).await
}

/// Calls tool `name` (request 1), which becomes a task, and returns the task's id.
async fn start_task(mock: &mut MockPeer, name: &str) -> String {
    let created = call(mock, 1, "tools/call", json!({"name": name})).await;
    created["taskId"].as_str().unwrap().to_owned()
}

/// Polls `tasks/get` (ids from `id` on) until `done` holds.
async fn poll_until(
    mock: &mut MockPeer,
    id: &mut i64,
    task: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    within(WAIT, "the task's status", async {
        loop {
            *id += 1;
            let got = call(mock, *id, "tasks/get", json!({"taskId": task})).await;
            if done(&got) {
                return got;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
}

#[tokio::test]
async fn discover_advertises_the_extension_not_the_2025_slot() {
    let (_session, mut mock) = serve(&server(&Gate::new()));
    let found = call(&mut mock, 1, "server/discover", json!({})).await;
    assert_eq!(found["capabilities"]["extensions"][EXTENSION_ID], json!({}));
    assert!(found["capabilities"].get("tasks").is_none());
}

#[tokio::test]
async fn a_long_call_becomes_a_task_that_is_polled_to_its_result() {
    let gate = Gate::new();
    let (_session, mut mock) = serve(&server(&gate));
    let created = call(&mut mock, 1, "tools/call", json!({"name": "slow"})).await;
    assert_eq!(created["resultType"], "task");
    let task = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["status"], "working");
    assert!(created["ttlMs"].as_u64().unwrap() > 0);
    assert_eq!(created["pollIntervalMs"], 20);
    for absent in ["task", "ttl", "pollInterval", "result", "requestState"] {
        assert!(created.get(absent).is_none(), "{absent}: {created}");
    }
    let mut id = 1;
    let working = poll_until(&mut mock, &mut id, &task, |_| true).await;
    assert_eq!(working["status"], "working");
    assert_eq!(working["resultType"], "complete");

    gate.open();
    let done = poll_until(&mut mock, &mut id, &task, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slow done");
    assert!(
        done["result"]
            .get("_meta")
            .and_then(|m| m.get("io.modelcontextprotocol/related-task"))
            .is_none()
    );
    // Cancelling an ended task is acknowledged all the same.
    let ack = call(&mut mock, 100, "tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none());
}

#[tokio::test]
async fn a_quick_call_answers_directly_and_a_plain_tool_never_becomes_a_task() {
    let (_session, mut mock) = serve(&server(&Gate::new()));
    let quick = call(&mut mock, 1, "tools/call", json!({"name": "quick"})).await;
    assert_eq!(quick["resultType"], "complete");
    assert_eq!(quick["content"][0]["text"], "at once");
    // A 2025-style `task` hint on a tool without task support is ignored.
    let plain = call(
        &mut mock,
        2,
        "tools/call",
        json!({"name": "plain", "task": {"ttl": 1000}}),
    )
    .await;
    assert_eq!(plain["resultType"], "complete");
}

#[tokio::test]
async fn without_the_extension_tasks_are_refused_or_avoided() {
    let gate = Gate::new();
    gate.open();
    let (_session, mut mock) = serve(&server(&gate));
    mock.request(1, "tools/call", with_meta(json!({"name": "slow"}), false))
        .await;
    let sync = mock.expect_result(1).await;
    assert_eq!(
        sync["content"][0]["text"], "slow done",
        "an optional tool runs plainly"
    );
    mock.request(
        2,
        "tools/call",
        with_meta(json!({"name": "needs_task"}), false),
    )
    .await;
    let refused = mock.expect_error(Some(2.into())).await;
    assert_eq!(refused.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(
        refused.data.unwrap()["requiredCapabilities"]["extensions"][EXTENSION_ID],
        json!({})
    );
    for (id, method) in [(3, "tasks/get"), (4, "tasks/cancel"), (5, "tasks/update")] {
        let params = json!({"taskId": "whatever", "inputResponses": {}});
        mock.request(id, method, with_meta(params, false)).await;
        let error = mock.expect_error(Some(id.into())).await;
        assert_eq!(
            error.code,
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "{method}"
        );
    }
    // With it, an unknown task is -32602; the 2025 methods are gone.
    mock.request(6, "tasks/get", with_meta(json!({"taskId": "nope"}), true))
        .await;
    assert_eq!(
        mock.expect_error(Some(6.into())).await.code,
        ErrorCode::INVALID_PARAMS
    );
    for (id, method) in [(7, "tasks/result"), (8, "tasks/list")] {
        mock.request(id, method, with_meta(json!({"taskId": "nope"}), true))
            .await;
        let error = mock.expect_error(Some(id.into())).await;
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND, "{method}");
    }
}

#[tokio::test]
async fn a_tool_error_completes_the_task_with_is_error() {
    let gate = Gate::new();
    let (_session, mut mock) = serve(&server(&gate));
    let task = start_task(&mut mock, "needs_task").await;
    gate.open();
    let mut id = 1;
    let done = poll_until(&mut mock, &mut id, &task, |t| t["status"] != "working").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], true);
    assert!(done.get("error").is_none());
}

#[tokio::test]
async fn input_waits_in_the_task_and_tasks_update_answers_it_key_by_key() {
    let (_session, mut mock) = serve(&server(&Gate::new()));
    let created = call(&mut mock, 1, "tools/call", json!({"name": "asks"})).await;
    assert_eq!(created["resultType"], "task", "a task at once: {created}");
    let task = created["taskId"].as_str().unwrap().to_owned();
    let mut id = 1;
    let waiting = poll_until(&mut mock, &mut id, &task, |t| {
        t["inputRequests"].as_object().is_some_and(|r| r.len() == 2)
    })
    .await;
    assert_eq!(waiting["status"], "input_required");
    assert_eq!(
        waiting["inputRequests"]["first"]["method"],
        "elicitation/create"
    );
    let answer = |name: &str| json!({"action": "accept", "content": {"name": name}});
    let ack = call(
        &mut mock,
        50,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {"first": answer("Ada"), "never-asked": {"x": 1}}}),
    )
    .await;
    assert_eq!(ack["resultType"], "complete");
    let partial = call(&mut mock, 51, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(partial["status"], "input_required");
    let keys: Vec<&String> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["second"], "the answered key is gone at once");
    call(
        &mut mock,
        52,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {"second": answer("Grace")}}),
    )
    .await;
    let mut id = 52;
    let done = poll_until(&mut mock, &mut id, &task, |t| t["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"Some(String("Ada")) Some(String("Grace"))"#
    );
}

#[tokio::test]
async fn an_answer_that_does_not_decode_fails_the_input_request_that_waited_for_it() {
    let (_session, mut mock) = serve(&server(&Gate::new()));
    let task = start_task(&mut mock, "asks").await;
    let mut id = 1;
    poll_until(&mut mock, &mut id, &task, |t| {
        t["inputRequests"].as_object().is_some_and(|r| r.len() == 2)
    })
    .await;
    // `first` gets an answer shaped like an elicitation result whose action is not one;
    // `second` a good one. The bad answer fails the tool's first ask instead of leaving
    // it waiting, so the task finishes.
    let ack = call(
        &mut mock,
        60,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {
            "first": {"action": 5},
            "second": {"action": "accept", "content": {"name": "Grace"}},
        }}),
    )
    .await;
    assert_eq!(ack["resultType"], "complete");
    let mut id = 60;
    let done = poll_until(&mut mock, &mut id, &task, |t| t["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"None Some(String("Grace"))"#
    );
}

#[tokio::test]
async fn cancelling_a_waiting_task_settles_it_cancelled() {
    let gate = Gate::new();
    let (_session, mut mock) = serve(&server(&gate));
    let task = start_task(&mut mock, "asks").await;
    let mut id = 1;
    poll_until(&mut mock, &mut id, &task, |t| {
        t["status"] == "input_required"
    })
    .await;
    let ack = call(&mut mock, 40, "tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(ack["resultType"], "complete");
    let after = call(&mut mock, 41, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(after["status"], "cancelled");
    assert!(after.get("inputRequests").is_none());
}

#[tokio::test]
async fn a_listen_stream_carries_the_watched_tasks_changes() {
    let gate = Gate::new();
    let (_session, mut mock) = serve(&server(&gate));
    let task = start_task(&mut mock, "slow").await;

    // Without the extension, asking for task notifications is refused.
    let asking = json!({"notifications": {"taskIds": [task]}});
    mock.request(2, "subscriptions/listen", with_meta(asking.clone(), false))
        .await;
    let refused = mock.expect_error(Some(2.into())).await;
    assert_eq!(refused.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);

    let mut filter = asking.clone();
    filter["notifications"]["taskIds"] = json!([task, "not-a-task"]);
    mock.request(3, "subscriptions/listen", with_meta(filter, true))
        .await;
    let ack = mock
        .expect_notification("notifications/subscriptions/acknowledged")
        .await;
    let ack: Value = serde_json::from_str(ack.params.unwrap().get()).unwrap();
    assert_eq!(
        ack["notifications"]["taskIds"],
        json!([task]),
        "only known tasks"
    );

    gate.open();
    let done = within(WAIT, "the completion's notification", async {
        loop {
            let note = mock.expect_notification("notifications/tasks").await;
            let note: Value = serde_json::from_str(note.params.unwrap().get()).unwrap();
            if note["status"] == "completed" {
                return note;
            }
        }
    })
    .await;
    assert_eq!(done["taskId"], json!(task));
    assert_eq!(done["result"]["content"][0]["text"], "slow done");
    assert_eq!(done["_meta"]["io.modelcontextprotocol/subscriptionId"], 3);
}
