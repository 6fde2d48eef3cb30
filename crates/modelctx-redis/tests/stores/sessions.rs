//! Sessions shared by two services through Redis: a client whose every connection goes
//! to the next service (a round-robin forwarder, no affinity) runs one 2025-era session
//! across both; DELETE on one is 404 on the other; the cap counts both; records expire
//! and do not pile up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{RedisServer, WITHIN};
use futures::future::BoxFuture;
use modelctx::client::{Client, ConnectMode};
use modelctx::http::{
    EventId, EventStore, Lookup, Replay, SessionRegistry, StreamableHttpClientTransport,
    StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::Elicited;
use modelctx::server::{Server, TaskConfig, ToolDef};
use modelctx::session::Peer;
use modelctx::session::announce::AnnouncementBus;
use modelctx::store::SessionSnapshot;
use modelctx::types::{
    ClientCapabilities, ErrorData, Implementation, LoggingLevel, LoggingMessageNotification,
    NotificationMethod, ProtocolVersion, RequestMethod, RequestedSchema, SetLevelRequest,
    SetLevelRequestParams, TaskSupport, Tool,
};
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

/// Asks the client for a form (elicitation) and answers what it said.
struct Ask;
impl RequestMethod for Ask {
    const METHOD: &'static str = "test/ask";
    type Params = Value;
    type Result = Value;
}

/// Runs until cancelled (the session drops a cancelled handler), saying so on the
/// instance's `events`.
struct Wait;
impl RequestMethod for Wait {
    const METHOD: &'static str = "test/wait";
    type Params = Value;
    type Result = Value;
}

/// Says "cancelled" when `test/wait`'s handler stops, however it stops.
struct Stopped(mpsc::UnboundedSender<&'static str>);
impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.send("cancelled");
    }
}

/// One service on a loopback port, sharing sessions through `registry`.
struct Instance {
    service: StreamableHttpService,
    /// The server behind the service (to change its tools).
    server: Server,
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// What `test/wait` went through here: "started", "cancelled".
    events: mpsc::UnboundedReceiver<&'static str>,
    /// The peers of the sessions started here (local copies included), in order.
    peers: Arc<std::sync::Mutex<Vec<Peer>>>,
}

impl Instance {
    async fn start(registry: Arc<dyn SessionRegistry>, max_sessions: usize) -> Self {
        let config = StreamableHttpServerConfig::default()
            .max_sessions(max_sessions)
            .session_registry(registry);
        Self::start_with(config, None).await
    }

    async fn start_idle(registry: Arc<dyn SessionRegistry>, idle: Duration) -> Self {
        let config = StreamableHttpServerConfig::default()
            .session_idle_timeout(Some(idle))
            .session_registry(registry);
        Self::start_with(config, None).await
    }

    /// With tools whose list may change, announced through `bus` too.
    async fn start_announcing(
        registry: Arc<dyn SessionRegistry>,
        bus: Arc<dyn AnnouncementBus>,
    ) -> Self {
        let config = StreamableHttpServerConfig::default().session_registry(registry);
        Self::start_with(config, Some(bus)).await
    }

    async fn start_with(
        config: StreamableHttpServerConfig,
        bus: Option<Arc<dyn AnnouncementBus>>,
    ) -> Self {
        let (events_tx, events) = mpsc::unbounded_channel();
        let server = Server::builder("shared", "1.0.0")
            .logging()
            .request_handler::<Ask, _, _>(|_, cx| async move {
                let answer = cx
                    .elicit_form_schema("Anything to add?", RequestedSchema::new())
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                Ok(json!({"accepted": matches!(answer, Elicited::Accepted(_))}))
            })
            .request_handler::<Wait, _, _>(move |_, cx| {
                let events = events_tx.clone();
                async move {
                    let _ = events.send("started");
                    let _stopped = Stopped(events);
                    cx.cancellation().cancelled().await;
                    Ok(json!({}))
                }
            })
            .request_handler::<Probe, _, _>(|_, cx| async move {
                let _ = cx.info("info").await;
                let _ = cx.error("error").await;
                Ok(json!({
                    "client": cx.client_info().map(|i| i.name.clone()),
                }))
            });
        let server = match bus {
            Some(bus) => server.enable_tools().announcements(bus),
            None => server,
        }
        .build();
        let server_handle = server.clone();
        let peers = Arc::new(std::sync::Mutex::new(Vec::new()));
        let started = peers.clone();
        let service = StreamableHttpService::with_config(config, move |transport| {
            let session = server.serve(transport);
            started.lock().unwrap().push(session.peer().clone());
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(service.clone().serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            service,
            server: server_handle,
            url,
            stop: Some(stop),
            events,
            peers,
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

/// A raw request to one service: `(status, body)`, or, for a request that named no
/// session (an `initialize`), `(status, the new session's id)`.
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
    match session {
        None => (status, session_id.unwrap_or(text)),
        Some(_) => (status, text),
    }
}

/// A POST whose answer is an SSE stream, read until it contains `needle`: the stream
/// and everything read so far.
async fn post_stream(
    url: &str,
    session: &str,
    body: Value,
) -> futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>> {
    use futures::StreamExt;
    let response = tokio::time::timeout(
        WITHIN,
        reqwest::Client::new()
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", session)
            .body(body.to_string())
            .send(),
    )
    .await
    .expect("the POST is answered")
    .expect("the POST reaches the service");
    assert_eq!(response.status().as_u16(), 200);
    response.bytes_stream().boxed()
}

async fn read_until(
    stream: &mut futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    seen: &mut String,
    needle: &str,
) {
    use futures::StreamExt;
    while !seen.contains(needle) {
        let chunk = tokio::time::timeout(WITHIN, stream.next())
            .await
            .unwrap_or_else(|_| panic!("no {needle:?} within {WITHIN:?}; got {seen}"))
            .unwrap_or_else(|| panic!("the stream ended before {needle:?}; got {seen}"))
            .expect("the stream reads");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// Initialises a session on `url` whose client declares form elicitation; its id.
async fn open(url: &str) -> String {
    let mut init = initialize();
    init["params"]["capabilities"] = json!({"elicitation": {"form": {}}});
    let (status, session) = raw(reqwest::Method::POST, url, None, Some(init)).await;
    assert_eq!(status, 200);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _) = raw(
        reqwest::Method::POST,
        url,
        Some(&session),
        Some(initialized),
    )
    .await;
    assert_eq!(status, 202);
    session
}

/// Waits until `peer`'s session has taken in the client's `notifications/initialized`:
/// its 202 answers the POST before the session has read it, and until then the copy
/// refuses to send messages of its own.
async fn until_initialized(peer: &Peer) {
    let told = async {
        while !peer.is_initialized() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, told)
        .await
        .expect("the session learns the client is initialised");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_posted_to_the_other_service_reaches_the_handler_that_asked() {
    let redis = RedisServer::start();
    let a = Instance::start(registry(&redis, "ask:").await, 100).await;
    let b = Instance::start(registry(&redis, "ask:").await, 100).await;
    let session = open(&a.url).await;

    // The handler on A asks; its request's id names A.
    let ask = json!({"jsonrpc": "2.0", "id": 7, "method": "test/ask"});
    let mut stream = post_stream(&a.url, &session, ask).await;
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "elicitation/create").await;
    let data = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains("elicitation/create"))
        .expect("the request's event");
    let request: Value = serde_json::from_str(data).unwrap();
    let id = request["id"].clone();
    assert!(id.as_str().is_some_and(|s| s.contains('/')), "{id}");

    // The client answers on B: B relays it to A, and the handler finishes there.
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {}}});
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(answer)).await;
    assert_eq!(status, 202);
    read_until(&mut stream, &mut seen, r#""accepted":true"#).await;
    assert!(seen.contains(r#""id":7"#), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_posted_to_the_other_service_stops_the_request() {
    let redis = RedisServer::start();
    let mut a = Instance::start(registry(&redis, "cancel:").await, 100).await;
    let b = Instance::start(registry(&redis, "cancel:").await, 100).await;
    let session = open(&a.url).await;

    let wait = json!({"jsonrpc": "2.0", "id": 9, "method": "test/wait"});
    let mut stream = post_stream(&a.url, &session, wait).await;
    let started = tokio::time::timeout(WITHIN, a.events.recv()).await.unwrap();
    assert_eq!(started, Some("started"));

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "changed my mind"}});
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(cancel)).await;
    assert_eq!(status, 202);
    let cancelled = tokio::time::timeout(WITHIN, a.events.recv()).await.unwrap();
    assert_eq!(
        cancelled,
        Some("cancelled"),
        "the handler on A was cancelled"
    );
    // And A's answer stream ends with the cancellation's error, as on one service.
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "-32800").await;
}

/// A notification not tied to a request.
struct Note;
impl NotificationMethod for Note {
    const METHOD: &'static str = "test/note";
    type Params = Value;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_for_the_get_stream_reaches_it_on_the_other_service() {
    let redis = RedisServer::start();
    let a = Instance::start(registry(&redis, "get:").await, 100).await;
    let b = Instance::start(registry(&redis, "get:").await, 100).await;
    let session = open(&a.url).await;
    let peer = a.peers.lock().unwrap()[0].clone();
    until_initialized(&peer).await;

    // The GET stream is open on B, with its priming event.
    let (status, mut stream, mut seen) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 200);

    // A, whose copy has no GET stream, sends two notes: B delivers them, in order.
    for n in 1..=2 {
        tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": n})))
            .await
            .unwrap()
            .unwrap();
    }
    read_until(&mut stream, &mut seen, r#""n":2"#).await;
    let first = seen.find(r#""n":1"#).expect("the first note");
    assert!(first < seen.find(r#""n":2"#).unwrap(), "in order: {seen}");
    assert_eq!(seen.matches(r#""n":1"#).count(), 1, "once: {seen}");
}

/// With the session registry and the announcement bus together, a list change made on
/// A reaches the shared session's GET stream on B, and only once (not once through the
/// bus and again relayed from A's copy of the session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_reaches_a_shared_sessions_get_stream_once() {
    let redis = RedisServer::start();
    let bus = |redis: &RedisServer| {
        let url = redis.url();
        async move {
            let config = modelctx_redis::AnnouncementsConfig::default().prefix("once:");
            let bus =
                tokio::time::timeout(WITHIN, modelctx_redis::Announcements::connect(&url, config))
                    .await
                    .expect("the bus connects in time")
                    .expect("the bus connects");
            Arc::new(bus) as Arc<dyn AnnouncementBus>
        }
    };
    let a = Instance::start_announcing(registry(&redis, "once:").await, bus(&redis).await).await;
    let b = Instance::start_announcing(registry(&redis, "once:").await, bus(&redis).await).await;
    let session = open(&a.url).await;
    // A's copy announces and sends (the note below) only once initialised.
    let peer = a.peers.lock().unwrap()[0].clone();
    until_initialized(&peer).await;

    let (status, mut stream, mut seen) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 200);

    let tool = Tool::new(
        "added",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    a.server
        .add_tool(ToolDef::with_schema(tool, |_args, _cx| async move {
            Ok::<_, String>(modelctx::types::CallToolResult::text("added"))
        }))
        .unwrap();
    read_until(&mut stream, &mut seen, "notifications/tools/list_changed").await;
    // A relays its own messages in order: once its note is here, a relayed copy of the
    // list change (sent before it) would be too.
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut stream, &mut seen, r#""n":1"#).await;
    assert_eq!(
        seen.matches("notifications/tools/list_changed").count(),
        1,
        "once: {seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_expires_on_every_service() {
    let redis = RedisServer::start();
    let idle = Duration::from_millis(300);
    let a = Instance::start_idle(registry(&redis, "idle:").await, idle).await;
    let b = Instance::start_idle(registry(&redis, "idle:").await, idle).await;
    // Both services hold it: opened on A, used on B. How long that takes is the
    // machine's: a session that idled out in between (404) is the expiry under test
    // come early, so another is opened.
    let both = async {
        loop {
            let (status, session) =
                raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
            assert_eq!(status, 200);
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let (status, _) = raw(
                reqwest::Method::POST,
                &a.url,
                Some(&session),
                Some(initialized),
            )
            .await;
            if status == 404 {
                continue;
            }
            assert_eq!(status, 202);
            let (status, _) =
                raw(reqwest::Method::POST, &b.url, Some(&session), Some(ping())).await;
            if status != 404 {
                assert_eq!(status, 200, "both services hold it");
                return session;
            }
        }
    };
    let session = tokio::time::timeout(WITHIN, both)
        .await
        .expect("a session both services hold");

    // Nobody touches it: its record expires in Redis.
    let counter = registry(&redis, "idle:").await;
    let expired = async {
        while counter.count().await.unwrap() != 0 || !redis.keys().await.is_empty() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, expired)
        .await
        .expect("the idle record expires");
    for url in [&a.url, &b.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "expired everywhere ({url})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_lost_with_a_restarted_redis_answer_404_and_new_ones_work() {
    let mut redis = RedisServer::start();
    let a = Instance::start(registry(&redis, "restart:").await, 100).await;
    let b = Instance::start(registry(&redis, "restart:").await, 100).await;
    let session = open(&a.url).await;
    redis.restart();
    // The registries reconnect; the session's record is gone with the old Redis: a
    // clear 404 on both services (A's local copy ends), no hang.
    for url in [&b.url, &a.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "{url}");
    }
    assert_eq!(a.service.session_count(), 0, "A's copy ended");
    // A new session works across both.
    let session = open(&a.url).await;
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_service_is_the_sessions_on_the_other() {
    let redis = RedisServer::start();
    let start = |prefix: &'static str| {
        let redis = &redis;
        async move {
            let tasks = modelctx_redis::TaskStore::new(
                redis.connection().await,
                modelctx_redis::TaskStoreConfig::default().prefix(prefix),
            );
            let schema = json!({"type": "object"}).as_object().cloned().unwrap();
            let tool = ToolDef::with_schema(Tool::new("quick", schema), |_, _cx| async move {
                Ok::<_, String>("done".to_owned())
            })
            .task_support(TaskSupport::Optional);
            let server = Server::builder("tasks", "1.0.0")
                .tasks(TaskConfig::new())
                .task_store(Arc::new(tasks))
                .tool(tool)
                .unwrap()
                .build();
            let config = StreamableHttpServerConfig::default()
                .session_registry(registry(redis, prefix).await);
            let service = StreamableHttpService::with_config(config, move |transport| {
                server.serve(transport);
            });
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            tokio::spawn(service.serve(listener, std::future::pending()));
            url
        }
    };
    let a = start("tasks:").await;
    let b = start("tasks:").await;
    let session = open(&a).await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "quick", "arguments": {}, "task": {"ttl": 60000}}});
    let (status, body) = raw(reqwest::Method::POST, &a, Some(&session), Some(call)).await;
    assert_eq!(status, 200);
    let at = body
        .find(r#""taskId":""#)
        .unwrap_or_else(|| panic!("a task: {body}"))
        + r#""taskId":""#.len();
    let task = &body[at..at + body[at..].find('"').unwrap()];

    // Owned by the session, not by the copy that created it: B finds it.
    let get = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task}});
    let (status, body) = raw(reqwest::Method::POST, &b, Some(&session), Some(get)).await;
    assert_eq!(status, 200);
    assert!(
        body.contains(task) && !body.contains(r#""error""#),
        "{body}"
    );
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
    let config = modelctx_redis::SessionRegistryConfig::default().prefix(prefix);
    let registry = tokio::time::timeout(
        WITHIN,
        modelctx_redis::SessionRegistry::connect(&redis.url(), config),
    )
    .await
    .expect("connecting timed out")
    .expect("cannot connect to the test's redis-server");
    Arc::new(registry)
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
        .mode(ConnectMode::Handshake)
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

/// A failed `initialize` leaves no shared session: its record goes, so its place under
/// the cap of every service is free again, and no service holds a copy of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_initialize_leaves_no_record() {
    let redis = RedisServer::start();
    let a = Instance::start(registry(&redis, "fail:").await, 1).await;
    let b = Instance::start(registry(&redis, "fail:").await, 1).await;
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let (status, _) = raw(reqwest::Method::POST, &a.url, None, Some(bad)).await;
    assert_eq!(status, 200, "the error is the answer");
    let gone = async {
        while redis
            .keys()
            .await
            .iter()
            .any(|k| k.starts_with("fail:sess:"))
        {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, gone)
        .await
        .expect("the failed session's record goes");
    assert_eq!(a.service.session_count(), 0);
    let (status, session) = raw(reqwest::Method::POST, &b.url, None, Some(initialize())).await;
    assert_eq!(status, 200, "the only place is free");
    let (status, _) = raw(reqwest::Method::POST, &a.url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200, "and the real session is served everywhere");
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

/// Whether the client's `notifications/initialized` arrived is part of the recorded
/// state: another service's registry reads it back as saved, a save that records it is
/// a new revision (how every copy learns it), and a record written before the field
/// existed reads as initialised (such a session was served as initialised).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initialized_note_is_recorded_in_the_state() {
    let redis = RedisServer::start();
    let a = registry(&redis, "note:").await;
    let b = registry(&redis, "note:").await;
    let idle = Duration::from_secs(60);
    let answered = SessionSnapshot::new(
        ProtocolVersion::V2025_11_25,
        Implementation::new("c", "1"),
        ClientCapabilities::default(),
    );
    assert!(a.create("s", idle, 10).await.unwrap());
    assert_eq!(a.save("s", &answered, idle).await.unwrap(), Some(1));
    let Lookup::State { revision, snapshot } = b.touch("s", idle, 0).await.unwrap() else {
        panic!("the other service finds the state");
    };
    assert_eq!(revision, 1);
    assert!(!snapshot.initialized, "initialize answered, no note yet");

    let noted = answered.clone().with_initialized(true);
    assert_eq!(b.save("s", &noted, idle).await.unwrap(), Some(2));
    let Lookup::State { revision, snapshot } = a.touch("s", idle, 1).await.unwrap() else {
        panic!("a service that knows revision 1 is told of revision 2");
    };
    assert_eq!(revision, 2);
    assert_eq!(*snapshot, noted);

    // A record as written before the field existed.
    let mut state = serde_json::to_value(&answered).unwrap();
    state.as_object_mut().unwrap().remove("initialized");
    let mut conn = redis.connection().await;
    let _: i64 = redis::cmd("HSET")
        .arg("note:sess:{s}")
        .arg("state")
        .arg(state.to_string())
        .query_async(&mut conn)
        .await
        .unwrap();
    let Lookup::State { snapshot, .. } = b.touch("s", idle, 0).await.unwrap() else {
        panic!("the older record is read");
    };
    assert!(snapshot.initialized);
}

/// Opens the session's GET stream on `url` and reads its priming event.
async fn get_stream(
    url: &str,
    session: &str,
) -> futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>> {
    let (status, stream, _) = try_get_stream(url, session, None).await;
    assert_eq!(status, 200);
    stream
}

/// Reads `stream` to its end (bounded): everything it carried.
async fn read_to_end(
    stream: &mut futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
) -> String {
    use futures::StreamExt;
    let mut seen = String::new();
    loop {
        let chunk = tokio::time::timeout(WITHIN, stream.next())
            .await
            .unwrap_or_else(|_| panic!("the stream did not end within {WITHIN:?}; got {seen}"));
        match chunk {
            Some(Ok(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            Some(Err(_)) | None => return seen,
        }
    }
}

/// The length of the list of messages Redis keeps for `session`'s GET stream.
async fn kept(redis: &RedisServer, prefix: &str, session: &str) -> usize {
    let mut conn = redis.connection().await;
    redis::cmd("LLEN")
        .arg(format!("{prefix}sess:{{{session}}}:out"))
        .query_async(&mut conn)
        .await
        .expect("LLEN")
}

/// Gap (b) of the two-instance conformance leg: the client's `notifications/initialized`
/// lands (round-robin) on B; A's copy, which ran the handshake, learns it without a
/// request of its own and may then send its own messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initialized_note_reaches_the_copy_that_ran_the_handshake() {
    let redis = RedisServer::start();
    let a = Instance::start(registry(&redis, "init:").await, 100).await;
    let b = Instance::start(registry(&redis, "init:").await, 100).await;
    let (url, forwarded) = round_robin(vec![host_port(&a.url), host_port(&b.url)]).await;

    // A connection per request through the forwarder: initialize on A, the note on B.
    let (status, session) = raw(reqwest::Method::POST, &url, None, Some(initialize())).await;
    assert_eq!(status, 200);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _) = raw(
        reqwest::Method::POST,
        &url,
        Some(&session),
        Some(initialized),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(forwarded.load(Ordering::Relaxed), 2);
    assert_eq!(b.service.session_count(), 1, "the note went to B's copy");

    let peer = a.peers.lock().unwrap()[0].clone();
    let told = async {
        while !peer.is_initialized() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, told)
        .await
        .expect("A's copy learns the client is initialised");
    // So it sends its own messages (refused before initialisation): a note, kept until
    // the GET stream opens (on A, the forwarder's next).
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .expect("A's copy sends its own notification");
    let mut stream = get_stream(&url, &session).await;
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, r#""n":1"#).await;
}

/// Gap (a): messages for the GET stream sent while no service holds it are kept in
/// Redis (bounded as one service's backlog: the oldest dropped) and delivered, in
/// order and once, by whichever service the stream then opens on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_before_the_get_stream_opens_are_kept_for_it() {
    let redis = RedisServer::start();
    let start = |redis: &RedisServer| {
        let url = redis.url();
        async move {
            let config = modelctx_redis::SessionRegistryConfig::default().prefix("kept:");
            let registry = modelctx_redis::SessionRegistry::connect(&url, config)
                .await
                .unwrap();
            let config = StreamableHttpServerConfig::default()
                .stream_queue(4)
                .session_registry(Arc::new(registry));
            Instance::start_with(config, None).await
        }
    };
    let a = start(&redis).await;
    let b = start(&redis).await;
    let (url, _) = round_robin(vec![host_port(&a.url), host_port(&b.url)]).await;
    // Through the forwarder: initialize on A, the note on B.
    let session = open(&url).await;

    // No GET stream anywhere: A's copy sends six notes; Redis keeps the last four. It
    // sends once it knows the client is initialised (B relays the note to it).
    let peer = a.peers.lock().unwrap()[0].clone();
    until_initialized(&peer).await;
    for n in 1..=6 {
        tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": n})))
            .await
            .unwrap()
            .unwrap();
    }
    let stored = async {
        loop {
            let mut conn = redis.connection().await;
            let last: Vec<String> = redis::cmd("LRANGE")
                .arg(format!("kept:sess:{{{session}}}:out"))
                .arg(-1)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .unwrap();
            if last.iter().any(|m| m.contains(r#""n":6"#)) {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, stored)
        .await
        .expect("kept in Redis");
    assert_eq!(kept(&redis, "kept:", &session).await, 4, "bounded");

    // A ping (on A), then the stream opens on B: the four kept, in order, once; what
    // A sends next reaches it too.
    let (status, _) = raw(reqwest::Method::POST, &url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200);
    let mut stream = get_stream(&url, &session).await;
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 7})))
        .await
        .unwrap()
        .unwrap();
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, r#""n":7"#).await;
    let mut at = 0;
    for n in 3..=7 {
        let needle = format!(r#""n":{n}"#);
        assert_eq!(seen.matches(&needle).count(), 1, "{needle} once: {seen}");
        let found = seen.find(&needle).unwrap();
        assert!(found >= at, "{needle} in order: {seen}");
        at = found;
    }
    for n in 1..=2 {
        assert!(!seen.contains(&format!(r#""n":{n}"#)), "dropped: {seen}");
    }
    assert_eq!(kept(&redis, "kept:", &session).await, 0, "taken");
}

/// Gap (c): a DELETE on one service, and the server closing one copy, end the session
/// on every service: the other copy's GET stream and pending request end at once (its
/// handler is cancelled), and the record is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_a_session_reaches_every_service() {
    let redis = RedisServer::start();
    let a = Instance::start(registry(&redis, "end:").await, 100).await;
    let mut b = Instance::start(registry(&redis, "end:").await, 100).await;
    let wait = json!({"jsonrpc": "2.0", "id": 9, "method": "test/wait"});

    // DELETE on A while B holds the GET stream and a request.
    let session = open(&a.url).await;
    let mut get = get_stream(&b.url, &session).await;
    let mut pending = post_stream(&b.url, &session, wait.clone()).await;
    let started = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(started, Some("started"));
    let (status, _) = raw(reqwest::Method::DELETE, &a.url, Some(&session), None).await;
    assert_eq!(status, 200);
    read_to_end(&mut get).await;
    read_to_end(&mut pending).await;
    let stopped = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(
        stopped,
        Some("cancelled"),
        "B's handler ended with the session"
    );
    assert_eq!(b.service.session_count(), 0, "B's copy ended");

    // The server closes A's copy of another session while B holds a request of it.
    let session = open(&a.url).await;
    let mut pending = post_stream(&b.url, &session, wait).await;
    let started = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(started, Some("started"));
    let peer = a.peers.lock().unwrap().last().unwrap().clone();
    tokio::time::timeout(WITHIN, peer.close()).await.unwrap();
    read_to_end(&mut pending).await;
    let stopped = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(stopped, Some("cancelled"));
    for url in [&a.url, &b.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "ended everywhere ({url})");
    }
    let keys = redis.keys().await;
    assert!(
        !keys.iter().any(|k| k.contains(&session)),
        "its record is gone: {keys:?}"
    );
}

/// Gap (d): one server serving both services' copies of a session (no announcement
/// bus: one process) announces a list change once on the GET stream, not once per
/// copy; and a resource update once to a subscription made through the other copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_behind_both_services_announces_once() {
    let redis = RedisServer::start();
    let server = Server::builder("one", "1.0.0")
        .enable_tools()
        .resource(modelctx::server::ResourceDef::new(
            "test://r",
            "r",
            |_cx: modelctx::server::Context| async { Ok::<_, String>("r") },
        ))
        .unwrap()
        .build();
    let peers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut urls = Vec::new();
    for _ in 0..2 {
        let config =
            StreamableHttpServerConfig::default().session_registry(registry(&redis, "one:").await);
        let server = server.clone();
        let started = peers.clone();
        let service = StreamableHttpService::with_config(config, move |transport| {
            let session = server.serve(transport);
            started.lock().unwrap().push(session.peer().clone());
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        tokio::spawn(service.serve(listener, std::future::pending()));
    }
    let (a, b) = (&urls[0], &urls[1]);
    let session = open(a).await;
    // B holds the GET stream; the subscription is made through A's copy.
    let mut stream = get_stream(b, &session).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe",
        "params": {"uri": "test://r"}});
    let (status, _) = raw(reqwest::Method::POST, a, Some(&session), Some(subscribe)).await;
    assert_eq!(status, 200);

    let tool = Tool::new(
        "added",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    server
        .add_tool(ToolDef::with_schema(tool, |_args, _cx| async move {
            Ok::<_, String>(modelctx::types::CallToolResult::text("added"))
        }))
        .unwrap();
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "notifications/tools/list_changed").await;
    server.notify_resource_updated("test://r").await;
    read_until(&mut stream, &mut seen, "notifications/resources/updated").await;
    // Each copy sends its messages in order: once A's note is here, a copy of the
    // announcements A's copy sent before it would be too.
    let first = peers.lock().unwrap()[0].clone();
    tokio::time::timeout(WITHIN, first.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut stream, &mut seen, r#""n":1"#).await;
    assert_eq!(
        seen.matches("notifications/tools/list_changed").count(),
        1,
        "once: {seen}"
    );
    assert_eq!(
        seen.matches("notifications/resources/updated").count(),
        1,
        "once: {seen}"
    );
}

/// A service sharing sessions and events under `prefix`, its GET stream's hold lasting
/// `lease` without a renewal.
async fn start_holding(redis: &RedisServer, prefix: &str, lease: Duration) -> Instance {
    let config = modelctx_redis::EventStoreConfig::default().prefix(prefix);
    let events = modelctx_redis::EventStore::new(redis.connection().await, config);
    let config = StreamableHttpServerConfig::default()
        .session_registry(registry(redis, prefix).await)
        .event_store(Arc::new(events))
        .stream_lease(lease);
    Instance::start_with(config, None).await
}

/// A GET for `session`'s stream on `url`, `Last-Event-ID` `last` if any: its status,
/// and its body stream (read up to the priming event when 200).
async fn try_get_stream(
    url: &str,
    session: &str,
    last: Option<&str>,
) -> (
    u16,
    futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    String,
) {
    use futures::StreamExt;
    let mut request = reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session);
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    let response = tokio::time::timeout(WITHIN, request.send())
        .await
        .expect("the GET is answered")
        .expect("the GET reaches the service");
    let status = response.status().as_u16();
    let mut stream = response.bytes_stream().boxed();
    let mut seen = String::new();
    if status == 200 && last.is_none() {
        read_until(&mut stream, &mut seen, "retry:").await;
    }
    (status, stream, seen)
}

/// The GET stream's holder recorded for `session`, if any.
async fn holder(redis: &RedisServer, prefix: &str, session: &str) -> Option<String> {
    let mut conn = redis.connection().await;
    redis::cmd("GET")
        .arg(format!("{prefix}sess:{{{session}}}:get"))
        .query_async(&mut conn)
        .await
        .expect("GET")
}

/// The event id of the event whose data contains `needle` in `seen`.
fn event_id_of(seen: &str, needle: &str) -> String {
    seen.split("\n\n")
        .find(|event| event.contains(needle))
        .and_then(|event| event.lines().find_map(|l| l.strip_prefix("id:")))
        .unwrap_or_else(|| panic!("an event id for {needle:?} in {seen}"))
        .trim()
        .to_owned()
}

/// `hosting:http:second-sse-rejected` across two services: while the GET stream is
/// open on A, a second GET draws 409 on B as on A (the same answer one service gives);
/// once A's stream closes, its hold is given up and a GET opens the stream on either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_get_stream_is_refused_on_either_service() {
    let redis = RedisServer::start();
    let a = start_holding(&redis, "one:", Duration::from_secs(30)).await;
    let b = start_holding(&redis, "one:", Duration::from_secs(30)).await;
    let session = open(&a.url).await;

    let (status, first, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200);
    for url in [&b.url, &a.url] {
        let (status, mut refused, _) = try_get_stream(url, &session, None).await;
        assert_eq!(status, 409, "a second GET on {url}");
        let body = read_to_end(&mut refused).await;
        assert!(body.contains("only one standalone SSE stream"), "{body}");
    }

    // A's stream closes: its hold leaves Redis, and B opens the stream.
    drop(first);
    let released = async {
        while holder(&redis, "one:", &session).await.is_some() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, released)
        .await
        .expect("the hold is given up when A's stream closes");
    let (status, on_b, _) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 200, "a new GET on B after the first stream closed");
    let (status, _, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 409, "B holds it now");

    // And back on A once B's closes; what A's copy sends then reaches A's stream.
    drop(on_b);
    let released = async {
        while holder(&redis, "one:", &session).await.is_some() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, released)
        .await
        .expect("the hold is given up when B's stream closes");
    let (status, mut on_a, mut seen) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200, "a new GET on A after B's stream closed");
    let peer = b.peers.lock().unwrap()[0].clone();
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_a, &mut seen, r#""n":1"#).await;
}

/// A GET with `Last-Event-ID` on B, while A still holds the stream (the client lost it,
/// A has not noticed): B takes the stream over (as a resumption replaces the connection
/// on one service), replays what the client missed from the shared event store, and
/// carries what comes next; A's connection ends once B's hand-over reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resuming_get_takes_the_stream_over_on_the_other_service() {
    let redis = RedisServer::start();
    // A short lease: were B's hand-over lost, A would learn of the takeover at its next
    // renewal (a third of it).
    let a = start_holding(&redis, "over:", Duration::from_millis(600)).await;
    let b = start_holding(&redis, "over:", Duration::from_millis(600)).await;
    let session = open(&a.url).await;
    let peer = a.peers.lock().unwrap()[0].clone();
    until_initialized(&peer).await;

    let (status, mut on_a, mut seen) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200);
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_a, &mut seen, r#""n":1"#).await;
    let last = event_id_of(&seen, r#""n":1"#);
    // The client stops reading; A still holds the stream and writes n=2 on it.
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 2})))
        .await
        .unwrap()
        .unwrap();

    let (status, mut on_b, mut resumed) = try_get_stream(&b.url, &session, Some(&last)).await;
    assert_eq!(status, 200, "a resumption takes the stream over");
    read_until(&mut on_b, &mut resumed, r#""n":2"#).await;
    assert!(
        !resumed.contains(r#""n":1"#),
        "only what was missed: {resumed}"
    );
    let b_holds = holder(&redis, "over:", &session).await.expect("a holder");

    // A's connection ends (B handed it over); n=3 then goes to B, once.
    let rest = read_to_end(&mut on_a).await;
    assert!(!rest.contains(r#""n":3"#), "{rest}");
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 3})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_eq!(resumed.matches(r#""n":2"#).count(), 1, "{resumed}");
    assert_eq!(resumed.matches(r#""n":3"#).count(), 1, "{resumed}");
    assert_eq!(holder(&redis, "over:", &session).await, Some(b_holds));
    // B's stream is the one: a plain GET is refused on A.
    let (status, _, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 409);
}

/// The take-over is a hand-over: with a lease that A does not renew during the test
/// (so A learns of it only from B), what A's copy sends once B's resumption is
/// answered goes to B, not onto the connection the client lost, and the note A wrote
/// there unread comes once, before it. Before the hand-over, A went on writing on the
/// lost connection until its renewal, and n=3 never reached the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_over_holder_hands_the_stream_over_at_once() {
    let redis = RedisServer::start();
    let a = start_holding(&redis, "hand:", Duration::from_secs(60)).await;
    let b = start_holding(&redis, "hand:", Duration::from_secs(60)).await;
    let session = open(&a.url).await;
    let peer = a.peers.lock().unwrap()[0].clone();

    let (status, mut on_a, mut seen) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200);
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_a, &mut seen, r#""n":1"#).await;
    let last = event_id_of(&seen, r#""n":1"#);
    // The client stops reading A's stream, which stays open: A writes n=2 on it.
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 2})))
        .await
        .unwrap()
        .unwrap();

    let (status, mut on_b, mut resumed) = try_get_stream(&b.url, &session, Some(&last)).await;
    assert_eq!(status, 200, "a resumption takes the stream over");
    // A let go when B took over: its connection ends now, not at a renewal.
    let rest = read_to_end(&mut on_a).await;
    assert!(!rest.contains(r#""n":3"#), "{rest}");
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 3})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_eq!(resumed.matches(r#""n":2"#).count(), 1, "{resumed}");
    assert_eq!(resumed.matches(r#""n":3"#).count(), 1, "{resumed}");
    assert!(
        resumed.find(r#""n":2"#) < resumed.find(r#""n":3"#),
        "in order: {resumed}"
    );
    assert!(!resumed.contains(r#""n":1"#), "{resumed}");
}

/// A holder that vanished without giving its hold up (a killed process: its record in
/// Redis, never renewed) blocks new GETs only until its lease runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_holder_stops_blocking_after_its_lease() {
    let redis = RedisServer::start();
    let a = start_holding(&redis, "gone:", Duration::from_secs(3)).await;
    let b = start_holding(&redis, "gone:", Duration::from_secs(3)).await;
    let session = open(&a.url).await;

    // A killed process's hold, as its `hold_stream` left it: its lease, then nothing.
    let mut conn = redis.connection().await;
    let () = redis::cmd("SET")
        .arg(format!("gone:sess:{{{session}}}:get"))
        .arg("00000000deadbeef/1")
        .arg("PX")
        .arg(300)
        .query_async(&mut conn)
        .await
        .expect("SET");
    let (status, _, _) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 409, "held while the lease runs");

    // Within the lease (bounded polling): the GET opens the stream on B.
    let opened = async {
        loop {
            let (status, stream, _) = try_get_stream(&b.url, &session, None).await;
            match status {
                200 => return stream,
                409 => tokio::task::yield_now().await,
                other => panic!("GET answered {other}"),
            }
        }
    };
    let _on_b = tokio::time::timeout(WITHIN, opened)
        .await
        .expect("the dead holder's lease runs out");
    let held = holder(&redis, "gone:", &session).await.expect("B's hold");
    assert_ne!(held, "00000000deadbeef/1");
    let (status, _, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 409, "B's hold, renewed, still blocks A");
}

/// A write held back: session, event id, data.
type HeldWrite = (String, EventId, Arc<str>);

/// A replay's pause: what tells the test it has read, and what lets it answer.
type Pause = (
    tokio::sync::oneshot::Sender<()>,
    tokio::sync::oneshot::Receiver<()>,
);

/// A service's event store whose writes wait behind a gate the test opens: a
/// write-behind store far behind, whose own replays still reflect its writes (as
/// [`EventStore`] requires) while another service's reads of Redis do not. Its
/// barrier ([`EventStore::flushed`]) resolves once the gate is open and the writes
/// let through are in Redis. Optionally, its next replay pauses once it has read,
/// until the test lets it answer.
struct Gated {
    inner: Arc<modelctx_redis::EventStore>,
    /// The writes held back while the gate is closed (`None`: open), in order.
    held: std::sync::Mutex<Option<Vec<HeldWrite>>>,
    /// How many writes are held back.
    count: tokio::sync::watch::Sender<usize>,
    open: tokio::sync::watch::Sender<bool>,
    /// Whether the transport asked for the barrier.
    flush_asked: tokio::sync::watch::Sender<bool>,
    /// The next replay's pause: told once it has read, answers once let go.
    pause: std::sync::Mutex<Option<Pause>>,
}

impl Gated {
    fn new(inner: modelctx_redis::EventStore) -> Arc<Self> {
        Arc::new(Self {
            inner: Arc::new(inner),
            held: std::sync::Mutex::new(None),
            count: tokio::sync::watch::channel(0).0,
            open: tokio::sync::watch::channel(true).0,
            flush_asked: tokio::sync::watch::channel(false).0,
            pause: std::sync::Mutex::new(None),
        })
    }

    fn close(&self) {
        *self.held.lock().unwrap() = Some(Vec::new());
        self.open.send_replace(false);
    }

    /// Lets the held writes through, in order, and every later one at once.
    fn open(&self) {
        let mut held = self.held.lock().unwrap();
        for (session, id, data) in held.take().unwrap_or_default() {
            self.inner.store(&session, id, data);
        }
        self.open.send_replace(true);
    }

    /// Pauses the next replay after its read: the receiver is told then, the sender
    /// lets it answer.
    fn pause_next_replay(
        &self,
    ) -> (
        tokio::sync::oneshot::Receiver<()>,
        tokio::sync::oneshot::Sender<()>,
    ) {
        let (read_tx, read_rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel();
        *self.pause.lock().unwrap() = Some((read_tx, go_rx));
        (read_rx, go_tx)
    }

    async fn until_held(&self, n: usize) {
        let mut count = self.count.subscribe();
        tokio::time::timeout(WITHIN, count.wait_for(|c| *c >= n))
            .await
            .expect("the write reaches the gate")
            .unwrap();
    }
}

impl EventStore for Gated {
    fn store(&self, session: &str, id: EventId, data: Arc<str>) {
        let mut held = self.held.lock().unwrap();
        match held.as_mut() {
            Some(held) => {
                held.push((session.to_owned(), id, data));
                self.count.send_replace(held.len());
            }
            None => self.inner.store(session, id, data),
        }
    }

    fn replay_after(&self, session: &str, after: EventId) -> BoxFuture<'static, Replay> {
        // The held writes of the stream, and a read queued behind what was let
        // through: together, every write made before this call, once each.
        let (read, behind) = {
            let held = self.held.lock().unwrap();
            let behind: Vec<(EventId, Arc<str>)> = held
                .iter()
                .flatten()
                .filter(|(s, id, _)| {
                    s == session && id.stream == after.stream && id.seq > after.seq
                })
                .map(|(_, id, data)| (*id, data.clone()))
                .collect();
            (self.inner.replay_after(session, after), behind)
        };
        let pause = self.pause.lock().unwrap().take();
        Box::pin(async move {
            let mut replay = read.await?;
            replay.extend(behind);
            if let Some((read, go)) = pause {
                let _ = read.send(());
                let _ = go.await;
            }
            Some(replay)
        })
    }

    fn forget_session(&self, session: &str) {
        self.inner.forget_session(session);
    }

    fn flushed(&self, session: &str) -> BoxFuture<'static, ()> {
        self.flush_asked.send_replace(true);
        let mut open = self.open.subscribe();
        let inner = self.inner.clone();
        let session = session.to_owned();
        Box::pin(async move {
            let _ = open.wait_for(|open| *open).await;
            inner.flushed(&session).await;
        })
    }

    fn runs(&self) -> Option<&dyn modelctx::http::RunStore> {
        self.inner.runs()
    }
}

/// A service sharing sessions under `prefix`, its events written through `store`.
async fn start_gated(redis: &RedisServer, prefix: &str, store: Arc<Gated>) -> Instance {
    let config = StreamableHttpServerConfig::default()
        .session_registry(registry(redis, prefix).await)
        .event_store(store)
        .stream_lease(Duration::from_secs(60));
    Instance::start_with(config, None).await
}

fn gated_store(redis_conn: redis::aio::ConnectionManager, prefix: &str) -> Arc<Gated> {
    let config = modelctx_redis::EventStoreConfig::default().prefix(prefix);
    Gated::new(modelctx_redis::EventStore::new(redis_conn, config))
}

/// Until the transport asks A's store for its barrier (A noticed its GET connection
/// ended) or A's hold leaves Redis (a release that did not wait for it).
async fn until_released_or_flushing(
    redis: &RedisServer,
    prefix: &str,
    session: &str,
    store: &Gated,
) {
    let noticed = async {
        while !*store.flush_asked.borrow() && holder(redis, prefix, session).await.is_some() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, noticed)
        .await
        .expect("A notices its GET connection ended");
}

/// Issue #26, nothing lost: A writes n=2 for its GET stream behind (its store's queue
/// far behind), the client drops A's connection and resumes on B after n=1. A's hold
/// is released only once its store has flushed n=2, so B finds A's hold and takes it
/// over with a hand-over; n=2 reaches the client once, then n=3, in order. Before, the
/// release overtook the write: B found no hold, read the stream before n=2 landed,
/// and n=2 was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_written_behind_before_the_hold_is_released_is_not_lost() {
    let redis = RedisServer::start();
    let store = gated_store(redis.connection().await, "behind:");
    let a = start_gated(&redis, "behind:", store.clone()).await;
    let b = start_holding(&redis, "behind:", Duration::from_secs(60)).await;
    let session = open(&a.url).await;
    let peer = a.peers.lock().unwrap()[0].clone();
    until_initialized(&peer).await;

    let (status, mut on_a, mut seen) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200);
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_a, &mut seen, r#""n":1"#).await;
    let last = event_id_of(&seen, r#""n":1"#);
    let a_holds = holder(&redis, "behind:", &session).await.expect("A's hold");

    store.close();
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 2})))
        .await
        .unwrap()
        .unwrap();
    store.until_held(1).await;
    drop(on_a);
    until_released_or_flushing(&redis, "behind:", &session, &store).await;
    let held_while_flushing = holder(&redis, "behind:", &session).await;

    let (status, mut on_b, mut resumed) = try_get_stream(&b.url, &session, Some(&last)).await;
    assert_eq!(status, 200, "a resumption takes the stream over");
    let b_holds = holder(&redis, "behind:", &session).await.expect("B's hold");
    store.open();
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 3})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_eq!(resumed.matches(r#""n":2"#).count(), 1, "{resumed}");
    assert_eq!(resumed.matches(r#""n":3"#).count(), 1, "{resumed}");
    assert!(
        resumed.find(r#""n":2"#) < resumed.find(r#""n":3"#),
        "in order: {resumed}"
    );
    assert!(!resumed.contains(r#""n":1"#), "{resumed}");
    assert_eq!(
        held_while_flushing,
        Some(a_holds),
        "A's hold waits for its store's barrier"
    );
    // A's release, sent before n=3, found B's hold and left it.
    assert_eq!(holder(&redis, "behind:", &session).await, Some(b_holds));
}

/// The taking side of issue #26: B's resumption reads its replay before A's write
/// behind lands, A's hold is then released (after its store flushed), and only then
/// is B's hold recorded, with no hold to hand over. B reads the stream the client
/// named once more after its hold is recorded: n=2 comes once, then n=3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumption_reads_again_what_a_released_hold_wrote_behind() {
    let redis = RedisServer::start();
    let on_a_store = gated_store(redis.connection().await, "again:");
    let on_b_store = gated_store(redis.connection().await, "again:");
    let a = start_gated(&redis, "again:", on_a_store.clone()).await;
    let b = start_gated(&redis, "again:", on_b_store.clone()).await;
    let session = open(&a.url).await;
    let peer = a.peers.lock().unwrap()[0].clone();
    until_initialized(&peer).await;

    let (status, mut on_a, mut seen) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200);
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 1})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_a, &mut seen, r#""n":1"#).await;
    let last = event_id_of(&seen, r#""n":1"#);

    on_a_store.close();
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 2})))
        .await
        .unwrap()
        .unwrap();
    on_a_store.until_held(1).await;
    drop(on_a);
    until_released_or_flushing(&redis, "again:", &session, &on_a_store).await;

    // B's resumption reads the stream (without n=2) and waits there.
    let (read, go) = on_b_store.pause_next_replay();
    let resuming = {
        let (url, session, last) = (b.url.clone(), session.clone(), last.clone());
        tokio::spawn(async move { try_get_stream(&url, &session, Some(&last)).await })
    };
    tokio::time::timeout(WITHIN, read)
        .await
        .expect("B's resumption reads its replay")
        .unwrap();
    // A's write lands, then its release.
    on_a_store.open();
    let released = async {
        while holder(&redis, "again:", &session).await.is_some() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, released)
        .await
        .expect("A's hold is released once its store flushed");
    let _ = go.send(());
    let (status, mut on_b, mut resumed) = tokio::time::timeout(WITHIN, resuming)
        .await
        .expect("B's resumption is answered")
        .unwrap();
    assert_eq!(status, 200);

    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({"n": 3})))
        .await
        .unwrap()
        .unwrap();
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_eq!(resumed.matches(r#""n":2"#).count(), 1, "{resumed}");
    assert_eq!(resumed.matches(r#""n":3"#).count(), 1, "{resumed}");
    assert!(
        resumed.find(r#""n":2"#) < resumed.find(r#""n":3"#),
        "in order: {resumed}"
    );
    assert!(!resumed.contains(r#""n":1"#), "{resumed}");
}
