//! Settings shared by both ends of a stdio connection, and the diagnostics they report.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::framing::DEFAULT_MAX_LINE;

/// The default number of encoded lines that may wait for the writer before a sender
/// waits.
pub const DEFAULT_QUEUE: usize = 1024;

/// The default time [`close`](modelctx_transport::MessageSink::close) waits for queued
/// lines to be written before it drops the output anyway.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The default time a write may make no progress before the output counts as dead
/// and the transport ends (see [`StdioOptions::write_timeout`]).
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(60);

type DiagnosticFn = Arc<dyn Fn(&Diagnostic) + Send + Sync>;

/// How a stdio transport reads and writes.
///
/// ```
/// use modelctx_stdio::StdioOptions;
///
/// let options = StdioOptions::new()
///     .max_line(1024 * 1024)
///     .on_diagnostic(|d| eprintln!("stdio: {d}"));
/// assert_eq!(options.max_line_len(), 1024 * 1024);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct StdioOptions {
    max_line: usize,
    queue: usize,
    close_timeout: Duration,
    write_timeout: Option<Duration>,
    on_diagnostic: Option<DiagnosticFn>,
}

impl StdioOptions {
    /// The defaults: lines up to [`DEFAULT_MAX_LINE`] bytes, a queue of
    /// [`DEFAULT_QUEUE`] lines, [`DEFAULT_CLOSE_TIMEOUT`], [`DEFAULT_WRITE_TIMEOUT`],
    /// diagnostics dropped.
    pub fn new() -> Self {
        Self {
            max_line: DEFAULT_MAX_LINE,
            queue: DEFAULT_QUEUE,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            on_diagnostic: None,
        }
    }

    modelctx_types::__setters! {
        /// Caps one inbound line at `bytes` (at least 1). A longer line is a fatal error:
        /// the stream reports it and ends.
        max_line(bytes: usize) { max_line = bytes.max(1) }
    }

    /// The inbound line cap.
    pub fn max_line_len(&self) -> usize {
        self.max_line
    }

    modelctx_types::__setters! {
        /// How many encoded lines may wait for the writer (at least 1) before `send` waits.
        queue(lines: usize) { queue = lines.max(1) }

        /// How long `close` waits for queued lines to be written (a peer that stopped
        /// reading would otherwise hold it forever).
        close_timeout(timeout: Duration) { close_timeout = timeout }

        /// How long one write may wait for the peer to read (the pipe is full and nothing
        /// drains it) before the output counts as dead: the writer stops, later sends fail
        /// as closed, and the stream ends with [`Diagnostic::OutputStalled`], which ends the
        /// session — a peer that never reads is dropped, rather than holding the session's
        /// answers and handlers forever. `None` waits as long as it takes. A write that
        /// completes at once arms no timer.
        write_timeout(timeout: Option<Duration>) { write_timeout = timeout }

        /// Calls `f` for every line the stream could not deliver and for the fault that ends
        /// it (see [`Diagnostic`]). The callback runs on the receiving task: keep it short
        /// (log it). Without one, diagnostics are dropped.
        on_diagnostic(f: impl Fn(&Diagnostic) + Send + Sync + 'static) { on_diagnostic = Some(Arc::new(f)) }
    }

    pub(crate) fn queue_len(&self) -> usize {
        self.queue
    }

    pub(crate) fn close_timeout_value(&self) -> Duration {
        self.close_timeout
    }

    pub(crate) fn write_timeout_value(&self) -> Option<Duration> {
        self.write_timeout
    }

    pub(crate) fn report(&self, diagnostic: Diagnostic) {
        // An event for a tracing subscriber (never written anywhere by this crate).
        match &diagnostic {
            Diagnostic::SkippedLine { reason, len } => {
                tracing::warn!(target: "modelctx_stdio", %reason, len, "non-JSON line skipped");
            }
            Diagnostic::InvalidMessage { reason } => {
                tracing::warn!(target: "modelctx_stdio", %reason, "invalid JSON-RPC message");
            }
            Diagnostic::PartialLineAtEof { len } => {
                tracing::warn!(target: "modelctx_stdio", len, "partial line dropped at end of input");
            }
            Diagnostic::Fatal { reason } => {
                tracing::error!(target: "modelctx_stdio", %reason, "stdio input failed");
            }
            Diagnostic::OutputStalled { after } => {
                tracing::warn!(target: "modelctx_stdio", ?after, "the peer stopped reading; the transport ends");
            }
        }
        if let Some(f) = &self.on_diagnostic {
            f(&diagnostic);
        }
    }
}

impl Default for StdioOptions {
    fn default() -> Self {
        Self::new()
    }
}

modelctx_types::__debug_shows!(StdioOptions, |v| {
    max_line: &v.max_line,
    queue: &v.queue,
    close_timeout: &v.close_timeout,
    write_timeout: &v.write_timeout,
    on_diagnostic: &v.on_diagnostic.is_some(),
});

/// Something the receiving side of a stdio transport noticed about its input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Diagnostic {
    /// A line that is not JSON (a stray log line, say, or a line that is not UTF-8)
    /// was skipped without an answer.
    SkippedLine {
        /// Why it is not JSON.
        reason: String,
        /// The line's length in bytes.
        len: usize,
    },
    /// A JSON line that is not a valid JSON-RPC message; the stream reports it as
    /// [`TransportError::invalid`](modelctx_transport::TransportError::invalid) so the
    /// session answers it.
    InvalidMessage {
        /// What is wrong with it.
        reason: String,
    },
    /// The input ended in the middle of a line; the partial line was dropped.
    PartialLineAtEof {
        /// The partial line's length in bytes.
        len: usize,
    },
    /// A fault that ends the stream: a line over the cap, a read error.
    Fatal {
        /// What happened.
        reason: String,
    },
    /// A write made no progress for the write timeout (the peer does not read its
    /// input): the output was dropped and the stream ends.
    OutputStalled {
        /// The write timeout that passed.
        after: Duration,
    },
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SkippedLine { reason, len } => {
                write!(f, "skipped a non-JSON line of {len} bytes: {reason}")
            }
            Self::InvalidMessage { reason } => write!(f, "invalid JSON-RPC message: {reason}"),
            Self::PartialLineAtEof { len } => {
                write!(f, "input ended inside a line; dropped {len} bytes")
            }
            Self::Fatal { reason } => write!(f, "stdio input failed: {reason}"),
            Self::OutputStalled { after } => write!(
                f,
                "the peer read nothing of the output for {after:?}; the transport ends"
            ),
        }
    }
}
