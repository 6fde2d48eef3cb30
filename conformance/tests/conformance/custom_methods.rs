//! Vendor methods and the errors around them, through the role APIs: a server's own
//! request handler beside its registered tools, a vendor request the client serves and a
//! vendor notification it hears, a handler's error reaching the caller as chosen, an
//! operation the other side did not declare refused before anything is sent, and a
//! cancelled handler's last words kept off the wire.

use modelctx::client::{CallbackContext, SamplingSupport};
use modelctx::server::{Context, NoArgs, Server, ToolDef, ToolError};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult,
    ErrorCode, ErrorData, JsonObject, SamplingMessage, StopReason,
};
use modelctx_conformance::{
    Connector, Test, conformance_test, notification_method, request_method, within,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Block, Echo, call_tool_request, call_work, client, connect, payload, stateless_era, text_tool,
    work_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_raw_handler_serves_beside_the_registered_tools,
            ["mcpserver:reach-through:set-request-handler"]
        ),
        conformance_test!(
            a_vendor_request_from_the_server_is_served_by_the_clients_handler,
            ["custom-methods:client-handler:roundtrip"]
        ),
        conformance_test!(
            a_vendor_notification_reaches_the_clients_handler_typed,
            ["protocol:custom-method:notification"]
        ),
        conformance_test!(
            a_handlers_error_reaches_the_caller_as_chosen,
            ["protocol:error:handler-error-passthrough"]
        ),
        conformance_test!(
            legacy_server_error_codes_cross_untouched,
            ["errors:wire:legacy-code-opaque"]
        ),
        conformance_test!(
            a_tool_samples_through_its_context,
            ["mcpserver:context:sampling-from-handler"]
        ),
        conformance_test!(
            an_undeclared_capability_is_refused_before_sending,
            ["errors:capability:sdkerror-capability-not-supported"]
        ),
        conformance_test!(
            a_cancelled_handler_sends_nothing_more,
            ["protocol:cancel:no-further-notifications"]
        ),
    ]
}

/// What the vendor request `com.example/measure` asks about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Dimensions {
    width: u32,
    height: u32,
}

/// What it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Area {
    area: u32,
}

request_method!(
    /// A vendor request the server sends and the client serves, typed both ways.
    Measure = "com.example/measure", Dimensions => Area
);

request_method!(
    /// The same method with params of any shape: what a server may send that the client's
    /// handler type does not accept.
    MeasureAnyhow = "com.example/measure"
);

request_method!(
    /// A vendor request whose client handler answers any JSON (`com.example/guess`).
    GuessLoosely = "com.example/guess", Dimensions => Value
);

request_method!(
    /// The same method as the server expects its answer: an [`Area`].
    Guess = "com.example/guess", Dimensions => Area
);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct TickParams {
    seq: u32,
}

notification_method!(
    /// A vendor notification, typed.
    Tick = "com.example/tick", TickParams
);

notification_method!(
    /// The same notification with params of any shape.
    TickAnyhow = "com.example/tick"
);

/// A handler's view of a request it made, as JSON.
fn outcome<T: Serialize>(result: Result<T, modelctx::session::SessionError>) -> Value {
    match result {
        Ok(value) => json!({"ok": value}),
        Err(e) => json!({
            "code": e.protocol_error().map(|p| p.code.0),
            "invalid_result": e.is_invalid_result(),
        }),
    }
}

async fn a_raw_handler_serves_beside_the_registered_tools(connector: Connector) {
    let add = text_tool("add", "added");
    let server = Server::builder("mixed", "1.0.0")
        .tool(add)
        .unwrap()
        .request_handler::<Echo, _, _>(|params: Value, cx: Context| async move {
            // The raw handler gets the same context a tool gets.
            assert!(!cx.is_cancelled());
            Ok(json!({"echoed": payload(params)}))
        })
        .build();
    let pair = connect(&connector, &server, client()).await;

    // The registered tool is listed and called as usual...
    let tools = pair.client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["add"]
    );
    let added = pair.client.call_tool("add", JsonObject::new()).await;
    assert_eq!(added.unwrap().content[0].as_text(), Some("added"));
    // ...and the method no registry wires is served by the raw handler.
    let echoed = pair
        .client
        .request::<Echo>(json!({"word": "hi"}))
        .await
        .expect("the raw handler answers");
    assert_eq!(payload(echoed), json!({"echoed": {"word": "hi"}}));
}

async fn a_vendor_request_from_the_server_is_served_by_the_clients_handler(connector: Connector) {
    // The tool asks the client three vendor questions: a well-formed one, one whose
    // params the client's handler type refuses, and one whose answer the server's
    // result type refuses.
    let server = Server::builder("asker", "1.0.0")
        .tool(work_tool("ask", |_: Value, cx: Context| async move {
            let dims = Dimensions {
                width: 3,
                height: 4,
            };
            json!({
                "typed": outcome(cx.request::<Measure>(dims.clone()).await),
                "misfit": outcome(cx.request::<MeasureAnyhow>(json!({"width": "wide"})).await),
                "bad_answer": outcome(cx.request::<Guess>(dims).await),
            })
        }))
        .unwrap()
        .build();
    let (served_tx, mut served) = mpsc::unbounded_channel();
    let builder = client()
        .request_handler::<Measure, _, _>(move |dims: Dimensions, _cx: CallbackContext| {
            let served = served_tx.clone();
            async move {
                let _ = served.send(dims.clone());
                Ok(Area {
                    area: dims.width * dims.height,
                })
            }
        })
        .request_handler::<GuessLoosely, _, _>(|_: Dimensions, _cx: CallbackContext| async move {
            Ok(json!({"area": "about twelve"}))
        });
    let pair = connect(&connector, &server, builder).await;

    let got = call_work(&pair, "ask", json!({})).await;
    assert_eq!(got["typed"], json!({"ok": {"area": 12}}));
    assert_eq!(
        within("the handler's record", served.recv()).await,
        Some(Dimensions {
            width: 3,
            height: 4
        })
    );
    // Params that do not fit the handler's type never reach it: invalid params.
    assert_eq!(
        got["misfit"]["code"],
        json!(ErrorCode::INVALID_PARAMS.0),
        "{got}"
    );
    assert!(served.try_recv().is_err(), "the misfit reached no handler");
    // An answer that does not fit the server's result type is an invalid result.
    assert_eq!(got["bad_answer"]["invalid_result"], json!(true), "{got}");
}

async fn a_vendor_notification_reaches_the_clients_handler_typed(connector: Connector) {
    // The tool sends one notification whose params do not fit the client's type, then
    // two that do, and reports whether each send went out without refusal.
    let server = Server::builder("ticker", "1.0.0")
        .tool(work_tool("tick", |_: Value, cx: Context| async move {
            let misfit = cx.notify::<TickAnyhow>(json!({"seq": "one"})).await;
            let first = cx.notify::<Tick>(TickParams { seq: 1 }).await;
            let second = cx.notify::<Tick>(TickParams { seq: 2 }).await;
            json!({"sent": [misfit.is_ok(), first.is_ok(), second.is_ok()]})
        }))
        .unwrap()
        .build();
    let (ticks_tx, mut ticks) = mpsc::unbounded_channel();
    let builder = client().notification_handler::<Tick, _, _>(move |params: TickParams, _peer| {
        let ticks = ticks_tx.clone();
        async move {
            let _ = ticks.send(params);
        }
    });
    let pair = connect(&connector, &server, builder).await;

    let got = call_work(&pair, "tick", json!({})).await;
    assert_eq!(got["sent"], json!([true, true, true]), "no side refused");
    // Handlers run in arrival order: the misfit, sent first, was dropped before the
    // first one that fits arrived.
    let first = within("the first tick", ticks.recv()).await.unwrap();
    assert_eq!(first, TickParams { seq: 1 });
    let second = within("the second tick", ticks.recv()).await.unwrap();
    assert_eq!(second, TickParams { seq: 2 });
    assert!(ticks.try_recv().is_err(), "the misfit reached no handler");
}

async fn a_handlers_error_reaches_the_caller_as_chosen(connector: Connector) {
    let refusal = || {
        ErrorData::new(ErrorCode(4_711), "the vault is sealed").with_data(json!({"retry": false}))
    };
    let vault = ToolDef::new("open-vault", move |_: NoArgs, _cx: Context| async move {
        Err::<String, _>(ToolError::protocol(refusal()))
    });
    let server = Server::builder("vaults", "1.0.0")
        .tool(vault)
        .unwrap()
        .request_handler::<Echo, _, _>(move |_: Value, _cx: Context| async move { Err(refusal()) })
        .build();
    let pair = connect(&connector, &server, client()).await;

    // From a raw request handler...
    let raw = pair.client.request::<Echo>(json!({})).await.unwrap_err();
    // (Code, message and data: the whole error object.)
    let error = raw.protocol_error().expect("a JSON-RPC error");
    assert_eq!(error, &refusal());
    // ...and from a tool that fails the call with a protocol error.
    let call = call_tool_request(&pair.client, "open-vault")
        .await
        .unwrap_err();
    let error = call.protocol_error().expect("a JSON-RPC error");
    assert_eq!(error, &refusal());
}

async fn legacy_server_error_codes_cross_untouched(connector: Connector) {
    // A handler answers with the code the request names, with a message and data of
    // its own; -32002 (resource not found in the handshake era) is not in the range.
    let server = Server::builder("legacy", "1.0.0")
        .request_handler::<Echo, _, _>(|params: Value, _cx: Context| async move {
            let code = params["code"].as_i64().unwrap_or_default();
            Err(
                ErrorData::new(ErrorCode(code), format!("vendor failure {code}"))
                    .with_data(json!({"detail": [code, "kept"]})),
            )
        })
        .build();
    let pair = connect(&connector, &server, client()).await;
    assert!(stateless_era(&pair.client));

    for code in [-32_000, -32_001, -32_003, -32_010, -32_019] {
        let error = pair
            .client
            .request::<Echo>(json!({"code": code}))
            .await
            .unwrap_err();
        let data = error
            .protocol_error()
            .unwrap_or_else(|| panic!("{code}: a plain protocol error, got {error:?}"));
        assert_eq!(data.code, ErrorCode(code));
        assert_eq!(data.message, format!("vendor failure {code}"));
        assert_eq!(data.data, Some(json!({"detail": [code, "kept"]})));
        // No meaning is given to it: not taken for a refusal, a timeout or a
        // malformed answer.
        assert!(!error.is_refused() && !error.is_timeout() && !error.is_invalid_result());
    }
}

async fn a_tool_samples_through_its_context(connector: Connector) {
    let server = Server::builder("sampler", "1.0.0")
        .tool(work_tool("ask-model", |_: Value, cx: Context| async move {
            let params =
                CreateMessageRequestParams::new(vec![SamplingMessage::user_text("sky?")], 20);
            match cx.sample(params).await {
                Ok(result) => json!({"ok": result}),
                Err(e) => json!({"error": e.to_error_data().message}),
            }
        }))
        .unwrap()
        .build();
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let builder = client().sampling(
        SamplingSupport::new(),
        move |params: CreateMessageRequestParams, _cx: CallbackContext| {
            let seen = seen_tx.clone();
            async move {
                let _ = seen.send(params);
                Ok(CreateMessageResult::assistant_text("Blue.", "model-9")
                    .with_stop_reason(StopReason::EndTurn))
            }
        },
    );
    let pair = connect(&connector, &server, builder).await;

    let got = call_work(&pair, "ask-model", json!({})).await;
    assert_eq!(
        got["ok"],
        json!({"role": "assistant", "content": {"type": "text", "text": "Blue."},
               "model": "model-9", "stopReason": "endTurn"}),
        "{got}"
    );
    let asked = within("the sampling callback", seen.recv()).await.unwrap();
    assert_eq!(asked.messages, vec![SamplingMessage::user_text("sky?")]);
    assert_eq!(asked.max_tokens, 20);
    // It went as `sampling/createMessage` from the server.
    assert!(pair.wire.received_count("sampling/createMessage") > 0);
}

async fn an_undeclared_capability_is_refused_before_sending(connector: Connector) {
    // The server offers tools only; one tool asks the client for a sample, the other
    // for its roots, and this client declares neither.
    let server = Server::builder("tools-only", "1.0.0")
        .tool(work_tool("sample-it", |_: Value, cx: Context| async move {
            let hello = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 5);
            refusal(&cx, cx.sample(hello).await.map(|_| ()))
        }))
        .unwrap()
        .tool(work_tool("roots-it", |_: Value, cx: Context| async move {
            refusal(&cx, cx.list_roots().await.map(|_| ()))
        }))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;

    // The client's seat: the server advertised no prompts, so none are asked for.
    let refused = pair.client.list_prompts(None).await.unwrap_err();
    assert!(refused.is_refused(), "{refused:?}");
    assert!(refused.to_string().contains("prompts"), "{refused}");
    assert_eq!(
        pair.wire.sent_count("prompts/list"),
        0,
        "nothing was sent: {:?}",
        pair.wire.sent()
    );

    // The server's seat.
    for (tool, capability) in [("sample-it", "sampling"), ("roots-it", "roots")] {
        let params = CallToolRequestParams::new(tool).with_arguments(JsonObject::new());
        let answer = pair.client.request::<CallToolRequest>(params).await;
        if stateless_era(&pair.client) {
            // 2026-07-28: the request the handler needs cannot be embedded, so the
            // call fails with -32021 naming the capability the client lacks.
            let error = answer.expect_err("the call fails");
            let data = error.protocol_error().expect("a JSON-RPC error");
            assert_eq!(data.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
            let required = &data.data.as_ref().unwrap()["requiredCapabilities"];
            assert!(required.get(capability).is_some(), "{data:?}");
        } else {
            // The handshake era: the handler's request fails locally, typed as a
            // refusal naming the capability (when the server knows the client's).
            let got = payload(
                answer
                    .unwrap()
                    .structured_content
                    .expect("the tool's report"),
            );
            assert_eq!(got["refused"], json!(true), "{tool}: {got}");
            if got["knows_client"] == json!(true) {
                let message = got["message"].as_str().unwrap_or_default();
                assert!(message.contains(capability), "{tool}: {got}");
            }
        }
    }
    // Nothing asked the client: no request from the server, no input requested.
    for message in pair.wire.received() {
        assert_ne!(message.method(), Some("sampling/createMessage"));
        assert_ne!(message.method(), Some("roots/list"));
        let text = serde_json::to_string(&message).unwrap();
        assert!(!text.contains("input_required"), "{text}");
    }
}

/// A handler's report of a request to the client it expected to be refused.
fn refusal(cx: &Context, outcome: Result<(), modelctx::server::ClientRequestError>) -> Value {
    json!({
        "refused": outcome.as_ref().is_err_and(|e| e.is_refused()),
        "knows_client": cx.client_capabilities().is_some(),
        "message": outcome.err().map(|e| e.to_error_data().message),
    })
}

/// Tries a log message from a task of its own when dropped (as a cancelled handler's
/// future is), and reports whether it was sent.
struct LastWords {
    cx: Context,
    sent: mpsc::UnboundedSender<bool>,
}

impl Drop for LastWords {
    fn drop(&mut self) {
        let (cx, sent) = (self.cx.clone(), self.sent.clone());
        tokio::spawn(async move {
            let outcome = cx.info("unwinding").await;
            let _ = sent.send(outcome.is_ok());
        });
    }
}

async fn a_cancelled_handler_sends_nothing_more(connector: Connector) {
    let (sent_tx, mut sent) = mpsc::unbounded_channel();
    let server = Server::builder("quiet", "1.0.0")
        .logging()
        .request_handler::<Block, _, _>(move |_: Value, cx: Context| {
            let sent = sent_tx.clone();
            async move {
                cx.info("working").await.map_err(|e| e.to_error_data())?;
                let _last_words = LastWords {
                    cx: cx.clone(),
                    sent,
                };
                // A handler that also tries while it sees the cancellation.
                cx.cancellation().cancelled().await;
                let _ = cx.info("cancelled, still talking").await;
                std::future::pending::<Result<Value, ErrorData>>().await
            }
        })
        .build();
    let (logs_tx, mut logs) = mpsc::unbounded_channel();
    let builder = client().on_log(move |message| {
        let _ = logs_tx.send(message.data);
    });
    let pair = connect(&connector, &server, builder).await;

    let call = pair
        .client
        .start_request::<Block>(json!({}), modelctx::session::RequestOptions::new())
        .unwrap();
    let canceller = call.canceller();
    let waiting = tokio::spawn(call);
    assert_eq!(
        within("the handler's first message", logs.recv()).await,
        Some(json!("working"))
    );
    canceller.cancel("enough").await;
    let _ = waiting.await;

    // The handler's future was dropped; what it tried on the way out was refused.
    let outcome = within("the last words' outcome", sent.recv()).await;
    assert_eq!(
        outcome,
        Some(false),
        "a notification about a cancelled request"
    );
    // A request answered after that attempt: anything it had sent would be here first.
    pair.client.ping().await.expect("the session goes on");
    assert!(logs.try_recv().is_err(), "nothing more reached the client");
    for message in pair.wire.received() {
        let text = serde_json::to_string(&message).unwrap();
        assert!(
            !text.contains("unwinding") && !text.contains("still talking"),
            "{text}"
        );
    }
}
