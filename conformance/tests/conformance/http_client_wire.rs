//! The streamable HTTP client transport against what a server may put on the wire: SSE
//! comment lines, a response body that breaks mid-read, error statuses without a
//! JSON-RPC answer, a standalone stream that cannot be reopened, a session known in
//! advance, and names and values that travel Base64'd in the 2026-07-28 headers.

use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::StreamExt as _;
use modelctx::client::Client;
use modelctx::http::{StreamableHttpClientTransport, StreamableHttpServerConfig};
use modelctx::server::Server;
use modelctx::transport::ConnectionState;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, JsonObject, JsonRpcMessage, Tool,
};
use modelctx_conformance::{Connector, SpecVersion, Test, conformance_test, record, within};
use serde_json::{Value, json};

use crate::http_modern::{both_eras, echo_server};
use crate::http_support::{Hosted, Note, Seen, host};
use crate::support::{Echo, client, connect_discovering, connect_mode, listing_as_given};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            sse_comment_lines_on_a_response_stream_are_skipped,
            ["client-transport:http:sse-comment-line-ignored"]
        ),
        conformance_test!(
            a_body_that_breaks_mid_read_fails_the_call_with_its_cause,
            ["client-transport:http:body-stream-error-preserved"]
        ),
        conformance_test!(
            an_error_status_without_an_answer_is_an_error_carrying_the_status,
            ["client-transport:http:error-status-code"]
        ),
        conformance_test!(
            a_standalone_stream_that_cannot_be_reopened_is_reported_as_the_connection_state,
            ["client-transport:http:reconnect-failure-onerror"]
        ),
        conformance_test!(
            a_session_id_given_up_front_goes_on_every_request,
            ["client-transport:http:session-id-preconfigured"]
        ),
        conformance_test!(
            a_tool_name_that_is_not_header_safe_travels_base64d_in_mcp_name,
            ["client-transport:http:mcp-name-base64-sentinel"]
        ),
        conformance_test!(
            an_argument_that_looks_like_the_sentinel_is_base64d_in_its_header,
            ["client-transport:http:custom-param-headers:sentinel-collision-escaped"]
        ),
    ]
}

/// How the hand-played endpoint answers a request after the opening one.
type Answer = Arc<dyn Fn(&Value) -> Response + Send + Sync>;

/// An endpoint played by hand, for either era: it opens the connection itself
/// (`initialize` with a session, or `server/discover`), takes notifications with 202,
/// refuses GET with 405, and answers every other request with `answer`. Returns its URL.
async fn played(answer: Answer) -> String {
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::any(move |request: axum::extract::Request| {
            let answer = answer.clone();
            async move {
                if request.method() != http::Method::POST {
                    return status(http::StatusCode::METHOD_NOT_ALLOWED);
                }
                let body = axum::body::to_bytes(request.into_body(), 1 << 20)
                    .await
                    .unwrap_or_default();
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if message.get("id").is_none() {
                    return status(http::StatusCode::ACCEPTED);
                }
                match message["method"].as_str() {
                    Some("initialize") => {
                        let mut r = json_answer(&message, opening_result(false));
                        r.headers_mut()
                            .insert("mcp-session-id", http::HeaderValue::from_static("played-1"));
                        r
                    }
                    Some("server/discover") => json_answer(&message, opening_result(true)),
                    _ => answer(&message),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The opening result: `initialize`'s, or (2026-07-28) `server/discover`'s.
fn opening_result(era_2026: bool) -> Value {
    if era_2026 {
        json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {}, "ttlMs": 0, "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "played", "version": "1"}}
        })
    } else {
        json!({
            "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "played", "version": "1"}
        })
    }
}

/// A result for `request` in its era (2026-07-28 results say they are complete).
fn result_for(request: &Value, mut result: Value) -> Value {
    if request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string() {
        result["resultType"] = json!("complete");
    }
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
}

fn json_answer(request: &Value, result: Value) -> Response {
    let body = result_for(request, result).to_string();
    let mut r = Response::new(Body::from(body));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn status(status: http::StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

fn sse(body: Body) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    r
}

/// A client of the cell's era connected to `url`, with its recorded wire.
async fn connect_to(
    url: &str,
    version: SpecVersion,
    builder: modelctx::client::ClientBuilder,
) -> (Client, modelctx_conformance::Recording) {
    let transport = StreamableHttpClientTransport::new(url).unwrap();
    let (transport, wire) = record(modelctx::transport::boxed(transport));
    let client = within(
        "the client to connect",
        builder.mode(connect_mode(version)).connect(transport),
    )
    .await
    .expect("the client connects");
    (client, wire)
}

async fn sse_comment_lines_on_a_response_stream_are_skipped(connect: Connector) {
    let answer: Answer = Arc::new(|request| {
        let response = result_for(request, request["params"].clone());
        sse(Body::from(format!(
            ":\n\n: keep-alive\n\nevent: message\n: a comment inside the event\ndata: {response}\n\n: trailing\n\n"
        )))
    });
    let url = played(answer).await;
    let (client, wire) = connect_to(&url, connect.version(), client()).await;
    for n in 1..=2 {
        let echoed = within("the echo", client.request::<Echo>(json!({"n": n})))
            .await
            .expect("the request completes");
        assert_eq!(echoed["n"], n);
    }
    // Nothing but the answers came in: the comments were no messages.
    let received = wire.received();
    let answers = received
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Response(_)))
        .count();
    assert_eq!(received.len(), answers, "{received:?}");
    assert_eq!(
        answers, 3,
        "the opening result and two echoes: {received:?}"
    );
}

async fn a_body_that_breaks_mid_read_fails_the_call_with_its_cause(connect: Connector) {
    // The stream opens with a notification; once the client has it, the server's side
    // of the stream fails: the connection is cut before the response, and no event id
    // was given to resume from.
    let heard = Arc::new(tokio::sync::Notify::new());
    let cut = heard.clone();
    let answer: Answer = Arc::new(move |_| {
        let cut = cut.clone();
        let note = json!({"jsonrpc": "2.0", "method": "test/note", "params": {}});
        let first = Bytes::from(format!("event: message\ndata: {note}\n\n"));
        let opened = futures::stream::once(async move { Ok(first) });
        let failed = futures::stream::once(async move {
            cut.notified().await;
            Err(std::io::Error::other("the upstream went away"))
        });
        sse(Body::from_stream(opened.chain(failed)))
    });
    let client = client().notification_handler::<Note, _, _>(move |_, _| {
        heard.notify_one();
        async {}
    });
    let url = played(answer).await;
    let (client, _) = connect_to(&url, connect.version(), client).await;
    let err = within("the call to fail", client.request::<Echo>(json!({})))
        .await
        .expect_err("the body broke before the response");
    assert!(err.is_interrupted(), "{err:?}");
    let error = err.protocol_error().expect("the transport's error");
    // What broke the body is kept, by kind and with its causes, not only in words.
    let cause = &error.data.as_ref().expect("error data")["cause"];
    // The connection was cut under the body: an I/O failure, and which one.
    assert_eq!(cause["kind"], "io", "{error:?}");
    assert_eq!(cause["ioKind"], "UnexpectedEof", "{error:?}");
    let message = cause["message"].as_str().expect("the cause's message");
    assert!(!message.is_empty(), "{error:?}");
    assert!(error.message.contains(message), "{error:?}");
}

async fn an_error_status_without_an_answer_is_an_error_carrying_the_status(connect: Connector) {
    let era_2026 = connect.version() == SpecVersion::V2026_07_28;
    let refusal = Arc::new(AtomicU16::new(0));
    let refuse = refusal.clone();
    let answer: Answer = Arc::new(move |request| match refuse.load(Ordering::SeqCst) {
        0 => json_answer(request, request["params"].clone()),
        code => status(http::StatusCode::from_u16(code).unwrap()),
    });
    let url = played(answer).await;
    let (client, _) = connect_to(&url, connect.version(), client()).await;
    assert!(client.request::<Echo>(json!({})).await.is_ok());
    // 404 on a session is the session's end (the client starts a new one), so it is
    // the stateless era's status here; 401 and 403 without an auth hook, and a 5xx,
    // in both.
    let statuses: &[u16] = if era_2026 {
        &[401, 403, 404, 503]
    } else {
        &[401, 403, 503]
    };
    for &code in statuses {
        refusal.store(code, Ordering::SeqCst);
        let err = within("the refused call", client.request::<Echo>(json!({})))
            .await
            .expect_err("refused");
        let error = err.protocol_error().expect("the transport's error");
        assert_eq!(modelctx::http::http_status(error), Some(code), "{error:?}");
    }
    // A server's own JSON-RPC error carries no status of the transport's.
    refusal.store(0, Ordering::SeqCst);
    assert!(client.request::<Echo>(json!({})).await.is_ok());
}

async fn a_standalone_stream_that_cannot_be_reopened_is_reported_as_the_connection_state(
    _: Connector,
) {
    // A server whose GET stream can be cut and then refused.
    let refuse_get = Arc::new(AtomicBool::new(false));
    let controls: Arc<Mutex<Vec<modelctx::http::StreamControl>>> = Arc::default();
    // A short `retry`, so the client's reopening attempts follow each other quickly.
    let config =
        StreamableHttpServerConfig::default().retry_interval(std::time::Duration::from_millis(20));
    let service = modelctx::http::StreamableHttpService::with_config(config, {
        let server = echo_server();
        let controls = controls.clone();
        move |transport| {
            controls.lock().unwrap().push(transport.stream_control());
            server.serve(transport);
        }
    });
    // How many GETs were answered, and how many of them opened a stream.
    let (gets, mut answered_gets) = tokio::sync::watch::channel((0usize, 0usize));
    let gets = Arc::new(gets);
    let refusing = refuse_get.clone();
    let app = service.router().layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let (refusing, gets) = (refusing.clone(), gets.clone());
            async move {
                if request.method() != http::Method::GET {
                    return next.run(request).await;
                }
                let response = if refusing.load(Ordering::SeqCst) {
                    status(http::StatusCode::SERVICE_UNAVAILABLE)
                } else {
                    next.run(request).await
                };
                let opened = response.status().is_success();
                gets.send_modify(|(all, open)| {
                    *all += 1;
                    *open += usize::from(opened);
                });
                response
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let transport = StreamableHttpClientTransport::builder(&url)
        .reconnect(std::time::Duration::from_millis(20), 2)
        .build()
        .unwrap();
    let handle = transport.handle();
    let mut state = handle.connection_state();
    let legacy = within("the client to connect", client().connect(transport))
        .await
        .unwrap();
    legacy.request::<Echo>(json!({"k": 1})).await.unwrap();
    within(
        "the GET stream to open",
        answered_gets.wait_for(|(_, open)| *open >= 1),
    )
    .await
    .unwrap();
    // Every reopening is refused from now on, and the stream is cut.
    refuse_get.store(true, Ordering::SeqCst);
    let cut = controls
        .lock()
        .unwrap()
        .iter()
        .any(|c| c.close_standalone_stream());
    assert!(cut, "the session's GET stream was open");
    let failed = within(
        "the failure to be reported",
        state.wait_for(|s| matches!(s, ConnectionState::Failed(_))),
    )
    .await
    .expect("the transport is alive")
    .clone();
    let ConnectionState::Failed(reason) = failed else {
        unreachable!("waited for Failed")
    };
    assert!(reason.contains("standalone"), "{reason}");
    let (all, open) = *answered_gets.borrow();
    assert!(
        all - open >= 3,
        "it tried to reopen: {all} GETs, {open} opened"
    );
    // Nothing of it is thrown at a request: the next one is answered.
    let answer = within("a request after", legacy.request::<Echo>(json!({"k": 2})))
        .await
        .expect("an unrelated request is unaffected");
    assert_eq!(answer["k"], 2);
    legacy.close().await;
}

async fn a_session_id_given_up_front_goes_on_every_request(_: Connector) {
    let hosted = both_eras(echo_server()).await;
    // A session the server opened ahead of time (handed to the client out of band).
    let session = hosted
        .service
        .open_session()
        .expect("a session to attach to");
    let transport = StreamableHttpClientTransport::builder(&hosted.url)
        .session(session.clone())
        .standalone_stream(false)
        .build()
        .unwrap();
    let handle = transport.handle();
    let attached = within("the client to connect", client().connect(transport))
        .await
        .unwrap();
    attached.request::<Echo>(json!({"k": 1})).await.unwrap();
    attached.close().await;
    let seen = hosted.seen();
    assert!(seen.len() >= 3, "{seen:?}");
    for request in &seen {
        assert_eq!(
            request.header("mcp-session-id"),
            Some(session.as_str()),
            "from the first request on: {seen:?}"
        );
    }
    assert_eq!(handle.session_id().as_deref(), Some(session.as_str()));
}

/// A server with two tools, `café` (a name that cannot travel plain in a header) and
/// `labeled` (whose `label` argument is mirrored into `Mcp-Param-Label`), each answering
/// with its arguments. Served by request handlers: a `ToolDef` name is held to the
/// header-safe characters.
fn unicode_tool_server() -> Server {
    let schema = |value: Value| match value {
        Value::Object(schema) => schema,
        _ => unreachable!("an object literal"),
    };
    let tools = vec![
        Tool::new("café", schema(json!({"type": "object"}))),
        Tool::new(
            "labeled",
            schema(json!({"type": "object", "properties": {
                "label": {"type": "string", "x-mcp-header": "Label"}
            }})),
        ),
    ];
    listing_as_given("unicode", tools)
        .request_handler::<CallToolRequest, _, _>(|params, _| async move {
            Ok(CallToolResult::structured(
                params.arguments.unwrap_or_default(),
            ))
        })
        .build()
}

fn base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

async fn modern_client(
    hosted: &crate::http_support::Hosted,
) -> (Client, modelctx_conformance::Recording) {
    let (transport, _) = hosted.transport();
    connect_discovering(modelctx::transport::boxed(transport), client()).await
}

/// The POST that carried the `tools/call`.
fn the_call_post(hosted: &Hosted) -> Seen {
    hosted
        .posts_of("tools/call")
        .into_iter()
        .next()
        .expect("the call's POST")
}

async fn a_tool_name_that_is_not_header_safe_travels_base64d_in_mcp_name(_: Connector) {
    let hosted = host(unicode_tool_server(), StreamableHttpServerConfig::default()).await;
    let (modern, wire) = modern_client(&hosted).await;
    modern.list_all_tools().await.unwrap();
    let result = within("the call", modern.call_tool("café", JsonObject::new()))
        .await
        .expect("the round trip completes");
    assert!(result.is_error != Some(true), "{result:?}");
    let post = the_call_post(&hosted);
    assert_eq!(
        post.header("mcp-name"),
        Some(format!("=?base64?{}?=", base64("café")).as_str())
    );
    // The body keeps the name as it is.
    let call = wire.first_sent("tools/call").unwrap();
    assert_eq!(
        serde_json::to_value(&call).unwrap()["params"]["name"],
        "café"
    );
}

async fn an_argument_that_looks_like_the_sentinel_is_base64d_in_its_header(_: Connector) {
    let hosted = host(unicode_tool_server(), StreamableHttpServerConfig::default()).await;
    let (modern, wire) = modern_client(&hosted).await;
    modern.list_all_tools().await.unwrap();
    // Plain ASCII, but in the sentinel's shape: sent plain, a server would decode it.
    let literal = "=?base64?aGVsbG8=?=";
    let params = CallToolRequestParams::new("labeled")
        .with_arguments(json!({"label": literal}).as_object().unwrap().clone());
    let result = within("the call", modern.request::<CallToolRequest>(params))
        .await
        .expect("the server takes the header as the body's value");
    assert_eq!(
        result.structured_content.expect("the echoed arguments")["label"],
        literal
    );
    let post = the_call_post(&hosted);
    assert_eq!(
        post.header("mcp-param-label"),
        Some(format!("=?base64?{}?=", base64(literal)).as_str())
    );
    let call = wire.first_sent("tools/call").unwrap();
    assert_eq!(
        serde_json::to_value(&call).unwrap()["params"]["arguments"]["label"],
        literal
    );
}
