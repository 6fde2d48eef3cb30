//! Child processes of a run: servers on free loopback ports, logged runs, clean-up.

use std::fs::File;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::{Paths, STARTUP_LIMIT};

/// Starts `conformance-server` (one endpoint serving both eras; the
/// 2026-07-28 era is still behind that switch) on a free loopback port, its
/// stderr in `logs/<log_name>`, and waits until it listens; returns it (killed when
/// dropped) and its URL.
pub(super) fn start_both_eras_server(
    paths: &Paths,
    log_name: &str,
) -> Result<(KillOnDrop, String), String> {
    let mut server = Command::new(paths.bin.join("conformance-server"));
    server.arg("--port");
    start_http(paths, server, log_name)
}

/// Starts `server` with a free loopback port as its last argument, its output in
/// `logs/<log_name>`, and waits until it listens; returns it (killed when dropped) and
/// its URL.
pub(super) fn start_http(
    paths: &Paths,
    server: Command,
    log_name: &str,
) -> Result<(KillOnDrop, String), String> {
    let log = paths.logs.join(log_name);
    let (child, [port]) = start_listening(
        |[port]| {
            let stderr =
                File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
            let child = copy_of(&server)
                .arg(port.to_string())
                .current_dir(&paths.tools)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .map_err(|e| format!("cannot start {log_name}: {e}"))?;
            Ok(KillOnDrop(child))
        },
        |e| e,
    )?;
    Ok((child, format!("http://127.0.0.1:{port}/mcp")))
}

/// How many times in all a server that exits before it listens is started.
const START_ATTEMPTS: usize = 3;

/// Starts a server on `N` free loopback ports (`spawn(ports)`) and waits until it listens
/// on each; returns it (killed when dropped) and its ports. A port found free may be taken
/// before the child binds it (the kernel may hand it to an outgoing connection meanwhile):
/// a server that exits before it listens is started again on other ports, up to
/// [`START_ATTEMPTS`] times in all. `fail` turns a port or wait error into the caller's.
pub(crate) fn start_listening<const N: usize, E>(
    mut spawn: impl FnMut([u16; N]) -> Result<KillOnDrop, E>,
    fail: impl Fn(String) -> E,
) -> Result<(KillOnDrop, [u16; N]), E> {
    let mut attempt = 1;
    loop {
        let ports = free_ports::<N>().map_err(&fail)?;
        let mut server = spawn(ports)?;
        let listening = ports
            .iter()
            .try_for_each(|&port| wait_listening(&mut server.0, port));
        match listening {
            Ok(()) => return Ok((server, ports)),
            Err(e @ NotListening::Exited(_)) if attempt < START_ATTEMPTS => {
                eprintln!("== a server did not listen on {ports:?} ({e}); starting it on others");
                attempt += 1;
            }
            Err(e) => return Err(fail(e.to_string())),
        }
    }
}

/// A copy of `command`: its program, arguments, environment and folder.
fn copy_of(command: &Command) -> Command {
    let mut copy = Command::new(command.get_program());
    copy.args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => copy.env(key, value),
            None => copy.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        copy.current_dir(dir);
    }
    copy
}

/// Runs `command` in the tools folder with its output in `logs/<log_name>`, within
/// `limit`; returns its exit status and output.
pub(super) fn run_logged(
    paths: &Paths,
    command: &mut Command,
    log_name: &str,
    limit: Duration,
) -> Result<(ExitStatus, String), String> {
    let log = paths.logs.join(log_name);
    let out = File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", log.display()))?;
    command
        // The suite writes its results under its working directory: keep them ignored.
        .current_dir(&paths.tools)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {log_name}: {e}"))?;
    let mut child = KillOnDrop(child);
    let status = wait_within(&mut child, log_name, limit, &log)?;
    let mut output = String::new();
    File::open(&log)
        .and_then(|mut f| f.read_to_string(&mut output))
        .map_err(|e| format!("cannot read {}: {e}", log.display()))?;
    Ok((status, output))
}

/// Waits for `child` (`what`, its output in `log`) to exit, for at most `limit`; when it
/// runs over, the error says so and where its output is (the child is killed when dropped).
pub(super) fn wait_within(
    child: &mut KillOnDrop,
    what: &str,
    limit: Duration,
    log: &Path,
) -> Result<ExitStatus, String> {
    let deadline = Instant::now() + limit;
    loop {
        match child.0.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                return Err(format!(
                    "{what} ran over {limit:?}; its output is in {}",
                    log.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for {what}: {e}")),
        }
    }
}

/// A loopback port nobody listens on right now.
pub(crate) fn free_port() -> Result<u16, String> {
    free_ports::<1>().map(|[port]| port)
}

/// `N` different loopback ports nobody listens on right now.
fn free_ports<const N: usize>() -> Result<[u16; N], String> {
    let mut held = Vec::with_capacity(N);
    let mut ports = [0; N];
    for port in &mut ports {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| format!("cannot find a free port: {e}"))?;
        *port = listener
            .local_addr()
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
        // Held until all are chosen, so the kernel gives each a different one.
        held.push(listener);
    }
    Ok(ports)
}

/// Why a server started is not listening.
enum NotListening {
    /// It exited first (its port may have been taken since it was found free).
    Exited(std::process::ExitStatus),
    /// It ran past [`STARTUP_LIMIT`] without listening on `port`.
    Silent { port: u16 },
}

impl std::fmt::Display for NotListening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(status) => write!(f, "the server exited early ({status})"),
            Self::Silent { port } => write!(
                f,
                "the server did not listen on port {port} within {STARTUP_LIMIT:?}"
            ),
        }
    }
}

/// Waits until a server accepts connections on `port`, or exits, or time runs out.
fn wait_listening(child: &mut Child, port: u16) -> Result<(), NotListening> {
    let deadline = Instant::now() + STARTUP_LIMIT;
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(NotListening::Exited(status));
        }
        if Instant::now() >= deadline {
            return Err(NotListening::Silent { port });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process that is killed (and reaped) when dropped.
pub(crate) struct KillOnDrop(pub(crate) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_exits_before_it_listens_is_started_again_on_other_ports() {
        let mut tried = Vec::new();
        let (_server, ports) = start_listening(
            |ports: [u16; 2]| {
                tried.push(ports);
                // The first start exits at once; the second listens (here, in this
                // process, beside a child that stays up).
                let program = if tried.len() == 1 {
                    "true"
                } else {
                    for port in ports {
                        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
                        std::thread::spawn(move || for _ in listener.incoming() {});
                    }
                    "sleep"
                };
                let child = Command::new(program).arg("60").spawn().unwrap();
                Ok::<_, String>(KillOnDrop(child))
            },
            |e| e,
        )
        .unwrap();
        assert_eq!(tried.len(), 2);
        assert_eq!(ports, tried[1]);
        assert_ne!(ports[0], ports[1]);
    }

    #[test]
    fn a_server_that_always_exits_first_fails_after_its_attempts() {
        let mut starts = 0;
        let error = start_listening(
            |[_]| {
                starts += 1;
                Ok::<_, String>(KillOnDrop(Command::new("true").spawn().unwrap()))
            },
            |e| e,
        )
        .err()
        .unwrap();
        assert_eq!(starts, START_ATTEMPTS);
        assert!(error.contains("exited early"), "{error}");
    }
}
