//! Tasks (protocol 2025-11-25, experimental): a task-augmented tool call and its
//! polling, result and cancellation; listing; tool-level negotiation; the side channel
//! that carries a running task's requests to the client inside `tasks/result`; tasks
//! the server runs on the client; and tasks bound to the caller that created them.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use modelctx::client::{CallbackContext, FormAnswer, FormContent, SamplingSupport};
use modelctx::server::{Context, NoArgs, Server, TaskConfig, TaskStore, ToolDef};
use modelctx::session::RequestOptions;
use modelctx::session::tasks::TaskHandle;
use modelctx::types::{
    CallToolRequestParams, CallToolResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitValue, ErrorCode, ErrorData, ListTasksRequest, Meta,
    ProgressNotification, ProgressToken, RelatedTaskMetadata, RequestedSchema, SamplingMessage,
    Task, TaskMetadata, TaskStatus, TaskStatusNotification, TaskSupport,
};
use modelctx_conformance::{Connector, Test, conformance_test, redis_connected, within};
use modelctx_test::Gate;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Pair, client, connect, connect_as, serve_as_users, server_with_tool, work_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_task_augmented_call_answers_with_a_task_and_its_result_later,
            [
                "tasks:create:via-tool-call",
                "tasks:lifecycle:initial-working",
                "tasks:get",
                "tasks:create:ttl-honored",
                "tasks:result:terminal",
                "tasks:result:related-task-meta",
                "protocol:meta:related-task"
            ]
        ),
        conformance_test!(
            tool_level_task_support_is_enforced,
            [
                "tasks:tool-level:forbidden-with-task-32601",
                "tasks:tool-level:required-no-task-32601"
            ]
        ),
        conformance_test!(
            a_server_without_tasks_answers_task_calls_normally,
            ["tasks:no-capability:ignore-task-param"]
        ),
        conformance_test!(
            a_failing_tool_makes_a_failed_task_with_its_result,
            ["tasks:result:failed"]
        ),
        conformance_test!(
            cancelling_a_task_ends_it_for_good_while_its_work_goes_on,
            [
                "tasks:cancel:working",
                "tasks:cancel:remains-cancelled",
                "tasks:cancel:no-handler-abort",
                "tasks:cancel:terminal-rejected"
            ]
        ),
        conformance_test!(unknown_task_ids_are_invalid_params, ["tasks:unknown-id"]),
        conformance_test!(tasks_are_listed_a_page_at_a_time, ["tasks:list:pagination"]),
        conformance_test!(
            a_bad_list_cursor_is_invalid_params,
            ["tasks:list:invalid-cursor"]
        ),
        conformance_test!(
            status_notifications_carry_the_whole_task,
            ["tasks:status-notification"]
        ),
        conformance_test!(
            progress_keeps_its_token_after_the_task_is_created,
            ["tasks:progress:after-create"]
        ),
        conformance_test!(
            cancelling_the_creating_request_leaves_the_task_running,
            ["tasks:request-cancel:no-task-cancel"]
        ),
        conformance_test!(
            an_elicitation_waits_for_tasks_result_and_travels_inside_it,
            [
                "tasks:side-channel:queue",
                "tasks:side-channel:elicitation",
                "tasks:side-channel:stream",
                "tasks:lifecycle:input-required"
            ]
        ),
        conformance_test!(
            a_sampling_request_travels_inside_tasks_result,
            ["tasks:side-channel:sampling"]
        ),
        conformance_test!(
            queued_requests_reach_the_client_in_order,
            ["tasks:side-channel:drain-fifo"]
        ),
        conformance_test!(
            queued_requests_are_dropped_when_the_task_is_cancelled,
            ["tasks:side-channel:drop-on-cancel"]
        ),
        conformance_test!(
            the_server_runs_a_sampling_task_on_the_client,
            ["tasks:bidirectional"]
        ),
        conformance_test!(
            tasks_belong_to_the_caller_that_created_them,
            ["tasks:auth:context-isolation"]
        ),
    ]
}

/// A server running tasks, polled every 10 ms, listing two tasks a page.
fn tasks_server(tools: Vec<ToolDef>) -> Server {
    tasks_server_on(tools, None)
}

/// [`tasks_server`] keeping its tasks in `store` (default: in memory).
fn tasks_server_on(tools: Vec<ToolDef>, store: Option<Arc<dyn TaskStore>>) -> Server {
    let config = TaskConfig::new()
        .poll_interval(Duration::from_millis(10))
        .page_size(2);
    let mut builder = Server::builder("tasks", "1.0.0").tasks(config);
    if let Some(store) = store {
        builder = builder.task_store(store);
    }
    for tool in tools {
        builder = builder.tool(tool).unwrap();
    }
    builder.build()
}

/// A tool that echoes its arguments once `gate` opens.
fn gated(name: &str, gate: &Gate, support: TaskSupport) -> ToolDef {
    let gate = gate.clone();
    work_tool(name, move |arguments: Value, _cx: Context| {
        let gate = gate.clone();
        async move {
            gate.passed().await;
            json!({"echo": arguments})
        }
    })
    .task_support(support)
}

fn call(name: &str) -> CallToolRequestParams {
    CallToolRequestParams::new(name)
}

fn ttl(ms: u64) -> TaskMetadata {
    TaskMetadata::new().with_ttl(ms)
}

/// [`raw`] `tools/call` with `params`.
async fn call_raw(pair: &Pair, params: Value) -> Result<Value, ErrorData> {
    raw(pair, "tools/call", params).await
}

/// Sends `method` as given, skipping the client's own checks; its result as JSON, or
/// the JSON-RPC error it drew.
async fn raw(pair: &Pair, method: &'static str, params: Value) -> Result<Value, ErrorData> {
    let params = serde_json::value::to_raw_value(&params).unwrap();
    let answer = pair
        .client
        .peer()
        .start_raw(Cow::Borrowed(method), Some(params), RequestOptions::new())
        .await;
    match answer {
        Ok(raw) => Ok(serde_json::from_str(raw.get()).unwrap()),
        Err(e) => Err(e
            .into_protocol_error()
            .unwrap_or_else(|e| panic!("{method}: no JSON-RPC error but {e}"))),
    }
}

/// Calls the tool `name` as a task, which the server accepts: the task's handle.
async fn start_task(pair: &Pair, name: &str) -> TaskHandle<CallToolResult> {
    pair.client
        .call_tool_as_task(call(name), TaskMetadata::new())
        .await
        .unwrap()
}

/// Waits until the task reports `want`, polling at the interval it suggests.
async fn reaches<R>(handle: &TaskHandle<R>, want: TaskStatus) -> Task
where
    R: serde::de::DeserializeOwned + Send + 'static,
{
    within("the task to reach the status", async {
        let mut statuses = handle.statuses();
        while let Some(task) = statuses.next().await {
            let task = task.expect("tasks/get answers");
            if task.status == want {
                return task;
            }
        }
        panic!("the task ended without reaching {want}");
    })
    .await
}

/// A tasks server whose one tool, `slow`, may run as a task and finishes once `gate`
/// opens.
fn slow_tasks_server(gate: &Gate) -> Server {
    tasks_server(vec![gated("slow", gate, TaskSupport::Optional)])
}

async fn a_task_augmented_call_answers_with_a_task_and_its_result_later(connector: Connector) {
    let gate = Gate::new();
    let server = slow_tasks_server(&gate);
    let pair = connect(&connector, &server, client()).await;
    let declared = pair.client.server_capabilities().tasks.clone().unwrap();
    assert!(declared.list.is_some() && declared.cancel.is_some());

    // On the wire the answer is a CreateTaskResult, not the tool's result.
    let created = call_raw(
        &pair,
        json!({"name": "slow", "arguments": {"n": 0}, "task": {"ttl": 60000}}),
    )
    .await
    .unwrap();
    assert!(created["task"]["taskId"].is_string(), "{created}");
    assert!(created.get("content").is_none(), "{created}");

    let mut arguments = serde_json::Map::new();
    arguments.insert("n".into(), json!(1));
    let handle = pair
        .client
        .call_tool_as_task(call("slow").with_arguments(arguments), ttl(60_000))
        .await
        .unwrap();
    let task = handle.created().clone();
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.ttl, Some(60_000));
    assert_eq!(task.poll_interval, Some(10));

    let now = handle.status().await.unwrap();
    assert_eq!(now.task_id, task.task_id);
    assert_eq!(now.status, TaskStatus::Working);
    assert_eq!(now.ttl, task.ttl, "tasks/get reports the retention applied");
    assert_eq!(now.created_at, task.created_at);
    assert!(
        now.last_updated_at.ends_with('Z'),
        "{}",
        now.last_updated_at
    );
    assert!(now.status_message.is_some());

    gate.open();
    let result = within("the task's result", handle.result()).await.unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"echo": {"n": 1}})),
        "tasks/result answers what tools/call would have"
    );
    let done = handle.status().await.unwrap();
    assert_eq!(done.status, TaskStatus::Completed);

    let tagged = raw(&pair, "tasks/result", json!({"taskId": task.task_id}))
        .await
        .unwrap();
    assert_eq!(
        tagged["_meta"][RelatedTaskMetadata::META_KEY]["taskId"],
        json!(task.task_id)
    );
    assert_eq!(tagged["structuredContent"], json!({"echo": {"n": 1}}));
}

async fn tool_level_task_support_is_enforced(connector: Connector) {
    let gate = Gate::new();
    gate.open();
    let server = tasks_server(vec![
        gated("plain", &gate, TaskSupport::Forbidden),
        work_tool("unsaid", |_, _| async { json!({}) }),
        gated("must", &gate, TaskSupport::Required),
    ]);
    let pair = connect(&connector, &server, client()).await;
    for name in ["plain", "unsaid"] {
        let refused = call_raw(&pair, json!({"name": name, "arguments": {}, "task": {}}))
            .await
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::METHOD_NOT_FOUND, "{name}");
        let plain = call_raw(&pair, json!({"name": name, "arguments": {}}))
            .await
            .unwrap();
        assert!(plain.get("content").is_some(), "{plain}");
    }
    let refused = call_raw(&pair, json!({"name": "must", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::METHOD_NOT_FOUND);
    let handle = start_task(&pair, "must").await;
    within("the task's result", handle.result()).await.unwrap();
}

async fn a_server_without_tasks_answers_task_calls_normally(connector: Connector) {
    let gate = Gate::new();
    gate.open();
    let server = server_with_tool("no tasks", gated("slow", &gate, TaskSupport::Optional));
    let pair = connect(&connector, &server, client()).await;
    assert!(pair.client.server_capabilities().tasks.is_none());
    let answer = call_raw(
        &pair,
        json!({"name": "slow", "arguments": {"n": 2}, "task": {"ttl": 1000}}),
    )
    .await
    .unwrap();
    assert!(answer.get("task").is_none(), "{answer}");
    assert_eq!(answer["structuredContent"], json!({"echo": {"n": 2}}));
    let refused = pair
        .client
        .call_tool_as_task(call("slow"), TaskMetadata::new())
        .await
        .unwrap_err();
    assert!(refused.is_refused());
}

async fn a_failing_tool_makes_a_failed_task_with_its_result(connector: Connector) {
    let fails = ToolDef::new("fails", |_: NoArgs, _cx: Context| async {
        Err::<String, _>("the disk is full".to_owned())
    })
    .task_support(TaskSupport::Optional);
    let pair = connect(&connector, &tasks_server(vec![fails]), client()).await;
    let handle = start_task(&pair, "fails").await;
    let failed = reaches(&handle, TaskStatus::Failed).await;
    assert!(failed.status_message.is_some());
    let result: CallToolResult = within("the task's result", handle.result()).await.unwrap();
    assert!(result.is_error());
    assert!(
        serde_json::to_string(&result.content)
            .unwrap()
            .contains("the disk is full")
    );
}

async fn cancelling_a_task_ends_it_for_good_while_its_work_goes_on(connector: Connector) {
    let gate = Gate::new();
    let (saw, mut events) = mpsc::unbounded_channel();
    let stubborn = {
        let gate = gate.clone();
        work_tool("stubborn", move |_, cx: Context| {
            let gate = gate.clone();
            let saw = saw.clone();
            async move {
                cx.cancellation().cancelled().await;
                let _ = saw.send("cancelled");
                gate.passed().await;
                let _ = saw.send("finished");
                json!({"finished": true})
            }
        })
        .task_support(TaskSupport::Optional)
    };
    let quick = {
        let open = Gate::new();
        open.open();
        gated("quick", &open, TaskSupport::Optional)
    };
    let pair = connect(&connector, &tasks_server(vec![stubborn, quick]), client()).await;
    let handle = start_task(&pair, "stubborn").await;
    let cancelled = handle.cancel().await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(handle.status().await.unwrap().status, TaskStatus::Cancelled);

    // The work is told, and goes on to the end; the task stays cancelled.
    assert_eq!(
        within("the work to see it", events.recv()).await,
        Some("cancelled")
    );
    gate.open();
    assert_eq!(
        within("the work to end", events.recv()).await,
        Some("finished")
    );
    let after = handle.status().await.unwrap();
    assert_eq!(after.status, TaskStatus::Cancelled);

    let again = handle.cancel().await.unwrap_err();
    assert_eq!(
        again.protocol_error().unwrap().code,
        ErrorCode::INVALID_PARAMS
    );
    let done = start_task(&pair, "quick").await;
    within("the quick task", done.result()).await.unwrap();
    let refused = done.cancel().await.unwrap_err();
    assert_eq!(
        refused.protocol_error().unwrap().code,
        ErrorCode::INVALID_PARAMS
    );
}

async fn unknown_task_ids_are_invalid_params(connector: Connector) {
    let pair = connect(&connector, &tasks_server(Vec::new()), client()).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let error = raw(&pair, method, json!({"taskId": "no-such-task"}))
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{method}");
    }
}

async fn tasks_are_listed_a_page_at_a_time(connector: Connector) {
    let gate = Gate::new();
    let pair = connect(&connector, &slow_tasks_server(&gate), client()).await;
    let mut created = BTreeSet::new();
    for _ in 0..3 {
        let handle = start_task(&pair, "slow").await;
        created.insert(handle.id().to_owned());
    }
    let first = pair.client.list_tasks(None).await.unwrap();
    assert_eq!(first.tasks.len(), 2);
    let next = first.next_cursor.clone().expect("a second page");
    let second = pair.client.list_tasks(Some(next)).await.unwrap();
    assert_eq!(second.tasks.len(), 1);
    assert!(second.next_cursor.is_none());
    let listed: BTreeSet<String> = first
        .tasks
        .iter()
        .chain(&second.tasks)
        .map(|t| t.task_id.clone())
        .collect();
    assert_eq!(listed, created);
    let all = pair.client.list_all_tasks().await.unwrap();
    assert_eq!(all.len(), 3);
    gate.open();
}

async fn a_bad_list_cursor_is_invalid_params(connector: Connector) {
    let pair = connect(&connector, &tasks_server(Vec::new()), client()).await;
    let error = raw(&pair, "tasks/list", json!({"cursor": "not-a-cursor"}))
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
}

async fn status_notifications_carry_the_whole_task(connector: Connector) {
    let gate = Gate::new();
    let (tx, mut statuses) = mpsc::unbounded_channel();
    let builder =
        client().notification_handler::<TaskStatusNotification, _, _>(move |params, _peer| {
            let _ = tx.send(serde_json::to_value(&params).unwrap());
            async {}
        });
    let pair = connect(&connector, &slow_tasks_server(&gate), builder).await;
    let handle = start_task(&pair, "slow").await;
    gate.open();
    let done = within("the completion's notification", async {
        loop {
            let status = statuses.recv().await.expect("notifications flow");
            if status["status"] == "completed" {
                return status;
            }
        }
    })
    .await;
    assert_eq!(done["taskId"], json!(handle.id()));
    for field in ["createdAt", "lastUpdatedAt", "ttl", "pollInterval"] {
        assert!(done.get(field).is_some(), "{field} missing: {done}");
    }
    assert_eq!(done["createdAt"], json!(handle.created().created_at));
}

async fn progress_keeps_its_token_after_the_task_is_created(connector: Connector) {
    let gates = [Gate::new(), Gate::new()];
    let steps = gates.clone();
    let tool = work_tool("steps", move |_, cx: Context| {
        let steps = steps.clone();
        async move {
            for (i, gate) in steps.iter().enumerate() {
                gate.passed().await;
                let step = modelctx::session::Progress::new((i + 1) as f64).with_total(2.0);
                cx.report_progress(step).await.unwrap();
            }
            json!({"steps": 2})
        }
    })
    .task_support(TaskSupport::Optional);
    let (tx, mut progress) = mpsc::unbounded_channel();
    let builder =
        client().notification_handler::<ProgressNotification, _, _>(move |params, _peer| {
            let _ = tx.send(params);
            async {}
        });
    let pair = connect(&connector, &tasks_server(vec![tool]), builder).await;
    let mut meta = Meta::new();
    meta.set_progress_token(ProgressToken::from("steps-token"));
    let handle = pair
        .client
        .call_tool_as_task(call("steps").with_meta(meta), TaskMetadata::new())
        .await
        .unwrap();
    for (i, gate) in gates.iter().enumerate() {
        gate.open();
        let seen = within("progress after the CreateTaskResult", progress.recv())
            .await
            .unwrap();
        assert_eq!(seen.progress_token, ProgressToken::from("steps-token"));
        assert_eq!(seen.progress, (i + 1) as f64);
    }
    within("the task's result", handle.result()).await.unwrap();
}

async fn cancelling_the_creating_request_leaves_the_task_running(connector: Connector) {
    let gate = Gate::new();
    let pair = connect(&connector, &slow_tasks_server(&gate), client()).await;
    let params = serde_json::value::to_raw_value(&json!({"name": "slow", "task": {}})).unwrap();
    let request = pair.client.peer().start_raw(
        Cow::Borrowed("tools/call"),
        Some(params),
        RequestOptions::new(),
    );
    let id = request.id().expect("sent with an id");
    let created: Value = serde_json::from_str(request.await.unwrap().get()).unwrap();
    let task: Task = serde_json::from_value(created["task"].clone()).unwrap();
    let cancelled =
        serde_json::value::to_raw_value(&json!({"requestId": id, "reason": "changed my mind"}))
            .unwrap();
    pair.client
        .peer()
        .notify_raw(Cow::Borrowed("notifications/cancelled"), Some(cancelled))
        .await
        .unwrap();
    let handle: TaskHandle<CallToolResult> = pair.client.task_handle(task);
    assert_eq!(handle.status().await.unwrap().status, TaskStatus::Working);
    gate.open();
    within("the task's result", handle.result()).await.unwrap();
    assert_eq!(handle.status().await.unwrap().status, TaskStatus::Completed);
}

fn name_form() -> RequestedSchema {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"]
    }))
    .unwrap()
}

/// A tool that asks the client for a name for each of `questions`, all at once, and
/// answers with what it got.
fn asking(questions: &'static [&'static str]) -> ToolDef {
    work_tool("ask", move |_, cx: Context| async move {
        let asks = questions
            .iter()
            .map(|q| cx.elicit_form_schema(*q, name_form()));
        let answers = futures::future::join_all(asks).await;
        let answers: Vec<Value> = answers
            .into_iter()
            .map(|a| match a {
                Ok(elicited) => json!(elicited.accepted().map(|v| v.get("name").cloned())),
                Err(e) => json!({"error": e.to_string()}),
            })
            .collect();
        json!({"answers": answers})
    })
    .task_support(TaskSupport::Optional)
}

/// A client answering every form with a name, reporting each form's message and the
/// task its `_meta` relates it to.
fn naming_client() -> (
    modelctx::client::ClientBuilder,
    mpsc::UnboundedReceiver<(String, Option<String>)>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let builder = client().form_elicitation(move |request, cx: CallbackContext| {
        let related = cx
            .meta()
            .and_then(RelatedTaskMetadata::from_meta)
            .map(|r| r.task_id);
        let _ = tx.send((request.message().to_owned(), related));
        let answer: FormContent = [("name".to_owned(), ElicitValue::String("Ada".into()))]
            .into_iter()
            .collect();
        async move { Ok(FormAnswer::Accept(answer)) }
    });
    (builder, rx)
}

async fn an_elicitation_waits_for_tasks_result_and_travels_inside_it(connector: Connector) {
    let (tx, mut statuses) = mpsc::unbounded_channel();
    let (builder, mut forms) = naming_client();
    let builder =
        builder.notification_handler::<TaskStatusNotification, _, _>(move |params, _peer| {
            let _ = tx.send(params.task.status);
            async {}
        });
    let pair = connect(&connector, &tasks_server(vec![asking(&["Who?"])]), builder).await;
    let handle = start_task(&pair, "ask").await;
    reaches(&handle, TaskStatus::InputRequired).await;
    // Nothing reached the client while no tasks/result was open.
    assert!(forms.try_recv().is_err(), "the elicitation waited");

    let result = within("the task's result", handle.result()).await.unwrap();
    let (message, related) = forms.try_recv().expect("the elicitation arrived");
    assert_eq!(message, "Who?");
    assert_eq!(
        related.as_deref(),
        Some(handle.id()),
        "tagged with its task"
    );
    assert_eq!(
        result.structured_content,
        Some(json!({"answers": ["Ada"]})),
        "the answer reached the waiting tool"
    );
    // The task left input_required once the answer landed.
    let seen: Vec<TaskStatus> = within("the status notifications", async {
        let mut seen = Vec::new();
        while let Some(status) = statuses.recv().await {
            let done = status.is_terminal();
            seen.push(status);
            if done {
                return seen;
            }
        }
        seen
    })
    .await;
    assert_eq!(
        seen,
        [
            TaskStatus::InputRequired,
            TaskStatus::Working,
            TaskStatus::Completed
        ]
    );
}

async fn a_sampling_request_travels_inside_tasks_result(connector: Connector) {
    let tool = work_tool("summarise", |_, cx: Context| async move {
        let params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("summarise")], 50);
        match cx.sample(params).await {
            Ok(result) => json!({"model": result.model}),
            Err(e) => json!({"error": e.to_string()}),
        }
    })
    .task_support(TaskSupport::Optional);
    let (tx, mut sampled) = mpsc::unbounded_channel();
    let builder = client().sampling(
        SamplingSupport::new(),
        move |_params, cx: CallbackContext| {
            let related = cx
                .meta()
                .and_then(RelatedTaskMetadata::from_meta)
                .map(|r| r.task_id);
            let _ = tx.send(related);
            async { Ok(CreateMessageResult::assistant_text("short", "model-x")) }
        },
    );
    let pair = connect(&connector, &tasks_server(vec![tool]), builder).await;
    let handle = start_task(&pair, "summarise").await;
    reaches(&handle, TaskStatus::InputRequired).await;
    let result = within("the task's result", handle.result()).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"model": "model-x"})));
    assert_eq!(sampled.try_recv().unwrap().as_deref(), Some(handle.id()));
}

async fn queued_requests_reach_the_client_in_order(connector: Connector) {
    let (builder, mut forms) = naming_client();
    let server = tasks_server(vec![asking(&["first", "second", "third"])]);
    let pair = connect(&connector, &server, builder).await;
    let handle = start_task(&pair, "ask").await;
    reaches(&handle, TaskStatus::InputRequired).await;
    let result = within("the task's result", handle.result()).await.unwrap();
    let order: Vec<String> = std::iter::from_fn(|| forms.try_recv().ok())
        .map(|(message, _)| message)
        .collect();
    assert_eq!(order, ["first", "second", "third"]);
    assert_eq!(
        result.structured_content,
        Some(json!({"answers": ["Ada", "Ada", "Ada"]}))
    );
}

async fn queued_requests_are_dropped_when_the_task_is_cancelled(connector: Connector) {
    let (told, mut outcome) = mpsc::unbounded_channel();
    let tool = work_tool("ask", move |_, cx: Context| {
        let told = told.clone();
        async move {
            let answer = cx.elicit_form_schema("Who?", name_form()).await;
            let _ = told.send(answer.is_err());
            json!({})
        }
    })
    .task_support(TaskSupport::Optional);
    let (builder, mut forms) = naming_client();
    let pair = connect(&connector, &tasks_server(vec![tool]), builder).await;
    let handle = start_task(&pair, "ask").await;
    reaches(&handle, TaskStatus::InputRequired).await;
    handle.cancel().await.unwrap();
    assert_eq!(
        within("the tool to hear", outcome.recv()).await,
        Some(true),
        "the waiting ask fails"
    );
    let result = within("tasks/result of a cancelled task", handle.result()).await;
    assert!(result.is_err(), "a cancelled task has no result");
    assert!(
        forms.try_recv().is_err(),
        "the queued elicitation never left"
    );
}

async fn the_server_runs_a_sampling_task_on_the_client(connector: Connector) {
    let release = Gate::new();
    let held = release.clone();
    let builder = client()
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(10)))
        .sampling(SamplingSupport::new(), move |params, _cx| {
            let held = held.clone();
            async move {
                let text = params.messages[0].content.blocks()[0]
                    .as_text()
                    .unwrap_or_default()
                    .to_owned();
                if text == "hold" {
                    held.passed().await;
                }
                Ok(CreateMessageResult::assistant_text(text, "model-y"))
            }
        });
    let delegate = work_tool("delegate", |_, cx: Context| async move {
        let ask = |text: &str| {
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(text)], 10)
        };
        let report = async {
            let done = cx
                .request_as_task::<CreateMessageRequest>(ask("echo"), TaskMetadata::new())
                .await?;
            let held = cx
                .request_as_task::<CreateMessageRequest>(ask("hold"), TaskMetadata::new())
                .await?;
            let listed = cx.peer().request::<ListTasksRequest>(None).await?;
            let listed: Vec<String> = listed.tasks.into_iter().map(|t| t.task_id).collect();
            let result = done.result().await?;
            let cancelled = held.cancel().await?;
            let after = held.status().await?;
            Ok::<_, modelctx::session::SessionError>(json!({
                "created": done.created().status.to_string(),
                "listed": listed.contains(&done.id().to_owned()) && listed.contains(&held.id().to_owned()),
                "model": result.model,
                "cancelled": cancelled.status.to_string(),
                "after": after.status.to_string(),
            }))
        };
        report
            .await
            .unwrap_or_else(|e| json!({"error": e.to_string()}))
    });
    let server = server_with_tool("delegator", delegate);
    let pair = connect(&connector, &server, builder).await;
    let declared = pair.client.capabilities().tasks.clone().unwrap();
    assert!(declared.list.is_some() && declared.cancel.is_some());
    let requests = declared.requests.unwrap();
    assert!(requests.sampling.unwrap().create_message.is_some());
    assert!(requests.elicitation.is_none(), "no elicitation callback");

    let report = crate::support::call_work(&pair, "delegate", json!({})).await;
    assert_eq!(
        report,
        json!({
            "created": "working",
            "listed": true,
            "model": "model-y",
            "cancelled": "cancelled",
            "after": "cancelled",
        })
    );
    release.open();
}

async fn tasks_belong_to_the_caller_that_created_them(connect: Connector) {
    let gate = Gate::new();
    let mut endpoint = connect.http_endpoint().await;
    // One server per instance; on the shared leg each keeps its tasks in the trial's
    // Redis, as two processes would.
    let mut servers = Vec::new();
    for _ in 0..endpoint.instances() {
        let store: Option<Arc<dyn TaskStore>> = match endpoint.redis_url() {
            None => None,
            Some(redis) => {
                let config = modelctx_redis::TaskStoreConfig::default();
                let store =
                    redis_connected(modelctx_redis::TaskStore::connect(&redis, config)).await;
                Some(Arc::new(store))
            }
        };
        let tools = vec![gated("slow", &gate, TaskSupport::Optional)];
        servers.push(tasks_server_on(tools, store));
    }
    let url = serve_as_users(&mut endpoint, servers).await;
    let connect_as = |user: &'static str| connect_as(&url, user, client());
    let alice = connect_as("alice").await;
    let bob = connect_as("bob").await;
    let handle = alice
        .call_tool_as_task(call("slow"), TaskMetadata::new())
        .await
        .unwrap();
    let task = handle.created().clone();

    // Another caller sees nothing of it, under any method.
    let theirs: TaskHandle<CallToolResult> = bob.task_handle(task.clone());
    for refused in [
        theirs.status().await.err(),
        theirs.cancel().await.err(),
        theirs.result().await.err(),
    ] {
        let code = refused.and_then(|e| e.protocol_error().map(|p| p.code));
        assert_eq!(code, Some(ErrorCode::INVALID_PARAMS));
    }
    assert!(bob.list_all_tasks().await.unwrap().is_empty());

    // The same caller on another session does.
    let again = connect_as("alice").await;
    let mine: TaskHandle<CallToolResult> = again.task_handle(task.clone());
    assert_eq!(mine.status().await.unwrap().status, TaskStatus::Working);
    let listed = again.list_all_tasks().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].task_id, task.task_id);
    gate.open();
    within("the task's result", mine.result()).await.unwrap();
    drop(alice);
}
