//! The tools of the 2026-07-28 scenarios: multi round-trip requests from the same
//! `Context` calls, and list changes.

use modelctx::server::{Context, Elicited, NoArgs, PromptDef, ToolDef};
use modelctx::types::{
    CreateMessageRequestParams, PromptMessage, RequestedSchema, SamplingMessage,
    SamplingMessageContentBlock, Tool,
};
use serde_json::{Value, json};

use crate::Error;
use crate::tools::object;

/// The text of a sampling answer.
pub(crate) fn sampled_text(result: &modelctx::types::CreateMessageResult) -> String {
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
pub(crate) async fn ask_field(
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
pub(crate) fn greeter(name: &str) -> ToolDef {
    ToolDef::new(name, |_: NoArgs, cx: Context| async move {
        let name = ask_field(&cx, "user_name", "What is your name?", "name", "string").await?;
        Ok::<_, Error>(format!("Hello, {name}!"))
    })
}

/// A question for the client's LLM.
pub(crate) fn question(text: &str) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(text)], 50)
}

/// The fixtures of the 2026-07-28 scenarios (`server-stateless` and the
/// `input-required-result-*` family): each asks for input the same way in both eras.
pub(crate) fn era_2026_tools() -> Vec<ToolDef> {
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
