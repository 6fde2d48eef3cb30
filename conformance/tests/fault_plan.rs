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
    CallToolRequest, CallToolRequestParams, CallToolResult, ErrorCode, JsonObject, RequestMethod,
    Tool,
};
use modelctx_conformance::{Cell, Connector, SpecVersion, TransportKind, within};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Barrier, Notify, mpsc};

use modelctx_conformance::http_support::{self, Raw, host, send};
use modelctx_conformance::support::{client, connect, payload};
use modelctx_test::text_of;

/// Declares a test-only request method taking and returning any JSON value.
macro_rules! test_method {
    ($name:ident = $method:literal) => {
        #[doc = concat!("The test-only request `", $method, "`.")]
        struct $name;
        impl RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = Value;
            type Result = Value;
        }
    };
}

test_method!(Echo = "test/echo");
test_method!(Explode = "test/explode");
test_method!(Wait = "test/wait");
test_method!(Rendezvous = "test/rendezvous");

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

// ---------------------------------------------------------------------------------------
// Role level: every transport of the matrix.

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

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn in_memory() {
                run(TransportKind::InMemory, SpecVersion::V2025_11_25).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stdio() {
                run(TransportKind::Stdio, SpecVersion::V2025_11_25).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn streamable_http() {
                run(TransportKind::StreamableHttp, SpecVersion::V2025_11_25).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn streamable_http_stateless() {
                run(
                    TransportKind::StreamableHttpStateless,
                    SpecVersion::V2025_11_25,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn streamable_http_2026_07_28() {
                run(TransportKind::StreamableHttp, SpecVersion::V2026_07_28).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn legacy_sse() {
                run(TransportKind::Sse, SpecVersion::V2025_11_25).await;
            }
        }
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

// ---------------------------------------------------------------------------------------
// Case 17: ids of different clients never cross.

/// Case 17 on session-less streamable HTTP (the shared transport): two clients post a
/// request with the same id 0 at the same time; both are in their handlers together
/// (the rendezvous answers only then), and each POST gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_17_two_clients_using_id_0_on_stateless_http_never_cross() {
    let (server, _controls, _) = fault_server();
    let hosted = host(server, StreamableHttpServerConfig::default().sessionless()).await;
    let post = |who: &str| {
        let raw = Raw::new(&hosted.url);
        let body =
            json!({"jsonrpc": "2.0", "id": 0, "method": "test/rendezvous", "params": {"who": who}});
        async move { send(raw.post_as(None, Some("2025-11-25"), &body)).await }
    };
    let (a, b) = within("both answers", async { tokio::join!(post("a"), post("b")) }).await;
    for (who, r) in [("a", a), ("b", b)] {
        assert_eq!(r.status, 200, "{r:?}");
        let messages = r.messages();
        assert_eq!(messages.len(), 1, "one answer per POST: {r:?}");
        assert_eq!(messages[0]["id"], json!(0), "{r:?}");
        assert_eq!(messages[0]["result"]["who"], json!(who), "{r:?}");
    }
}

/// Case 17 on one session of each byte transport: a second request reusing the id of
/// one still in flight is refused with -32600 and never overwrites it; the first one
/// still gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_17_duplicate_in_flight_id_is_refused_on_stdio() {
    let (server, controls, mut started) = fault_server();
    let mut wire = Wire::stdio(&server).await;
    wire.write_line(br#"{"jsonrpc":"2.0","id":7,"method":"test/wait","params":{"first":true}}"#)
        .await;
    within("the first handler to start", started.recv()).await;
    wire.write_line(br#"{"jsonrpc":"2.0","id":7,"method":"test/echo","params":{"second":true}}"#)
        .await;
    let refusal = wire.next_message().await;
    assert_eq!(refusal["id"], json!(7), "{refusal}");
    assert_eq!(refusal["error"]["code"], json!(-32600), "{refusal}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the duplicate never ran"
    );
    controls.release.notify_one();
    let answer = wire.next_message().await;
    assert_eq!(answer["id"], json!(7), "{answer}");
    assert_eq!(answer["result"]["first"], json!(true), "{answer}");
}

// ---------------------------------------------------------------------------------------
// Wire level: bad bytes on stdio, streamable HTTP and legacy SSE.

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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let origin = format!("http://{}", listener.local_addr().expect("local addr"));
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

/// Case 1: a line that is not JSON (a stray log line) on stdio is skipped without an
/// answer and reading goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_01_non_json_line_on_stdio_is_skipped() {
    let (server, _, _) = fault_server();
    let mut wire = Wire::stdio(&server).await;
    for (i, line) in [&b"INFO starting up"[..], b"{not json", b"   ]"]
        .into_iter()
        .enumerate()
    {
        let reply = wire.send(line, i as u32).await;
        reply.assert_silent("stdio");
    }
}

/// Case 2: a POST body that is not JSON draws 400 and a -32700 with id null, on
/// streamable HTTP and legacy SSE alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_02_non_json_post_is_400_parse_error_with_id_null() {
    let (server, _, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in [
        ("streamable-http", Wire::http(&server).await),
        ("legacy-sse", Wire::sse(&server).await),
    ] {
        for body in [&b"INFO starting up"[..], b"{not json"] {
            probe += 1;
            let reply = wire.send(body, probe).await;
            assert_eq!(reply.status, Some(400), "{name}: {reply:?}");
            reply.assert_error(name, -32700, Value::Null);
        }
    }
}

/// Case 5: 10,000 levels of nesting (arrays, objects) never overflow the stack (the test
/// process would abort): the envelope is read without building the params, and
/// decoding them stops at serde_json's recursion limit (128), so the request is refused
/// for its id and its handler never runs; the session goes on.
///
/// SECURITY.md's table says "parse error"; the answer is -32602 (Invalid params: the
/// input is valid JSON and its envelope a valid request; its params are what cannot be
/// read), with the recursion limit named in the message. SECURITY.md records the reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_05_deep_nesting_stops_at_the_recursion_limit() {
    let depth = 10_000;
    let mut arrays = br#"{"jsonrpc":"2.0","id":5,"method":"test/echo","params":{"deep":"#.to_vec();
    arrays.extend(std::iter::repeat_n(b'[', depth));
    arrays.extend(std::iter::repeat_n(b']', depth));
    arrays.extend(b"}}");
    let mut objects = br#"{"jsonrpc":"2.0","id":5,"method":"test/echo","params":"#.to_vec();
    for _ in 0..depth {
        objects.extend(br#"{"a":"#);
    }
    objects.extend(b"1");
    objects.extend(std::iter::repeat_n(b'}', depth + 1));
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in Wire::all(&server).await {
        for input in [&arrays, &objects] {
            probe += 1;
            let reply = wire.send(input, probe).await;
            let ok = match name {
                "stdio" => None,
                "legacy-sse" => Some(202),
                _ => Some(200),
            };
            assert_eq!(reply.status, ok, "{name}: {reply:?}");
            reply.assert_error(name, -32602, json!(5));
            let message = reply.messages[0]["error"]["message"].to_string();
            assert!(message.contains("recursion limit"), "{name}: {message}");
        }
    }
    assert_eq!(controls.echoes.load(Ordering::SeqCst), 0, "no handler ran");
}

/// Case 6: JSON that is not a JSON-RPC message (not an object, the wrong `jsonrpc`, no
/// `method`/`result`/`error`) is answered -32600, with the id when it can be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_06_json_that_is_not_a_message_is_invalid_request() {
    let inputs: [(&[u8], Value); 6] = [
        (br#""text""#, Value::Null),
        (b"42", Value::Null),
        (b"null", Value::Null),
        (br#"{"jsonrpc":"1.0","id":6,"method":"ping"}"#, json!(6)),
        (br#"{"id":6,"method":"ping"}"#, json!(6)),
        (br#"{"jsonrpc":"2.0","id":6}"#, json!(6)),
    ];
    let bodies: Vec<&[u8]> = inputs.iter().map(|(b, _)| *b).collect();
    on_every_wire(&bodies, |name, input, reply| {
        let id = &inputs
            .iter()
            .find(|(b, _)| *b == input)
            .expect("an input")
            .1;
        assert_eq!(reply.status, rejected(name), "{name}: {reply:?}");
        let answer = reply.messages.first().cloned().unwrap_or_default();
        assert_eq!(reply.messages.len(), 1, "{name}: {reply:?}");
        assert_eq!(answer["error"]["code"], json!(-32600), "{name}: {reply:?}");
        assert!(
            answer["id"] == *id || answer["id"].is_null(),
            "{name}: the id or null: {reply:?}"
        );
    })
    .await;
}

/// Case 7: an id that is null, a float, a boolean or an object is -32600 (id null:
/// such an id cannot be echoed), and the request never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_07_bad_ids_are_invalid_request() {
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in Wire::all(&server).await {
        for id in ["null", "1.5", "true", r#"{"a":1}"#, "[1]"] {
            probe += 1;
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"test/echo","params":{{}}}}"#);
            let reply = wire.send(body.as_bytes(), probe).await;
            assert_eq!(reply.status, rejected(name), "{name} id {id}: {reply:?}");
            reply.assert_error(name, -32600, Value::Null);
        }
    }
    assert_eq!(controls.echoes.load(Ordering::SeqCst), 0, "no request ran");
}

/// Case 8: a batch (an array, `[]` included) on a 2025-11-25 session is refused whole
/// and nothing in it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_08_batches_are_refused_whole() {
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    let batch = br#"[{"jsonrpc":"2.0","id":"b1","method":"test/echo","params":{}},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    for (name, mut wire) in Wire::all(&server).await {
        for input in [&b"[]"[..], batch] {
            probe += 1;
            let reply = wire.send(input, probe).await;
            assert_eq!(reply.status, rejected(name), "{name}: {reply:?}");
            assert!(
                reply.messages.iter().all(|m| m["id"] != json!("b1")),
                "{name}: nothing in the batch is answered: {reply:?}"
            );
            if name != "legacy-sse" {
                reply.assert_error(name, -32600, Value::Null);
            }
        }
    }
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "nothing in a batch ran"
    );
}

/// Case 9: an unknown method is -32601 with its id; an unknown notification is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_09_unknown_method_is_method_not_found_unknown_notification_ignored() {
    let request: &[u8] = br#"{"jsonrpc":"2.0","id":9,"method":"no/such-method","params":{}}"#;
    let notification: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/no-such"}"#;
    on_every_wire(&[request, notification], |name, input, reply| {
        if input == request {
            let ok = if name == "legacy-sse" { 202 } else { 200 };
            assert_eq!(reply.status, (name != "stdio").then_some(ok), "{name}");
            reply.assert_error(name, -32601, json!(9));
        } else {
            let ok = (name != "stdio").then_some(202);
            assert_eq!(reply.status, ok, "{name}: {reply:?}");
            reply.assert_silent(name);
        }
    })
    .await;
}

/// Case 12: duplicate keys in the envelope are refused (-32600); a key that differs in
/// case or by a NUL suffix is an unknown member, never an alias of the real one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_12_duplicate_and_look_alike_keys_never_alias() {
    let duplicates: [&[u8]; 3] = [
        br#"{"jsonrpc":"2.0","id":12,"method":"test/echo","method":"ping","params":{}}"#,
        br#"{"jsonrpc":"2.0","id":12,"id":13,"method":"ping"}"#,
        br#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":12,"method":"ping"}"#,
    ];
    let look_alikes: [&[u8]; 3] = [
        br#"{"jsonrpc":"2.0","id":12,"Method":"test/echo","method":"ping"}"#,
        br#"{"jsonrpc":"2.0","id":12,"method\u0000":"test/echo","method":"ping"}"#,
        br#"{"jsonrpc":"2.0","ID":99,"id":12,"METHOD":"test/echo","method":"ping"}"#,
    ];
    let no_method: &[u8] = br#"{"jsonrpc":"2.0","id":12,"Method":"ping"}"#;
    let mut inputs: Vec<&[u8]> = duplicates.to_vec();
    inputs.extend(look_alikes);
    inputs.push(no_method);
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in Wire::all(&server).await {
        for input in &inputs {
            probe += 1;
            let reply = wire.send(input, probe).await;
            let text = String::from_utf8_lossy(input);
            if look_alikes.contains(input) {
                // Answered as the ping the exact key names.
                let ok = match name {
                    "stdio" => None,
                    "legacy-sse" => Some(202),
                    _ => Some(200),
                };
                assert_eq!(reply.status, ok, "{name} {text}: {reply:?}");
                assert_eq!(reply.messages.len(), 1, "{name} {text}: {reply:?}");
                assert_eq!(
                    reply.messages[0]["id"],
                    json!(12),
                    "{name} {text}: {reply:?}"
                );
                assert_eq!(
                    reply.messages[0]["result"],
                    json!({}),
                    "{name} {text}: {reply:?}"
                );
            } else {
                assert_eq!(reply.status, rejected(name), "{name} {text}: {reply:?}");
                assert_eq!(reply.messages.len(), 1, "{name} {text}: {reply:?}");
                let answer = &reply.messages[0];
                assert_eq!(
                    answer["error"]["code"],
                    json!(-32600),
                    "{name} {text}: {reply:?}"
                );
            }
        }
    }
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "no alias ever ran"
    );
}

/// Case 13: bytes that are not UTF-8: skipped like any unparseable line on stdio (the
/// session goes on), -32700 with id null and 400 on the HTTP transports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_13_invalid_utf8_is_a_parse_error_or_a_skipped_line() {
    let in_a_string: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"test/echo\",\"params\":{\"s\":\"\xff\xfe\"}}";
    let in_an_unknown_member: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\",\"x\":\"\xc3\x28\"}";
    let bare: &[u8] = b"\xff\xfe\xfd";
    on_every_wire(
        &[in_a_string, in_an_unknown_member, bare],
        |name, _, reply| {
            assert_eq!(reply.status, rejected(name), "{name}: {reply:?}");
            if name == "stdio" {
                reply.assert_silent(name);
            } else {
                reply.assert_error(name, -32700, Value::Null);
            }
        },
    )
    .await;
}

/// Case 16: a response for an id the server never used (a result, an error, twice) is
/// ignored: no answer, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_responses_for_unknown_ids_are_ignored() {
    let result: &[u8] = br#"{"jsonrpc":"2.0","id":916,"result":{}}"#;
    let error: &[u8] = br#"{"jsonrpc":"2.0","id":917,"error":{"code":-32603,"message":"x"}}"#;
    // A posted response is accepted (202) and goes nowhere.
    on_every_wire(&[result, result, error], ignored).await;
}

/// Case 16, a response that cannot be read (found by the property tests): an error
/// object without `message` or with a `code` that is not an integer, both `result` and
/// `error`, for an id the server never used. (An id with none of `method`, `result` and
/// `error` is no response: case 6 answers it.) It was answered with
/// `-32600`; a response is never answered, and the session goes on. (A response that
/// answers one of the server's own calls fails that call at once: `modelctx-session`
/// `tests/integration/runtime/`, `modelctx-stdio` `tests/session.rs`, and the two tests below for
/// streamable HTTP and legacy SSE, which refuse such a POST with 400 and hand it to the
/// session.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_a_response_that_cannot_be_read_is_never_answered() {
    let (server, _, _) = fault_server();
    let mut wire = Wire::stdio(&server).await;
    for (i, line) in [
        &br#"{"jsonrpc":"2.0","id":916,"error":{"code":-32000}}"#[..],
        br#"{"jsonrpc":"2.0","id":917,"error":{"code":"x","message":"m"}}"#,
        br#"{"jsonrpc":"2.0","id":918,"result":{},"error":{"code":1,"message":"m"}}"#,
        br#"{"jsonrpc":"2.0","error":{"message":"no code"}}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let reply = wire.send(line, i as u32).await;
        reply.assert_silent("stdio");
    }
}

test_method!(Ask = "test/ask");
test_method!(AskRoots = "test/ask-roots");

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

/// Case 16 (note i) on streamable HTTP, 2025-11-25: a handler's elicitation waits for the
/// client's answer; the client POSTs one that cannot be read. The POST is refused with
/// 400 (`-32600`, no id) and the elicitation fails at once as an invalid response (it
/// used to wait for its 60 s timeout), so the call that asked returns; a second call's
/// elicitation, pending meanwhile, is untouched and answered normally afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_an_unreadable_answer_fails_the_servers_call_on_streamable_http() {
    let hosted = host(asking_server(), StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    let session = raw.init_with(&initialize_eliciting(), "2025-11-25").await;

    // Two calls, each waiting for its elicitation's answer on its own POST's stream.
    let mut calls = Vec::new();
    for id in [1, 2] {
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": "test/ask", "params": {}});
        let mut stream = within("the call's POST", raw.post(Some(&session), &ask).send())
            .await
            .expect("the server answers");
        assert_eq!(stream.status(), 200);
        let elicit = messages_until(&mut stream, |m| m.get("method").is_some())
            .await
            .into_iter()
            .find(|m| m["method"] == json!("elicitation/create"))
            .expect("the elicitation on the call's stream");
        calls.push((stream, elicit["id"].clone()));
    }
    let (mut second, second_elicit) = calls.pop().expect("two calls");
    let (mut first, first_elicit) = calls.pop().expect("two calls");

    let refused = send(raw.post(Some(&session), &unreadable_answer(&first_elicit))).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    let body = refused.json();
    assert_eq!(body["error"]["code"], json!(-32600), "{body}");
    assert!(body.get("id").is_none_or(Value::is_null), "no id: {body}");
    let answer = answer_to(&mut first, 1).await;
    assert_eq!(
        answer["result"]["invalid_response"],
        json!(true),
        "{answer}"
    );

    // The other elicitation still waits for its own answer, and takes it.
    let accepted = send(raw.post(Some(&session), &declined(&second_elicit))).await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let answer = answer_to(&mut second, 2).await;
    assert_eq!(answer["result"]["accepted"], json!(false), "{answer}");
}

/// Case 16 (note i) in a batch, protocol 2025-03-26 (the one revision with batches):
/// a handler's `roots/list` waits; the client answers it inside a batch with a response
/// that cannot be read. The batch is refused whole (400, `-32600`) and the call it
/// answers fails at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_an_unreadable_answer_in_a_batch_fails_the_servers_call() {
    let version = "2025-03-26";
    let hosted = host(asking_server(), StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    let initialize = json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    });
    let session = raw.init_with(&initialize, version).await;

    let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "test/ask-roots", "params": {}});
    let mut stream = within(
        "the call's POST",
        raw.post_as(Some(&session), Some(version), &ask).send(),
    )
    .await
    .expect("the server answers");
    let request = messages_until(&mut stream, |m| m.get("method").is_some())
        .await
        .into_iter()
        .find(|m| m["method"] == json!("roots/list"))
        .expect("roots/list on the call's stream");

    let batch = json!([unreadable_answer(&request["id"])]);
    let refused = send(raw.post_as(Some(&session), Some(version), &batch)).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    assert_eq!(
        refused.json()["error"]["code"],
        json!(-32600),
        "{refused:?}"
    );
    let answer = answer_to(&mut stream, 1).await;
    assert_eq!(
        answer["result"]["invalid_response"],
        json!(true),
        "{answer}"
    );
}

/// Case 16 (note i) on legacy HTTP+SSE: the same as on streamable HTTP, the answers on
/// the session's one event stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_an_unreadable_answer_fails_the_servers_call_on_legacy_sse() {
    let config = modelctx::sse::SseServerConfig::default();
    let origin = serve_sse(&asking_server(), config).await;
    let (stream, parser, endpoint) = open_sse(&origin).await;
    let mut wire = Wire::Sse {
        stream,
        parser,
        url: format!("{origin}{}", endpoint.data),
    };
    let post = |body: Value| body.to_string().into_bytes();
    assert_eq!(wire.post_sse(post(initialize_eliciting())).await.0, 202);
    assert_eq!(wire.next_message().await["id"], json!("init"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(wire.post_sse(post(initialized)).await.0, 202);

    let mut elicitations = Vec::new();
    for id in [1, 2] {
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": "test/ask", "params": {}});
        assert_eq!(wire.post_sse(post(ask)).await.0, 202);
        let elicit = wire.next_message().await;
        assert_eq!(elicit["method"], json!("elicitation/create"), "{elicit}");
        elicitations.push(elicit["id"].clone());
    }

    let (status, body) = wire
        .post_sse(post(unreadable_answer(&elicitations[0])))
        .await;
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(&body).expect("a JSON-RPC error body");
    assert_eq!(body["error"]["code"], json!(-32600), "{body}");
    assert!(body.get("id").is_none_or(Value::is_null), "no id: {body}");
    let answer = wire.next_message().await;
    assert_eq!(
        answer["id"],
        json!(1),
        "the first call ends first: {answer}"
    );
    assert_eq!(
        answer["result"]["invalid_response"],
        json!(true),
        "{answer}"
    );

    assert_eq!(wire.post_sse(post(declined(&elicitations[1]))).await.0, 202);
    let answer = wire.next_message().await;
    assert_eq!(answer["id"], json!(2), "{answer}");
    assert_eq!(answer["result"]["accepted"], json!(false), "{answer}");
}

/// Case 26: a cancellation naming an id that is unknown, already answered, or the
/// `initialize` request is ignored: no answer, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_26_cancelling_unknown_finished_or_initialize_ids_is_ignored() {
    let unknown: &[u8] =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":926}}"#;
    let finished: &[u8] =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"probe-1"}}"#;
    let initialize: &[u8] =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"init"}}"#;
    on_every_wire(&[unknown, finished, initialize], ignored).await;
}

/// Case 4: an oversized message. Streamable HTTP and legacy SSE answer 413 before
/// parsing (default cap 4 MiB) and the session goes on; on stdio a line over the cap is
/// an error that ends the session: the server closes its side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_04_oversized_body_is_413_and_an_oversized_line_ends_stdio() {
    let (server, controls, _) = fault_server();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"test/echo","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let mut probe = 0;
    for (name, mut wire) in [
        ("streamable-http", Wire::http(&server).await),
        ("legacy-sse", Wire::sse(&server).await),
    ] {
        let (url, headers) = post_target(&wire);
        let status = raw_post(&url, &headers, big.len(), big.clone().into_bytes(), false).await;
        assert!(status.starts_with("HTTP/1.1 413"), "{name}: {status}");
        // The session goes on, and the refused request was never answered.
        probe += 1;
        let reply = wire
            .send(br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#, probe)
            .await;
        assert!(
            reply.messages.iter().all(|m| m["id"] != json!(4)),
            "{name}: never answered as a request: {reply:?}"
        );
        assert_eq!(
            reply.messages.last().map(|m| &m["id"]),
            Some(&json!("after")),
            "{name}: {reply:?}"
        );
    }
    let options = modelctx::stdio::StdioOptions::new().max_line(64 * 1024);
    let mut wire = Wire::stdio_with(&server, options).await;
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"test/echo","params":{{"pad":"{}"}}}}"#,
        "x".repeat(128 * 1024)
    );
    let Wire::Stdio { write, lines } = &mut wire else {
        unreachable!("a stdio wire")
    };
    // The server may stop reading (and close its end) before the whole line is written:
    // a broken pipe here is the behaviour under test, not a failure.
    let written = within("the oversized line", async {
        write.write_all(line.as_bytes()).await?;
        write.write_all(b"\n").await?;
        write.flush().await
    })
    .await;
    assert!(
        written.is_ok()
            || written
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe),
        "{written:?}"
    );
    let end = within("the server to close its side", lines.next_line()).await;
    assert!(
        matches!(end, Ok(None)),
        "the session ends without answering: {end:?}"
    );
    assert_eq!(controls.echoes.load(Ordering::SeqCst), 0, "no handler ran");
}

/// POSTs `body` to `url` by hand, announced as `announced` bytes, with these extra
/// headers, and returns the status line. The body is written while the answer is read,
/// and a write the server cut short is no failure: a server refusing a body (413, 408)
/// answers before it has read it all, and may close the connection then. With
/// `hang_up`, the client shuts its sending side after the body (a peer that exits).
async fn raw_post(
    url: &str,
    headers: &[(String, String)],
    announced: usize,
    body: Vec<u8>,
    hang_up: bool,
) -> String {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {announced}\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let socket = tokio::net::TcpStream::connect(authority)
        .await
        .expect("the server accepts");
    let (read, mut write) = socket.into_split();
    let writing = async move {
        if write.write_all(head.as_bytes()).await.is_ok()
            && write.write_all(&body).await.is_ok()
            && hang_up
        {
            let _ = write.shutdown().await;
        }
        // Keep the connection open (a stalled body stays stalled) until the answer.
        write
    };
    let mut status = String::new();
    let mut reader = BufReader::new(read);
    let reading = reader.read_line(&mut status);
    let (_, read) = within("the server's answer", async {
        tokio::join!(writing, reading)
    })
    .await;
    read.expect("the status line reads");
    status
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

/// Case 24: a request body that stalls is cut off after the body timeout with 408, on
/// streamable HTTP and legacy SSE, and the session goes on. (Slow headers:
/// `modelctx-http` `tests/integration/limits.rs`; a stalled SSE reader: `server::session` tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_24_a_stalled_request_body_is_cut_off() {
    let timeout = std::time::Duration::from_millis(200);
    let (server, _, _) = fault_server();
    let config = StreamableHttpServerConfig::default().body_timeout(timeout);
    let hosted = host(server.clone(), config).await;
    let raw = Raw::new(&hosted.url);
    let session = raw.init().await;
    let headers = [
        ("mcp-session-id".to_owned(), session.clone()),
        ("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()),
    ];
    let status = raw_post(&hosted.url, &headers, 100, b"{\"jsonrpc\"".to_vec(), false).await;
    assert!(
        status.starts_with("HTTP/1.1 408"),
        "streamable-http: {status}"
    );
    let ping = json!({"jsonrpc": "2.0", "id": 24, "method": "ping"});
    let r = send(raw.post(Some(&session), &ping)).await;
    assert_eq!(r.status, 200, "the session goes on: {r:?}");

    let config = modelctx::sse::SseServerConfig::default().body_timeout(timeout);
    let mut wire = Wire::sse_with(&server, config).await;
    let (url, headers) = post_target(&wire);
    let status = raw_post(&url, &headers, 100, b"{\"jsonrpc\"".to_vec(), false).await;
    assert!(status.starts_with("HTTP/1.1 408"), "legacy-sse: {status}");
    let reply = wire
        .send(br#"{"jsonrpc":"2.0","id":24,"method":"ping"}"#, 24)
        .await;
    assert_eq!(reply.status, Some(202), "the session goes on: {reply:?}");
    assert_eq!(reply.messages[0]["id"], json!(24), "{reply:?}");
}

// Slow peers (case 24): a request head or body
// trickled byte by byte, and an event stream nobody reads, are dropped within bounded
// time and memory. The trickle is paced by an interval (one byte per tick, the peer's
// behaviour, not a synchronisation); every assertion waits on an event under `within`.

/// The two HTTP endpoints in front of a [`fault_server`], both served by their own
/// accept loops (`serve`: the header timeout applies), with short timeouts: the
/// streamable HTTP URL and the legacy SSE origin.
async fn slow_peer_endpoints(timeout: std::time::Duration) -> (String, String) {
    let (server, _, _) = fault_server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let http = format!("http://{}/mcp", listener.local_addr().expect("local addr"));
    let config = StreamableHttpServerConfig::default()
        .header_read_timeout(timeout)
        .body_timeout(timeout);
    let served = server.clone();
    let service = modelctx::http::StreamableHttpService::with_config(config, move |t| {
        served.serve(t);
    });
    tokio::spawn(service.serve(listener, std::future::pending()));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let sse = format!("http://{}", listener.local_addr().expect("local addr"));
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

/// Case 24, slow writers: a request head that stalls after a few lines, or comes one byte
/// per tick, is dropped after the header timeout (the connection closed, nothing
/// answered); a POST body trickled one byte per tick is answered 408 at the body
/// timeout, however long the trickle could go on. On streamable HTTP and legacy SSE.
/// Memory stays bounded: the head's and the body's caps hold whatever the pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_24_slow_heads_and_trickled_bodies_are_cut_off() {
    let (http, sse) = slow_peer_endpoints(std::time::Duration::from_millis(300)).await;
    // A live legacy session to post to (its stream read up to the endpoint event).
    let (_events, _, endpoint) = open_sse(&sse).await;
    let endpoint = endpoint.data;
    for (kind, origin, path) in [
        ("streamable-http", http.trim_end_matches("/mcp"), "/mcp"),
        ("legacy-sse", sse.as_str(), endpoint.as_str()),
    ] {
        let authority = origin.trim_start_matches("http://");
        let partial = format!("POST {path} HTTP/1.1\r\nhost: {authority}\r\n");
        // Stalled: part of the head, then nothing.
        let answer = trickle(authority, partial.as_bytes(), b"").await;
        assert!(
            answer.is_empty(),
            "{kind}: a stalled head is not answered: {answer}"
        );
        // Trickled: the head goes on one header byte per tick, never ending.
        let answer = trickle(authority, partial.as_bytes(), b"x-slow: aaaaaaaa\r\n").await;
        assert!(
            answer.is_empty(),
            "{kind}: a trickled head is not answered: {answer}"
        );
        // A trickled body: 408 at the body timeout.
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: 100000\r\n\r\n"
        );
        let answer = trickle(authority, head.as_bytes(), b" ").await;
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "{kind}: a trickled body draws 408: {answer}"
        );
    }
}

/// Case 24, slow reader on legacy SSE: a client that opens its event stream and then
/// reads nothing while its requests' answers pile up. The stream's queue is bounded
/// and a send that waits on it longer than the send timeout ends the session (there is
/// no `Last-Event-ID` on this transport to resume from), so later POSTs draw 404 and the
/// session's memory is released. (Streamable HTTP disconnects such a reader and keeps
/// the session for a resumption: `modelctx-http` `server::session` tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_24_an_event_stream_nobody_reads_ends_its_legacy_sse_session() {
    let (server, _, _) = fault_server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let config = modelctx::sse::SseServerConfig::default()
        .stream_queue(8, std::time::Duration::from_millis(300));
    let service = modelctx::sse::SseService::with_config(config, move |t| {
        server.serve(t);
    });
    tokio::spawn(service.clone().serve(listener, std::future::pending()));

    // The event stream on a raw socket with a small receive buffer, read up to the
    // endpoint event, then never again.
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small buffer");
    let mut stream = socket.connect(addr).await.expect("the server accepts");
    stream
        .write_all(
            format!("GET /sse HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("the GET goes out");
    let mut reader = BufReader::new(stream);
    let endpoint = within("the endpoint event", async {
        let mut line = String::new();
        loop {
            line.clear();
            reader.read_line(&mut line).await.expect("the stream reads");
            if let Some(path) = line.trim().strip_prefix("data:") {
                return path.trim().to_owned();
            }
        }
    })
    .await;
    let url = format!("http://{addr}{endpoint}");
    let client = reqwest::Client::new();
    let post = |body: String| {
        client
            .post(url.as_str())
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let init = post(String::from_utf8(INITIALIZE.to_vec()).expect("UTF-8"));
    assert_eq!(within("initialize", init).await.expect("202").status(), 202);
    let initialized = post(String::from_utf8(INITIALIZED.to_vec()).expect("UTF-8"));
    assert_eq!(
        within("initialized", initialized)
            .await
            .expect("202")
            .status(),
        202
    );
    assert_eq!(service.session_count(), 1);

    // Requests whose answers (16 KiB each) fill the queue and the socket buffers.
    let pad = "x".repeat(16 * 1024);
    let ended = within("the session to end", async {
        for id in 1..=20_000 {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"test/echo","params":{{"pad":"{pad}"}}}}"#
            );
            let status = post(body).await.expect("the server answers").status();
            match status.as_u16() {
                202 => {}
                404 => return id,
                other => panic!("a POST drew {other}"),
            }
        }
        panic!("the session still took requests after 20,000 unread answers")
    })
    .await;
    assert!(ended > 1, "the session served requests first");
    assert_eq!(service.session_count(), 0, "the session is forgotten");
    drop(reader);
}

/// Case 17 on a streamable HTTP session and a legacy SSE session: as on stdio, a second
/// request reusing an id in flight is refused (streamable HTTP: 400 with -32600 from the
/// transport; legacy SSE: -32600 for that id on the stream) and the first one keeps its
/// answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_17_duplicate_in_flight_id_is_refused_on_http_and_sse() {
    let first = br#"{"jsonrpc":"2.0","id":7,"method":"test/wait","params":{"first":true}}"#;
    let second = br#"{"jsonrpc":"2.0","id":7,"method":"test/echo","params":{"second":true}}"#;

    let (server, controls, mut started) = fault_server();
    let Wire::Http { raw, session, .. } = Wire::http(&server).await else {
        unreachable!("a streamable HTTP wire")
    };
    let post = |body: &[u8]| {
        let body: Value = serde_json::from_slice(body).expect("JSON");
        send(raw.post(Some(&session), &body))
    };
    let waiting = post(first);
    let duplicate = async {
        within("the first handler to start", started.recv()).await;
        let r = post(second).await;
        controls.release.notify_one();
        r
    };
    let (answer, refusal) = within("both POSTs", async { tokio::join!(waiting, duplicate) }).await;
    // The transport refuses it before the session sees it: 400 with -32600.
    assert_eq!(refusal.status, 400, "{refusal:?}");
    let messages = refusal.messages();
    assert_eq!(messages.len(), 1, "{refusal:?}");
    assert_eq!(messages[0]["error"]["code"], json!(-32600), "{refusal:?}");
    let messages = answer.messages();
    assert_eq!(messages.len(), 1, "{answer:?}");
    assert_eq!(messages[0]["result"]["first"], json!(true), "{answer:?}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the duplicate never ran"
    );

    let (server, controls, mut started) = fault_server();
    let mut wire = Wire::sse(&server).await;
    assert_eq!(wire.post_sse(first.to_vec()).await.0, 202);
    within("the first handler to start", started.recv()).await;
    assert_eq!(wire.post_sse(second.to_vec()).await.0, 202);
    let refusal = wire.next_message().await;
    assert_eq!(refusal["id"], json!(7), "{refusal}");
    assert_eq!(refusal["error"]["code"], json!(-32600), "{refusal}");
    controls.release.notify_one();
    let answer = wire.next_message().await;
    assert_eq!(answer["result"]["first"], json!(true), "{answer}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the duplicate never ran"
    );
}

// ---------------------------------------------------------------------------------------
// An HTTP client facing a server that drops connections mid-stream at random.

/// A TCP proxy in front of `upstream` that, once `chaos` is on, cuts about half of the
/// connections it accepts after a pseudo-random number of bytes from the server (a fixed
/// seed: the same draws every run). Returns its URL for `path` and the number of
/// connections it has cut so far.
async fn dropping_proxy(
    upstream: std::net::SocketAddr,
    path: &str,
    chaos: Arc<std::sync::atomic::AtomicBool>,
) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!(
        "http://{}{path}",
        listener.local_addr().expect("local addr")
    );
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

/// The dropping server: streamable HTTP calls whose streams the connection
/// drops at random points. Every call ends within its timeout, either with its own
/// answer (the client resumed the stream with `Last-Event-ID`) or with a clear error;
/// none hangs, none gets another call's answer, and no call runs twice on the server
/// (a call is never silently re-sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_mid_stream_end_every_call_once() {
    struct Chatty;
    impl RequestMethod for Chatty {
        const METHOD: &'static str = "test/chatty";
        type Params = Value;
        type Result = Value;
    }
    let runs: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>> = Arc::default();
    let counted = runs.clone();
    let server = Server::builder("chatty", "1.0.0")
        .request_handler::<Chatty, _, _>(move |params: Value, cx: Context| {
            let key = params["call"].to_string();
            *counted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(key)
                .or_default() += 1;
            async move {
                // Related messages on the request's stream, for the cuts to land among.
                for i in 0..3 {
                    let note = json!({"i": i, "pad": "n".repeat(60)});
                    let _ = cx.notify::<http_support::Note>(note).await;
                }
                Ok(params)
            }
        })
        .build();
    let config =
        StreamableHttpServerConfig::default().retry_interval(std::time::Duration::from_millis(5));
    let hosted = host(server, config).await;
    let upstream = hosted
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a socket address");
    let chaos = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (url, cuts) = dropping_proxy(upstream, "/mcp", chaos.clone()).await;
    let transport = modelctx::http::StreamableHttpClientTransport::builder(&url)
        .standalone_stream(false)
        .reconnect(std::time::Duration::from_millis(5), 3)
        .build()
        .expect("a valid URL");
    let client = within("the client to connect", client().connect(transport))
        .await
        .expect("the client connects before the chaos starts");
    chaos.store(true, Ordering::SeqCst);

    let timeout = std::time::Duration::from_secs(5);
    let calls = (0..24).map(|call| {
        let client = &client;
        async move {
            let params = json!({"call": call});
            let options = modelctx::session::RequestOptions::new().timeout(timeout);
            let outcome = client.request_with::<Chatty>(params, options).await;
            (call, outcome)
        }
    });
    let outcomes = within("every call to end", futures::future::join_all(calls)).await;
    let mut answered = 0;
    for (call, outcome) in outcomes {
        match outcome {
            Ok(result) => {
                assert_eq!(payload(result)["call"], json!(call), "its own answer");
                answered += 1;
            }
            Err(e) => assert!(!e.to_string().is_empty(), "call {call}: a clear error"),
        }
    }
    let runs = runs.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        runs.values().all(|&n| n == 1),
        "no call ran twice on the server: {runs:?}"
    );
    let resumed = hosted
        .seen()
        .iter()
        .filter(|s| s.method == http::Method::GET && s.header("last-event-id").is_some())
        .count();
    assert!(cuts.load(Ordering::SeqCst) > 0, "the proxy cut connections");
    assert!(answered > 0, "some calls came through");
    assert!(resumed > 0, "some streams were resumed with Last-Event-ID");
}

/// Case 3: a message cut short by its sender. On stdio a partial line followed by the
/// end of input is dropped and the session ends (the server closes its side); on
/// streamable HTTP and legacy SSE a POST whose body ends early is refused (400) without
/// reaching the session, which goes on. Either way the cut request never runs. (Pending
/// requests failing when the peer goes: `protocol::closing_fails_every_pending_request`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_03_a_truncated_message_is_dropped() {
    let (server, controls, _) = fault_server();
    let cut = br#"{"jsonrpc":"2.0","id":3,"method":"test/echo","params":{"cut":"#;
    let mut probe = 0;
    for (name, mut wire) in [
        ("streamable-http", Wire::http(&server).await),
        ("legacy-sse", Wire::sse(&server).await),
    ] {
        let (url, headers) = post_target(&wire);
        let status = raw_post(&url, &headers, cut.len() + 50, cut.to_vec(), true).await;
        assert!(status.starts_with("HTTP/1.1 400"), "{name}: {status}");
        probe += 1;
        let reply = wire
            .send(br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#, probe)
            .await;
        assert_eq!(
            reply.messages.len(),
            1,
            "{name}: only the ping's answer: {reply:?}"
        );
    }
    let mut wire = Wire::stdio(&server).await;
    let Wire::Stdio { write, lines } = &mut wire else {
        unreachable!("a stdio wire")
    };
    within("the partial line and the end of input", async {
        write.write_all(cut).await?;
        write.shutdown().await
    })
    .await
    .expect("the pipe takes it");
    let end = within("the server to close its side", lines.next_line()).await;
    assert!(matches!(end, Ok(None)), "no answer, then the end: {end:?}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the cut request never ran"
    );
}

// ---------------------------------------------------------------------------------------
// Case 15: large inputs within the body cap.

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
