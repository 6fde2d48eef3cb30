//! Protocol primitives: request ids, cancellation, timeouts, progress, errors, `_meta`.

use std::collections::HashSet;
use std::sync::Arc;

use modelctx::server::Server;
use modelctx::session::RequestOptions;
use modelctx::transport::{MessageSink, TransportMessage};
use modelctx::types::{
    CallToolRequest, CallToolResult, ErrorCode, JsonRpcMessage, JsonRpcResultResponse, Meta,
    RequestId, to_raw,
};
use modelctx_conformance::{
    Connector, SpecVersion, Test, assert_next_change, conformance_test, within,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Echo, Script, Work, assert_echoes, cancel_strays, client, connect, meta_echo_server,
    next_change, payload, ping_then_first, text_tool,
};
use crate::tools::error_code;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            request_ids_are_unique_and_never_null,
            ["protocol:request-id:unique"]
        ),
        conformance_test!(
            notifications_are_never_answered,
            ["protocol:notifications:no-response"]
        ),
        conformance_test!(
            an_error_without_id_reaches_the_client,
            ["protocol:error:null-id"]
        ),
        conformance_test!(
            an_error_without_id_reaches_the_server,
            ["protocol:error:null-id"]
        ),
        conformance_test!(
            a_panicking_handler_answers_internal_error,
            ["protocol:error:internal-error"]
        ),
        conformance_test!(
            malformed_params_answer_invalid_params,
            ["protocol:error:invalid-params"]
        ),
        conformance_test!(
            an_unknown_method_answers_method_not_found,
            ["protocol:error:method-not-found"]
        ),
        conformance_test!(
            request_meta_reaches_the_handler,
            ["meta:request-to-handler"]
        ),
        conformance_test!(result_meta_reaches_the_client, ["meta:result-to-client"]),
        conformance_test!(
            a_caller_chosen_id_names_its_request_and_its_subscription,
            ["protocol:request-id:caller-supplied"]
        ),
    ]
}

/// `tools/call` with params of any shape, to send what the typed request cannot.
struct UntypedToolCall;
impl modelctx::types::RequestMethod for UntypedToolCall {
    const METHOD: &'static str = "tools/call";
    type Params = Value;
    type Result = Value;
}

/// A method no server here implements.
struct NoSuchMethod;
impl modelctx::types::RequestMethod for NoSuchMethod {
    const METHOD: &'static str = "no/such/method";
    type Params = Value;
    type Result = Value;
}

async fn request_ids_are_unique_and_never_null(connector: Connector) {
    let server = Server::builder("echo", "1.0.0")
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(payload(params)) })
        .build();
    let pair = connect(&connector, &server, client()).await;
    let calls = (0..20).map(|i| pair.client.request::<Echo>(json!({"v": i})));
    let results = futures::future::join_all(calls).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(payload(r.unwrap()), json!({"v": i}));
    }
    // Every request of the connection (the handshake's too, in an era that has one).
    let requests: Vec<(String, RequestId)> = pair
        .wire
        .sent()
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Request(r) => Some((r.method.to_string(), r.id.clone())),
            _ => None,
        })
        .collect();
    let calls = requests.iter().filter(|(m, _)| m == "test/echo").count();
    assert_eq!(calls, 20, "{requests:?}");
    let ids: Vec<&RequestId> = requests.iter().map(|(_, id)| id).collect();
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "ids are never reused: {ids:?}");
}

async fn notifications_are_never_answered(connector: Connector) {
    let server = Server::builder("quiet", "1.0.0")
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(payload(params)) })
        .build();
    let pair = connect(&connector, &server, client()).await;
    // The notification both eras let a client send outside a request: cancellations,
    // here naming nothing pending.
    cancel_strays(&pair, [json!(4242), json!(4343)]).await;
    // A request sent after them: its answer proves the server read past them.
    pair.client
        .request::<Echo>(json!({"after": true}))
        .await
        .unwrap();
    // Everything the server sent answers one of our requests; nothing has no match.
    let sent_ids: HashSet<RequestId> = pair
        .wire
        .sent()
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        })
        .collect();
    for m in pair.wire.received() {
        match &m {
            JsonRpcMessage::Response(r) => assert!(sent_ids.contains(&r.id), "{m:?}"),
            JsonRpcMessage::Error(e) => {
                panic!("an error reached the client after notifications: {e:?}")
            }
            JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) => {}
        }
    }
    assert_eq!(
        pair.wire.received().len(),
        sent_ids.len(),
        "one answer per request, nothing else"
    );
}

/// The error a peer sends when it cannot attribute a failure to a request: `"id": null`
/// (a parse error).
fn unattributed_error() -> JsonRpcMessage {
    let text = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: what you sent last"}}"#;
    JsonRpcMessage::from_slice(text.as_bytes()).expect("an error with a null id parses")
}

/// A server played by hand reports an error it cannot attribute (on the stream of the
/// request it was serving), then answers the request: the client hands the error to
/// `on_error` and the call still gets its own answer.
async fn an_error_without_id_reaches_the_client(connector: Connector) {
    let script: Script = Arc::new(|request: modelctx::types::JsonRpcRequest| {
        let result = match request.method.as_ref() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "blunt", "version": "1"}
            }),
            "server/discover" => json!({
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "supportedVersions": ["2026-07-28"], "capabilities": {},
                "_meta": {Meta::SERVER_INFO: {"name": "blunt", "version": "1"}}
            }),
            _ => json!({"resultType": "complete", "answered": request.method.as_ref()}),
        };
        let mut messages = Vec::new();
        if request.method == <Echo as modelctx::types::RequestMethod>::METHOD {
            messages.push(unattributed_error());
        }
        let response = JsonRpcResultResponse::new(request.id, to_raw(&result).unwrap());
        messages.push(response.into());
        Box::pin(async move { (messages, None) }) as futures::future::BoxFuture<'static, _>
    });
    let transport = crate::support::raw_server(&connector, script).await;
    let (errors_tx, mut errors) = mpsc::unbounded_channel();
    let builder = client().on_error(move |error, _peer| {
        let _ = errors_tx.send(error);
    });
    // A hand-played server has no era of its own: the client speaks the cell's.
    let builder = if connector.version() == SpecVersion::V2026_07_28 {
        builder.mode(modelctx::client::ConnectMode::Discover)
    } else {
        builder
    };
    let client = within("the client to connect", builder.connect(transport))
        .await
        .expect("the client connects");

    let answer = within("the call", client.request::<Echo>(json!({})))
        .await
        .expect("the call gets its own answer");
    assert_eq!(payload(answer), json!({"answered": "test/echo"}));
    let error = within("the error to reach the application", errors.recv())
        .await
        .expect("the callback is alive");
    assert_eq!(error.code, ErrorCode::PARSE_ERROR);
    assert_eq!(error.message, "Parse error: what you sent last");
    assert!(errors.try_recv().is_err(), "one error, reported once");
}

/// A client reports an error it cannot attribute: the server hands it to
/// `on_error`, answers nothing, and serves on.
async fn an_error_without_id_reaches_the_server(connector: Connector) {
    let (errors_tx, mut errors) = mpsc::unbounded_channel();
    let server = Server::builder("listener", "1.0.0")
        .on_error(move |error, _peer| {
            let _ = errors_tx.send(error);
        })
        .build();
    if connector.version() == SpecVersion::V2026_07_28 && !connector.cell().has_transport_pair() {
        // Streamable HTTP in 2026-07-28: a client sends only requests, so the endpoint
        // refuses any response (this one included) before a session exists; there is
        // nothing for the server's application to hear.
        let hosted = crate::http_support::host(server, Default::default()).await;
        let raw = crate::http_support::Raw::new(&hosted.url);
        let body: Value = serde_json::to_value(unattributed_error()).unwrap();
        let refused = crate::http_support::send(raw.post_as(None, Some("2026-07-28"), &body)).await;
        assert_eq!(refused.status, 400, "{refused:?}");
        assert_eq!(
            refused.json()["error"]["code"],
            json!(-32600),
            "{refused:?}"
        );
        return;
    }
    let (sink, mut stream) = if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        let _session = server.serve(server_side);
        client_side
    } else {
        // Stateless HTTP: each POST is a session of its own, served by the same server.
        connector
            .serve_stateless_http(move |transport| {
                server.serve(transport);
            })
            .await
    };
    sink.send(TransportMessage::new(unattributed_error()))
        .await
        .expect("the transport carries it");
    let error = within("the error to reach the application", errors.recv())
        .await
        .expect("the callback is alive");
    assert_eq!(error.code, ErrorCode::PARSE_ERROR);
    assert_eq!(error.message, "Parse error: what you sent last");
    // A ping sent after it is answered, and its answer is the first thing the server
    // sends: nothing answered the error.
    let first = ping_then_first(&sink, &mut stream, "the ping's answer").await;
    let JsonRpcMessage::Response(pong) = first else {
        panic!("expected the ping's answer first, got {first:?}");
    };
    assert_eq!(pong.id, RequestId::Number(1));
    assert!(errors.try_recv().is_err(), "one error, reported once");
}

async fn a_panicking_handler_answers_internal_error(connector: Connector) {
    let server = Server::builder("fragile", "1.0.0")
        .request_handler::<Work, _, _>(|params, _| async move {
            if payload(params.clone()) == json!({"v": "explode"}) {
                panic!("secret internal detail");
            }
            Ok(payload(params))
        })
        .build();
    let pair = connect(&connector, &server, client()).await;
    let err = pair
        .client
        .request::<Work>(json!({"v": "explode"}))
        .await
        .unwrap_err();
    let err = err.protocol_error().expect("a JSON-RPC error");
    assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
    assert!(!err.message.contains("secret"), "{err:?}");
    assert_echoes::<Work>(&pair.client, json!({"v": "fine"})).await;
}

async fn malformed_params_answer_invalid_params(connector: Connector) {
    let server = Server::builder("typed", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|params, _| async move {
            Ok(CallToolResult::text(params.name))
        })
        .build();
    let pair = connect(&connector, &server, client()).await;
    // The name a string still (over HTTP in 2026-07-28 it is mirrored in a header).
    let bad = json!({"name": "echo", "arguments": "not an object"});
    let err = pair
        .client
        .request::<UntypedToolCall>(bad)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), ErrorCode::INVALID_PARAMS);
}

async fn an_unknown_method_answers_method_not_found(connector: Connector) {
    let pair = connect(
        &connector,
        &Server::builder("small", "1.0.0").build(),
        client(),
    )
    .await;
    let err = pair
        .client
        .request::<NoSuchMethod>(json!({}))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), ErrorCode::METHOD_NOT_FOUND);
}

async fn request_meta_reaches_the_handler(connector: Connector) {
    let pair = connect(&connector, &meta_echo_server(), client()).await;
    let mut meta = Meta::new();
    meta.insert("example.com/trace", json!({"span": "abc", "depth": [1, 2]}));
    let seen = pair
        .client
        .request_with::<Echo>(json!({}), RequestOptions::new().meta(meta))
        .await
        .unwrap();
    assert_eq!(
        seen,
        json!({"example.com/trace": {"span": "abc", "depth": [1, 2]}})
    );
}

async fn result_meta_reaches_the_client(connector: Connector) {
    let server = Server::builder("meta", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|_, _| async move {
            let mut meta = Meta::new();
            meta.insert("example.com/cost", json!({"tokens": 12}));
            let mut result = CallToolResult::text("done");
            result.meta = Some(meta);
            Ok(result)
        })
        .build();
    let pair = connect(&connector, &server, client()).await;
    let result = pair
        .client
        .request::<CallToolRequest>(modelctx::types::CallToolRequestParams::new("any"))
        .await
        .unwrap();
    let meta = result.meta.expect("result _meta");
    assert_eq!(meta.get("example.com/cost"), Some(&json!({"tokens": 12})));
}

async fn a_caller_chosen_id_names_its_request_and_its_subscription(connector: Connector) {
    use modelctx::server::{NoArgs, PromptDef};
    use modelctx::types::{
        CallToolRequest, CallToolRequestParams, JsonRpcMessage, Meta, RequestId,
        ServerNotification, SubscriptionFilter,
    };

    let whoami =
        crate::support::work_tool(
            "whoami",
            |_, cx| async move { json!({ "id": cx.request_id() }) },
        );
    let prompt = |name: &str| {
        PromptDef::new(
            name,
            |_: NoArgs, _cx: modelctx::server::Context| async move { Ok::<_, String>("p".to_owned()) },
        )
    };
    let server = Server::builder("ids", "1.0.0")
        .tool(whoami)
        .unwrap()
        .prompt(prompt("first"))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;

    // The caller's id is the request's: known before anything is sent, and what the
    // server sees.
    let params = CallToolRequestParams::new("whoami");
    let handle = pair
        .client
        .start_request::<CallToolRequest>(params, RequestOptions::new().id("call-7"))
        .unwrap();
    assert_eq!(handle.id(), Some(RequestId::from("call-7")));
    let result = within("whoami", handle).await.unwrap();
    assert_eq!(result.structured_content.unwrap()["id"], json!("call-7"));

    // Two subscriptions under ids of the caller's, a string and a number.
    let tools = SubscriptionFilter::new().with_tools_list_changed(true);
    let prompts = SubscriptionFilter::new().with_prompts_list_changed(true);
    let mut watch_tools = within(
        "the tools subscription",
        pair.client
            .subscribe_with(tools.clone(), RequestOptions::new().id("watch-tools")),
    )
    .await
    .unwrap();
    let mut watch_prompts = within(
        "the prompts subscription",
        pair.client
            .subscribe_with(prompts, RequestOptions::new().id(1_000_000)),
    )
    .await
    .unwrap();
    assert_eq!(watch_tools.id(), &RequestId::from("watch-tools"));
    assert_eq!(watch_prompts.id(), &RequestId::Number(1_000_000));
    let listens: Vec<RequestId> = pair
        .wire
        .sent()
        .into_iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Request(r) if r.method == "subscriptions/listen" => Some(r.id),
            _ => None,
        })
        .collect();
    assert_eq!(
        listens,
        vec![RequestId::from("watch-tools"), RequestId::Number(1_000_000)]
    );

    // An id in flight is refused locally: nothing goes out.
    let before = pair.wire.sent().len();
    let err = pair
        .client
        .subscribe_with(tools, RequestOptions::new().id("watch-tools"))
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err:?}");
    assert_eq!(pair.wire.sent().len(), before);

    // Each change reaches the subscription whose id it is tagged with, and only it: a
    // tools change, a prompts change, another tools change.
    server.add_tool(text_tool("added", "x")).unwrap();
    assert_next_change!(
        "the tools change",
        watch_tools.next(),
        ServerNotification::ToolListChanged(_)
    );
    server.add_prompt(prompt("second")).unwrap();
    assert_next_change!(
        "the prompts change",
        watch_prompts.next(),
        ServerNotification::PromptListChanged(_)
    );
    server.add_tool(text_tool("again", "x")).unwrap();
    let change = next_change("the next tools change", watch_tools.next()).await;
    assert!(
        matches!(change, ServerNotification::ToolListChanged(_)),
        "the prompts change went to its own subscription only: {change:?}"
    );
    // On the wire, each change named its subscription by exactly the caller's id.
    for message in pair.wire.received() {
        let JsonRpcMessage::Notification(n) = message else {
            continue;
        };
        let params: Value = serde_json::from_str(n.params.as_deref().unwrap().get()).unwrap();
        let tag = &params["_meta"][Meta::SUBSCRIPTION_ID];
        match n.method.as_ref() {
            "notifications/tools/list_changed" => assert_eq!(tag, &json!("watch-tools")),
            "notifications/prompts/list_changed" => assert_eq!(tag, &json!(1_000_000)),
            _ => {}
        }
    }
}
