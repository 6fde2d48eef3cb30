//! A real `redis-server` for tests: started on a free loopback port with a temporary
//! directory and no persistence, ready once its log says so and it answers PING,
//! killed on drop. Starting one that cannot start fails loudly with the install
//! command; a test needing Redis is never skipped.
//!
//! Std only: the conformance runner's shared HTTP leg uses it, and modelctx-redis's
//! store tests include this same file (`#[path]`), so both start Redis one way.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// How long a server may take to say it is ready (and to answer PING).
const READY_WITHIN: Duration = Duration::from_secs(10);

/// A `redis-server` child process on 127.0.0.1, killed (and its directory removed) on
/// drop.
#[derive(Debug)]
pub(crate) struct RedisServer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

impl RedisServer {
    /// Starts a server.
    ///
    /// # Panics
    ///
    /// When none can be started (say `redis-server` is not installed), with what went
    /// wrong and the install command (`sh xtask/system/redis.sh`).
    pub(crate) fn start() -> Self {
        let mut last = String::new();
        // The free port is found by binding :0 and closing; another process may take it
        // before redis-server binds it, so a failure is retried.
        for _ in 0..3 {
            match Self::try_start() {
                Ok(server) => return server,
                Err(e) => last = e,
            }
        }
        panic!(
            "cannot start redis-server: {last}\n\
             install it with `sh xtask/system/redis.sh` (Debian's redis-server package)"
        );
    }

    /// Stops the server and starts a new one on the same port: what it held is gone
    /// (no persistence), as after a crash.
    ///
    /// # Panics
    ///
    /// When the new one cannot start.
    #[allow(
        dead_code,
        reason = "the Redis store tests restart theirs; the conformance leg does not"
    )]
    pub(crate) fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        let fresh = Self::try_start_on(self.port)
            .unwrap_or_else(|e| panic!("cannot restart redis-server: {e}"));
        *self = fresh;
    }

    /// Empties the server (`FLUSHALL`): what it held is gone, as after a restart, but
    /// the connections to it stay up.
    ///
    /// # Errors
    ///
    /// When the server does not answer `+OK`.
    #[allow(
        dead_code,
        reason = "the conformance leg empties its Redis; the Redis store tests restart theirs"
    )]
    pub(crate) fn flush(&self) -> Result<(), String> {
        self.command(b"FLUSHALL\r\n", b"+OK\r\n")
    }

    /// Its URL, `redis://127.0.0.1:<port>/`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
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
        server.ping()?;
        Ok(server)
    }

    /// PING in the inline form of the Redis protocol; `+PONG` is the answer.
    fn ping(&self) -> Result<(), String> {
        self.command(b"PING\r\n", b"+PONG\r\n")
    }

    /// Sends `command` (the inline form of the Redis protocol) and checks the answer is
    /// `expected`.
    fn command(&self, command: &[u8], expected: &[u8]) -> Result<(), String> {
        let name = String::from_utf8_lossy(command).trim().to_owned();
        let mut conn = TcpStream::connect(("127.0.0.1", self.port))
            .map_err(|e| format!("cannot connect: {e}"))?;
        conn.set_read_timeout(Some(READY_WITHIN))
            .and_then(|()| conn.set_write_timeout(Some(READY_WITHIN)))
            .and_then(|()| conn.write_all(command))
            .map_err(|e| format!("cannot send {name}: {e}"))?;
        let mut answer = vec![0u8; expected.len()];
        conn.read_exact(&mut answer)
            .map_err(|e| format!("no answer to {name}: {e}"))?;
        if answer != expected {
            return Err(format!(
                "{name} answered {:?}",
                String::from_utf8_lossy(&answer)
            ));
        }
        Ok(())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
