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
    mut server: Command,
    log_name: &str,
) -> Result<(KillOnDrop, String), String> {
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let log = paths.logs.join(log_name);
    let stderr = File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let child = server
        .arg(port.to_string())
        .current_dir(&paths.tools)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start {log_name}: {e}"))?;
    let mut server = KillOnDrop(child);
    wait_listening(&mut server.0, port)?;
    Ok((server, url))
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
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// Waits until a server accepts connections on `port`, or exits, or time runs out.
pub(crate) fn wait_listening(child: &mut Child, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP_LIMIT;
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the server exited early ({status})"));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the server did not listen on port {port} within {STARTUP_LIMIT:?}"
            ));
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
