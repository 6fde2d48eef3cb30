//! A session exists only once its `initialize` was answered with a result: failed
//! handshakes, notifications named `initialize` and clients that leave mid-handshake
//! take no place under the session cap; new sessions can be limited per address.
//! Session-less JSON POSTs are served by kept sessions unless they change theirs.

#![cfg(all(feature = "server", feature = "client"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use modelctx_http::{
    HttpServerTransport, SessionRateLimit, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::JsonRpcMessage;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(30);

/// What the sessions of [`service`] report.
struct Seen {
    /// How many sessions the factory started.
    started: Arc<AtomicUsize>,
    /// Hears when a session received `initialize` (`hold`: it does not answer it).
    initializing: mpsc::UnboundedReceiver<()>,
    /// Hears when a session's transport ended.
    ended: mpsc::UnboundedReceiver<()>,
}

/// A service whose sessions answer `initialize` with a result when its params carry a
/// `protocolVersion`, with an error (-32602) otherwise, and never when the params say
/// `"hold": true`; any other request gets an empty result.
fn service(config: StreamableHttpServerConfig) -> (StreamableHttpService, Seen) {
    let started = Arc::new(AtomicUsize::new(0));
    let (initializing_tx, initializing) = mpsc::unbounded_channel();
    let (ended_tx, ended) = mpsc::unbounded_channel();
    let counter = started.clone();
    let service = StreamableHttpService::with_config(config, move |t: HttpServerTransport| {
        counter.fetch_add(1, Ordering::SeqCst);
        let (initializing, ended) = (initializing_tx.clone(), ended_tx.clone());
        let (sink, mut stream) = t.split();
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.recv().await {
                let JsonRpcMessage::Request(r) = m.message else {
                    continue;
                };
                let params = r.params.as_deref().map_or("", |p| p.get());
                let reply = if r.method == "initialize" {
                    let _ = initializing.send(());
                    if params.contains("\"hold\"") {
                        continue;
                    }
                    if params.contains("protocolVersion") {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{},"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"h","version":"1"}}}}}}"#,
                            r.id
                        )
                    } else {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32602,"message":"Invalid params"}}}}"#,
                            r.id
                        )
                    }
                } else {
                    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, r.id)
                };
                let reply = TransportMessage::new(reply.parse().unwrap()).related_to(Some(r.id));
                let _ = sink.send(reply).await;
            }
            let _ = ended.send(());
        });
    });
    (
        service,
        Seen {
            started,
            initializing,
            ended,
        },
    )
}

/// [`service`], letting one address start `burst` sessions an hour.
fn rate_limited(burst: u32) -> (StreamableHttpService, Seen) {
    let limit = SessionRateLimit::new(burst, Duration::from_secs(3600));
    service(StreamableHttpServerConfig::default().session_rate_limit(Some(limit)))
}

async fn start(service: StreamableHttpService) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending()));
    url
}

const GOOD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
const BAD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
const NOTE: &str = r#"{"jsonrpc":"2.0","method":"initialize","params":{}}"#;
const HOLD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"hold":true}}"#;

/// POSTs `body` (no session) and returns the status, the session id the answer named
/// and its body.
async fn post(
    http: &reqwest::Client,
    url: &str,
    body: &'static str,
) -> (u16, Option<String>, String) {
    let response = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, id, response.text().await.unwrap())
}

/// POSTs [`HOLD`] on a task of its own and returns once its session has received the
/// `initialize`: that session's handshake is then under way, the POST waiting.
async fn hold_a_handshake(
    http: &reqwest::Client,
    url: &str,
    seen: &mut Seen,
) -> tokio::task::JoinHandle<(u16, Option<String>, String)> {
    let posting = tokio::spawn({
        let (http, url) = (http.clone(), url.to_owned());
        async move { post(&http, &url, HOLD).await }
    });
    tokio::time::timeout(WAIT, seen.initializing.recv())
        .await
        .expect("the session received initialize")
        .unwrap();
    posting
}

/// A ping on session `id`: its status.
async fn ping(http: &reqwest::Client, url: &str, id: &str) -> u16 {
    http.post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25")
        .body(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// 10,000 unauthenticated POSTs, failed `initialize`s and notifications named
/// `initialize`, leave no session: the cap is as free as before, and real clients are
/// served. The failed handshake's session id names nothing. In either answer mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_failed_handshakes_leaves_real_clients_served() {
    for json in [false, true] {
        let mut config = StreamableHttpServerConfig::default().max_sessions(2);
        if json {
            config = config.json_response();
        }
        let (svc, _seen) = service(config);
        let url = start(svc.clone()).await;
        let http = reqwest::Client::new();

        // One failed handshake, looked at closely: the error is answered, and the id
        // its answer named is no session.
        let (status, id, body) = post(&http, &url, BAD).await;
        assert_eq!(status, 200);
        assert!(body.contains("-32602"), "{body}");
        if let Some(id) = id {
            assert_eq!(ping(&http, &url, &id).await, 404, "a failed handshake's id");
        }

        // (The JSON mode shares the code path: fewer there.)
        let posts = if json { 1_000 } else { 10_000 };
        let flood = futures::stream::iter(0..posts)
            .map(|n| {
                let (http, url) = (http.clone(), url.clone());
                async move {
                    post(&http, &url, if n % 2 == 0 { BAD } else { NOTE })
                        .await
                        .0
                }
            })
            .buffer_unordered(32);
        let statuses: Vec<u16> = flood.collect().await;
        let other = statuses.iter().filter(|s| **s != 200 && **s != 400).count();
        assert_eq!(
            other, 0,
            "POSTs answered other than 200 (bad params) or 400 (note)"
        );
        assert_eq!(svc.session_count(), 0, "json: {json}");

        // Real clients get sessions, up to the cap, and are served.
        for _ in 0..2 {
            let (status, id, _) = post(&http, &url, GOOD).await;
            assert_eq!(status, 200, "json: {json}");
            assert_eq!(ping(&http, &url, &id.unwrap()).await, 200);
        }
        assert_eq!(svc.session_count(), 2);
        assert_eq!(post(&http, &url, GOOD).await.0, 503, "over the cap");
    }
}

/// A notification named `initialize` is no handshake: without a session it is refused
/// (400), and no session is started for it.
#[tokio::test]
async fn a_notification_named_initialize_allocates_nothing() {
    let (svc, seen) = service(StreamableHttpServerConfig::default());
    let url = start(svc.clone()).await;
    let http = reqwest::Client::new();
    let (status, id, _) = post(&http, &url, NOTE).await;
    assert_eq!(status, 400);
    assert_eq!(id, None);
    assert_eq!(seen.started.load(Ordering::SeqCst), 0, "no session started");
    assert_eq!(svc.session_count(), 0);
}

/// A client that leaves before its `initialize` is answered gives its place back at
/// once: the session ends, and the only place under a cap of one is free.
#[tokio::test]
async fn a_client_that_leaves_mid_handshake_gives_its_place_back() {
    let config = StreamableHttpServerConfig::default().max_sessions(1);
    let (svc, mut seen) = service(config);
    let url = start(svc.clone()).await;
    let http = reqwest::Client::new();
    let leaving = hold_a_handshake(&http, &url, &mut seen).await;
    // Meanwhile the place is taken.
    assert_eq!(post(&http, &url, GOOD).await.0, 503);
    leaving.abort();
    tokio::time::timeout(WAIT, seen.ended.recv())
        .await
        .expect("the abandoned session ends")
        .unwrap();
    let (status, id, _) = post(&http, &url, GOOD).await;
    assert_eq!(status, 200);
    assert_eq!(ping(&http, &url, &id.unwrap()).await, 200);
    assert_eq!(svc.session_count(), 1);
}

/// With a rate limit, one address starts its burst of sessions, then draws 429 with
/// `Retry-After`; requests on the sessions it has are not limited.
#[tokio::test]
async fn new_sessions_are_limited_per_address() {
    let (svc, _seen) = rate_limited(2);
    let url = start(svc.clone()).await;
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (status, id, _) = post(&http, &url, GOOD).await;
        assert_eq!(status, 200);
        ids.push(id.unwrap());
    }
    let refused = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(GOOD)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    let retry: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    for id in &ids {
        assert_eq!(ping(&http, &url, id).await, 200);
    }
    assert_eq!(svc.session_count(), 2);
}

/// A caller a layer in front authenticated (a `Principal` in the request's
/// `Extensions`) is not limited by address.
#[tokio::test]
async fn authenticated_callers_are_not_limited_by_address() {
    let (svc, _seen) = rate_limited(1);
    let authenticated = axum::Router::new()
        .nest_service("/mcp", svc.router())
        .layer(axum::middleware::from_fn(
            |mut request: axum::extract::Request, next: axum::middleware::Next| async move {
                if request.headers().contains_key("x-test-user") {
                    let mut extensions = modelctx_transport::Extensions::new();
                    extensions.insert(modelctx_types::Principal::new("alice"));
                    request.extensions_mut().insert(extensions);
                }
                next.run(request).await
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(modelctx_http::hosting::serve_router(
        listener,
        authenticated,
        Duration::from_secs(10),
        std::future::pending(),
    ));
    let http = reqwest::Client::new();
    let init = |user: bool| {
        let mut request = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(GOOD);
        if user {
            request = request.header("x-test-user", "1");
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(init(false).await, 200);
    assert_eq!(init(false).await, 429, "the address's burst is spent");
    for _ in 0..3 {
        assert_eq!(init(true).await, 200, "an authenticated caller");
    }
}

/// Closing the service ends the sessions whose handshake is still running, with the
/// others.
#[tokio::test]
async fn closing_the_service_ends_sessions_mid_handshake() {
    let (svc, mut seen) = service(StreamableHttpServerConfig::default());
    let url = start(svc.clone()).await;
    let http = reqwest::Client::new();
    let waiting = hold_a_handshake(&http, &url, &mut seen).await;
    svc.close_all_sessions();
    tokio::time::timeout(WAIT, seen.ended.recv())
        .await
        .expect("the session mid-handshake ends")
        .unwrap();
    let (status, _, _) = tokio::time::timeout(WAIT, waiting)
        .await
        .expect("its POST ends")
        .unwrap();
    assert_eq!(status, 200, "the answer's head had gone out");
    assert_eq!(svc.session_count(), 0);
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
const SET_LEVEL: &str =
    r#"{"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":"error"}}"#;

/// Session-less mode with JSON answers: POSTs of one request that leaves its session as
/// it found it are served, one after another, by one kept session; a POST that changes
/// its session (`logging/setLevel`) gets a session of its own, which ends with it.
#[tokio::test]
async fn sessionless_json_posts_share_a_kept_session_unless_they_change_it() {
    let config = StreamableHttpServerConfig::default()
        .sessionless()
        .json_response();
    let (svc, mut seen) = service(config);
    let url = start(svc.clone()).await;
    let http = reqwest::Client::new();
    let started = |seen: &Seen| seen.started.load(Ordering::SeqCst);

    for _ in 0..5 {
        let (status, id, body) = post(&http, &url, CALL).await;
        assert_eq!((status, id), (200, None));
        assert_eq!(body, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
    }
    assert_eq!(started(&seen), 1, "one kept session served the five POSTs");

    let (status, _, body) = post(&http, &url, SET_LEVEL).await;
    assert_eq!(status, 200);
    assert!(body.contains(r#""id":8"#), "{body}");
    assert_eq!(started(&seen), 2, "logging/setLevel: a session of its own");
    tokio::time::timeout(WAIT, seen.ended.recv())
        .await
        .expect("the setLevel POST's session ends with it");

    let (status, _, body) = post(&http, &url, CALL).await;
    assert_eq!(status, 200);
    assert!(body.contains(r#""id":7"#), "{body}");
    assert_eq!(started(&seen), 2, "the kept session serves on");
    assert!(seen.ended.try_recv().is_err(), "and it did not end");

    // Closing every session ends the kept one too.
    svc.close_all_sessions();
    tokio::time::timeout(WAIT, seen.ended.recv())
        .await
        .expect("the kept session ends with close_all_sessions");
    let (status, ..) = post(&http, &url, CALL).await;
    assert_eq!(status, 200);
    assert_eq!(started(&seen), 3, "the next POST: a new kept session");
}

/// A handshake-era answer streamed as SSE asks reverse proxies not to buffer it, as the
/// 2026-07-28 answers do: progress and other events reach the client as they are sent.
#[tokio::test]
async fn an_sse_answer_of_the_handshake_era_is_not_buffered_by_proxies() {
    let (service, _seen) = service(StreamableHttpServerConfig::default());
    let url = start(service).await;
    let response = tokio::time::timeout(
        WAIT,
        reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(GOOD)
            .send(),
    )
    .await
    .expect("answered in time")
    .unwrap();
    let headers = response.headers();
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["x-accel-buffering"], "no");
}
