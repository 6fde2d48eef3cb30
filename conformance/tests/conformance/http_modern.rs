//! Streamable HTTP in the 2026-07-28 era: the server's rules for a stateless request
//! (no session, headers that mirror the body, the status table) and what the client
//! puts on every POST. One endpoint serves both eras; these tests speak the new one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::http::StreamableHttpServerConfig;
use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::types::{CallToolResult, ErrorCode, ErrorData, JsonObject, JsonRpcMessage, Tool};
use modelctx_conformance::{Connector, Test, conformance_test, record, within};
use serde_json::{Value, json};

use crate::http_support::{ACCEPT_BOTH, Hosted, Raw, RawResponse, call, host, send};
use crate::support::{
    Echo, client, connect_modern, pending_tool_server, server_with_tool, text_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_tool_call_needs_no_handshake_and_no_session,
            [
                "hosting:http:modern:tools-call-stateless",
                "hosting:http:modern:no-session-id"
            ]
        ),
        conformance_test!(
            initialize_and_the_other_removed_methods_are_404,
            [
                "hosting:http:modern:initialize-removed",
                "hosting:http:modern:removed-method-status-404"
            ]
        ),
        conformance_test!(
            the_same_endpoint_still_serves_the_handshake_era,
            ["hosting:http:modern:legacy-fallthrough"]
        ),
        conformance_test!(
            a_panicking_handler_is_a_generic_internal_error,
            ["hosting:http:modern:handler-exception-internal-error"]
        ),
        conformance_test!(
            discover_answers_versions_capabilities_and_server_info,
            ["hosting:http:modern:discover-response-shape"]
        ),
        conformance_test!(
            an_envelope_without_a_required_key_is_400,
            ["hosting:http:modern:envelope-missing-key-status-400"]
        ),
        conformance_test!(
            a_handlers_error_keeps_its_data_and_takes_the_tables_status,
            ["hosting:http:modern:handler-error-status-via-table"]
        ),
        conformance_test!(
            a_posted_notification_is_202_and_a_posted_response_400,
            ["hosting:http:modern:notification-post-202"]
        ),
        conformance_test!(
            a_posted_notification_is_acknowledged_without_an_answer
                => a_posted_notification_is_202_and_a_posted_response_400,
            ["hosting:http:modern:notification-post"]
        ),
        conformance_test!(
            the_client_mirrors_the_body_in_its_headers,
            [
                "client-transport:http:body-derived-headers",
                "lifecycle:envelope:header-matches-meta"
            ]
        ),
        conformance_test!(
            annotated_arguments_travel_as_param_headers,
            ["client-transport:http:custom-param-headers"]
        ),
        conformance_test!(
            a_header_mismatch_is_relearned_and_retried_once,
            ["client-transport:http:header-mismatch-recovery"]
        ),
        conformance_test!(
            abandoning_a_call_closes_its_stream_and_posts_nothing,
            ["client-transport:http:cancel-closes-stream"]
        ),
        conformance_test!(
            a_vendor_request_mirrors_the_param_its_type_names,
            ["client-transport:http:vendor-name-param-header"]
        ),
        conformance_test!(
            a_stray_session_id_is_never_echoed,
            ["client-transport:http:stateless-ignores-session-id"]
        ),
        conformance_test!(
            an_unreachable_server_is_an_error_not_the_handshake_era,
            ["lifecycle:discover:network-error-raises"]
        ),
    ]
}

/// An endpoint serving both eras with `server`.
pub(crate) async fn both_eras(server: Server) -> Hosted {
    host(server, StreamableHttpServerConfig::default()).await
}

/// [`both_eras`], and a raw client of it.
pub(crate) async fn raw_both_eras(server: Server) -> (Hosted, Raw) {
    let hosted = both_eras(server).await;
    let raw = Raw::new(&hosted.url);
    (hosted, raw)
}

pub(crate) fn echo_server() -> Server {
    let hello = text_tool("hello", "hi");
    Server::builder("modern", "1.0.0")
        .tool(hello)
        .unwrap()
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(params) })
        .build()
}

/// The envelope of a 2026-07-28 request.
pub(crate) fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    })
}

/// A 2026-07-28 POST of `body` with the headers its method asks for: the version,
/// `Mcp-Method`, and `Mcp-Name` when `name` is given.
pub(crate) async fn post_modern(raw: &Raw, body: &Value, name: Option<&str>) -> RawResponse {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut rb = raw
        .request(http::Method::POST)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("mcp-protocol-version", "2026-07-28");
    if !method.is_empty() {
        rb = rb.header("mcp-method", method);
    }
    if let Some(name) = name {
        rb = rb.header("mcp-name", name);
    }
    send(rb.body(body.to_string())).await
}

/// `call(id, method, params)` with the envelope in `params._meta`.
pub(crate) fn modern_call(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = envelope();
    call(id, method, params)
}

/// An `initialize` request (id 1) for `version`, in a 2026-07-28 envelope.
pub(crate) fn modern_initialize(version: &str) -> Value {
    let params = json!({"protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"}});
    modern_call(1, "initialize", params)
}

async fn a_tool_call_needs_no_handshake_and_no_session(_: Connector) {
    let (hosted, raw) = raw_both_eras(echo_server()).await;
    for id in [1, 2] {
        let body = modern_call(id, "tools/call", json!({"name": "hello", "arguments": {}}));
        let r = post_modern(&raw, &body, Some("hello")).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("mcp-session-id"), None);
        let answer = r.only_message();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["resultType"], "complete");
        assert_eq!(answer["result"]["content"][0]["text"], "hi");
    }
    assert_eq!(hosted.service.session_count(), 0, "no session was made");
}

async fn initialize_and_the_other_removed_methods_are_404(_: Connector) {
    let (hosted, raw) = raw_both_eras(echo_server()).await;
    let initialize = modern_initialize("2026-07-28");
    for body in [
        initialize,
        modern_call(2, "ping", json!({})),
        modern_call(3, "logging/setLevel", json!({"level": "info"})),
        modern_call(4, "resources/subscribe", json!({"uri": "file:///a"})),
    ] {
        let r = post_modern(&raw, &body, None).await;
        assert_eq!(r.status, 404, "{} {r:?}", body["method"]);
        let answer = r.only_message();
        assert_eq!(answer["id"], body["id"]);
        assert_eq!(answer["error"]["code"], ErrorCode::METHOD_NOT_FOUND.0);
    }
    assert_eq!(hosted.service.session_count(), 0);
}

async fn the_same_endpoint_still_serves_the_handshake_era(_: Connector) {
    let hosted = both_eras(echo_server()).await;
    // A 2025-11-25 client: the handshake, a session, its answers.
    let (transport, handle) = hosted.transport();
    let legacy = client().connect(transport).await.unwrap();
    assert_eq!(legacy.protocol_version().as_str(), "2025-11-25");
    assert!(handle.session_id().is_some());
    assert_eq!(
        legacy.request::<Echo>(json!({"k": 1})).await.unwrap(),
        json!({"k": 1})
    );
    // A session-era request naming a revision the server does not know: the handshake
    // era's refusal, with the literal other SDKs look for.
    let raw = Raw::new(&hosted.url);
    let session = handle.session_id().unwrap();
    let echo = call(9, "test/echo", json!({}));
    let r = send(raw.post_as(Some(&session), Some("2024-01-01"), &echo)).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        r.body.contains("Unsupported protocol version"),
        "{}",
        r.body
    );
    legacy.close().await;
}

async fn a_panicking_handler_is_a_generic_internal_error(_: Connector) {
    let fragile = ToolDef::new("fragile", |_: NoArgs, _cx: Context| async move {
        if true {
            panic!("secret internal detail");
        }
        Ok::<_, String>("unreachable")
    });
    let server = Server::builder("fragile", "1.0.0")
        .tool(fragile)
        .unwrap()
        .request_handler::<crate::support::Work, _, _>(|_: Value, _| async move {
            panic!("secret internal detail")
        })
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(params) })
        .build();
    let (_hosted, raw) = raw_both_eras(server).await;
    let r = post_modern(&raw, &modern_call(1, "test/work", json!({})), None).await;
    let answer = r.only_message();
    assert_eq!(
        answer["error"]["code"],
        ErrorCode::INTERNAL_ERROR.0,
        "{r:?}"
    );
    assert!(!r.body.contains("secret"), "{}", r.body);
    // A tool that panics: a JSON-RPC error too, never the panic's text.
    let body = modern_call(2, "tools/call", json!({"name": "fragile", "arguments": {}}));
    let r = post_modern(&raw, &body, Some("fragile")).await;
    assert!(!r.body.contains("secret"), "{}", r.body);
    // The endpoint goes on serving.
    let body = modern_call(3, "test/echo", json!({"still": true}));
    let r = post_modern(&raw, &body, None).await;
    assert_eq!(r.only_message()["result"]["still"], true);
}

async fn discover_answers_versions_capabilities_and_server_info(_: Connector) {
    let (_hosted, raw) = raw_both_eras(echo_server()).await;
    let r = post_modern(&raw, &modern_call(1, "server/discover", json!({})), None).await;
    assert_eq!(r.status, 200, "{r:?}");
    let result = r.only_message()["result"].clone();
    let versions = result["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert!(result.get("serverInfo").is_none(), "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "modern"
    );
}

async fn an_envelope_without_a_required_key_is_400(_: Connector) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let server = Server::builder("counted", "1.0.0")
        .request_handler::<Echo, _, _>(move |params, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move { Ok(params) }
        })
        .build();
    let (_hosted, raw) = raw_both_eras(server).await;
    let mut body = modern_call(1, "test/echo", json!({}));
    body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let r = post_modern(&raw, &body, None).await;
    assert_eq!(r.status, 400, "{r:?}");
    let answer = r.only_message();
    assert_eq!(answer["error"]["code"], ErrorCode::INVALID_PARAMS.0);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clientCapabilities"),
        "{answer}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler never ran");
}

async fn a_handlers_error_keeps_its_data_and_takes_the_tables_status(_: Connector) {
    let server = Server::builder("erring", "1.0.0")
        .request_handler::<Echo, _, _>(|params: Value, _| async move {
            let code = params["code"].as_i64().unwrap_or(-32000);
            Err::<Value, _>(
                ErrorData::new(ErrorCode(code), "refused by the handler")
                    .with_data(json!({"why": "test"})),
            )
        })
        .build();
    let (_hosted, raw) = raw_both_eras(server).await;
    // The same table as the server's own refusals: invalid params 400, method not
    // found 404, an application error 200.
    for (code, status) in [(-32602, 400), (-32601, 404), (-32000, 200)] {
        let r = post_modern(
            &raw,
            &modern_call(1, "test/echo", json!({"code": code})),
            None,
        )
        .await;
        assert_eq!(r.status, status, "{code}: {r:?}");
        let answer = r.only_message();
        assert_eq!(answer["error"]["code"], code);
        assert_eq!(answer["error"]["data"], json!({"why": "test"}));
        assert!(answer.get("result").is_none());
    }
}

async fn a_posted_notification_is_202_and_a_posted_response_400(_: Connector) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let server = Server::builder("quiet", "1.0.0")
        .notification_handler::<modelctx::types::ProgressNotification, _, _>(move |_, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            async {}
        })
        .build();
    let (_hosted, raw) = raw_both_eras(server).await;
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": 1}});
    let r = post_modern(&raw, &notification, None).await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty(), "{}", r.body);
    let response = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
    let r = post_modern(&raw, &response, None).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(
        r.only_message()["error"]["code"],
        ErrorCode::INVALID_REQUEST.0
    );
    // A request afterwards is served: nothing was dispatched for either.
    let r = post_modern(&raw, &modern_call(1, "server/discover", json!({})), None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the notification was not dispatched"
    );
}

/// The headers of every POST the client sent, in order, with the body's method.
async fn the_client_mirrors_the_body_in_its_headers(_: Connector) {
    let hosted = both_eras(echo_server()).await;
    let (transport, _) = hosted.transport();
    let (transport, wire) = record(modelctx::transport::boxed(transport));
    let modern = connect_modern(transport).await;
    modern.list_all_tools().await.unwrap();
    modern.call_tool("hello", JsonObject::new()).await.unwrap();
    modern.request::<Echo>(json!({"k": 1})).await.unwrap();
    let seen = hosted.seen();
    let requests: Vec<Value> = wire
        .sent()
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Request(_)))
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(seen.len(), requests.len(), "one POST per request");
    for (post, body) in seen.iter().zip(&requests) {
        assert_eq!(post.method, http::Method::POST);
        // The version header says what the body's envelope says.
        assert_eq!(
            post.header("mcp-protocol-version"),
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str(),
            "{body}"
        );
        assert_eq!(post.header("mcp-method"), body["method"].as_str(), "{body}");
        let name = match body["method"].as_str() {
            Some("tools/call") => body["params"]["name"].as_str(),
            _ => None,
        };
        assert_eq!(post.header("mcp-name"), name, "{body}");
    }
    assert!(seen.iter().any(|s| s.header("mcp-name") == Some("hello")));

    // A client of the handshake era puts none of them on its POSTs.
    let legacy_host = both_eras(echo_server()).await;
    let (transport, _) = legacy_host.transport();
    let legacy = client().connect(transport).await.unwrap();
    legacy.request::<Echo>(json!({"k": 2})).await.unwrap();
    legacy.close().await;
    for post in legacy_host.seen() {
        assert_eq!(post.header("mcp-method"), None, "{post:?}");
        assert_eq!(post.header("mcp-name"), None, "{post:?}");
    }
}

/// A tool whose `inputSchema` marks arguments with `x-mcp-header`, answering with the
/// `Mcp-Param-*` headers are checked by the server against the body.
pub(crate) fn regional_server() -> Server {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "shards": {"type": "integer", "x-mcp-header": "Shards"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "note": {"type": "string", "x-mcp-header": "Note"},
        "plain": {"type": "string"}
    }});
    let Value::Object(schema) = schema else {
        unreachable!("an object literal")
    };
    let regional = ToolDef::with_schema(
        Tool::new("regional", schema),
        |args: JsonObject, _cx: Context| async move {
            Ok::<_, String>(CallToolResult::text(format!(
                "ran in {}",
                args.get("region").and_then(Value::as_str).unwrap_or("?")
            )))
        },
    );
    server_with_tool("regions", regional)
}

async fn annotated_arguments_travel_as_param_headers(_: Connector) {
    let hosted = both_eras(regional_server()).await;
    let (transport, _) = hosted.transport();
    let modern = connect_modern(transport).await;
    modern.list_all_tools().await.unwrap();
    let arguments = json!({"region": "eu-west1", "shards": 12, "dry": true,
                           "note": "naïve\ncafé", "plain": "not mirrored"});
    let Value::Object(arguments) = arguments else {
        unreachable!("an object literal")
    };
    let result = modern.call_tool("regional", arguments).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("ran in eu-west1"));
    let post = hosted
        .seen()
        .into_iter()
        .find(|s| s.header("mcp-name") == Some("regional"))
        .expect("the call's POST");
    assert_eq!(post.header("mcp-param-region"), Some("eu-west1"));
    assert_eq!(post.header("mcp-param-shards"), Some("12"));
    assert_eq!(post.header("mcp-param-dry"), Some("true"));
    // Not header-safe: base64, inside the spec's sentinel.
    let note = post.header("mcp-param-note").unwrap();
    assert!(
        note.starts_with("=?base64?") && note.ends_with("?="),
        "{note}"
    );
    assert_eq!(
        post.header("mcp-param-plain"),
        None,
        "unannotated: not mirrored"
    );

    // An absent argument is left out.
    let arguments = json!({"region": "us-east1"});
    let Value::Object(arguments) = arguments else {
        unreachable!("an object literal")
    };
    modern.call_tool("regional", arguments).await.unwrap();
    let post = hosted
        .seen()
        .into_iter()
        .filter(|s| s.header("mcp-name") == Some("regional"))
        .last()
        .unwrap();
    assert_eq!(post.header("mcp-param-region"), Some("us-east1"));
    assert_eq!(post.header("mcp-param-shards"), None);
}

async fn a_header_mismatch_is_relearned_and_retried_once(_: Connector) {
    let hosted = both_eras(regional_server()).await;
    let (transport, _) = hosted.transport();
    let modern = connect_modern(transport).await;
    // Called bare, before any listing: the first POST lacks Mcp-Param-Region and is
    // refused (-32020); the client lists the tools and sends the call once more.
    let params = modelctx::types::CallToolRequestParams::new("regional")
        .with_arguments(json!({"region": "eu-west1"}).as_object().unwrap().clone());
    let result = within(
        "the call",
        modern.request::<modelctx::types::CallToolRequest>(params),
    )
    .await
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("ran in eu-west1"));
    let methods: Vec<(Option<String>, u16)> = hosted
        .seen()
        .iter()
        .map(|s| (s.header("mcp-method").map(str::to_owned), s.status.as_u16()))
        .collect();
    let calls: Vec<u16> = methods
        .iter()
        .filter(|(m, _)| m.as_deref() == Some("tools/call"))
        .map(|(_, status)| *status)
        .collect();
    assert_eq!(calls, [400, 200], "{methods:?}");
    assert!(
        methods
            .iter()
            .any(|(m, _)| m.as_deref() == Some("tools/list")),
        "{methods:?}"
    );
}

async fn an_unreachable_server_is_an_error_not_the_handshake_era(_: Connector) {
    // A port nobody listens on any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let transport = modelctx::http::StreamableHttpClientTransport::new(&url).unwrap();
    let (transport, wire) = record(modelctx::transport::boxed(transport));
    let err = within(
        "the connect to fail",
        client()
            .mode(modelctx::client::ConnectMode::Auto)
            .connect(transport),
    )
    .await
    .unwrap_err();
    // The transport's own report of the failed POST, not a server's answer.
    assert!(err.to_string().contains("HTTP request failed"), "{err:?}");
    let sent = wire.sent_methods();
    assert_eq!(sent, ["server/discover"], "no fallback to initialize");
}

async fn abandoning_a_call_closes_its_stream_and_posts_nothing(_: Connector) {
    let (server, mut stopped, mut started) = pending_tool_server("waiter", "wait");
    let hosted = both_eras(server).await;
    let (transport, _) = hosted.transport();
    let modern = connect_modern(transport).await;
    let call = tokio::spawn({
        let modern = modern.clone();
        async move {
            let params = modelctx::types::CallToolRequestParams::new("wait");
            modern
                .request::<modelctx::types::CallToolRequest>(params)
                .await
        }
    });
    within("the handler to start", started.recv()).await;
    call.abort();
    // Closing the call's own stream is the cancellation: the handler stops...
    within("the handler to stop", stopped.recv()).await;
    // ...and nothing more was POSTed for it (a notification would carry no Mcp-Method).
    modern
        .request::<Echo>(json!({"after": true}))
        .await
        .unwrap();
    let mut methods: Vec<_> = hosted
        .seen()
        .iter()
        .map(|s| s.header("mcp-method").unwrap_or("(none)").to_owned())
        .collect();
    methods.sort();
    // (The abandoned call's own POST is there unless the server saw it go before it
    // answered; either way there is no other.)
    methods.retain(|m| m != "tools/call");
    assert_eq!(methods, ["server/discover", "test/echo"]);
}

/// A misbehaving 2026-07-28 endpoint that stamps `Mcp-Session-Id` on every answer: the
/// client's wire stays POST-only and never carries the id back.
async fn a_stray_session_id_is_never_echoed(_: Connector) {
    use std::sync::Mutex;
    let service = modelctx::http::StreamableHttpService::new({
        let server = echo_server();
        move |transport| {
            server.serve_with(transport, modelctx::session::SessionConfig::server());
        }
    });
    // Each request's method and the session id it carried.
    type Seen = Vec<(http::Method, Option<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let log = seen.clone();
    let app = service.router().layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let log = log.clone();
            async move {
                let session = request
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                log.lock()
                    .unwrap()
                    .push((request.method().clone(), session));
                let mut response = next.run(request).await;
                response
                    .headers_mut()
                    .insert("mcp-session-id", http::HeaderValue::from_static("stray-1"));
                response
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let transport = modelctx::http::StreamableHttpClientTransport::new(&url).unwrap();
    let handle = transport.handle();
    let modern = connect_modern(transport).await;
    modern.list_all_tools().await.unwrap();
    modern.request::<Echo>(json!({"k": 1})).await.unwrap();
    modern.close().await;
    assert_eq!(handle.session_id(), None, "the stray id was not kept");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 3, "{seen:?}");
    for (method, session) in &seen {
        assert_eq!(
            method,
            &http::Method::POST,
            "no GET stream, no DELETE: {seen:?}"
        );
        assert_eq!(session, &None, "{seen:?}");
    }
}

/// A vendor request that names its target the way `tools/call` names its tool: its type
/// says which params key `Mcp-Name` mirrors.
struct GetWidget;
impl modelctx::types::RequestMethod for GetWidget {
    const METHOD: &'static str = "com.example/widgets/get";
    const NAME_PARAM: Option<&'static str> = Some("widgetId");
    type Params = Value;
    type Result = Value;
}

async fn a_vendor_request_mirrors_the_param_its_type_names(_: Connector) {
    let server = Server::builder("widgets", "1.0.0")
        .request_handler::<GetWidget, _, _>(|params, _| async move {
            Ok(json!({ "widget": params["widgetId"] }))
        })
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(params) })
        .build();
    let hosted = both_eras(server).await;
    let (transport, _) = hosted.transport();
    // Nothing tells the client about the method: its type alone does.
    let modern = connect_modern(transport).await;
    let answer = modern
        .request::<GetWidget>(json!({"widgetId": "w-42", "depth": 2}))
        .await
        .unwrap();
    assert_eq!(answer["widget"], "w-42");
    // A value that cannot travel plain goes Base64'd, like any Mcp-Name.
    modern
        .request::<GetWidget>(json!({"widgetId": "wïdget"}))
        .await
        .unwrap();
    let posts = hosted.posts_of("com.example/widgets/get");
    assert_eq!(posts.len(), 2, "{posts:?}");
    assert_eq!(posts[0].header("mcp-name"), Some("w-42"));
    let encoded = posts[1].header("mcp-name").expect("the mirrored name");
    assert!(encoded.starts_with("=?base64?"), "{encoded}");
    // A vendor request whose type names nothing sends no Mcp-Name.
    modern.request::<Echo>(json!({"k": 1})).await.unwrap();
    let echo = hosted
        .posts_of("test/echo")
        .into_iter()
        .next()
        .expect("the echo POST");
    assert_eq!(echo.header("mcp-name"), None);
}
