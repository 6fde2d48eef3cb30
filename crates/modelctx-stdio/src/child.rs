//! The client side: a server run as a child process, spoken to over its stdin/stdout.
//!
//! A supervisor task owns the `Child` and is the only place signals are sent from, so a pid
//! is never signalled after it was reaped. The child's stderr is inherited, handed line by
//! line to a callback, or written to a file, never swallowed.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::{mpsc, watch};

use crate::StdioOptions;
use crate::pipe::{Output, StdioSink, StdioStream, StdioTransport};
use modelctx_transport::Transport;

mod restart;

pub use restart::{
    RestartHandle, RestartPolicy, RestartingChild, RestartingSink, RestartingStream,
};

/// The default time a child gets to exit by itself once its stdin is closed.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(5);

/// The default time a child gets to exit after `SIGTERM` before it is killed.
pub const DEFAULT_TERM_TIMEOUT: Duration = Duration::from_secs(2);

/// Stderr lines longer than this reach the callback in pieces of this size.
const STDERR_LINE_CAP: usize = 64 * 1024;

type LineFn = Arc<dyn Fn(&str) + Send + Sync>;

/// Where a child's stderr goes. The transport never reads it for itself: the caller
/// chooses, and nothing is swallowed.
pub struct Stderr {
    kind: StderrKind,
}

enum StderrKind {
    Inherit,
    Lines(LineFn),
    File(std::fs::File),
}

impl Stderr {
    /// The child writes to this process's stderr (the default).
    pub fn inherit() -> Self {
        Self {
            kind: StderrKind::Inherit,
        }
    }

    /// Each line the child writes to stderr is passed to `f`, without its line ending
    /// (invalid UTF-8 replaced; a line over 64 KiB arrives in pieces). `f` runs on a
    /// task of its own, so a slow callback never holds the protocol up.
    pub fn lines(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            kind: StderrKind::Lines(Arc::new(f)),
        }
    }

    /// The child writes its stderr straight to `file`.
    pub fn file(file: std::fs::File) -> Self {
        Self {
            kind: StderrKind::File(file),
        }
    }
}

impl Default for Stderr {
    fn default() -> Self {
        Self::inherit()
    }
}

impl fmt::Debug for Stderr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match &self.kind {
            StderrKind::Inherit => "inherit",
            StderrKind::Lines(_) => "lines",
            StderrKind::File(_) => "file",
        };
        f.debug_tuple("Stderr").field(&mode).finish()
    }
}

/// Builds and spawns a stdio server as a child process.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use modelctx_stdio::{ChildProcess, Stderr};
///
/// let client = ChildProcess::new("my-mcp-server")
///     .arg("--verbose")
///     .env("LOG_LEVEL", "debug")
///     .stderr(Stderr::lines(|line| eprintln!("[server] {line}")))
///     .spawn()?;
/// let handle = client.handle();
/// // ... connect a client session over `client` (it implements `Transport`) ...
/// let outcome = handle.shutdown().await?;
/// println!("server exited: {}", outcome.status());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ChildProcess {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stderr: Stderr,
    grace: Duration,
    term: Duration,
    options: StdioOptions,
}

impl ChildProcess {
    /// A child running `program` (looked up on `PATH` when it has no separator).
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            stderr: Stderr::inherit(),
            grace: DEFAULT_GRACE_PERIOD,
            term: DEFAULT_TERM_TIMEOUT,
            options: StdioOptions::new(),
        }
    }

    /// Adds one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for the child.
    #[must_use]
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes an environment variable from the child's environment.
    #[must_use]
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Starts the child with an empty environment plus what [`env`](Self::env) sets.
    #[must_use]
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self.env.clear();
        self
    }

    modelctx_types::__setters! {
        /// The child's working directory.
        current_dir(dir: impl Into<PathBuf>) { cwd = Some(dir.into()) }

        /// Where the child's stderr goes (default: inherited).
        stderr(stderr: Stderr) { stderr = stderr }

        /// How long the child may take to exit after its stdin closes before it gets
        /// `SIGTERM` (default [`DEFAULT_GRACE_PERIOD`]).
        grace_period(grace: Duration) { grace = grace }

        /// How long the child may take to exit after `SIGTERM` before it is killed
        /// (default [`DEFAULT_TERM_TIMEOUT`]).
        term_timeout(timeout: Duration) { term = timeout }

        /// The framing options for the child's pipes (line cap, diagnostics for junk the
        /// child prints on stdout).
        options(options: StdioOptions) { options = options }
    }

    /// Spawns the child. Must run inside a Tokio runtime (it says so as an error
    /// otherwise); fails as [`std::process::Command::spawn`] does.
    pub fn spawn(self) -> io::Result<StdioClient> {
        self.start()
    }

    /// Spawns the child and starts it again by `policy` when it exits (see
    /// [`RestartPolicy`]): the transport outlives the process. Fails as
    /// [`spawn`](Self::spawn) does when the first start fails.
    pub fn spawn_restarting(self, policy: RestartPolicy) -> io::Result<RestartingChild> {
        restart::spawn(self, policy)
    }

    /// One start of the child, the builder kept for the next.
    pub(crate) fn start(&self) -> io::Result<StdioClient> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other(
                "ChildProcess::spawn must run inside a Tokio runtime",
            ));
        }
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        if self.env_clear {
            command.env_clear();
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        let mut lines = None;
        let stderr = match &self.stderr.kind {
            StderrKind::Inherit => Stdio::inherit(),
            StderrKind::File(file) => Stdio::from(file.try_clone()?),
            StderrKind::Lines(f) => {
                lines = Some(f.clone());
                Stdio::piped()
            }
        };
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let missing = || io::Error::other("the child's pipes were not captured");
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        if let (Some(f), Some(pipe)) = (lines, child.stderr.take()) {
            tokio::spawn(pump_lines(pipe, f));
        }
        let pid = child.id();
        let transport = StdioTransport::with_options(stdout, stdin, self.options.clone());
        let (commands, rx) = mpsc::channel(4);
        let (status_tx, status) = watch::channel(None);
        let output = transport.output();
        tokio::spawn(supervise(
            child,
            rx,
            status_tx,
            output.clone(),
            self.grace,
            self.term,
        ));
        let handle = ChildHandle {
            inner: Arc::new(HandleInner {
                pid,
                output,
                commands,
                status,
                grace: self.grace,
                term: self.term,
            }),
        };
        // The sink keeps the supervisor's command channel open: only when both the
        // handle and the transport are gone does the supervisor shut the child down.
        let guard: Arc<dyn std::any::Any + Send + Sync> = handle.inner.clone();
        let transport = transport.guard_sink(guard);
        Ok(StdioClient { transport, handle })
    }
}

/// The program alone, with no arguments: `"my-mcp-server".into()` is
/// `ChildProcess::new("my-mcp-server")`.
impl From<&str> for ChildProcess {
    fn from(program: &str) -> Self {
        Self::new(program)
    }
}

impl From<String> for ChildProcess {
    fn from(program: String) -> Self {
        Self::new(program)
    }
}

impl From<&Path> for ChildProcess {
    fn from(program: &Path) -> Self {
        Self::new(program)
    }
}

impl From<PathBuf> for ChildProcess {
    fn from(program: PathBuf) -> Self {
        Self::new(program)
    }
}

/// A running child process: a [`Transport`] over its stdin/stdout, and its
/// [`ChildHandle`].
///
/// If the child dies, its stdout ends, so the stream ends and a session over it fails
/// every pending request at once. When both the transport and every handle are dropped
/// without [`ChildHandle::shutdown`], the child is shut down in the background by the
/// same escalation (and killed outright if the runtime itself goes away).
#[derive(Debug)]
pub struct StdioClient {
    transport: StdioTransport,
    handle: ChildHandle,
}

impl StdioClient {
    /// A handle to the child: its pid, its exit status, shutdown.
    pub fn handle(&self) -> ChildHandle {
        self.handle.clone()
    }

    /// The transport and the handle, apart.
    pub fn into_parts(self) -> (StdioTransport, ChildHandle) {
        (self.transport, self.handle)
    }
}

impl Transport for StdioClient {
    type Sink = StdioSink;
    type Stream = StdioStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("stdio")
    }

    fn split(self) -> (StdioSink, StdioStream) {
        self.transport.split()
    }
}

/// How a shut-down child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShutdownStep {
    /// It exited by itself (its stdin closed, or it had already exited).
    Exited,
    /// It exited after `SIGTERM`.
    Terminated,
    /// It was killed (`SIGKILL`).
    Killed,
}

/// The outcome of [`ChildHandle::shutdown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shutdown {
    status: ExitStatus,
    step: ShutdownStep,
}

impl Shutdown {
    /// The child's exit status.
    pub fn status(&self) -> ExitStatus {
        self.status
    }

    /// The step of the escalation at which the child ended.
    pub fn step(&self) -> ShutdownStep {
        self.step
    }
}

/// A cheap, cloneable handle on a spawned child.
#[derive(Clone)]
pub struct ChildHandle {
    inner: Arc<HandleInner>,
}

struct HandleInner {
    pid: Option<u32>,
    output: Output,
    commands: mpsc::Sender<Signal>,
    status: watch::Receiver<Option<Result<ExitStatus, String>>>,
    grace: Duration,
    term: Duration,
}

modelctx_types::__debug_shows!(ChildHandle, |v| { pid: &v.inner.pid, status: &v.try_status() });

#[derive(Debug, Clone, Copy)]
enum Signal {
    Terminate,
    Kill,
}

impl ChildHandle {
    /// The child's process id, as it was at spawn.
    pub fn id(&self) -> Option<u32> {
        self.inner.pid
    }

    /// The exit status, once the child has exited.
    pub fn try_status(&self) -> Option<ExitStatus> {
        match &*self.inner.status.borrow() {
            Some(Ok(status)) => Some(*status),
            _ => None,
        }
    }

    /// Waits for the child to exit by itself, and reports its exit status.
    pub async fn wait(&self) -> io::Result<ExitStatus> {
        let mut rx = self.inner.status.clone();
        wait_status(&mut rx).await
    }

    /// Shuts the child down as the MCP spec describes for stdio: close its stdin, wait
    /// the grace period; if it still runs, send `SIGTERM` and wait the term timeout; if
    /// it still runs, kill it. Reports the exit status and the step it ended at. On
    /// platforms without signals the `SIGTERM` step is skipped.
    pub async fn shutdown(&self) -> io::Result<Shutdown> {
        let inner = &self.inner;
        let mut rx = inner.status.clone();
        let exited = async {
            inner.output.close().await;
            wait_status(&mut rx).await
        };
        if let Ok(status) = tokio::time::timeout(inner.grace, exited).await {
            return status.map(|status| Shutdown {
                status,
                step: ShutdownStep::Exited,
            });
        }
        let mut rx = inner.status.clone();
        if cfg!(unix) {
            let _ = inner.commands.send(Signal::Terminate).await;
            if let Ok(status) = tokio::time::timeout(inner.term, wait_status(&mut rx)).await {
                return status.map(|status| Shutdown {
                    status,
                    step: ShutdownStep::Terminated,
                });
            }
        }
        let _ = inner.commands.send(Signal::Kill).await;
        wait_status(&mut rx).await.map(|status| Shutdown {
            status,
            step: ShutdownStep::Killed,
        })
    }
}

async fn wait_status(
    rx: &mut watch::Receiver<Option<Result<ExitStatus, String>>>,
) -> io::Result<ExitStatus> {
    match rx.wait_for(Option::is_some).await {
        Ok(done) => match &*done {
            Some(Ok(status)) => Ok(*status),
            Some(Err(e)) => Err(io::Error::other(e.clone())),
            None => Err(io::Error::other("the child's status is unknown")),
        },
        Err(_) => Err(io::Error::other("the child's supervisor stopped")),
    }
}

/// Owns the child: reaps it, and signals it on request. Signals are sent only from
/// here, while the child is known not to be reaped, so a pid is never reused under us.
async fn supervise(
    mut child: Child,
    mut commands: mpsc::Receiver<Signal>,
    status: watch::Sender<Option<Result<ExitStatus, String>>>,
    output: Output,
    grace: Duration,
    term: Duration,
) {
    let result = loop {
        tokio::select! {
            result = child.wait() => break result,
            command = commands.recv() => match command {
                Some(Signal::Terminate) => terminate(&child),
                Some(Signal::Kill) => {
                    let _ = child.start_kill();
                }
                // Nobody can shut the child down any more: do it now.
                None => break escalate(&mut child, &output, grace, term).await,
            },
        }
    };
    let _ = status.send(Some(result.map_err(|e| e.to_string())));
}

async fn escalate(
    child: &mut Child,
    output: &Output,
    grace: Duration,
    term: Duration,
) -> io::Result<ExitStatus> {
    let exited = async {
        output.close().await;
        child.wait().await
    };
    if let Ok(result) = tokio::time::timeout(grace, exited).await {
        return result;
    }
    terminate(child);
    if cfg!(unix)
        && let Ok(result) = tokio::time::timeout(term, child.wait()).await
    {
        return result;
    }
    let _ = child.start_kill();
    child.wait().await
}

#[cfg(unix)]
fn terminate(child: &Child) {
    use nix::sys::signal::{Signal as NixSignal, kill};
    use nix::unistd::Pid;
    // `id()` is `None` once the child was reaped: then there is nobody to signal.
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = kill(Pid::from_raw(pid), NixSignal::SIGTERM);
    }
}

#[cfg(not(unix))]
fn terminate(_child: &Child) {}

/// Passes the child's stderr to `f`, line by line.
async fn pump_lines(mut pipe: ChildStderr, f: LineFn) {
    let mut buf = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let emit = |line: &mut Vec<u8>| {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        f(&String::from_utf8_lossy(line));
        line.clear();
    };
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                emit(&mut line);
            } else {
                line.push(b);
                if line.len() >= STDERR_LINE_CAP {
                    emit(&mut line);
                }
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line);
    }
}
