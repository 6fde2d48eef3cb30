//! The streamable HTTP client transport and end-to-end flows over a hosted server on a
//! loopback port.

use std::sync::Arc;
use std::time::Duration;

use modelctx::http::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::Server;
use modelctx::types::{
    ClientCapabilities, ElicitAction, ElicitRequest, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, ErrorData, InitializedNotification, JsonRpcMessage,
};
use modelctx_conformance::{Connector, Test, conformance_test, record, within};
use serde_json::{Value, json};
use tokio::sync::{Mutex as AsyncMutex, mpsc};

use crate::cancellation::blocking_server;
use crate::http_support::{Hosted, Note, Raw, Script, Seen, call, host_on, host_scripted, send};
use crate::support::{Block, Echo, Work, client, connect_modern, echo_server, raw_options};
use crate::tools::error_code;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            calls_and_errors_work_end_to_end,
            ["transport:streamable-http:stateful"]
        ),
        conformance_test!(
            related_notifications_arrive_in_order_before_the_result,
            ["transport:streamable-http:notifications"]
        ),
        conformance_test!(
            a_nested_server_request_round_trips,
            ["transport:streamable-http:server-to-client"]
        ),
        conformance_test!(
            every_request_carries_headers_session_and_version,
            [
                "client-transport:http:accept-header-get",
                "client-transport:http:accept-header-post",
                "client-transport:http:custom-headers",
                "client-transport:http:custom-client",
                "client-transport:http:session-stored",
                "client-transport:http:protocol-version-header"
            ]
        ),
        // Apart: the other test of this requirement cannot run on two instances.
        conformance_test!(
            every_request_carries_the_negotiated_version => every_request_carries_headers_session_and_version,
            ["client-transport:http:protocol-version-stored"]
        ),
        conformance_test!(
            a_stateless_era_client_sends_the_standard_headers,
            [
                "client-transport:http:accept-header-post",
                "client-transport:http:custom-headers",
                "client-transport:http:custom-client",
                "client-transport:http:protocol-version-header",
                "client-transport:http:404-surfaces"
            ]
        ),
        conformance_test!(
            the_client_follows_a_downgrade,
            ["client-transport:http:protocol-version-stored"]
        ),
        conformance_test!(
            concurrent_calls_each_get_their_own_answer,
            ["client-transport:http:concurrent-streams"]
        ),
        conformance_test!(
            a_404_fails_in_flight_calls_and_starts_a_new_session,
            [
                "client-transport:http:404-surfaces",
                "client-transport:http:session-404-reinitialize"
            ]
        ),
        conformance_test!(
            a_call_refused_for_a_forgotten_session_goes_to_a_new_one,
            [
                "client-transport:http:404-surfaces",
                "client-transport:http:session-404-reinitialize"
            ]
        ),
        conformance_test!(
            after_delete_a_new_connection_gets_a_new_session,
            ["flow:session:terminate-then-reconnect"]
        ),
        conformance_test!(
            a_405_on_get_leaves_the_connection_working,
            ["client-transport:http:sse-405-tolerated"]
        ),
        conformance_test!(
            a_405_on_delete_is_a_clean_close,
            ["client-transport:http:terminate-405-ok"]
        ),
        conformance_test!(
            stateful_clients_stay_isolated,
            [
                "flow:multi-client:stateful-isolation",
                "hosting:session:isolation"
            ]
        ),
        conformance_test!(
            a_url_elicitation_right_after_initialization,
            ["flow:elicitation:url-at-session-init"]
        ),
    ]
}

pub(crate) fn quick() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default().retry_interval(Duration::from_millis(50))
}

pub(crate) fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string())
}

/// A client that forwards every `test/note` it receives.
pub(crate) fn noting_client(tx: mpsc::UnboundedSender<Value>) -> modelctx::client::ClientBuilder {
    client().notification_handler::<Note, _, _>(move |params, _| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(params);
        }
    })
}

/// A one-shot gate a handler waits on.
#[derive(Clone)]
pub(crate) struct Gate(Arc<AsyncMutex<mpsc::UnboundedReceiver<()>>>);

pub(crate) fn gate() -> (mpsc::UnboundedSender<()>, Gate) {
    let (tx, rx) = mpsc::unbounded_channel();
    (tx, Gate(Arc::new(AsyncMutex::new(rx))))
}

impl Gate {
    pub(crate) async fn pass(&self) {
        self.0.lock().await.recv().await;
    }
}

async fn calls_and_errors_work_end_to_end(connect: Connector) {
    let server = Server::builder("e2e", "1.0.0")
        .request_handler::<Echo, _, _>(|p, _| async move { Ok(p) })
        .request_handler::<Work, _, _>(|_, _| async move {
            Err::<Value, _>(ErrorData::invalid_params("work needs a task"))
        })
        .build();
    let hosted = host_on(&connect, server, StreamableHttpServerConfig::default()).await;
    let (transport, _) = hosted.transport();
    let client = client().connect(transport).await.unwrap();
    assert_eq!(client.server_info().name, "e2e");
    assert_eq!(
        client.request::<Echo>(json!({"x": 1})).await.unwrap(),
        json!({"x": 1})
    );
    let err = client.request::<Work>(json!({})).await.unwrap_err();
    let protocol = err.protocol_error().expect("a JSON-RPC error");
    assert_eq!(protocol.code, modelctx::types::ErrorCode::INVALID_PARAMS);
    assert!(protocol.message.contains("work needs a task"));
}

async fn related_notifications_arrive_in_order_before_the_result(connect: Connector) {
    let server = Server::builder("chatty", "1.0.0")
        .request_handler::<Work, _, _>(|_, cx| async move {
            for i in 0..5 {
                cx.notify::<Note>(json!({"i": i})).await.map_err(internal)?;
            }
            Ok(json!({"done": true}))
        })
        .build();
    let hosted = host_on(&connect, server, StreamableHttpServerConfig::default()).await;
    let (transport, _) = hosted.transport();
    let (transport, wire) = record(modelctx::transport::boxed(transport));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = noting_client(tx).connect(transport).await.unwrap();
    assert_eq!(
        client.request::<Work>(json!({})).await.unwrap(),
        json!({"done": true})
    );
    for i in 0..5 {
        let note = within("a note callback", rx.recv()).await.unwrap();
        assert_eq!(note, json!({"i": i}), "callbacks fire in the order sent");
    }
    let received = wire.received();
    let notes = received
        .iter()
        .position(|m| m.method() == Some("test/note"))
        .expect("notes on the wire");
    let result = received
        .iter()
        .rposition(|m| matches!(m, JsonRpcMessage::Response(_)))
        .unwrap();
    assert!(notes < result, "the notes precede the result on the stream");
}

async fn a_nested_server_request_round_trips(connect: Connector) {
    let server = Server::builder("asker", "1.0.0")
        .request_handler::<Work, _, _>(|params, cx| async move {
            let answer = cx
                .request::<Echo>(json!({"q": params}))
                .await
                .map_err(internal)?;
            Ok(json!({"client said": answer}))
        })
        .build();
    let hosted = host_on(&connect, server, StreamableHttpServerConfig::default()).await;
    let (transport, _) = hosted.transport();
    let client = client()
        .request_handler::<Echo, _, _>(|p, _| async move { Ok(json!({"echo": p})) })
        .connect(transport)
        .await
        .unwrap();
    let r = within(
        "the nested round trip",
        client.request::<Work>(json!({"n": 7})),
    )
    .await
    .unwrap();
    assert_eq!(r, json!({"client said": {"echo": {"q": {"n": 7}}}}));
}

/// Hosts [`echo_server`] named `name` with the default configuration.
async fn host_echo(connect: &Connector, name: &str) -> Hosted {
    host_on(
        connect,
        echo_server(name),
        StreamableHttpServerConfig::default(),
    )
    .await
}

/// A transport to `url` whose reqwest client adds `x-from-client: yes` and which adds
/// `x-custom: 42` itself.
fn transport_with_extra_headers(url: &str) -> StreamableHttpClientTransport {
    let mut defaults = http::HeaderMap::new();
    defaults.insert("x-from-client", http::HeaderValue::from_static("yes"));
    let http_client = reqwest::Client::builder()
        .default_headers(defaults)
        .build()
        .unwrap();
    StreamableHttpClientTransport::builder(url)
        .client(http_client)
        .header(
            http::HeaderName::from_static("x-custom"),
            http::HeaderValue::from_static("42"),
        )
        .build()
        .unwrap()
}

pub(crate) fn session_of(s: &Seen) -> Option<&str> {
    s.header("mcp-session-id")
}

async fn every_request_carries_headers_session_and_version(connect: Connector) {
    let hosted = host_echo(&connect, "h").await;
    let transport = transport_with_extra_headers(&hosted.url);
    let handle = transport.handle();
    let client = client().connect(transport).await.unwrap();
    client.request::<Echo>(json!({})).await.unwrap();
    hosted
        .wait_for("the standalone GET", |s| s.method == http::Method::GET)
        .await;
    let session = handle.session_id().expect("the session id is kept");
    assert_eq!(handle.protocol_version().as_deref(), Some("2025-11-25"));
    client.close().await;
    let seen = hosted
        .wait_for("the DELETE", |s| s.method == http::Method::DELETE)
        .await;
    assert_eq!(session_of(&seen), Some(session.as_str()));
    let all = hosted.seen();
    assert!(
        all.len() >= 5,
        "initialize, initialized, GET, call, DELETE: {all:?}"
    );
    for (i, s) in all.iter().enumerate() {
        assert_eq!(s.header("x-custom"), Some("42"), "{s:?}");
        assert_eq!(s.header("x-from-client"), Some("yes"), "{s:?}");
        let accept = s.header("accept").unwrap_or_default();
        if s.method == http::Method::POST {
            assert!(
                accept.contains("application/json") && accept.contains("text/event-stream"),
                "{accept}"
            );
        }
        if s.method == http::Method::GET {
            assert!(accept.contains("text/event-stream"), "{accept}");
        }
        if i > 0 {
            assert_eq!(session_of(s), Some(session.as_str()), "{s:?}");
            assert_eq!(
                s.header("mcp-protocol-version"),
                Some("2025-11-25"),
                "{s:?}"
            );
        } else {
            assert_eq!(session_of(s), None, "initialize goes without a session id");
        }
    }
}

async fn the_client_follows_a_downgrade(_: Connector) {
    // A server that only speaks 2025-03-26, written against the raw transport.
    let service = StreamableHttpService::new(|transport| {
        use modelctx::transport::{MessageSink, MessageStream, Transport, TransportMessage};
        let (sink, mut stream) = transport.split();
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.recv().await {
                if let JsonRpcMessage::Request(r) = m.message {
                    let result = if r.method == "initialize" {
                        json!({"protocolVersion": "2025-03-26", "capabilities": {},
                               "serverInfo": {"name": "old", "version": "1"}})
                    } else {
                        json!({})
                    };
                    let reply = json!({"jsonrpc": "2.0", "id": r.id, "result": result});
                    let reply: JsonRpcMessage = reply.to_string().parse().unwrap();
                    let _ = sink
                        .send(TransportMessage::new(reply).related_to(Some(r.id)))
                        .await;
                }
            }
        });
    });
    let versions = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = versions.clone();
    let app = service.router().layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let log = log.clone();
            async move {
                let v = request
                    .headers()
                    .get("mcp-protocol-version")
                    .map(|v| v.to_str().unwrap_or_default().to_owned());
                log.lock().unwrap().push((request.method().clone(), v));
                next.run(request).await
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let transport = StreamableHttpClientTransport::new(&url).unwrap();
    let handle = transport.handle();
    let client = client()
        .connect(transport)
        .await
        .expect("the client downgrades");
    assert_eq!(client.protocol_version().as_str(), "2025-03-26");
    assert_eq!(handle.protocol_version().as_deref(), Some("2025-03-26"));
    client.ping().await.unwrap();
    let log = versions.lock().unwrap().clone();
    let posts: Vec<_> = log
        .iter()
        .filter(|(m, _)| m == http::Method::POST)
        .collect();
    assert_eq!(posts[0].1, None, "initialize names no version yet");
    for (_, v) in &posts[1..] {
        assert_eq!(v.as_deref(), Some("2025-03-26"), "{log:?}");
    }
}

async fn concurrent_calls_each_get_their_own_answer(connect: Connector) {
    let server = Server::builder("many", "1.0.0")
        .request_handler::<Work, _, _>(|p, cx| async move {
            cx.notify::<Note>(p.clone()).await.map_err(internal)?;
            tokio::task::yield_now().await;
            Ok(json!({"answer": p}))
        })
        .build();
    let hosted = host_on(&connect, server, StreamableHttpServerConfig::default()).await;
    let (transport, _) = hosted.transport();
    let client = client().connect(transport).await.unwrap();
    let calls = (0..20).map(|i| {
        let client = client.clone();
        async move { client.request::<Work>(json!({"i": i})).await.unwrap() }
    });
    let results = within("twenty calls", futures::future::join_all(calls)).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r, json!({"answer": {"i": i}}));
    }
    let posts = hosted.requests(&http::Method::POST).len();
    assert!(posts >= 22, "one POST per message: {posts}");
}

async fn a_404_fails_in_flight_calls_and_starts_a_new_session(connect: Connector) {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let hosted = host_on(
        &connect,
        blocking_server(mpsc::unbounded_channel().0, started_tx),
        quick(),
    )
    .await;
    let (transport, handle) = hosted.transport();
    let client = client().connect(transport).await.unwrap();
    let first = handle.session_id().unwrap();
    let blocked = tokio::spawn({
        let client = client.clone();
        async move { client.request::<Block>(json!({})).await }
    });
    within("the handler to start", started.recv()).await;
    // The server forgets the session.
    hosted.close_all_sessions().await;
    let err = within("the in-flight call to fail", blocked)
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("404"), "a clear error: {err}");
    // The next call starts a new session: initialize again, without the old id.
    assert_eq!(
        client.request::<Echo>(json!({"again": 1})).await.unwrap(),
        json!({"again": 1})
    );
    let second = handle.session_id().unwrap();
    assert_ne!(first, second);
    let inits: Vec<Seen> = hosted
        .seen()
        .into_iter()
        .filter(|s| s.status == http::StatusCode::OK && s.header("mcp-session-id").is_none())
        .filter(|s| s.method == http::Method::POST)
        .collect();
    assert_eq!(inits.len(), 2, "two initializes, both without a session id");
}

async fn a_call_refused_for_a_forgotten_session_goes_to_a_new_one(connect: Connector) {
    let hosted = host_echo(&connect, "r").await;
    // No standalone GET stream: the call alone finds the session gone (a GET stream
    // reconnecting after the server ended it may find it first, and then the client
    // starts the new session before the call is sent: no refusal to see).
    let transport = StreamableHttpClientTransport::builder(&hosted.url)
        .standalone_stream(false)
        .build()
        .expect("a valid URL");
    let handle = transport.handle();
    let client = client().connect(transport).await.unwrap();
    let first = handle.session_id().unwrap();
    // The server forgets the session while the client is idle (as a restart would).
    hosted.close_all_sessions().await;
    // The next call is refused with 404 before it runs: the client starts a new
    // session and sends it there, and the caller sees only its answer.
    assert_eq!(
        within("the call", client.request::<Echo>(json!({"after": 1})))
            .await
            .unwrap(),
        json!({"after": 1})
    );
    assert_ne!(handle.session_id().unwrap(), first);
    let posts: Vec<Seen> = hosted.requests(&http::Method::POST);
    let refused = posts
        .iter()
        .filter(|s| s.status == http::StatusCode::NOT_FOUND)
        .count();
    assert_eq!(refused, 1, "one refusal: the call in the forgotten session");
    let inits = posts
        .iter()
        .filter(|s| s.status == http::StatusCode::OK && s.header("mcp-session-id").is_none())
        .count();
    assert_eq!(inits, 2, "two initializes, both without a session id");
}

async fn after_delete_a_new_connection_gets_a_new_session(connect: Connector) {
    let mut hosted = host_echo(&connect, "d").await;
    let (transport, a) = hosted.transport();
    let first = client().connect(transport).await.unwrap();
    let started = hosted.session().await;
    let a_id = a.session_id().unwrap();
    first.close().await;
    within("the first session to end", started.session.closed()).await;
    let (transport, b) = hosted.transport();
    let second = client().connect(transport).await.unwrap();
    let b_id = b.session_id().unwrap();
    assert_ne!(a_id, b_id);
    assert_eq!(
        second.request::<Echo>(json!({"k": 2})).await.unwrap(),
        json!({"k": 2})
    );
    let raw = Raw::new(&hosted.url);
    let r = send(raw.post(Some(&a_id), &call(9, "test/echo", json!({})))).await;
    assert_eq!(r.status, 404, "the ended session stays gone");
}

async fn a_405_on_get_leaves_the_connection_working(connect: Connector) {
    let script = Script {
        get_405: true,
        ..Script::default()
    };
    let server = echo_server("nostream");
    let hosted = host_scripted(
        &connect,
        server,
        StreamableHttpServerConfig::default(),
        script,
    )
    .await;
    let (transport, _) = hosted.transport();
    let client = client().connect(transport).await.unwrap();
    hosted
        .wait_for("the GET", |s| s.method == http::Method::GET)
        .await;
    for i in 0..3 {
        assert_eq!(
            client.request::<Echo>(json!({"i": i})).await.unwrap(),
            json!({"i": i})
        );
    }
    let gets = hosted.requests(&http::Method::GET).len();
    assert_eq!(gets, 1, "405 means no stream: the client does not retry");
    assert!(!client.peer().is_closed());
}

async fn a_405_on_delete_is_a_clean_close(connect: Connector) {
    let script = Script {
        delete_405: true,
        ..Script::default()
    };
    let hosted = host_scripted(
        &connect,
        Server::builder("keep", "1.0.0").build(),
        StreamableHttpServerConfig::default(),
        script,
    )
    .await;
    let (transport, handle) = hosted.transport();
    let client = client().connect(transport).await.unwrap();
    within("close", client.close()).await;
    within("the client to be closed", client.closed()).await;
    let delete = hosted
        .wait_for("the DELETE", |s| s.method == http::Method::DELETE)
        .await;
    assert_eq!(delete.status, http::StatusCode::METHOD_NOT_ALLOWED);
    assert!(handle.is_closed());
}

async fn stateful_clients_stay_isolated(connect: Connector) {
    let server = Server::builder("shared", "1.0.0")
        .request_handler::<Work, _, _>(|p, cx| async move {
            cx.notify::<Note>(json!({"for": p}))
                .await
                .map_err(internal)?;
            Ok(p)
        })
        .build();
    let mut hosted = host_on(&connect, server, StreamableHttpServerConfig::default()).await;
    let mut clients = Vec::new();
    for name in ["a", "b", "c"] {
        let (transport, handle) = hosted.transport();
        let (tx, rx) = mpsc::unbounded_channel();
        let client = noting_client(tx).connect(transport).await.unwrap();
        let started = hosted.session().await;
        hosted
            .wait_for("the standalone GET", |s| {
                s.method == http::Method::GET && session_of(s) == started.id.as_deref()
            })
            .await;
        clients.push((name, client, handle, rx, started));
    }
    let ids: std::collections::HashSet<_> =
        clients.iter().map(|c| c.2.session_id().unwrap()).collect();
    assert_eq!(ids.len(), 3, "one Mcp-Session-Id per client");
    for (name, client, _, _, started) in &clients {
        client.request::<Work>(json!({"name": name})).await.unwrap();
        started
            .session
            .notify::<Note>(json!({"push": name}))
            .await
            .unwrap();
    }
    for (name, _, _, rx, _) in &mut clients {
        let mut got = vec![
            within("a note", rx.recv()).await.unwrap(),
            within("a note", rx.recv()).await.unwrap(),
        ];
        got.sort_by_key(Value::to_string);
        assert_eq!(
            got,
            vec![json!({"for": {"name": name}}), json!({"push": name})]
        );
        assert!(
            rx.try_recv().is_err(),
            "nothing of another client reached {name}"
        );
    }
    // Ending one session leaves the others working.
    let (_, first, ..) = clients.remove(0);
    first.close().await;
    for (name, client, ..) in &clients {
        assert_eq!(
            client.request::<Work>(json!({"name": name})).await.unwrap(),
            json!({"name": name})
        );
    }
}

async fn a_url_elicitation_right_after_initialization(connect: Connector) {
    let (answered_tx, mut answered) = mpsc::unbounded_channel();
    let server = Server::builder("welcome", "1.0.0")
        .notification_handler::<InitializedNotification, _, _>(move |_, peer| {
            let answered = answered_tx.clone();
            async move {
                let params = ElicitRequestParams::Url(ElicitRequestUrlParams::new(
                    "Please sign in",
                    "sign-in-1",
                    "https://auth.example/sign-in",
                ));
                let result = peer.request::<ElicitRequest>(params).await;
                let _ = answered.send(result.map(|r| r.action));
            }
        })
        .build();
    let hosted = host_on(&connect, server, StreamableHttpServerConfig::default()).await;
    let (asked_tx, mut asked) = mpsc::unbounded_channel();
    let (transport, _) = hosted.transport();
    let _client = client()
        .capabilities(ClientCapabilities::default().with_elicitation_url())
        .request_handler::<ElicitRequest, _, _>(move |params, _| {
            let asked = asked_tx.clone();
            async move {
                if let ElicitRequestParams::Url(url) = params {
                    let _ = asked.send(url.url.clone());
                }
                Ok(ElicitResult::new(ElicitAction::Accept))
            }
        })
        .connect(transport)
        .await
        .unwrap();
    let action = within("the answer", answered.recv())
        .await
        .unwrap()
        .unwrap();
    let url = within("the elicitation", asked.recv()).await.unwrap();
    assert_eq!(url, "https://auth.example/sign-in");
    assert_eq!(action, ElicitAction::Accept);
    let get = hosted.requests(&http::Method::GET).len();
    assert!(get >= 1, "it travelled on the standalone GET stream");
}

/// 2026-07-28 over HTTP: every POST carries both media types in `Accept`, the
/// transport's own and its reqwest client's headers, and `MCP-Protocol-Version`, and no
/// session id; a 404 (here: a method 2026-07-28 removed) reaches the caller as an error.
async fn a_stateless_era_client_sends_the_standard_headers(connect: Connector) {
    let hosted = host_echo(&connect, "h").await;
    let transport = transport_with_extra_headers(&hosted.url);
    let client = connect_modern(transport).await;
    client.request::<Echo>(json!({"k": 1})).await.unwrap();
    let removed = client
        .peer()
        .request_with::<modelctx::types::PingRequest>(None, raw_options(&client))
        .await
        .unwrap_err();
    assert_eq!(
        error_code(&removed),
        modelctx::types::ErrorCode::METHOD_NOT_FOUND,
        "{removed}"
    );
    client.close().await;
    let all = hosted.seen();
    assert!(all.len() >= 3, "discover, the call, the ping: {all:?}");
    for s in &all {
        assert_eq!(s.method, http::Method::POST, "{s:?}");
        assert_eq!(s.header("x-custom"), Some("42"), "{s:?}");
        assert_eq!(s.header("x-from-client"), Some("yes"), "{s:?}");
        let accept = s.header("accept").unwrap_or_default();
        assert!(
            accept.contains("application/json") && accept.contains("text/event-stream"),
            "{accept}"
        );
        assert_eq!(
            s.header("mcp-protocol-version"),
            Some("2026-07-28"),
            "{s:?}"
        );
        assert_eq!(s.header("mcp-session-id"), None, "{s:?}");
    }
    assert!(all.iter().any(|s| s.status == http::StatusCode::NOT_FOUND));
}
