//! Hosting over streamable HTTP: sessions, HTTP semantics, session-less mode — checked on
//! the wire with a raw HTTP client against a `Server` hosted on a loopback port.

use std::sync::{Arc, Mutex};

use modelctx::http::{StreamableHttpServerConfig, cors_layer};
use modelctx::server::Server;
use modelctx::session::RequestOptions;
use modelctx::types::{ErrorCode, ErrorData};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cancellation::blocking_server;
use crate::http_modern::{modern_call, post_modern};
use crate::http_support::{
    ACCEPT_BOTH, Hosted, Note, Raw, call, host_on, initialize, post_watching_the_answer,
    read_events_until, send,
};
use crate::support::{Block, Echo, Work, cancelled_call, client, echo_server, modern_vocabulary};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_stateless_era_answer_comes_back_on_its_own_post,
            ["hosting:http:response-same-connection"]
        ),
        conformance_test!(
            a_2025_exchange_carries_no_modern_vocabulary,
            ["hosting:http:legacy-no-modern-vocabulary"]
        ),
        conformance_test!(
            initialize_mints_a_visible_ascii_session_id,
            ["hosting:session:create", "hosting:session:id-charset"]
        ),
        conformance_test!(
            requests_reach_their_session_with_its_state,
            ["hosting:session:reuse"]
        ),
        conformance_test!(
            delete_ends_the_session_and_its_transport,
            [
                "hosting:session:delete",
                "hosting:session:post-termination-404"
            ]
        ),
        conformance_test!(unknown_session_ids_draw_404, ["hosting:session:unknown-id"]),
        conformance_test!(missing_session_id_draws_400, ["hosting:session:missing-id"]),
        conformance_test!(
            a_second_initialize_is_refused,
            ["hosting:session:reinitialize"]
        ),
        conformance_test!(
            cors_layer_exposes_the_session_id,
            ["hosting:session:cors-expose"]
        ),
        conformance_test!(
            stateless_serves_concurrent_clients_without_session_ids,
            [
                "hosting:stateless:concurrent-clients",
                "hosting:stateless:no-session-id",
                "transport:streamable-http:stateless"
            ]
        ),
        conformance_test!(
            a_stateless_transport_serves_one_request,
            ["hosting:stateless:no-reuse"]
        ),
        conformance_test!(
            stateless_handlers_cannot_call_the_client,
            ["transport:streamable-http:stateless-restrictions"]
        ),
        conformance_test!(
            post_without_both_media_types_draws_406,
            ["hosting:http:accept-406"]
        ),
        conformance_test!(batches_only_for_2025_03_26, ["hosting:http:batch"]),
        conformance_test!(
            non_json_content_type_draws_415,
            ["hosting:http:content-type-415"]
        ),
        conformance_test!(
            foreign_origin_or_host_draws_403_before_any_session,
            [
                "hosting:http:dns-rebinding",
                "transport:streamable-http:origin-validation"
            ]
        ),
        conformance_test!(
            json_response_mode_answers_with_one_json_body,
            [
                "hosting:http:json-response-mode",
                "transport:streamable-http:json-response",
                "client-transport:http:json-response-parsed"
            ]
        ),
        conformance_test!(
            a_cancelled_request_ends_its_post_with_request_cancelled,
            ["transport:streamable-http:cancelled-request-terminated"]
        ),
        conformance_test!(
            json_response_mode_keeps_request_scoped_messages_off_the_wire,
            ["transport:streamable-http:json-response-restrictions"]
        ),
        conformance_test!(other_http_methods_draw_405, ["hosting:http:method-405"]),
        conformance_test!(
            notifications_and_responses_draw_202,
            ["hosting:http:notifications-202"]
        ),
        conformance_test!(
            rejections_reach_the_error_callback,
            ["hosting:http:onerror"]
        ),
        conformance_test!(bad_bodies_draw_400, ["hosting:http:parse-error-400"]),
        conformance_test!(
            bad_protocol_version_header_draws_400,
            [
                "hosting:http:protocol-version-400",
                "hosting:http:protocol-version-rejection-literal"
            ]
        ),
        conformance_test!(
            absent_protocol_version_means_2025_03_26,
            ["hosting:http:protocol-version-default"]
        ),
        conformance_test!(
            a_second_standalone_stream_is_rejected,
            ["hosting:http:second-sse-rejected"]
        ),
        conformance_test!(
            the_post_stream_ends_after_its_response,
            ["hosting:http:sse-close-after-response"]
        ),
        conformance_test!(
            each_message_travels_on_exactly_one_stream,
            [
                "hosting:http:no-broadcast",
                "hosting:http:response-same-connection",
                "hosting:http:standalone-sse",
                "hosting:http:standalone-sse-no-response",
                "transport:streamable-http:unrelated-messages"
            ]
        ),
    ]
}

/// Hosts [`echo_server`] with `config` in the connector's cell.
async fn host_echo(connect: &Connector, config: StreamableHttpServerConfig) -> Hosted {
    host_on(connect, echo_server("echo"), config).await
}

fn default_config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
}

async fn initialize_mints_a_visible_ascii_session_id(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = send(raw.post(None, &initialize(1, "2025-11-25"))).await;
        assert_eq!(r.status, 200);
        let id = r
            .header("mcp-session-id")
            .expect("Mcp-Session-Id")
            .to_owned();
        assert!(!id.is_empty());
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id:?}");
        let result = &r.messages()[0]["result"];
        assert_eq!(result["serverInfo"]["name"], "echo");
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "every initialize gets a new session");
    assert_eq!(hosted.session_count().await, 3);
}

async fn requests_reach_their_session_with_its_state(connect: Connector) {
    let server = Server::builder("state", "1.0.0")
        .request_handler::<Echo, _, _>(|_, cx| async move {
            // State from the initialize request of this session.
            Ok(json!(cx.client_info().map(|i| i.name.clone())))
        })
        .build();
    let hosted = host_on(&connect, server, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let a = raw.init().await;
    let mut init_b = initialize(1, "2025-11-25");
    init_b["params"]["clientInfo"]["name"] = json!("other");
    let b = send(raw.post(None, &init_b)).await;
    let b = b.header("mcp-session-id").unwrap().to_owned();
    send(raw.post(
        Some(&b),
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    ))
    .await;
    for (session, name) in [(&a, "raw"), (&b, "other"), (&a, "raw")] {
        let r = send(raw.post(Some(session), &call(7, "test/echo", json!({})))).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("mcp-session-id"), Some(session.as_str()));
        assert_eq!(r.messages().last().unwrap()["result"], json!(name));
    }
}

async fn delete_ends_the_session_and_its_transport(connect: Connector) {
    let mut hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let started = hosted.session().await;
    assert_eq!(started.id.as_deref(), Some(id.as_str()));
    let r = send(
        raw.request(http::Method::DELETE)
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-11-25"),
    )
    .await;
    assert_eq!(r.status, 200);
    within("the session to end", started.session.closed()).await;
    // Whatever comes for it afterwards: 404.
    let r = send(raw.post(Some(&id), &call(2, "test/echo", json!({"n": 1})))).await;
    assert_eq!(r.status, 404);
    assert_eq!(send(raw.get(&id)).await.status, 404);
    assert_eq!(hosted.session_count().await, 0);
}

async fn unknown_session_ids_draw_404(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let _live = raw.init().await;
    let bogus = "no-such-session";
    let post = send(raw.post(Some(bogus), &call(2, "test/echo", json!({"n": 1})))).await;
    let get = send(raw.get(bogus)).await;
    let delete = send(
        raw.request(http::Method::DELETE)
            .header("mcp-session-id", bogus),
    )
    .await;
    assert_eq!((post.status, get.status, delete.status), (404, 404, 404));
}

async fn missing_session_id_draws_400(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let _live = raw.init().await;
    let r = send(raw.post(None, &call(2, "test/echo", json!({"n": 1})))).await;
    assert_eq!(r.status, 400);
    let r = send(raw.post(
        None,
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    ))
    .await;
    assert_eq!(r.status, 400);
    let r = send(
        raw.request(http::Method::GET)
            .header("accept", "text/event-stream"),
    )
    .await;
    assert_eq!(r.status, 400);
}

async fn a_second_initialize_is_refused(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let r = send(raw.post(Some(&id), &initialize(5, "2025-11-25"))).await;
    let answer = r.messages().into_iter().find(|m| m["id"] == json!(5));
    let answer = answer.unwrap_or_else(|| panic!("an answer to the second initialize: {r:?}"));
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    // The session is untouched.
    let r = send(raw.post(Some(&id), &call(6, "test/echo", json!({"still": true})))).await;
    assert_eq!(
        r.messages().last().unwrap()["result"],
        json!({"still": true})
    );
}

async fn cors_layer_exposes_the_session_id(connect: Connector) {
    let mut endpoint = connect.http_endpoint().await;
    let url = format!("{}/mcp", endpoint.origin());
    let server = echo_server("echo");
    endpoint
        .serve(default_config(), move |config| {
            let server = server.clone();
            let service = modelctx::http::StreamableHttpService::with_config(config, move |t| {
                server.serve(t);
            });
            service
                .router()
                .layer(cors_layer(&["http://localhost:5173"]))
        })
        .await;
    let raw = Raw::new(&url);
    let r = send(
        raw.post(None, &initialize(1, "2025-11-25"))
            .header("origin", "http://localhost:5173"),
    )
    .await;
    assert_eq!(r.status, 200);
    let exposed = r
        .header("access-control-expose-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id"), "{exposed:?}");
    let preflight = send(
        raw.request(http::Method::OPTIONS)
            .header("origin", "http://localhost:5173")
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "mcp-session-id, mcp-protocol-version",
            ),
    )
    .await;
    let allowed = preflight
        .header("access-control-allow-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(allowed.contains("mcp-session-id") && allowed.contains("mcp-protocol-version"));
}

async fn stateless_serves_concurrent_clients_without_session_ids(connect: Connector) {
    let hosted = host_echo(&connect, default_config().sessionless()).await;
    let clients = (0..5).map(|i| {
        let (transport, handle) = hosted.transport();
        async move {
            let client = client().connect(transport).await.expect("connects");
            let r = client.request::<Echo>(json!({"i": i})).await.expect("echo");
            assert_eq!(
                handle.session_id(),
                None,
                "no session id in session-less mode"
            );
            r
        }
    });
    let results = within("five clients", futures::future::join_all(clients)).await;
    assert_eq!(results, (0..5).map(|i| json!({"i": i})).collect::<Vec<_>>());
    // On the wire: no Mcp-Session-Id, and a made-up one is not checked.
    let raw = Raw::new(&hosted.url);
    let r = send(raw.post(None, &initialize(1, "2025-11-25"))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("mcp-session-id"), None);
    let r = send(raw.post(Some("made-up"), &call(2, "test/echo", json!({"x": 1})))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("mcp-session-id"), None);
    assert_eq!(r.messages().last().unwrap()["result"], json!({"x": 1}));
    assert_eq!(hosted.session_count().await, 0);
}

async fn a_stateless_transport_serves_one_request(connect: Connector) {
    let mut hosted = host_echo(&connect, default_config().sessionless()).await;
    let raw = Raw::new(&hosted.url);
    for i in 0..2 {
        let r = send(raw.post(None, &call(i, "test/echo", json!({"i": i})))).await;
        assert_eq!(r.messages().last().unwrap()["result"], json!({"i": i}));
        let started = hosted.session().await;
        // Its one request answered, the transport is finished: nothing more reaches it.
        within("the per-request session to end", started.session.closed()).await;
        let fed = started.session.notify::<Note>(json!("more")).await;
        assert!(
            fed.is_err(),
            "a finished stateless transport takes nothing more"
        );
    }
}

async fn stateless_handlers_cannot_call_the_client(connect: Connector) {
    let server = Server::builder("asker", "1.0.0")
        .request_handler::<Work, _, _>(|_, cx| async move {
            match cx.request::<Echo>(json!({"from": "the server"})).await {
                Ok(v) => Ok(json!({ "unexpected": v })),
                Err(e) => Err(ErrorData::internal_error(e.to_string())),
            }
        })
        .build();
    let hosted = host_on(&connect, server, default_config().sessionless()).await;
    let (transport, _) = hosted.transport();
    let client = client()
        .request_handler::<Echo, _, _>(|p, _| async move { Ok(p) })
        .connect(transport)
        .await
        .unwrap();
    let err = within("the call to fail", client.request::<Work>(json!({})))
        .await
        .expect_err("a server-to-client request cannot work statelessly");
    assert!(err.to_string().contains("stateless"), "{err}");
}

async fn post_without_both_media_types_draws_406(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    for accept in ["application/json", "text/event-stream", "text/html"] {
        let body = initialize(1, "2025-11-25").to_string();
        let r = send(raw.bare_post(Some(accept), Some("application/json"), body)).await;
        assert_eq!(r.status, 406, "Accept: {accept}");
    }
    let id = raw.init().await;
    let r = send(raw.get_as(&id, "application/json", Some("2025-11-25"))).await;
    assert_eq!(r.status, 406);
    assert_eq!(
        hosted.session_count().await,
        1,
        "no session from refused POSTs"
    );
}

async fn batches_only_for_2025_03_26(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let batch = json!([
        call(2, "test/echo", json!({"v": "a"})),
        call(3, "test/echo", json!({"v": "b"}))
    ]);
    let id = raw.init().await;
    let r = send(raw.post(Some(&id), &batch)).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], json!(-32600));
    let r = send(raw.post(Some(&id), &json!([]))).await;
    assert_eq!(r.status, 400);
    // A session that negotiated 2025-03-26 is served batches.
    let old = raw.init_version("2025-03-26").await;
    let r = send(raw.post_as(Some(&old), Some("2025-03-26"), &batch)).await;
    assert_eq!(r.status, 200, "{r:?}");
    let mut results: Vec<Value> = r.messages().iter().map(|m| m["result"].clone()).collect();
    results.sort_by_key(Value::to_string);
    assert_eq!(results, vec![json!({"v": "a"}), json!({"v": "b"})]);
}

async fn non_json_content_type_draws_415(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    for ct in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let body = initialize(1, "2025-11-25").to_string();
        assert_eq!(
            send(raw.bare_post(Some(ACCEPT_BOTH), ct, body))
                .await
                .status,
            415,
            "Content-Type: {ct:?}"
        );
    }
    let body = initialize(1, "2025-11-25").to_string();
    let ok = send(raw.bare_post(
        Some(ACCEPT_BOTH),
        Some("application/json; charset=utf-8"),
        body,
    ))
    .await;
    assert_eq!(ok.status, 200);
}

async fn foreign_origin_or_host_draws_403_before_any_session(connect: Connector) {
    let mut hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let r = send(
        raw.post(None, &initialize(1, "2025-11-25"))
            .header("origin", "http://evil.example"),
    )
    .await;
    assert_eq!(r.status, 403);
    let r = send(
        raw.post(None, &initialize(1, "2025-11-25"))
            .header("host", "evil.example"),
    )
    .await;
    assert_eq!(r.status, 403, "a rebound request: foreign Host, no Origin");
    assert_eq!(hosted.session_count().await, 0, "no session work was done");
    // Loopback origins are fine; and so is an established session's GET check.
    let r = send(
        raw.post(None, &initialize(1, "2025-11-25"))
            .header("origin", format!("http://localhost:{}", 1234)),
    )
    .await;
    assert_eq!(r.status, 200);
    let _ = hosted.session().await;
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let r = send(raw.get(&id).header("origin", "https://evil.example")).await;
    assert_eq!(r.status, 403);
}

async fn json_response_mode_answers_with_one_json_body(connect: Connector) {
    let hosted = host_echo(&connect, default_config().json_response()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let r = send(raw.post(Some(&id), &call(2, "test/echo", json!({"k": 1})))).await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(r.json()["result"], json!({"k": 1}));
    // The client transport reads such a body as exactly one message, end to end.
    let (transport, _) = hosted.transport();
    let client = client().connect(transport).await.unwrap();
    for i in 0..3 {
        assert_eq!(
            client.request::<Echo>(json!({"i": i})).await.unwrap(),
            json!({"i": i})
        );
    }
}

/// A 2025-era session, in SSE and in JSON-response mode: `notifications/cancelled`
/// stops the handler, and the request's POST still ends, with `-32800` for its id (the
/// JSON body, or the last event of its stream). The session lives on.
async fn a_cancelled_request_ends_its_post_with_request_cancelled(connect: Connector) {
    for json_mode in [false, true] {
        let (stopped_tx, mut stopped) = mpsc::unbounded_channel();
        let (started_tx, mut started) = mpsc::unbounded_channel();
        let config = if json_mode {
            default_config().json_response()
        } else {
            default_config()
        };
        let hosted = host_on(&connect, blocking_server(stopped_tx, started_tx), config).await;
        let raw = Raw::new(&hosted.url);
        let id = raw.init().await;
        let blocked = tokio::spawn(send(raw.post(Some(&id), &call(7, "test/block", json!({})))));
        within("the handler to start", started.recv()).await;
        let cancel = json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7, "reason": "no longer needed"}
        });
        assert_eq!(send(raw.post(Some(&id), &cancel)).await.status, 202);

        let r = within("the cancelled POST to end", blocked).await.unwrap();
        assert_eq!(r.status, 200, "{r:?}");
        let content_type = r.header("content-type").unwrap_or_default();
        let expected = if json_mode {
            "application/json"
        } else {
            "text/event-stream"
        };
        assert!(content_type.starts_with(expected), "{r:?}");
        let messages = r.messages();
        let last = messages
            .last()
            .unwrap_or_else(|| panic!("no message: {r:?}"));
        assert_eq!(last["id"], json!(7), "{r:?}");
        assert_eq!(
            last["error"]["code"],
            json!(ErrorCode::REQUEST_CANCELLED.0),
            "{r:?}"
        );
        assert_eq!(
            messages.iter().filter(|m| m["id"] == json!(7)).count(),
            1,
            "one answer, the transport's: {r:?}"
        );
        within("the handler to stop", stopped.recv()).await;
        let r = send(raw.post(Some(&id), &call(8, "test/echo", json!({"after": true})))).await;
        assert_eq!(
            r.messages().last().unwrap()["result"],
            json!({"after": true})
        );

        // Through the client: the cancelled call fails as cancelled (the late -32800
        // completes nothing), and the session serves on.
        let (transport, _) = hosted.transport();
        let client = client().connect(transport).await.unwrap();
        let call = client
            .start_request::<Block>(json!({}), RequestOptions::new())
            .unwrap();
        let canceller = call.canceller();
        let waiting = tokio::spawn(call);
        within("the handler to start", started.recv()).await;
        canceller.cancel("no longer needed").await;
        cancelled_call(waiting).await;
        within("the handler to stop", stopped.recv()).await;
        assert_eq!(
            client
                .request::<Echo>(json!({"still": true}))
                .await
                .unwrap(),
            json!({"still": true})
        );
    }
}

/// JSON-response mode: a request's POST gets one JSON body, which carries only its
/// response. A request the handler sends the client fails at once with `-32600`, its
/// notifications go nowhere; the standalone GET stream still carries what is not
/// related to a request.
async fn json_response_mode_keeps_request_scoped_messages_off_the_wire(connect: Connector) {
    let server = Server::builder("scoped", "1.0.0")
        .request_handler::<Work, _, _>(|_, cx| async move {
            cx.notify::<Note>(json!({"related": true}))
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string()))?;
            let asked = cx.request::<Echo>(json!({"from": "the handler"})).await;
            let code = match &asked {
                Ok(v) => return Ok(json!({"unexpected": v})),
                Err(e) => e.protocol_error().map(|e| e.code.0),
            };
            Ok(json!({"askCode": code}))
        })
        .build();
    let mut hosted = host_on(&connect, server, default_config().json_response()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let started = hosted.session().await;
    within("the handshake", started.session.initialized()).await;
    let mut standalone = within("the GET", raw.get(&id).send()).await.unwrap();
    assert_eq!(standalone.status(), 200);

    let r = send(raw.post(Some(&id), &call(2, "test/work", json!({})))).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(
        r.json(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"askCode": -32600}}),
        "the body is the response alone, and the handler's request failed with -32600"
    );

    // Unrelated traffic still goes on the standalone stream, and it is the first
    // message there: neither the handler's notification nor its request went there.
    started
        .session
        .notify::<Note>(json!({"unrelated": 1}))
        .await
        .unwrap();
    let on_get = read_events_until(&mut standalone, |e| e.iter().any(|e| !e.data.is_empty())).await;
    let get_msgs: Vec<Value> = on_get.iter().filter_map(|e| e.json()).collect();
    assert_eq!(
        get_msgs,
        vec![json!({"jsonrpc": "2.0", "method": "test/note", "params": {"unrelated": 1}})]
    );
}

async fn other_http_methods_draw_405(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    for method in [http::Method::PUT, http::Method::PATCH] {
        let r = send(raw.request(method.clone()).header("accept", ACCEPT_BOTH)).await;
        assert_eq!(r.status, 405, "{method}");
    }
}

async fn notifications_and_responses_draw_202(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let note = json!({"jsonrpc":"2.0","method":"notifications/roots/list_changed"});
    let r = send(raw.post(Some(&id), &note)).await;
    assert_eq!((r.status, r.body.as_str()), (202, ""));
    let response = json!({"jsonrpc":"2.0","id":99,"result":{}});
    let r = send(raw.post(Some(&id), &response)).await;
    assert_eq!((r.status, r.body.as_str()), (202, ""));
}

async fn rejections_reach_the_error_callback(connect: Connector) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let config = default_config().on_error(move |r| log.lock().unwrap().push(r.status.as_u16()));
    let hosted = host_echo(&connect, config).await;
    let raw = Raw::new(&hosted.url);
    let init = initialize(1, "2025-11-25").to_string();
    send(raw.bare_post(Some("text/html"), Some("application/json"), init.clone())).await;
    send(raw.bare_post(Some(ACCEPT_BOTH), Some("text/plain"), init)).await;
    send(raw.post(None, &json!("nonsense"))).await;
    send(raw.post(Some("unknown"), &call(1, "test/echo", json!({})))).await;
    send(
        raw.post(None, &initialize(1, "2025-11-25"))
            .header("origin", "http://evil.example"),
    )
    .await;
    assert_eq!(*seen.lock().unwrap(), vec![406, 415, 400, 404, 403]);
}

async fn bad_bodies_draw_400(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let post = |body: &'static str| {
        raw.bare_post(Some(ACCEPT_BOTH), Some("application/json"), body.to_owned())
    };
    let r = send(post("{not json")).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], json!(-32700));
    for invalid in [
        r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
        r#""text""#,
        r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
    ] {
        let r = send(post(invalid)).await;
        assert_eq!(r.status, 400, "{invalid}");
        assert_eq!(r.json()["error"]["code"], json!(-32600), "{invalid}");
    }
    // Over the cap: 413 before parsing, possibly before the body has been read (and
    // the connection closed under the writing client): read while writing.
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(5 * 1024 * 1024));
    assert_eq!(
        post_watching_the_answer(&hosted.url, big.as_bytes()).await,
        413
    );
}

async fn bad_protocol_version_header_draws_400(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    for version in ["2099-01-01", "garbage"] {
        let r = send(raw.post_as(Some(&id), Some(version), &call(2, "test/echo", json!({})))).await;
        assert_eq!(r.status, 400, "MCP-Protocol-Version: {version}");
        assert!(
            r.body.contains("Unsupported protocol version"),
            "{}",
            r.body
        );
    }
    // A supported revision other than the negotiated one is not refused.
    let echo = call(3, "test/echo", json!({}));
    let r = send(raw.post_as(Some(&id), Some("2025-06-18"), &echo)).await;
    assert_eq!(r.status, 200, "{r:?}");
    let r = send(raw.get_as(&id, "text/event-stream", Some("1999-12-31"))).await;
    assert_eq!(r.status, 400);
}

async fn absent_protocol_version_means_2025_03_26(connect: Connector) {
    // Stateless: no session to tell the revision, so only the header can.
    let hosted = host_echo(&connect, default_config().sessionless()).await;
    let raw = Raw::new(&hosted.url);
    let batch = json!([
        call(1, "test/echo", json!({})),
        call(2, "test/echo", json!({}))
    ]);
    let post = |version: Option<&str>| raw.post_as(None, version, &batch);
    // Without the header the request is 2025-03-26, which allows batches ...
    let r = send(post(None)).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.messages().len(), 2);
    // ... with a later revision named, the same body is refused.
    assert_eq!(send(post(Some("2025-11-25"))).await.status, 400);
}

async fn a_second_standalone_stream_is_rejected(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let first = within("the GET", raw.get(&id).send()).await.unwrap();
    assert_eq!(first.status(), 200);
    assert!(
        first.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let second = send(raw.get(&id)).await;
    assert_eq!(second.status, 409);
    drop(first);
}

async fn the_post_stream_ends_after_its_response(connect: Connector) {
    let server = Server::builder("chatty", "1.0.0")
        .request_handler::<Work, _, _>(|_, cx| async move {
            for i in 0..3 {
                cx.notify::<Note>(json!({"i": i}))
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
            }
            Ok(json!("done"))
        })
        .build();
    let hosted = host_on(&connect, server, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    // `send` reads to the end of the body: it returns only because the stream ended.
    let r = send(raw.post(Some(&id), &call(2, "test/work", json!({})))).await;
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let messages = r.messages();
    let last = messages.last().expect("messages");
    assert_eq!(
        last["result"],
        json!("done"),
        "the response is the last event"
    );
    let notes: Vec<_> = messages
        .iter()
        .filter(|m| m["method"] == "test/note")
        .map(|m| m["params"].clone())
        .collect();
    assert_eq!(
        notes,
        vec![json!({"i": 0}), json!({"i": 1}), json!({"i": 2})],
        "related messages come first, in order"
    );
}

async fn each_message_travels_on_exactly_one_stream(connect: Connector) {
    let (go_tx, go_rx) = mpsc::unbounded_channel::<()>();
    let go_rx = Arc::new(tokio::sync::Mutex::new(go_rx));
    let server = Server::builder("routes", "1.0.0")
        .request_handler::<Work, _, _>(move |params, cx| {
            let go = go_rx.clone();
            async move {
                cx.notify::<Note>(json!({"related": params["who"].clone()}))
                    .await
                    .ok();
                let params = params["who"].clone();
                go.lock().await.recv().await;
                Ok(params)
            }
        })
        .build();
    let mut hosted = host_on(&connect, server, default_config()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let started = hosted.session().await;
    // `notifications/initialized` was answered 202 when it was queued; the server may
    // send its own notifications only once it has handled it.
    within("the handshake", started.session.initialized()).await;
    let mut standalone = within("the GET", raw.get(&id).send()).await.unwrap();
    assert!(
        standalone.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let a = tokio::spawn(send(
        raw.post(Some(&id), &call(2, "test/work", json!({"who": "a"}))),
    ));
    let b = tokio::spawn(send(
        raw.post(Some(&id), &call(3, "test/work", json!({"who": "b"}))),
    ));
    // Unrelated traffic while both calls are open.
    started
        .session
        .notify::<Note>(json!({"unrelated": 1}))
        .await
        .unwrap();
    started
        .session
        .notify::<Note>(json!({"unrelated": 2}))
        .await
        .unwrap();
    let on_get = read_events_until(&mut standalone, |e| {
        e.iter().filter(|e| !e.data.is_empty()).count() >= 2
    })
    .await;
    go_tx.send(()).unwrap();
    go_tx.send(()).unwrap();
    let a = within("call a", a).await.unwrap();
    let b = within("call b", b).await.unwrap();
    let get_msgs: Vec<Value> = on_get.iter().filter_map(|e| e.json()).collect();
    assert_eq!(
        get_msgs
            .iter()
            .map(|m| m["params"].clone())
            .collect::<Vec<_>>(),
        vec![json!({"unrelated": 1}), json!({"unrelated": 2})],
        "unrelated messages on the standalone stream only"
    );
    assert!(
        get_msgs
            .iter()
            .all(|m| m.get("result").is_none() && m.get("error").is_none())
    );
    for (r, who, rid) in [(&a, "a", 2), (&b, "b", 3)] {
        let msgs = r.messages();
        assert_eq!(
            msgs,
            vec![
                json!({"jsonrpc":"2.0","method":"test/note","params":{"related": who}}),
                json!({"jsonrpc":"2.0","id":rid,"result":who}),
            ],
            "stream of call {who}: its own note, then its own response"
        );
    }
}

/// A 2025-era client of a server that speaks both eras: neither the frames nor the
/// HTTP headers either way carry any of the 2026-07-28 vocabulary.
async fn a_2025_exchange_carries_no_modern_vocabulary(connect: Connector) {
    let server = Server::builder("both-eras", "1.0.0")
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(params) })
        .build();
    let hosted = host_on(&connect, server, default_config()).await;
    let (transport, _handle) = hosted.transport();
    let (transport, wire) = modelctx_conformance::record(modelctx::transport::boxed(transport));
    let client = client().connect(transport).await.unwrap();
    client.request::<Echo>(json!({"k": 1})).await.unwrap();
    client.close().await;
    for m in wire.messages() {
        let frame = serde_json::to_string(&m.message.message).unwrap();
        assert_eq!(modern_vocabulary(&frame), None, "{frame}");
    }
    let seen = hosted.seen();
    assert!(seen.len() >= 3, "initialize, initialized, the call");
    for request in seen {
        for (name, value) in &request.headers {
            let header = format!("{name}: {}", value.to_str().unwrap_or(""));
            assert_eq!(modern_vocabulary(&header), None, "{header}");
        }
    }
}

/// 2026-07-28 over HTTP: a request's answer is the body of the POST that carried it
/// (no session, no other stream to put it on).
async fn a_stateless_era_answer_comes_back_on_its_own_post(connect: Connector) {
    let hosted = host_echo(&connect, default_config()).await;
    let raw = Raw::new(&hosted.url);
    for id in [7, 8] {
        let body = modern_call(id, "test/echo", json!({"n": id}));
        let r = post_modern(&raw, &body, None).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("mcp-session-id"), None);
        let messages = r.messages();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert_eq!(messages[0]["id"], id);
        assert_eq!(messages[0]["result"]["n"], id);
    }
}
