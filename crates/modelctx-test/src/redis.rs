//! A real `redis-server` for tests: started on a free loopback port with a temporary
//! directory and no persistence, ready once its log says so and it answers PING,
//! killed on drop. Starting one that cannot start fails loudly with the install
//! command; a test needing Redis is never skipped.
//!
//! Std only, so that a test on any runtime (or none) starts one the same way; on an
//! async runtime, start it on a blocking thread when other tasks must go on meanwhile.
//!
//! ```no_run
//! use modelctx_test::RedisServer;
//!
//! let redis = RedisServer::start();
//! let url = redis.url(); // redis://127.0.0.1:<port>/
//! # drop(url);
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a server may take to say it is ready (and to answer PING).
const READY_WITHIN: Duration = Duration::from_secs(10);

/// A `redis-server` child process on 127.0.0.1, killed (and its directory removed) on
/// drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    dir: PathBuf,
    port: u16,
    persistent: bool,
}

impl RedisServer {
    /// Starts a server.
    ///
    /// # Panics
    ///
    /// When none can be started (say `redis-server` is not on `PATH`), with what went
    /// wrong and how to install it.
    pub fn start() -> Self {
        Self::start_with(false)
    }

    /// Starts a server that writes every change to an append-only file in its directory
    /// (synced at once), so that [`restart`](Self::restart) finds what was written, as
    /// a Redis with persistence does after a crash.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_persistent() -> Self {
        Self::start_with(true)
    }

    fn start_with(persistent: bool) -> Self {
        let mut last = String::new();
        // The free port is found by binding :0 and closing; another process may take it
        // before redis-server binds it, so a failure is retried.
        for _ in 0..3 {
            match Self::try_start(persistent) {
                Ok(server) => return server,
                Err(e) => last = e,
            }
        }
        panic!(
            "cannot start redis-server: {last}\n\
             install it: Debian's redis-server package (`apt-get install redis-server`; \
             in the modelctx repository, `sh xtask/system/redis.sh`)"
        );
    }

    /// Kills the server (SIGKILL: nothing saved at the end) and starts a new one on the
    /// same port: what it held is gone, as after a crash, unless it was started
    /// [persistent](Self::start_persistent), when the new one reads its append-only file.
    ///
    /// # Panics
    ///
    /// When the new one cannot start.
    pub fn restart(&mut self) {
        self.kill();
        self.start_again();
    }

    /// Kills the server (SIGKILL: nothing saved at the end): connections to it break,
    /// and new ones are refused until [`start_again`](Self::start_again).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts a new server on the port of a [killed](Self::kill) one: what the old one
    /// held is gone, unless it was started [persistent](Self::start_persistent), when
    /// the new one reads its append-only file.
    ///
    /// # Panics
    ///
    /// When the new one cannot start.
    pub fn start_again(&mut self) {
        if !self.persistent {
            let _ = std::fs::remove_dir_all(&self.dir);
            let _ = std::fs::create_dir_all(&self.dir);
        }
        self.child = spawn(self.port, &self.dir, self.persistent)
            .unwrap_or_else(|e| panic!("cannot restart redis-server: {e}"));
    }

    /// Stops the server without ending it (SIGSTOP): connections stay open and nothing
    /// is answered, as when Redis stalls, until [`resume`](Self::resume).
    ///
    /// # Panics
    ///
    /// When the signal cannot be sent (the `kill` program is missing, say).
    pub fn pause(&self) {
        signal(&self.child, "-STOP");
    }

    /// Lets a [paused](Self::pause) server go on (SIGCONT): it answers what waited.
    ///
    /// # Panics
    ///
    /// As [`pause`](Self::pause).
    pub fn resume(&self) {
        signal(&self.child, "-CONT");
    }

    /// Empties the server (`FLUSHALL`): what it held is gone, as after a restart, but
    /// the connections to it stay up.
    ///
    /// # Errors
    ///
    /// When the server does not answer `+OK`.
    pub fn flush(&self) -> Result<(), String> {
        command(self.port, b"FLUSHALL\r\n", b"+OK\r\n")
    }

    /// Its URL, `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn try_start(persistent: bool) -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        Self::try_start_on(port, persistent)
    }

    fn try_start_on(port: u16, persistent: bool) -> Result<Self, String> {
        // One directory per port: a persistent server's restart finds its file there.
        let dir =
            std::env::temp_dir().join(format!("modelctx-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let child = spawn(port, &dir, persistent).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&dir);
        })?;
        Ok(Self {
            child,
            dir,
            port,
            persistent,
        })
    }
}

/// Sends `child` a signal with the `kill` program (std has no signals but SIGKILL).
fn signal(child: &Child, which: &str) {
    let status = Command::new("kill")
        .args([which, &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("cannot run kill {which}: {e}"));
    assert!(status.success(), "kill {which} failed ({status})");
}

/// Runs `redis-server` on `port` with its files in `dir`; the child once its log says it
/// is ready and it answers PING.
fn spawn(port: u16, dir: &Path, persistent: bool) -> Result<Child, String> {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(if persistent {
            [
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ]
            .as_slice()
        } else {
            ["--save", "", "--appendonly", "no"].as_slice()
        })
        .arg("--dir")
        .arg(dir)
        .args(["--loglevel", "notice", "--databases", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run redis-server: {e}"))?;
    // Ready when its log says so (or its stdout ends: it exited). Read on a thread so
    // the wait is bounded; the thread ends with the process's stdout.
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
    let ready = match rx.recv_timeout(READY_WITHIN) {
        Ok(Ok(())) => command(port, b"PING\r\n", b"+PONG\r\n"),
        Ok(Err(log)) => Err(format!("redis-server exited:\n{log}")),
        Err(_) => Err(format!("redis-server not ready within {READY_WITHIN:?}")),
    };
    if let Err(e) = ready {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(child)
}

/// Sends `command` (the inline form of the Redis protocol) to the server on `port` and
/// checks the answer is `expected`.
fn command(port: u16, command: &[u8], expected: &[u8]) -> Result<(), String> {
    let name = String::from_utf8_lossy(command).trim().to_owned();
    let mut conn =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("cannot connect: {e}"))?;
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

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
