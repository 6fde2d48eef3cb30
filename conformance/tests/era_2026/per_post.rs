//! One kept session of the 2026 era serving POST after POST over HTTP: each request
//! with its own headers and envelope, nothing a handler leaves behind reaching a later
//! request, and a handshake posted with the era's headers leaving no session behind.

use modelctx::server::{Context, Server, ToolDef};
use modelctx::types::{CallToolResult, Tool};
use modelctx_test::within;
use serde_json::json;

use crate::WAIT;

/// The sessions an endpoint's factory made, in order.
type Served = std::sync::Arc<std::sync::Mutex<Vec<modelctx::server::ServerSession>>>;

/// An endpoint serving both eras with `server` under `config`, on a loopback port: its
/// URL, the service, and the sessions its factory made.
async fn recorded_endpoint(
    server: Server,
    config: modelctx::http::StreamableHttpServerConfig,
) -> (String, modelctx::http::StreamableHttpService, Served) {
    let served = Served::default();
    let recorded = served.clone();
    let service = modelctx::http::StreamableHttpService::with_config(config, move |t| {
        recorded.lock().unwrap().push(server.serve(t));
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(service.clone().serve(listener, std::future::pending()));
    (url, service, served)
}

/// When the `hold` tool of [`region_server`] runs (`started`), may answer (`release`)
/// and was dropped unfinished (`dropped`).
#[derive(Clone, Default)]
struct Gates {
    started: std::sync::Arc<tokio::sync::Notify>,
    release: std::sync::Arc<tokio::sync::Notify>,
    dropped: std::sync::Arc<tokio::sync::Notify>,
}

/// A server whose `where` tool mirrors its `region` argument in the `Mcp-Param-Region`
/// header and answers with the caller's name (from the request's envelope) and the
/// region; its `hold` tool waits at `gates`; its `keep` tool leaves its `Context` in
/// `left` and answers `kept`.
fn region_server(gates: Gates, left: std::sync::Arc<std::sync::Mutex<Option<Context>>>) -> Server {
    let schema = json!({
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    });
    let region = Tool::new("where", schema.as_object().unwrap().clone());
    let region = ToolDef::with_schema(region, |args, cx: Context| async move {
        let name = cx.client_info().map(|i| i.name.clone()).unwrap_or_default();
        let region = args.get("region").and_then(|r| r.as_str()).unwrap_or("-");
        Ok::<_, String>(CallToolResult::text(format!("{name}@{region}")))
    });
    let object = || json!({"type": "object"}).as_object().unwrap().clone();
    let hold = ToolDef::with_schema(Tool::new("hold", object()), move |_args, _cx: Context| {
        let gates = gates.clone();
        async move {
            struct OnDrop(std::sync::Arc<tokio::sync::Notify>, bool);
            impl Drop for OnDrop {
                fn drop(&mut self) {
                    if !self.1 {
                        self.0.notify_one();
                    }
                }
            }
            let mut guard = OnDrop(gates.dropped.clone(), false);
            let released = gates.release.notified();
            gates.started.notify_one();
            released.await;
            guard.1 = true;
            Ok::<_, String>(CallToolResult::text("released"))
        }
    });
    let keep = ToolDef::with_schema(Tool::new("keep", object()), move |_args, cx: Context| {
        *left.lock().unwrap() = Some(cx);
        async { Ok::<_, String>(CallToolResult::text("kept")) }
    });
    Server::builder("regions", "1.0.0")
        .tool(region)
        .unwrap()
        .tool(hold)
        .unwrap()
        .tool(keep)
        .unwrap()
        .stateless_era(true)
        .build()
}

/// A 2026-07-28 `tools/call` POST of `tool` from the client `caller`, with `region` as
/// argument and `header` as its `Mcp-Param-Region` header.
fn era_call(
    http: &reqwest::Client,
    url: &str,
    (id, caller): (u64, &str),
    (tool, region, header): (&str, &str, Option<&str>),
) -> reqwest::RequestBuilder {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": tool, "arguments": {"region": region},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": caller, "version": "1"}
            }
        }
    });
    let post = era_post(http, url, ("tools/call", tool), body.to_string());
    match header {
        Some(header) => post.header("mcp-param-region", header),
        None => post,
    }
}

/// An [`era_call`] of the `hold` tool, which waits on the test's gates, with no region.
fn held_call(http: &reqwest::Client, url: &str, id_caller: (u64, &str)) -> reqwest::RequestBuilder {
    era_call(http, url, id_caller, ("hold", "-", None))
}

/// A POST of `body` with the headers of protocol 2026-07-28 (`Mcp-Method` and
/// `Mcp-Name` from `method_name`).
pub(crate) fn era_post(
    http: &reqwest::Client,
    url: &str,
    (method, name): (&str, &str),
    body: String,
) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(body)
}

/// The status and the whole body of a POST's answer.
async fn text_of(post: reqwest::RequestBuilder) -> (u16, String) {
    let answer = within(WAIT, "a call", post.send()).await.unwrap();
    let status = answer.status().as_u16();
    (
        status,
        within(WAIT, "the answer", answer.text()).await.unwrap(),
    )
}

/// Sends `post` and checks it is answered (200) with a result whose text is `text`.
async fn answered_with(post: reqwest::RequestBuilder, text: &str) {
    let (status, answer) = answer_of(post).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], text);
}

/// The status and the JSON answer of a POST (an SSE answer's first event).
pub(crate) async fn answer_of(post: reqwest::RequestBuilder) -> (u16, serde_json::Value) {
    let (status, text) = text_of(post).await;
    let json = match text.strip_prefix("event: message\ndata: ") {
        Some(event) => event.lines().next().unwrap_or_default(),
        None => &text,
    };
    (
        status,
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}")),
    )
}

/// Resolves when one of the sessions made so far has ended.
fn one_ends(served: &Served) -> impl std::future::Future<Output = ()> + use<> {
    let sessions = served.lock().unwrap().clone();
    async move {
        let ends = sessions.iter().map(|s| Box::pin(s.closed()));
        futures::future::select_all(ends).await;
    }
}

#[tokio::test]
async fn one_session_serves_post_after_post_each_with_its_own_headers_and_envelope() {
    let gates = Gates::default();
    let server = region_server(gates.clone(), Default::default());
    let (url, service, served) = recorded_endpoint(server, Default::default()).await;
    let made = || served.lock().unwrap().len();
    let http = reqwest::Client::new();

    // POST after POST: each request is served with its own envelope and headers.
    answered_with(
        era_call(&http, &url, (1, "alice"), ("where", "eu", Some("eu"))),
        "alice@eu",
    )
    .await;
    // The header the last request had is not this one's: without its own, refused.
    let (status, answer) =
        answer_of(era_call(&http, &url, (1, "bob"), ("where", "eu", None))).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
    answered_with(
        era_call(&http, &url, (1, "carol"), ("where", "us", Some("us"))),
        "carol@us",
    )
    .await;
    // One session served the three (the same request id each time, one after another).
    assert_eq!(made(), 1);

    // A request still running keeps its session: the POST beside it gets another.
    let held = tokio::spawn(answer_of(held_call(&http, &url, (7, "dave"))));
    within(WAIT, "the held call to start", gates.started.notified()).await;
    answered_with(
        era_call(&http, &url, (7, "erin"), ("where", "ap", Some("ap"))),
        "erin@ap",
    )
    .await;
    assert_eq!(made(), 2);
    gates.release.notify_one();
    let (status, answer) = within(WAIT, "the held call", held).await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "released");

    // A request whose client goes away is cancelled, and its session is not served
    // again; the next POST is answered all the same.
    let gone = tokio::spawn(held_call(&http, &url, (8, "frank")).send());
    within(
        WAIT,
        "the abandoned call to start",
        gates.started.notified(),
    )
    .await;
    gone.abort();
    within(
        WAIT,
        "the abandoned handler to be dropped",
        gates.dropped.notified(),
    )
    .await;
    // Its session ends (it is not kept, and nothing of it stays behind).
    within(
        WAIT,
        "the abandoned call's session to end",
        one_ends(&served),
    )
    .await;
    answered_with(
        era_call(&http, &url, (8, "grace"), ("where", "eu", Some("eu"))),
        "grace@eu",
    )
    .await;

    // Closing every session ends the kept ones too.
    service.close_all_sessions();
    let sessions = served.lock().unwrap().clone();
    for session in sessions {
        within(WAIT, "a kept session to end", session.closed()).await;
    }
}

#[tokio::test]
async fn what_a_handler_leaves_behind_reaches_no_later_request_of_the_same_id() {
    use modelctx::types::LoggingMessageNotificationParams as Log;
    use modelctx::types::{LoggingLevel, LoggingMessageNotification};
    let (gates, left) = (Gates::default(), std::sync::Arc::default());
    let server = region_server(gates.clone(), std::sync::Arc::clone(&left));
    let (url, _service, served) = recorded_endpoint(server, Default::default()).await;
    let http = reqwest::Client::new();
    let (status, answer) = answer_of(era_call(&http, &url, (1, "ann"), ("keep", "-", None))).await;
    assert_eq!(
        (status, &answer["result"]["content"][0]["text"]),
        (200, &json!("kept"))
    );
    // The request is over: its context says so.
    let cx: Context = left.lock().unwrap().take().unwrap();
    within(
        WAIT,
        "the ended request's cancellation",
        cx.cancellation().cancelled(),
    )
    .await;
    // The next request, the same id, on the same session, streams its answer: a notice
    // the first one's handler leaves behind now must not land there.
    let next = tokio::spawn(text_of(held_call(&http, &url, (1, "ben"))));
    within(WAIT, "the next call to start", gates.started.notified()).await;
    assert_eq!(served.lock().unwrap().len(), 1, "one session serves both");
    // Refused where it is made (the request it belonged to was cancelled when it ended)…
    let refused = cx
        .notify::<LoggingMessageNotification>(Log::new(LoggingLevel::Info, json!("left over")))
        .await
        .expect_err("a notice of an ended request is refused");
    assert!(refused.is_cancelled(), "{refused:?}");
    gates.release.notify_one();
    let (status, text) = within(WAIT, "the next call", next).await.unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("released"), "{text}");
    // …and never on the wire of the next request.
    assert!(!text.contains("left over"), "{text}");
}

#[tokio::test]
async fn a_handshake_posted_with_the_era_s_headers_leaves_no_session_behind_for_the_next() {
    // A server that does not serve the era answers the handshake even on a POST that
    // names 2026-07-28; the session that took it is not lent to the next POST.
    let server = Server::builder("handshake-only", "1.0.0")
        .stateless_era(false)
        .build();
    // JSON answers: a session whose answer streams is never lent again anyway.
    let config = modelctx::http::StreamableHttpServerConfig::default().json_response();
    let (url, _service, served) = recorded_endpoint(server, config).await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    });
    for round in 0..2 {
        let post = era_post(&http, &url, ("initialize", ""), initialize.to_string());
        let (status, text) = text_of(post).await;
        assert!(
            status == 200 && text.contains("\"protocolVersion\"") && !text.contains("\"error\""),
            "round {round}: {text}"
        );
    }
    assert_eq!(served.lock().unwrap().len(), 2, "a session per handshake");
}
