//! The fault plan of SECURITY.md (its 33 bad-input and fault cases) as named tests, on the
//! transports each case applies to. SECURITY.md at the repository root maps every case to its tests here and to the
//! tests elsewhere that cover it too; a test here exists where a case, or one of its
//! transports, had none.
//!
//! Three kinds of test:
//! - role level (`case_14_…`, `case_15_…`): a real `Server` and `Client` connected in
//!   each cell the conformance matrix has (in-memory, stdio framing over pipes, streamable HTTP
//!   stateful and stateless, 2026-07-28 over streamable HTTP, legacy SSE), one test
//!   function per transport, all running one body;
//! - wire level (`case_01_…`, `case_02_…`, …): bytes a `Client` would never send, written
//!   straight onto each byte transport (stdio lines, streamable HTTP POSTs, legacy SSE
//!   POSTs) in front of a real `Server`; after each, a probe shows the session goes on.
//!   In-memory carries typed values only, so bad bytes cannot reach it;
//! - the issue's dropping server (`dropped_connections_mid_stream_end_every_call_once`):
//!   a TCP proxy cutting streamable HTTP connections at pseudo-random points.
//!
//! Every wait is bounded (`within`); nothing sleeps.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::http::StreamableHttpServerConfig;
use modelctx::http::sse::{SseEvent, SseParser};
use modelctx::server::{Context, Server, ToolDef};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ErrorCode, JsonObject, Tool,
};
use modelctx_conformance::{Cell, Connector, SpecVersion, TransportKind, request_method, within};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Barrier, Notify, mpsc};

use modelctx_conformance::http_support::{self, Raw, host, raw_post, send};
use modelctx_conformance::support::{Echo, client, connect, loopback, payload};
use modelctx_test::text_of;

request_method!(Explode = "test/explode");
request_method!(Wait = "test/wait");
request_method!(Rendezvous = "test/rendezvous");

/// What the fault plan's server lets a test observe and steer.
#[derive(Clone)]
struct Controls {
    /// Hears each `test/wait` handler start.
    started: mpsc::UnboundedSender<()>,
    /// Lets the `test/wait` handlers finish.
    release: Arc<Notify>,
    /// `test/rendezvous` answers once two of its calls are in their handlers at once.
    rendezvous: Arc<Barrier>,
    /// How many `test/echo` handlers ran.
    echoes: Arc<AtomicUsize>,
}

/// The server every test here runs: `test/echo` answers its params, `test/explode` and
/// the tool `explode` panic with a secret in the message, `test/wait` holds until
/// released, `test/rendezvous` until a second one arrives.
fn fault_server() -> (Server, Controls, mpsc::UnboundedReceiver<()>) {
    let (started, started_rx) = mpsc::unbounded_channel();
    let controls = Controls {
        started,
        release: Arc::new(Notify::new()),
        rendezvous: Arc::new(Barrier::new(2)),
        echoes: Arc::new(AtomicUsize::new(0)),
    };
    let Value::Object(schema) = json!({"type": "object"}) else {
        unreachable!("an object literal")
    };
    let explode = ToolDef::with_schema(
        Tool::new("explode", schema),
        |_: JsonObject, _: Context| async move {
            if true {
                panic!("secret internal detail");
            }
            Ok::<_, String>(CallToolResult::text("unreachable"))
        },
    );
    let c = controls.clone();
    let (echo, wait, rendezvous) = (c.clone(), c.clone(), c);
    let server = Server::builder("fault-plan", "1.0.0")
        .tool(explode)
        .expect("a valid tool")
        .request_handler::<Echo, _, _>(move |params, _| {
            echo.echoes.fetch_add(1, Ordering::SeqCst);
            async move { Ok(params) }
        })
        .request_handler::<Explode, _, _>(|_, _| async move {
            if true {
                panic!("secret internal detail");
            }
            Ok(Value::Null)
        })
        .request_handler::<Wait, _, _>(move |params, _| {
            let wait = wait.clone();
            async move {
                let released = wait.release.notified();
                let _ = wait.started.send(());
                released.await;
                Ok(params)
            }
        })
        .request_handler::<Rendezvous, _, _>(move |params, _| {
            let rendezvous = rendezvous.rendezvous.clone();
            async move {
                rendezvous.wait().await;
                Ok(params)
            }
        })
        .build();
    (server, controls, started_rx)
}

/// One test function per cell of the matrix, each running `$body` there.
macro_rules! on_every_transport {
    ($case:ident, $body:path) => {
        mod $case {
            use super::*;

            async fn run(transport: TransportKind, version: SpecVersion) {
                let connector = Connector::new(Cell::new(transport, version))
                    .expect("the runner builds every cell");
                $body(connector).await;
            }

            on_every_transport!(@cells
                in_memory => InMemory, V2025_11_25;
                stdio => Stdio, V2025_11_25;
                streamable_http => StreamableHttp, V2025_11_25;
                streamable_http_stateless => StreamableHttpStateless, V2025_11_25;
                streamable_http_2026_07_28 => StreamableHttp, V2026_07_28;
                legacy_sse => Sse, V2025_11_25;
            );
        }
    };
    (@cells $($test:ident => $transport:ident, $version:ident;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                run(TransportKind::$transport, SpecVersion::$version).await;
            }
        )*
    };
}

on_every_transport!(case_14_handler_panic, handler_panic);

/// Case 14: a request handler that panics answers -32603 for its id, a tool that panics
/// a tool result with `isError`, neither with the panic's text;
/// a request of the same session already in flight completes, the session serves the
/// next request, and another session (another connection) is untouched.
async fn handler_panic(connector: Connector) {
    let (server, controls, mut started) = fault_server();
    let a = connect(&connector, &server, client()).await;
    let b = connect(&connector, &server, client()).await;
    let cell = connector.cell();

    let in_flight = a.client.request::<Wait>(json!({"v": "in flight"}));
    let faults = async {
        within("the waiting handler to start", started.recv()).await;
        // A request handler that panics.
        let err = a
            .client
            .request::<Explode>(json!({}))
            .await
            .expect_err("a panic is an error");
        let err = err.protocol_error().expect("a JSON-RPC error");
        assert_eq!(err.code, ErrorCode::INTERNAL_ERROR, "{cell}: {err:?}");
        assert!(!format!("{err:?}").contains("secret"), "{cell}: {err:?}");
        // A tool that panics: a tool execution error (`isError`, as for a tool that
        // fails; the manifest's `mcpserver:tool:handler-throws`), the panic's text
        // withheld.
        let params = CallToolRequestParams::new("explode").with_arguments(JsonObject::new());
        let result = a
            .client
            .request::<CallToolRequest>(params)
            .await
            .expect("a panicking tool is a tool result");
        assert_eq!(result.is_error, Some(true), "{cell}: {result:?}");
        assert!(
            !format!("{result:?}").contains("secret"),
            "{cell}: {result:?}"
        );
        // The same session serves the next request, and so does the other one.
        let echoed = a.client.request::<Echo>(json!({"session": "a"})).await;
        assert_eq!(
            payload(echoed.expect("a still serves")),
            json!({"session": "a"}),
            "{cell}"
        );
        let echoed = b.client.request::<Echo>(json!({"session": "b"})).await;
        assert_eq!(
            payload(echoed.expect("b still serves")),
            json!({"session": "b"}),
            "{cell}"
        );
        controls.release.notify_one();
    };
    let (in_flight, ()) = within("the calls", async { tokio::join!(in_flight, faults) }).await;
    assert_eq!(
        payload(in_flight.expect("the request in flight completes")),
        json!({"v": "in flight"}),
        "{cell}"
    );
}

/// A raw client on one byte transport, in front of a [`fault_server`], past the
/// handshake.
enum Wire {
    /// Lines on a pipe pair to a stdio transport.
    Stdio {
        write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
        lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    },
    /// POSTs to a streamable HTTP session.
    Http {
        raw: Raw,
        session: String,
        _hosted: http_support::Hosted,
    },
    /// POSTs to a legacy SSE session, answers on its event stream.
    Sse {
        stream: reqwest::Response,
        parser: SseParser,
        url: String,
    },
}

/// What a wire did with one input: the HTTP status of its POST (none on stdio) and the
/// messages it answered with, from the POST's body or (stdio, legacy SSE) the stream
/// before the answer to the probe sent after it.
#[derive(Debug)]
struct Reply {
    status: Option<u16>,
    messages: Vec<Value>,
}

impl Reply {
    /// The single error answer, checked for `code` and `id`. `Value::Null` stands for
    /// "no id": the SDK leaves the member out, as the MCP schema has it (its
    /// `JSONRPCErrorResponse.id` is optional and a `RequestId` is never null); JSON-RPC
    /// 2.0 writes `"id": null`. Both read as no id; SECURITY.md records the choice.
    fn assert_error(&self, wire: &str, code: i64, id: Value) {
        assert_eq!(self.messages.len(), 1, "{wire}: one answer: {self:?}");
        let m = &self.messages[0];
        assert_eq!(m["error"]["code"], json!(code), "{wire}: {self:?}");
        if id.is_null() {
            assert!(m.get("id").is_none_or(Value::is_null), "{wire}: {self:?}");
        } else {
            assert_eq!(m["id"], id, "{wire}: {self:?}");
        }
    }

    /// No answer at all.
    fn assert_silent(&self, wire: &str) {
        assert!(self.messages.is_empty(), "{wire}: no answer: {self:?}");
    }
}

const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

impl Wire {
    /// The three byte transports, each in front of its own `server`.
    async fn all(server: &Server) -> Vec<(&'static str, Wire)> {
        vec![
            ("stdio", Wire::stdio(server).await),
            ("streamable-http", Wire::http(server).await),
            ("legacy-sse", Wire::sse(server).await),
        ]
    }

    async fn stdio(server: &Server) -> Self {
        Self::stdio_with(server, modelctx::stdio::StdioOptions::new()).await
    }

    async fn stdio_with(server: &Server, options: modelctx::stdio::StdioOptions) -> Self {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (their_read, their_write) = tokio::io::split(theirs);
        let transport =
            modelctx::stdio::StdioTransport::with_options(their_read, their_write, options);
        server.serve(transport);
        let (read, write) = tokio::io::split(ours);
        let mut wire = Wire::Stdio {
            write,
            lines: BufReader::new(read).lines(),
        };
        wire.write_line(INITIALIZE).await;
        let answer = wire.next_message().await;
        assert_eq!(answer["id"], json!("init"), "{answer}");
        wire.write_line(INITIALIZED).await;
        wire
    }

    async fn http(server: &Server) -> Self {
        let hosted = host(server.clone(), StreamableHttpServerConfig::default()).await;
        let raw = Raw::new(&hosted.url);
        let session = raw.init().await;
        Wire::Http {
            raw,
            session,
            _hosted: hosted,
        }
    }

    async fn sse(server: &Server) -> Self {
        Self::sse_with(server, modelctx::sse::SseServerConfig::default()).await
    }

    async fn sse_with(server: &Server, config: modelctx::sse::SseServerConfig) -> Self {
        let origin = serve_sse(server, config).await;
        let (stream, parser, endpoint) = open_sse(&origin).await;
        assert_eq!(stream.status(), 200);
        assert_eq!(endpoint.event_type(), "endpoint");
        let mut wire = Wire::Sse {
            stream,
            parser,
            url: format!("{origin}{}", endpoint.data),
        };
        let status = wire.post_sse(INITIALIZE.to_vec()).await.0;
        assert_eq!(status, 202);
        let answer = wire.next_message().await;
        assert_eq!(answer["id"], json!("init"), "{answer}");
        assert_eq!(wire.post_sse(INITIALIZED.to_vec()).await.0, 202);
        wire
    }

    /// Stdio only: writes `line` and a newline.
    async fn write_line(&mut self, line: &[u8]) {
        let Wire::Stdio { write, .. } = self else {
            panic!("write_line is for stdio")
        };
        within("a write", async {
            write.write_all(line).await.expect("the pipe takes it");
            write.write_all(b"\n").await.expect("the pipe takes it");
            write.flush().await.expect("the pipe flushes");
        })
        .await;
    }

    /// Legacy SSE only: POSTs `body` to the session's message URL.
    async fn post_sse(&self, body: Vec<u8>) -> (u16, String) {
        let Wire::Sse { url, .. } = self else {
            panic!("post_sse is for legacy SSE")
        };
        within("a POST", async {
            let r = reqwest::Client::new()
                .post(url.as_str())
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .expect("the server answers");
            (r.status().as_u16(), r.text().await.unwrap_or_default())
        })
        .await
    }

    /// Stdio and legacy SSE: the next message the server sent.
    async fn next_message(&mut self) -> Value {
        match self {
            Wire::Stdio { lines, .. } => {
                let line = within("a line from the server", lines.next_line()).await;
                let line = line.expect("the pipe reads").expect("the server is there");
                serde_json::from_str(&line).expect("the server writes JSON")
            }
            Wire::Sse { stream, parser, .. } => {
                within("a message event", async {
                    loop {
                        let chunk = stream.chunk().await.expect("the stream reads");
                        let chunk = chunk.expect("the stream stays open");
                        let events = parser.push(&chunk).expect("events within the cap");
                        if let Some(e) = events.iter().find(|e| e.event_type() == "message") {
                            return serde_json::from_str(&e.data).expect("a message is JSON");
                        }
                    }
                })
                .await
            }
            Wire::Http { .. } => panic!("streamable HTTP answers on each POST"),
        }
    }

    /// A `ping` with the id `after`, then the probe: the session goes on.
    async fn ping_after(&mut self, probe: u32) -> Reply {
        self.send(br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#, probe)
            .await
    }

    /// Sends `input` as one message's worth of bytes (a line, a POST body) and returns
    /// what came of it; then checks, with a `ping`, that the session still serves.
    async fn send(&mut self, input: &[u8], probe: u32) -> Reply {
        let probe_id = json!(format!("probe-{probe}"));
        let ping = json!({"jsonrpc": "2.0", "id": probe_id, "method": "ping"}).to_string();
        match self {
            Wire::Stdio { .. } => {
                self.write_line(input).await;
                self.write_line(ping.as_bytes()).await;
                let messages = self.messages_until(&probe_id).await;
                Reply {
                    status: None,
                    messages,
                }
            }
            Wire::Sse { .. } => {
                let (status, body) = self.post_sse(input.to_vec()).await;
                let mut messages: Vec<Value> = serde_json::from_str(&body).into_iter().collect();
                assert_eq!(self.post_sse(ping.into_bytes()).await.0, 202, "the probe");
                messages.extend(self.messages_until(&probe_id).await);
                Reply {
                    status: Some(status),
                    messages,
                }
            }
            Wire::Http { raw, session, .. } => {
                let post = |body: Vec<u8>| {
                    raw.bare_post(
                        Some(http_support::ACCEPT_BOTH),
                        Some("application/json"),
                        String::new(),
                    )
                    .body(body)
                    .header("mcp-session-id", session.as_str())
                    .header("mcp-protocol-version", "2025-11-25")
                };
                let r = send(post(input.to_vec())).await;
                let probed = send(post(ping.into_bytes())).await;
                assert_eq!(probed.status, 200, "the probe: {probed:?}");
                assert_eq!(probed.messages()[0]["id"], probe_id, "{probed:?}");
                Reply {
                    status: Some(r.status),
                    messages: r.messages(),
                }
            }
        }
    }

    /// The messages before the answer to `probe`, which must come.
    async fn messages_until(&mut self, probe: &Value) -> Vec<Value> {
        let mut before = Vec::new();
        loop {
            let m = self.next_message().await;
            if m["id"] == *probe {
                assert!(m.get("result").is_some(), "the probe is answered: {m}");
                return before;
            }
            before.push(m);
        }
    }
}

/// Serves `server` over legacy HTTP+SSE with `config` on a loopback port; its origin.
async fn serve_sse(server: &Server, config: modelctx::sse::SseServerConfig) -> String {
    let (listener, origin) = loopback("").await;
    let server = server.clone();
    let service = modelctx::sse::SseService::with_config(config, move |transport| {
        server.serve(transport);
    });
    tokio::spawn(service.serve(listener, std::future::pending()));
    origin
}

/// Opens the legacy SSE event stream at `origin` and reads its first event (the
/// endpoint's): the stream, its parser and that event.
async fn open_sse(origin: &str) -> (reqwest::Response, SseParser, SseEvent) {
    let mut stream = within("the event stream", reqwest::get(format!("{origin}/sse")))
        .await
        .expect("the stream opens");
    let mut parser = SseParser::new(1 << 20);
    let first = within("the endpoint event", async {
        loop {
            let chunk = stream.chunk().await.expect("the stream reads");
            let chunk = chunk.expect("the stream stays open");
            let events = parser.push(&chunk).expect("events within the cap");
            if let Some(e) = events.into_iter().next() {
                return e;
            }
        }
    })
    .await;
    (stream, parser, first)
}

/// Runs `input` on every byte transport and hands each reply to `check`.
async fn on_every_wire(inputs: &[&[u8]], check: impl Fn(&str, &[u8], Reply)) {
    let (server, _controls, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in Wire::all(&server).await {
        for input in inputs {
            probe += 1;
            let reply = wire.send(input, probe).await;
            check(name, input, reply);
        }
    }
}

/// The check of an input the session ignores: accepted (202 on HTTP, nothing on stdio)
/// and never answered.
fn ignored(name: &str, _: &[u8], reply: Reply) {
    assert_eq!(reply.status, (name != "stdio").then_some(202), "{name}");
    reply.assert_silent(name);
}

/// The status a rejected POST gets on each wire (none on stdio).
fn rejected(name: &str) -> Option<u16> {
    (name != "stdio").then_some(400)
}

request_method!(Ask = "test/ask");
request_method!(AskRoots = "test/ask-roots");

/// A server whose `test/ask` asks the client to fill in a form and answers with what
/// came of it: `{"accepted": …}`, or `{"invalid_response": …, "error": …}` when the
/// elicitation failed; `test/ask-roots` the same with `roots/list`.
fn asking_server() -> Server {
    Server::builder("asking", "1.0.0")
        .request_handler::<AskRoots, _, _>(|_, cx: Context| async move {
            Ok(match cx.list_roots().await {
                Ok(roots) => json!({"roots": roots.len()}),
                Err(e) => json!({
                    "invalid_response": e.session_error().is_some_and(|s| s.is_invalid_response()),
                    "error": e.to_string(),
                }),
            })
        })
        .request_handler::<Ask, _, _>(|_, cx: Context| async move {
            let form = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let schema = serde_json::from_value(form).expect("a form schema");
            Ok(match cx.elicit_form_schema("Your name?", schema).await {
                Ok(elicited) => json!({"accepted": elicited.is_accepted()}),
                Err(e) => json!({
                    "invalid_response": e.session_error().is_some_and(|s| s.is_invalid_response()),
                    "error": e.to_string(),
                }),
            })
        })
        .build()
}

/// The initialize request of a raw client that declares form elicitation.
fn initialize_eliciting() -> Value {
    json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    })
}

/// An answer to the server's request `id` that cannot be read: its error object has no
/// `message`.
fn unreadable_answer(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000}})
}

/// A well-formed answer to the server's elicitation `id`.
fn declined(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "decline"}})
}

/// The messages a call's SSE stream carries, read until one of them is `done`.
async fn messages_until(
    stream: &mut reqwest::Response,
    done: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let events = http_support::read_events_until(stream, |events| {
        events.iter().filter_map(|e| e.json()).any(|m| done(&m))
    })
    .await;
    events.iter().filter_map(|e| e.json()).collect()
}

/// The answer to the call `id`, read from its SSE stream.
async fn answer_to(stream: &mut reqwest::Response, id: i64) -> Value {
    messages_until(stream, |m| m["id"] == json!(id))
        .await
        .into_iter()
        .find(|m| m["id"] == json!(id))
        .expect("the call's answer")
}

/// Where a POST goes on an HTTP wire: the URL and the session's headers.
fn post_target(wire: &Wire) -> (String, Vec<(String, String)>) {
    match wire {
        Wire::Http { raw, session, .. } => (
            raw.url.clone(),
            vec![
                ("mcp-session-id".to_owned(), session.clone()),
                ("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()),
            ],
        ),
        Wire::Sse { url, .. } => (url.clone(), Vec::new()),
        Wire::Stdio { .. } => panic!("stdio has no POSTs"),
    }
}

/// The two HTTP endpoints in front of a [`fault_server`], both served by their own
/// accept loops (`serve`: the header timeout applies), with short timeouts: the
/// streamable HTTP URL and the legacy SSE origin.
async fn slow_peer_endpoints(timeout: std::time::Duration) -> (String, String) {
    let (server, _, _) = fault_server();
    let (listener, http) = loopback("/mcp").await;
    let config = StreamableHttpServerConfig::default()
        .header_read_timeout(timeout)
        .body_timeout(timeout);
    let served = server.clone();
    let service = modelctx::http::StreamableHttpService::with_config(config, move |t| {
        served.serve(t);
    });
    tokio::spawn(service.serve(listener, std::future::pending()));

    let (listener, sse) = loopback("").await;
    let config = modelctx::sse::SseServerConfig::default()
        .header_read_timeout(timeout)
        .body_timeout(timeout);
    let service = modelctx::sse::SseService::with_config(config, move |t| {
        server.serve(t);
    });
    tokio::spawn(service.serve(listener, std::future::pending()));
    (http, sse)
}

/// Writes `head` and then `trickle` one byte per tick (10 ms) on a fresh connection to
/// `authority`, reading meanwhile; returns what the server sent before it closed the
/// connection. Panics when the server has not closed it within the bound.
async fn trickle(authority: &str, head: &[u8], trickle: &[u8]) -> String {
    let socket = tokio::net::TcpStream::connect(authority)
        .await
        .expect("the server accepts");
    let (mut read, mut write) = socket.into_split();
    write.write_all(head).await.expect("the head goes out");
    let trickle = trickle.to_vec();
    let writer = tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(10));
        for byte in trickle.iter().cycle() {
            tick.tick().await;
            if write.write_all(&[*byte]).await.is_err() {
                break;
            }
        }
    });
    let mut answer = Vec::new();
    within("the server to close the connection", async {
        use tokio::io::AsyncReadExt;
        // A reset after the answer also ends it (the trickle was still writing).
        let _ = read.read_to_end(&mut answer).await;
    })
    .await;
    writer.abort();
    String::from_utf8_lossy(&answer).into_owned()
}

/// A TCP proxy in front of `upstream` that, once `chaos` is on, cuts about half of the
/// connections it accepts after a pseudo-random number of bytes from the server (a fixed
/// seed: the same draws every run). Returns its URL for `path` and the number of
/// connections it has cut so far.
async fn dropping_proxy(
    upstream: std::net::SocketAddr,
    path: &str,
    chaos: Arc<std::sync::atomic::AtomicBool>,
) -> (String, Arc<AtomicUsize>) {
    let (listener, url) = loopback(path).await;
    let cuts = Arc::new(AtomicUsize::new(0));
    let counted = cuts.clone();
    tokio::spawn(async move {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            // xorshift64: a deterministic sequence of draws.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let budget = (chaos.load(Ordering::SeqCst) && seed.is_multiple_of(2))
                .then_some((seed >> 8) % 900);
            let counted = counted.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let up = tokio::io::copy(&mut client_read, &mut server_write);
                let down = async {
                    match budget {
                        None => {
                            let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                        }
                        Some(budget) => {
                            let mut limited =
                                tokio::io::AsyncReadExt::take(&mut server_read, budget);
                            let _ = tokio::io::copy(&mut limited, &mut client_write).await;
                            counted.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                };
                // Either direction ending ends the connection: both sockets drop.
                tokio::select! {
                    _ = up => {}
                    () = down => {}
                }
            });
        }
    });
    (url, cuts)
}

/// The variables of the template `m://{a}{b}{c}/x`.
#[derive(serde::Deserialize, modelctx::server::schemars::JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Abc {
    a: String,
    b: String,
    c: String,
}

on_every_transport!(case_15_huge_arrays_and_pathological_templates, huge_inputs);

/// Case 15: a tool argument of 20,000 items is validated against the tool's
/// `inputSchema`: all valid, the tool runs; all invalid, the caller gets an `isError`
/// result whose text stays short (not one line per bad item; it was 4.7 MB). A URI
/// against a template of adjacent expressions that can never match (the matcher's worst
/// case) is answered "not found". No timing is asserted: the bounded waits catch a
/// hang, and the matcher's bounds are pinned by `modelctx-server`'s `uri_template`
/// tests. The URI is just under the matcher's cap (`MAX_MATCHED_URI`, 16 KiB): the
/// matcher is linear now; it was quadratic per adjacent expression, and the test had to
/// stay at 1 KiB (8 KiB against three took over 5 s in a debug build; SECURITY.md, note c).
async fn huge_inputs(connector: Connector) {
    let Value::Object(schema) = json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
        "required": ["items"]
    }) else {
        unreachable!("an object literal")
    };
    let count = ToolDef::with_schema(
        Tool::new("count", schema),
        |args: JsonObject, _: Context| async move {
            let n = args["items"].as_array().map_or(0, Vec::len);
            Ok::<_, String>(CallToolResult::text(n.to_string()))
        },
    );
    let template = modelctx::server::TemplateDef::new(
        "m://{a}{b}{c}/x",
        "abc",
        |v: Abc, _: Context| async move { Ok::<_, String>(format!("{}{}{}", v.a, v.b, v.c)) },
    );
    let server = Server::builder("large", "1.0.0")
        .tool(count)
        .expect("a valid tool")
        .resource_template(template)
        .expect("a valid template")
        .build();
    let pair = connect(&connector, &server, client()).await;
    let cell = connector.cell();
    let call = |items: Vec<Value>| {
        let mut arguments = JsonObject::new();
        arguments.insert("items".to_owned(), Value::Array(items));
        let params = CallToolRequestParams::new("count").with_arguments(arguments);
        pair.client.request::<CallToolRequest>(params)
    };

    let valid = (0..20_000).map(|i| json!(i)).collect();
    let result = within("the valid call", call(valid))
        .await
        .expect("answered");
    assert_ne!(result.is_error, Some(true), "{cell}: {result:?}");
    assert_eq!(text_of(&result), "20000", "{cell}");

    let invalid = (0..20_000).map(|i| json!(i.to_string())).collect();
    let result = within("the invalid call", call(invalid))
        .await
        .expect("answered");
    assert_eq!(
        result.is_error,
        Some(true),
        "{cell}: the function never ran"
    );
    let text = text_of(&result);
    assert!(
        text.len() < 16 * 1024,
        "{cell}: an actionable message, not one per item ({} bytes)",
        text.len()
    );

    let near_the_cap = modelctx::server::MAX_MATCHED_URI - 8;
    let uri = format!("m://{}/y", "a".repeat(near_the_cap));
    let read = within("the read", pair.client.read_resource(uri)).await;
    let err = read.expect_err("no template matches");
    assert!(err.protocol_error().is_some(), "{cell}: {err:?}");
}

mod bad_bytes;
mod crossing_ids;
mod dropped_connections;
mod slow_and_large;
