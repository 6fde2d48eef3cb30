//! Scale-out: the in-memory against the Redis stores, and one instance against two.

use std::process::Stdio;
use std::time::Instant;

use modelctx_bench::stats::Latencies;
use modelctx_bench::{HttpMode, wire};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use modelctx_test::{Balancer, BalancerKind};

use crate::http::{HttpClient, HttpServer, check_echo, first_message, http_load};
use crate::{Figures, HTTP_CLIENTS, Target, WAIT};

/// A `redis-server` for one run: a free loopback port, a temporary directory, no
/// persistence; killed when dropped.
pub(crate) struct RedisChild {
    pub(crate) child: Child,
    pub(crate) dir: std::path::PathBuf,
    pub(crate) url: String,
}

impl RedisChild {
    pub(crate) async fn start() -> Result<Self, String> {
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
                    "this scenario needs redis-server ({e}); install it with `sh xtask/system/redis.sh`"
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
pub(crate) async fn scale_server(redis: Option<&RedisChild>) -> Result<HttpServer, String> {
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
pub(crate) async fn scale_stores(variant: &str, calls: usize) -> Result<Figures, String> {
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
    pub(crate) async fn connect_tasks(addr: &str) -> Result<Self, String> {
        let mut client = Self::open(addr).await?;
        client.version = wire::PROTOCOL_TASKS;
        client
            .handshake_with(wire::initialize_tasks(), HttpMode::Stateful)
            .await?;
        Ok(client)
    }

    /// A task-augmented echo call (request `id`), then `tasks/result` (request `id + 1`)
    /// for the task it created, checked.
    pub(crate) async fn task_round(&mut self, id: u64) -> Result<(), String> {
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
pub(crate) async fn task_load(
    addr: &str,
    clients: usize,
    calls: usize,
) -> Result<(Latencies, f64), String> {
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
    let samples = timed_calls!(connected, per_client, |client, k| client
        .task_round(100_002 + 2 * k));
    let rate = (per_client * clients) as f64 / start.elapsed().as_secs_f64();
    Ok((Latencies::from_durations(&samples), rate))
}

/// One instance (`one`), two sharing one Redis (`two`), or two behind nginx or HAProxy
/// (`nginx`, `haproxy`, with the test kit's configuration), all with the Redis stores,
/// called with 2026-07-28 JSON echo calls by 32 clients: without a balancer each holds
/// one connection per instance slot (two to the one instance, or one to each) and sends
/// every call to the next; behind one, each holds one connection to it, which balances
/// every call.
pub(crate) async fn scale_instances(variant: &str, calls: usize) -> Result<Figures, String> {
    let redis = RedisChild::start().await?;
    let first = scale_server(Some(&redis)).await?;
    let (second, kind) = match variant {
        "one" => (None, None),
        "two" => (Some(scale_server(Some(&redis)).await?), None),
        "nginx" => (
            Some(scale_server(Some(&redis)).await?),
            Some(BalancerKind::Nginx),
        ),
        "haproxy" => (
            Some(scale_server(Some(&redis)).await?),
            Some(BalancerKind::Haproxy),
        ),
        other => {
            return Err(format!(
                "unknown instances {other:?} (one, two, nginx or haproxy)"
            ));
        }
    };
    let balancer = match (kind, &second) {
        (Some(kind), Some(second)) => {
            let upstreams = [first.addr.clone(), second.addr.clone()]
                .iter()
                .map(|a| a.parse().map_err(|e| format!("{a}: {e}")))
                .collect::<Result<Vec<std::net::SocketAddr>, String>>()?;
            // It panics with what went wrong and how to install it (printed above).
            let started = tokio::task::spawn_blocking(move || Balancer::start(kind, &upstreams))
                .await
                .map_err(|e| format!("{kind} did not start: {e}"))?;
            Some(started)
        }
        _ => None,
    };
    let addrs: Vec<String> = match (&balancer, &second) {
        (Some(balancer), _) => vec![balancer.addr().to_string()],
        (None, second) => vec![
            first.addr.clone(),
            second
                .as_ref()
                .map_or(first.addr.clone(), |s| s.addr.clone()),
        ],
    };
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
    // Each client sends every call to the next of its connections.
    let samples = timed_calls!(connected, per_client, |pair, k| {
        let slots = pair.len() as u64;
        pair[(k % slots) as usize].call(1000 + k)
    });
    let rate = (per_client * HTTP_CLIENTS) as f64 / start.elapsed().as_secs_f64();
    let latencies = Latencies::from_durations(&samples);
    drop(balancer);
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
