//! The legacy SSE transport against bad input and broken peers: the server's
//! protections and refusals, and the client's clear errors for a stream that never
//! becomes usable.

#![cfg(all(feature = "server", feature = "client"))]

use std::time::Duration;

use axum::response::IntoResponse;
use modelctx_http::sse::SseParser;
use modelctx_sse::{SseClientBuilder, SseClientTransport, SseServerConfig, SseService};
use modelctx_test::within;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::JsonRpcMessage;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(10);

/// An echo "server": every request is answered with its params as the result; `ended`
/// hears when its session's stream ended.
fn echo(transport: modelctx_sse::SseServerTransport, ended: mpsc::UnboundedSender<()>) {
    let (sink, mut stream) = transport.split();
    tokio::spawn(async move {
        while let Some(Ok(m)) = stream.recv().await {
            if let JsonRpcMessage::Request(r) = m.message {
                let params = r.params.as_deref().map_or("{}", |p| p.get());
                let reply = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{params}}}"#, r.id);
                let reply: JsonRpcMessage = reply.parse().unwrap();
                let _ = sink.send(TransportMessage::new(reply)).await;
            }
        }
        let _ = ended.send(());
    });
}

async fn serve(config: SseServerConfig) -> (String, SseService) {
    let (origin, service, _) = serve_watched(config).await;
    (origin, service)
}

async fn serve_watched(
    config: SseServerConfig,
) -> (String, SseService, mpsc::UnboundedReceiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let (ended_tx, ended) = mpsc::unbounded_channel();
    let service = SseService::with_config(config, move |t| echo(t, ended_tx.clone()));
    tokio::spawn(service.clone().serve(listener, std::future::pending()));
    (origin, service, ended)
}

/// Opens a raw stream and returns it with its message URL.
async fn open(origin: &str) -> (reqwest::Response, String) {
    let (response, _, url) = crate::handshake::open(origin).await;
    (response, url)
}

async fn post(url: &str, content_type: &str, body: impl Into<reqwest::Body>) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(url)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn the_body_rules_of_streamable_http_apply() {
    let (rejected_tx, mut rejected) = mpsc::unbounded_channel();
    let config = SseServerConfig::default()
        .max_body_bytes(1024)
        .on_error(move |r| {
            let _ = rejected_tx.send(r.status.as_u16());
        });
    let (origin, _service) = serve(config).await;
    let (_stream, url) = open(&origin).await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

    assert_eq!(post(&url, "text/plain", ping).await.0, 415);
    assert_eq!(
        post(&url, "application/json", vec![b' '; 2048]).await.0,
        413
    );
    let (status, body) = post(&url, "application/json", "{not json").await;
    assert_eq!(status, 400);
    assert!(body.contains("-32700"), "a parse error is answered: {body}");
    let (status, body) = post(&url, "application/json", format!("[{ping}]")).await;
    assert_eq!(status, 400, "one message per POST: {body}");
    assert_eq!(
        post(&url, "application/json; charset=utf-8", ping).await.0,
        202
    );
    for expected in [415, 413, 400, 400] {
        assert_eq!(
            within(WAIT, "a rejection", rejected.recv()).await,
            Some(expected)
        );
    }
}

/// The next `message` event of a raw stream, as JSON.
async fn next_message(stream: &mut reqwest::Response, parser: &mut SseParser) -> serde_json::Value {
    within(WAIT, "a message event", async {
        loop {
            let chunk = stream.chunk().await.unwrap().expect("the stream is open");
            for event in parser.push(&chunk).unwrap() {
                if event.event_type() == "message" {
                    return serde_json::from_str(&event.data).unwrap();
                }
            }
        }
    })
    .await
}

/// Protocol 2026-07-28 has no session to travel in, so such a request is refused; but
/// a legacy client reads answers only on its event stream and takes a refused POST for
/// a broken transport (the Python SDK's `sse_client` then drops the connection, so its
/// default client, which probes `server/discover` first, could not connect at all):
/// the POST is accepted and the refusal is the request's answer on the stream, after
/// which the session goes on.
#[tokio::test]
async fn a_request_of_protocol_2026_is_refused_on_the_stream_and_the_session_goes_on() {
    let (origin, _service) = serve(SseServerConfig::default()).await;
    let (mut stream, url) = open(&origin).await;
    let mut parser = SseParser::new(4096);
    let modern = r#"{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    assert_eq!(post(&url, "application/json", modern).await.0, 202);
    let answer = next_message(&mut stream, &mut parser).await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let reason = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(reason.contains("initialize"), "{answer}");
    // The refused request never reached the session, which still answers.
    let ping = r#"{"jsonrpc":"2.0","id":8,"method":"ping","params":{"n":1}}"#;
    assert_eq!(post(&url, "application/json", ping).await.0, 202);
    let answer = next_message(&mut stream, &mut parser).await;
    assert_eq!(answer["id"], 8, "{answer}");
    assert_eq!(answer["result"]["n"], 1, "{answer}");
}

#[tokio::test]
async fn foreign_origins_and_hosts_draw_403_and_open_no_session() {
    let (origin, service) = serve(SseServerConfig::default()).await;
    let client = reqwest::Client::new();
    for (name, value) in [("origin", "http://evil.example"), ("host", "evil.example")] {
        let r = client
            .get(format!("{origin}/sse"))
            .header(name, value)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{name}");
    }
    assert_eq!(service.session_count(), 0);
    let (_stream, url) = open(&origin).await;
    let r = client
        .post(&url)
        .header("origin", "http://evil.example")
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","method":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

#[tokio::test]
async fn the_session_cap_holds() {
    let (origin, _service) = serve(SseServerConfig::default().max_sessions(1)).await;
    let (_first, _) = open(&origin).await;
    let r = reqwest::get(format!("{origin}/sse")).await.unwrap();
    assert_eq!(r.status(), 503);
}

#[tokio::test]
async fn a_client_round_trip_and_close_ends_the_server_session() {
    let (origin, service, mut ended) = serve_watched(SseServerConfig::default()).await;
    let transport = SseClientTransport::connect(&format!("{origin}/sse"))
        .await
        .unwrap();
    let (sink, mut stream) = transport.split();
    let request: JsonRpcMessage = r#"{"jsonrpc":"2.0","id":3,"method":"echo","params":{"a":1}}"#
        .parse()
        .unwrap();
    sink.send(TransportMessage::new(request)).await.unwrap();
    let reply = within(WAIT, "the answer", stream.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::to_value(&reply.message).unwrap()["result"]["a"],
        1
    );
    assert_eq!(service.session_count(), 1);
    sink.close().await;
    assert!(
        within(WAIT, "the stream to end", stream.recv())
            .await
            .is_none()
    );
    // The server notices the disconnect: the session's stream ends, and the service
    // has forgotten it by then.
    within(WAIT, "the server session to end", ended.recv()).await;
    assert_eq!(service.session_count(), 0);
}

/// A one-route server whose `/sse` answers with `body` as an event stream.
async fn scripted(body: &'static str, keep_open: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let router = axum::Router::new().route(
        "/sse",
        axum::routing::get(move || async move {
            let head = futures::stream::once(async move {
                Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(body.as_bytes()))
            });
            let stream: futures::stream::BoxStream<'static, _> = if keep_open {
                Box::pin(futures::StreamExt::chain(head, futures::stream::pending()))
            } else {
                Box::pin(head)
            };
            (
                [("content-type", "text/event-stream")],
                axum::body::Body::from_stream(stream),
            )
                .into_response()
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    origin
}

/// Asserts that `builder` fails to connect with an error that says `why`.
async fn assert_refused(builder: SseClientBuilder, why: &str) {
    let err = builder.connect().await.unwrap_err();
    assert!(err.to_string().contains(why), "{err}");
}

/// Asserts that connecting to `url` with default settings fails with an error that
/// says `why`.
async fn assert_refused_at(url: &str, why: &str) {
    assert_refused(SseClientTransport::builder(url), why).await;
}

#[tokio::test]
async fn a_stream_that_ends_before_its_endpoint_is_a_clear_error() {
    let origin = scripted(": hello\n\n", false).await;
    assert_refused_at(&format!("{origin}/sse"), "ended before its endpoint").await;
}

#[tokio::test]
async fn a_stream_without_an_endpoint_times_out_clearly() {
    let origin = scripted(": hello\n\n", true).await;
    let builder = SseClientTransport::builder(&format!("{origin}/sse"))
        .endpoint_timeout(Duration::from_millis(200));
    assert_refused(builder, "no endpoint event within").await;
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused() {
    let origin = scripted(
        "event: endpoint\ndata: http://evil.example/messages?session_id=1\n\n",
        true,
    )
    .await;
    assert_refused_at(&format!("{origin}/sse"), "not on the origin").await;
}

#[tokio::test]
async fn a_server_that_is_not_sse_is_a_clear_error() {
    let (origin, _service) = serve(SseServerConfig::default()).await;
    assert_refused_at(&format!("{origin}/nowhere"), "HTTP 404").await;
}

/// Found by the property tests: a response that cannot be read (an error
/// object without `message`) on the event stream was skipped, and the call it answered
/// waited for its timeout (the stream stays open). It fails at once now, with a clear
/// error, and the next call is answered.
#[tokio::test]
async fn a_response_that_cannot_be_read_fails_its_call_at_once() {
    use std::sync::{Arc, Mutex};
    // The server: an event stream fed by its POST route, which answers method `bad`
    // with an error object lacking `message` and anything else with `{}`.
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let rx = Arc::new(Mutex::new(Some(rx)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let endpoint = format!("event: endpoint\ndata: {origin}/messages\n\n");
    let router = axum::Router::new()
        .route(
            "/sse",
            axum::routing::get(move || async move {
                let rx = rx.lock().unwrap().take().expect("one stream");
                let head = futures::stream::once(async move { endpoint });
                let rest = futures::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|event| (event, rx))
                });
                let events = futures::StreamExt::map(futures::StreamExt::chain(head, rest), |e| {
                    Ok::<_, std::convert::Infallible>(bytes::Bytes::from(e))
                });
                (
                    [("content-type", "text/event-stream")],
                    axum::body::Body::from_stream(events),
                )
                    .into_response()
            }),
        )
        .route(
            "/messages",
            axum::routing::post(move |body: String| async move {
                let m: serde_json::Value = serde_json::from_str(&body).unwrap();
                if let (Some(method), Some(id)) = (m["method"].as_str(), m.get("id")) {
                    let answer = if method == "bad" {
                        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000}}}}"#)
                    } else {
                        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
                    };
                    tx.send(format!("event: message\ndata: {answer}\n\n"))
                        .unwrap();
                }
                axum::http::StatusCode::ACCEPTED
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });

    let transport = within(
        WAIT,
        "the endpoint",
        SseClientTransport::connect(&format!("{origin}/sse")),
    )
    .await
    .unwrap();
    let (sink, mut stream) = transport.split();
    let call = |id: i64, method: &str| {
        TransportMessage::new(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)
                .parse::<JsonRpcMessage>()
                .unwrap(),
        )
    };
    sink.send(call(1, "bad")).await.unwrap();
    let answer = within(WAIT, "the failed call", stream.recv())
        .await
        .unwrap()
        .unwrap();
    let JsonRpcMessage::Error(e) = answer.message else {
        panic!("the call fails: {:?}", answer.message)
    };
    assert_eq!(e.id, Some(1.into()));
    assert!(
        e.error.message.contains("invalid response") && e.error.message.contains("`message`"),
        "{}",
        e.error.message
    );
    sink.send(call(2, "good")).await.unwrap();
    let answer = within(WAIT, "the next answer", stream.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&answer.message, JsonRpcMessage::Response(r) if r.id == 2.into()),
        "{:?}",
        answer.message
    );
}
