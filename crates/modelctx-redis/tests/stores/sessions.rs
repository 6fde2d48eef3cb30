//! Sessions shared by two services through Redis: a client whose every connection goes
//! to the next service (a round-robin forwarder, no affinity) runs one 2025-era session
//! across both; DELETE on one is 404 on the other; the cap counts both; records expire
//! and do not pile up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{RedisServer, WITHIN};
use modelctx::client::{Client, ConnectMode};
use modelctx::http::{
    Lookup, SessionRegistry, StreamableHttpClientTransport, StreamableHttpServerConfig,
    StreamableHttpService,
};
use modelctx::server::Server;
use modelctx::session::SessionConfig;
use modelctx::transport::SessionSnapshot;
use modelctx::types::{
    ClientCapabilities, Implementation, LoggingLevel, LoggingMessageNotification, ProtocolVersion,
    RequestMethod, SetLevelRequest, SetLevelRequestParams,
};
use modelctx_redis::{RedisSessionRegistry, RedisSessionRegistryConfig};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Answers what the session knows of its client, after logging once at `info` and once
/// at `error`.
struct Probe;
impl RequestMethod for Probe {
    const METHOD: &'static str = "test/probe";
    type Params = Value;
    type Result = Value;
}

/// One service on a loopback port, sharing sessions through `registry`.
struct Instance {
    service: StreamableHttpService,
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Instance {
    async fn start(registry: Arc<dyn SessionRegistry>, max_sessions: usize) -> Self {
        let server = Server::builder("shared", "1.0.0")
            .logging()
            .request_handler::<Probe, _, _>(|_, cx| async move {
                let _ = cx.info("info").await;
                let _ = cx.error("error").await;
                Ok(json!({
                    "client": cx.client_info().map(|i| i.name.clone()),
                }))
            })
            .build();
        let config = StreamableHttpServerConfig::default()
            .max_sessions(max_sessions)
            .session_registry(registry);
        let service = StreamableHttpService::with_config(config, move |transport| {
            let mut session = SessionConfig::server();
            if transport.needs_pre_initialized_session() {
                session = session.pre_initialized();
            }
            server.serve_with(transport, session);
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(service.clone().serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            service,
            url,
            stop: Some(stop),
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A loopback TCP forwarder that sends each new connection to the next backend in turn.
/// With a client that opens a connection per request, every request goes to the next
/// service. Returns its address and how many connections it forwarded.
async fn round_robin(backends: Vec<String>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let backend = backends[n % backends.len()].clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(&backend).await {
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (format!("http://{addr}/mcp"), count)
}

fn host_port(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned()
}

/// A raw request to one service: `(status, body)`.
async fn raw(
    method: reqwest::Method,
    url: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> (u16, String) {
    let client = reqwest::Client::new();
    let mut request = client
        .request(method, url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = tokio::time::timeout(WITHIN, request.send())
        .await
        .expect("the request ends")
        .expect("the request reaches the service");
    let status = response.status().as_u16();
    let session_id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = tokio::time::timeout(WITHIN, response.text())
        .await
        .expect("the body ends")
        .unwrap_or_default();
    // The session id of an initialize answer, else the body.
    (status, session_id.unwrap_or(text))
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }})
}

fn ping() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})
}

async fn registry(redis: &RedisServer, prefix: &str) -> Arc<dyn SessionRegistry> {
    Arc::new(RedisSessionRegistry::new(
        redis.connection().await,
        RedisSessionRegistryConfig::default().prefix(prefix),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_runs_across_two_services_round_robin() {
    let redis = RedisServer::start();
    // Two services, as two processes would be: each its own connection to Redis.
    let a = Instance::start(registry(&redis, "rr:").await, 100).await;
    let b = Instance::start(registry(&redis, "rr:").await, 100).await;
    let (url, forwarded) = round_robin(vec![host_port(&a.url), host_port(&b.url)]).await;

    // A connection per request: the forwarder sends each to the next service.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&url)
        .client(http)
        .build()
        .unwrap();
    let (tx, mut logs) = mpsc::unbounded_channel();
    let client = Client::builder("round-robin", "1.0.0")
        .mode(ConnectMode::Legacy)
        .notification_handler::<LoggingMessageNotification, _, _>(move |params, _| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(params.level);
            }
        })
        .connect(transport);
    let client = tokio::time::timeout(WITHIN, client).await.unwrap().unwrap();

    // Only errors from now on, wherever this lands; then a probe on each service.
    tokio::time::timeout(
        WITHIN,
        client.request::<SetLevelRequest>(SetLevelRequestParams::new(LoggingLevel::Error)),
    )
    .await
    .unwrap()
    .unwrap();
    for _ in 0..4 {
        let answer = tokio::time::timeout(WITHIN, client.request::<Probe>(json!({})))
            .await
            .expect("the probe ends")
            .expect("the probe succeeds");
        assert_eq!(answer, json!({"client": "round-robin"}));
    }
    assert!(
        forwarded.load(Ordering::Relaxed) >= 6,
        "one connection per request"
    );
    assert_eq!(a.service.session_count(), 1, "service A holds the session");
    assert_eq!(b.service.session_count(), 1, "service B holds it too");
    // Four probes, each an error only: the level set on one service held on both.
    for _ in 0..4 {
        let level = tokio::time::timeout(WITHIN, logs.recv()).await.unwrap();
        assert_eq!(level, Some(LoggingLevel::Error));
    }
    assert!(logs.try_recv().is_err(), "no info message passed");
    drop(client);

    // DELETE on one service: 404 on both.
    let (status, session) = raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200, "B serves a session initialised on A");
    let (status, _) = raw(reqwest::Method::DELETE, &b.url, Some(&session), None).await;
    assert_eq!(status, 200);
    for url in [&a.url, &b.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "deleted everywhere ({url})");
    }
    assert_eq!(
        a.service.session_count() + b.service.session_count(),
        2,
        "only the client's session is left on each: the deleted one ended on both"
    );
    let keys = redis.keys().await;
    assert!(
        !keys.iter().any(|k| k.contains(&session)),
        "its record is gone: {keys:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_counts_every_service_and_records_expire() {
    let redis = RedisServer::start();
    let a = Instance::start(registry(&redis, "cap:").await, 2).await;
    let b = Instance::start(registry(&redis, "cap:").await, 2).await;
    let (status, first) = raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &b.url, None, Some(initialize())).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
    assert_eq!(
        status, 503,
        "two sessions, one on each service: the cap is reached"
    );
    let (status, _) = raw(reqwest::Method::DELETE, &b.url, Some(&first), None).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &b.url, None, Some(initialize())).await;
    assert_eq!(
        status, 200,
        "a deleted session frees its place for every service"
    );

    // Every record expires on its own, after the idle timeout (300 s by default).
    let mut conn = redis.connection().await;
    for key in redis.keys().await {
        if key.starts_with("cap:sess:") {
            let ttl: i64 = redis::cmd("PTTL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(ttl > 0 && ttl <= 300_000, "{key} expires: {ttl}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_do_not_pile_up_after_churn() {
    let redis = RedisServer::start();
    let registry = registry(&redis, "churn:").await;
    let idle = Duration::from_secs(60);
    let snapshot = SessionSnapshot::new(
        ProtocolVersion::V2025_11_25,
        Implementation::new("c", "1"),
        ClientCapabilities::default(),
    );
    for i in 0..200 {
        let id = format!("s{i}");
        assert!(registry.create(&id, idle, 1000).await.unwrap());
        assert!(registry.save(&id, &snapshot, idle).await.unwrap().is_some());
        if i % 2 == 0 {
            registry.remove(&id).await.unwrap();
        }
    }
    assert_eq!(registry.count().await.unwrap(), 100);
    let keys = redis.keys().await;
    assert_eq!(keys.len(), 101, "100 records and the index");
    // A removed session is missing everywhere, and is never saved again.
    assert_eq!(
        registry.touch("s0", idle, 0).await.unwrap(),
        Lookup::Missing
    );
    assert_eq!(registry.save("s0", &snapshot, idle).await.unwrap(), None);
    assert!(matches!(
        registry.touch("s1", idle, 0).await.unwrap(),
        Lookup::State { revision: 1, .. }
    ));
    assert_eq!(
        registry.touch("s1", idle, 1).await.unwrap(),
        Lookup::Unchanged
    );

    // Records expire on their own, and the index forgets them when it counts.
    let short = Duration::from_millis(1);
    for i in 0..10 {
        assert!(
            registry
                .create(&format!("t{i}"), short, 1000)
                .await
                .unwrap()
        );
    }
    let gone = async {
        while registry.count().await.unwrap() != 100 || redis.keys().await.len() != 101 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, gone)
        .await
        .expect("expired records leave the count and Redis: 100 records and the index");
}
