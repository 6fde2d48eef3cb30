//! The tools of the handshake-era scenarios: content kinds, progress, logging, sampling,
//! elicitation, and gates a test opens when it is ready.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::http::StreamControl;
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Elicited, NoArgs, ToolDef};
use modelctx::session::Progress;
use modelctx::types::{
    ContentBlock, CreateMessageRequestParams, RequestedSchema, SamplingMessage, TaskSupport,
    TextResourceContents, Tool,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::era_2026::{era_2026_tools, sampled_text};
use crate::tasks::task_tools;
use crate::{Error, PNG, WAV};

/// Arguments of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
pub(crate) struct SamplingArgs {
    /// The prompt to send to the client's LLM.
    pub(crate) prompt: String,
}

/// Arguments of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
pub(crate) struct ElicitationArgs {
    /// The message to show the user.
    pub(crate) message: String,
}

/// Arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
pub(crate) struct TwoArgs {
    /// First test argument.
    pub(crate) arg1: String,
    /// Second test argument.
    pub(crate) arg2: String,
}

/// Arguments of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct EmbedArgs {
    /// URI of the resource to embed.
    pub(crate) resource_uri: String,
}

/// Arguments of `wait_for_gate` and `open_gate`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
pub(crate) struct GateArgs {
    /// The gate's name.
    pub(crate) gate: String,
}

/// The gates of `wait_for_gate`, by name, shared by every session of the process.
#[derive(Clone, Default)]
pub(crate) struct Gates(Arc<Mutex<HashMap<String, tokio::sync::watch::Sender<bool>>>>);

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
pub(crate) struct TemplateVars {
    pub(crate) id: String,
}

/// Lets `test_reconnection` close its own SSE connection: one per session.
pub(crate) struct Streams(pub(crate) StreamControl);

pub(crate) fn object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// How an elicitation was answered, as the scenarios expect to read it.
pub(crate) fn describe(answer: Elicited<modelctx::server::FormValues>) -> (String, Value) {
    match answer {
        Elicited::Accepted(values) => ("accept".into(), json!(values)),
        Elicited::Declined => ("decline".into(), Value::Null),
        Elicited::Cancelled => ("cancel".into(), Value::Null),
    }
}

/// Elicits `schema` and reports the answer as `"{prefix}: action=..., content=..."`.
pub(crate) async fn elicit(
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

/// The form `test_elicitation` and `side_channel_task` ask for: a username and an email
/// address, both required.
fn username_and_email() -> Value {
    json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    })
}

/// The tools of the tasks legs: `wait_for_gate` may run as a task, `side_channel_task` must.
pub(crate) fn gate_tools(gates: &Gates) -> Vec<ToolDef> {
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
                elicit(&cx, "User response", args.message, username_and_email()).await
            },
        )
        .description("Asks the user for a username and an email address from within a task")
        .task_support(TaskSupport::Required),
    ]
}

pub(crate) fn all() -> Vec<ToolDef> {
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
                Ok::<_, Error>(format!("LLM response: {}", sampled_text(&result)))
            },
        )
        .description("Asks the client's LLM"),
        ToolDef::new(
            "test_elicitation",
            |args: ElicitationArgs, cx: Context| async move {
                elicit(&cx, "User response", args.message, username_and_email()).await
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
