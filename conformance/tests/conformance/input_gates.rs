//! What a server asks its client for (sampling, elicitation, roots) and what reaches the
//! client's callbacks: in 2026-07-28 nothing the client's capabilities do not cover is
//! put in an `input_required` result (mode by mode, sub-capability by sub-capability),
//! the embedded sampling request crosses whole, each sampling request carries only its
//! own messages, and a URL elicitation carries a valid URL.

use modelctx::client::{CallbackContext, FormAnswer, RootsList, SamplingSupport};
use modelctx::client::{UrlAnswer, UrlRequest};
use modelctx::server::{ClientRequestError, Context, Elicited, Server};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult,
    ErrorCode, IncludeContext, RequestedSchema, Role, Root, SamplingMessage,
    SamplingMessageContentBlock, Tool,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::sampling::{assert_one_block_then_several, recording_client};
use crate::support::{Pair, call_work, client, connect, work_tool};
use crate::tools::{error_code, obj};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            sampling_is_not_asked_of_a_client_that_cannot_answer_it,
            ["sampling:mrtr:capability:not-declared"]
        ),
        conformance_test!(
            elicitation_is_not_asked_in_a_mode_the_client_did_not_declare,
            ["elicitation:mrtr:capability:not-declared"]
        ),
        conformance_test!(
            roots_are_not_asked_of_a_client_without_roots,
            ["roots:mrtr:capability:not-declared"]
        ),
        conformance_test!(
            the_embedded_sampling_request_keeps_its_token_cap_and_system_prompt,
            [
                "sampling:mrtr:create:max-tokens",
                "sampling:mrtr:create:system-prompt"
            ]
        ),
        conformance_test!(
            an_embedded_message_holds_one_block_or_several,
            ["sampling:mrtr:message:content-cardinality"]
        ),
        conformance_test!(
            each_sampling_request_brings_only_its_own_messages,
            ["sampling:create:messages-not-retained"]
        ),
        conformance_test!(
            a_url_elicitation_only_ever_carries_a_valid_url,
            ["elicitation:url:valid-url"]
        ),
    ]
}

/// A server whose `ask` tool asks the client for what its arguments name —
/// `{"sample": params}`, `{"form": message}`, `{"url": url}` or `{"roots": true}` — and
/// reports the outcome as JSON (`{"ok": ...}` or the refusal).
fn asker() -> Server {
    Server::builder("asker", "1.0.0")
        .tool(work_tool("ask", |request: Value, cx: Context| async move {
            if let Some(params) = request.get("sample") {
                let params: CreateMessageRequestParams =
                    serde_json::from_value(params.clone()).expect("sampling params");
                return outcome(cx.sample(params).await);
            }
            if let Some(message) = request.get("form").and_then(Value::as_str) {
                let schema: RequestedSchema = serde_json::from_value(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}}
                }))
                .expect("a form");
                let answer = cx.elicit_form_schema(message, schema).await;
                return outcome(answer.map(|e| matches!(e, Elicited::Accepted(_))));
            }
            if let Some(url) = request.get("url").and_then(Value::as_str) {
                let answer = cx.elicit_url("Sign in, please", "e-1", url).await;
                return outcome(answer.map(|e| matches!(e, Elicited::Accepted(()))));
            }
            if request.get("roots").is_some() {
                return outcome(cx.list_roots().await);
            }
            json!({"unknown": request})
        }))
        .expect("a valid tool")
        .build()
}

/// A handler's view of what it asked for, as JSON.
fn outcome<T: Serialize>(result: Result<T, ClientRequestError>) -> Value {
    match result {
        Ok(answer) => json!({"ok": answer}),
        Err(e) => json!({"refused": e.is_refused(), "message": e.to_error_data().message}),
    }
}

/// Calls `ask` with `arguments`: the call's error, if the whole call failed.
async fn ask(pair: &Pair, arguments: Value) -> Result<Value, modelctx::session::SessionError> {
    let params = CallToolRequestParams::new("ask").with_arguments(obj(arguments));
    let result = within("the call", pair.client.request::<CallToolRequest>(params)).await?;
    Ok(result.structured_content.expect("the ask tool answers"))
}

/// How many requests of `method` the server asked the client for, as requests of its own
/// or embedded in `input_required` results.
fn asked(pair: &Pair, method: &str) -> usize {
    pair.wire
        .received()
        .into_iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .map(|m| {
            let embedded = m["result"]["inputRequests"]
                .as_object()
                .map_or(0, |r| r.values().filter(|r| r["method"] == method).count());
            embedded + usize::from(m["method"] == method && m.get("id").is_some())
        })
        .sum()
}

/// The embedded requests of `method` the server sent, as JSON.
fn embedded(pair: &Pair, method: &str) -> Vec<Value> {
    pair.wire
        .received()
        .into_iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .filter_map(|m| m["result"]["inputRequests"].as_object().cloned())
        .flat_map(|r| r.into_values())
        .filter(|r| r["method"] == method)
        .collect()
}

/// A call that failed for want of a client capability (`-32021`).
fn missing_capability(outcome: Result<Value, modelctx::session::SessionError>) {
    let error = outcome.expect_err("the call fails");
    assert_eq!(
        error_code(&error),
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "{error:?}"
    );
}

/// A session with [`asker`] whose client's sampling callback forwards each request's
/// params to the returned channel and answers with one text.
async fn sampling_pair(
    connector: &Connector,
) -> (Pair, mpsc::UnboundedReceiver<CreateMessageRequestParams>) {
    let noted = CreateMessageResult::assistant_text("noted", "m");
    let (builder, seen) = recording_client(SamplingSupport::new(), noted);
    (connect(connector, &asker(), builder).await, seen)
}

fn hello() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hello")], 50)
}

async fn sampling_is_not_asked_of_a_client_that_cannot_answer_it(connector: Connector) {
    // No sampling at all: the call fails, and nothing was asked.
    let pair = connect(&connector, &asker(), client()).await;
    missing_capability(ask(&pair, json!({"sample": hello()})).await);
    assert_eq!(asked(&pair, "sampling/createMessage"), 0);

    // Sampling without its sub-capabilities: a request using tools, or another
    // server's context, is refused to the handler, and not asked either.
    let (pair, _seen) = sampling_pair(&connector).await;
    let weather = Tool::new("weather", obj(json!({"type": "object"})));
    let with_tools = hello().with_tools(vec![weather]);
    let got = ask(&pair, json!({"sample": with_tools})).await.unwrap();
    assert_eq!(got["refused"], true, "{got}");
    assert!(got["message"].as_str().unwrap().contains("sampling.tools"));
    for context in [IncludeContext::ThisServer, IncludeContext::AllServers] {
        let with_context = hello().with_include_context(context);
        let got = ask(&pair, json!({"sample": with_context})).await.unwrap();
        assert_eq!(got["refused"], true, "{got}");
        assert!(
            got["message"]
                .as_str()
                .unwrap()
                .contains("sampling.context")
        );
    }
    assert_eq!(asked(&pair, "sampling/createMessage"), 0);
    // What the client declared is asked.
    let got = ask(&pair, json!({"sample": hello()})).await.unwrap();
    assert_eq!(got["ok"]["content"]["text"], "noted", "{got}");
    assert_eq!(asked(&pair, "sampling/createMessage"), 1);
}

async fn elicitation_is_not_asked_in_a_mode_the_client_did_not_declare(connector: Connector) {
    let url = "https://auth.example.test/sign-in";
    // No elicitation: neither mode is asked.
    let pair = connect(&connector, &asker(), client()).await;
    missing_capability(ask(&pair, json!({"form": "Who are you?"})).await);
    missing_capability(ask(&pair, json!({"url": url})).await);
    assert_eq!(asked(&pair, "elicitation/create"), 0);

    // Forms only: a URL is not asked; a form is.
    let forms = client().form_elicitation(|_request, _cx: CallbackContext| async move {
        Ok(FormAnswer::Accept(Default::default()))
    });
    let pair = connect(&connector, &asker(), forms).await;
    missing_capability(ask(&pair, json!({"url": url})).await);
    assert_eq!(asked(&pair, "elicitation/create"), 0);
    let got = ask(&pair, json!({"form": "Who are you?"})).await.unwrap();
    assert_eq!(got, json!({"ok": true}));
    let sent = embedded(&pair, "elicitation/create");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"]["mode"], "form", "{sent:?}");

    // URLs only: a form is not asked; a URL is.
    let urls = client()
        .url_elicitation(|_request, _cx: CallbackContext| async move { Ok(UrlAnswer::Accept) });
    let pair = connect(&connector, &asker(), urls).await;
    missing_capability(ask(&pair, json!({"form": "Who are you?"})).await);
    assert_eq!(asked(&pair, "elicitation/create"), 0);
    // (What the client makes of the URL request is elicitation's own business.)
    let _ = ask(&pair, json!({"url": url})).await;
    let sent = embedded(&pair, "elicitation/create");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"]["mode"], "url", "{sent:?}");
}

async fn roots_are_not_asked_of_a_client_without_roots(connector: Connector) {
    let pair = connect(&connector, &asker(), client()).await;
    missing_capability(ask(&pair, json!({"roots": true})).await);
    assert_eq!(asked(&pair, "roots/list"), 0);

    let roots = RootsList::new(vec![Root::new("file:///work")]).unwrap();
    let pair = connect(&connector, &asker(), client().roots(roots, false)).await;
    let got = ask(&pair, json!({"roots": true})).await.unwrap();
    assert_eq!(got["ok"], json!([{"uri": "file:///work"}]));
    assert_eq!(asked(&pair, "roots/list"), 1);
}

async fn the_embedded_sampling_request_keeps_its_token_cap_and_system_prompt(connector: Connector) {
    let (pair, mut seen) = sampling_pair(&connector).await;
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Sum up.")], 321)
        .with_system_prompt("You are terse; answer in one line.");
    let got = call_work(&pair, "ask", json!({"sample": params})).await;
    assert_eq!(got["ok"]["content"]["text"], "noted", "{got}");
    // On the wire, inside the input_required result.
    let sent = embedded(&pair, "sampling/createMessage");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["params"]["maxTokens"], 321);
    assert_eq!(
        sent[0]["params"]["systemPrompt"],
        "You are terse; answer in one line."
    );
    // At the callback, as the handler wrote it.
    let received = within("the callback", seen.recv()).await.unwrap();
    assert_eq!(received.max_tokens, 321);
    assert_eq!(
        received.system_prompt.as_deref(),
        Some("You are terse; answer in one line.")
    );
    assert_eq!(received, params);
}

async fn an_embedded_message_holds_one_block_or_several(connector: Connector) {
    let (pair, mut seen) = sampling_pair(&connector).await;
    let params = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("one block"),
            SamplingMessage::new(
                Role::User,
                vec![
                    SamplingMessageContentBlock::text("first of two"),
                    SamplingMessageContentBlock::text("second of two"),
                ],
            ),
        ],
        50,
    );
    call_work(&pair, "ask", json!({"sample": params})).await;
    let sent = embedded(&pair, "sampling/createMessage");
    assert_eq!(sent.len(), 1, "{sent:?}");
    let messages = &sent[0]["params"]["messages"];
    assert_eq!(
        messages[0]["content"],
        json!({"type": "text", "text": "one block"})
    );
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "text", "text": "first of two"},
            {"type": "text", "text": "second of two"}
        ])
    );
    let received = within("the callback", seen.recv()).await.unwrap();
    assert_one_block_then_several(&received);
    assert_eq!(received, params);
}

async fn each_sampling_request_brings_only_its_own_messages(connector: Connector) {
    let (pair, mut seen) = sampling_pair(&connector).await;
    let first = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("What is 2 + 2?"),
            SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text("4")),
        ],
        50,
    );
    let second =
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Name a colour.")], 50);
    for params in [&first, &second] {
        let got = call_work(&pair, "ask", json!({"sample": params})).await;
        assert_eq!(got["ok"]["content"]["text"], "noted", "{got}");
    }
    let one = within("the first request", seen.recv()).await.unwrap();
    let two = within("the second request", seen.recv()).await.unwrap();
    assert_eq!(one.messages, first.messages);
    // The second holds its one message: nothing of the first, nor of the answer to it.
    assert_eq!(two.messages, second.messages);
}

async fn a_url_elicitation_only_ever_carries_a_valid_url(connector: Connector) {
    let (tx, mut seen) = mpsc::unbounded_channel::<UrlRequest>();
    let builder = client().url_elicitation(move |request, _cx: CallbackContext| {
        let _ = tx.send(request);
        async move { Ok(UrlAnswer::Accept) }
    });
    let pair = connect(&connector, &asker(), builder).await;
    for bad in [
        "",
        "sign-in",
        "/relative/sign-in",
        "auth.example.test/sign-in",
        "https://",
        "https://auth.example.test/sign in",
        "://auth.example.test",
    ] {
        let got = call_work(&pair, "ask", json!({"url": bad})).await;
        assert_eq!(got["refused"], true, "{bad:?}: {got}");
        assert!(
            got["message"]
                .as_str()
                .unwrap()
                .contains("not an absolute URL"),
            "{bad:?}: {got}"
        );
    }
    assert_eq!(asked(&pair, "elicitation/create"), 0);
    assert!(seen.try_recv().is_err(), "nothing reached the callback");
}
