//! The tools the tasks scenarios call as tasks.

use std::time::Duration;

use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Elicited, NoArgs, ToolDef};
use modelctx::types::{RequestedSchema, TaskSupport, Tool};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Error;
use crate::era_2026::ask_field;
use crate::tools::object;

/// Arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
pub(crate) struct GreetArgs {
    /// Who to greet.
    pub(crate) name: String,
}

/// Arguments of `slow_compute`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
pub(crate) struct ComputeArgs {
    /// How long the computation takes.
    #[serde(default)]
    pub(crate) seconds: u64,
    /// A label echoed in the answer.
    #[serde(default)]
    pub(crate) label: String,
}

/// Arguments of `confirm_delete`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
pub(crate) struct DeleteArgs {
    /// The file to delete.
    pub(crate) filename: String,
}

/// A form with the fields `fields` (name, JSON type).
pub(crate) fn form(fields: &[(&str, &str)]) -> Result<RequestedSchema, Error> {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(name, kind)| ((*name).to_owned(), json!({"type": kind})))
        .collect();
    Ok(serde_json::from_value(
        json!({"type": "object", "properties": properties}),
    )?)
}

/// Sleeps `seconds`, or less when the call (or its task) is cancelled.
pub(crate) async fn work_for(cx: &Context, seconds: u64) -> bool {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(seconds)) => true,
        () = cx.cancellation().cancelled() => false,
    }
}

/// The fixtures of the tasks extension's scenarios (`tasks-*`, SEP-2663): tools that
/// may run as tasks, written as plain tools — the server decides, per call, whether one
/// becomes a task (2026-07-28) or the client asks for one (2025-11-25).
pub(crate) fn task_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new("greet", |args: GreetArgs, _cx: Context| async move {
            Ok::<_, Error>(format!("Hello, {}!", args.name))
        })
        .description("Greets someone at once (never a task)"),
        ToolDef::new(
            "slow_compute",
            |args: ComputeArgs, cx: Context| async move {
                if work_for(&cx, args.seconds).await {
                    Ok::<_, Error>(format!("computed {}", args.label))
                } else {
                    Ok(format!("stopped computing {}", args.label))
                }
            },
        )
        .description("Computes for `seconds` seconds; may run as a task")
        .task_support(TaskSupport::Optional),
        ToolDef::new("failing_job", |_: NoArgs, cx: Context| async move {
            work_for(&cx, 1).await;
            Err::<String, Error>("the job failed after a second of work".into())
        })
        .description("Fails with a tool error after a second; always a task")
        .task_support(TaskSupport::Required),
        ToolDef::with_schema(
            Tool::new("protocol_error_job", object(json!({"type": "object"}))).with_output_schema(
                object(json!({
                    "type": "object",
                    "properties": {"answer": {"type": "string"}},
                    "required": ["answer"]
                })),
            ),
            |_args, cx: Context| async move {
                work_for(&cx, 1).await;
                // No structuredContent for a tool with an outputSchema: the server's
                // own JSON-RPC error (-32603), not a tool error.
                Ok::<_, Error>(modelctx::types::CallToolResult::text(
                    "no structured answer",
                ))
            },
        )
        .description("Ends in a JSON-RPC error after a second; may run as a task")
        .task_support(TaskSupport::Optional),
        ToolDef::new(
            "confirm_delete",
            |args: DeleteArgs, cx: Context| async move {
                let answer = cx
                    .with_input_key("confirm")
                    .elicit_form_schema(
                        format!("Delete {}?", args.filename),
                        form(&[("confirm", "boolean")])?,
                    )
                    .await?;
                let confirmed = answer
                    .accepted()
                    .and_then(|form| form.get("confirm").cloned())
                    .map(|v| serde_json::to_value(v).unwrap_or_default())
                    == Some(json!(true));
                Ok::<_, Error>(if confirmed {
                    format!("deleted {}", args.filename)
                } else {
                    format!("kept {}", args.filename)
                })
            },
        )
        .description("Asks for confirmation, then deletes; a task from the start")
        .task_support(TaskSupport::Optional)
        .task_window(Duration::ZERO),
        ToolDef::new("multi_input", |_: NoArgs, cx: Context| async move {
            let schema = form(&[("name", "string"), ("confirm", "boolean")])?;
            let (one, two) = (cx.with_input_key("first"), cx.with_input_key("second"));
            let (first, second) = tokio::join!(
                one.elicit_form_schema("First input", schema.clone()),
                two.elicit_form_schema("Second input", schema.clone()),
            );
            let accepted = [first?, second?]
                .into_iter()
                .filter(Elicited::is_accepted)
                .count();
            Ok::<_, Error>(format!("{accepted} of 2 inputs accepted"))
        })
        .description("Asks for two inputs at once; a task from the start")
        .task_support(TaskSupport::Optional)
        .task_window(Duration::ZERO),
        ToolDef::new("test_tool_with_task", |_: NoArgs, cx: Context| async move {
            // Asked before the task exists (in rounds), then long work as a task.
            let name = ask_field(&cx, "user_name", "What is your name?", "name", "string").await?;
            work_for(&cx, 1).await;
            Ok::<_, Error>(format!("Hello, {name}!"))
        })
        .description("Asks a name in rounds, then works as a task")
        .task_support(TaskSupport::Required),
    ]
}
