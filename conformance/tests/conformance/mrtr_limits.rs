//! The edges of multi round-trip requests in the 2026-07-28 era: how many rounds the
//! client answers, what an interim result must carry to be sent at all, and the
//! request-sending APIs of the handshake era, which fail at once in this one.

use modelctx::client::{RootsList, SamplingSupport};
use modelctx::server::{Context, Server};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ErrorCode, InputRequiredResult, ListRootsRequest,
    SamplingMessage,
};
use modelctx_conformance::{Connector, Test, conformance_test, request_method};
use serde_json::{Value, json};

use crate::caching::{played, sent};
use crate::support::{call_tool_request, call_work, client, connect, work_tool};
use crate::tools::error_code;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_server_that_keeps_asking_is_given_up_after_sixteen_rounds,
            ["mrtr:rounds-cap"]
        ),
        conformance_test!(
            an_interim_result_with_nothing_to_answer_or_echo_is_an_error,
            ["mrtr:input-required-result:at-least-one-of"]
        ),
        conformance_test!(
            sending_a_request_to_the_client_fails_at_once_and_the_handler_goes_on,
            ["mrtr:push-api:loud-fail-2026"]
        ),
    ]
}

async fn a_server_that_keeps_asking_is_given_up_after_sixteen_rounds(connector: Connector) {
    // Every answer to `tools/call` asks again (state only: nothing for the client to
    // answer, so the retry follows at once).
    let (client, wire) = played(&connector, |_method, _params| {
        Ok(json!({"resultType": "input_required", "requestState": "again"}))
    })
    .await;
    let given_up = client
        .request::<CallToolRequest>(CallToolRequestParams::new("endless"))
        .await
        .unwrap_err();
    assert!(given_up.to_string().contains("16"), "{given_up}");
    // The request and its sixteen retries, no more.
    assert_eq!(sent(&wire, "tools/call").len(), 17);
}

request_method!(
    /// `tools/call` with a handler of its own, answering any JSON result.
    RawCall = "tools/call", Value => InputRequiredResult
);

async fn an_interim_result_with_nothing_to_answer_or_echo_is_an_error(connector: Connector) {
    let server = Server::builder("raw", "1.0.0")
        .request_handler::<RawCall, _, _>(|_params: Value, _cx: Context| async move {
            // The typed constructors always fill one of the two; a handler emptying
            // both has built an interim result the client could do nothing with.
            let mut empty = InputRequiredResult::with_state_only("state");
            empty.request_state = None;
            Ok(empty)
        })
        .build();
    let pair = connect(&connector, &server, client()).await;
    let refused = call_tool_request(&pair.client, "anything")
        .await
        .unwrap_err();
    assert_eq!(error_code(&refused), ErrorCode::INTERNAL_ERROR, "{refused}");
    // On the wire the answer is a JSON-RPC error, never an interim result.
    let asked = serde_json::to_value(sent(&pair.wire, "tools/call")[0]["id"].clone()).unwrap();
    let answers: Vec<Value> = pair
        .wire
        .received()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .filter(|m| m["id"] == asked)
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(answers[0].get("result").is_none(), "{}", answers[0]);
    assert_eq!(answers[0]["error"]["code"], ErrorCode::INTERNAL_ERROR.0);
}

async fn sending_a_request_to_the_client_fails_at_once_and_the_handler_goes_on(
    connector: Connector,
) {
    let server = Server::builder("pusher", "1.0.0")
        .tool(work_tool(
            "push",
            |_arguments: Value, cx: Context| async move {
                let session = cx.session();
                let hello =
                    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 50);
                let form = serde_json::from_value(json!({"mode": "form", "message": "name?",
                "requestedSchema": {"type": "object", "properties": {}}}))
                .unwrap();
                let refused = [
                    session.request::<CreateMessageRequest>(hello).await.err(),
                    session.request::<ElicitRequest>(form).await.err(),
                    session.request::<ListRootsRequest>(None).await.err(),
                    cx.request::<ListRootsRequest>(None).await.err(),
                ]
                .map(|e| e.is_some_and(|e| e.is_refused()));
                // The handler falls back and finishes.
                json!({"refused": refused, "answer": "without the client's help"})
            },
        ))
        .unwrap()
        .build();
    let able = client()
        .roots(RootsList::default(), false)
        .sampling(SamplingSupport::new(), |_params, _cx| async move {
            Ok(CreateMessageResult::assistant_text("x", "m"))
        });
    let pair = connect(&connector, &server, able).await;
    let outcome = call_work(&pair, "push", json!({})).await;
    assert_eq!(
        outcome["refused"],
        json!([true, true, true, true]),
        "{outcome}"
    );
    assert_eq!(outcome["answer"], "without the client's help");
    // Nothing reached the client: no request came from the server.
    let from_server: Vec<_> = pair
        .wire
        .received()
        .into_iter()
        .filter(|m| m.method().is_some() && m.id().is_some())
        .collect();
    assert!(from_server.is_empty(), "{from_server:?}");
}
