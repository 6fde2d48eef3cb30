//! A legacy session's place under the session cap: a failed `initialize` ends its
//! session once the error is sent, and a stream that completes no handshake in time is
//! ended, while an established one goes on.

#![cfg(all(feature = "server", feature = "client"))]

use std::time::Duration;

use modelctx_http::sse::SseParser;
use modelctx_sse::{SseServerConfig, SseService};
use modelctx_test::within;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::JsonRpcMessage;

const WAIT: Duration = Duration::from_secs(10);

/// Sessions answer `initialize` with a result when its params carry a
/// `protocolVersion`, with an error (-32602) otherwise; anything else with `{}`.
async fn serve(config: SseServerConfig) -> (String, SseService) {
    let service = SseService::with_config(config, |transport| {
        let (sink, mut stream) = transport.split();
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.recv().await {
                let JsonRpcMessage::Request(r) = m.message else {
                    continue;
                };
                let params = r.params.as_deref().map_or("", |p| p.get());
                let reply = if r.method == "initialize" && !params.contains("protocolVersion") {
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32602,"message":"Invalid params"}}}}"#,
                        r.id
                    )
                } else {
                    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, r.id)
                };
                let _ = sink
                    .send(TransportMessage::new(reply.parse().unwrap()))
                    .await;
            }
        });
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(service.clone().serve(listener, std::future::pending()));
    (origin, service)
}

/// A raw stream, its parser, and its message URL (from the stream's first event, an
/// `endpoint` event).
pub(crate) async fn open(origin: &str) -> (reqwest::Response, SseParser, String) {
    let mut response = reqwest::get(format!("{origin}/sse")).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut parser = SseParser::new(1 << 16);
    let endpoint = within(WAIT, "the endpoint", async {
        loop {
            let chunk = response.chunk().await.unwrap().unwrap();
            if let Some(e) = parser.push(&chunk).unwrap().into_iter().next() {
                return e;
            }
        }
    })
    .await;
    assert_eq!(endpoint.event_type(), "endpoint");
    (response, parser, format!("{origin}{}", endpoint.data))
}

async fn post(url: &str, body: &'static str) -> u16 {
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Reads `stream` to its end; the `message` events it carried.
async fn to_end(stream: &mut reqwest::Response, parser: &mut SseParser) -> Vec<String> {
    within(WAIT, "the end of the stream", async {
        let mut messages = Vec::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            for event in parser.push(&chunk).unwrap() {
                if event.event_type() == "message" {
                    messages.push(event.data);
                }
            }
        }
        messages
    })
    .await
}

const BAD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
const GOOD: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}"#;

/// A failed `initialize`: its error is sent, then the stream ends and the session
/// leaves the table (its place under the cap is free again).
#[tokio::test]
async fn a_failed_initialize_ends_its_session() {
    let config = SseServerConfig::default().max_sessions(1);
    let (origin, service) = serve(config).await;
    let (mut stream, mut parser, url) = open(&origin).await;
    assert_eq!(service.session_count(), 1);
    assert_eq!(post(&url, BAD).await, 202);
    let messages = to_end(&mut stream, &mut parser).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(messages[0].contains("-32602"), "{messages:?}");
    assert_eq!(service.session_count(), 0);
    assert_eq!(post(&url, GOOD).await, 404, "the session is gone");
    // The place is free: a new stream is served.
    let (_stream, _parser, url) = open(&origin).await;
    assert_eq!(post(&url, GOOD).await, 202);
}

/// A stream that completes no handshake within the deadline ends; one opened with it
/// that did complete its handshake goes on.
#[tokio::test]
async fn a_stream_without_a_handshake_in_time_ends() {
    let config = SseServerConfig::default().handshake_timeout(Some(Duration::from_secs(2)));
    let (origin, service) = serve(config).await;
    let (mut idle, mut idle_parser, _) = open(&origin).await;
    let (mut live, mut live_parser, url) = open(&origin).await;
    assert_eq!(post(&url, GOOD).await, 202);
    within(WAIT, "the initialize result", async {
        loop {
            let chunk = live.chunk().await.unwrap().expect("the stream is open");
            if parser_has_message(&mut live_parser, &chunk) {
                return;
            }
        }
    })
    .await;
    assert!(to_end(&mut idle, &mut idle_parser).await.is_empty());
    assert_eq!(
        service.session_count(),
        1,
        "the established session is kept"
    );
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    assert_eq!(post(&url, ping).await, 202);
}

fn parser_has_message(parser: &mut SseParser, chunk: &[u8]) -> bool {
    parser
        .push(chunk)
        .unwrap()
        .iter()
        .any(|e| e.event_type() == "message")
}
