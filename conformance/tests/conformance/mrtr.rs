//! Multi-round-trip requests (protocol 2026-07-28): a server that needs input answers
//! `input_required` with the requests it wants answered and an opaque `requestState`;
//! the client answers them and sends the same call again, and the server picks up where
//! it left off. The client's driver is tested against servers played by hand (so the
//! wire is exactly what each test needs); the server's rules with a real `Server` and
//! the client's round-by-round API.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::client::{CallbackContext, FormAnswer, RootsList, Round, UrlAnswer};
use modelctx::server::{Context, Elicited, Server, ToolDef};
use modelctx::session::RequestOptions;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ElicitResult, ElicitValue, ErrorCode,
    InputRequest, InputRequiredResult, InputResponse, JsonRpcMessage, RequestMethod,
    RequestedSchema, Root, Tool,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};

use crate::modern_results::the_form;
use crate::support::{call_tool_request, client, connect, input_required_server, raw_options};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_retry_carries_the_answers_under_the_keys_asked_and_the_state_as_sent,
            [
                "mrtr:tools-call:write-once-roundtrip",
                "mrtr:input-responses:key-correspondence"
            ]
        ),
        conformance_test!(
            without_a_state_the_retry_has_no_state_key,
            ["mrtr:request-state:omitted-when-absent"]
        ),
        conformance_test!(
            a_state_alone_is_sent_back_with_no_answers,
            ["mrtr:request-state-only:retry"]
        ),
        conformance_test!(
            a_calls_state_never_rides_on_another_call,
            ["mrtr:request-state:scoped-to-originating-request"]
        ),
        conformance_test!(
            a_url_elicitation_rides_an_input_required_result_named_as_such,
            [
                "mrtr:url-elicitation:no-32042-on-2026",
                "mrtr:input-required-result:result-type-serialized"
            ]
        ),
        conformance_test!(
            answers_to_questions_never_asked_are_ignored,
            ["mrtr:input-responses:unknown-ignored"]
        ),
        conformance_test!(
            a_retry_without_the_answer_is_asked_again,
            ["mrtr:input-responses:missing-reprompted"]
        ),
        conformance_test!(
            a_tampered_state_is_refused,
            ["mrtr:request-state:reject-tampered"]
        ),
        conformance_test!(
            malformed_answers_are_refused_before_the_handler_runs,
            ["mrtr:input-responses:invalid-rejected"]
        ),
        conformance_test!(
            an_embedded_form_that_is_not_flat_is_never_shown,
            ["elicitation:mrtr:form:schema:restricted-subset"]
        ),
    ]
}

/// The `tools/call` requests the client sent, as JSON, in order.
fn calls_sent(wire: &modelctx_conformance::Recording) -> Vec<Value> {
    wire.sent_of("tools/call")
        .iter()
        .map(|m| serde_json::to_value(m).expect("a message serialises"))
        .collect()
}

/// A client that answers every form with `name` = Ada.
pub(crate) fn ada() -> modelctx::client::ClientBuilder {
    client().form_elicitation(|_request, _cx: CallbackContext| async move {
        let mut content = std::collections::BTreeMap::new();
        content.insert("name".to_owned(), ElicitValue::String("Ada".to_owned()));
        Ok(FormAnswer::Accept(content))
    })
}

async fn call(client: &modelctx::client::Client, tool: &str) -> CallToolResult {
    call_tool_request(client, tool)
        .await
        .expect("the call completes")
}

async fn a_retry_carries_the_answers_under_the_keys_asked_and_the_state_as_sent(
    connector: Connector,
) {
    let roots = RootsList::new(vec![Root::new("file:///work")]).unwrap();
    let first = json!({
        "resultType": "input_required",
        "inputRequests": {
            "who": {"method": "elicitation/create", "params": the_form()},
            "where": {"method": "roots/list", "params": {}}
        },
        "requestState": "opaque+/=state, kept byte for byte"
    });
    let (client, wire) = input_required_server(&connector, ada().roots(roots, false), first).await;
    // The retry completes as a plain result.
    let result = call(&client, "signup").await;
    assert_eq!(result.is_error, None);

    let calls = calls_sent(&wire);
    assert_eq!(calls.len(), 2, "the call, then its one retry: {calls:?}");
    assert_ne!(calls[0]["id"], calls[1]["id"], "a retry is a new request");
    let retry = &calls[1]["params"];
    assert_eq!(retry["name"], "signup");
    assert_eq!(retry["requestState"], "opaque+/=state, kept byte for byte");
    let answers = retry["inputResponses"].as_object().expect("the answers");
    assert_eq!(
        answers.keys().collect::<Vec<_>>(),
        ["where", "who"],
        "one answer per key asked"
    );
    // Each answer is the result of the request under its key.
    assert_eq!(answers["who"]["action"], "accept");
    assert_eq!(answers["who"]["content"], json!({"name": "Ada"}));
    assert_eq!(answers["where"]["roots"], json!([{"uri": "file:///work"}]));
}

async fn without_a_state_the_retry_has_no_state_key(connector: Connector) {
    let first = json!({
        "resultType": "input_required",
        "inputRequests": {"who": {"method": "elicitation/create", "params": the_form()}}
    });
    let (client, wire) = input_required_server(&connector, ada(), first).await;
    call(&client, "signup").await;
    let calls = calls_sent(&wire);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let retry = calls[1]["params"].as_object().unwrap();
    assert!(retry.contains_key("inputResponses"), "{retry:?}");
    assert!(!retry.contains_key("requestState"), "{retry:?}");
}

async fn a_state_alone_is_sent_back_with_no_answers(connector: Connector) {
    let first = json!({"resultType": "input_required", "requestState": "step-2"});
    let (client, wire) = input_required_server(&connector, client(), first).await;
    call(&client, "migrate").await;
    let calls = calls_sent(&wire);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let retry = calls[1]["params"].as_object().unwrap();
    assert_eq!(retry["requestState"], "step-2");
    assert!(!retry.contains_key("inputResponses"), "{retry:?}");
}

async fn a_calls_state_never_rides_on_another_call(connector: Connector) {
    let first = json!({
        "resultType": "input_required",
        "inputRequests": {"who": {"method": "elicitation/create", "params": the_form()}},
        "requestState": "for-signup-only"
    });
    let (client, wire) = input_required_server(&connector, ada(), first).await;
    // The first call to reach the server is asked for input; the others complete.
    let first_call = call(&client, "signup");
    let others = async {
        for tool in ["weather", "time", "news"] {
            call(&client, tool).await;
        }
    };
    futures::join!(first_call, others);
    let calls = calls_sent(&wire);
    // The call the server asked: the one its `input_required` answer went to.
    let answers: Vec<Value> = wire
        .received()
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Response(r) => Some(serde_json::to_value(r).unwrap()),
            _ => None,
        })
        .collect();
    let asked = answers
        .iter()
        .find(|a| a["result"]["resultType"] == "input_required")
        .expect("one call was asked for input");
    let asked_call = calls
        .iter()
        .find(|c| c["id"] == asked["id"])
        .expect("the asked call was sent");
    let asked_name = &asked_call["params"]["name"];
    let carrying: Vec<&Value> = calls
        .iter()
        .filter(|c| {
            let p = c["params"].as_object().unwrap();
            p.contains_key("requestState") || p.contains_key("inputResponses")
        })
        .collect();
    assert_eq!(carrying.len(), 1, "only the retry carries them: {calls:?}");
    assert_eq!(&carrying[0]["params"]["name"], asked_name);
    assert_eq!(carrying[0]["params"]["requestState"], "for-signup-only");
}

/// A server whose `login` tool asks the user to open a URL, and whose `greet` tool asks
/// for a name; `runs` counts the handler's runs.
fn asking_server(runs: Arc<AtomicUsize>) -> Server {
    asking_builder(runs).build()
}

/// [`asking_server`]'s builder, for settings of a test's own.
pub(crate) fn asking_builder(runs: Arc<AtomicUsize>) -> modelctx::server::ServerBuilder {
    let login = ToolDef::with_schema(
        Tool::new(
            "login",
            json!({"type": "object"}).as_object().unwrap().clone(),
        ),
        |_args, cx: Context| async move {
            match cx
                .elicit_url("Sign in", "s1", "https://auth.example.test/s1")
                .await
                .map_err(|e| e.to_string())?
            {
                Elicited::Accepted(()) => Ok::<_, String>("signed in"),
                _ => Ok("not signed in"),
            }
        },
    );
    let greet = ToolDef::with_schema(
        Tool::new(
            "greet",
            json!({"type": "object"}).as_object().unwrap().clone(),
        ),
        move |_args, cx: Context| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                let schema: RequestedSchema =
                    serde_json::from_value(the_form()["requestedSchema"].clone()).unwrap();
                let answer = cx
                    .elicit_form_schema("Who are you?", schema)
                    .await
                    .map_err(|e| e.to_string())?;
                let name = answer
                    .accepted()
                    .and_then(|form| form.get("name").cloned())
                    .and_then(|v| match v {
                        ElicitValue::String(s) => Some(s),
                        _ => None,
                    })
                    .unwrap_or_default();
                Ok::<_, String>(format!("Hello, {name}!"))
            }
        },
    );
    Server::builder("asker", "1.0.0")
        .tool(login)
        .unwrap()
        .tool(greet)
        .unwrap()
}

async fn a_url_elicitation_rides_an_input_required_result_named_as_such(connector: Connector) {
    let runs = Arc::new(AtomicUsize::new(0));
    let builder = client()
        .url_elicitation(|_request, _cx: CallbackContext| async move { Ok(UrlAnswer::Accept) });
    let pair = connect(&connector, &asking_server(runs), builder).await;
    let result = call(&pair.client, "login").await;
    assert_eq!(result.content[0].as_text(), Some("signed in"));

    let received = pair.wire.received();
    let interim: Vec<Value> = received
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Response(r) => Some(serde_json::to_value(r).unwrap()),
            _ => None,
        })
        .filter(|r| r["result"]["inputRequests"].is_object())
        .collect();
    assert_eq!(interim.len(), 1, "one round of input: {received:?}");
    // The discriminator is on the wire, never left to its default.
    assert_eq!(interim[0]["result"]["resultType"], "input_required");
    let asked = interim[0]["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["mode"], "url");
    // No URL-elicitation-required error in this era.
    let text = serde_json::to_string(&received).unwrap();
    assert!(!text.contains("-32042"), "{text}");
}

/// The first round of `greet` by hand (the client declares form elicitation, so the
/// server may ask): the input it asks for, under its one key.
pub(crate) async fn first_round(
    client: &modelctx::client::Client,
) -> (CallToolRequestParams, InputRequiredResult, String) {
    let params = CallToolRequestParams::new("greet");
    let asked = match within(
        "the first round",
        client.request_round::<CallToolRequest>(params.clone(), RequestOptions::default()),
    )
    .await
    .expect("the first round")
    {
        Round::InputRequired(asked) => asked,
        other => panic!("expected a request for input, got {other:?}"),
    };
    let requests = asked.input_requests.clone().expect("input requests");
    assert_eq!(requests.len(), 1, "{requests:?}");
    let (key, request) = requests.iter().next().unwrap();
    assert!(matches!(request, InputRequest::Elicit(_)), "{request:?}");
    (params, asked.clone(), key.clone())
}

pub(crate) fn grace() -> InputResponse {
    let mut content = std::collections::BTreeMap::new();
    content.insert("name".to_owned(), ElicitValue::String("Grace".to_owned()));
    InputResponse::from(ElicitResult::accept(content))
}

pub(crate) async fn round(
    client: &modelctx::client::Client,
    params: CallToolRequestParams,
) -> Result<Round<CallToolResult>, modelctx::session::SessionError> {
    within(
        "the next round",
        client.request_round::<CallToolRequest>(params, RequestOptions::default()),
    )
    .await
}

async fn answers_to_questions_never_asked_are_ignored(connector: Connector) {
    let runs = Arc::new(AtomicUsize::new(0));
    let pair = connect(&connector, &asking_server(runs), ada()).await;
    let (mut params, asked, key) = first_round(&pair.client).await;
    let stray = InputResponse::from(ElicitResult::accept(Default::default()));
    params.input_responses = Some(
        [(key, grace()), ("never-asked".to_owned(), stray)]
            .into_iter()
            .collect(),
    );
    params.request_state = asked.request_state;
    greets_grace(round(&pair.client, params).await.expect("the retry"));
}

/// Asserts `round` completed the call with the greeting for the answer `grace()`.
fn greets_grace(round: Round<CallToolResult>) {
    match round {
        Round::Complete(result) => assert_eq!(result.content[0].as_text(), Some("Hello, Grace!")),
        other => panic!("expected the result, got {other:?}"),
    }
}

async fn a_retry_without_the_answer_is_asked_again(connector: Connector) {
    let runs = Arc::new(AtomicUsize::new(0));
    let pair = connect(&connector, &asking_server(runs), ada()).await;
    let (mut params, asked, key) = first_round(&pair.client).await;
    params.request_state = asked.request_state.clone();
    params.input_responses = Some(Default::default());
    // Not an error: the same question again, as a round like the first.
    let again = match round(&pair.client, params.clone()).await.expect("a round") {
        Round::InputRequired(again) => again,
        other => panic!("expected the question again, got {other:?}"),
    };
    let requests = again.input_requests.clone().expect("input requests");
    assert!(requests.contains_key(&key), "{requests:?}");
    // Answered this time, the call completes.
    params.input_responses = Some([(key, grace())].into_iter().collect());
    params.request_state = again.request_state;
    greets_grace(round(&pair.client, params).await.expect("the retry"));
}

async fn a_tampered_state_is_refused(connector: Connector) {
    let runs = Arc::new(AtomicUsize::new(0));
    let pair = connect(&connector, &asking_server(runs), ada()).await;
    let (mut params, asked, key) = first_round(&pair.client).await;
    let state = asked
        .request_state
        .expect("a server that asks keeps a state");
    // One character of the state changed.
    let mut bytes = state.into_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
    params.request_state = Some(String::from_utf8(bytes).unwrap());
    params.input_responses = Some([(key, grace())].into_iter().collect());
    let err = round(&pair.client, params)
        .await
        .expect_err("a tampered state is refused");
    let err = err.protocol_error().expect("the server's error");
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{err:?}");
}

/// `tools/call` with any params, for what the typed params cannot express.
struct RawToolCall;

impl RequestMethod for RawToolCall {
    const METHOD: &'static str = "tools/call";
    const NAME_PARAM: Option<&'static str> = Some("name");
    type Params = Value;
    type Result = Value;
}

async fn malformed_answers_are_refused_before_the_handler_runs(connector: Connector) {
    let runs = Arc::new(AtomicUsize::new(0));
    let pair = connect(&connector, &asking_server(runs.clone()), ada()).await;
    let (_, asked, key) = first_round(&pair.client).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    for malformed in [
        json!("accept"),
        json!([{"action": "accept"}]),
        json!({ key.clone(): "accept" }),
    ] {
        let params = json!({
            "name": "greet",
            "arguments": {},
            "inputResponses": malformed,
            "requestState": asked.request_state,
        });
        let err = within(
            "the malformed retry",
            pair.client
                .peer()
                .request_with::<RawToolCall>(params, raw_options(&pair.client)),
        )
        .await
        .expect_err("malformed answers are refused");
        let err = err.protocol_error().expect("the server's error");
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{malformed}: {err:?}");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the handler never ran again"
    );
}

async fn an_embedded_form_that_is_not_flat_is_never_shown(connector: Connector) {
    for nested in [
        json!({"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}),
        json!({"type": "object", "properties": {"people": {"type": "array", "items": {"type": "object"}}}}),
    ] {
        // Our server cannot even build it: the typed form holds primitives only.
        assert!(serde_json::from_value::<RequestedSchema>(nested.clone()).is_err());
        // A server that embeds it anyway: the client refuses the request before its
        // callback sees it, and sends no answer back.
        let shown = Arc::new(AtomicUsize::new(0));
        let counted = shown.clone();
        let builder = client().form_elicitation(move |_request, _cx: CallbackContext| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move { Ok(FormAnswer::Decline) }
        });
        let first = json!({
            "resultType": "input_required",
            "inputRequests": {"who": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Where?", "requestedSchema": nested
            }}}
        });
        let (client, wire) = input_required_server(&connector, builder, first).await;
        let refused = call_tool_request(&client, "signup")
            .await
            .expect_err("a form that is not flat is refused");
        let said = refused.to_string();
        assert!(
            said.contains("\"who\"") && said.contains("-32602"),
            "{said}"
        );
        assert_eq!(shown.load(Ordering::SeqCst), 0, "the callback never saw it");
        assert_eq!(calls_sent(&wire).len(), 1, "no retry carried an answer");
    }
}
