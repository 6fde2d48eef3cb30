//! What the multi-instance tests share: a `redis-server` in a temporary directory,
//! `http-server --redis` processes, and a round-robin load balancer in front of them.
//!
//! Needs `redis-server` (`sh xtask/system/redis.sh`); fails, never skips, without it.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

#[path = "../../../conformance/src/round_robin.rs"]
mod round_robin;

use round_robin::RoundRobin;

pub const WITHIN: Duration = Duration::from_secs(30);

pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WITHIN, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {WITHIN:?}"))
}

/// A `redis-server` on a free loopback port with a temporary directory; killed on drop.
pub struct Redis {
    child: Option<Child>,
    dir: PathBuf,
    port: u16,
    persistent: bool,
    pub url: String,
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Redis {
    /// Starts one; `persistent`: every write goes to an append-only file in its
    /// directory (synced at once), so a restart finds what was written.
    pub async fn start(persistent: bool) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!(
            "modelctx-example-redis-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis = Self {
            child: None,
            dir,
            port,
            persistent,
            url: format!("redis://127.0.0.1:{port}/"),
        };
        redis.spawn().await;
        redis
    }

    async fn spawn(&mut self) {
        let persistence: &[&str] = if self.persistent {
            &[
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ]
        } else {
            &["--save", "", "--appendonly", "no"]
        };
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(persistence)
            .args(["--loglevel", "notice"])
            .arg("--dir")
            .arg(&self.dir)
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
        self.child = Some(child);
    }

    /// Kills it (SIGKILL: nothing saved at the end) and starts it again on the same
    /// port and directory.
    pub async fn restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.start_kill().unwrap();
            within("redis-server killed", child.wait()).await.unwrap();
        }
        self.spawn().await;
    }
}

/// One `http-server --redis URL --port 0` process; killed on drop.
pub struct Instance {
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Instance {
    pub async fn start(redis: &Redis) -> Self {
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
        Self { child, base }
    }

    /// SIGKILL: the process ends in the middle of whatever it was doing.
    pub async fn kill(&mut self) {
        self.child.start_kill().unwrap();
        within("http-server killed", self.child.wait())
            .await
            .unwrap();
    }
}

/// What the load balancer noted of one request: the instance that served it, the HTTP
/// method and `Mcp-Method`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub instance: usize,
    pub http: String,
    pub method: String,
}

/// The load balancer in front of `backends` (the instances' origins), every request
/// to the next instance, answers streamed back, an instance that refuses the connection
/// (it stopped) skipped for the next one (the conformance suite's forwarder,
/// `conformance/src/round_robin.rs`); answers its MCP endpoint URL and its log.
pub async fn round_robin(backends: Vec<String>) -> (String, watch::Receiver<Vec<Served>>) {
    let (log, seen) = watch::channel(Vec::new());
    let balancer = RoundRobin::new(backends, move |instance, request, body| {
        // `Mcp-Method` (2026-07-28), else the body's.
        let method = request
            .headers
            .get("mcp-method")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| {
                let message: serde_json::Value = serde_json::from_slice(body).ok()?;
                Some(message.get("method")?.as_str()?.to_owned())
            })
            .unwrap_or_default();
        log.send_modify(|log| {
            log.push(Served {
                instance,
                http: request.method.to_string(),
                method,
            });
        });
    });
    (format!("{}/mcp", balancer.serve().await), seen)
}

/// The instances that served `method` (`Mcp-Method`), in order.
pub fn served(log: &[Served], method: &str) -> Vec<usize> {
    log.iter()
        .filter(|s| s.method == method)
        .map(|s| s.instance)
        .collect()
}
