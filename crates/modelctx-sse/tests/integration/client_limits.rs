//! The legacy SSE client's bound on a body it reads whole: a refused POST's body is
//! read for its JSON-RPC error under a cap enforced while it streams, so a server that
//! never ends it cannot make the client buffer it.

#![cfg(feature = "client")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use modelctx_sse::SseClientTransport;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::JsonRpcMessage;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(10);
const CAP: usize = 1024 * 1024;
/// What the endless body sends at most before it stays open without ending (far more
/// than the cap and the socket buffers; a client that reads on is seen to hang).
const ENDLESS_STOP: usize = 96 * 1024 * 1024;
/// The cap, and what socket buffers took in before the server saw the client hang up.
const SLACK: usize = 40 * 1024 * 1024;

/// An endless body; `dropped` hears what it had sent when the client hung up.
fn endless(dropped: mpsc::UnboundedSender<usize>) -> Body {
    struct OnDrop(Arc<AtomicUsize>, mpsc::UnboundedSender<usize>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let _ = self.1.send(self.0.load(Ordering::SeqCst));
        }
    }
    let guard = OnDrop(Arc::new(AtomicUsize::new(0)), dropped);
    let chunk = bytes::Bytes::from(vec![b' '; 64 * 1024]);
    Body::from_stream(futures::stream::unfold(
        (guard, chunk),
        |(guard, chunk)| async move {
            if guard.0.load(Ordering::SeqCst) >= ENDLESS_STOP {
                std::future::pending::<()>().await;
            }
            guard.0.fetch_add(chunk.len(), Ordering::SeqCst);
            Some((Ok::<_, std::io::Error>(chunk.clone()), (guard, chunk)))
        },
    ))
}

/// A request refused with HTTP 500 and a body that never ends fails with the
/// refusal's status, at the cap: the server sees the client hang up with little more
/// than the cap written.
#[tokio::test]
async fn an_endless_refusal_body_is_cut_at_the_cap() {
    let (dropped_tx, mut dropped) = mpsc::unbounded_channel();
    let app = axum::Router::new()
        .route(
            "/sse",
            axum::routing::get(|| async {
                let endpoint = modelctx_http::sse::encode_event("endpoint", "/messages");
                let events = futures::StreamExt::chain(
                    futures::stream::once(async move { Ok::<_, std::io::Error>(endpoint) }),
                    futures::stream::pending(),
                );
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from_stream(events))
                    .unwrap()
            }),
        )
        .route(
            "/messages",
            axum::routing::post(move || {
                let dropped = dropped_tx.clone();
                async move {
                    Response::builder()
                        .status(500)
                        .header("content-type", "application/json")
                        .body(endless(dropped))
                        .unwrap()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let transport = SseClientTransport::builder(&format!("{origin}/sse"))
        .max_body_bytes(CAP)
        .connect()
        .await
        .unwrap();
    let (sink, mut stream) = transport.split();
    let request: JsonRpcMessage =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#.parse().unwrap();
    // (The send waits for the POST's answer: a refusal is read before it returns.)
    tokio::time::timeout(WAIT, sink.send(TransportMessage::new(request)))
        .await
        .expect("the POST is done in time")
        .unwrap();
    let answer = tokio::time::timeout(WAIT, stream.recv())
        .await
        .expect("the request fails in time")
        .unwrap()
        .unwrap()
        .message;
    let JsonRpcMessage::Error(error) = answer else {
        panic!("expected an error, got {answer:?}");
    };
    assert_eq!(error.id.map(|i| i.to_string()).as_deref(), Some("7"));
    assert!(
        error.error.message.contains("HTTP 500"),
        "{}",
        error.error.message
    );
    let at = tokio::time::timeout(WAIT, dropped.recv())
        .await
        .expect("the client hangs up on the endless body")
        .unwrap();
    assert!(at <= CAP + SLACK, "the server wrote {at} bytes first");
}
