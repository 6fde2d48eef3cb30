//! The load generator: runs one scenario against one target and prints its figures as
//! one JSON object on stdout (`cargo xtask bench` runs it once per target and round).
//!
//! ```text
//! bench-load memory TARGET [--calls N]
//! bench-load stdio TARGET [--calls N]
//! bench-load http MODE TARGET [--calls N] [--clients N]
//! bench-load sessions TARGET [--calls N]
//! bench-load fairness TARGET [--calls N]
//! bench-load cold TARGET [--calls N]
//! bench-load scale stores memory|redis [--calls N]
//! bench-load scale instances one|two [--calls N]
//! ```
//!
//! `scale` runs modelctx only, with its own `redis-server` (on a free loopback port,
//! in a temporary directory; an error without one): `stores` compares one instance with
//! the in-memory stores and with the Redis stores, `instances` one instance and two
//! sharing one Redis, called by round-robin clients.
//!
//! TARGET is `modelctx`, `rmcp` or `baseline`; MODE is `stateful`, `json`, `stateless`,
//! `modern` (protocol 2026-07-28, no handshake) or `mrtr` (2026-07-28, each call two
//! POSTs: `input_required`, then the retry with the user's confirmation).
//! `--clients N` runs only the HTTP phase with N clients (for profiling one phase under
//! `perf`); by default both phases run, 1 and 32 clients.
//! The stdio and HTTP servers are the `bench-server-TARGET` binaries next to this one.

use std::future::Future;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use modelctx_bench::process::{ServerProcess, cpu_time};
use modelctx_bench::stats::Latencies;
use modelctx_bench::{HttpMode, PROTOCOL_VERSION, wire};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Concurrent callers in the in-memory throughput figure.
const MEMORY_CONCURRENCY: usize = 64;
/// Requests in flight in the stdio pipelined figure.
const STDIO_WINDOW: usize = 64;
/// Clients in the HTTP concurrent figures.
const HTTP_CLIENTS: usize = 32;
/// The bound on every wait for a server (start, an answer).
const WAIT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Modelctx,
    Rmcp,
    Baseline,
}

impl Target {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "modelctx" => Some(Self::Modelctx),
            "rmcp" => Some(Self::Rmcp),
            "baseline" => Some(Self::Baseline),
            _ => None,
        }
    }

    fn server(self) -> Result<std::path::PathBuf, String> {
        let name = match self {
            Self::Modelctx => "bench-server-modelctx",
            Self::Rmcp => "bench-server-rmcp",
            Self::Baseline => "bench-server-baseline",
        };
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        Ok(exe.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
    }
}

type Figures = Vec<(&'static str, f64)>;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(figures) => {
            let object: serde_json::Map<String, serde_json::Value> = figures
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.into()))
                .collect();
            println!("{}", serde_json::Value::Object(object));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench-load: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<Figures, String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut calls = 2000usize;
    if let Some(i) = args.iter().position(|a| a == "--calls") {
        calls = args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .filter(|&n| n >= HTTP_CLIENTS)
            .ok_or("--calls needs a number of at least 32")?;
        args.drain(i..i + 2);
    }
    let mut clients = None;
    if let Some(i) = args.iter().position(|a| a == "--clients") {
        clients = Some(
            args.get(i + 1)
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| (1..=calls).contains(&n))
                .ok_or("--clients needs a number between 1 and --calls")?,
        );
        args.drain(i..i + 2);
    }
    let target = |name: &str| Target::parse(name).ok_or(format!("unknown target {name:?}"));
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["memory", t] => memory(target(t)?, calls).await,
        ["stdio", t] => stdio(target(t)?, calls).await,
        ["sessions", t] => sessions(target(t)?, calls).await,
        ["fairness", t] => fairness(target(t)?, calls).await,
        ["cold", t] => cold(target(t)?, calls).await,
        ["scale", "stores", variant] => scale_stores(variant, calls).await,
        ["scale", "instances", variant] => scale_instances(variant, calls).await,
        ["http", mode, t] => {
            let mode = HttpMode::parse(mode).ok_or(format!("unknown HTTP mode {mode:?}"))?;
            http(mode, target(t)?, calls, clients).await
        }
        _ => Err(
            "usage: bench-load <memory T | stdio T | http MODE T | sessions T | fairness T | cold T | scale stores memory|redis | scale instances one|two> [--calls N] [--clients N]"
                .into(),
        ),
    }
}

/// Calls `call` `calls` times one after another, timing each.
async fn sequential<F, Fut>(calls: usize, mut call: F) -> Result<Latencies, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    for _ in 0..calls / 10 {
        call().await?;
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        call().await?;
        samples.push(start.elapsed());
    }
    Ok(Latencies::from_durations(&samples))
}

/// `workers` tasks share `calls` calls; returns calls per second.
async fn concurrent<F, Fut>(calls: usize, workers: usize, call: F) -> Result<f64, String>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let per_worker = calls / workers;
    let start = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let call = call.clone();
            tokio::spawn(async move {
                for _ in 0..per_worker {
                    call().await?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    Ok((per_worker * workers) as f64 / start.elapsed().as_secs_f64())
}

fn latency_figures(prefix: [&'static str; 2], latencies: &Latencies) -> [(&'static str, f64); 2] {
    [
        (prefix[0], latencies.percentile(50.0)),
        (prefix[1], latencies.percentile(99.0)),
    ]
}

// ---- scenario 1: in-memory ----------------------------------------------------------

async fn memory(target: Target, calls: usize) -> Result<Figures, String> {
    const SEQ: [&str; 2] = ["seq_p50_us", "seq_p99_us"];
    const RATE: &str = "conc64_calls_per_s";
    let mut figures = Figures::new();
    match target {
        Target::Modelctx => {
            use modelctx::types::CallToolRequest;
            use modelctx_bench::modelctx_side::{call_params, check, server};
            let (client_side, server_side) = modelctx::memory::pair();
            let _session = server().serve(server_side);
            // The handshake alone, as rmcp's client does it (no server/discover probe).
            let client = modelctx::client::Client::builder("bench-load", "0.1.0")
                .mode(modelctx::client::ConnectMode::Legacy)
                .connect(client_side)
                .await
                .map_err(|e| e.to_string())?;
            check(
                &client
                    .request::<CallToolRequest>(call_params())
                    .await
                    .map_err(|e| e.to_string())?,
            )?;
            let call = move || {
                let client = client.clone();
                async move {
                    client
                        .request::<CallToolRequest>(call_params())
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                }
            };
            figures.extend(latency_figures(SEQ, &sequential(calls, &call).await?));
            figures.push((RATE, concurrent(calls, MEMORY_CONCURRENCY, call).await?));
        }
        #[cfg(not(feature = "rmcp"))]
        Target::Rmcp => return Err("bench-load was built without the `rmcp` feature".into()),
        #[cfg(feature = "rmcp")]
        Target::Rmcp => {
            use modelctx_bench::rmcp_side::{Echo, call_params, check, pair};
            use rmcp::ServiceExt;
            let (client_side, server_side) = pair(modelctx::memory::DEFAULT_CAPACITY);
            let server = tokio::spawn(Echo.serve(server_side));
            let client = Arc::new(().serve(client_side).await.map_err(|e| e.to_string())?);
            let _server = server
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            check(
                &client
                    .call_tool(call_params())
                    .await
                    .map_err(|e| e.to_string())?,
            )?;
            let call = move || {
                let client = client.clone();
                async move {
                    client
                        .call_tool(call_params())
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                }
            };
            figures.extend(latency_figures(SEQ, &sequential(calls, &call).await?));
            figures.push((RATE, concurrent(calls, MEMORY_CONCURRENCY, call).await?));
        }
        Target::Baseline => {
            let client =
                modelctx_bench::baseline::MemoryClient::start(modelctx::memory::DEFAULT_CAPACITY);
            if client.call().await? != modelctx_bench::TEXT {
                return Err("the baseline did not echo".into());
            }
            let call = move || {
                let client = client.clone();
                async move { client.call().await.map(drop) }
            };
            figures.extend(latency_figures(SEQ, &sequential(calls, &call).await?));
            figures.push((RATE, concurrent(calls, MEMORY_CONCURRENCY, call).await?));
        }
    }
    Ok(figures)
}

// ---- scenario 2: stdio --------------------------------------------------------------

struct Pipes {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Pipes {
    fn spawn(target: Target) -> Result<Self, String> {
        let program = target.server()?;
        let mut child = Command::new(&program)
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout pipe")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        })
    }

    async fn send(&mut self, message: &str) -> Result<(), String> {
        let mut line = String::with_capacity(message.len() + 1);
        line.push_str(message);
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        self.stdin.flush().await.map_err(|e| e.to_string())
    }

    /// Reads lines until the answer to `id`.
    async fn answer(&mut self, id: u64) -> Result<(), String> {
        loop {
            let got = read_answer(&mut self.stdout, &mut self.line).await?;
            if got == Some(id) {
                return Ok(());
            }
        }
    }

    async fn handshake(&mut self) -> Result<(), String> {
        self.send(&wire::initialize()).await?;
        tokio::time::timeout(WAIT, self.answer(0))
            .await
            .map_err(|_| "no answer to initialize")??;
        self.send(wire::initialized()).await
    }

    async fn finish(self) -> Result<(), String> {
        let Pipes {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        match tokio::time::timeout(WAIT, child.wait()).await {
            Ok(status) => status.map(drop).map_err(|e| e.to_string()),
            Err(_) => {
                let _ = child.kill().await;
                Err("the server did not exit when its stdin closed".into())
            }
        }
    }
}

/// Reads one line and returns the id of the answer on it (`None` for a notification).
async fn read_answer(
    stdout: &mut BufReader<ChildStdout>,
    line: &mut String,
) -> Result<Option<u64>, String> {
    line.clear();
    let n = tokio::time::timeout(WAIT, stdout.read_line(line))
        .await
        .map_err(|_| "the server stopped answering")?
        .map_err(|e| e.to_string())?;
    if n == 0 {
        return Err("the server closed its stdout".into());
    }
    wire::answer_id(line.trim_end())
}

async fn stdio(target: Target, calls: usize) -> Result<Figures, String> {
    let mut pipes = Pipes::spawn(target)?;
    pipes.handshake().await?;
    // Sequential: one call in flight.
    let mut id = 0u64;
    for _ in 0..calls / 10 {
        id += 1;
        pipes.send(&wire::call(id)).await?;
        pipes.answer(id).await?;
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        id += 1;
        let start = Instant::now();
        pipes.send(&wire::call(id)).await?;
        pipes.answer(id).await?;
        samples.push(start.elapsed());
    }
    let latencies = Latencies::from_durations(&samples);
    // Pipelined: up to STDIO_WINDOW calls in flight, written by one task and read here.
    let Pipes {
        child,
        mut stdin,
        mut stdout,
        mut line,
    } = pipes;
    let window = Arc::new(tokio::sync::Semaphore::new(STDIO_WINDOW));
    let first = id + 1;
    let start = Instant::now();
    let writer = {
        let window = window.clone();
        tokio::spawn(async move {
            for id in first..first + calls as u64 {
                window.acquire().await.map_err(|e| e.to_string())?.forget();
                let mut text = wire::call(id);
                text.push('\n');
                stdin
                    .write_all(text.as_bytes())
                    .await
                    .map_err(|e| e.to_string())?;
                if window.available_permits() == 0 || id + 1 == first + calls as u64 {
                    stdin.flush().await.map_err(|e| e.to_string())?;
                }
            }
            stdin.flush().await.map_err(|e| e.to_string())?;
            Ok::<ChildStdin, String>(stdin)
        })
    };
    let mut answered = 0;
    while answered < calls {
        if read_answer(&mut stdout, &mut line).await?.is_some() {
            answered += 1;
            window.add_permits(1);
        }
    }
    let rate = calls as f64 / start.elapsed().as_secs_f64();
    let stdin = writer.await.map_err(|e| e.to_string())??;
    Pipes {
        child,
        stdin,
        stdout,
        line,
    }
    .finish()
    .await?;
    Ok(vec![
        ("seq_p50_us", latencies.percentile(50.0)),
        ("seq_p99_us", latencies.percentile(99.0)),
        ("pipelined_calls_per_s", rate),
    ])
}

// ---- scenario 3: streamable HTTP ----------------------------------------------------

/// The header names the HTTP clients send or read, made once: a name given as `&str`
/// is parsed on every request, and one `http` does not know is copied each time.
static MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Session-Id` (see [`MCP_PROTOCOL_VERSION`]).
static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `Mcp-Method` (protocol 2026-07-28).
static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (protocol 2026-07-28).
static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// One HTTP/1.1 keep-alive connection of the load generator. Every request is built
/// the same way in every mode, from values made once per client (the URI, `Host`, the
/// session id) or static ones, so the cost of the generator per request differs between
/// modes only by what the modes themselves send and receive (the 2026-07-28 envelope,
/// its two headers, its longer answer).
struct HttpClient {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    uri: hyper::Uri,
    host: HeaderValue,
    session: Option<HeaderValue>,
    /// Whether requests speak protocol 2026-07-28 (envelope, `Mcp-*` headers).
    modern: bool,
    /// The `MCP-Protocol-Version` of a handshake-era client.
    version: &'static str,
}

impl HttpClient {
    /// A client ready to call: after the handshake, or (protocol 2026-07-28) at once.
    async fn connect(addr: &str, mode: HttpMode) -> Result<Self, String> {
        let mut client = Self::open(addr).await?;
        if mode.modern() {
            client.modern = true;
        } else {
            client.handshake(mode).await?;
        }
        Ok(client)
    }

    /// One HTTP/1.1 connection, no MCP traffic yet.
    async fn open(addr: &str) -> Result<Self, String> {
        let host = HeaderValue::from_str(addr).map_err(|e| e.to_string())?;
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        Ok(Self {
            sender,
            uri: hyper::Uri::from_static("/mcp"),
            host,
            session: None,
            modern: false,
            version: PROTOCOL_VERSION,
        })
    }

    /// `initialize` and `notifications/initialized`; keeps the session id it is given.
    async fn handshake(&mut self, mode: HttpMode) -> Result<(), String> {
        self.handshake_with(wire::initialize(), mode).await
    }

    /// The handshake with this `initialize` request.
    async fn handshake_with(&mut self, initialize: String, mode: HttpMode) -> Result<(), String> {
        let (status, session, body) = self.post(initialize).await?;
        if status != hyper::StatusCode::OK {
            return Err(format!("initialize answered {status}: {body}"));
        }
        self.session = session;
        if mode.stateful() && self.session.is_none() {
            return Err("a stateful server gave no Mcp-Session-Id".into());
        }
        let (status, _, body) = self.post(wire::initialized().to_owned()).await?;
        if status != hyper::StatusCode::ACCEPTED {
            return Err(format!("initialized answered {status}: {body}"));
        }
        Ok(())
    }

    /// POSTs one message (a 2026-07-28 `tools/call` of tool `name`, when the client
    /// speaks that version); returns the status, the session id header and the body.
    async fn post_call(
        &mut self,
        message: String,
        name: &'static str,
    ) -> Result<(hyper::StatusCode, Option<HeaderValue>, String), String> {
        self.send(message, Some(name)).await
    }

    /// POSTs one message; returns the status, the session id header and the body.
    async fn post(
        &mut self,
        message: String,
    ) -> Result<(hyper::StatusCode, Option<HeaderValue>, String), String> {
        self.send(message, None).await
    }

    async fn send(
        &mut self,
        message: String,
        name: Option<&'static str>,
    ) -> Result<(hyper::StatusCode, Option<HeaderValue>, String), String> {
        use hyper::header;
        let version = if self.modern {
            wire::PROTOCOL_2026
        } else {
            self.version
        };
        let mut request = hyper::Request::new(Full::new(Bytes::from(message)));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = self.uri.clone();
        // Room for every header of every mode: one allocation, whatever the mode.
        let mut headers = hyper::HeaderMap::with_capacity(8);
        headers.insert(header::HOST, self.host.clone());
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(&MCP_PROTOCOL_VERSION, HeaderValue::from_static(version));
        if self.modern {
            headers.insert(&MCP_METHOD, HeaderValue::from_static("tools/call"));
            if let Some(name) = name {
                headers.insert(&MCP_NAME, HeaderValue::from_static(name));
            }
        }
        if let Some(session) = &self.session {
            headers.insert(&MCP_SESSION_ID, session.clone());
        }
        *request.headers_mut() = headers;
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(WAIT, self.sender.send_request(request))
            .await
            .map_err(|_| "no HTTP answer")?
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let session = response.headers().get(&MCP_SESSION_ID).cloned();
        let body = tokio::time::timeout(WAIT, response.into_body().collect())
            .await
            .map_err(|_| "the answer's body did not end")?
            .map_err(|e| e.to_string())?
            .to_bytes();
        let body = String::from_utf8(Vec::from(body)).map_err(|e| e.to_string())?;
        Ok((status, session, body))
    }

    /// One echo call: checks the answer, in a JSON body or among SSE events.
    async fn call(&mut self, id: u64) -> Result<(), String> {
        let message = if self.modern {
            wire::call_2026(id, modelctx_bench::TOOL)
        } else {
            wire::call(id)
        };
        let (status, _, body) = self.post_call(message, modelctx_bench::TOOL).await?;
        check_echo(status, &body, id)
    }

    /// One call of the scenario `mode`.
    async fn call_in(&mut self, mode: HttpMode, id: u64) -> Result<(), String> {
        if mode == HttpMode::Mrtr {
            self.call_confirmed(id).await
        } else {
            self.call(id).await
        }
    }

    /// One call of the confirming tool (protocol 2026-07-28): the first POST must come
    /// back `input_required`; the retry carries the confirmation and the state, and
    /// must come back with the echo.
    async fn call_confirmed(&mut self, id: u64) -> Result<(), String> {
        let ask = modelctx_bench::ASK_TOOL;
        let (status, _, body) = self.post_call(wire::call_2026(id, ask), ask).await?;
        if status != hyper::StatusCode::OK {
            return Err(format!("tools/call answered {status}: {body}"));
        }
        let (key, state) = wire::input_required(first_message(&body)?, id)?;
        let (status, _, body) = self
            .post_call(wire::retry_2026(id, &key, &state)?, ask)
            .await?;
        check_echo(status, &body, id)
    }
}

/// The first JSON-RPC message of an answer: the JSON body, or the first SSE event's.
fn first_message(body: &str) -> Result<&str, String> {
    let trimmed = body.trim();
    if trimmed.starts_with('{') {
        return Ok(trimmed);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.starts_with('{'))
        .ok_or_else(|| format!("no message in the answer: {body}"))
}

/// Checks the answer to echo call `id`: 200, and the echo in a JSON body or among SSE
/// events.
fn check_echo(status: hyper::StatusCode, body: &str, id: u64) -> Result<(), String> {
    if status != hyper::StatusCode::OK {
        return Err(format!("tools/call answered {status}: {body}"));
    }
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        return match wire::answer_id(trimmed.trim_end())? {
            Some(got) if got == id => Ok(()),
            other => Err(format!("expected answer {id}, got {other:?}")),
        };
    }
    for line in body.lines() {
        if let Some(data) = line.strip_prefix("data:") {
            let data = data.trim();
            if data.starts_with('{') && wire::answer_id(data)? == Some(id) {
                return Ok(());
            }
        }
    }
    Err(format!("no answer {id} in the event stream: {body}"))
}

/// What one HTTP load phase measured.
struct HttpRun {
    latencies: Latencies,
    /// Calls per second.
    rate: f64,
    /// CPU time per call of the server (when its id was given) and of this process,
    /// in µs, over the timed calls.
    server_cpu_us: Option<f64>,
    load_cpu_us: f64,
}

/// `clients` clients, each on its own connection (and session), share `calls` calls.
/// `server`: the server's process id, to measure its CPU time over the timed calls.
async fn http_load(
    addr: &str,
    mode: HttpMode,
    clients: usize,
    calls: usize,
    server: Option<u32>,
) -> Result<HttpRun, String> {
    let per_client = calls / clients;
    let mut connected = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut client = HttpClient::connect(addr, mode).await?;
        for id in 1..=(per_client / 10).max(1) as u64 {
            client.call_in(mode, id).await?;
        }
        connected.push(client);
    }
    let server_before = server.map(|pid| cpu_time(Some(pid))).transpose()?;
    let load_before = cpu_time(None)?;
    let start = Instant::now();
    let tasks: Vec<_> = connected
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_client);
                for id in 1..=per_client as u64 {
                    let begin = Instant::now();
                    client.call_in(mode, 1000 + id).await?;
                    samples.push(begin.elapsed());
                }
                Ok::<_, String>(samples)
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(calls);
    for task in tasks {
        samples.extend(task.await.map_err(|e| e.to_string())??);
    }
    let elapsed = start.elapsed();
    let done = (per_client * clients) as f64;
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / done;
    let load_cpu_us = per_call(cpu_time(None)?.saturating_sub(load_before));
    let server_cpu_us = match (server, server_before) {
        (Some(pid), Some(before)) => Some(per_call(cpu_time(Some(pid))?.saturating_sub(before))),
        _ => None,
    };
    Ok(HttpRun {
        latencies: Latencies::from_durations(&samples),
        rate: done / elapsed.as_secs_f64(),
        server_cpu_us,
        load_cpu_us,
    })
}

/// A `bench-server-TARGET http MODE` child and the address it listens on.
struct HttpServer(ServerProcess);

impl std::ops::Deref for HttpServer {
    type Target = ServerProcess;
    fn deref(&self) -> &ServerProcess {
        &self.0
    }
}

impl HttpServer {
    async fn start(target: Target, mode: HttpMode) -> Result<Self, String> {
        Self::spawn(target, &["http", mode.name()]).await
    }

    async fn spawn(target: Target, args: &[&str]) -> Result<Self, String> {
        ServerProcess::spawn(&target.server()?, args)
            .await
            .map(Self)
    }

    /// The server's resident set size in KiB.
    fn rss_kib(&self) -> Result<f64, String> {
        self.0.status_field("VmRSS:")
    }

    async fn stop(self) -> Result<(), String> {
        self.0.stop().await
    }
}

async fn http(
    mode: HttpMode,
    target: Target,
    calls: usize,
    clients: Option<usize>,
) -> Result<Figures, String> {
    let server = HttpServer::start(target, mode).await?;
    let pid = Some(server.pid());
    if let Some(clients) = clients {
        let run = http_load(&server.addr, mode, clients, calls, pid).await?;
        server.stop().await?;
        return Ok(vec![
            ("p50_us", run.latencies.percentile(50.0)),
            ("p99_us", run.latencies.percentile(99.0)),
            ("calls_per_s", run.rate),
            (
                "server_cpu_us_per_call",
                run.server_cpu_us.unwrap_or(f64::NAN),
            ),
            ("load_cpu_us_per_call", run.load_cpu_us),
        ]);
    }
    let one = http_load(&server.addr, mode, 1, calls, pid).await?;
    let many = http_load(&server.addr, mode, HTTP_CLIENTS, calls, pid).await?;
    server.stop().await?;
    Ok(vec![
        ("c1_p50_us", one.latencies.percentile(50.0)),
        ("c1_p99_us", one.latencies.percentile(99.0)),
        ("c1_calls_per_s", one.rate),
        ("c32_p50_us", many.latencies.percentile(50.0)),
        ("c32_p99_us", many.latencies.percentile(99.0)),
        ("c32_calls_per_s", many.rate),
        ("c32_server_cpu_us", many.server_cpu_us.unwrap_or(f64::NAN)),
        ("c32_load_cpu_us", many.load_cpu_us),
    ])
}

// ---- scenario: fairness under a flood -------------------------------------------------

/// Connections the flooding session calls on at once in the fairness scenario.
const FLOOD_CONNECTIONS: usize = 32;

/// One stateful session calls the echo tool sequentially, alone and then while another
/// session floods the server (32 connections on one session id, each calling without
/// pause): the quiet session's latency both times, and the flood's rate.
async fn fairness(target: Target, calls: usize) -> Result<Figures, String> {
    let server = HttpServer::start(target, HttpMode::Stateful).await?;
    let mut quiet = HttpClient::connect(&server.addr, HttpMode::Stateful).await?;
    let mut next = 0u64;
    let rounds = calls / 4;
    timed_calls(&mut quiet, &mut next, rounds / 10).await?;
    let alone = timed_calls(&mut quiet, &mut next, rounds).await?;

    let mut flooder = HttpClient::connect(&server.addr, HttpMode::Stateful).await?;
    let session = flooder.session.clone();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut floods = Vec::with_capacity(FLOOD_CONNECTIONS);
    for worker in 0..FLOOD_CONNECTIONS {
        let mut client = if worker == 0 {
            std::mem::replace(&mut flooder, HttpClient::open(&server.addr).await?)
        } else {
            let mut client = HttpClient::open(&server.addr).await?;
            client.session.clone_from(&session);
            client
        };
        let stop = stop.clone();
        floods.push(tokio::spawn(async move {
            let mut done = 0u64;
            // Ids apart per connection: one session, no id twice in flight.
            let base = 1_000_000 * (worker as u64 + 1);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                client.call(base + done).await?;
                done += 1;
            }
            Ok::<u64, String>(done)
        }));
    }
    let flood_start = Instant::now();
    // A few calls of the quiet session first, not timed, while the flood gets going.
    timed_calls(&mut quiet, &mut next, rounds / 10).await?;
    let flooded = timed_calls(&mut quiet, &mut next, rounds).await?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let elapsed = flood_start.elapsed();
    let mut flood_calls = 0u64;
    for flood in floods {
        flood_calls += flood.await.map_err(|e| e.to_string())??;
    }
    server.stop().await?;
    let alone = Latencies::from_durations(&alone);
    let flooded = Latencies::from_durations(&flooded);
    Ok(vec![
        ("alone_p50_us", alone.percentile(50.0)),
        ("alone_p99_us", alone.percentile(99.0)),
        ("flooded_p50_us", flooded.percentile(50.0)),
        ("flooded_p99_us", flooded.percentile(99.0)),
        (
            "flood_calls_per_s",
            flood_calls as f64 / elapsed.as_secs_f64(),
        ),
    ])
}

/// `n` sequential echo calls on `client` (ids from `next` on), each timed.
async fn timed_calls(
    client: &mut HttpClient,
    next: &mut u64,
    n: usize,
) -> Result<Vec<Duration>, String> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        *next += 1;
        let start = Instant::now();
        client.call(*next).await?;
        samples.push(start.elapsed());
    }
    Ok(samples)
}

// ---- scenario 4: sessions -----------------------------------------------------------

/// Connections that open sessions at once in the sessions scenario.
const SESSION_OPENERS: usize = 8;

/// Opens `calls / 5` (at most 1,000) stateful sessions from 8 connections, each session
/// `initialize` + `notifications/initialized`, and leaves them idle: the initialize rate,
/// and the server's resident memory growth per idle session.
async fn sessions(target: Target, calls: usize) -> Result<Figures, String> {
    let count = (calls / 5).clamp(SESSION_OPENERS, 1000) / SESSION_OPENERS * SESSION_OPENERS;
    let server = HttpServer::start(target, HttpMode::Stateful).await?;
    // A few sessions first, so the figure leaves out one-off start-up allocations.
    let mut warm = HttpClient::connect(&server.addr, HttpMode::Stateful).await?;
    warm.call(1).await?;
    let before = server.rss_kib()?;
    let start = Instant::now();
    let openers: Vec<_> = (0..SESSION_OPENERS)
        .map(|_| {
            let addr = server.addr.clone();
            tokio::spawn(async move {
                let mut client = HttpClient::connect(&addr, HttpMode::Stateful).await?;
                for _ in 1..count / SESSION_OPENERS {
                    client.session = None;
                    client.handshake(HttpMode::Stateful).await?;
                }
                Ok::<_, String>(client)
            })
        })
        .collect();
    let mut clients = Vec::new();
    for opener in openers {
        clients.push(opener.await.map_err(|e| e.to_string())??);
    }
    let rate = count as f64 / start.elapsed().as_secs_f64();
    let after = server.rss_kib()?;
    drop(clients);
    server.stop().await?;
    Ok(vec![
        ("initialize_per_s", rate),
        (
            "rss_kib_per_idle_session",
            (after - before).max(0.0) / count as f64,
        ),
    ])
}

// ---- scenario 5: cold start ---------------------------------------------------------

/// Process start to the first `initialize` answer, over stdio and over HTTP (median of
/// `calls / 50`, at least 3, starts each).
async fn cold(target: Target, calls: usize) -> Result<Figures, String> {
    let starts = (calls / 50).max(3);
    let mut stdio_ms = Vec::with_capacity(starts);
    let mut http_ms = Vec::with_capacity(starts);
    for _ in 0..starts {
        let start = Instant::now();
        let mut pipes = Pipes::spawn(target)?;
        pipes.send(&wire::initialize()).await?;
        pipes.answer(0).await?;
        stdio_ms.push(start.elapsed().as_secs_f64() * 1e3);
        pipes.finish().await?;

        let start = Instant::now();
        let server = HttpServer::start(target, HttpMode::Stateful).await?;
        let mut client = HttpClient::open(&server.addr).await?;
        let (status, _, body) = client.post(wire::initialize()).await?;
        if status != hyper::StatusCode::OK {
            return Err(format!("initialize answered {status}: {body}"));
        }
        http_ms.push(start.elapsed().as_secs_f64() * 1e3);
        drop(client);
        server.stop().await?;
    }
    let median = |v: &[f64]| modelctx_bench::stats::median(v).unwrap_or_default();
    Ok(vec![
        ("stdio_ms", median(&stdio_ms)),
        ("http_ms", median(&http_ms)),
    ])
}

// ---- scale-out on Redis -------------------------------------------------------------

/// A `redis-server` for one run: a free loopback port, a temporary directory, no
/// persistence; killed when dropped.
struct RedisChild {
    child: Child,
    dir: std::path::PathBuf,
    url: String,
}

impl RedisChild {
    async fn start() -> Result<Self, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        let dir = std::env::temp_dir().join(format!(
            "modelctx-bench-redis-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let spawned = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--loglevel", "notice"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!(
                    "the scale-out scenarios need redis-server ({e}); install it with `sh xtask/system/redis.sh`"
                ));
            }
        };
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout pipe")?);
        let url = format!("redis://127.0.0.1:{port}/");
        let redis = Self { child, dir, url };
        let ready = async {
            let mut line = String::new();
            loop {
                line.clear();
                if stdout
                    .read_line(&mut line)
                    .await
                    .map_err(|e| e.to_string())?
                    == 0
                {
                    return Err("redis-server exited before it was ready".to_owned());
                }
                if line.contains("Ready to accept connections") {
                    return Ok(());
                }
            }
        };
        tokio::time::timeout(WAIT, ready)
            .await
            .map_err(|_| "redis-server was not ready in time")??;
        // Keep reading its log so it never blocks on a full pipe.
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut stdout, &mut tokio::io::sink()).await;
        });
        Ok(redis)
    }
}

impl Drop for RedisChild {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One scale-out server (`bench-server-modelctx http-scale`) with these stores.
async fn scale_server(redis: Option<&RedisChild>) -> Result<HttpServer, String> {
    match redis {
        None => HttpServer::spawn(Target::Modelctx, &["http-scale", "memory"]).await,
        Some(redis) => {
            HttpServer::spawn(Target::Modelctx, &["http-scale", "redis", &redis.url]).await
        }
    }
}

/// One instance with the in-memory stores (`memory`) or the Redis stores (`redis`):
/// stateful SSE echo calls (every event goes to the event store), 1 and 32 clients,
/// and task-augmented calls fetched with `tasks/result` (protocol 2025-11-25: a task
/// stored, finished and read per call), 1 and 32 clients.
async fn scale_stores(variant: &str, calls: usize) -> Result<Figures, String> {
    let redis = match variant {
        "memory" => None,
        "redis" => Some(RedisChild::start().await?),
        other => return Err(format!("unknown stores {other:?} (memory or redis)")),
    };
    let server = scale_server(redis.as_ref()).await?;
    let sse_one = http_load(&server.addr, HttpMode::Stateful, 1, calls, None)
        .await?
        .latencies;
    let sse_run = http_load(&server.addr, HttpMode::Stateful, HTTP_CLIENTS, calls, None).await?;
    let (sse_many, sse_rate) = (sse_run.latencies, sse_run.rate);
    let task_calls = (calls / 2).max(HTTP_CLIENTS);
    let (task_one, _) = task_load(&server.addr, 1, task_calls).await?;
    let (task_many, task_rate) = task_load(&server.addr, HTTP_CLIENTS, task_calls).await?;
    server.stop().await?;
    drop(redis);
    Ok(vec![
        ("sse_c1_p50_us", sse_one.percentile(50.0)),
        ("sse_c1_p99_us", sse_one.percentile(99.0)),
        ("sse_c32_p99_us", sse_many.percentile(99.0)),
        ("sse_c32_calls_per_s", sse_rate),
        ("task_c1_p50_us", task_one.percentile(50.0)),
        ("task_c1_p99_us", task_one.percentile(99.0)),
        ("task_c32_p99_us", task_many.percentile(99.0)),
        ("task_c32_calls_per_s", task_rate),
    ])
}

impl HttpClient {
    /// A stateful 2025-11-25 session for the task scenario.
    async fn connect_tasks(addr: &str) -> Result<Self, String> {
        let mut client = Self::open(addr).await?;
        client.version = wire::PROTOCOL_TASKS;
        client
            .handshake_with(wire::initialize_tasks(), HttpMode::Stateful)
            .await?;
        Ok(client)
    }

    /// A task-augmented echo call (request `id`), then `tasks/result` (request `id + 1`)
    /// for the task it created, checked.
    async fn task_round(&mut self, id: u64) -> Result<(), String> {
        let (status, _, body) = self.post(wire::task_call(id)).await?;
        if status != hyper::StatusCode::OK {
            return Err(format!("tools/call answered {status}: {body}"));
        }
        let task = wire::created_task(first_message(&body)?, id)?;
        let (status, _, body) = self.post(wire::task_result(id + 1, &task)?).await?;
        check_echo(status, &body, id + 1)
    }
}

/// `clients` sessions share `calls` task rounds; returns their latencies and rate.
async fn task_load(addr: &str, clients: usize, calls: usize) -> Result<(Latencies, f64), String> {
    let per_client = calls / clients;
    let mut connected = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut client = HttpClient::connect_tasks(addr).await?;
        for k in 1..=(per_client / 10).max(1) as u64 {
            client.task_round(2 * k).await?;
        }
        connected.push(client);
    }
    let start = Instant::now();
    let tasks: Vec<_> = connected
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_client);
                for k in 1..=per_client as u64 {
                    let begin = Instant::now();
                    client.task_round(100_000 + 2 * k).await?;
                    samples.push(begin.elapsed());
                }
                Ok::<_, String>(samples)
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(calls);
    for task in tasks {
        samples.extend(task.await.map_err(|e| e.to_string())??);
    }
    let rate = (per_client * clients) as f64 / start.elapsed().as_secs_f64();
    Ok((Latencies::from_durations(&samples), rate))
}

/// One instance (`one`) or two sharing one Redis (`two`), both with the Redis stores,
/// called with 2026-07-28 JSON echo calls by 32 round-robin clients: each holds one
/// connection per instance slot (two to the one instance, or one to each) and sends
/// every call to the next.
async fn scale_instances(variant: &str, calls: usize) -> Result<Figures, String> {
    let redis = RedisChild::start().await?;
    let first = scale_server(Some(&redis)).await?;
    let second = match variant {
        "one" => None,
        "two" => Some(scale_server(Some(&redis)).await?),
        other => return Err(format!("unknown instances {other:?} (one or two)")),
    };
    let addrs = [
        first.addr.clone(),
        second
            .as_ref()
            .map_or(first.addr.clone(), |s| s.addr.clone()),
    ];
    let per_client = calls / HTTP_CLIENTS;
    let mut connected = Vec::with_capacity(HTTP_CLIENTS);
    for _ in 0..HTTP_CLIENTS {
        let mut pair = Vec::with_capacity(addrs.len());
        for addr in &addrs {
            let mut client = HttpClient::connect(addr, HttpMode::Modern).await?;
            client.call(1).await?;
            pair.push(client);
        }
        connected.push(pair);
    }
    let start = Instant::now();
    let tasks: Vec<_> = connected
        .into_iter()
        .map(|mut pair| {
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_client);
                for k in 0..per_client {
                    let begin = Instant::now();
                    let slots = pair.len();
                    pair[k % slots].call(1000 + k as u64).await?;
                    samples.push(begin.elapsed());
                }
                Ok::<_, String>(samples)
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(calls);
    for task in tasks {
        samples.extend(task.await.map_err(|e| e.to_string())??);
    }
    let rate = (per_client * HTTP_CLIENTS) as f64 / start.elapsed().as_secs_f64();
    let latencies = Latencies::from_durations(&samples);
    first.stop().await?;
    if let Some(second) = second {
        second.stop().await?;
    }
    drop(redis);
    Ok(vec![
        ("c32_p50_us", latencies.percentile(50.0)),
        ("c32_p99_us", latencies.percentile(99.0)),
        ("c32_calls_per_s", rate),
    ])
}
