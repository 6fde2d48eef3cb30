//! Two `http-server` processes sharing one Redis (`--redis`) behind a round-robin load
//! balancer, run as a user would (README, "Several instances behind a load balancer"):
//! a 2026-07-28 client lists the tools and calls `countdown`, which outlasts its
//! synchronous window and becomes a task on one instance; the client follows it with
//! `tasks/get` on both instances until its result, read from Redis.
//!
//! Needs `redis-server` (`sh xtask/system/redis.sh`); fails, never skips, without it.

use std::net::TcpListener;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use modelctx::client::{Client, ConnectMode};
use modelctx::http::StreamableHttpClientTransport;
use modelctx::server::TaskConfig;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

const WITHIN: Duration = Duration::from_secs(30);

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WITHIN, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {WITHIN:?}"))
}

/// A `redis-server` on a free loopback port with a temporary directory; killed on drop.
struct Redis {
    _child: Child,
    dir: std::path::PathBuf,
    url: String,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn redis() -> Redis {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("modelctx-example-redis-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--loglevel", "notice"])
        .arg("--dir")
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run redis-server ({e}): install it with `sh xtask/system/redis.sh`")
        });
    let mut log = BufReader::new(child.stdout.take().unwrap()).lines();
    within("redis-server ready", async {
        while let Some(line) = log.next_line().await.unwrap() {
            if line.contains("Ready to accept connections") {
                return;
            }
        }
        panic!("redis-server exited before it was ready");
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = log.next_line().await {} });
    Redis {
        _child: child,
        dir,
        url: format!("redis://127.0.0.1:{port}/"),
    }
}

/// One `http-server --redis URL --port 0`; returns it and its base URL (from the
/// endpoint line it prints on stderr).
async fn instance(redis: &Redis) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_http-server"))
        .args(["--redis", &redis.url, "--port", "0"])
        .env("MCP_STATE_KEY", "11".repeat(32))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("http-server runs");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = within("the endpoint line", async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("MCP endpoint: ") {
                let url = rest.split_whitespace().next().unwrap();
                return url.trim_end_matches("/mcp").to_owned();
            }
        }
        panic!("http-server exited before it listened");
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, base)
}

/// The load balancer: every request to the next instance, answers streamed back; notes
/// (instance, `Mcp-Method`) per request.
struct RoundRobin {
    backends: Vec<String>,
    next: AtomicUsize,
    client: reqwest::Client,
    log: watch::Sender<Vec<(usize, String)>>,
}

async fn forward(State(lb): State<Arc<RoundRobin>>, request: Request) -> Response {
    let index = lb.next.fetch_add(1, Ordering::Relaxed) % lb.backends.len();
    let method = request
        .headers()
        .get("mcp-method")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path}", lb.backends[index]);
    let failed = || {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = axum::http::StatusCode::BAD_GATEWAY;
        response
    };
    let Ok(body) = axum::body::to_bytes(body, 8 << 20).await else {
        return failed();
    };
    let mut outbound = lb.client.request(parts.method, url).body(body);
    for (name, value) in &parts.headers {
        if name != axum::http::header::HOST && name != axum::http::header::CONTENT_LENGTH {
            outbound = outbound.header(name, value);
        }
    }
    lb.log.send_modify(|log| log.push((index, method)));
    let Ok(answer) = outbound.send().await else {
        return failed();
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != axum::http::header::TRANSFER_ENCODING
            && name != axum::http::header::CONTENT_LENGTH
        {
            response = response.header(name, value);
        }
    }
    response
        .body(Body::from_stream(answer.bytes_stream()))
        .unwrap_or_else(|_| failed())
}

fn served(log: &[(usize, String)], method: &str) -> Vec<usize> {
    log.iter()
        .filter(|(_, m)| m == method)
        .map(|(i, _)| *i)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_http_servers_share_one_redis_behind_a_round_robin_balancer() {
    let redis = redis().await;
    let (_a, a) = instance(&redis).await;
    let (_b, b) = instance(&redis).await;
    let (log, mut seen) = watch::channel(Vec::new());
    let lb = Arc::new(RoundRobin {
        backends: vec![a, b],
        next: AtomicUsize::new(0),
        client: reqwest::Client::new(),
        log,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = axum::Router::new().fallback(forward).with_state(lb);
    tokio::spawn(async move { axum::serve(listener, router).await });

    let transport = StreamableHttpClientTransport::builder(&endpoint)
        .build()
        .unwrap();
    let client = Client::builder("scale-out-test", "1.0.0")
        .mode(ConnectMode::Discover)
        .tasks(TaskConfig::new())
        .connect(transport);
    let client = within("connect", client).await.unwrap();
    assert_eq!(client.protocol_version().as_str(), "2026-07-28");
    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(tools[0].name, "countdown");

    let args = serde_json::json!({"from": 2}).as_object().unwrap().clone();
    let result = within("countdown", client.call_tool("countdown", args))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("liftoff"), "{result:?}");

    // The call became a task on one instance; the other answered tasks/get for it.
    let log = seen.borrow_and_update().clone();
    let calls = served(&log, "tools/call");
    assert_eq!(calls.len(), 1, "{log:?}");
    let polls = served(&log, "tasks/get");
    assert!(polls.contains(&(1 - calls[0])), "{log:?}");
    drop(client);
}
