//! What the multi-instance tests share: `http-server --redis` processes on the test
//! kit's `redis-server`, and its round-robin load balancer in front of them.
//!
//! Needs `redis-server` (`sh xtask/system/redis.sh`); fails, never skips, without it.

#![allow(dead_code, unreachable_pub)]

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

pub use modelctx_test::RedisServer;
use modelctx_test::round_robin::RoundRobin;
pub use modelctx_test::round_robin::{Served, served};
use modelctx_test::within;

pub const WITHIN: Duration = Duration::from_secs(30);

/// One `http-server --redis URL --port 0` process; killed on drop.
pub struct Instance {
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Instance {
    pub async fn start(redis: &RedisServer) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_http-server"))
            .args(["--redis", &redis.url(), "--port", "0"])
            .env("MCP_STATE_KEY", "11".repeat(32))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("http-server runs");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = within(WITHIN, "the endpoint line", async {
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
        within(WITHIN, "http-server killed", self.child.wait())
            .await
            .unwrap();
    }
}

/// The load balancer in front of `backends` (the instances' origins): the test kit's
/// round-robin forwarder, every request to the next instance, answers streamed back, an
/// instance that refuses the connection (it stopped) skipped for the next one; answers
/// its MCP endpoint URL and its log.
pub async fn round_robin(backends: Vec<String>) -> (String, watch::Receiver<Vec<Served>>) {
    let (origin, log) = RoundRobin::serve_logged(backends).await;
    (format!("{origin}/mcp"), log)
}
