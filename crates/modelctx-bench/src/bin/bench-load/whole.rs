//! Whole sessions: the pattern of the public cross-language MCP benchmark, where every
//! tool call is its own session.

use std::time::{Duration, Instant};

use modelctx_bench::HttpMode;
use modelctx_bench::process::cpu_time;
use modelctx_bench::stats::Latencies;
use modelctx_bench::wire;

use crate::http::{HttpClient, HttpServer};
use crate::{Figures, Target};

/// Workers opening sessions at once (the public benchmark's virtual users).
pub(crate) const WORKERS: usize = 50;

/// The handshake versions a whole session is opened at, with the prefix of their figures.
const VERSIONS: [(&str, [&str; 6]); 2] = [
    (
        "2024-11-05",
        [
            "v2024_sessions_per_s",
            "v2024_session_p50_us",
            "v2024_session_p99_us",
            "v2024_call_p50_us",
            "v2024_call_p99_us",
            "v2024_server_cpu_us_per_session",
        ],
    ),
    (
        "2025-11-25",
        [
            "v2025_sessions_per_s",
            "v2025_session_p50_us",
            "v2025_session_p99_us",
            "v2025_call_p50_us",
            "v2025_call_p99_us",
            "v2025_server_cpu_us_per_session",
        ],
    ),
];

/// For each handshake version, 50 workers (one keep-alive connection each) share
/// `calls` whole sessions: `initialize`, `notifications/initialized`, one echo
/// `tools/call`, `DELETE`. Figures: sessions per second, the latency of a whole session
/// and of its call, and the server's CPU time per session.
///
/// A warm-up at every version comes first, untimed (a quarter of the work, one session
/// per worker at least): the connections and the server's first use of each path (a
/// JIT's, for the peers that have one) are not what a session costs, and the version
/// timed first would otherwise pay for them.
///
/// `clients`: the number of workers, when not 50; `only`: the one version to run.
pub(crate) async fn whole(
    target: Target,
    calls: usize,
    clients: Option<usize>,
    only: Option<&str>,
) -> Result<Figures, String> {
    let versions: Vec<_> = VERSIONS
        .iter()
        .filter(|(version, _)| only.is_none_or(|v| v == *version))
        .collect();
    if versions.is_empty() {
        return Err(format!("unknown handshake version {only:?}"));
    }
    let count = clients.unwrap_or(WORKERS);
    let server = HttpServer::start(target, HttpMode::Stateful).await?;
    let pid = server.pid();
    let per_worker = (calls / count).max(1);
    let mut workers = Vec::with_capacity(count);
    for _ in 0..count {
        workers.push(HttpClient::open(&server.addr).await?);
    }
    for (version, _) in &versions {
        workers = phase(workers, version, (per_worker / 4).max(1)).await?.0;
    }
    let mut figures = Vec::new();
    for &&(version, names) in &versions {
        let cpu_before = cpu_time(Some(pid))?;
        let start = Instant::now();
        let (back, sessions, call_times) = phase(workers, version, per_worker).await?;
        workers = back;
        let elapsed = start.elapsed();
        let cpu = cpu_time(Some(pid))?.saturating_sub(cpu_before);
        let done = sessions.len() as f64;
        let sessions = Latencies::from_durations(&sessions);
        let call_times = Latencies::from_durations(&call_times);
        figures.extend([
            (names[0], done / elapsed.as_secs_f64()),
            (names[1], sessions.percentile(50.0)),
            (names[2], sessions.percentile(99.0)),
            (names[3], call_times.percentile(50.0)),
            (names[4], call_times.percentile(99.0)),
            (names[5], cpu.as_secs_f64() * 1e6 / done),
        ]);
    }
    server.stop().await?;
    Ok(figures)
}

/// What a phase gives back: the workers' clients, then each whole session's latency and
/// each call's.
type Phase = (Vec<HttpClient>, Vec<Duration>, Vec<Duration>);

/// Every worker opens `per_worker` whole sessions at `version`, all workers at once.
async fn phase(
    workers: Vec<HttpClient>,
    version: &'static str,
    per_worker: usize,
) -> Result<Phase, String> {
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                client.version = version;
                let mut sessions = Vec::with_capacity(per_worker);
                let mut calls = Vec::with_capacity(per_worker);
                for _ in 0..per_worker {
                    let begin = Instant::now();
                    calls.push(one_session(&mut client).await?);
                    sessions.push(begin.elapsed());
                }
                Ok::<_, String>((client, sessions, calls))
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(tasks.len());
    let mut sessions = Vec::with_capacity(per_worker * tasks.len());
    let mut calls = Vec::with_capacity(per_worker * tasks.len());
    for task in tasks {
        let (client, s, c) = task.await.map_err(|e| e.to_string())??;
        clients.push(client);
        sessions.extend(s);
        calls.extend(c);
    }
    Ok((clients, sessions, calls))
}

/// One whole session on `client`'s connection, at its version; returns how long its call
/// took.
async fn one_session(client: &mut HttpClient) -> Result<Duration, String> {
    client.session = None;
    client
        .handshake_with(wire::initialize_at(client.version), HttpMode::Stateful)
        .await?;
    let begin = Instant::now();
    client.call(1).await?;
    let call = begin.elapsed();
    let status = client.delete().await?;
    if !status.is_success() {
        return Err(format!("DELETE answered {status}"));
    }
    Ok(call)
}
