//! The client transport never sends a header of one meaning twice: its own values
//! (session id, negotiated version) replace any the application configured, and a
//! header of one meaning configured twice goes out once, with the last value.

#![cfg(all(feature = "server", feature = "client"))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use modelctx_http::StreamableHttpClientTransport;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};

const WAIT: Duration = Duration::from_secs(5);

/// A server that records each POST's headers and answers `initialize` (with a session)
/// and anything else with an empty result.
async fn recording_server() -> (String, Arc<Mutex<Vec<HeaderMap>>>) {
    let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: String| {
        let record = record.clone();
        async move {
            record.lock().unwrap().push(headers);
            let request: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let result = if request["method"] == "initialize" {
                serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "s", "version": "1"}})
            } else {
                serde_json::json!({})
            };
            let answer =
                serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
            (
                [
                    ("content-type", "application/json"),
                    ("mcp-session-id", "the-session"),
                ],
                answer.to_string(),
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test]
async fn headers_of_one_meaning_go_out_once() {
    let (url, seen) = recording_server().await;
    let header = |name: &'static str, value: &'static str| {
        (
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        )
    };
    let mut builder = StreamableHttpClientTransport::builder(&url).standalone_stream(false);
    for (name, value) in [
        header("authorization", "Bearer first"),
        header("authorization", "Bearer second"),
        header("mcp-session-id", "configured"),
        header("mcp-protocol-version", "1999-01-01"),
        header("x-trace", "a"),
        header("x-trace", "b"),
    ] {
        builder = builder.header(name, value);
    }
    let (sink, mut stream) = builder.build().unwrap().split();
    for (id, method) in [(1, "initialize"), (2, "tools/list")] {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{}}}}"#);
        sink.send(TransportMessage::new(request.parse().unwrap()))
            .await
            .unwrap();
        let reply = tokio::time::timeout(WAIT, stream.recv())
            .await
            .expect("answered in time")
            .expect("an answer")
            .expect("a message");
        assert!(reply.message.id().is_some());
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    for headers in seen.iter() {
        for name in [
            "authorization",
            "mcp-session-id",
            "mcp-protocol-version",
            "accept",
            "content-type",
        ] {
            assert!(
                headers.get_all(name).iter().count() <= 1,
                "{name}: {:?}",
                headers.get_all(name)
            );
        }
        assert_eq!(headers["authorization"], "Bearer second");
        // Any other header may be sent on several lines, as configured.
        assert_eq!(headers.get_all("x-trace").iter().count(), 2);
    }
    // The session's own id and version replace the configured ones once known.
    assert_eq!(seen[1]["mcp-session-id"], "the-session");
    assert_eq!(seen[1]["mcp-protocol-version"], "2025-11-25");
}
