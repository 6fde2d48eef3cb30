//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! tests: every tool, resource and prompt its server scenarios ask for, written with the
//! high-level API.
//!
//! Run it with `cargo run -p modelctx-examples --bin conformance-server -- [--port N]`
//! (default port 3001); it serves `http://127.0.0.1:N/mcp` over streamable HTTP
//! (stateful, SSE answers, resumable). `cargo xtask interop` starts it and runs the
//! suite against it, and drives it from the TypeScript SDK's client. With `--stdio` it
//! serves one session on stdin/stdout instead. Both eras are served from the same
//! handlers: 2026-07-28 (stateless) and the handshake era. With `--sse` it also serves
//! the legacy HTTP+SSE transport (2024-11-05) beside `/mcp`, at `/sse` (the event
//! stream) and `/messages` (where the client POSTs), one server per stream, for the
//! SSE legs of `cargo xtask interop`.
//!
//! It runs tasks (protocol 2025-11-25): `wait_for_gate` may be called as a task and
//! finishes once `open_gate` opens its gate (or its task is cancelled), so the
//! TypeScript SDK's client can follow a task from `working` to `completed` without
//! depending on timing; `side_channel_task` must be called as a task and elicits through the
//! task's side channel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::http::{StreamControl, StreamableHttpServerConfig, StreamableHttpService, hosting};
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{
    Blob, CompletionInput, Context, Elicited, NoArgs, PromptDef, ResourceDef, Server, TaskConfig,
    TemplateDef, ToolDef,
};
use modelctx::session::{Progress, SessionConfig};
use modelctx::sse::{SseServerConfig, SseService};
use modelctx::types::{
    ContentBlock, CreateMessageRequestParams, PromptMessage, RequestedSchema, Role,
    SamplingMessage, SamplingMessageContentBlock, TaskSupport, TextResourceContents, Tool,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1×1 PNG image.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// Eight samples of silence as an 8 kHz mono WAV file.
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct SamplingArgs {
    /// The prompt to send to the client's LLM.
    prompt: String,
}

/// Arguments of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

/// Arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct TwoArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// Arguments of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
#[serde(rename_all = "camelCase")]
struct EmbedArgs {
    /// URI of the resource to embed.
    resource_uri: String,
}

/// Arguments of `wait_for_gate` and `open_gate`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct GateArgs {
    /// The gate's name.
    gate: String,
}

/// The gates of `wait_for_gate`, by name, shared by every session of the process.
#[derive(Clone, Default)]
struct Gates(Arc<Mutex<HashMap<String, tokio::sync::watch::Sender<bool>>>>);

impl Gates {
    fn get(&self, name: &str) -> tokio::sync::watch::Sender<bool> {
        let mut gates = self.0.lock().unwrap_or_else(|e| e.into_inner());
        gates
            .entry(name.to_owned())
            .or_insert_with(|| tokio::sync::watch::channel(false).0)
            .clone()
    }

    fn open(&self, name: &str) {
        self.get(name).send_replace(true);
    }

    /// Waits until the gate opens; `false` when `cx` is cancelled first.
    async fn wait(&self, name: &str, cx: &Context) -> bool {
        let mut open = self.get(name).subscribe();
        tokio::select! {
            opened = open.wait_for(|o| *o) => opened.is_ok(),
            () = cx.cancellation().cancelled() => false,
        }
    }
}

/// The variables of `test://template/{id}/data`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct TemplateVars {
    id: String,
}

/// Lets `test_reconnection` close its own SSE connection: one per session.
struct Streams(StreamControl);

fn object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// How an elicitation was answered, as the scenarios expect to read it.
fn describe(answer: Elicited<modelctx::server::FormValues>) -> (String, Value) {
    match answer {
        Elicited::Accepted(values) => ("accept".into(), json!(values)),
        Elicited::Declined => ("decline".into(), Value::Null),
        Elicited::Cancelled => ("cancel".into(), Value::Null),
    }
}

/// Elicits `schema` and reports the answer as `"{prefix}: action=..., content=..."`.
async fn elicit(
    cx: &Context,
    prefix: &str,
    message: String,
    schema: Value,
) -> Result<String, Error> {
    let schema: RequestedSchema = serde_json::from_value(schema)?;
    let answer = cx
        .elicit_form_schema(message, schema)
        .await
        .map_err(|e| e.to_string())?;
    let (action, content) = describe(answer);
    Ok(format!("{prefix}: action={action}, content={content}"))
}

/// The tools of the tasks legs: `wait_for_gate` may run as a task, `side_channel_task` must.
fn gate_tools(gates: &Gates) -> Vec<ToolDef> {
    let waiting = gates.clone();
    let opening = gates.clone();
    vec![
        ToolDef::new("wait_for_gate", move |args: GateArgs, cx: Context| {
            let gates = waiting.clone();
            async move {
                if gates.wait(&args.gate, &cx).await {
                    Ok(format!("gate {} opened", args.gate))
                } else {
                    Err::<String, Error>(format!("gate {}: cancelled", args.gate).into())
                }
            }
        })
        .description("Waits until open_gate opens the named gate (may run as a task)")
        .task_support(TaskSupport::Optional),
        ToolDef::new("open_gate", move |args: GateArgs, _cx| {
            let gates = opening.clone();
            async move {
                gates.open(&args.gate);
                Ok::<_, Error>(format!("opened {}", args.gate))
            }
        })
        .description("Opens the named gate"),
        ToolDef::new(
            "side_channel_task",
            |args: ElicitationArgs, cx: Context| async move {
                // Run as a task, the question waits for the client's next tasks/result.
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                elicit(&cx, "User response", args.message, schema).await
            },
        )
        .description("Asks the user for a username and an email address from within a task")
        .task_support(TaskSupport::Required),
    ]
}

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new("test_simple_text", |_: NoArgs, _cx| async {
            Ok::<_, Error>("This is a simple text response for testing.")
        })
        .description("Returns simple text"),
        ToolDef::new("test_image_content", |_: NoArgs, _cx| async {
            Ok::<_, Error>(ContentBlock::image(PNG, "image/png"))
        })
        .description("Returns an image"),
        ToolDef::new("test_audio_content", |_: NoArgs, _cx| async {
            Ok::<_, Error>(ContentBlock::audio(WAV, "audio/wav"))
        })
        .description("Returns audio"),
        ToolDef::new("test_embedded_resource", |_: NoArgs, _cx| async {
            Ok::<_, Error>(ContentBlock::resource(
                TextResourceContents::new(
                    "test://embedded-resource",
                    "This is an embedded resource content.",
                )
                .with_mime_type("text/plain"),
            ))
        })
        .description("Returns an embedded resource"),
        ToolDef::new("test_multiple_content_types", |_: NoArgs, _cx| async {
            Ok::<_, Error>(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::resource(
                    TextResourceContents::new(
                        "test://mixed-content-resource",
                        json!({"test": "data", "value": 123}).to_string(),
                    )
                    .with_mime_type("application/json"),
                ),
            ])
        })
        .description("Returns text, an image and a resource"),
        ToolDef::new(
            "test_tool_with_logging",
            |_: NoArgs, cx: Context| async move {
                cx.info("Tool execution started").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
                cx.info("Tool processing data").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
                cx.info("Tool execution completed").await?;
                Ok::<_, Error>("Logging completed")
            },
        )
        .description("Logs three messages while it runs"),
        ToolDef::new(
            "test_tool_with_progress",
            |_: NoArgs, cx: Context| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    cx.report_progress(Progress::new(step).with_total(100.0))
                        .await?;
                }
                Ok::<_, Error>("Progress completed")
            },
        )
        .description("Reports progress 0, 50 and 100 of 100"),
        ToolDef::new("test_error_handling", |_: NoArgs, _cx| async {
            Err::<String, Error>("This tool intentionally returns an error for testing".into())
        })
        .description("Always fails"),
        ToolDef::new(
            "test_sampling",
            |args: SamplingArgs, cx: Context| async move {
                let params = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text(args.prompt)],
                    100,
                );
                let result = cx.sample(params).await.map_err(|e| e.to_string())?;
                let text = result
                    .content
                    .blocks()
                    .iter()
                    .filter_map(|b| match b {
                        SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("");
                Ok::<_, Error>(format!("LLM response: {text}"))
            },
        )
        .description("Asks the client's LLM"),
        ToolDef::new(
            "test_elicitation",
            |args: ElicitationArgs, cx: Context| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                elicit(&cx, "User response", args.message, schema).await
            },
        )
        .description("Asks the user for a username and an email address"),
        ToolDef::new(
            "test_elicitation_sep1034_defaults",
            |_: NoArgs, cx: Context| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {
                            "type": "string",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active"
                        },
                        "verified": {"type": "boolean", "default": true}
                    }
                });
                elicit(
                    &cx,
                    "Elicitation completed",
                    "Please review your details".into(),
                    schema,
                )
                .await
            },
        )
        .description("Elicits a form whose fields all have defaults"),
        ToolDef::new(
            "test_elicitation_sep1330_enums",
            |_: NoArgs, cx: Context| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {
                            "type": "string",
                            "enum": ["option1", "option2", "option3"]
                        },
                        "titledSingle": {
                            "type": "string",
                            "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}
                            ]
                        },
                        "legacyEnum": {
                            "type": "string",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                        },
                        "titledMulti": {
                            "type": "array",
                            "items": {
                                "anyOf": [
                                    {"const": "value1", "title": "First Choice"},
                                    {"const": "value2", "title": "Second Choice"},
                                    {"const": "value3", "title": "Third Choice"}
                                ]
                            }
                        }
                    }
                });
                elicit(
                    &cx,
                    "Elicitation completed",
                    "Please pick some options".into(),
                    schema,
                )
                .await
            },
        )
        .description("Elicits every kind of enum field"),
        ToolDef::with_schema(
            Tool::new(
                "json_schema_2020_12_tool",
                object(json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {
                        "address": {
                            "$anchor": "addressDef",
                            "type": "object",
                            "properties": {
                                "street": {"type": "string"},
                                "city": {"type": "string"}
                            }
                        }
                    },
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/address"},
                        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                        "phone": {"type": "string"},
                        "email": {"type": "string"}
                    },
                    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                    "if": {
                        "properties": {"contactMethod": {"const": "phone"}},
                        "required": ["contactMethod"]
                    },
                    "then": {"required": ["phone"]},
                    "else": {"required": ["email"]},
                    "additionalProperties": false
                })),
            )
            .with_description("Tool with JSON Schema 2020-12 features"),
            |args, _cx| async move { Ok::<_, Error>(format!("Received {}", Value::Object(args))) },
        ),
        ToolDef::new("test_reconnection", |_: NoArgs, cx: Context| async move {
            // Close this call's SSE connection mid-call: the client reconnects with
            // `Last-Event-ID` and gets the result from the event store.
            tokio::time::sleep(Duration::from_millis(100)).await;
            if let Some(streams) = cx.state::<Streams>() {
                streams.0.close_request_stream(cx.request_id());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, Error>("Reconnection test completed")
        })
        .description("Closes its SSE stream mid-call, then answers"),
    ]
    .into_iter()
    .chain(era_2026_tools())
    .chain(task_tools())
    .collect()
}

/// Arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

/// Arguments of `slow_compute`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct ComputeArgs {
    /// How long the computation takes.
    #[serde(default)]
    seconds: u64,
    /// A label echoed in the answer.
    #[serde(default)]
    label: String,
}

/// Arguments of `confirm_delete`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct DeleteArgs {
    /// The file to delete.
    filename: String,
}

/// A form with the fields `fields` (name, JSON type).
fn form(fields: &[(&str, &str)]) -> Result<RequestedSchema, Error> {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(name, kind)| ((*name).to_owned(), json!({"type": kind})))
        .collect();
    Ok(serde_json::from_value(
        json!({"type": "object", "properties": properties}),
    )?)
}

/// Sleeps `seconds`, or less when the call (or its task) is cancelled.
async fn work_for(cx: &Context, seconds: u64) -> bool {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(seconds)) => true,
        () = cx.cancellation().cancelled() => false,
    }
}

/// The fixtures of the tasks extension's scenarios (`tasks-*`, SEP-2663): tools that
/// may run as tasks, written as plain tools — the server decides, per call, whether one
/// becomes a task (2026-07-28) or the client asks for one (2025-11-25).
fn task_tools() -> Vec<ToolDef> {
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

/// The text of a sampling answer.
fn sampled_text(result: &modelctx::types::CreateMessageResult) -> String {
    result
        .content
        .blocks()
        .iter()
        .filter_map(|b| match b {
            SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// Asks for a one-field form under `key` and returns the field's value as text.
async fn ask_field(
    cx: &Context,
    key: &str,
    message: &str,
    field: &str,
    kind: &str,
) -> Result<String, Error> {
    let schema: RequestedSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {field: {"type": kind}},
        "required": [field]
    }))?;
    let answer = cx
        .with_input_key(key)
        .elicit_form_schema(message, schema)
        .await
        .map_err(|e| e.to_string())?;
    Ok(match answer {
        Elicited::Accepted(form) => form
            .get(field)
            .map(|v| serde_json::to_value(v).unwrap_or_default())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_default(),
        Elicited::Declined => "declined".to_owned(),
        Elicited::Cancelled => "cancelled".to_owned(),
    })
}

/// A tool that asks the user's name (under the key `user_name`), then greets them.
fn greeter(name: &str) -> ToolDef {
    ToolDef::new(name, |_: NoArgs, cx: Context| async move {
        let name = ask_field(&cx, "user_name", "What is your name?", "name", "string").await?;
        Ok::<_, Error>(format!("Hello, {name}!"))
    })
}

/// A question for the client's LLM.
fn question(text: &str) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(text)], 50)
}

/// The fixtures of the 2026-07-28 scenarios (`server-stateless` and the
/// `input-required-result-*` family): each asks for input the same way in both eras.
fn era_2026_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new("test_logging_tool", |_: NoArgs, cx: Context| async move {
            cx.info(json!("test_logging_tool is running")).await?;
            Ok::<_, Error>("Logged one message (sent only when the request asked for logs).")
        })
        .description("Logs one info message, then answers"),
        ToolDef::new(
            "test_missing_capability",
            |_: NoArgs, cx: Context| async move {
                let result = cx
                    .sample(question("Say hello"))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, Error>(format!("LLM said: {}", sampled_text(&result)))
            },
        )
        .description("Needs the client's sampling capability"),
        greeter("test_streaming_elicitation")
            .description("Asks the user for input while the call runs"),
        greeter("test_input_required_result_elicitation")
            .description("Asks the user's name, then greets them"),
        ToolDef::new(
            "test_input_required_result_sampling",
            |_: NoArgs, cx: Context| async move {
                let answer = cx
                    .with_input_key("capital_question")
                    .sample(question("What is the capital of France?"))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, Error>(format!("LLM said: {}", sampled_text(&answer)))
            },
        )
        .description("Asks the client's LLM a question"),
        ToolDef::new(
            "test_input_required_result_list_roots",
            |_: NoArgs, cx: Context| async move {
                let roots = cx
                    .with_input_key("client_roots")
                    .list_roots()
                    .await
                    .map_err(|e| e.to_string())?;
                let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
                Ok::<_, Error>(format!("Roots: {}", uris.join(", ")))
            },
        )
        .description("Lists the client's roots"),
        ToolDef::new(
            "test_input_required_result_request_state",
            |_: NoArgs, cx: Context| async move {
                let ok = ask_field(&cx, "confirm", "Please confirm", "ok", "boolean").await?;
                Ok::<_, Error>(format!("state-ok (confirmed: {ok})"))
            },
        )
        .description("Asks for a confirmation carried through requestState"),
        ToolDef::new(
            "test_input_required_result_multiple_inputs",
            |_: NoArgs, cx: Context| async move {
                let (name, greeting, roots) = tokio::join!(
                    ask_field(&cx, "user_name", "What is your name?", "name", "string"),
                    async {
                        cx.with_input_key("greeting")
                            .sample(question("Generate a greeting"))
                            .await
                            .map_err(|e| Error::from(e.to_string()))
                    },
                    async {
                        cx.with_input_key("client_roots")
                            .list_roots()
                            .await
                            .map_err(|e| Error::from(e.to_string()))
                    },
                );
                Ok::<_, Error>(format!(
                    "{} {} ({} roots)",
                    sampled_text(&greeting?),
                    name?,
                    roots?.len()
                ))
            },
        )
        .description("Asks for a name, an LLM greeting and the roots at once"),
        ToolDef::new(
            "test_input_required_result_multi_round",
            |_: NoArgs, cx: Context| async move {
                let name = ask_field(&cx, "step1", "What is your name?", "name", "string").await?;
                let color = ask_field(
                    &cx,
                    "step2",
                    "What is your favourite colour?",
                    "color",
                    "string",
                )
                .await?;
                Ok::<_, Error>(format!("{name} likes {color}"))
            },
        )
        .description("Asks two questions, one round each"),
        greeter("test_input_required_result_tampered_state")
            .description("Asks the user's name; a tampered requestState is refused"),
        ToolDef::new(
            "test_input_required_result_capabilities",
            |_: NoArgs, cx: Context| async move {
                // Only what the client declared: a form when it can show one, else its LLM.
                let can_elicit = cx
                    .client_capabilities()
                    .is_some_and(|c| c.elicitation.is_some());
                if can_elicit {
                    let name =
                        ask_field(&cx, "user_name", "What is your name?", "name", "string").await?;
                    return Ok::<_, Error>(format!("Hello, {name}!"));
                }
                let answer = cx
                    .with_input_key("fallback_question")
                    .sample(question("Pick a name"))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(format!("Hello, {}!", sampled_text(&answer)))
            },
        )
        .description("Asks only for input the client declared it can give"),
        ToolDef::with_schema(
            Tool::new(
                "test_custom_header",
                object(json!({
                    "type": "object",
                    "properties": {
                        "region": {
                            "type": "string",
                            "description": "Where to run; mirrored into Mcp-Param-Region",
                            "x-mcp-header": "Region"
                        }
                    },
                    "required": ["region"]
                })),
            )
            .with_description("Echoes a parameter the client also sends as a header"),
            |args, _cx| async move {
                let region = args.get("region").and_then(Value::as_str).unwrap_or("?");
                Ok::<_, Error>(format!("Region: {region}"))
            },
        ),
        ToolDef::new(
            "test_trigger_tool_change",
            |_: NoArgs, cx: Context| async move {
                // Adds a tool and takes it away again: the list ends as it was, and one
                // `notifications/tools/list_changed` goes out.
                let server = cx.server();
                server.add_tool(ToolDef::new(
                    "test_transient_tool",
                    |_: NoArgs, _cx| async { Ok::<_, Error>("transient") },
                ))?;
                server.remove_tool("test_transient_tool");
                Ok::<_, Error>("The tool list changed")
            },
        )
        .description("Changes the tool list (and changes it back)"),
        ToolDef::new(
            "test_trigger_prompt_change",
            |_: NoArgs, cx: Context| async move {
                let server = cx.server();
                server.add_prompt(PromptDef::new(
                    "test_transient_prompt",
                    |_: NoArgs, _cx| async {
                        Ok::<_, Error>(PromptMessage::user_text("transient"))
                    },
                ))?;
                server.remove_prompt("test_transient_prompt");
                Ok::<_, Error>("The prompt list changed")
            },
        )
        .description("Changes the prompt list (and changes it back)"),
    ]
}

fn server(streams: Option<StreamControl>, gates: &Gates) -> Result<Server, Error> {
    let mut builder = Server::builder("modelctx-conformance-server", "1.0.0")
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(100)));
    if let Some(streams) = streams {
        builder = builder.state(Streams(streams));
    }
    for tool in tools().into_iter().chain(gate_tools(gates)) {
        builder = builder.tool(tool)?;
    }
    let builder = builder
        .resource(
            ResourceDef::new("test://static-text", "static-text", |_cx| async {
                Ok::<_, Error>("This is the content of the static text resource.")
            })
            .description("A static text resource")
            .mime_type("text/plain"),
        )?
        .resource(
            ResourceDef::new("test://static-binary", "static-binary", |_cx| async {
                Ok::<_, Error>(Blob(png_bytes()))
            })
            .description("A static binary resource")
            .mime_type("image/png"),
        )?
        .resource(
            ResourceDef::new("test://watched-resource", "watched-resource", |_cx| async {
                Ok::<_, Error>("Watched resource content.")
            })
            .description("A resource to subscribe to")
            .mime_type("text/plain"),
        )?
        .resource_template(
            TemplateDef::new(
                "test://template/{id}/data",
                "template-data",
                |vars: TemplateVars, _cx| async move {
                    let data = json!({
                        "id": vars.id,
                        "templateTest": true,
                        "data": format!("Data for ID: {}", vars.id)
                    });
                    Ok::<_, Error>(data.to_string())
                },
            )
            .description("Data by id")
            .mime_type("application/json"),
        )?
        .prompt(
            PromptDef::new("test_simple_prompt", |_: NoArgs, _cx| async {
                Ok::<_, Error>(PromptMessage::user_text(
                    "This is a simple prompt for testing.",
                ))
            })
            .description("A prompt without arguments"),
        )?
        .prompt(
            PromptDef::new(
                "test_prompt_with_arguments",
                |args: TwoArgs, _cx| async move {
                    Ok::<_, Error>(PromptMessage::user_text(format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        args.arg1, args.arg2
                    )))
                },
            )
            .description("A prompt with two arguments")
            .complete("arg1", complete_arg1),
        )?
        .prompt(
            PromptDef::new(
                "test_prompt_with_embedded_resource",
                |args: EmbedArgs, _cx| async move {
                    Ok::<_, Error>(vec![
                        PromptMessage::new(
                            Role::User,
                            ContentBlock::resource(
                                TextResourceContents::new(
                                    args.resource_uri,
                                    "Embedded resource content for testing.",
                                )
                                .with_mime_type("text/plain"),
                            ),
                        ),
                        PromptMessage::user_text("Please process the embedded resource above."),
                    ])
                },
            )
            .description("A prompt embedding a resource"),
        )?
        .prompt(
            PromptDef::new("test_prompt_with_image", |_: NoArgs, _cx| async {
                Ok::<_, Error>(vec![
                    PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
                    PromptMessage::user_text("Please analyze the image above."),
                ])
            })
            .description("A prompt with an image"),
        )?
        .prompt(
            PromptDef::new(
                "test_input_required_result_prompt",
                |_: NoArgs, cx: Context| async move {
                    let context = ask_field(
                        &cx,
                        "user_context",
                        "What context should the prompt use?",
                        "context",
                        "string",
                    )
                    .await?;
                    Ok::<_, Error>(PromptMessage::user_text(format!(
                        "Answer with this context in mind: {context}"
                    )))
                },
            )
            .description("A prompt that asks the user for its context first"),
        )?;
    Ok(builder.build())
}

async fn complete_arg1(input: CompletionInput, _cx: Context) -> Result<Vec<String>, Error> {
    Ok(["paris", "park", "party"]
        .into_iter()
        .filter(|v| v.starts_with(&input.value))
        .map(str::to_owned)
        .collect())
}

fn png_bytes() -> Vec<u8> {
    // The same 1×1 PNG as `PNG`, as bytes.
    const BYTES: [u8; 69] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90,
        0x77, 0x53, 0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8,
        0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0xc9, 0xfe, 0x92, 0xef, 0x00, 0x00, 0x00,
        0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    BYTES.to_vec()
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut port = 3001u16;
    let mut stdio = false;
    let mut sse = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => stdio = true,
            "--sse" => sse = true,
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a number")?;
            }
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    // Fail at start-up, not per session, if a definition is refused.
    let gates = Gates::default();
    let single = server(None, &gates)?;
    // Requests of the stateless era share one server, so a change one request makes is
    // seen by the `subscriptions/listen` stream of another.
    let shared = single.clone();
    if stdio {
        // One session on stdin/stdout; `test_reconnection` has no SSE stream to close.
        let session = single.serve(modelctx::stdio::stdio());
        session.closed().await;
        session.close().await;
        return Ok(());
    }
    let config = StreamableHttpServerConfig::default()
        .on_error(|rejection| eprintln!("rejected ({}): {}", rejection.status, rejection.reason));
    let sse_config = SseServerConfig::matching(&config).on_error(|rejection| {
        eprintln!("rejected (sse, {}): {}", rejection.status, rejection.reason);
    });
    let header_timeout = config.header_read_timeout;
    let for_sse = gates.clone();
    let service = StreamableHttpService::with_config(config, move |transport| {
        if transport.is_stateless() {
            shared.serve_with(transport, SessionConfig::server());
            return;
        }
        // One server per session, so `test_reconnection` reaches its own streams.
        match server(Some(transport.stream_control()), &gates) {
            Ok(server) => {
                server.serve_with(transport, SessionConfig::server());
            }
            Err(e) => eprintln!("cannot build the server: {e}"),
        }
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    eprintln!("MCP endpoint: http://{addr}/mcp");
    if !sse {
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        service.serve(listener, shutdown).await?;
        return Ok(());
    }
    // The legacy HTTP+SSE transport beside streamable HTTP, on the same listener and
    // with the same protections: one server per event stream (the handshake era).
    let legacy =
        SseService::with_config(sse_config, move |transport| match server(None, &for_sse) {
            Ok(server) => {
                server.serve_with(transport, SessionConfig::server());
            }
            Err(e) => eprintln!("cannot build the server: {e}"),
        });
    let router = legacy.router().nest_service("/mcp", service.router());
    eprintln!("legacy SSE endpoint: http://{addr}/sse");
    let shutdown = async move {
        let _ = tokio::signal::ctrl_c().await;
        // Streams last as long as their sessions: end them so the server can stop.
        service.close_all_sessions();
        legacy.close_all_sessions();
    };
    hosting::serve_router(listener, router, header_timeout, shutdown).await?;
    Ok(())
}
