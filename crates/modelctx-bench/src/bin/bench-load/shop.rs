//! The public benchmark's workload, reproduced: its shop tools over a real
//! `redis-server` and a small HTTP API, called in whole sessions by 50 workers.

use std::time::{Duration, Instant};

use modelctx_bench::process::{ServerProcess, cpu_time};
use modelctx_bench::stats::Latencies;
use modelctx_bench::{HttpMode, shop, wire};
use serde_json::{Value, json};

use crate::http::{HttpClient, HttpServer, first_message};
use crate::scale::RedisChild;
use crate::whole::WORKERS;
use crate::{Figures, Target};

/// The version the workload's clients initialize at.
const VERSION: &str = "2024-11-05";
/// A worker's pause after each iteration (the public benchmark's think time).
const THINK: Duration = Duration::from_millis(50);
/// Sessions per iteration: one per tool, then one that lists the tools.
const SESSIONS: usize = 4;

/// The two phases, with the names of their figures: the public benchmark's (50 ms of
/// think time after each iteration), then the same without a pause (the machine
/// saturated: what each server costs shows in the rate).
const PHASES: [(Duration, [&str; 7]); 2] = [
    (
        THINK,
        [
            "requests_per_s",
            "call_p50_us",
            "call_p95_us",
            "call_p99_us",
            "session_p99_us",
            "server_cpu_us_per_request",
            "server_rss_kib",
        ],
    ),
    (
        Duration::ZERO,
        [
            "saturated_requests_per_s",
            "saturated_call_p50_us",
            "saturated_call_p95_us",
            "saturated_call_p99_us",
            "saturated_session_p99_us",
            "saturated_server_cpu_us_per_request",
            "saturated_server_rss_kib",
        ],
    ),
];

/// What one worker measured.
#[derive(Default)]
struct Samples {
    /// Each `tools/call`, from its POST to its answer.
    calls: Vec<Duration>,
    /// Each whole session, from `initialize` to its end.
    sessions: Vec<Duration>,
    /// Requests answered: `initialize`, `tools/call` and `tools/list` (not the
    /// notification nor a `DELETE`), as the public benchmark counts them.
    requests: usize,
}

/// Starts Redis (seeded), the API and the `target` server; 50 workers (user
/// `user-00001` to `user-00050`, one keep-alive connection each) repeat the iteration
/// `calls / 200` times each: a whole session per tool (`search_products`,
/// `get_user_cart`, `checkout`) and one for `tools/list`, each `initialize` (2024-11-05),
/// `notifications/initialized`, the request, and `DELETE` when the server gave a session
/// id; then 50 ms of think time; then the same again without the pause. Every answer is
/// checked. Figures per phase: requests per second, call latency, session p99, the
/// server's CPU per request and its memory.
pub(crate) async fn shop(target: Target, calls: usize) -> Result<Figures, String> {
    if !matches!(target, Target::Modelctx | Target::Rmcp) {
        return Err("the shop workload runs modelctx and rmcp (its tools are Rust code)".into());
    }
    let redis = RedisChild::start().await?;
    shop::seed(&redis.url).await?;
    let api_exe = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .with_file_name(format!("bench-shop-api{}", std::env::consts::EXE_SUFFIX));
    let api = ServerProcess::spawn(&api_exe, &[]).await?;
    let server = HttpServer::spawn(target, &["shop", &redis.url, &api.addr]).await?;
    let pid = server.pid();
    let iterations = (calls / (WORKERS * SESSIONS)).max(1);
    let mut workers = Vec::with_capacity(WORKERS);
    for worker in 1..=WORKERS {
        let mut client = HttpClient::open(&server.addr).await?;
        client.version = VERSION;
        let user = shop::user(worker);
        // One iteration per connection first, untimed: the connections (the server's
        // to Redis and the API too) and the first use of each path are not the workload.
        iteration(&mut client, &user, &mut Samples::default()).await?;
        workers.push((client, user));
    }
    let mut figures = Vec::new();
    for (think, names) in PHASES {
        let (all, elapsed, cpu) = phase(pid, &mut workers, iterations, think).await?;
        let requests = all.requests as f64;
        let calls = Latencies::from_durations(&all.calls);
        let sessions = Latencies::from_durations(&all.sessions);
        figures.extend([
            (names[0], requests / elapsed.as_secs_f64()),
            (names[1], calls.percentile(50.0)),
            (names[2], calls.percentile(95.0)),
            (names[3], calls.percentile(99.0)),
            (names[4], sessions.percentile(99.0)),
            (names[5], cpu.as_secs_f64() * 1e6 / requests),
            (names[6], server.rss_kib()?),
        ]);
    }
    figures.push(("server_peak_rss_kib", server.status_field("VmHWM:")?));
    server.stop().await?;
    api.stop().await?;
    drop(redis);
    Ok(figures)
}

/// Every worker runs `iterations` iterations, pausing `think` after each; returns the
/// samples, the time it took and the server's CPU time meanwhile.
async fn phase(
    pid: u32,
    workers: &mut Vec<(HttpClient, String)>,
    iterations: usize,
    think: Duration,
) -> Result<(Samples, Duration, Duration), String> {
    let cpu_before = cpu_time(Some(pid))?;
    let start = Instant::now();
    let tasks: Vec<_> = workers
        .drain(..)
        .map(|(mut client, user)| {
            tokio::spawn(async move {
                let mut samples = Samples::default();
                for _ in 0..iterations {
                    iteration(&mut client, &user, &mut samples).await?;
                    if !think.is_zero() {
                        tokio::time::sleep(think).await;
                    }
                }
                Ok::<_, String>((client, user, samples))
            })
        })
        .collect();
    let mut all = Samples::default();
    for task in tasks {
        let (client, user, samples) = task.await.map_err(|e| e.to_string())??;
        workers.push((client, user));
        all.calls.extend(samples.calls);
        all.sessions.extend(samples.sessions);
        all.requests += samples.requests;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time(Some(pid))?.saturating_sub(cpu_before);
    Ok((all, elapsed, cpu))
}

/// One iteration of a worker: a whole session per tool, then one listing the tools.
async fn iteration(
    client: &mut HttpClient,
    user: &str,
    samples: &mut Samples,
) -> Result<(), String> {
    for tool in shop::tools().map(|(name, ..)| name) {
        let call = json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": shop::arguments(tool, user)}
        });
        let begin = Instant::now();
        let took = session(client, call.to_string(), |result| {
            if result["isError"] == true {
                return Err(format!("{tool} failed: {result}"));
            }
            let text = result["content"][0]["text"]
                .as_str()
                .ok_or_else(|| format!("{tool} answered no text: {result}"))?;
            let answer: Value = serde_json::from_str(text).map_err(|e| format!("{tool}: {e}"))?;
            shop::check(tool, &answer)
        })
        .await?;
        samples.calls.push(took);
        samples.sessions.push(begin.elapsed());
    }
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.to_owned();
    let begin = Instant::now();
    session(client, list, |result| match result["tools"].as_array() {
        Some(tools) if tools.len() == 3 => Ok(()),
        _ => Err(format!("tools/list answered {result}")),
    })
    .await?;
    samples.sessions.push(begin.elapsed());
    samples.requests += 2 * SESSIONS;
    Ok(())
}

/// One whole session sending `request` (id 2); `check` reads its result. Returns how
/// long the request took.
async fn session(
    client: &mut HttpClient,
    request: String,
    check: impl FnOnce(&Value) -> Result<(), String>,
) -> Result<Duration, String> {
    client.session = None;
    client
        .handshake_with(wire::initialize_at(VERSION), HttpMode::Json)
        .await?;
    let begin = Instant::now();
    let (status, _, body) = client.post(request).await?;
    let took = begin.elapsed();
    if status != hyper::StatusCode::OK {
        return Err(format!("the request answered {status}: {body}"));
    }
    let message: Value = serde_json::from_str(first_message(&body)?).map_err(|e| e.to_string())?;
    if message["id"] != 2 {
        return Err(format!("expected answer 2, got {message}"));
    }
    check(&message["result"])?;
    if client.session.is_some() {
        let status = client.delete().await?;
        if !status.is_success() {
            return Err(format!("DELETE answered {status}"));
        }
    }
    Ok(took)
}
