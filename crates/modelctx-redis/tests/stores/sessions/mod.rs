//! Sessions shared by two services through Redis: a client whose every connection goes
//! to the next service (a round-robin forwarder, no affinity) runs one 2025-era session
//! across both; DELETE on one is 404 on the other; the cap counts both; records expire
//! and do not pile up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{RedisServer, WITHIN, hearing, json_request, post_json, serve};
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
    NotificationMethod, ProtocolVersion, RequestedSchema, SetLevelRequest, SetLevelRequestParams,
    TaskSupport, Tool,
};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

mod behind;
mod copies;
mod holds;
mod registry;
mod relays;

json_request!(
    /// Answers what the session knows of its client, after logging once at `info` and
    /// once at `error`.
    Probe,
    "test/probe"
);

json_request!(
    /// Asks the client for a form (elicitation) and answers what it said.
    Ask,
    "test/ask"
);

json_request!(
    /// Runs until cancelled (the session drops a cancelled handler), saying so on the
    /// instance's `events`.
    Wait,
    "test/wait"
);

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

    /// Two services sharing sessions under `prefix`, each with its own connection to
    /// Redis (as two processes would be) and capped at `max_sessions`.
    async fn two(redis: &RedisServer, prefix: &str, max_sessions: usize) -> (Self, Self) {
        let a = Self::start(registry(redis, prefix).await, max_sessions).await;
        let b = Self::start(registry(redis, prefix).await, max_sessions).await;
        (a, b)
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
    let headers = [
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session),
    ];
    let response = post_json(url, &headers, &body).await;
    assert_eq!(response.status().as_u16(), 200);
    response.bytes_stream().boxed()
}

/// Checks that `seen` holds `what` exactly once.
#[track_caller]
fn assert_once(seen: &str, what: &str) {
    assert_eq!(seen.matches(what).count(), 1, "once: {seen}");
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

/// `instance`'s copy of the first session opened there, once it has taken in the
/// client's `notifications/initialized`.
async fn first_copy(instance: &Instance) -> Peer {
    let peer = instance.peers.lock().unwrap()[0].clone();
    until_initialized(&peer).await;
    peer
}

/// A tool whose addition changes the tool list.
fn added_tool() -> ToolDef {
    let tool = Tool::new(
        "added",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    ToolDef::with_schema(tool, |_args, _cx| async move {
        Ok::<_, String>(modelctx::types::CallToolResult::text("added"))
    })
}

/// A notification not tied to a request.
struct Note;
impl NotificationMethod for Note {
    const METHOD: &'static str = "test/note";
    type Params = Value;
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
    Arc::new(redis.session_registry(prefix).await)
}

/// Opens the session's GET stream on `url` and reads its priming event: the stream,
/// and what was read with it (events already waiting may come in the same chunk).
async fn get_stream(
    url: &str,
    session: &str,
) -> (
    futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    String,
) {
    let (status, stream, seen) = try_get_stream(url, session, None).await;
    assert_eq!(status, 200);
    (stream, seen)
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
    let key = format!("{prefix}sess:{{{session}}}:out");
    redis.query_key("LLEN", &key).await
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

/// Two services like [`start_holding`]'s.
async fn two_holding(redis: &RedisServer, prefix: &str, lease: Duration) -> (Instance, Instance) {
    let a = start_holding(redis, prefix, lease).await;
    let b = start_holding(redis, prefix, lease).await;
    (a, b)
}

/// Waits until no service holds `session`'s GET stream; `what` says why it should.
async fn until_released(redis: &RedisServer, prefix: &str, session: &str, what: &str) {
    let released = async {
        while holder(redis, prefix, session).await.is_some() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, released).await.expect(what);
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

/// Sends the note `{"n": n}` from `peer`, the copy of a session in one service.
async fn note(peer: &Peer, n: u32) {
    tokio::time::timeout(WITHIN, peer.notify::<Note>(json!({ "n": n })))
        .await
        .expect("the note is sent in time")
        .expect("the note is sent");
}

/// What a client that had n=1 got on its next stream, `got`: n=2, then n=3, each once,
/// and not n=1 again.
fn assert_two_then_three(got: &str) {
    assert_eq!(got.matches(r#""n":2"#).count(), 1, "{got}");
    assert_eq!(got.matches(r#""n":3"#).count(), 1, "{got}");
    assert!(
        got.find(r#""n":2"#) < got.find(r#""n":3"#),
        "in order: {got}"
    );
    assert!(!got.contains(r#""n":1"#), "{got}");
}

/// Opens `session`'s GET stream on `url`, whose copy is `peer`, and reads the note
/// n=1 that `peer` sends on it: the stream, what it read, and n=1's event id.
async fn stream_past_a_note(
    url: &str,
    session: &str,
    peer: &Peer,
) -> (
    futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    String,
    String,
) {
    let (status, mut stream, mut seen) = try_get_stream(url, session, None).await;
    assert_eq!(status, 200);
    note(peer, 1).await;
    read_until(&mut stream, &mut seen, r#""n":1"#).await;
    let last = event_id_of(&seen, r#""n":1"#);
    (stream, seen, last)
}

/// The GET stream's holder recorded for `session`, if any.
async fn holder(redis: &RedisServer, prefix: &str, session: &str) -> Option<String> {
    let key = format!("{prefix}sess:{{{session}}}:get");
    redis.query_key("GET", &key).await
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
