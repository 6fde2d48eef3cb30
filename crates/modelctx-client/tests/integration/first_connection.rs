//! The first connection to servers as they really are: a stdio child that is still
//! importing when the probe wait runs out, one that answers `server/discover` late,
//! one that refuses `initialize` with `-32022`, and a proxy that opens its own upstream
//! session on the first message it relays.
//!
//! The stdio children are played in-process over pipes (the real stdio framing, so the
//! client sees a `"stdio"` transport); the clock is tokio's paused clock, so a child
//! that imports for 12 s costs no wall time, and the waits are the real defaults.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx_client::{Client, ClientBuilder, ConnectMode};
use modelctx_server::{Context, Server, ToolDef};
use modelctx_session::SessionError;
use modelctx_stdio::StdioTransport;
use modelctx_test::within;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::{JsonRpcMessage, ProtocolVersion};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Bounds every wait (virtual time under the paused clock).
const WAIT: Duration = Duration::from_secs(300);

/// How a played child answers one request.
enum Reply {
    Result(Value),
    Error(i64, &'static str, Option<Value>),
    /// Says nothing.
    Silent,
    /// The reply, this long after the request was read.
    After(Duration, Box<Reply>),
}

impl Reply {
    fn message(self, id: &Value) -> Option<(Duration, Value)> {
        match self {
            Self::Result(result) => Some((
                Duration::ZERO,
                json!({"jsonrpc": "2.0", "id": id, "result": result}),
            )),
            Self::Error(code, message, data) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = data;
                }
                Some((
                    Duration::ZERO,
                    json!({"jsonrpc": "2.0", "id": id, "error": error}),
                ))
            }
            Self::Silent => None,
            Self::After(delay, reply) => reply.message(id).map(|(d, m)| (d + delay, m)),
        }
    }
}

/// The methods a played child read, in order (notifications included).
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<String>>>);

impl Heard {
    fn methods(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The methods once at least `n` were read (what the client sends last may still
    /// be on its way when `connect` returns).
    async fn first(&self, n: usize) -> Vec<String> {
        within(WAIT, "the child to read what was sent", async {
            while self.0.lock().unwrap().len() < n {
                tokio::task::yield_now().await;
            }
        })
        .await;
        self.methods()
    }
}

/// A stdio server played by hand: it reads nothing and says nothing for `startup` (an
/// interpreter importing its packages), then answers each request with
/// `answer(method, n)`, `n` counting that method's requests from 1.
fn played_child(
    startup: Duration,
    answer: impl Fn(&str, usize) -> Reply + Send + 'static,
) -> (StdioTransport, Heard) {
    let (client_out, mut child_in) = tokio::io::duplex(64 * 1024);
    let (mut child_out, client_in) = tokio::io::duplex(64 * 1024);
    let heard = Heard::default();
    let record = heard.clone();
    tokio::spawn(async move {
        tokio::time::sleep(startup).await;
        let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
        tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                let mut line = serde_json::to_vec(&message).unwrap();
                line.push(b'\n');
                if child_out.write_all(&line).await.is_err() {
                    return;
                }
            }
        });
        let (read, _write) = tokio::io::split(&mut child_in);
        let mut lines = BufReader::new(read).lines();
        let mut counts: HashMap<String, usize> = HashMap::new();
        while let Ok(Some(line)) = lines.next_line().await {
            let message: Value = serde_json::from_str(&line).unwrap();
            let method = message["method"].as_str().unwrap_or_default().to_owned();
            record.0.lock().unwrap().push(method.clone());
            let Some(id) = message.get("id") else {
                continue;
            };
            let n = counts.entry(method.clone()).or_default();
            *n += 1;
            if let Some((delay, reply)) = answer(&method, *n).message(id) {
                let tx = tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = tx.send(reply);
                });
            }
        }
    });
    (StdioTransport::new(client_in, client_out), heard)
}

/// A `server/discover` answer offering `versions`.
fn discovered(versions: &[&str]) -> Value {
    json!({
        "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
        "supportedVersions": versions, "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "py-server", "version": "1"}}
    })
}

/// An `initialize` result of revision `version`.
fn initialized(version: &str) -> Value {
    json!({
        "protocolVersion": version, "capabilities": {"tools": {}},
        "serverInfo": {"name": "legacy-server", "version": "1"}
    })
}

fn tools() -> Value {
    json!({"resultType": "complete", "tools": [
        {"name": "echo", "inputSchema": {"type": "object"}}
    ]})
}

/// `-32022` naming `supported`.
fn unsupported(supported: &[&str]) -> Reply {
    Reply::Error(
        -32022,
        "Unsupported protocol version",
        Some(json!({"supported": supported, "requested": "2025-11-25"})),
    )
}

/// Connects a client with the default settings (auto mode) over `transport`.
async fn connect(transport: impl Transport) -> Result<Client, SessionError> {
    connect_with(Client::builder("c", "1"), transport).await
}

/// Connects the client `builder` makes over `transport`.
async fn connect_with(
    builder: ClientBuilder,
    transport: impl Transport,
) -> Result<Client, SessionError> {
    within(WAIT, "connect", builder.connect(transport)).await
}

async fn tool_names(client: &Client) -> Vec<String> {
    within(WAIT, "tools/list", client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// The reported failure: a FastMCP server of 2026-07-28 only, importing for longer
/// than the probe wait. It answers the probe and refuses `initialize` with `-32022`,
/// both late: the client settles in the era it offers, with the default wait.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_child_still_importing_past_the_probe_wait_is_connected_in_its_era() {
    let (transport, heard) = played_child(Duration::from_secs(12), |method, _| match method {
        "server/discover" => Reply::Result(discovered(&["2026-07-28"])),
        "initialize" => unsupported(&["2026-07-28"]),
        "tools/list" => Reply::Result(tools()),
        _ => Reply::Error(-32601, "Method not found", None),
    });
    let client = connect(transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().name, "py-server");
    assert_eq!(tool_names(&client).await, ["echo"]);
    assert_eq!(
        heard.methods(),
        ["server/discover", "initialize", "tools/list"]
    );
}

/// A child that answers the probe only after the client sent `initialize`, which it
/// refuses without naming a version: the late discover answer is the connection.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_late_discover_answer_still_connects() {
    let (transport, heard) = played_child(Duration::ZERO, |method, _| match method {
        "server/discover" => Reply::After(
            Duration::from_secs(3),
            Box::new(Reply::Result(discovered(&["2026-07-28"]))),
        ),
        "initialize" => Reply::Error(-32601, "Method not found: initialize", None),
        "tools/list" => Reply::Result(tools()),
        _ => Reply::Silent,
    });
    let client = Client::builder("c", "1").probe_timeout(Duration::from_secs(1));
    let client = connect_with(client, transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(tool_names(&client).await, ["echo"]);
    assert_eq!(
        heard.methods(),
        ["server/discover", "initialize", "tools/list"]
    );
}

/// A probe answered while `initialize` is out, by a server that never answers the
/// handshake: another probe wait after the probe's answer, then the stateless era.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_handshake_left_unanswered_after_a_late_probe_answer_leaves_the_stateless_era() {
    let (transport, heard) = played_child(Duration::from_secs(12), |method, _| match method {
        "server/discover" => Reply::Result(discovered(&["2026-07-28"])),
        "tools/list" => Reply::Result(tools()),
        _ => Reply::Silent,
    });
    let started = tokio::time::Instant::now();
    let client = connect(transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(22),
        "12 s, then a wait"
    );
    assert_eq!(tool_names(&client).await, ["echo"]);
    assert_eq!(
        heard.methods(),
        ["server/discover", "initialize", "tools/list"]
    );
}

/// A probe answered while `initialize` is out, by a server that then accepts the
/// handshake: the handshake era, which the server opened for this connection.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_accepted_handshake_wins_over_a_late_discover_answer() {
    let (transport, heard) = played_child(Duration::from_secs(12), |method, _| match method {
        "server/discover" => Reply::Result(discovered(&["2026-07-28", "2025-11-25"])),
        "initialize" => Reply::Result(initialized("2025-11-25")),
        "tools/list" => Reply::Result(json!({"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}}
        ]})),
        _ => Reply::Silent,
    });
    let client = connect(transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(tool_names(&client).await, ["echo"]);
    assert_eq!(
        heard.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
}

/// A server of the handshake era that ignores requests before `initialize`: after
/// the probe wait, the handshake; the unanswered probe is cancelled once it settled.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_silent_server_gets_the_handshake_after_the_probe_wait() {
    let (transport, heard) = played_child(Duration::ZERO, |method, _| match method {
        "initialize" => Reply::Result(initialized("2025-11-25")),
        _ => Reply::Silent,
    });
    let started = tokio::time::Instant::now();
    let client = connect(transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(10),
        "the default wait"
    );
    assert_eq!(
        heard.first(4).await,
        [
            "server/discover",
            "initialize",
            "notifications/cancelled",
            "notifications/initialized"
        ]
    );
}

/// `-32022` on `initialize` naming 2026-07-28, after a probe refused by something that
/// was not ready: probed once more, and the stateless era.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_initialize_refusal_naming_2026_switches_to_it() {
    let (transport, heard) = played_child(Duration::ZERO, |method, n| match (method, n) {
        ("server/discover", 1) => Reply::Error(-32603, "upstream not ready", None),
        ("server/discover", _) => Reply::Result(discovered(&["2026-07-28"])),
        ("initialize", _) => unsupported(&["2026-07-28"]),
        ("tools/list", _) => Reply::Result(tools()),
        _ => Reply::Silent,
    });
    let client = connect(transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(tool_names(&client).await, ["echo"]);
    assert_eq!(
        heard.methods(),
        [
            "server/discover",
            "initialize",
            "server/discover",
            "tools/list"
        ]
    );
}

/// `-32022` on `initialize` naming an older handshake revision this client speaks:
/// `initialize` again with it.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_initialize_refusal_naming_an_older_revision_is_asked_again_with_it() {
    let (transport, heard) = played_child(Duration::ZERO, |method, n| match (method, n) {
        ("initialize", 1) => unsupported(&["2025-06-18", "2024-11-05"]),
        ("initialize", _) => Reply::Result(initialized("2025-06-18")),
        _ => Reply::Silent,
    });
    let client = Client::builder("c", "1").mode(ConnectMode::Handshake);
    let client = connect_with(client, transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_06_18);
    assert_eq!(
        heard.first(3).await,
        ["initialize", "initialize", "notifications/initialized"]
    );
}

/// Handshake mode against a server of 2026-07-28 only: an error that says so, and what
/// to do, with the server's `-32022` under it.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn legacy_mode_against_a_modern_only_server_says_which_mode_works() {
    let (transport, _heard) = played_child(Duration::ZERO, |_, _| unsupported(&["2026-07-28"]));
    let client = Client::builder("c", "1").mode(ConnectMode::Handshake);
    let error = connect_with(client, transport).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("sent initialize (2025-11-25): error -32022: Unsupported protocol version")
            && text.contains("supported: 2026-07-28")
            && text.contains("connect in auto or discover mode"),
        "{text}"
    );
    assert_eq!(error.protocol_error().map(|e| e.code.0), Some(-32022));
}

/// A failure says what was sent and what came back, in order.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_failed_connection_says_what_was_tried_and_what_came_back() {
    let (transport, _heard) = played_child(Duration::ZERO, |method, _| match method {
        "server/discover" => Reply::Error(-32601, "Method not found", None),
        _ => Reply::Error(-32603, "the database is down", None),
    });
    let error = connect(transport).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(
            "sent server/discover (2026-07-28): error -32601: Method not found; then \
             initialize (2025-11-25): error -32603: the database is down"
        ),
        "{text}"
    );
    assert_eq!(error.protocol_error().map(|e| e.code.0), Some(-32603));
}

// --- A proxy in the middle -------------------------------------------------------------

/// How the played proxy treats the client's `initialize` once it has opened its own
/// upstream session.
#[derive(Clone, Copy)]
enum Proxy {
    /// Relays it: the upstream server refuses a second `initialize`.
    Relays,
    /// Answers it with what its own `initialize` got.
    AnswersFromItsSession,
}

#[derive(serde::Deserialize, modelctx_server::schemars::JsonSchema)]
#[schemars(crate = "modelctx_server::schemars")]
struct NoArgs {}

fn to_value(message: &JsonRpcMessage) -> Value {
    serde_json::from_slice(&message.to_vec()).unwrap()
}

fn to_message(value: &Value) -> TransportMessage {
    TransportMessage::new(JsonRpcMessage::from_slice(&serde_json::to_vec(value).unwrap()).unwrap())
}

/// A proxy between the client and a server of the handshake era, like the gateways
/// that connect upstream lazily: the first message it relays opens its upstream
/// session — itself when it is `initialize`, else with an `initialize` of its own
/// first. Returns the client's end.
fn proxied(kind: Proxy) -> impl Transport {
    let upstream = Server::builder("upstream", "1")
        .stateless_era(false)
        .tool(ToolDef::new("echo", |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("echoed")
        }))
        .unwrap()
        .build();
    let (client_end, proxy_down) = modelctx_memory::pair();
    let (proxy_up, server_end) = modelctx_memory::pair();
    let session = upstream.serve(server_end);
    tokio::spawn(async move {
        let _session = session;
        let (down_tx, mut down_rx) = proxy_down.split();
        let (up_tx, mut up_rx) = proxy_up.split();
        let Some(Ok(first)) = down_rx.recv().await else {
            return;
        };
        let first = to_value(&first.message);
        let mut own_init = None;
        if first["method"] != "initialize" {
            let init = json!({"jsonrpc": "2.0", "id": "proxy-init", "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "proxy", "version": "1"}}});
            up_tx.send(to_message(&init)).await.unwrap();
            let Some(Ok(answer)) = up_rx.recv().await else {
                return;
            };
            own_init = Some(to_value(&answer.message)["result"].clone());
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            up_tx.send(to_message(&initialized)).await.unwrap();
        }
        up_tx.send(to_message(&first)).await.unwrap();
        loop {
            tokio::select! {
                Some(Ok(message)) = down_rx.recv() => {
                    let value = to_value(&message.message);
                    match (&own_init, kind, value["method"].as_str()) {
                        (Some(result), Proxy::AnswersFromItsSession, Some("initialize")) => {
                            let answer = json!({"jsonrpc": "2.0", "id": value["id"], "result": result});
                            down_tx.send(to_message(&answer)).await.unwrap();
                        }
                        (Some(_), Proxy::AnswersFromItsSession, Some("notifications/initialized")) => {}
                        _ => up_tx.send(message).await.unwrap(),
                    }
                }
                Some(Ok(message)) = up_rx.recv() => {
                    if down_tx.send(message).await.is_err() {
                        return;
                    }
                }
                else => return,
            }
        }
    });
    client_end
}

/// A proxy that opened its upstream session on the probe: a working connection in
/// auto mode when it answers the handshake itself; when it relays the handshake to a
/// server it already initialised, a clear error that says to pin the era, and pinning
/// it works.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_proxy_that_took_the_probe_for_its_session_start_connects_or_asks_to_pin_the_era() {
    let transport = proxied(Proxy::AnswersFromItsSession);
    let client = connect(transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(tool_names(&client).await, ["echo"]);

    let transport = proxied(Proxy::Relays);
    let error = connect(transport).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("sent server/discover (2026-07-28): error -32601: Method not found")
            && text.contains("then initialize (2025-11-25): error -32600:")
            && text.contains("pin the era instead of probing (mode `legacy`"),
        "{text}"
    );

    let transport = proxied(Proxy::Relays);
    let client = Client::builder("c", "1").mode(ConnectMode::Handshake);
    let client = connect_with(client, transport).await.unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(tool_names(&client).await, ["echo"]);
}
