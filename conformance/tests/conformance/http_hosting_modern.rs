//! Hosting 2026-07-28 over streamable HTTP: an endpoint serving that revision alone,
//! what a response body looks like (one JSON body, or a stream when the handler says
//! something first; only its own request's notifications; caching hints stamped on
//! cacheable results), and a client closing its stream as the cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use modelctx::http::StreamableHttpServerConfig;
use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::types::{
    CacheScope, ErrorCode, ErrorData, ReadResourceRequest, ReadResourceResult, TextResourceContents,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};

use crate::http_modern::{echo_server, modern_call, post_modern};
use crate::http_support::{ACCEPT_BOTH, Note, Raw, RawResponse, host, initialize, send};
use crate::support::{DropSignal, Work, client, server_with_tool, text_tool};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            an_endpoint_serving_only_2026_refuses_initialize_naming_what_it_serves,
            ["hosting:http:modern-only:initialize-rejection-names-versions"]
        ),
        conformance_test!(
            an_endpoint_serving_only_2026_answers_get_and_delete_405,
            ["hosting:http:modern:get-delete-405"]
        ),
        conformance_test!(
            a_result_is_one_json_body_until_the_handler_says_something_first,
            ["hosting:http:modern:lazy-sse-upgrade"]
        ),
        conformance_test!(
            a_notification_travels_only_on_its_own_requests_stream,
            ["hosting:http:modern:response-stream-request-scoped"]
        ),
        conformance_test!(
            cacheable_results_carry_the_handlers_hints_or_the_defaults,
            ["hosting:http:modern:cacheable-stamping"]
        ),
        conformance_test!(
            closing_the_response_stream_stops_the_handler,
            ["hosting:http:modern:disconnect-cancels-handler"]
        ),
    ]
}

/// An endpoint serving protocol 2026-07-28 alone.
async fn modern_only(server: Server) -> crate::http_support::Hosted {
    host(
        server,
        StreamableHttpServerConfig::default().handshake_era(false),
    )
    .await
}

fn content_type(r: &RawResponse) -> &str {
    r.header("content-type").unwrap_or_default()
}

async fn an_endpoint_serving_only_2026_refuses_initialize_naming_what_it_serves(_: Connector) {
    let hosted = modern_only(echo_server()).await;
    let raw = Raw::new(&hosted.url);
    // A client of the handshake era opens with `initialize`, no version header.
    let r = send(raw.post(None, &initialize(7, "2025-11-25"))).await;
    assert_eq!(r.status, 400, "{r:?}");
    let answer = r.only_message();
    assert_eq!(answer["id"], 7, "{answer}");
    let error = &answer["error"];
    assert_eq!(error["code"], ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0);
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]), "{error}");
    assert_eq!(error["data"]["requested"], "2025-11-25", "{error}");
    assert_eq!(r.header("mcp-session-id"), None);

    // The SDK's client of that era is refused the same way, and no session exists.
    let (transport, _) = hosted.transport();
    let err = within("the handshake to be refused", client().connect(transport))
        .await
        .expect_err("no handshake era here");
    let error = err.protocol_error().expect("the refusal");
    assert_eq!(modelctx::http::http_status(error), Some(400), "{error:?}");
    assert!(error.message.contains("2026-07-28"), "{error:?}");
    assert_eq!(hosted.service.session_count(), 0);

    // The era it serves is served.
    let r = post_modern(&raw, &modern_call(8, "server/discover", json!({})), None).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.only_message()["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
}

async fn an_endpoint_serving_only_2026_answers_get_and_delete_405(_: Connector) {
    let hosted = modern_only(echo_server()).await;
    let raw = Raw::new(&hosted.url);
    for method in [http::Method::GET, http::Method::DELETE] {
        // What an older client would send: a session, a stream to resume.
        let r = send(
            raw.request(method.clone())
                .header("accept", "text/event-stream")
                .header("mcp-session-id", "older-session")
                .header("last-event-id", "older-session/7"),
        )
        .await;
        assert_eq!(r.status, 405, "{method}: {r:?}");
        assert_eq!(r.header("allow"), Some("POST"), "{method}");
        assert_eq!(r.header("mcp-session-id"), None, "{method}");
    }
    // A POST of the era that names a session too is served, the id neither kept nor
    // echoed.
    let body = modern_call(1, "test/echo", json!({"k": 1}));
    let r = send(
        raw.request(http::Method::POST)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "test/echo")
            .header("mcp-session-id", "older-session")
            .body(body.to_string()),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.only_message()["result"]["k"], 1);
    assert_eq!(r.header("mcp-session-id"), None);
    assert_eq!(hosted.service.session_count(), 0);
}

/// `test/work` sends `test/note` `{"who", "n"}` for n in 1..=`notes`, then answers
/// `{"who"}`.
fn chatty_server() -> Server {
    Server::builder("chatty", "1.0.0")
        .request_handler::<Work, _, _>(|params: Value, cx| async move {
            let notes = params["notes"].as_u64().unwrap_or(0);
            for n in 1..=notes {
                cx.notify::<Note>(json!({"who": params["who"], "n": n}))
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
            }
            Ok(json!({"who": params["who"]}))
        })
        .build()
}

async fn a_result_is_one_json_body_until_the_handler_says_something_first(_: Connector) {
    let hosted = host(chatty_server(), StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    // Nothing before the result: one JSON body.
    let quiet = modern_call(1, "test/work", json!({"who": "quiet", "notes": 0}));
    let r = post_modern(&raw, &quiet, None).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(content_type(&r).starts_with("application/json"), "{r:?}");
    assert_eq!(r.only_message()["result"]["who"], "quiet");

    // Notifications first: a stream, them in order, the response last.
    let chatty = modern_call(2, "test/work", json!({"who": "chatty", "notes": 3}));
    let r = post_modern(&raw, &chatty, None).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(content_type(&r).starts_with("text/event-stream"), "{r:?}");
    let messages = r.messages();
    let notes: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "test/note")
        .map(|m| &m["params"]["n"])
        .collect();
    assert_eq!(notes, [&json!(1), &json!(2), &json!(3)], "{messages:?}");
    let last = messages.last().expect("frames");
    assert_eq!(
        last["id"], 2,
        "the response is the last frame: {messages:?}"
    );
    assert_eq!(last["result"]["who"], "chatty");
    assert_eq!(messages.len(), 4, "{messages:?}");
}

async fn a_notification_travels_only_on_its_own_requests_stream(_: Connector) {
    // Each handler notes, waits until the other has noted too, notes again and
    // answers: both are in flight together throughout.
    let both = Arc::new(tokio::sync::Barrier::new(2));
    let server = Server::builder("pair", "1.0.0")
        .request_handler::<Work, _, _>(move |params: Value, cx| {
            let both = both.clone();
            async move {
                let who = params["who"].clone();
                let note = |n: u64| cx.notify::<Note>(json!({"who": who, "n": n}));
                note(1)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                within("the other request to note", both.wait()).await;
                note(2)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                Ok(json!({"who": params["who"]}))
            }
        })
        .build();
    let hosted = host(server, StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    let a = modern_call(1, "test/work", json!({"who": "A"}));
    let b = modern_call(2, "test/work", json!({"who": "B"}));
    let (ra, rb) = tokio::join!(post_modern(&raw, &a, None), post_modern(&raw, &b, None));
    for (r, who, id) in [(ra, "A", 1), (rb, "B", 2)] {
        let messages = r.messages();
        let notes: Vec<&Value> = messages
            .iter()
            .filter(|m| m["method"] == "test/note")
            .collect();
        assert_eq!(notes.len(), 2, "{who}: {messages:?}");
        for note in notes {
            assert_eq!(note["params"]["who"], who, "{who}'s stream: {messages:?}");
        }
        let last = messages.last().expect("frames");
        assert_eq!(last["id"], id, "{messages:?}");
        assert_eq!(last["result"]["who"], who);
    }
}

async fn cacheable_results_carry_the_handlers_hints_or_the_defaults(_: Connector) {
    let hello = text_tool("hello", "hi");
    let server = Server::builder("cached", "1.0.0")
        .tool(hello)
        .unwrap()
        .request_handler::<ReadResourceRequest, _, _>(|params, _| async move {
            let contents = TextResourceContents::new(params.uri, "body").into();
            let mut result = ReadResourceResult::new(vec![contents]);
            result.ttl_ms = Some(60_000);
            result.cache_scope = Some(CacheScope::Public);
            Ok(result)
        })
        .build();
    let hosted = host(server, StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    // Authored by the handler: through unchanged.
    let read = modern_call(1, "resources/read", json!({"uri": "file:///a"}));
    let r = post_modern(&raw, &read, Some("file:///a")).await;
    let result = r.only_message()["result"].clone();
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["ttlMs"], 60_000, "{result}");
    assert_eq!(result["cacheScope"], "public", "{result}");
    assert_eq!(result["contents"][0]["text"], "body", "{result}");
    // Left unset: the defaults.
    let list = modern_call(2, "tools/list", json!({}));
    let r = post_modern(&raw, &list, None).await;
    let result = r.only_message()["result"].clone();
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["ttlMs"], 0, "{result}");
    assert_eq!(result["cacheScope"], "private", "{result}");
    assert_eq!(result["tools"][0]["name"], "hello", "{result}");
    // Not cacheable: no hints.
    let body = modern_call(3, "tools/call", json!({"name": "hello", "arguments": {}}));
    let r = post_modern(&raw, &body, Some("hello")).await;
    let result = r.only_message()["result"].clone();
    assert_eq!(result["resultType"], "complete", "{result}");
    assert!(result.get("ttlMs").is_none(), "{result}");
    assert!(result.get("cacheScope").is_none(), "{result}");
}

async fn closing_the_response_stream_stops_the_handler(_: Connector) {
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let (stopped_tx, mut stopped) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let finished = Arc::new(AtomicBool::new(false));
    let (held, done) = (release.clone(), finished.clone());
    let wait = ToolDef::new("wait", move |_: NoArgs, _cx: Context| {
        let stopped = DropSignal::new(stopped_tx.clone(), ());
        let (started, held, done) = (started_tx.clone(), held.clone(), done.clone());
        async move {
            let _stopped = stopped;
            let released = held.notified();
            let _ = started.send(());
            released.await;
            done.store(true, Ordering::SeqCst);
            Ok::<_, String>("finished")
        }
    });
    let server = server_with_tool("waiter", wait);
    let hosted = host(server, StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    let body = modern_call(1, "tools/call", json!({"name": "wait", "arguments": {}}));
    let caller = tokio::spawn(async move { post_modern(&raw, &body, Some("wait")).await });
    within("the handler to start", started.recv()).await;
    // The client goes away: its connection, and with it the response stream, closes.
    caller.abort();
    let _ = caller.await;
    within("the handler to be stopped", stopped.recv()).await;
    // Released now, a handler still running would finish and answer: it is gone.
    release.notify_waiters();
    assert!(
        !finished.load(Ordering::SeqCst),
        "the handler never finished"
    );
    // The endpoint goes on serving.
    let raw = Raw::new(&hosted.url);
    let r = post_modern(&raw, &modern_call(2, "tools/list", json!({})), None).await;
    assert_eq!(r.status, 200, "{r:?}");
}
