//! A real `redis-server` for the tests: started on a free loopback port with a
//! temporary directory and no persistence, ready once it answers PING, killed on drop.
//! A test that cannot start one fails and says why; it is never skipped.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use redis::aio::ConnectionManager;

/// How long a server may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Every wait of a test on the stores.
pub(crate) const WITHIN: Duration = Duration::from_secs(10);

pub(crate) struct RedisServer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

impl RedisServer {
    /// Starts a server, or panics with what went wrong and how to fix it.
    pub(crate) fn start() -> Self {
        let mut last = String::new();
        // The free port is found by binding :0 and closing; another process may take it
        // before redis-server binds it, so a bind failure is retried.
        for _ in 0..3 {
            match Self::try_start() {
                Ok(server) => return server,
                Err(e) => last = e,
            }
        }
        panic!(
            "cannot start redis-server for this test: {last}\n\
             install it with `sh xtask/system/redis.sh` (Debian's redis-server package)"
        );
    }

    /// Stops the server and starts a new one on the same port: what it held is gone
    /// (no persistence), as after a crash.
    pub(crate) fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        let fresh = Self::try_start_on(self.port)
            .unwrap_or_else(|e| panic!("cannot restart redis-server: {e}"));
        *self = fresh;
    }

    fn try_start() -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        Self::try_start_on(port)
    }

    fn try_start_on(port: u16) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!(
            "modelctx-redis-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .args(["--loglevel", "notice", "--databases", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                let _ = std::fs::remove_dir_all(&dir);
                format!("cannot run redis-server: {e}")
            })?;
        // Ready when its log says so (or its stdout ends: it exited). Read on a thread
        // so the wait is bounded; the thread ends with the process's stdout.
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut log = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.contains("Ready to accept connections") {
                    let _ = tx.send(Ok(()));
                    // Keep draining so the server never blocks on a full pipe.
                    continue;
                }
                log.push(line);
            }
            let _ = tx.send(Err(log.join("\n")));
        });
        let server = Self { child, dir, port };
        match rx.recv_timeout(READY_WITHIN) {
            Ok(Ok(())) => {}
            Ok(Err(log)) => return Err(format!("redis-server exited:\n{log}")),
            Err(_) => return Err(format!("redis-server not ready within {READY_WITHIN:?}")),
        }
        // And it answers.
        let client = redis::Client::open(server.url()).map_err(|e| e.to_string())?;
        let mut conn = client
            .get_connection_with_timeout(READY_WITHIN)
            .map_err(|e| format!("cannot connect: {e}"))?;
        let pong: String = redis::cmd("PING")
            .query(&mut conn)
            .map_err(|e| format!("no answer to PING: {e}"))?;
        if pong != "PONG" {
            return Err(format!("PING answered {pong:?}"));
        }
        Ok(server)
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A fresh reconnecting connection.
    pub(crate) async fn connection(&self) -> ConnectionManager {
        tokio::time::timeout(WITHIN, modelctx_redis::connect(&self.url()))
            .await
            .expect("connecting timed out")
            .expect("cannot connect to the test's redis-server")
    }

    /// Every key, sorted.
    pub(crate) async fn keys(&self) -> Vec<String> {
        let mut conn = self.connection().await;
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut conn)
            .await
            .expect("KEYS");
        keys.sort();
        keys
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
