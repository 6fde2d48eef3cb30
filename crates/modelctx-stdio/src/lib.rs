//! The stdio transport of modelctx: newline-delimited JSON-RPC over a process's
//! stdin and stdout.
//!
//! - **Server side:** [`stdio()`] speaks MCP on this process's own stdin/stdout. When
//!   stdin closes, the stream ends, the session ends, and a server whose `main` awaits
//!   its session exits by itself.
//! - **Client side** (feature `child`): `ChildProcess` spawns a server (program, args, env, working
//!   directory; stderr inherited, passed line by line to a callback, or written to a
//!   file) and gives a `StdioClient`, a transport over the child's pipes, plus a
//!   `ChildHandle` whose `shutdown` closes stdin, waits,
//!   sends `SIGTERM`, waits, kills, and reports the exit status.
//!   `ChildProcess::spawn_restarting` starts a child that fails again by a
//!   `RestartPolicy` (backoff, a limit), repeating the session's handshake to the new
//!   process; the session over it goes on.
//! - **Any pipes:** [`StdioTransport::new`] runs the same framing over any
//!   `AsyncRead`/`AsyncWrite` pair, e.g. the halves of `tokio::io::duplex`.
//!
//! # The wire
//!
//! One message per line, `\n`-terminated; an outgoing message never contains an
//! embedded newline (see [`framing`]). Inbound:
//!
//! | input line | what happens |
//! |---|---|
//! | a valid message | delivered |
//! | blank | ignored |
//! | not JSON (a stray log line, or a line that is not UTF-8) | skipped, reported as [`Diagnostic::SkippedLine`]; no answer, so two peers cannot feed each other an error storm |
//! | JSON but not a valid message | [`TransportError::invalid`](modelctx_transport::TransportError::invalid): the session answers with the spec's error (with the id when it can be read); a response that cannot be read is never answered: the call it answers fails at once |
//! | longer than the cap ([`StdioOptions::max_line`], default 32 MiB) | one error, reported as [`Diagnostic::Fatal`], then the stream ends and the session closes |
//! | end of input | the stream ends (a partial last line is dropped and reported) |
//!
//! Writes go through one writer task per transport, which flushes whenever its queue
//! runs empty: a burst of messages is written with one flush.
//!
//! # Keep stdout clean
//!
//! A stdio server's stdout carries protocol messages and nothing else: one stray
//! `println!` corrupts the stream. Log to **stderr**. In particular
//! `tracing_subscriber::fmt()` writes to *stdout* unless told otherwise; build it with
//! `.with_writer(std::io::stderr)`. The host usually shows or records the server's
//! stderr; `Stderr` gives a client the same choice.
//!
//! The crate itself writes nothing anywhere: every [`Diagnostic`] is also a
//! [`tracing`](https://docs.rs/tracing) event (target `modelctx_stdio`), for the
//! subscriber the application installs, if any.
//!
//! # Example
//!
//! Two ends of the stdio framing, connected by an in-process pipe:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_stdio::StdioTransport;
//! use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
//! use modelctx_types::JsonRpcNotification;
//!
//! let (a, b) = tokio::io::duplex(4096);
//! let (a_read, a_write) = tokio::io::split(a);
//! let (b_read, b_write) = tokio::io::split(b);
//! let (a_sink, _a_stream) = StdioTransport::new(a_read, a_write).split();
//! let (_b_sink, mut b_stream) = StdioTransport::new(b_read, b_write).split();
//!
//! let note = JsonRpcNotification::new("notifications/initialized", None);
//! a_sink.send(TransportMessage::new(note.into())).await.unwrap();
//! a_sink.close().await;
//! let got = b_stream.recv().await.unwrap().unwrap();
//! assert_eq!(got.message.method(), Some("notifications/initialized"));
//! assert!(b_stream.recv().await.is_none()); // closing a sink ends the peer's stream
//! # }
//! ```
//!
//! A server binary serves one session on its stdio and exits when the host closes
//! stdin (with the facade: `server.serve(modelctx::stdio::stdio()).closed().await`).
//! `examples/src/bin/stdio-server.rs` and `stdio-client.rs` show both sides.
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `child` | `ChildProcess`, `StdioClient`, `ChildHandle`: run a server as a child process (tokio's `process` module; `SIGTERM` through `nix`, its `signal` module only, on unix). Off by default: a server never needs it, and it is a sizeable part of a minimal server's build. The facade turns it on with its `client` feature. |
//!
//! Trap: `ServerSession::closed()` resolves before the sink has flushed; a stdio `main`
//! should `close().await` after it.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "child")]
mod child;
pub mod framing;
mod options;
mod pipe;

#[cfg(feature = "child")]
pub use child::{
    ChildHandle, ChildProcess, DEFAULT_GRACE_PERIOD, DEFAULT_TERM_TIMEOUT, Shutdown, ShutdownStep,
    Stderr, StdioClient,
};
#[cfg(feature = "child")]
pub use child::{RestartHandle, RestartPolicy, RestartingChild, RestartingSink, RestartingStream};
pub use framing::DEFAULT_MAX_LINE;
pub use options::{
    DEFAULT_CLOSE_TIMEOUT, DEFAULT_QUEUE, DEFAULT_WRITE_TIMEOUT, Diagnostic, StdioOptions,
};
pub use pipe::{StdioSink, StdioStream, StdioTransport};

/// A transport on this process's stdin and stdout, with the default options.
pub fn stdio() -> StdioTransport {
    stdio_with(StdioOptions::new())
}

/// A transport on this process's stdin and stdout, with `options`.
///
/// On unix, when stdin or stdout is a pipe (as when a host spawns the server) and a
/// tokio runtime is running, that end is read or written through the runtime's reactor
/// in non-blocking mode; otherwise (a terminal, a file, no runtime) through tokio's
/// `stdin()`/`stdout()`, which hand every read and write to the blocking thread pool.
/// Non-blocking mode belongs to the pipe end, not to this process's descriptor, so
/// anything else holding the same end (rare: hosts keep the other ends) sees it too.
pub fn stdio_with(options: StdioOptions) -> StdioTransport {
    StdioTransport::with_options(pipes::stdin(), pipes::stdout(), options)
}

/// This process's stdin and stdout, on the reactor when they are pipes.
mod pipes {
    use tokio::io::{AsyncRead, AsyncWrite};

    type Reader = Box<dyn AsyncRead + Send + Unpin>;
    type Writer = Box<dyn AsyncWrite + Send + Unpin>;

    /// A copy of `fd` opened with `open` (a pipe end of the runtime's reactor); `None`
    /// without a runtime, or when `fd` is not a pipe.
    #[cfg(unix)]
    fn on_reactor<T>(
        fd: impl std::os::fd::AsFd,
        open: impl FnOnce(std::os::fd::OwnedFd) -> std::io::Result<T>,
    ) -> Option<T> {
        tokio::runtime::Handle::try_current().ok()?;
        open(fd.as_fd().try_clone_to_owned().ok()?).ok()
    }

    #[cfg(unix)]
    pub(crate) fn stdin() -> Reader {
        use tokio::net::unix::pipe;
        match on_reactor(std::io::stdin(), pipe::Receiver::from_owned_fd) {
            Some(pipe) => Box::new(pipe),
            None => Box::new(tokio::io::stdin()),
        }
    }

    #[cfg(unix)]
    pub(crate) fn stdout() -> Writer {
        use tokio::net::unix::pipe;
        match on_reactor(std::io::stdout(), pipe::Sender::from_owned_fd) {
            Some(pipe) => Box::new(pipe),
            None => Box::new(tokio::io::stdout()),
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn stdin() -> Reader {
        Box::new(tokio::io::stdin())
    }

    #[cfg(not(unix))]
    pub(crate) fn stdout() -> Writer {
        Box::new(tokio::io::stdout())
    }
}

#[cfg(test)]
mod tests;
