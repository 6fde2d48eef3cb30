//! Streamable HTTP: the client connections, the load phases and the server process.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use modelctx_bench::process::{ServerProcess, cpu_time};
use modelctx_bench::stats::Latencies;
use modelctx_bench::{HttpMode, PROTOCOL_VERSION, wire};

use crate::{Figures, HTTP_CLIENTS, Target, WAIT};

/// The header names the HTTP clients send or read, made once: a name given as `&str`
/// is parsed on every request, and one `http` does not know is copied each time.
pub(crate) static MCP_PROTOCOL_VERSION: HeaderName =
    HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Session-Id` (see [`MCP_PROTOCOL_VERSION`]).
pub(crate) static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `Mcp-Method` (protocol 2026-07-28).
pub(crate) static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (protocol 2026-07-28).
pub(crate) static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// One HTTP/1.1 keep-alive connection of the load generator. Every request is built
/// the same way in every mode, from values made once per client (the URI, `Host`, the
/// session id) or static ones, so the cost of the generator per request differs between
/// modes only by what the modes themselves send and receive (the 2026-07-28 envelope,
/// its two headers, its longer answer).
pub(crate) struct HttpClient {
    pub(crate) sender: wire::Http1Sender,
    pub(crate) uri: hyper::Uri,
    pub(crate) host: HeaderValue,
    pub(crate) session: Option<HeaderValue>,
    /// Whether requests speak protocol 2026-07-28 (envelope, `Mcp-*` headers).
    pub(crate) modern: bool,
    /// The `MCP-Protocol-Version` of a handshake-era client.
    pub(crate) version: &'static str,
}

impl HttpClient {
    /// A client ready to call: after the handshake, or (protocol 2026-07-28) at once.
    pub(crate) async fn connect(addr: &str, mode: HttpMode) -> Result<Self, String> {
        let mut client = Self::open(addr).await?;
        if mode.modern() {
            client.modern = true;
        } else {
            client.handshake(mode).await?;
        }
        Ok(client)
    }

    /// One HTTP/1.1 connection, no MCP traffic yet.
    pub(crate) async fn open(addr: &str) -> Result<Self, String> {
        let host = HeaderValue::from_str(addr).map_err(|e| e.to_string())?;
        Ok(Self {
            sender: wire::open_http1(addr).await?,
            uri: hyper::Uri::from_static("/mcp"),
            host,
            session: None,
            modern: false,
            version: PROTOCOL_VERSION,
        })
    }

    /// `initialize` and `notifications/initialized`; keeps the session id it is given.
    pub(crate) async fn handshake(&mut self, mode: HttpMode) -> Result<(), String> {
        self.handshake_with(wire::initialize(), mode).await
    }

    /// The handshake with this `initialize` request.
    pub(crate) async fn handshake_with(
        &mut self,
        initialize: String,
        mode: HttpMode,
    ) -> Result<(), String> {
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
    pub(crate) async fn post_call(
        &mut self,
        message: String,
        name: &'static str,
    ) -> Result<(hyper::StatusCode, Option<HeaderValue>, String), String> {
        self.send(message, Some(name)).await
    }

    /// POSTs one message; returns the status, the session id header and the body.
    pub(crate) async fn post(
        &mut self,
        message: String,
    ) -> Result<(hyper::StatusCode, Option<HeaderValue>, String), String> {
        self.send(message, None).await
    }

    pub(crate) async fn send(
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

    /// Ends the session with `DELETE` (its id and protocol version in the headers);
    /// returns the status, after reading the whole answer.
    pub(crate) async fn delete(&mut self) -> Result<hyper::StatusCode, String> {
        use hyper::header;
        let mut request = hyper::Request::new(Full::new(Bytes::new()));
        *request.method_mut() = hyper::Method::DELETE;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        headers.insert(header::HOST, self.host.clone());
        headers.insert(
            &MCP_PROTOCOL_VERSION,
            HeaderValue::from_static(self.version),
        );
        if let Some(session) = &self.session {
            headers.insert(&MCP_SESSION_ID, session.clone());
        }
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(WAIT, self.sender.send_request(request))
            .await
            .map_err(|_| "no HTTP answer to DELETE")?
            .map_err(|e| e.to_string())?;
        let status = response.status();
        tokio::time::timeout(WAIT, response.into_body().collect())
            .await
            .map_err(|_| "the answer to DELETE did not end")?
            .map_err(|e| e.to_string())?;
        Ok(status)
    }

    /// One echo call: checks the answer, in a JSON body or among SSE events.
    pub(crate) async fn call(&mut self, id: u64) -> Result<(), String> {
        let message = if self.modern {
            wire::call_2026(id, modelctx_bench::TOOL)
        } else {
            wire::call(id)
        };
        let (status, _, body) = self.post_call(message, modelctx_bench::TOOL).await?;
        check_echo(status, &body, id)
    }

    /// One call of the scenario `mode`.
    pub(crate) async fn call_in(&mut self, mode: HttpMode, id: u64) -> Result<(), String> {
        if mode == HttpMode::Mrtr {
            self.call_confirmed(id).await
        } else {
            self.call(id).await
        }
    }

    /// One call of the confirming tool (protocol 2026-07-28): the first POST must come
    /// back `input_required`; the retry carries the confirmation and the state, and
    /// must come back with the echo.
    pub(crate) async fn call_confirmed(&mut self, id: u64) -> Result<(), String> {
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
pub(crate) fn first_message(body: &str) -> Result<&str, String> {
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
pub(crate) fn check_echo(status: hyper::StatusCode, body: &str, id: u64) -> Result<(), String> {
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
pub(crate) struct HttpRun {
    pub(crate) latencies: Latencies,
    /// Calls per second.
    pub(crate) rate: f64,
    /// CPU time per call of the server (when its id was given) and of this process,
    /// in µs, over the timed calls.
    pub(crate) server_cpu_us: Option<f64>,
    pub(crate) load_cpu_us: f64,
}

/// `clients` clients, each on its own connection (and session), share `calls` calls.
/// `server`: the server's process id, to measure its CPU time over the timed calls.
pub(crate) async fn http_load(
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
    let samples = timed_calls!(connected, per_client, |client, k| client
        .call_in(mode, 1001 + k));
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
pub(crate) struct HttpServer(pub(crate) ServerProcess);

impl std::ops::Deref for HttpServer {
    type Target = ServerProcess;
    fn deref(&self) -> &ServerProcess {
        &self.0
    }
}

impl HttpServer {
    pub(crate) async fn start(target: Target, mode: HttpMode) -> Result<Self, String> {
        Self::spawn(target, &["http", mode.name()]).await
    }

    pub(crate) async fn spawn(target: Target, args: &[&str]) -> Result<Self, String> {
        let (program, mut all) = target.server()?;
        all.extend(args.iter().map(|a| (*a).to_owned()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        ServerProcess::spawn(&program, &all).await.map(Self)
    }

    /// The server's resident set size in KiB.
    pub(crate) fn rss_kib(&self) -> Result<f64, String> {
        self.0.status_field("VmRSS:")
    }

    pub(crate) async fn stop(self) -> Result<(), String> {
        self.0.stop().await
    }
}

pub(crate) async fn http(
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
