//! What the multi-instance tests share: `http-server --redis --access-log` processes on
//! the test kit's `redis-server`, a load balancer in front of them (the test kit's
//! round-robin forwarder, nginx or HAProxy), and the instances' access logs joined into
//! one log of which instance served what.
//!
//! Needs `redis-server` (`sh xtask/system/redis.sh`), nginx and HAProxy
//! (`sh xtask/system/balancers.sh`); fails, never skips, without them.

#![allow(dead_code, unreachable_pub)]

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

pub use modelctx_test::RedisServer;
use modelctx_test::round_robin::RoundRobin;
pub use modelctx_test::round_robin::{Served, served};
use modelctx_test::{Balancer, BalancerKind, within};

pub const WITHIN: Duration = Duration::from_secs(30);

/// What stands in front of the instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The test kit's round-robin forwarder.
    Forwarder,
    /// A real load balancer, with the test kit's configuration.
    Balancer(BalancerKind),
}

/// Runs a multi-instance test's body once behind each of the fronts listed, one
/// `#[tokio::test]` each: `behind!(name, body, nginx, haproxy)` makes `name::nginx` and
/// `name::haproxy` (the fronts are named by [`Front`]'s constructors);
/// `behind!(name, body)` runs it behind all three.
#[macro_export]
macro_rules! behind {
    ($name:ident, $body:ident) => {
        $crate::behind!($name, $body, forwarder, nginx, haproxy);
    };
    ($name:ident, $body:ident, $($front:ident),+) => {
        mod $name {
            use super::support::Front;

            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $front() {
                    super::$body(Front::$front()).await;
                }
            )+
        }
    };
}

impl Front {
    pub fn forwarder() -> Self {
        Front::Forwarder
    }

    pub fn nginx() -> Self {
        Front::Balancer(BalancerKind::Nginx)
    }

    pub fn haproxy() -> Self {
        Front::Balancer(BalancerKind::Haproxy)
    }
}

/// One `http-server --redis URL --port 0 --access-log` process; killed on drop.
pub struct Instance {
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Instance {
    /// Starts instance number `index`, its access log joining `log`.
    async fn start(
        redis: &RedisServer,
        index: usize,
        log: Arc<watch::Sender<Vec<Served>>>,
    ) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_http-server"))
            .args(["--redis", &redis.url(), "--port", "0", "--access-log"])
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
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(access) = line.strip_prefix("access: ") else {
                    continue;
                };
                let (http, method) = access.split_once(' ').unwrap_or((access, "-"));
                let method = if method == "-" { "" } else { method };
                log.send_modify(|log| log.push(Served::new(index, http, method)));
            }
        });
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

/// `count` instances on `redis` behind `front`.
pub struct Deployment {
    pub instances: Vec<Instance>,
    /// The MCP endpoint's URL, at the front.
    pub endpoint: String,
    /// Every request an instance served, as their access logs show them.
    pub seen: watch::Receiver<Vec<Served>>,
    /// The balancer in front, if it is one.
    pub balancer: Option<Balancer>,
}

impl Deployment {
    pub async fn start(redis: &RedisServer, front: Front, count: usize) -> Self {
        let (log, seen) = watch::channel(Vec::new());
        let log = Arc::new(log);
        let mut instances = Vec::with_capacity(count);
        for index in 0..count {
            instances.push(Instance::start(redis, index, log.clone()).await);
        }
        let origins: Vec<String> = instances.iter().map(|i| i.base.clone()).collect();
        let (origin, balancer) = match front {
            Front::Forwarder => {
                let forwarder = RoundRobin::new(origins, |_, _, _| {});
                (forwarder.serve().await, None)
            }
            Front::Balancer(kind) => {
                let addrs: Vec<std::net::SocketAddr> = origins
                    .iter()
                    .map(|o| o.trim_start_matches("http://").parse().unwrap())
                    .collect();
                let balancer = tokio::task::spawn_blocking(move || Balancer::start(kind, &addrs))
                    .await
                    .unwrap();
                (balancer.origin(), Some(balancer))
            }
        };
        Self {
            instances,
            endpoint: format!("{origin}/mcp"),
            seen,
            balancer,
        }
    }
}

/// Waits (within [`WITHIN`]) until the instances' access logs, joined, satisfy `done`
/// (each log is read on its own task: a line may come after what the client saw), and
/// returns them then.
pub async fn logged(
    seen: &mut watch::Receiver<Vec<Served>>,
    what: &str,
    done: impl FnMut(&Vec<Served>) -> bool,
) -> Vec<Served> {
    within(WITHIN, what, seen.wait_for(done))
        .await
        .expect("the access logs' sender lives as long as the deployment")
        .clone()
}

impl Deployment {
    /// A 2026-07-28 client that takes tasks, connected through the front.
    pub async fn connect_modern(&self) -> modelctx::client::Client {
        self.connect_modern_with(|client| client.tasks(modelctx::server::TaskConfig::new()))
            .await
    }

    /// A 2026-07-28 client as `configure` sets it up, connected through the front.
    pub async fn connect_modern_with(
        &self,
        configure: impl FnOnce(modelctx::client::ClientBuilder) -> modelctx::client::ClientBuilder,
    ) -> modelctx::client::Client {
        let transport = modelctx::http::StreamableHttpClientTransport::builder(&self.endpoint)
            .build()
            .unwrap();
        let client = modelctx::client::Client::builder("scale-out-test", "1.0.0")
            .mode(modelctx::client::ConnectMode::Discover);
        let client = configure(client).connect(transport);
        let client = within(WITHIN, "connect", client).await.unwrap();
        assert_eq!(client.protocol_version().as_str(), "2026-07-28");
        client
    }
}
