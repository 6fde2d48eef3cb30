//! The client's bounds on what a server sends: a body read whole (a JSON answer, a
//! refusal's body) is capped while it streams, so a server that never ends its body
//! cannot make the client buffer it.

#![cfg(feature = "client")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use modelctx_http::StreamableHttpClientTransport;
use modelctx_transport::Transport;
use modelctx_types::JsonRpcMessage;
use tokio::sync::mpsc;

use crate::roundtrip::{next, send_json};

const WAIT: Duration = Duration::from_secs(10);

/// The client's cap in these tests.
const CAP: usize = 1024 * 1024;

/// What an endless body sends at most: far more than the cap and what the kernel's
/// socket buffers hold, so that a client that does not stop reading at the cap is seen
/// to read past it; then the body stays open without ending (a client waiting for its
/// end waits forever), rather than eating the machine's memory.
const ENDLESS_STOP: usize = 96 * 1024 * 1024;

/// What the server may have written before it sees the client hang up: the cap, and
/// what the kernel's socket buffers and hyper's write buffer took in meanwhile.
const SLACK: usize = 40 * 1024 * 1024;

const CHUNK: usize = 64 * 1024;

/// An endless body: counts what it hands to the connection in `sent`, and reports on
/// `dropped` when the connection let go of it (the client hung up).
fn endless(sent: Arc<AtomicUsize>, dropped: mpsc::UnboundedSender<usize>) -> Body {
    struct OnDrop(Arc<AtomicUsize>, mpsc::UnboundedSender<usize>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let _ = self.1.send(self.0.load(Ordering::SeqCst));
        }
    }
    let guard = OnDrop(sent.clone(), dropped);
    let chunk = bytes::Bytes::from(vec![b' '; CHUNK]);
    let first = bytes::Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"pad\":\"");
    let head = futures::stream::once(async move { Ok::<_, std::io::Error>(first) });
    let tail = futures::stream::unfold((guard, chunk), |(guard, chunk)| async move {
        if guard.0.load(Ordering::SeqCst) >= ENDLESS_STOP {
            // Open, never ending.
            std::future::pending::<()>().await;
        }
        guard.0.fetch_add(chunk.len(), Ordering::SeqCst);
        Some((Ok(chunk.clone()), (guard, chunk)))
    });
    Body::from_stream(futures::StreamExt::chain(head, tail))
}

/// An SSE stream whose second event never ends: a resumable priming event, then
/// `data:` without end.
fn endless_event(sent: Arc<AtomicUsize>, dropped: mpsc::UnboundedSender<usize>) -> Body {
    let priming = bytes::Bytes::from_static(b"id: e1\ndata:\n\nid: e2\ndata: {\"pad\":\"");
    let rest = endless(sent, dropped);
    let head = futures::stream::once(async move { Ok::<_, axum::Error>(priming) });
    Body::from_stream(futures::StreamExt::chain(head, rest.into_data_stream()))
}

fn json(status: u16, body: Body) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("mcp-session-id", "s1")
        .body(body)
        .unwrap()
}

/// A server that answers `initialize` and `ping`, and answers `tools/list` with an
/// endless JSON body, `resources/list` with an endless body under HTTP 500 (both for
/// either protocol era) and `prompts/list` with an SSE event that never ends.
async fn server() -> (String, Arc<AtomicUsize>, mpsc::UnboundedReceiver<usize>) {
    let sent = Arc::new(AtomicUsize::new(0));
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let counter = sent.clone();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let sent = counter.clone();
        let dropped = dropped_tx.clone();
        async move {
            if request.method() != http::Method::POST {
                return Response::builder().status(405).body(Body::empty()).unwrap();
            }
            let body = axum::body::to_bytes(request.into_body(), 1 << 20)
                .await
                .unwrap();
            let message: JsonRpcMessage = serde_json::from_slice(&body).unwrap();
            let JsonRpcMessage::Request(r) = message else {
                return Response::builder().status(202).body(Body::empty()).unwrap();
            };
            match r.method.as_ref() {
                "initialize" => json(
                    200,
                    Body::from(format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"s","version":"1"}}}}}}"#,
                        r.id
                    )),
                ),
                "tools/list" => json(200, endless(sent, dropped)),
                "resources/list" => json(500, endless(sent, dropped)),
                "prompts/list" => Response::builder()
                    .header("content-type", "text/event-stream")
                    .header("mcp-session-id", "s1")
                    .body(endless_event(sent, dropped))
                    .unwrap(),
                _ => json(
                    200,
                    Body::from(format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, r.id)),
                ),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, sent, dropped)
}

/// The error message of an error answer to request `id`.
fn error_of(message: &JsonRpcMessage, id: &str) -> String {
    match message {
        JsonRpcMessage::Error(e) => {
            assert_eq!(e.id.as_ref().map(ToString::to_string).as_deref(), Some(id));
            e.error.message.to_string()
        }
        other => panic!("expected an error for request {id}, got {other:?}"),
    }
}

/// The message is an error answer to request `id` whose message says `says`.
fn assert_error_says(message: &JsonRpcMessage, id: &str, says: &str) {
    let error = error_of(message, id);
    assert!(error.contains(says), "{error}");
}

/// Waits until the server saw the client hang up on an endless body; what it had
/// handed to the connection by then is within the cap and the socket buffers.
async fn hung_up(dropped: &mut mpsc::UnboundedReceiver<usize>, sent: &AtomicUsize) {
    let at = tokio::time::timeout(WAIT, dropped.recv())
        .await
        .expect("the client hangs up on the endless body")
        .unwrap();
    assert!(
        at <= CAP + SLACK,
        "the server wrote {at} bytes before the client hung up"
    );
    sent.store(0, Ordering::SeqCst);
}

/// A JSON answer, a refusal's body and an SSE event that never end: each request fails
/// with an error naming the cap, as soon as the cap is reached (the server sees the client hang
/// up with little more than the cap written), and the session serves the next request.
#[tokio::test]
async fn endless_bodies_fail_their_request_at_the_cap() {
    let (url, sent, mut dropped) = server().await;
    let transport = StreamableHttpClientTransport::builder(&url)
        .standalone_stream(false)
        .max_body_bytes(CAP)
        .max_event_bytes(CAP)
        .build()
        .unwrap();
    let (sink, mut stream) = transport.split();
    send_json(
        &sink,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
    )
    .await;
    assert!(matches!(
        next(&mut stream).await,
        JsonRpcMessage::Response(_)
    ));

    // What the failure of a JSON answer over the cap says.
    let over_cap = format!("exceeds the client's limit of {CAP} bytes");

    // A JSON answer (protocol 2025-11-25).
    send_json(&sink, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
    assert_error_says(&next(&mut stream).await, "2", &over_cap);
    hung_up(&mut dropped, &sent).await;

    // A refusal's body: the request fails with its status, the body unread.
    send_json(
        &sink,
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#,
    )
    .await;
    assert_error_says(&next(&mut stream).await, "3", "HTTP 500");
    hung_up(&mut dropped, &sent).await;

    // A JSON answer of the stateless era (protocol 2026-07-28).
    send_json(&sink, r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#).await;
    assert_error_says(&next(&mut stream).await, "4", &over_cap);
    hung_up(&mut dropped, &sent).await;

    // An SSE event: the request fails, saying so (its stream is not resumed: the
    // event would be as large again).
    send_json(&sink, r#"{"jsonrpc":"2.0","id":6,"method":"prompts/list"}"#).await;
    assert_error_says(
        &next(&mut stream).await,
        "6",
        &format!("exceeds {CAP} bytes (max_event_bytes)"),
    );
    hung_up(&mut dropped, &sent).await;

    // The session goes on.
    send_json(&sink, r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).await;
    assert!(matches!(
        next(&mut stream).await,
        JsonRpcMessage::Response(_)
    ));
}

/// A body whose `Content-Length` is over the cap is refused before any of it is read.
#[tokio::test]
async fn a_declared_length_over_the_cap_is_refused_unread() {
    let app = axum::Router::new().fallback(|| async { json(200, Body::from(vec![b' '; 2 * CAP])) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let response = reqwest::get(&url).await.unwrap();
    assert_eq!(response.content_length(), Some(2 * CAP as u64));
    let error = modelctx_http::read_capped(response, CAP).await.unwrap_err();
    assert!(error.is_too_large(), "{error}");
    // Within the cap, the body is read whole.
    let response = reqwest::get(&url).await.unwrap();
    let body = modelctx_http::read_capped(response, 2 * CAP).await.unwrap();
    assert_eq!(body.len(), 2 * CAP);
}
