//! The legacy HTTP+SSE transport (2024-11-05): the event stream and its `endpoint`
//! event, message routing by session id, and the two backwards-compatibility flows —
//! one server speaking both transports, and the streamable HTTP client falling back.
//! Checked on the wire with a raw HTTP client, and end to end with the SDK's clients.

use modelctx::client::Client;
use modelctx::http::sse::{SseEvent, SseParser};
use modelctx::http::{StreamableHttpService, hosting};
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Server, ServerSession, ToolDef};
use modelctx::sse::{
    ActiveTransport, FallbackClientTransport, SseClientTransport, SseServerConfig, SseService,
};
use modelctx::types::ErrorCode;
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::http_support::{call, initialize};
use crate::support::{client, server_with_tool, tool_names};
use crate::tools::obj;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            initialize_and_calls_complete_with_every_answer_an_sse_event,
            ["transport:sse"]
        ),
        conformance_test!(
            the_stream_opens_with_the_endpoint_of_a_registered_session,
            ["transport:sse:endpoint-event"]
        ),
        conformance_test!(
            posts_without_a_live_session_id_are_refused_undelivered,
            ["transport:sse:post:session-routing"]
        ),
        conformance_test!(
            one_server_serves_both_transports_with_the_same_tools,
            ["flow:compat:dual-transport-server"]
        ),
        conformance_test!(
            a_refused_streamable_initialize_falls_back_to_legacy_sse,
            ["flow:compat:streamable-then-sse-fallback"]
        ),
    ]
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Words {
    text: String,
}

/// A server with one tool, `shout`.
fn shouting_server() -> Server {
    let shout = ToolDef::new("shout", |w: Words, _cx: Context| async move {
        Ok::<_, String>(w.text.to_uppercase())
    });
    server_with_tool("shouter", shout)
}

/// A `Server` hosted over legacy SSE on a loopback port; each session it starts is
/// reported.
struct HostedSse {
    origin: String,
    service: SseService,
    sessions: mpsc::UnboundedReceiver<ServerSession>,
}

async fn host_sse(server: Server, config: SseServerConfig) -> HostedSse {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let (tx, sessions) = mpsc::unbounded_channel();
    let service = SseService::with_config(config, move |transport| {
        let _ = tx.send(server.serve(transport));
    });
    tokio::spawn(service.clone().serve(listener, std::future::pending()));
    HostedSse {
        origin,
        service,
        sessions,
    }
}

/// A raw event stream: `GET /sse` answered and read event by event.
struct RawStream {
    response: reqwest::Response,
    parser: SseParser,
    pending: std::collections::VecDeque<SseEvent>,
}

impl RawStream {
    async fn open(url: &str) -> RawStream {
        let response = within(
            "the event stream to open",
            reqwest::Client::new()
                .get(url)
                .header("accept", "text/event-stream")
                .send(),
        )
        .await
        .expect("the server answers");
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        RawStream {
            response,
            parser: SseParser::new(1 << 20),
            pending: Default::default(),
        }
    }

    /// The next event; `None` when the stream ended.
    async fn next(&mut self) -> Option<SseEvent> {
        within("an SSE event", async {
            loop {
                if let Some(event) = self.pending.pop_front() {
                    return Some(event);
                }
                let chunk = self.response.chunk().await.ok().flatten()?;
                self.pending.extend(self.parser.push(&chunk).unwrap());
            }
        })
        .await
    }

    /// The next `message` event's JSON.
    async fn message(&mut self) -> Value {
        let event = self.next().await.expect("a message event");
        assert_eq!(event.event_type(), "message", "{event:?}");
        serde_json::from_str(&event.data).expect("a JSON-RPC message")
    }
}

async fn post(url: &str, body: &Value) -> (u16, String) {
    within("a POST", async {
        let response = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    })
    .await
}

/// The handshake, then a tool call, over a raw event stream: each POST is accepted
/// (202) and each answer arrives as a `message` event on the stream.
async fn initialize_and_calls_complete_with_every_answer_an_sse_event(_: Connector) {
    let hosted = host_sse(shouting_server(), SseServerConfig::default()).await;
    let mut stream = RawStream::open(&format!("{}/sse", hosted.origin)).await;
    let endpoint = stream.next().await.expect("the endpoint event");
    let messages = format!("{}{}", hosted.origin, endpoint.data);

    let (status, _) = post(&messages, &initialize(1, "2025-11-25")).await;
    assert_eq!(status, 202);
    let answer = stream.message().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&messages, &initialized).await.0, 202);
    let shout = call(
        2,
        "tools/call",
        json!({"name": "shout", "arguments": {"text": "hi"}}),
    );
    assert_eq!(post(&messages, &shout).await.0, 202);
    let answer = stream.message().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "HI");

    // The SDK's client over the SDK's transport: the same conversation.
    let transport = SseClientTransport::connect(&format!("{}/sse", hosted.origin))
        .await
        .unwrap();
    let client = within("the client to connect", client().connect(transport))
        .await
        .unwrap();
    let result = client
        .call_tool("shout", obj(json!({"text": "again"})))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("AGAIN"));
}

/// The first event is `endpoint`, naming the message path with a fresh session id of
/// a session that already exists; the session ends when the stream disconnects, and a
/// POST for it then draws 404.
async fn the_stream_opens_with_the_endpoint_of_a_registered_session(_: Connector) {
    let mut hosted = host_sse(shouting_server(), SseServerConfig::default()).await;
    let url = format!("{}/sse", hosted.origin);
    let mut first = RawStream::open(&url).await;
    let endpoint = first.next().await.expect("an event");
    assert_eq!(endpoint.event_type(), "endpoint");
    let id = endpoint
        .data
        .strip_prefix("/messages?session_id=")
        .unwrap_or_else(|| panic!("an endpoint with a session id: {:?}", endpoint.data))
        .to_owned();
    assert!(id.len() >= 32, "128 random bits at least: {id}");
    // Registered before it was announced: the service counts it, its session runs.
    assert_eq!(hosted.service.session_count(), 1);
    let session = within("the server session", hosted.sessions.recv())
        .await
        .unwrap();
    let messages = format!("{}{}", hosted.origin, endpoint.data);
    let ping = call(1, "ping", json!({}));
    assert_eq!(post(&messages, &ping).await.0, 202);
    assert_eq!(first.message().await["id"], 1);

    // Another stream, another id.
    let mut second = RawStream::open(&url).await;
    let other = second.next().await.expect("an event");
    assert_ne!(other.data, endpoint.data);
    assert_eq!(hosted.service.session_count(), 2);

    drop(first);
    within("the session to end with its stream", session.closed()).await;
    let (status, _) = post(&messages, &ping).await;
    assert_eq!(status, 404);
    assert_eq!(hosted.service.session_count(), 1);
}

/// A POST whose session id is missing or malformed draws 400, one no live session has
/// draws 404, and none of them reaches a session; the next valid one does.
async fn posts_without_a_live_session_id_are_refused_undelivered(_: Connector) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let (tx, mut streams) = mpsc::unbounded_channel();
    let service = SseService::new(move |transport| {
        let _ = tx.send(modelctx::transport::Transport::split(transport));
    });
    tokio::spawn(service.serve(listener, std::future::pending()));
    let mut stream = RawStream::open(&format!("{origin}/sse")).await;
    let endpoint = stream.next().await.unwrap();
    let (_sink, mut server_stream) = within("the session", streams.recv()).await.unwrap();

    let note = |n: i64| json!({"jsonrpc": "2.0", "method": "test/note", "params": {"n": n}});
    let missing = post(&format!("{origin}/messages"), &note(1)).await;
    assert_eq!(missing.0, 400, "{missing:?}");
    let malformed = post(
        &format!("{origin}/messages?session_id=not%20an%20id"),
        &note(2),
    )
    .await;
    assert_eq!(malformed.0, 400, "{malformed:?}");
    let unknown = format!("{origin}/messages?session_id={}", "0".repeat(32));
    assert_eq!(post(&unknown, &note(3)).await.0, 404);
    // A refusal carries a JSON-RPC error saying why.
    let error: Value = serde_json::from_str(&missing.1).unwrap();
    assert_eq!(error["error"]["code"], ErrorCode::INVALID_REQUEST.0);

    let valid = format!("{origin}{}", endpoint.data);
    assert_eq!(post(&valid, &note(4)).await.0, 202);
    use modelctx::transport::MessageStream;
    let got = within("the valid message", server_stream.recv())
        .await
        .unwrap()
        .unwrap();
    let got = serde_json::to_value(&got.message).unwrap();
    assert_eq!(got["params"]["n"], 4, "only the valid POST arrives");
}

/// Streamable HTTP at `/mcp` and legacy SSE at `/sse` + `/messages` on one listener,
/// served from one `Server`: a client of each lists the same tools and calls them.
async fn one_server_serves_both_transports_with_the_same_tools(_: Connector) {
    let server = shouting_server();
    let for_http = server.clone();
    let http = StreamableHttpService::new(move |transport| {
        for_http.serve(transport);
    });
    let for_sse = server.clone();
    let sse = SseService::new(move |transport| {
        for_sse.serve(transport);
    });
    let router = sse.router().nest_service("/mcp", http.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let timeout = std::time::Duration::from_secs(10);
    tokio::spawn(hosting::serve_router(
        listener,
        router,
        timeout,
        std::future::pending(),
    ));

    let streamable =
        modelctx::http::StreamableHttpClientTransport::new(&format!("{origin}/mcp")).unwrap();
    let modern = within("the streamable client", client().connect(streamable))
        .await
        .unwrap();
    let legacy = SseClientTransport::connect(&format!("{origin}/sse"))
        .await
        .unwrap();
    let legacy = within("the legacy client", client().connect(legacy))
        .await
        .unwrap();
    let names = |c: &Client| {
        let c = c.clone();
        async move {
            let mut names = tool_names(&c).await;
            names.sort();
            names
        }
    };
    assert_eq!(names(&modern).await, names(&legacy).await);
    assert_eq!(names(&legacy).await, vec!["shout".to_owned()]);
    for c in [&modern, &legacy] {
        let r = c
            .call_tool("shout", obj(json!({"text": "both"})))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("BOTH"));
    }
    assert_eq!(http.session_count(), 1);
    assert_eq!(sse.session_count(), 1);
}

/// A server speaking only legacy SSE, whose `initialize` POST on the stream's URL is
/// answered 400, 404 or 405: the streamable HTTP client falls back to the legacy
/// transport on that URL and the session works; against a streamable HTTP server it
/// stays on streamable HTTP.
async fn a_refused_streamable_initialize_falls_back_to_legacy_sse(_: Connector) {
    for status in [400u16, 404, 405] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let server = shouting_server();
        let sse = SseService::new(move |transport| {
            server.serve(transport);
        });
        // The router answers POST on the stream's path 405 by itself; other refusals
        // are played by a layer in front of it.
        let refuse = http::StatusCode::from_u16(status).unwrap();
        let router = sse.router().layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| async move {
                if request.method() == http::Method::POST && request.uri().path() == "/sse" {
                    return axum::response::IntoResponse::into_response(refuse);
                }
                next.run(request).await
            },
        ));
        tokio::spawn(hosting::serve_router(
            listener,
            router,
            std::time::Duration::from_secs(10),
            std::future::pending(),
        ));
        let transport = FallbackClientTransport::new(&format!("{origin}/sse")).unwrap();
        let handle = transport.handle();
        assert_eq!(handle.active(), None);
        // With 405 the client also probes for 2026-07-28 first (its default mode):
        // the probe's refusal leads to the handshake, whose refusal to the fallback.
        let builder = if status == 405 {
            client().mode(modelctx::client::ConnectMode::Auto)
        } else {
            client()
        };
        let client = within("the client to connect", builder.connect(transport))
            .await
            .unwrap_or_else(|e| panic!("HTTP {status}: {e}"));
        assert_eq!(
            handle.active(),
            Some(ActiveTransport::LegacySse),
            "{status}"
        );
        let r = client
            .call_tool("shout", obj(json!({"text": "old"})))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("OLD"));
    }

    // A streamable HTTP server: no fallback.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = shouting_server();
    let http = StreamableHttpService::new(move |transport| {
        server.serve(transport);
    });
    tokio::spawn(http.serve(listener, std::future::pending()));
    let transport = FallbackClientTransport::new(&url).unwrap();
    let handle = transport.handle();
    let client = within("the client to connect", client().connect(transport))
        .await
        .unwrap();
    assert_eq!(handle.active(), Some(ActiveTransport::StreamableHttp));
    assert!(handle.streamable().session_id().is_some());
    let r = client
        .call_tool("shout", obj(json!({"text": "new"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("NEW"));
}
