//! Sampling (server → client): `sampling/createMessage` from a handler's context to the
//! client's sampling callback, and the checks on both sides.

use modelctx::client::{CallbackContext, ClientBuilder, SamplingSupport, sampling_rejected};
use modelctx::server::{ClientRequestError, Context, Server};
use modelctx::types::{
    AudioContent, CallToolRequest, CallToolRequestParams, CallToolResult, ContentBlock,
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ErrorData, ImageContent,
    IncludeContext, JsonObject, JsonRpcMessage, ModelHint, ModelPreferences, Role, SamplingContent,
    SamplingMessage, SamplingMessageContentBlock, StopReason, Tool, ToolChoice, ToolChoiceMode,
    ToolResultContent, ToolUseContent,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Pair, Work, asked_of, call_tool_request, call_work, client, connect, input_asking_server,
    input_required_server, stateless_era, work_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_handler_gets_the_sampled_answer_in_input_required => a_handler_gets_what_the_callback_produced,
            ["sampling:mrtr:create:basic"]
        ),
        conformance_test!(
            request_fields_cross_in_input_required => the_callback_sees_the_request_fields_as_sent,
            ["sampling:mrtr:create:include-context", "sampling:mrtr:create:model-preferences"]
        ),
        conformance_test!(
            mixed_tool_results_never_cross_in_input_required,
            ["sampling:mrtr:tool-result:no-mixed-content"]
        ),
        conformance_test!(
            media_crosses_in_input_required => media_and_both_content_forms_cross_intact,
            ["sampling:mrtr:create:audio-content", "sampling:mrtr:create:image-content"]
        ),
        conformance_test!(
            a_sampling_callback_declares_the_capability,
            ["sampling:capability:declare"]
        ),
        conformance_test!(
            a_handler_gets_what_the_callback_produced,
            ["sampling:create:basic"]
        ),
        conformance_test!(
            a_tool_call_carries_the_sampled_message,
            ["tools:call:sampling-roundtrip"]
        ),
        conformance_test!(
            the_callback_sees_the_request_fields_as_sent,
            [
                "sampling:create:include-context",
                "sampling:create:model-preferences",
                "sampling:create:system-prompt"
            ]
        ),
        conformance_test!(
            include_context_needs_the_context_capability,
            ["sampling:context:server-gated-by-capability"]
        ),
        conformance_test!(
            media_and_both_content_forms_cross_intact,
            [
                "sampling:create-message:audio-content",
                "sampling:create-message:image-content",
                "sampling:message:content-cardinality"
            ]
        ),
        conformance_test!(
            tools_reach_the_client_and_tool_use_comes_back,
            [
                "sampling:create:tools",
                "sampling:result:with-tools-array-content"
            ]
        ),
        conformance_test!(
            tools_need_the_tools_capability,
            ["sampling:tools:server-gated-by-capability"]
        ),
        conformance_test!(
            sampling_without_a_callback_ends_in_an_error,
            ["sampling:create-message:not-supported"]
        ),
        conformance_test!(
            a_user_rejection_reaches_the_handler,
            ["sampling:error:user-rejected"]
        ),
        conformance_test!(
            array_content_is_refused_for_a_request_without_tools,
            ["sampling:result:no-tools-single-content"]
        ),
        conformance_test!(
            tool_results_mixed_with_other_content_are_refused,
            ["sampling:tool-result:no-mixed-content"]
        ),
        conformance_test!(
            unanswered_tool_use_is_refused,
            ["sampling:tool-use:result-balance"]
        ),
        conformance_test!(
            unanswered_tool_use_never_leaves_the_server => unanswered_tool_use_is_refused,
            ["sampling:tool-use:server-preflight"]
        ),
    ]
}

/// A server whose `sample` tool samples with the params it is given through
/// `Context::sample` and reports the outcome as JSON, and whose `test/work` handler
/// sends the params it is given as is, skipping the local checks (a request from the
/// server: the handshake era only).
fn sampler() -> Server {
    Server::builder("sampler", "1.0.0")
        .tool(work_tool("sample", |request: Value, cx: Context| async move {
            match serde_json::from_value::<CreateMessageRequestParams>(request["params"].clone()) {
                Ok(params) => outcome(cx.sample(params).await),
                Err(e) => json!({"unreadable": e.to_string()}),
            }
        }))
        .expect("a valid tool")
        .request_handler::<Work, _, _>(|request: Value, cx: Context| async move {
            let raw = request.get("raw").cloned().unwrap_or_default();
            let params: CreateMessageRequestParams = serde_json::from_value(raw)
                .map_err(|e| ErrorData::invalid_params(e.to_string()))?;
            let result = cx.peer().request::<CreateMessageRequest>(params).await;
            Ok(match result {
                Ok(r) => json!({"ok": r}),
                Err(e) => json!({"protocol": e.protocol_error().is_some(), "code": e.to_error_data().code.0, "message": e.to_error_data().message}),
            })
        })
        .build()
}

/// A handler's view of a request to the client, as JSON.
fn outcome(result: Result<CreateMessageResult, ClientRequestError>) -> Value {
    match result {
        Ok(r) => json!({"ok": r}),
        Err(e) => {
            let data = e.to_error_data();
            json!({
                "refused": e.is_refused(),
                "protocol": e.protocol_error().is_some(),
                "code": data.code.0,
                "message": data.message,
            })
        }
    }
}

async fn sample(pair: &Pair, params: &CreateMessageRequestParams) -> Value {
    call_work(pair, "sample", json!({ "params": params })).await
}

async fn sample_raw(pair: &Pair, params: &CreateMessageRequestParams) -> Value {
    pair.client
        .request::<Work>(json!({ "raw": params }))
        .await
        .expect("the handler answers")
}

/// A client whose sampling callback forwards each request's params to the returned
/// channel and answers with `answer`.
pub(crate) fn recording_client(
    support: SamplingSupport,
    answer: CreateMessageResult,
) -> (
    ClientBuilder,
    mpsc::UnboundedReceiver<CreateMessageRequestParams>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let builder = client().sampling(support, move |params, _cx: CallbackContext| {
        let tx = tx.clone();
        let answer = answer.clone();
        async move {
            let _ = tx.send(params);
            Ok(answer)
        }
    });
    (builder, rx)
}

fn sampling_sent(pair: &Pair) -> bool {
    !asked_of(pair, "sampling/createMessage").is_empty()
}

/// The params of a request or notification, as JSON.
fn params_of(message: &JsonRpcMessage) -> Value {
    let raw = match message {
        JsonRpcMessage::Request(r) => r.params.as_deref(),
        JsonRpcMessage::Notification(n) => n.params.as_deref(),
        _ => None,
    };
    raw.map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap())
}

fn hello() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hello")], 50)
}

fn weather_tool() -> Tool {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    Tool::new("weather", serde_json::from_value(schema).unwrap())
}

async fn a_sampling_callback_declares_the_capability(connector: Connector) {
    let server = sampler();
    let answer = CreateMessageResult::assistant_text("x", "m");
    let (plain, _) = recording_client(SamplingSupport::new(), answer.clone());
    let pair = connect(&connector, &server, plain).await;
    let sent = pair.wire.sent();
    assert_eq!(params_of(&sent[0])["capabilities"], json!({"sampling": {}}));

    let (full, _) = recording_client(SamplingSupport::new().with_tools().with_context(), answer);
    let pair = connect(&connector, &server, full).await;
    let caps = serde_json::to_value(pair.server().client_capabilities().unwrap()).unwrap();
    assert_eq!(caps, json!({"sampling": {"tools": {}, "context": {}}}));

    let none = connect(&connector, &server, client()).await;
    assert!(
        none.server()
            .client_capabilities()
            .unwrap()
            .sampling
            .is_none()
    );
}

async fn a_handler_gets_what_the_callback_produced(connector: Connector) {
    let answer = CreateMessageResult::assistant_text("The sky is blue.", "model-7")
        .with_stop_reason(StopReason::EndTurn);
    let (builder, mut seen) = recording_client(SamplingSupport::new(), answer.clone());
    let pair = connect(&connector, &sampler(), builder).await;

    let got = sample(&pair, &hello()).await;
    assert_eq!(
        got["ok"],
        json!({"role": "assistant", "content": {"type": "text", "text": "The sky is blue."},
               "model": "model-7", "stopReason": "endTurn"})
    );
    let params = within("the callback", seen.recv()).await.unwrap();
    assert_eq!(params, hello());
}

async fn a_tool_call_carries_the_sampled_message(connector: Connector) {
    let server = Server::builder("summariser", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|call, cx: Context| async move {
            let text = call
                .arguments
                .as_ref()
                .and_then(|a| a.get("text"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let params = CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text(format!("Summarise: {text}"))],
                100,
            );
            let sampled = cx.sample(params).await?;
            let summary = sampled.content.blocks()[0]
                .as_text()
                .unwrap_or_default()
                .to_owned();
            Ok(CallToolResult::new(vec![ContentBlock::text(format!(
                "{summary} (by {})",
                sampled.model
            ))]))
        })
        .build();
    let builder = client().sampling(SamplingSupport::new(), |params, _cx| async move {
        let prompt = params.messages[0].content.blocks()[0]
            .as_text()
            .unwrap_or_default()
            .to_uppercase();
        Ok(CreateMessageResult::assistant_text(prompt, "echo-model"))
    });
    let pair = connect(&connector, &server, builder).await;
    let mut args = JsonObject::new();
    args.insert("text".into(), json!("long text"));
    let result = pair
        .client
        .request::<CallToolRequest>(
            modelctx::types::CallToolRequestParams::new("summarise").with_arguments(args),
        )
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("SUMMARISE: LONG TEXT (by echo-model)")
    );
}

async fn the_callback_sees_the_request_fields_as_sent(connector: Connector) {
    let answer = CreateMessageResult::assistant_text("ok", "m");
    let support = SamplingSupport::new().with_context();
    let (builder, mut seen) = recording_client(support, answer);
    let pair = connect(&connector, &sampler(), builder).await;

    let preferences = ModelPreferences::new()
        .with_hints(vec![
            ModelHint::new("claude-3-sonnet"),
            ModelHint::new("claude"),
        ])
        .with_cost_priority(0.3)
        .with_speed_priority(0.8)
        .with_intelligence_priority(0.5);
    for context in [
        IncludeContext::None,
        IncludeContext::ThisServer,
        IncludeContext::AllServers,
    ] {
        let params = hello()
            .with_include_context(context.clone())
            .with_system_prompt("You are terse.")
            .with_model_preferences(preferences.clone());
        let got = sample(&pair, &params).await;
        assert!(got.get("ok").is_some(), "{got}");
        let params_seen = within("the callback", seen.recv()).await.unwrap();
        assert_eq!(params_seen.include_context, Some(context));
        assert_eq!(params_seen.system_prompt.as_deref(), Some("You are terse."));
        assert_eq!(params_seen.model_preferences.as_ref(), Some(&preferences));
        assert_eq!(params_seen, params);
    }
}

async fn include_context_needs_the_context_capability(connector: Connector) {
    let answer = CreateMessageResult::assistant_text("ok", "m");
    let (builder, _seen) = recording_client(SamplingSupport::new(), answer);
    let pair = connect(&connector, &sampler(), builder).await;
    for context in [IncludeContext::ThisServer, IncludeContext::AllServers] {
        let got = sample(&pair, &hello().with_include_context(context)).await;
        assert_eq!(got["refused"], json!(true), "{got}");
        assert!(
            got["message"]
                .as_str()
                .unwrap()
                .contains("sampling.context")
        );
    }
    assert!(!sampling_sent(&pair), "nothing was sent to the client");
    let got = sample(&pair, &hello().with_include_context(IncludeContext::None)).await;
    assert!(got.get("ok").is_some(), "{got}");
}

async fn media_and_both_content_forms_cross_intact(connector: Connector) {
    let image = ImageContent::new("iVBORw0KGgo=", "image/png");
    let audio = AudioContent::new("UklGRiQAAABXQVZF", "audio/wav");
    let answer = CreateMessageResult::new(
        Role::Assistant,
        SamplingMessageContentBlock::from(audio.clone()),
        "m",
    );
    let (builder, mut seen) = recording_client(SamplingSupport::new(), answer);
    let pair = connect(&connector, &sampler(), builder).await;

    let params = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::new(Role::User, SamplingMessageContentBlock::from(image.clone())),
            SamplingMessage::new(
                Role::User,
                vec![
                    SamplingMessageContentBlock::text("and this sound:"),
                    audio.clone().into(),
                ],
            ),
        ],
        50,
    );
    let got = sample(&pair, &params).await;
    assert_eq!(
        got["ok"]["content"],
        json!({"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"})
    );
    let seen = within("the callback", seen.recv()).await.unwrap();
    assert_eq!(seen, params);
    assert_one_block_then_several(&seen);
    // On the wire: a lone object, then an array.
    let request = asked_of(&pair, "sampling/createMessage")
        .pop()
        .expect("a sampling request");
    let messages = &request["messages"];
    assert_eq!(
        messages[0]["content"],
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    );
    assert!(messages[1]["content"].is_array());
}

async fn tools_reach_the_client_and_tool_use_comes_back(connector: Connector) {
    let mut input = JsonObject::new();
    input.insert("city".into(), json!("Paris"));
    let answer = CreateMessageResult::new(
        Role::Assistant,
        vec![
            SamplingMessageContentBlock::text("Let me check."),
            ToolUseContent::new("call_1", "weather", input).into(),
        ],
        "m",
    )
    .with_stop_reason(StopReason::ToolUse);
    let (builder, mut seen) = recording_client(SamplingSupport::new().with_tools(), answer);
    let pair = connect(&connector, &sampler(), builder).await;

    let params = hello()
        .with_tools(vec![weather_tool()])
        .with_tool_choice(ToolChoice::new(ToolChoiceMode::Required));
    let got = sample(&pair, &params).await;
    assert_eq!(got["ok"]["stopReason"], json!("toolUse"), "{got}");
    assert_eq!(
        got["ok"]["content"][1],
        json!({"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}})
    );
    let seen = within("the callback", seen.recv()).await.unwrap();
    assert_eq!(seen.tools, Some(vec![weather_tool()]));
    assert_eq!(
        seen.tool_choice,
        Some(ToolChoice::new(ToolChoiceMode::Required))
    );
}

async fn tools_need_the_tools_capability(connector: Connector) {
    let answer = CreateMessageResult::assistant_text("ok", "m");
    let (builder, _seen) = recording_client(SamplingSupport::new(), answer);
    let pair = connect(&connector, &sampler(), builder).await;
    let got = sample(&pair, &hello().with_tools(vec![weather_tool()])).await;
    assert_eq!(got["refused"], json!(true), "{got}");
    assert_eq!(got["code"], json!(-32602));
    assert!(
        !sampling_sent(&pair),
        "nothing was written to the transport"
    );

    // The client enforces it too, for a server that skips the check.
    let got = sample_raw(&pair, &hello().with_tools(vec![weather_tool()])).await;
    assert_eq!(got["code"], json!(-32602), "{got}");
}

async fn sampling_without_a_callback_ends_in_an_error(connector: Connector) {
    let pair = connect(&connector, &sampler(), client()).await;
    let got = within("the answer", sample_raw(&pair, &hello())).await;
    assert_eq!(got["protocol"], json!(true), "{got}");
    assert_eq!(got["code"], json!(-32601), "{got}");
    // Through the context, it is refused before anything is sent.
    let got = sample(&pair, &hello()).await;
    assert_eq!(got["refused"], json!(true), "{got}");
}

async fn a_user_rejection_reaches_the_handler(connector: Connector) {
    let builder = client().sampling(SamplingSupport::new(), |_params, _cx| async {
        Err(sampling_rejected())
    });
    let pair = connect(&connector, &sampler(), builder).await;
    let got = sample(&pair, &hello()).await;
    assert_eq!(got["protocol"], json!(true), "{got}");
    assert_eq!(got["code"], json!(-1));
    assert_eq!(got["message"], json!("User rejected sampling request"));
    let error = pair
        .wire
        .sent()
        .into_iter()
        .find_map(|m| match m {
            JsonRpcMessage::Error(e) => Some(e),
            _ => None,
        })
        .expect("the client answered with a JSON-RPC error");
    assert_eq!(error.error.code.0, -1);
}

async fn array_content_is_refused_for_a_request_without_tools(connector: Connector) {
    let answer = CreateMessageResult::new(
        Role::Assistant,
        vec![
            SamplingMessageContentBlock::text("a"),
            SamplingMessageContentBlock::text("b"),
        ],
        "m",
    );
    let (builder, mut seen) = recording_client(SamplingSupport::new().with_tools(), answer);
    let pair = connect(&connector, &sampler(), builder).await;
    let got = sample(&pair, &hello()).await;
    within("the callback", seen.recv()).await.unwrap();
    assert_eq!(got["protocol"], json!(true), "{got}");
    assert!(got.get("ok").is_none());
    // The same answer is fine once the request lists tools.
    let got = sample(&pair, &hello().with_tools(vec![weather_tool()])).await;
    assert!(got["ok"]["content"].is_array(), "{got}");
}

fn tool_use_turn(ids: &[&str]) -> SamplingMessage {
    let blocks = ids
        .iter()
        .map(|id| ToolUseContent::new(*id, "weather", JsonObject::new()).into())
        .collect::<Vec<SamplingMessageContentBlock>>();
    SamplingMessage::new(Role::Assistant, blocks)
}

fn tool_result(id: &str) -> SamplingMessageContentBlock {
    ToolResultContent::new(id, vec![ContentBlock::text("18°C")]).into()
}

async fn tool_results_mixed_with_other_content_are_refused(connector: Connector) {
    let answer = CreateMessageResult::assistant_text("ok", "m");
    let (builder, mut seen) = recording_client(SamplingSupport::new().with_tools(), answer);
    let pair = connect(&connector, &sampler(), builder).await;
    let mixed = mixed_tool_results();
    let got = sample(&pair, &mixed).await;
    assert_eq!(got["refused"], json!(true), "{got}");
    assert_eq!(got["code"], json!(-32602));
    assert!(!sampling_sent(&pair));
    let got = sample_raw(&pair, &mixed).await;
    assert_eq!(got["code"], json!(-32602), "{got}");

    // Tool results alone are fine.
    let clean = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("weather?"),
            tool_use_turn(&["call_1"]),
            SamplingMessage::new(Role::User, tool_result("call_1")),
        ],
        50,
    )
    .with_tools(vec![weather_tool()]);
    let got = sample(&pair, &clean).await;
    assert!(got.get("ok").is_some(), "{got}");
    let seen = within("the callback", seen.recv()).await.unwrap();
    assert_eq!(seen, clean, "only the valid request reached the callback");
}

/// A request whose last user message mixes a tool result with text.
fn mixed_tool_results() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("weather?"),
            tool_use_turn(&["call_1"]),
            SamplingMessage::new(
                Role::User,
                vec![
                    SamplingMessageContentBlock::text("Here:"),
                    tool_result("call_1"),
                ],
            ),
        ],
        50,
    )
    .with_tools(vec![weather_tool()])
}

async fn mixed_tool_results_never_cross_in_input_required(connector: Connector) {
    // Our server refuses to ask it: the handler hears `-32602`, nothing is asked.
    let answer = CreateMessageResult::assistant_text("ok", "m");
    let (builder, _seen) = recording_client(SamplingSupport::new().with_tools(), answer.clone());
    let pair = connect(&connector, &sampler(), builder).await;
    let got = sample(&pair, &mixed_tool_results()).await;
    assert_eq!(got["refused"], json!(true), "{got}");
    assert_eq!(got["code"], json!(-32602));
    assert!(!sampling_sent(&pair));

    // A server that embeds it anyway: our client refuses the request, its callback never
    // sees it, and nothing is sent back as an answer.
    let first = json!({
        "resultType": "input_required",
        "inputRequests": {"ask": {"method": "sampling/createMessage", "params": mixed_tool_results()}}
    });
    let (builder, mut seen) = recording_client(SamplingSupport::new().with_tools(), answer);
    let (client, wire) = input_required_server(&connector, builder, first).await;
    let refused = call_tool_request(&client, "weather")
        .await
        .expect_err("an embedded request mixing tool results is refused");
    let said = refused.to_string();
    assert!(said.contains("mixes tool results"), "{said}");
    assert!(seen.try_recv().is_err(), "the callback never saw it");
    let retried = wire.sent_count("tools/call");
    assert_eq!(retried, 1, "no retry carried an answer");
}

async fn unanswered_tool_use_is_refused(connector: Connector) {
    let answer = CreateMessageResult::assistant_text("ok", "m");
    let (builder, mut seen) = recording_client(SamplingSupport::new().with_tools(), answer);
    let pair = connect(&connector, &sampler(), builder).await;
    let unbalanced = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("Paris and London?"),
            tool_use_turn(&["call_1", "call_2"]),
            SamplingMessage::new(Role::User, vec![tool_result("call_1")]),
            SamplingMessage::assistant_text("done"),
        ],
        50,
    )
    .with_tools(vec![weather_tool()]);
    let got = sample(&pair, &unbalanced).await;
    assert_eq!(got["refused"], json!(true), "{got}");
    assert_eq!(got["code"], json!(-32602));
    assert!(!sampling_sent(&pair));
    // Sent anyway, the client refuses it: as the answer to a request from the server,
    // or (2026-07-28, which has none) by failing the call whose input it was.
    if stateless_era(&pair.client) {
        let answer = CreateMessageResult::assistant_text("ok", "m");
        let (builder, mut asked) = recording_client(SamplingSupport::new().with_tools(), answer);
        let raw = serde_json::to_value(&unbalanced).unwrap();
        let (asker, _wire) =
            input_asking_server(&connector, builder, "sampling/createMessage", raw).await;
        let err = asker
            .request::<CallToolRequest>(CallToolRequestParams::new("any"))
            .await
            .unwrap_err();
        assert!(err.is_refused(), "{err}");
        assert!(err.to_string().contains("-32602"), "{err}");
        assert!(asked.try_recv().is_err(), "the callback was not called");
    } else {
        let got = sample_raw(&pair, &unbalanced).await;
        assert_eq!(got["code"], json!(-32602), "{got}");
    }

    let balanced = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("Paris and London?"),
            tool_use_turn(&["call_1", "call_2"]),
            SamplingMessage::new(
                Role::User,
                vec![tool_result("call_1"), tool_result("call_2")],
            ),
        ],
        50,
    )
    .with_tools(vec![weather_tool()]);
    let got = sample(&pair, &balanced).await;
    assert!(got.get("ok").is_some(), "{got}");
    let seen = within("the callback", seen.recv()).await.unwrap();
    assert_eq!(
        seen, balanced,
        "only the valid request reached the callback"
    );
}

/// Asserts that the first message of `params` holds one content block, the second several.
pub(crate) fn assert_one_block_then_several(params: &CreateMessageRequestParams) {
    let content = |i: usize| &params.messages[i].content;
    assert!(
        matches!(content(0), SamplingContent::Single(_)),
        "{params:?}"
    );
    assert!(
        matches!(content(1), SamplingContent::Multiple(_)),
        "{params:?}"
    );
}
