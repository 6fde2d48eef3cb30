//! The server and the client transport against each other over loopback, with a small
//! hand-written peer on the server side (no session runtime).

#![cfg(all(feature = "server", feature = "client"))]

use std::time::Duration;

use modelctx_http::{StreamableHttpClientTransport, StreamableHttpService};
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::{JsonRpcMessage, RequestId};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(5);

/// Sends the message whose JSON text is `text` on `sink`.
pub(crate) async fn send_json(sink: &impl MessageSink, text: &str) {
    sink.send(msg(text)).await.unwrap();
}

/// A message parsed from its JSON text.
pub(crate) fn msg(s: &str) -> TransportMessage {
    TransportMessage::new(s.parse::<JsonRpcMessage>().unwrap())
}

/// Answers each request with `{"echo": method}`; before answering `notify`, sends a
/// related notification, and hands the server sink out for unrelated sends.
async fn start() -> (String, mpsc::UnboundedReceiver<Box<dyn MessageSink>>) {
    let (sinks_tx, sinks_rx) = mpsc::unbounded_channel::<Box<dyn MessageSink>>();
    let service = StreamableHttpService::new(move |transport| {
        let (sink, mut stream) = transport.split();
        let sink = std::sync::Arc::new(sink);
        let _ = sinks_tx.send(Box::new(sink.clone()));
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.recv().await {
                if let JsonRpcMessage::Request(r) = m.message {
                    let id = r.id.clone();
                    if r.method == "notify" {
                        let n = msg(r#"{"jsonrpc":"2.0","method":"note","params":{"n":1}}"#)
                            .related_to(Some(id.clone()));
                        sink.send(n).await.unwrap();
                    }
                    let body = if r.method == "initialize" {
                        r#"{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"t","version":"1"}}"#.to_owned()
                    } else {
                        format!(r#"{{"echo":"{}"}}"#, r.method)
                    };
                    let reply = msg(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{body}}}"#))
                        .related_to(Some(id));
                    sink.send(reply).await.unwrap();
                }
            }
        });
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending()));
    (url, sinks_rx)
}

/// Serves `app` on a loopback port of its own; its origin, `http://127.0.0.1:<port>`.
async fn serve_app(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    origin
}

/// Splits `transport` and sends `initialize` (id 1) on it; the answer is the stream's.
async fn initialize(
    transport: StreamableHttpClientTransport,
) -> (
    <StreamableHttpClientTransport as Transport>::Sink,
    <StreamableHttpClientTransport as Transport>::Stream,
) {
    let (sink, stream) = transport.split();
    send_json(
        &sink,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
    )
    .await;
    (sink, stream)
}

/// [`initialize`], answered: the sink and the stream after the answer.
async fn initialized(
    transport: StreamableHttpClientTransport,
) -> (
    <StreamableHttpClientTransport as Transport>::Sink,
    <StreamableHttpClientTransport as Transport>::Stream,
) {
    let (sink, mut stream) = initialize(transport).await;
    assert_eq!(next(&mut stream).await.id(), Some(&RequestId::Number(1)));
    (sink, stream)
}

/// The next message on `stream`, waited for twice [`WAIT`] at most (a loaded machine).
pub(crate) async fn next(stream: &mut impl MessageStream) -> JsonRpcMessage {
    tokio::time::timeout(2 * WAIT, stream.recv())
        .await
        .expect("a message in time")
        .expect("stream open")
        .expect("no error")
        .message
}

#[tokio::test]
async fn handshake_requests_related_and_unrelated_messages() {
    let (url, mut sinks) = start().await;
    let transport = StreamableHttpClientTransport::new(&url).unwrap();
    let handle = transport.handle();
    let (sink, mut stream) = initialize(transport).await;
    let init = next(&mut stream).await;
    assert_eq!(init.id(), Some(&RequestId::Number(1)));
    let session = handle.session_id().expect("a session id");
    assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    assert_eq!(handle.protocol_version().as_deref(), Some("2025-06-18"));
    send_json(
        &sink,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;

    send_json(&sink, r#"{"jsonrpc":"2.0","id":2,"method":"notify"}"#).await;
    let note = next(&mut stream).await;
    assert_eq!(note.method(), Some("note"));
    let reply = next(&mut stream).await;
    assert_eq!(reply.id(), Some(&RequestId::Number(2)));

    // Unrelated: on the standalone GET stream.
    let server_sink = sinks.recv().await.unwrap();
    server_sink
        .send(msg(r#"{"jsonrpc":"2.0","method":"unrelated"}"#))
        .await
        .unwrap();
    assert_eq!(next(&mut stream).await.method(), Some("unrelated"));

    // Many concurrent requests, each answered to its own id.
    for i in 10..30 {
        sink.send(msg(&format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"m{i}"}}"#
        )))
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    for _ in 10..30 {
        let m = next(&mut stream).await;
        let JsonRpcMessage::Response(r) = m else {
            panic!("a response")
        };
        let RequestId::Number(i) = r.id else {
            panic!("a number id")
        };
        assert_eq!(r.result.get(), format!(r#"{{"echo":"m{i}"}}"#));
        seen.push(i);
    }
    seen.sort_unstable();
    assert_eq!(seen, (10..30).collect::<Vec<_>>());
    sink.close().await;
}

/// Issues `Bearer bad` until told otherwise by a 401, then `Bearer good`.
struct Flipping(
    std::sync::atomic::AtomicBool,
    std::sync::atomic::AtomicUsize,
);

impl modelctx_http::AuthHook for Flipping {
    fn headers(
        &self,
    ) -> futures::future::BoxFuture<'_, Result<http::HeaderMap, modelctx_transport::TransportError>>
    {
        let good = self.0.load(std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            let mut h = http::HeaderMap::new();
            let v = if good { "Bearer good" } else { "Bearer bad" };
            h.insert(
                http::header::AUTHORIZATION,
                http::HeaderValue::from_static(v),
            );
            Ok(h)
        })
    }

    fn on_rejected(
        &self,
        status: u16,
        _: &http::HeaderMap,
    ) -> futures::future::BoxFuture<'_, bool> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let retry = status == 401 && !self.0.swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move { retry })
    }
}

#[tokio::test]
async fn the_auth_hook_adds_credentials_and_reacts_to_401() {
    let (url, _sinks) = start().await;
    // A front that demands `Bearer good` and forwards to the MCP server.
    let upstream = url.clone();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let front = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let upstream = upstream.clone();
        let log = log.clone();
        async move {
            let auth = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            log.lock().unwrap().push(auth.clone());
            if auth != "Bearer good" {
                return http::Response::builder()
                    .status(401)
                    .header("www-authenticate", "Bearer")
                    .body(axum::body::Body::empty())
                    .unwrap();
            }
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let mut forward = reqwest::Client::new()
                .request(parts.method, &upstream)
                .body(body);
            for (k, v) in &parts.headers {
                if k != "host" {
                    forward = forward.header(k, v);
                }
            }
            let answer = forward.send().await.unwrap();
            let mut response = http::Response::builder().status(answer.status());
            for (k, v) in answer.headers() {
                response = response.header(k, v);
            }
            response
                .body(axum::body::Body::from_stream(answer.bytes_stream()))
                .unwrap()
        }
    });
    let front_url = format!("{}/", serve_app(front).await);

    let hook = Flipping(Default::default(), Default::default());
    let transport = StreamableHttpClientTransport::builder(&front_url)
        .auth(hook)
        .standalone_stream(false)
        .build()
        .unwrap();
    let (sink, mut stream) = initialized(transport).await;
    send_json(&sink, r#"{"jsonrpc":"2.0","id":2,"method":"x"}"#).await;
    assert_eq!(next(&mut stream).await.id(), Some(&RequestId::Number(2)));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0], "Bearer bad");
    assert!(seen[1..].iter().all(|a| a == "Bearer good"), "{seen:?}");
}

#[tokio::test]
async fn the_default_client_never_follows_a_redirect_to_another_origin() {
    // Another origin (another port) that records whether anything reached it.
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = reached.clone();
    let other = axum::Router::new().fallback(move || {
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        async { "stolen" }
    });
    let other_url = format!("{}/", serve_app(other).await);
    let redirect = axum::Router::new().fallback(move || {
        let to = other_url.clone();
        async move {
            http::Response::builder()
                .status(307)
                .header("location", to)
                .body(axum::body::Body::empty())
                .unwrap()
        }
    });
    let url = format!("{}/mcp", serve_app(redirect).await);

    let transport = StreamableHttpClientTransport::builder(&url)
        .header(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer secret"),
        )
        .build()
        .unwrap();
    let (_sink, mut stream) = initialize(transport).await;
    let JsonRpcMessage::Error(e) = next(&mut stream).await else {
        panic!("the request fails")
    };
    assert!(e.error.message.contains("307"), "{}", e.error.message);
    assert!(
        !reached.load(std::sync::atomic::Ordering::SeqCst),
        "the secret stayed home"
    );
}

/// Found by the property tests (issue 25): a response that cannot be read (an error
/// object without `message`) on a request's SSE stream was skipped, so the call waited
/// for the stream's end, which a server may hold back until the timeout. It fails at
/// once now, with a clear error, and the next call is answered.
#[tokio::test]
async fn a_response_that_cannot_be_read_on_an_sse_stream_fails_its_call_at_once() {
    use futures::StreamExt;
    let server = axum::Router::new().fallback(|req: axum::extract::Request| async move {
        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap();
        let message: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let id = message["id"].clone();
        let json = |text: String| {
            http::Response::builder()
                .header("content-type", "application/json")
                .body(axum::body::Body::from(text))
                .unwrap()
        };
        match message["method"].as_str() {
            Some("initialize") => json(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"t","version":"1"}}}}}}"#
            )),
            // The broken answer, then a stream that stays open.
            Some("bad") => {
                let event = format!(
                    "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32000}}}}\n\n"
                );
                let events = futures::stream::once(async move {
                    Ok::<_, std::io::Error>(axum::body::Bytes::from(event))
                })
                .chain(futures::stream::pending());
                http::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(axum::body::Body::from_stream(events))
                    .unwrap()
            }
            Some(_) => json(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)),
            None => http::Response::builder()
                .status(202)
                .body(axum::body::Body::empty())
                .unwrap(),
        }
    });
    let url = format!("{}/mcp", serve_app(server).await);

    let transport = StreamableHttpClientTransport::builder(&url)
        .standalone_stream(false)
        .build()
        .unwrap();
    let (sink, mut stream) = initialized(transport).await;
    send_json(&sink, r#"{"jsonrpc":"2.0","id":2,"method":"bad"}"#).await;
    let JsonRpcMessage::Error(e) = next(&mut stream).await else {
        panic!("the call fails")
    };
    assert_eq!(e.id, Some(RequestId::Number(2)));
    assert!(
        e.error.message.contains("invalid response") && e.error.message.contains("`message`"),
        "{}",
        e.error.message
    );
    send_json(&sink, r#"{"jsonrpc":"2.0","id":3,"method":"good"}"#).await;
    assert!(matches!(
        next(&mut stream).await,
        JsonRpcMessage::Response(r) if r.id == RequestId::Number(3)
    ));
}
