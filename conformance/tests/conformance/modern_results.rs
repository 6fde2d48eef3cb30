//! How a 2026-07-28 client reads what comes back, and what flows which way: a result's
//! `resultType` (absent, unknown, `input_required` where no input may be asked), an
//! empty `nextCursor`, the wire of a multi round-trip exchange; `prompts/get` and
//! `resources/read` asking for input; a `file:` template refusing a path that climbs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::client::{CallbackContext, Client, FormAnswer, Round};
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Elicited, PromptDef, ResourceDef, Server, TemplateDef};
use modelctx::session::{RequestOptions, SessionError};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, ElicitValue, ErrorCode, GetPromptRequest,
    GetPromptRequestParams, JsonRpcMessage, JsonRpcResultResponse, RequestedSchema,
    TextOrBlobResourceContents, to_raw,
};
use modelctx_conformance::{Connector, Recording, Test, conformance_test, within};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{
    Echo, Pair, Script, call_tool_request, client, connect, connect_discovering, discovered,
    raw_server, scripted_server,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_result_without_a_type_is_complete,
            ["protocol:result-type:absent-is-complete"]
        ),
        conformance_test!(
            an_unknown_result_type_is_an_invalid_result,
            ["protocol:result-type:unrecognized-invalid"]
        ),
        conformance_test!(
            a_request_for_input_never_passes_for_a_result,
            ["protocol:result-type:input-required-not-masked"]
        ),
        conformance_test!(
            an_empty_cursor_is_sent_back_for_the_next_page,
            ["protocol:pagination:empty-cursor-valid"]
        ),
        conformance_test!(
            the_client_only_asks_and_the_server_only_answers,
            ["protocol:directionality:no-client-responses"]
        ),
        conformance_test!(
            a_prompt_asks_for_input_and_completes_on_the_retry,
            ["prompts:mrtr:get:basic"]
        ),
        conformance_test!(
            a_resource_asks_for_input_and_completes_on_the_retry,
            ["resources:mrtr:read:basic"]
        ),
        conformance_test!(
            a_file_template_refuses_a_climbing_path,
            ["resources:read:path-traversal-rejected"]
        ),
    ]
}

/// A client in discover mode connected to a server played by `answer` (by method).
async fn hand_played<A>(connector: &Connector, answer: A) -> (modelctx::client::Client, Recording)
where
    A: Fn(&str) -> Value + Send + Sync + 'static,
{
    let transport = scripted_server(connector, move |method| match method {
        "server/discover" => discovered("by-hand", json!({"tools": {}, "prompts": {}})),
        other => answer(other),
    })
    .await;
    connect_discovering(transport, client()).await
}

/// An elicitation form that asks who the user is: a required string `name`.
pub(crate) fn the_form() -> Value {
    json!({
        "mode": "form",
        "message": "Who are you?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        }
    })
}

async fn a_result_without_a_type_is_complete(connector: Connector) {
    let (client, _wire) = hand_played(&connector, |method| match method {
        "tools/call" => json!({"content": [{"type": "text", "text": "done"}]}),
        "prompts/get" => json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "hello"}}
        ]}),
        "tools/list" => json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        other => json!({"unexpected": other}),
    })
    .await;

    let call = within("the call", client.call_tool("t", json!({})))
        .await
        .expect("an untyped answer is a complete result");
    assert_eq!(call.content[0].as_text(), Some("done"));
    assert_eq!(call.is_error, None);
    let prompt = within("the prompt", client.get_prompt("p", ()))
        .await
        .expect("an untyped answer is a complete result");
    assert_eq!(prompt.messages[0].content.as_text(), Some("hello"));
    let tools = within("the listing", client.list_tools(None))
        .await
        .expect("an untyped answer is a complete result");
    assert_eq!(tools.tools[0].name, "t");
}

/// Calls the tool `t` through the plain request path, which must fail: the error.
async fn calling_t_fails(client: &Client) -> SessionError {
    call_tool_request(client, "t").await.unwrap_err()
}

async fn an_unknown_result_type_is_an_invalid_result(connector: Connector) {
    // Each answer would decode as the method's result but for its `resultType`.
    let (client, _wire) = hand_played(&connector, |method| match method {
        "tools/call" => json!({"resultType": "deferred", "content": []}),
        "prompts/get" => json!({"resultType": "later", "messages": []}),
        other => json!({"unexpected": other}),
    })
    .await;

    let call = calling_t_fails(&client).await;
    assert!(call.is_invalid_result(), "{call:?}");
    assert!(call.to_string().contains("deferred"), "{call}");
    let prompt = within(
        "the prompt",
        client.request::<GetPromptRequest>(GetPromptRequestParams::new("p")),
    )
    .await
    .unwrap_err();
    assert!(prompt.is_invalid_result(), "{prompt:?}");
}

async fn a_request_for_input_never_passes_for_a_result(connector: Connector) {
    let asking = json!({
        "resultType": "input_required",
        "inputRequests": {"who": {"method": "elicitation/create", "params": the_form()}}
    });
    let answer = asking.clone();
    // This client has no elicitation callback.
    let (client, wire) = hand_played(&connector, move |method| match method {
        "tools/call" | "test/echo" => answer.clone(),
        other => json!({"unexpected": other}),
    })
    .await;

    // A caller of the plain request path gets an error saying what was asked, not an
    // empty `content`.
    let call = calling_t_fails(&client).await;
    assert!(call.is_refused(), "{call:?}");
    assert!(call.to_string().contains("elicitation"), "{call}");
    // A method that may not ask for input: an invalid result, even where any JSON
    // would decode as the method's result.
    let echo = within("the echo", client.request::<Echo>(json!({})))
        .await
        .unwrap_err();
    assert!(echo.is_invalid_result(), "{echo:?}");
    assert!(echo.to_string().contains("input_required"), "{echo}");
    // A caller that opted into answering input itself gets the request for input.
    let round = within(
        "one round",
        client.request_round::<CallToolRequest>(
            CallToolRequestParams::new("t"),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("the round's answer");
    let Round::InputRequired(asked) = round else {
        panic!("expected the request for input, got {round:?}")
    };
    assert!(
        asked
            .input_requests
            .as_ref()
            .is_some_and(|requests| requests.contains_key("who")),
        "{asked:?}"
    );
    // Nothing was retried without an answer.
    let calls = wire.sent_count("tools/call");
    assert_eq!(calls, 2, "one call per path, no retry");
}

async fn an_empty_cursor_is_sent_back_for_the_next_page(connector: Connector) {
    // Page one ends with the cursor "", page two (asked for with "") with none.
    let script: Script = Arc::new(|request: modelctx::types::JsonRpcRequest| {
        let params: Value = request
            .params
            .as_deref()
            .map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        let result = match request.method.as_ref() {
            "server/discover" => discovered("by-hand", json!({"tools": {}, "prompts": {}})),
            "tools/list" => match params.get("cursor") {
                None => json!({"resultType": "complete", "nextCursor": "",
                    "tools": [{"name": "first", "inputSchema": {"type": "object"}}]}),
                Some(cursor) if cursor == "" => json!({"resultType": "complete",
                    "tools": [{"name": "second", "inputSchema": {"type": "object"}}]}),
                Some(other) => json!({"resultType": "complete", "tools": [],
                    "unexpectedCursor": other}),
            },
            other => json!({"unexpected": other}),
        };
        let reply: JsonRpcMessage =
            JsonRpcResultResponse::new(request.id, to_raw(&result).unwrap()).into();
        Box::pin(async move { (vec![reply], None) }) as futures::future::BoxFuture<'static, _>
    });
    let transport = raw_server(&connector, script).await;
    let (client, wire) = connect_discovering(transport, client()).await;

    let tools = within("every page", client.list_all_tools()).await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["first", "second"],
        "the empty cursor did not end the listing"
    );
    let cursors: Vec<Option<Value>> = wire
        .sent_of("tools/list")
        .iter()
        .map(|m| {
            let value = serde_json::to_value(m).unwrap();
            value["params"].get("cursor").cloned()
        })
        .collect();
    assert_eq!(cursors, [None, Some(json!(""))], "sent back verbatim");
}

/// Connects Ada's client to a greeter and gets the prompt that asks for her name: it
/// comes back greeting her. The pair, for its wire.
async fn ada_is_greeted(connector: &Connector) -> Pair {
    let server = Server::builder("greeter", "1.0.0")
        .prompt(greeting_prompt())
        .unwrap()
        .build();
    let pair = connect(connector, &server, ada()).await;
    let got = within("the prompt", pair.client.get_prompt("greet", ()))
        .await
        .unwrap();
    assert_eq!(got.messages[0].content.as_text(), Some("Hello, Ada!"));
    pair
}

async fn the_client_only_asks_and_the_server_only_answers(connector: Connector) {
    // A prompt that needs the user's name: in the handshake era a request from the
    // server, answered by the client.
    let pair = ada_is_greeted(&connector).await;

    let sent = pair.wire.sent();
    let received = pair.wire.received();
    assert!(
        pair.wire.sent_count("prompts/get") >= 2,
        "the exchange took a retry: {sent:?}"
    );
    for message in &sent {
        assert!(
            !matches!(
                message,
                JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)
            ),
            "the client never answers: {message:?}"
        );
    }
    for message in &received {
        assert!(
            !matches!(message, JsonRpcMessage::Request(_)),
            "the server never asks: {message:?}"
        );
    }
    // Every request the client sent was answered.
    let answered = received
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)))
        .count();
    let asked = sent
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Request(_)))
        .count();
    assert_eq!(answered, asked);
}

/// A client that answers every form with `name` = Ada.
fn ada() -> modelctx::client::ClientBuilder {
    client().form_elicitation(|_request, _cx: CallbackContext| async move {
        let mut content = std::collections::BTreeMap::new();
        content.insert("name".to_owned(), ElicitValue::String("Ada".to_owned()));
        Ok(FormAnswer::Accept(content))
    })
}

/// The name form, as a handler asks it.
fn name_schema() -> RequestedSchema {
    serde_json::from_value(the_form()["requestedSchema"].clone()).unwrap()
}

/// What a handler makes of the form's answer.
fn greeting(answer: Elicited<modelctx::server::FormValues>) -> String {
    match answer {
        Elicited::Accepted(values) => match values.get("name") {
            Some(ElicitValue::String(name)) => format!("Hello, {name}!"),
            other => format!("no name: {other:?}"),
        },
        Elicited::Declined | Elicited::Cancelled => "Hello, stranger!".to_owned(),
    }
}

fn greeting_prompt() -> PromptDef {
    PromptDef::new(
        "greet",
        |_: modelctx::server::NoArgs, cx: Context| async move {
            let answer = cx.elicit_form_schema("Who are you?", name_schema()).await?;
            Ok::<_, modelctx::server::ClientRequestError>(greeting(answer))
        },
    )
}

/// The `prompts/get` (or `resources/read`) requests the client sent, as JSON.
fn sent_as_json(wire: &Recording, method: &str) -> Vec<Value> {
    wire.sent_of(method)
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

/// The answer the client received to `request` (as sent), checked to be an
/// `input_required` result.
fn asked_for_input(wire: &Recording, request: &Value) -> Value {
    let first = wire
        .received()
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Response(_)))
        .map(|m| serde_json::to_value(m).unwrap())
        .find(|a| a["id"] == request["id"])
        .expect("the first request's answer");
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    first
}

async fn a_prompt_asks_for_input_and_completes_on_the_retry(connector: Connector) {
    let pair = ada_is_greeted(&connector).await;

    let gets = sent_as_json(&pair.wire, "prompts/get");
    assert_eq!(gets.len(), 2, "the request, then its retry: {gets:?}");
    assert!(gets[0]["params"].get("inputResponses").is_none());
    assert_eq!(
        gets[1]["params"]["inputResponses"]
            .as_object()
            .map(|answers| answers.len()),
        Some(1),
        "{gets:?}"
    );
    let first = asked_for_input(&pair.wire, &gets[0]);
    let request = first["result"]["inputRequests"]
        .as_object()
        .and_then(|r| r.values().next())
        .expect("one input request");
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Who are you?");
}

async fn a_resource_asks_for_input_and_completes_on_the_retry(connector: Connector) {
    let diary = ResourceDef::new("file:///diary.txt", "diary", |cx: Context| async move {
        let answer = cx.elicit_form_schema("Who are you?", name_schema()).await?;
        Ok::<_, modelctx::server::ClientRequestError>(format!("Dear diary, {}", greeting(answer)))
    });
    let server = Server::builder("diarist", "1.0.0")
        .resource(diary)
        .unwrap()
        .build();
    let pair = connect(&connector, &server, ada()).await;
    let read = within("the read", pair.client.read_resource("file:///diary.txt"))
        .await
        .unwrap();
    let [TextOrBlobResourceContents::Text(text)] = read.contents.as_slice() else {
        panic!("one text content: {read:?}")
    };
    assert_eq!(text.text, "Dear diary, Hello, Ada!");
    assert_eq!(text.uri, "file:///diary.txt");

    let reads = sent_as_json(&pair.wire, "resources/read");
    assert_eq!(reads.len(), 2, "the request, then its retry: {reads:?}");
    assert_eq!(reads[1]["params"]["uri"], "file:///diary.txt");
    assert!(
        reads[1]["params"]["inputResponses"].is_object(),
        "{reads:?}"
    );
    asked_for_input(&pair.wire, &reads[0]);
}

/// A `file:` template's one variable.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Doc {
    name: String,
}

async fn a_file_template_refuses_a_climbing_path(connector: Connector) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let docs = TemplateDef::new(
        "file:///srv/docs/{name}",
        "docs",
        move |doc: Doc, _cx: Context| {
            let runs = counted.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("the doc {}", doc.name))
            }
        },
    );
    let server = Server::builder("docs", "1.0.0")
        .resource_template(docs)
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;

    // A plain name is read.
    let read = pair
        .client
        .read_resource("file:///srv/docs/notes.txt")
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{read:?}");
    // A name that climbs, spelled out or percent-encoded, is a JSON-RPC error.
    for climbing in [
        "file:///srv/docs/..",
        "file:///srv/docs/..%2F..%2Fetc%2Fpasswd",
        "file:///srv/docs/%2E%2E",
        "file:///srv/docs/notes%2F..%2F..%2Fsecret",
        "file:///srv/docs/..%5Cwindows",
    ] {
        let error = pair.client.read_resource(climbing).await.unwrap_err();
        let data = error
            .protocol_error()
            .unwrap_or_else(|| panic!("{climbing}: a JSON-RPC error, got {error:?}"));
        assert_eq!(data.code, ErrorCode::INVALID_PARAMS, "{climbing}: {data:?}");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the function never ran for a climbing path"
    );
    // Dots that are not a whole segment are a name like any other.
    pair.client
        .read_resource("file:///srv/docs/v1..v2")
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
