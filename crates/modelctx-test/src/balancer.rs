//! A real load balancer for tests: nginx or HAProxy, from the distribution's packages,
//! in front of several instances of a server, round robin with no affinity. Started on
//! a free loopback port with a configuration of its own (the files in this crate's
//! `balancers/` directory, which are also the deployment configurations the README
//! points to), ready once it accepts connections, killed on drop. Starting one that
//! cannot start fails loudly with the install command; a test needing it is never
//! skipped.
//!
//! Std only, like [`RedisServer`](crate::RedisServer); on an async runtime, start it on
//! a blocking thread when other tasks must go on meanwhile.
//!
//! ```no_run
//! use modelctx_test::{Balancer, BalancerKind};
//!
//! // Two instances listening already (their listeners bound, say).
//! let instances = ["127.0.0.1:8001".parse().unwrap(), "127.0.0.1:8002".parse().unwrap()];
//! let nginx = Balancer::start(BalancerKind::Nginx, &instances);
//! let url = format!("{}/mcp", nginx.origin()); // http://127.0.0.1:<port>/mcp
//! # drop(url);
//! ```

use std::fmt;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a balancer may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// How often a starting balancer is probed.
const PROBE_EVERY: Duration = Duration::from_millis(5);

/// Which load balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BalancerKind {
    /// nginx (Debian's `nginx` package), configured by `balancers/nginx.conf`.
    Nginx,
    /// HAProxy (Debian's `haproxy` package), configured by `balancers/haproxy.cfg`.
    Haproxy,
}

impl BalancerKind {
    /// Every balancer.
    pub const ALL: [BalancerKind; 2] = [BalancerKind::Nginx, BalancerKind::Haproxy];

    /// The executable looked up on `PATH`.
    pub const fn program(self) -> &'static str {
        match self {
            BalancerKind::Nginx => "nginx",
            BalancerKind::Haproxy => "haproxy",
        }
    }

    /// The configuration with its placeholders (`{{dir}}`, `{{listen}}`, `{{servers}}`).
    pub const fn template(self) -> &'static str {
        match self {
            BalancerKind::Nginx => include_str!("../balancers/nginx.conf"),
            BalancerKind::Haproxy => include_str!("../balancers/haproxy.cfg"),
        }
    }

    /// The configuration of a balancer listening on `listen`, in front of `backends`,
    /// keeping its files in `dir`.
    pub fn config(self, listen: SocketAddr, backends: &[SocketAddr], dir: &Path) -> String {
        let servers: Vec<String> = backends
            .iter()
            .enumerate()
            .map(|(i, backend)| match self {
                BalancerKind::Nginx => format!("        server {backend};"),
                BalancerKind::Haproxy => format!("    server instance{i} {backend}"),
            })
            .collect();
        self.template()
            .replace("{{dir}}", &dir.display().to_string())
            .replace("{{listen}}", &listen.to_string())
            .replace("{{servers}}", &servers.join("\n"))
    }

    fn file_name(self) -> &'static str {
        match self {
            BalancerKind::Nginx => "nginx.conf",
            BalancerKind::Haproxy => "haproxy.cfg",
        }
    }

    fn command(self, dir: &Path, config: &Path) -> Command {
        // Debian installs both in /usr/sbin, which a non-root PATH may lack.
        let sbin = Path::new("/usr/sbin").join(self.program());
        let on_path = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| dir.join(self.program()).is_file())
        });
        let mut command = if !on_path && sbin.is_file() {
            Command::new(sbin)
        } else {
            Command::new(self.program())
        };
        match self {
            BalancerKind::Nginx => {
                // `-e`: errors before the configuration's own log is open go there too,
                // not to the distribution's log directory. One process, no master: a
                // worker outlives a killed master and would go on serving the port.
                command
                    .args(["-g", "master_process off;"])
                    .arg("-p")
                    .arg(dir)
                    .arg("-e")
                    .arg(dir.join("error.log"))
                    .arg("-c")
                    .arg(config);
            }
            BalancerKind::Haproxy => {
                // `-db`: in the foreground, as the test's child.
                command.arg("-db").arg("-f").arg(config);
            }
        }
        command
    }
}

impl fmt::Display for BalancerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.program())
    }
}

/// A load balancer child process on 127.0.0.1, killed (and its directory removed) on
/// drop.
#[derive(Debug)]
pub struct Balancer {
    kind: BalancerKind,
    child: Child,
    dir: PathBuf,
    addr: SocketAddr,
}

impl Balancer {
    /// Starts `kind` in front of `backends`, which should be listening already (bound
    /// listeners are enough: a connection waits in their backlog until served).
    ///
    /// # Panics
    ///
    /// When none can be started (say the program is not on `PATH`), with what went
    /// wrong and how to install it.
    pub fn start(kind: BalancerKind, backends: &[SocketAddr]) -> Self {
        let mut last = String::new();
        // The free port is found by binding :0 and closing; another process may take it
        // before the balancer binds it, so a failure is retried.
        for _ in 0..3 {
            match Self::try_start(kind, backends) {
                Ok(balancer) => return balancer,
                Err(e) => last = e,
            }
        }
        panic!(
            "cannot start {kind}: {last}\n\
             install it: Debian's {kind} package (`apt-get install {kind}`; in the \
             modelctx repository, `sh xtask/system/balancers.sh`)"
        );
    }

    /// Kills the balancer (SIGKILL: every connection through it cut) and starts it again
    /// on the same port with the same configuration, as after a crash and a restart by
    /// its supervisor.
    ///
    /// # Panics
    ///
    /// When it cannot start again (its port taken meanwhile, say).
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = launch(self.kind, &self.dir)
            .unwrap_or_else(|e| panic!("cannot restart {}: {e}", self.kind));
        if let Err(e) = self.ready() {
            panic!("cannot restart {}: {e}\n{}", self.kind, self.logs());
        }
    }

    /// Which balancer it is.
    pub fn kind(&self) -> BalancerKind {
        self.kind
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its origin, `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it has written so far: its output, then its error log (nginx notes there,
    /// among others, each upstream it took out of the rotation), for a failure message.
    pub fn logs(&self) -> String {
        let logs: String = [self.dir.join(OUTPUT), self.dir.join("error.log")]
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .collect();
        logs.trim().to_owned()
    }

    fn try_start(kind: BalancerKind, backends: &[SocketAddr]) -> Result<Self, String> {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let started = STARTED.fetch_add(1, Ordering::Relaxed);
        let addr = crate::free_loopback_addr()?;
        let dir =
            std::env::temp_dir().join(format!("modelctx-{kind}-{}-{started}", std::process::id()));
        Self::spawn(kind, backends, addr, &dir).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&dir);
        })
    }

    fn spawn(
        kind: BalancerKind,
        backends: &[SocketAddr],
        addr: SocketAddr,
        dir: &Path,
    ) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // nginx started as root runs its worker as `nobody`, which writes its temporary
        // files here.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777));
        }
        let config = dir.join(kind.file_name());
        std::fs::write(&config, kind.config(addr, backends, dir))
            .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
        let child = launch(kind, dir)?;
        let mut balancer = Self {
            kind,
            child,
            dir: dir.to_owned(),
            addr,
        };
        match balancer.ready() {
            Ok(()) => Ok(balancer),
            Err(e) => {
                // Killed first, so that its logs are complete; dropping it removes them.
                let _ = balancer.child.kill();
                let _ = balancer.child.wait();
                Err(format!("{e}\n{}", balancer.logs()))
            }
        }
    }

    /// Waits until it accepts a connection on its port (it prints no readiness line),
    /// or exits, or [`READY_WITHIN`] passes.
    fn ready(&mut self) -> Result<(), String> {
        let start = Instant::now();
        loop {
            // A connection from the port to itself (Linux's simultaneous open when the
            // probe's own port is the one probed) does not count.
            let connected = TcpStream::connect_timeout(&self.addr, READY_WITHIN)
                .is_ok_and(|stream| stream.local_addr().ok() != stream.peer_addr().ok());
            if let Some(status) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Err(format!("{} exited ({status})", self.kind));
            }
            if connected {
                return Ok(());
            }
            if start.elapsed() > READY_WITHIN {
                return Err(format!(
                    "{} not listening on {} within {READY_WITHIN:?}",
                    self.kind, self.addr
                ));
            }
            std::thread::sleep(PROBE_EVERY);
        }
    }
}

/// The file in a balancer's directory that takes its standard output and error.
const OUTPUT: &str = "output.log";

/// Runs `kind` with the configuration written in `dir`, its output to [`OUTPUT`] there.
fn launch(kind: BalancerKind, dir: &Path) -> Result<Child, String> {
    let output = dir.join(OUTPUT);
    let log = std::fs::File::create(&output)
        .map_err(|e| format!("cannot create {}: {e}", output.display()))?;
    kind.command(dir, &dir.join(kind.file_name()))
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot run {kind}: {e}"))
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_configuration_lists_every_instance_and_keeps_no_placeholder() {
        let listen: SocketAddr = "127.0.0.1:9000".parse().unwrap();
        let backends: Vec<SocketAddr> = vec![
            "127.0.0.1:9001".parse().unwrap(),
            "127.0.0.1:9002".parse().unwrap(),
        ];
        for kind in BalancerKind::ALL {
            let config = kind.config(listen, &backends, Path::new("/tmp/lb"));
            assert!(!config.contains("{{"), "{kind}: {config}");
            assert!(config.contains("127.0.0.1:9000"), "{kind}");
            assert!(config.contains("127.0.0.1:9001"), "{kind}");
            assert!(config.contains("127.0.0.1:9002"), "{kind}");
            assert!(config.contains("/tmp/lb/"), "{kind}");
        }
    }

    /// An instance answering every request on a connection with its own number.
    fn instance(me: usize) -> SocketAddr {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut line = String::new();
                    loop {
                        line.clear();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if line == "\r\n" => {
                                let answer =
                                    format!("HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n{me}");
                                if conn.write_all(answer.as_bytes()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                        }
                    }
                });
            }
        });
        addr
    }

    /// Sends a GET to `addr` on a connection of its own; the body of the answer.
    fn get(addr: SocketAddr) -> String {
        use std::io::{Read, Write};
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(READY_WITHIN)).unwrap();
        conn.write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        answer.rsplit("\r\n\r\n").next().unwrap().to_owned()
    }

    #[test]
    fn each_balancer_sends_each_request_to_the_next_instance() {
        let backends = [instance(0), instance(1)];
        for kind in BalancerKind::ALL {
            let balancer = Balancer::start(kind, &backends);
            let answers: Vec<String> = (0..4).map(|_| get(balancer.addr())).collect();
            assert_ne!(answers[0], answers[1], "{kind}: {answers:?}");
            assert_eq!(answers[0], answers[2], "{kind}: {answers:?}");
            assert_eq!(answers[1], answers[3], "{kind}: {answers:?}");
        }
    }
}
