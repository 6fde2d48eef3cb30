//! A benchmark server run as a child process: started with its stdin and stdout piped,
//! ready once it prints `listening ADDR`, stopped by closing its stdin. Shared by
//! `bench-load` (the scenarios' servers) and the soak (`bench-soak`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long a server may take to start or to exit.
const WAIT: Duration = Duration::from_secs(30);

/// Runs `command` (of `program`) with its stdin and stdout piped to us and its stderr
/// ours, killed when dropped; returns it with its two pipes.
pub fn spawn_piped(
    command: &mut Command,
    program: &Path,
) -> Result<(Child, ChildStdin, BufReader<ChildStdout>), String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let stdout = BufReader::new(child.stdout.take().ok_or("no stdout pipe")?);
    Ok((child, stdin, stdout))
}

/// A running server child and the address it listens on.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    pid: u32,
    /// The server's stdin: closing it (dropping, or [`ServerProcess::stop`]) ends it;
    /// some servers also read commands from it.
    pub stdin: ChildStdin,
    /// The rest of the server's stdout, after its `listening` line.
    pub stdout: Lines<BufReader<ChildStdout>>,
    /// The `ADDR` of its `listening ADDR` line.
    pub addr: String,
}

impl ServerProcess {
    /// Runs `program args...` and waits for its `listening ADDR` line.
    pub async fn spawn(program: &Path, args: &[&str]) -> Result<Self, String> {
        Self::spawn_with_env(program, args, &[]).await
    }

    /// [`ServerProcess::spawn`] with `env` added to the server's environment.
    pub async fn spawn_with_env(
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self, String> {
        let mut command = Command::new(program);
        command.args(args).envs(env.iter().copied());
        let (child, stdin, stdout) = spawn_piped(&mut command, program)?;
        let pid = child.id().ok_or("the server exited at once")?;
        let mut stdout = stdout.lines();
        let line = tokio::time::timeout(WAIT, stdout.next_line())
            .await
            .map_err(|_| "the server did not start")?
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .ok_or(format!("unexpected server output {line:?}"))?
            .to_owned();
        Ok(Self {
            child,
            pid,
            stdin,
            stdout,
            addr,
        })
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The CPU time the server's threads have used so far (see [`cpu_time`]).
    pub fn cpu_time(&self) -> Result<Duration, String> {
        cpu_time(Some(self.pid))
    }

    /// A numeric field of the server's `/proc/PID/status` (Linux), such as `VmRSS:`
    /// (in KiB) or `Threads:`.
    pub fn status_field(&self, name: &str) -> Result<f64, String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .map_err(|e| format!("cannot read the server's status: {e}"))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or(format!("no {name} in /proc/PID/status"))
    }

    /// Closes the server's stdin and waits for it to exit (killing it if it does not).
    pub async fn stop(self) -> Result<(), String> {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        if tokio::time::timeout(WAIT, child.wait()).await.is_err() {
            let _ = child.kill().await;
            return Err("the server did not exit when its stdin closed".into());
        }
        Ok(())
    }
}

/// The CPU time (user and system) the live threads of process `pid` (this process when
/// `None`) have used so far: the sum of the first field of `/proc/PID/task/*/schedstat`
/// (Linux), in nanoseconds, where `/proc/PID/stat` counts 10 ms ticks. Threads that
/// have ended are not counted (the servers' and the load generator's threads live as
/// long as the run).
pub fn cpu_time(pid: Option<u32>) -> Result<Duration, String> {
    let dir = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let tasks = std::fs::read_dir(&dir).map_err(|e| format!("cannot list {dir}: {e}"))?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        // A thread that ends between the listing and the read is skipped.
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        total += stat
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())
            .ok_or(format!("unreadable schedstat in {dir}: {stat:?}"))?;
    }
    Ok(Duration::from_nanos(total))
}
