//! The transport over any byte pipe pair: stdin/stdout, a child's pipes, in-process
//! duplex streams.
//!
//! Writing: one writer task per sink, started on the first send, flushing whenever its
//! queue runs empty; `close` drains it within a bounded time. A write that waits longer
//! than `StdioOptions::write_timeout` for a peer that does not read gives the output up:
//! later sends fail closed and the stream ends with `Diagnostic::OutputStalled` (a `watch`
//! flag the stream's read selects on), which ends the session. The timer is armed only when
//! a write does not complete in its first poll (the pipe is full), never on the common
//! path, since arming a tokio timer per write would wake the timer driver.
//!
//! Reading happens inside `recv` (cancel-safe, no reader task), paced by the session.
//!
//! [`stdio()`]: when stdin and stdout are pipes (a host spawned us) they are driven by the
//! reactor in non-blocking mode (`tokio::net::unix::pipe`); tokio's `stdin()`/`stdout()`
//! send every read and write through the blocking thread pool, which costs about half the
//! stdio throughput. Other kinds (a terminal, a file) keep tokio's.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use crate::framing::{FrameError, LineDecoder, encode_line};
use futures_core::future::BoxFuture;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportError, TransportMessage};
use modelctx_types::JsonRpcMessage;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::options::{Diagnostic, StdioOptions};

type BoxReader = Box<dyn AsyncRead + Send + Unpin>;
type BoxWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// How many bytes one read asks for.
const READ_CHUNK: usize = 64 * 1024;

/// The output buffer: lines queued while the writer was busy go out in one write.
const WRITE_BUFFER: usize = 64 * 1024;

/// Newline-delimited JSON-RPC over a reader and a writer.
///
/// Built by [`stdio`](crate::stdio) for a server on its own stdin/stdout, by
/// `ChildProcess` (feature `child`) for a client on a child's pipes, or by
/// [`new`](Self::new) over any pipes (`tokio::io::duplex` halves in tests).
pub struct StdioTransport {
    sink: StdioSink,
    stream: StdioStream,
}

impl StdioTransport {
    /// A transport reading messages from `reader` and writing them to `writer`, with
    /// the default [`StdioOptions`].
    pub fn new<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        Self::with_options(reader, writer, StdioOptions::new())
    }

    /// A transport over `reader` and `writer` with `options`.
    pub fn with_options<R, W>(reader: R, writer: W, options: StdioOptions) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (stalled_tx, stalled) = watch::channel(false);
        Self {
            sink: StdioSink::new(Box::new(writer), &options, stalled_tx),
            stream: StdioStream::new(Box::new(reader), options, stalled),
        }
    }

    /// Keeps `guard` alive as long as the sink (a child process's supervisor).
    #[cfg(feature = "child")]
    pub(crate) fn guard_sink(mut self, guard: Arc<dyn std::any::Any + Send + Sync>) -> Self {
        self.sink.guard = Some(guard);
        self
    }

    /// A handle that closes this transport's output, shared with the sink.
    #[cfg(feature = "child")]
    pub(crate) fn output(&self) -> Output {
        Output(self.sink.shared.clone())
    }
}

modelctx_types::__debug_shows!(StdioTransport, |v| { sink: &v.sink, stream: &v.stream });

impl Transport for StdioTransport {
    type Sink = StdioSink;
    type Stream = StdioStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("stdio")
    }

    fn split(self) -> (StdioSink, StdioStream) {
        (self.sink, self.stream)
    }
}

/// The sending half of a [`StdioTransport`].
///
/// `send` encodes the message as one line (never an embedded newline) and queues it for
/// a single writer task, started on the first send, which writes every queued line and
/// flushes once the queue is empty: a burst of messages costs one flush. `close` lets the
/// writer drain the queue (for at most the close timeout), then closes the output, which
/// the peer reads as end of input; a `close` while another is under way waits for it, so
/// after any `close` returns, everything sent before it has been written.
pub struct StdioSink {
    shared: Arc<SinkShared>,
    /// Kept alive as long as the sink: a child process's supervisor.
    #[cfg(feature = "child")]
    guard: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl StdioSink {
    fn new(writer: BoxWriter, options: &StdioOptions, stalled: watch::Sender<bool>) -> Self {
        Self {
            shared: Arc::new(SinkShared {
                state: Mutex::new(SinkState::Idle {
                    writer,
                    queue: options.queue_len(),
                }),
                close_timeout: options.close_timeout_value(),
                write_timeout: options.write_timeout_value(),
                stalled: Arc::new(stalled),
                closed: watch::channel(false).0,
            }),
            #[cfg(feature = "child")]
            guard: None,
        }
    }
}

impl fmt::Debug for StdioSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &*lock(&self.shared.state) {
            SinkState::Idle { .. } => "idle",
            SinkState::Running { .. } => "running",
            SinkState::Closed => "closed",
        };
        f.debug_struct("StdioSink").field("state", &state).finish()
    }
}

impl MessageSink for StdioSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let line = encode_line(&message.message);
            let tx = self.shared.sender()?;
            tx.send(line).await.map_err(|_| TransportError::closed())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shared.close())
    }
}

/// A second handle on a sink's output, to close it (a child's stdin) from elsewhere.
#[cfg(feature = "child")]
#[derive(Clone)]
pub(crate) struct Output(Arc<SinkShared>);

#[cfg(feature = "child")]
impl Output {
    pub(crate) async fn close(&self) {
        self.0.close().await;
    }
}

struct SinkShared {
    state: Mutex<SinkState>,
    close_timeout: Duration,
    /// How long one write may wait for the peer to read.
    write_timeout: Option<Duration>,
    /// Set by the writer when a write stalled past `write_timeout`; the stream ends.
    stalled: Arc<watch::Sender<bool>>,
    /// Set once the output is closed: a second `close` waits for the first to finish.
    closed: watch::Sender<bool>,
}

enum SinkState {
    /// Nothing sent yet: the writer task starts on the first send, inside the runtime.
    Idle {
        writer: BoxWriter,
        queue: usize,
    },
    Running {
        tx: mpsc::Sender<Vec<u8>>,
        task: JoinHandle<()>,
    },
    Closed,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SinkShared {
    /// The queue's sender, starting the writer task on first use.
    fn sender(&self) -> Result<mpsc::Sender<Vec<u8>>, TransportError> {
        let mut state = lock(&self.state);
        match &*state {
            SinkState::Running { tx, .. } => return Ok(tx.clone()),
            SinkState::Closed => return Err(TransportError::closed()),
            SinkState::Idle { .. } => {}
        }
        let SinkState::Idle { writer, queue } = std::mem::replace(&mut *state, SinkState::Closed)
        else {
            return Err(TransportError::closed());
        };
        let (tx, rx) = mpsc::channel(queue);
        let stall = Stall {
            after: self.write_timeout,
            flag: self.stalled.clone(),
        };
        let task = tokio::spawn(write_lines(writer, rx, stall));
        *state = SinkState::Running {
            tx: tx.clone(),
            task,
        };
        Ok(tx)
    }

    async fn close(&self) {
        let previous = std::mem::replace(&mut *lock(&self.state), SinkState::Closed);
        match previous {
            SinkState::Idle { mut writer, .. } => {
                let _ = tokio::time::timeout(self.close_timeout, writer.shutdown()).await;
            }
            SinkState::Running { tx, mut task } => {
                // The writer drains what is queued, then closes the output; a peer that
                // stopped reading must not hold `close` forever.
                drop(tx);
                if tokio::time::timeout(self.close_timeout, &mut task)
                    .await
                    .is_err()
                {
                    task.abort();
                }
            }
            SinkState::Closed => {
                // Another close is draining the queue (or has): wait until it is done.
                let mut done = self.closed.subscribe();
                let _ = tokio::time::timeout(self.close_timeout, done.wait_for(|d| *d)).await;
                return;
            }
        }
        self.closed.send_replace(true);
    }
}

/// How the writer bounds a write the peer does not read.
struct Stall {
    after: Option<Duration>,
    flag: Arc<watch::Sender<bool>>,
}

impl Stall {
    /// Runs one write: `None` when it failed or stalled past the timeout (then the
    /// stream is told). The timer is armed only for a write that does not complete in
    /// its first poll (the pipe is full): the common write costs no timer (see the
    /// timer trap in ARCHITECTURE.md).
    async fn write<F>(&self, op: F) -> Option<()>
    where
        F: Future<Output = std::io::Result<()>>,
    {
        let mut op = std::pin::pin!(op);
        let first = std::future::poll_fn(|cx| Poll::Ready(op.as_mut().poll(cx))).await;
        let outcome = match (first, self.after) {
            (Poll::Ready(r), _) => r,
            (Poll::Pending, None) => op.await,
            (Poll::Pending, Some(after)) => match tokio::time::timeout(after, op).await {
                Ok(r) => r,
                Err(_) => {
                    self.flag.send_replace(true);
                    return None;
                }
            },
        };
        outcome.ok()
    }
}

/// The writer task: writes queued lines, flushing whenever the queue runs empty, until
/// every sender is gone (then closes the output), a write fails (then later sends fail
/// with a closed error) or a write stalls past the write timeout (the same, and the
/// stream ends).
async fn write_lines(writer: BoxWriter, mut rx: mpsc::Receiver<Vec<u8>>, stall: Stall) {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, writer);
    while let Some(line) = rx.recv().await {
        if stall.write(out.write_all(&line)).await.is_none() {
            return;
        }
        while let Ok(line) = rx.try_recv() {
            if stall.write(out.write_all(&line)).await.is_none() {
                return;
            }
        }
        if stall.write(out.flush()).await.is_none() {
            return;
        }
    }
    let _ = out.shutdown().await;
}

/// The receiving half of a [`StdioTransport`].
///
/// Reads lines of at most the configured cap and yields one message per line. A line
/// that is not JSON is skipped (reported as [`Diagnostic::SkippedLine`]): answering
/// stray output with errors would only feed an error storm. A JSON line that is not a
/// valid message yields [`TransportError::invalid`], which the session answers with the
/// spec's error when it can read the id (a response is never answered: the session
/// fails the call it answers). A line that is not UTF-8 is skipped like any
/// other line that is not JSON. A line over the cap or a read error yields one error
/// and then the end of the stream. End of input ends the stream.
pub struct StdioStream {
    reader: BoxReader,
    decoder: LineDecoder,
    buf: Vec<u8>,
    done: bool,
    options: StdioOptions,
    /// Set when the sink's writer gave up on a peer that does not read: the stream ends.
    stalled: watch::Receiver<bool>,
}

impl StdioStream {
    fn new(reader: BoxReader, options: StdioOptions, stalled: watch::Receiver<bool>) -> Self {
        Self {
            stalled,
            reader,
            decoder: LineDecoder::new(options.max_line_len()),
            buf: vec![0; READ_CHUNK],
            done: false,
            options,
        }
    }

    /// Ends the stream with a fatal error.
    fn fail(&mut self, reason: String) -> Option<Result<TransportMessage, TransportError>> {
        self.done = true;
        self.options.report(Diagnostic::Fatal {
            reason: reason.clone(),
        });
        Some(Err(TransportError::other(format!(
            "stdio input failed: {reason}"
        ))))
    }

    async fn next(&mut self) -> Option<Result<TransportMessage, TransportError>> {
        loop {
            if self.done {
                return None;
            }
            match self.decoder.next_line() {
                Some(Ok(line)) => match JsonRpcMessage::from_slice(&line) {
                    Ok(message) => return Some(Ok(TransportMessage::new(message))),
                    Err(invalid) if invalid.is_parse_error() => {
                        self.options.report(Diagnostic::SkippedLine {
                            reason: invalid.error.message.to_string(),
                            len: line.len(),
                        });
                    }
                    Err(invalid) => {
                        self.options.report(Diagnostic::InvalidMessage {
                            reason: invalid.error.message.to_string(),
                        });
                        return Some(Err(TransportError::invalid(invalid)));
                    }
                },
                Some(Err(FrameError::LineTooLong { max })) => {
                    return self.fail(format!("a line exceeds the limit of {max} bytes"));
                }
                // Like any line that is not JSON (JSON is UTF-8): reported, skipped, and
                // never answered; one corrupt byte must not end the session.
                Some(Err(FrameError::InvalidUtf8 { len })) => {
                    self.options.report(Diagnostic::SkippedLine {
                        reason: FrameError::InvalidUtf8 { len }.to_string(),
                        len,
                    });
                }
                None => {
                    match read_unless_stalled(&mut self.reader, &mut self.buf, &mut self.stalled)
                        .await
                    {
                        Err(Stalled) => {
                            self.done = true;
                            let after = self.options.write_timeout_value().unwrap_or_default();
                            self.options.report(Diagnostic::OutputStalled { after });
                            return Some(Err(TransportError::other(format!(
                                "the peer read nothing of the output for {after:?}"
                            ))));
                        }
                        Ok(Ok(0)) => {
                            self.done = true;
                            let rest = self.decoder.remainder();
                            if !rest.iter().all(u8::is_ascii_whitespace) {
                                let len = rest.len();
                                self.options.report(Diagnostic::PartialLineAtEof { len });
                            }
                            return None;
                        }
                        Ok(Ok(n)) => self.decoder.extend(&self.buf[..n]),
                        Ok(Err(e)) => return self.fail(format!("read error: {e}")),
                    }
                }
            }
        }
    }
}

/// The writer gave up on the peer (see [`Stall`]).
struct Stalled;

/// One read, unless the writer gave up on the peer first (or meanwhile). Cancel-safe:
/// a dropped read loses nothing.
async fn read_unless_stalled(
    reader: &mut BoxReader,
    buf: &mut [u8],
    stalled: &mut watch::Receiver<bool>,
) -> Result<std::io::Result<usize>, Stalled> {
    if *stalled.borrow() {
        return Err(Stalled);
    }
    let gave_up = async {
        // The sink gone (its writer finished without stalling) is not a stall.
        if stalled.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    // The read first: when input is waiting it completes without the flag's waiter
    // ever being registered (the check above catches a stall on the next call).
    tokio::select! {
        biased;
        read = reader.read(buf) => Ok(read),
        () = gave_up => Err(Stalled),
    }
}

modelctx_types::__debug_shows!(StdioStream, |v| {
    done: &v.done,
    buffered: &v.decoder.remainder().len(),
    options: &v.options,
});

impl MessageStream for StdioStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        // Cancel-safe: the only await is one `read`, which loses nothing when dropped;
        // bytes read are in the decoder before the next await.
        Box::pin(self.next())
    }
}
