//! Elicitation (server → client): form and URL mode from a handler's context to the
//! client's callbacks, completion notifications, and the `-32042` retry flow.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use modelctx::client::{
    CallbackContext, Client, ClientBuilder, FormAnswer, FormContent, FormRequest, UrlAnswer,
    UrlRequest,
};
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{
    ClientRequestError, Context, Elicited, FormValues, NoArgs, Server, ToolDef,
};
use modelctx::session::SessionError;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ContentBlock,
    ElicitRequest, ElicitRequestFormParams, ElicitRequestUrlParams, ElicitResult, ElicitValue,
    ElicitationCompleteNotification, ElicitationCompleteNotificationParams, ErrorData,
    JsonRpcMessage, RequestedSchema,
};
use modelctx_conformance::{Connector, Test, conformance_test, request_method, within};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Pair, Work, answers_of, asked_of, call_tool_request, call_work, client, connect,
    input_asking_server, server_with_tool, stateless_era, work_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_form_crosses_unaltered_in_input_required => a_form_crosses_unaltered_and_its_answer_comes_back,
            ["elicitation:mrtr:form:basic"]
        ),
        conformance_test!(
            form_decline_and_cancel_in_input_required => form_decline_and_cancel_carry_no_content,
            ["elicitation:mrtr:form:action:decline", "elicitation:mrtr:form:action:cancel"]
        ),
        conformance_test!(
            url_answers_in_input_required_carry_no_content => url_decline_and_cancel_carry_no_content,
            ["elicitation:mrtr:url:action-no-content"]
        ),
        conformance_test!(
            several_rounds_of_questions_complete => a_tool_asks_several_questions,
            ["mrtr:multi-round:complete"]
        ),
        conformance_test!(
            enum_forms_in_input_required => enum_forms_reach_the_callback_as_sent,
            ["elicitation:mrtr:form:schema:enum-variants"]
        ),
        conformance_test!(
            primitive_fields_in_input_required => primitive_fields_round_trip,
            ["elicitation:mrtr:form:schema:primitives"]
        ),
        conformance_test!(
            a_form_crosses_unaltered_and_its_answer_comes_back,
            [
                "elicitation:form:basic",
                "elicitation:form:action:accept",
                "tools:call:elicitation-roundtrip"
            ]
        ),
        conformance_test!(
            form_decline_and_cancel_carry_no_content,
            [
                "elicitation:form:action:decline",
                "elicitation:form:action:cancel"
            ]
        ),
        conformance_test!(
            an_empty_capability_means_form,
            ["elicitation:capability:empty-is-form"]
        ),
        conformance_test!(
            an_undeclared_mode_is_invalid_params,
            [
                "elicitation:capability:mode-mismatch",
                "elicitation:url:not-supported"
            ]
        ),
        conformance_test!(
            the_server_sends_only_declared_modes,
            ["elicitation:capability:server-respects-mode"]
        ),
        conformance_test!(
            no_elicitation_capability_is_invalid_params,
            ["elicitation:form:not-supported"]
        ),
        conformance_test!(
            a_request_without_mode_is_a_form,
            ["elicitation:form:mode-omitted-default"]
        ),
        conformance_test!(
            defaults_prefill_the_form_and_fill_gaps,
            ["elicitation:form:defaults"]
        ),
        conformance_test!(
            enum_forms_reach_the_callback_as_sent,
            ["elicitation:form:schema:enum-variants"]
        ),
        conformance_test!(
            primitive_fields_round_trip,
            ["elicitation:form:schema:primitives"]
        ),
        conformance_test!(
            forms_stay_flat_objects_of_primitives,
            ["elicitation:form:schema:restricted-subset"]
        ),
        conformance_test!(
            answers_are_checked_on_both_sides,
            ["elicitation:form:response-validation"]
        ),
        conformance_test!(
            a_url_request_crosses_unaltered_and_accept_has_no_content,
            [
                "elicitation:url:basic",
                "elicitation:url:action:accept-no-content"
            ]
        ),
        conformance_test!(
            url_decline_and_cancel_carry_no_content,
            ["elicitation:url:decline", "elicitation:url:cancel"]
        ),
        conformance_test!(
            completion_notifications_reach_the_client_and_unknown_ids_are_ignored,
            [
                "elicitation:url:complete-notification",
                "elicitation:url:complete-unknown-ignored"
            ]
        ),
        conformance_test!(
            a_blocked_request_lists_the_url_elicitations,
            ["elicitation:url:required-error"]
        ),
        conformance_test!(
            a_refused_call_succeeds_after_the_url_flow,
            ["flow:elicitation:url-required-then-retry"]
        ),
        conformance_test!(
            a_tool_asks_several_questions,
            ["flow:elicitation:multi-step-form"]
        ),
        conformance_test!(
            a_typed_form_from_a_tool_context,
            ["mcpserver:context:elicit"]
        ),
        conformance_test!(
            a_tool_function_raises_url_elicitation_required,
            ["mcpserver:tool:url-elicitation-error"]
        ),
    ]
}

/// A server whose `elicit` tool elicits as told — `{"form": {message, schema}}`,
/// `{"url": {message, id, url}}` or `{"complete": id}` — or reports the client's
/// capabilities as the request states them (`{"caps": true}`), and reports the
/// outcome as JSON; its `test/work` handler sends `{"raw": params}` as is, skipping
/// the local checks (a request from the server: the handshake era only).
fn elicitor() -> Server {
    Server::builder("elicitor", "1.0.0")
        .tool(work_tool("elicit", |request: Value, cx: Context| async move {
            if let Some(form) = request.get("form") {
                let schema: RequestedSchema = match serde_json::from_value(form["schema"].clone()) {
                    Ok(schema) => schema,
                    Err(e) => return json!({"unreadable": e.to_string()}),
                };
                let message = form["message"].as_str().unwrap_or_default().to_owned();
                return outcome(cx.elicit_form_schema(message, schema).await);
            }
            if let Some(url) = request.get("url") {
                let text = |k: &str| url[k].as_str().unwrap_or_default().to_owned();
                let result = cx.elicit_url(text("message"), text("id"), text("url")).await;
                return outcome(result.map(|e| match e {
                    Elicited::Accepted(()) => Elicited::Accepted(FormValues::new()),
                    Elicited::Declined => Elicited::Declined,
                    Elicited::Cancelled => Elicited::Cancelled,
                }));
            }
            if let Some(id) = request.get("complete").and_then(Value::as_str) {
                return match cx.notify_elicitation_complete(id).await {
                    Ok(()) => json!({"sent": true}),
                    Err(e) => json!({"sent": false, "error": e.to_string()}),
                };
            }
            if request.get("caps").is_some() {
                return json!({"caps": cx.client_capabilities()});
            }
            json!({"unknown": request})
        }))
        .expect("a valid tool")
        .request_handler::<Work, _, _>(|request: Value, cx: Context| async move {
            let raw = request.get("raw").cloned().unwrap_or_default();
            Ok(match cx.peer().request::<RawElicit>(raw).await {
                Ok(r) => json!({"ok": r}),
                Err(e) => json!({"code": e.to_error_data().code.0, "protocol": e.protocol_error().is_some()}),
            })
        })
        .build()
}

request_method!(
    /// `elicitation/create` with any JSON as params, for requests the typed API refuses to
    /// build.
    RawElicit = "elicitation/create"
);

fn outcome(result: Result<Elicited<FormValues>, ClientRequestError>) -> Value {
    match result {
        Ok(Elicited::Accepted(values)) => json!({"accepted": values}),
        Ok(Elicited::Declined) => json!({"declined": true}),
        Ok(Elicited::Cancelled) => json!({"cancelled": true}),
        Err(e) => {
            let data = e.to_error_data();
            json!({
                "refused": e.is_refused(),
                "invalidAnswer": e.is_invalid_answer(),
                "protocol": e.protocol_error().is_some(),
                "code": data.code.0,
                "message": data.message,
            })
        }
    }
}

async fn work(pair: &Pair, request: Value) -> Value {
    pair.client
        .request::<Work>(request)
        .await
        .expect("the handler answers")
}

async fn ask_form(pair: &Pair, message: &str, schema: &Value) -> Value {
    let form = json!({"form": {"message": message, "schema": schema}});
    call_work(pair, "elicit", form).await
}

async fn ask_url(pair: &Pair, id: &str, url: &str) -> Value {
    let url = json!({"url": {"message": "Please sign in", "id": id, "url": url}});
    call_work(pair, "elicit", url).await
}

/// A client whose form callback forwards each request and answers `answer`.
fn form_client(answer: FormAnswer) -> (ClientBuilder, mpsc::UnboundedReceiver<FormRequest>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let builder = client().form_elicitation(move |request, _cx: CallbackContext| {
        let _ = tx.send(request);
        let answer = answer.clone();
        async move { Ok(answer) }
    });
    (builder, rx)
}

/// A client whose URL callback forwards each request and answers `answer`.
fn url_client(answer: UrlAnswer) -> (ClientBuilder, mpsc::UnboundedReceiver<UrlRequest>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let builder = client().url_elicitation(move |request, _cx: CallbackContext| {
        let _ = tx.send(request);
        async move { Ok(answer) }
    });
    (builder, rx)
}

fn elicitations_sent(pair: &Pair) -> usize {
    asked_of(pair, "elicitation/create").len()
}

/// The client's last answer to the server, as JSON.
fn last_result(pair: &Pair) -> Value {
    answers_of(pair).pop().expect("an answer")
}

fn contact_form() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "email": {"type": "string", "format": "email"}
    }, "required": ["name"]})
}

fn content(pairs: &[(&str, ElicitValue)]) -> FormContent {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

async fn a_form_crosses_unaltered_and_its_answer_comes_back(connector: Connector) {
    let server = Server::builder("signup", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|_call, cx: Context| async move {
            let schema = serde_json::from_value(contact_form()).unwrap();
            let text = match cx.elicit_form_schema("Who are you?", schema).await? {
                Elicited::Accepted(values) => format!("Welcome, {:?}", values["name"]),
                Elicited::Declined | Elicited::Cancelled => "no answer".to_owned(),
            };
            Ok(CallToolResult::new(vec![ContentBlock::text(text)]))
        })
        .build();
    let answer = content(&[("name", "Ada".into()), ("email", "ada@example.test".into())]);
    let (builder, mut seen) = form_client(FormAnswer::Accept(answer.clone()));
    let pair = connect(&connector, &server, builder).await;
    let result = pair
        .client
        .request::<CallToolRequest>(CallToolRequestParams::new("signup"))
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("Welcome, String(\"Ada\")")
    );
    let request = within("the callback", seen.recv()).await.unwrap();
    assert_eq!(request.message(), "Who are you?");
    assert_eq!(
        serde_json::to_value(request.schema()).unwrap(),
        contact_form()
    );

    let pair = connect(
        &connector,
        &elicitor(),
        form_client(FormAnswer::Accept(answer)).0,
    )
    .await;
    let got = ask_form(&pair, "Who are you?", &contact_form()).await;
    assert_eq!(
        got,
        json!({"accepted": {"name": "Ada", "email": "ada@example.test"}})
    );
}

async fn form_decline_and_cancel_carry_no_content(connector: Connector) {
    for (answer, expected, action) in [
        (FormAnswer::Decline, json!({"declined": true}), "decline"),
        (FormAnswer::Cancel, json!({"cancelled": true}), "cancel"),
    ] {
        let pair = connect(&connector, &elicitor(), form_client(answer).0).await;
        assert_eq!(ask_form(&pair, "Who?", &contact_form()).await, expected);
        assert_eq!(last_result(&pair), json!({"action": action}));
    }
}

async fn an_empty_capability_means_form(connector: Connector) {
    let declared: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
    let answer = content(&[("name", "Ada".into())]);
    let builder = form_client(FormAnswer::Accept(answer))
        .0
        .capabilities(declared);
    let pair = connect(&connector, &elicitor(), builder).await;
    let caps = call_work(&pair, "elicit", json!({"caps": true})).await;
    assert_eq!(caps, json!({"caps": {"elicitation": {}}}));
    let got = ask_form(&pair, "Who?", &contact_form()).await;
    assert_eq!(got, json!({"accepted": {"name": "Ada"}}));
}

fn url_params(id: &str) -> Value {
    serde_json::to_value(ElicitRequestUrlParams::new(
        "Sign in",
        id,
        "https://auth.example.test/s",
    ))
    .unwrap()
}

fn form_params(schema: &Value) -> Value {
    json!({"mode": "form", "message": "Who?", "requestedSchema": schema})
}

async fn an_undeclared_mode_is_invalid_params(connector: Connector) {
    let (builder, _) = form_client(FormAnswer::Cancel);
    let pair = connect(&connector, &elicitor(), builder).await;
    if stateless_era(&pair.client) {
        // No requests from the server: the same elicitations arrive as the input a
        // tools/call result asks for, and the client fails the call instead.
        let (builder, mut seen) = form_client(FormAnswer::Cancel);
        let (asker, _) =
            input_asking_server(&connector, builder, "elicitation/create", url_params("e1")).await;
        let err = call_any_tool(&asker).await.unwrap_err();
        assert!(err.to_string().contains("-32602"), "{err}");
        assert!(seen.try_recv().is_err(), "the form callback was not called");

        let (builder, mut seen) = url_client(UrlAnswer::Accept);
        let form = form_params(&contact_form());
        let (asker, _) = input_asking_server(&connector, builder, "elicitation/create", form).await;
        let err = call_any_tool(&asker).await.unwrap_err();
        assert!(err.to_string().contains("-32602"), "{err}");
        assert!(seen.try_recv().is_err(), "the URL callback was not called");
        return;
    }
    let got = work(&pair, json!({"raw": url_params("e1")})).await;
    assert_eq!(got, json!({"code": -32602, "protocol": true}));

    let (builder, mut seen) = url_client(UrlAnswer::Accept);
    let pair = connect(&connector, &elicitor(), builder).await;
    let got = work(&pair, json!({"raw": form_params(&contact_form())})).await;
    assert_eq!(got, json!({"code": -32602, "protocol": true}));
    assert!(seen.try_recv().is_err(), "the URL callback was not called");
}

/// A `tools/call` the client sends as is.
async fn call_any_tool(client: &Client) -> Result<CallToolResult, SessionError> {
    client
        .request::<CallToolRequest>(CallToolRequestParams::new("any"))
        .await
}

async fn the_server_sends_only_declared_modes(connector: Connector) {
    let pair = connect(&connector, &elicitor(), form_client(FormAnswer::Cancel).0).await;
    let got = ask_url(&pair, "e1", "https://auth.example.test/s").await;
    assert_eq!(got["refused"], json!(true), "{got}");
    assert_eq!(elicitations_sent(&pair), 0);

    let pair = connect(&connector, &elicitor(), url_client(UrlAnswer::Accept).0).await;
    let got = ask_form(&pair, "Who?", &contact_form()).await;
    assert_eq!(got["refused"], json!(true), "{got}");
    assert_eq!(elicitations_sent(&pair), 0);
    let got = ask_url(&pair, "e1", "https://auth.example.test/s").await;
    assert_eq!(got, json!({"accepted": {}}));
    assert_eq!(elicitations_sent(&pair), 1);
}

async fn no_elicitation_capability_is_invalid_params(connector: Connector) {
    let pair = connect(&connector, &elicitor(), client()).await;
    assert!(
        pair.server()
            .client_capabilities()
            .unwrap()
            .elicitation
            .is_none()
    );
    let got = work(&pair, json!({"raw": form_params(&contact_form())})).await;
    assert_eq!(got, json!({"code": -32602, "protocol": true}));
    let got = ask_form(&pair, "Who?", &contact_form()).await;
    assert_eq!(got["refused"], json!(true), "{got}");
}

async fn a_request_without_mode_is_a_form(connector: Connector) {
    let answer = content(&[("name", "Ada".into())]);
    let (builder, mut seen) = form_client(FormAnswer::Accept(answer));
    let pair = connect(&connector, &elicitor(), builder).await;
    let schema: RequestedSchema = serde_json::from_value(contact_form()).unwrap();
    let params = ElicitRequestFormParams::new("Who?", schema).without_mode();
    let accepted = json!({"action": "accept", "content": {"name": "Ada"}});
    if stateless_era(&pair.client) {
        // The input a tools/call result asks for; the answer rides on the retry.
        let answer = content(&[("name", "Ada".into())]);
        let (builder, mut seen) = form_client(FormAnswer::Accept(answer));
        let raw = serde_json::to_value(&params).unwrap();
        assert!(raw.get("mode").is_none(), "{raw}");
        let (asker, wire) =
            input_asking_server(&connector, builder, "elicitation/create", raw).await;
        call_any_tool(&asker).await.unwrap();
        let request = within("the form callback", seen.recv()).await.unwrap();
        assert_eq!(request.message(), "Who?");
        let retry = wire
            .sent()
            .into_iter()
            .filter_map(|m| match m {
                JsonRpcMessage::Request(r) if r.method == "tools/call" => r.params,
                _ => None,
            })
            .nth(1)
            .expect("the call was sent again with the answer");
        let retry: Value = serde_json::from_str(retry.get()).unwrap();
        assert_eq!(retry["inputResponses"]["ask"], accepted);
        return;
    }
    let got = work(&pair, json!({"raw": params})).await;
    assert_eq!(got["ok"], accepted);
    let request = within("the form callback", seen.recv()).await.unwrap();
    assert_eq!(request.message(), "Who?");
    let params = &pair.wire.received_params("elicitation/create")[0];
    assert!(params.get("mode").is_none(), "{params}");
}

async fn defaults_prefill_the_form_and_fill_gaps(connector: Connector) {
    let schema = json!({"type": "object", "properties": {
        "email": {"type": "string", "format": "email", "default": "user@example.test"},
        "count": {"type": "integer", "default": 50},
        "ratio": {"type": "number", "default": 0.5},
        "subscribe": {"type": "boolean", "default": false},
        "color": {"type": "string", "enum": ["Red", "Green"], "default": "Red"},
        "colors": {"type": "array", "items": {"type": "string", "enum": ["Red", "Green"]}, "default": ["Red", "Green"]}
    }, "required": ["email", "count"]});
    // The user only changes the count.
    let answer = content(&[("count", 7i64.into())]);
    let (builder, mut seen) = form_client(FormAnswer::Accept(answer));
    let pair = connect(&connector, &elicitor(), builder).await;
    let got = ask_form(&pair, "Settings", &schema).await;
    let request = within("the form callback", seen.recv()).await.unwrap();
    assert_eq!(
        serde_json::to_value(&request.prefilled).unwrap(),
        json!({"email": "user@example.test", "count": 50, "ratio": 0.5, "subscribe": false,
               "color": "Red", "colors": ["Red", "Green"]})
    );
    assert_eq!(
        got,
        json!({"accepted": {"email": "user@example.test", "count": 7, "ratio": 0.5,
               "subscribe": false, "color": "Red", "colors": ["Red", "Green"]}})
    );
}

async fn enum_forms_reach_the_callback_as_sent(connector: Connector) {
    let schema = json!({"type": "object", "properties": {
        "plain": {"type": "string", "title": "Plain", "enum": ["a", "b"], "default": "a"},
        "titled": {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}]},
        "legacy": {"type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]},
        "multi": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
        "titled_multi": {"type": "array", "items": {"anyOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}]}}
    }});
    let answer = content(&[
        ("plain", "b".into()),
        ("titled", "#0f0".into()),
        ("legacy", "y".into()),
        ("multi", vec!["a".to_owned(), "c".to_owned()].into()),
        ("titled_multi", vec!["#f00".to_owned()].into()),
    ]);
    let (builder, mut seen) = form_client(FormAnswer::Accept(answer));
    let pair = connect(&connector, &elicitor(), builder).await;
    let got = ask_form(&pair, "Pick", &schema).await;
    let request = within("the form callback", seen.recv()).await.unwrap();
    assert_eq!(serde_json::to_value(request.schema()).unwrap(), schema);
    assert_eq!(
        got,
        json!({"accepted": {"plain": "b", "titled": "#0f0", "legacy": "y",
               "multi": ["a", "c"], "titled_multi": ["#f00"]}})
    );
}

async fn primitive_fields_round_trip(connector: Connector) {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "seen": {"type": "string", "format": "date-time"},
        "height": {"type": "number", "minimum": 0},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ok": {"type": "boolean"}
    }, "required": ["name", "age", "ok"]});
    let answer = content(&[
        ("name", "Ada".into()),
        ("email", "ada@example.test".into()),
        ("site", "https://example.test".into()),
        ("born", "1815-12-10".into()),
        ("seen", "2025-11-25T10:00:00Z".into()),
        ("height", 1.65.into()),
        ("age", 36i64.into()),
        ("ok", true.into()),
    ]);
    let (builder, mut seen) = form_client(FormAnswer::Accept(answer));
    let pair = connect(&connector, &elicitor(), builder).await;
    let got = ask_form(&pair, "About you", &schema).await;
    assert_eq!(
        got,
        json!({"accepted": {"name": "Ada", "email": "ada@example.test", "site": "https://example.test",
               "born": "1815-12-10", "seen": "2025-11-25T10:00:00Z", "height": 1.65, "age": 36, "ok": true}})
    );
    let request = within("the form callback", seen.recv()).await.unwrap();
    assert_eq!(serde_json::to_value(request.schema()).unwrap(), schema);
}

async fn forms_stay_flat_objects_of_primitives(connector: Connector) {
    let (builder, mut seen) = form_client(FormAnswer::Cancel);
    let pair = connect(&connector, &elicitor(), builder).await;
    for bad in [
        json!({"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}),
        json!({"type": "object", "properties": {"people": {"type": "array", "items": {"type": "object"}}}}),
        json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}),
        json!({"type": "array", "items": {"type": "string"}}),
    ] {
        // The server's typed form cannot hold it at all…
        assert!(
            serde_json::from_value::<RequestedSchema>(bad.clone()).is_err(),
            "{bad}"
        );
        // …and the client refuses it from a server that sends it anyway.
        let got = work(&pair, json!({"raw": form_params(&bad)})).await;
        assert_eq!(got, json!({"code": -32602, "protocol": true}), "{bad}");
    }
    assert!(
        seen.try_recv().is_err(),
        "the callback never saw a bad form"
    );
    // A form whose required field does not exist is refused as well.
    let dangling = json!({"type": "object", "properties": {}, "required": ["name"]});
    let got = work(&pair, json!({"raw": form_params(&dangling)})).await;
    assert_eq!(got, json!({"code": -32602, "protocol": true}));
}

async fn answers_are_checked_on_both_sides(connector: Connector) {
    let schema = json!({"type": "object", "properties": {
        "age": {"type": "integer", "minimum": 0}
    }, "required": ["age"]});
    // The client will not send an answer outside the form.
    let (builder, mut seen) = form_client(FormAnswer::Accept(content(&[("age", "old".into())])));
    let pair = connect(&connector, &elicitor(), builder).await;
    let got = ask_form(&pair, "Age?", &schema).await;
    within("the form callback", seen.recv()).await.unwrap();
    assert_eq!(got["protocol"], json!(true), "{got}");
    assert!(
        !pair
            .wire
            .sent()
            .iter()
            .any(|m| matches!(m, JsonRpcMessage::Response(r) if r.result.get().contains("accept"))),
        "no accepted answer left the client"
    );

    // The server checks what arrives, from a client that skips the check.
    let raw = client().request_handler::<ElicitRequest, _, _>(|_params, _cx| async {
        Ok(ElicitResult::accept(content(&[("age", (-3i64).into())])))
    });
    let pair = connect(&connector, &elicitor(), raw).await;
    let got = ask_form(&pair, "Age?", &schema).await;
    assert_eq!(got["invalidAnswer"], json!(true), "{got}");
}

async fn a_url_request_crosses_unaltered_and_accept_has_no_content(connector: Connector) {
    let (builder, mut seen) = url_client(UrlAnswer::Accept);
    let pair = connect(&connector, &elicitor(), builder).await;
    let url = "https://auth.example.test/start?session=a%20b&x=1";
    let got = ask_url(&pair, "elic-42", url).await;
    assert_eq!(got, json!({"accepted": {}}));
    let request = within("the URL callback", seen.recv()).await.unwrap();
    assert_eq!(request.message(), "Please sign in");
    assert_eq!(request.url(), url);
    assert_eq!(request.elicitation_id(), "elic-42");
    assert_eq!(last_result(&pair), json!({"action": "accept"}));
}

async fn url_decline_and_cancel_carry_no_content(connector: Connector) {
    for (answer, expected, action) in [
        (UrlAnswer::Decline, json!({"declined": true}), "decline"),
        (UrlAnswer::Cancel, json!({"cancelled": true}), "cancel"),
    ] {
        let pair = connect(&connector, &elicitor(), url_client(answer).0).await;
        assert_eq!(
            ask_url(&pair, "e1", "https://a.example.test/").await,
            expected
        );
        assert_eq!(last_result(&pair), json!({"action": action}));
    }
}

async fn completion_notifications_reach_the_client_and_unknown_ids_are_ignored(
    connector: Connector,
) {
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let builder = url_client(UrlAnswer::Accept)
        .0
        .on_elicitation_complete(move |id| {
            let _ = done_tx.send(id);
        });
    let pair = connect(&connector, &elicitor(), builder).await;
    assert_eq!(
        ask_url(&pair, "e1", "https://a.example.test/").await,
        json!({"accepted": {}})
    );

    // Notifications are delivered in order: an unknown id first, then the known one.
    call_work(&pair, "elicit", json!({"complete": "never-asked"})).await;
    call_work(&pair, "elicit", json!({"complete": "e1"})).await;
    assert_eq!(within("the completion", done.recv()).await.unwrap(), "e1");
    let note = pair
        .wire
        .received()
        .into_iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Notification(n) if n.method == "notifications/elicitation/complete" => {
                serde_json::from_str::<Value>(n.params.unwrap().get()).ok()
            }
            _ => None,
        })
        .last()
        .unwrap();
    assert_eq!(note, json!({"elicitationId": "e1"}));

    // A finished id is ignored too; the next real one is still delivered.
    call_work(&pair, "elicit", json!({"complete": "e1"})).await;
    assert_eq!(
        ask_url(&pair, "e2", "https://a.example.test/").await,
        json!({"accepted": {}})
    );
    call_work(&pair, "elicit", json!({"complete": "e2"})).await;
    assert_eq!(within("the completion", done.recv()).await.unwrap(), "e2");
    pair.client.ping().await.expect("the session is unaffected");
}

fn sign_in(id: &str) -> ElicitRequestUrlParams {
    ElicitRequestUrlParams::new(
        "Authorize access to your files",
        id,
        format!("https://auth.example.test/{id}"),
    )
}

async fn a_blocked_request_lists_the_url_elicitations(connector: Connector) {
    let server = Server::builder("gated", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|_call, cx: Context| async move {
            Err::<CallToolResult, _>(cx.url_elicitation_required([sign_in("a"), sign_in("b")]))
        })
        .build();
    let pair = connect(&connector, &server, url_client(UrlAnswer::Accept).0).await;
    let err = pair
        .client
        .request::<CallToolRequest>(CallToolRequestParams::new("files"))
        .await
        .unwrap_err();
    let data = err.protocol_error().unwrap();
    assert_eq!(data.code.0, -32042);
    assert_eq!(
        data.data.as_ref().unwrap()["elicitations"],
        serde_json::to_value(vec![sign_in("a"), sign_in("b")]).unwrap()
    );
    let required = pair
        .client
        .url_elicitation_required(&err)
        .expect("a typed -32042");
    assert_eq!(required.elicitations(), [sign_in("a"), sign_in("b")]);
}

async fn a_refused_call_succeeds_after_the_url_flow(connector: Connector) {
    let authorized = Arc::new(AtomicBool::new(false));
    let gate = authorized.clone();
    let server = Server::builder("gated", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(move |_call, cx: Context| {
            let gate = gate.clone();
            async move {
                if !gate.load(Ordering::Acquire) {
                    return Err(cx.url_elicitation_required([sign_in("auth-1")]));
                }
                Ok(CallToolResult::text("3 files"))
            }
        })
        .build();
    let pair = connect(&connector, &server, url_client(UrlAnswer::Accept).0).await;
    let call = || {
        pair.client
            .request::<CallToolRequest>(CallToolRequestParams::new("files"))
    };
    let err = call().await.unwrap_err();
    let required = pair
        .client
        .url_elicitation_required(&err)
        .expect("a typed -32042");
    assert_eq!(required.elicitations(), [sign_in("auth-1")]);

    // The user completes the flow in a browser; the server learns of it and says so.
    authorized.store(true, Ordering::Release);
    pair.server()
        .notify::<ElicitationCompleteNotification>(ElicitationCompleteNotificationParams::new(
            "auth-1",
        ))
        .await
        .unwrap();
    within("the completion notification", required.completed()).await;

    let result = call().await.expect("the retry succeeds");
    assert_eq!(result.content[0].as_text(), Some("3 files"));
}

/// Calls `tool` with no arguments and checks it is not a tool error: its text.
async fn answer_of(pair: &Pair, tool: &str) -> String {
    let r = pair
        .client
        .request::<CallToolRequest>(CallToolRequestParams::new(tool))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    r.content[0].as_text().unwrap().to_owned()
}

async fn a_tool_asks_several_questions(connector: Connector) {
    let server = Server::builder("party", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|_call, cx: Context| async move {
            let name_form = serde_json::from_value(json!({"type": "object",
                "properties": {"name": {"type": "string"}}, "required": ["name"]})).unwrap();
            let name = match cx.elicit_form_schema("Your name?", name_form).await? {
                Elicited::Accepted(v) => match &v["name"] {
                    ElicitValue::String(s) => s.clone(),
                    _ => return Err(ErrorData::internal_error("name is not a string")),
                },
                Elicited::Declined => return Ok(CallToolResult::text("stopped at step 1: declined")),
                Elicited::Cancelled => return Ok(CallToolResult::text("stopped at step 1: cancelled")),
            };
            let guests_form = serde_json::from_value(json!({"type": "object",
                "properties": {"guests": {"type": "integer", "minimum": 0}}, "required": ["guests"]})).unwrap();
            match cx.elicit_form_schema(format!("How many guests, {name}?"), guests_form).await? {
                Elicited::Accepted(v) => Ok(CallToolResult::text(format!("{name} +{:?}", v["guests"]))),
                Elicited::Declined => Ok(CallToolResult::text(format!("stopped at step 2: {name} declined"))),
                Elicited::Cancelled => Ok(CallToolResult::text(format!("stopped at step 2: {name} cancelled"))),
            }
        })
        .build();
    // The second answer depends on the question, which depends on the first answer.
    let answering = |second: Option<FormAnswer>| {
        client().form_elicitation(move |request: FormRequest, _cx| {
            let answer = if request.message() == "Your name?" {
                FormAnswer::Accept(content(&[("name", "Ada".into())]))
            } else {
                assert_eq!(request.message(), "How many guests, Ada?");
                second
                    .clone()
                    .unwrap_or(FormAnswer::Accept(content(&[("guests", 2i64.into())])))
            };
            async move { Ok(answer) }
        })
    };
    let pair = connect(&connector, &server, answering(None)).await;
    assert_eq!(answer_of(&pair, "rsvp").await, "Ada +Integer(2)");
    assert_eq!(elicitations_sent(&pair), 2);

    let pair = connect(&connector, &server, answering(Some(FormAnswer::Decline))).await;
    assert_eq!(
        answer_of(&pair, "rsvp").await,
        "stopped at step 2: Ada declined"
    );

    let pair = connect(&connector, &server, form_client(FormAnswer::Cancel).0).await;
    assert_eq!(
        answer_of(&pair, "rsvp").await,
        "stopped at step 1: cancelled"
    );
    assert_eq!(
        elicitations_sent(&pair),
        1,
        "the cancel ended the tool early"
    );
}

/// The form of [`a_typed_form_from_a_tool_context`].
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Booking {
    /// The guest's name.
    name: String,
    nights: u32,
    breakfast: Option<bool>,
    room: Room,
}

#[derive(Debug, serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
#[serde(rename_all = "lowercase")]
enum Room {
    Single,
    Double,
}

async fn a_typed_form_from_a_tool_context(connector: Connector) {
    let book = ToolDef::new("book", |_args: NoArgs, cx: Context| async move {
        Ok::<_, ClientRequestError>(match cx.elicit_form::<Booking>("Book a room").await? {
            Elicited::Accepted(b) => format!(
                "{} x{} {:?} breakfast={:?}",
                b.name, b.nights, b.room, b.breakfast
            ),
            Elicited::Declined => "declined".to_owned(),
            Elicited::Cancelled => "cancelled".to_owned(),
        })
    });
    let server = server_with_tool("hotel", book);
    let (tx, mut seen) = mpsc::unbounded_channel();
    let answering = move |answer: FormAnswer| {
        let tx = tx.clone();
        client().form_elicitation(move |request: FormRequest, _cx| {
            let _ = tx.send(serde_json::to_value(request.schema()).unwrap());
            let answer = answer.clone();
            async move { Ok(answer) }
        })
    };

    let accept = FormAnswer::Accept(content(&[
        ("name", "Ada".into()),
        ("nights", 2i64.into()),
        ("room", "double".into()),
    ]));
    let pair = connect(&connector, &server, answering(accept)).await;
    assert_eq!(
        answer_of(&pair, "book").await,
        "Ada x2 Double breakfast=None"
    );
    let schema = within("the form", seen.recv()).await.unwrap();
    assert_eq!(schema["type"], json!("object"));
    assert_eq!(
        schema["properties"]["name"],
        json!({"type": "string", "description": "The guest's name."})
    );
    assert_eq!(schema["properties"]["nights"]["type"], json!("integer"));
    assert_eq!(
        schema["properties"]["breakfast"],
        json!({"type": "boolean"})
    );
    assert_eq!(
        schema["properties"]["room"],
        json!({"type": "string", "enum": ["single", "double"]})
    );
    assert_eq!(schema["required"], json!(["name", "nights", "room"]));

    for (answer, text) in [
        (FormAnswer::Decline, "declined"),
        (FormAnswer::Cancel, "cancelled"),
    ] {
        let pair = connect(&connector, &server, answering(answer)).await;
        assert_eq!(answer_of(&pair, "book").await, text);
    }
}

/// The arguments of the `open-vault` tool.
#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Vault {
    /// Which vault to open.
    vault: String,
}

async fn a_tool_function_raises_url_elicitation_required(connector: Connector) {
    // A high-level tool function returns the -32042 error instead of a result.
    let server = Server::builder("vaults", "1.0.0")
        .tool(ToolDef::new(
            "open-vault",
            |args: Vault, cx: Context| async move {
                let needed = [sign_in(&format!("{}-login", args.vault))];
                Err::<CallToolResult, ErrorData>(cx.url_elicitation_required(needed))
            },
        ))
        .expect("a valid tool")
        .build();
    let pair = connect(&connector, &server, url_client(UrlAnswer::Accept).0).await;

    let arguments = json!({"vault": "team"}).as_object().cloned().unwrap();
    let call = CallToolRequestParams::new("open-vault").with_arguments(arguments);
    let err = pair
        .client
        .request::<CallToolRequest>(call)
        .await
        .unwrap_err();

    // A JSON-RPC error, not an isError result, with the elicitations intact.
    let data = err.protocol_error().expect("a JSON-RPC error");
    assert_eq!(data.code.0, -32042);
    assert_eq!(
        data.data.as_ref().unwrap()["elicitations"],
        serde_json::to_value(vec![sign_in("team-login")]).unwrap()
    );
    let required = pair
        .client
        .url_elicitation_required(&err)
        .expect("surfaced as the typed error");
    assert_eq!(required.elicitations(), [sign_in("team-login")]);

    // Any other error from the same kind of function stays a tool execution error.
    let plain = Server::builder("plain", "1.0.0")
        .tool(ToolDef::new(
            "fails",
            |_: NoArgs, _cx: Context| async move {
                Err::<CallToolResult, ErrorData>(ErrorData::invalid_params("no such vault"))
            },
        ))
        .expect("a valid tool")
        .build();
    let pair = connect(&connector, &plain, client()).await;
    let result = call_tool_request(&pair.client, "fails")
        .await
        .expect("an isError result, not a JSON-RPC error");
    assert!(result.is_error());
}
