//! A server child process started again when it fails: `ChildProcess::spawn_restarting`.
//!
//! One task reads the running child's stdout and forwards what it says to the session.
//! When that output ends, the task looks at the exit status and the policy; to restart,
//! it fails the requests that were in flight and cannot be sent again, starts the
//! program again (after the policy's backoff), repeats the session's `initialize` (and
//! `notifications/initialized`) when the session made one — protocol 2025; a session of
//! the 2026-07-28 era has no handshake, its requests carry everything — then sends the
//! idempotent requests that were in flight again, then what the session sent meanwhile.
//!
//! A child that closed stdout and kept running is shut down after 5 s. Only a failure (a
//! non-zero status, a signal) under `RestartPolicy::OnFailure` restarts; status 0, `close`
//! and `RestartHandle::shutdown` never do. The builder is borrowed for each start (the
//! stderr file is `try_clone`d). The repeated `initialize` goes under an id of its own,
//! followed by the log level and subscriptions (`SessionReplay`). Each idempotent request
//! is sent again at most `max_attempts` times, so a request that kills the server cannot
//! loop, and the limit counts restarts *in a row without an answered request*, not spawn
//! failures alone: a child that starts and dies at once (no handshake to fail) still
//! reaches it. Giving up fails what is pending (interrupted if sent, undelivered if
//! queued), sets `ConnectionState::Failed`, and ends the stream, which closes the session.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_core::future::BoxFuture;
use modelctx_transport::{
    ConnectionState, MessageSink, MessageStream, ReconnectPolicy, SessionReplay, Transport,
    TransportError, TransportMessage,
};
use modelctx_types::{
    ErrorData, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, RequestId,
};
use tokio::sync::{mpsc, watch};

use super::{ChildHandle, ChildProcess, Shutdown};
use crate::pipe::{StdioSink, StdioStream};

/// How long a restarted child may take to answer the repeated `initialize`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a child that closed its stdout may take to exit before it is shut down.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// When a server child process is started again after it exits.
///
/// With [`OnFailure`](Self::OnFailure), a child that exits with a failure status, is
/// killed by a signal, or closes its stdout while the transport is in use, is started
/// again after the policy's backoff. The session over the transport goes on:
///
/// - requests in flight when the child died fail with
///   `modelctx_transport::interrupted` (it may or may not have run them), except the
///   idempotent ones ([`ReconnectPolicy::is_idempotent`]), which are sent to the new
///   child and answered once (each at most the policy's attempts times, so a request
///   that kills the server does not loop);
/// - protocol 2025: the new child gets the session's `initialize` again (and
///   `notifications/initialized`); the client keeps what it negotiated. Protocol
///   2026-07-28: nothing to repeat;
/// - messages sent while no child runs wait for the next one;
/// - after [`max_attempts`](ReconnectPolicy::max_attempts) restarts in a row without
///   the child answering a request (it does not start, exits at once, refuses or does
///   not answer `initialize`), the transport gives up: pending requests fail with an
///   error that says so, later ones fail likewise, the session ends.
///
/// A child that exits with status 0 by itself is not restarted (it chose to stop);
/// neither is one shut down through the transport or the handle.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum RestartPolicy {
    /// Never restart: the session ends with the child (what
    /// [`ChildProcess::spawn`] does).
    #[default]
    Never,
    /// Restart after a failure, with this backoff and limit.
    OnFailure(ReconnectPolicy),
}

type Inbound = Result<TransportMessage, TransportError>;

/// A server child process, restarted by policy: a [`Transport`] that outlives each
/// process, and its [`RestartHandle`]. Built by [`ChildProcess::spawn_restarting`].
#[derive(Debug)]
pub struct RestartingChild {
    sink: RestartingSink,
    stream: RestartingStream,
}

impl RestartingChild {
    /// A handle on the supervised child: the running process, restarts, shutdown.
    pub fn handle(&self) -> RestartHandle {
        RestartHandle {
            shared: self.sink.shared.clone(),
        }
    }
}

impl Transport for RestartingChild {
    type Sink = RestartingSink;
    type Stream = RestartingStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("stdio")
    }

    fn split(self) -> (RestartingSink, RestartingStream) {
        (self.sink, self.stream)
    }
}

struct Shared {
    policy: RestartPolicy,
    state: Mutex<State>,
    connection: watch::Sender<ConnectionState>,
    /// Set by a close or a shutdown: no more restarts.
    stopping: watch::Sender<bool>,
}

struct State {
    /// The running child's sink and handle; `None` while it is being replaced.
    current: Option<(Arc<StdioSink>, ChildHandle)>,
    /// Requests sent to a child and not answered yet; for the idempotent ones a copy and
    /// how often it was sent again.
    inflight: HashMap<RequestId, Option<(JsonRpcRequest, u32)>>,
    /// Messages the session sent while no child was running, in order.
    queued: Vec<TransportMessage>,
    /// The session's `initialize`, repeated to a new child.
    init: Option<JsonRpcRequest>,
    /// Whether the session sent `notifications/initialized`.
    initialized: bool,
    /// The log level and resource subscriptions, repeated to a new child.
    replay: SessionReplay,
    /// Set once the transport ended: why later sends fail.
    ended: Option<String>,
    restarts: u32,
    /// Restarts since a child last answered a request.
    in_a_row: u32,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn retries(&self, method: &str) -> bool {
        matches!(&self.policy, RestartPolicy::OnFailure(p) if p.is_idempotent(method))
    }

    fn stopping(&self) -> bool {
        *self.stopping.borrow()
    }
}

pub(crate) fn spawn(child: ChildProcess, policy: RestartPolicy) -> io::Result<RestartingChild> {
    let (transport, handle) = child.start()?.into_parts();
    let (sink, stream) = transport.split();
    let shared = Arc::new(Shared {
        policy,
        state: Mutex::new(State {
            current: Some((Arc::new(sink), handle)),
            inflight: HashMap::new(),
            queued: Vec::new(),
            init: None,
            initialized: false,
            replay: SessionReplay::default(),
            ended: None,
            restarts: 0,
            in_a_row: 0,
        }),
        connection: watch::Sender::new(ConnectionState::Connected),
        stopping: watch::Sender::new(false),
    });
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(supervise(shared.clone(), child, stream, tx));
    Ok(RestartingChild {
        sink: RestartingSink { shared },
        stream: RestartingStream { rx },
    })
}

/// Forwards the running child's messages; replaces the child when it fails.
async fn supervise(
    shared: Arc<Shared>,
    child: ChildProcess,
    mut stream: StdioStream,
    tx: mpsc::Sender<Inbound>,
) {
    loop {
        loop {
            let next = tokio::select! {
                next = stream.recv() => next,
                // The session is gone: nobody reads any more.
                () = tx.closed() => None,
            };
            match next {
                Some(Ok(message)) => {
                    if let (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_), Some(id)) =
                        (&message.message, message.message.id())
                    {
                        let mut st = shared.state();
                        st.replay.received(&message.message);
                        if st.inflight.remove(id).is_some() {
                            st.in_a_row = 0;
                        }
                    }
                    if tx.send(Ok(message)).await.is_err() {
                        break;
                    }
                }
                Some(Err(error)) => {
                    if tx.send(Err(error)).await.is_err() {
                        break;
                    }
                }
                None => break,
            }
        }
        let current = shared.state().current.take();
        let Some((_, handle)) = current else {
            end(&shared, &tx, "the transport was closed").await;
            return;
        };
        if shared.stopping() || tx.is_closed() {
            end(&shared, &tx, "the transport was closed").await;
            return;
        }
        let (status, failed) = exit_status(&handle).await;
        let policy = match &shared.policy {
            RestartPolicy::OnFailure(policy) if failed => policy,
            _ => {
                end(
                    &shared,
                    &tx,
                    &format!("the server process exited ({status})"),
                )
                .await;
                return;
            }
        };
        match restart(&shared, &child, policy, status, &tx).await {
            Some(next) => stream = next,
            None => return,
        }
    }
}

/// The child's exit status in words, and whether it counts as a failure.
async fn exit_status(handle: &ChildHandle) -> (String, bool) {
    match tokio::time::timeout(EXIT_WAIT, handle.wait()).await {
        Ok(Ok(status)) => (status.to_string(), !status.success()),
        Ok(Err(e)) => (e.to_string(), true),
        Err(_) => {
            let _ = handle.shutdown().await;
            ("it closed its stdout and kept running".to_owned(), true)
        }
    }
}

/// Starts the program again until a start works (the new child's stream) or the policy
/// gives up (`None`, the transport ended).
async fn restart(
    shared: &Shared,
    child: &ChildProcess,
    policy: &ReconnectPolicy,
    status: String,
    tx: &mpsc::Sender<Inbound>,
) -> Option<StdioStream> {
    let mut last = format!("the server process exited ({status})");
    if shared.state().in_a_row >= policy.attempts() {
        end(shared, tx, &gave_up(&last, policy)).await;
        return None;
    }
    let lost: Vec<RequestId> = {
        let mut st = shared.state();
        let attempts = policy.attempts();
        let lost: Vec<RequestId> = st
            .inflight
            .iter()
            .filter(|(_, copy)| copy.as_ref().is_none_or(|(_, resent)| *resent >= attempts))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &lost {
            st.inflight.remove(id);
        }
        lost
    };
    let reason = format!(
        "the server process exited ({status}) with the request in flight; it may or may not \
         have run (the process is being restarted)"
    );
    for id in lost {
        answer(tx, id, modelctx_transport::interrupted(reason.clone())).await;
    }
    let mut stopping = shared.stopping.subscribe();
    loop {
        let attempt = {
            let mut st = shared.state();
            st.in_a_row += 1;
            st.in_a_row
        };
        if attempt > policy.attempts() {
            end(shared, tx, &gave_up(&last, policy)).await;
            return None;
        }
        shared
            .connection
            .send_replace(ConnectionState::Reconnecting { attempt });
        tokio::select! {
            () = tokio::time::sleep(policy.delay(attempt)) => {}
            () = async { stopping.wait_for(|s| *s).await.map(|_| ()).unwrap_or(()) } => {
                end(shared, tx, "the transport was closed").await;
                return None;
            }
        }
        let (transport, handle) = match child.start() {
            Ok(started) => started.into_parts(),
            Err(e) => {
                last = format!("the server process could not be started again: {e}");
                continue;
            }
        };
        let (sink, mut stream) = transport.split();
        let sink = Arc::new(sink);
        let (init, initialized, again) = {
            let st = shared.state();
            let again = st
                .replay
                .replay(|n| RequestId::String(Arc::from(format!("modelctx-replay-{attempt}-{n}"))));
            (st.init.clone(), st.initialized, again)
        };
        if let Some(init) = init {
            let handshake = handshake(&sink, &mut stream, init, initialized, attempt, again);
            if let Err(e) = handshake.await {
                last = format!("the restarted server process {e}");
                tokio::spawn(async move { handle.shutdown().await });
                continue;
            }
        }
        let resend = {
            let mut st = shared.state();
            if shared.stopping() {
                drop(st);
                tokio::spawn(async move { handle.shutdown().await });
                end(shared, tx, "the transport was closed").await;
                return None;
            }
            st.current = Some((sink.clone(), handle));
            st.restarts += 1;
            let mut resend: Vec<TransportMessage> = st
                .inflight
                .values_mut()
                .filter_map(|copy| {
                    let (request, resent) = copy.as_mut()?;
                    *resent += 1;
                    Some(TransportMessage::new(JsonRpcMessage::Request(
                        request.clone(),
                    )))
                })
                .collect();
            let queued = std::mem::take(&mut st.queued);
            for message in &queued {
                if let JsonRpcMessage::Request(r) = &message.message {
                    st.replay.sent(r);
                    let copy = shared.retries(&r.method).then(|| (r.clone(), 0));
                    st.inflight.insert(r.id.clone(), copy);
                }
            }
            resend.extend(queued);
            resend
        };
        for message in resend {
            let _ = sink.send(message).await;
        }
        shared.connection.send_replace(ConnectionState::Connected);
        return Some(stream);
    }
}

fn gave_up(last: &str, policy: &ReconnectPolicy) -> String {
    format!(
        "{last}; gave up after {} restarts in a row (the restart policy's limit)",
        policy.attempts()
    )
}

/// Repeats the session's `initialize` to a new child (under an id of its own) and waits
/// for the answer; then `notifications/initialized` when the session had sent it.
async fn handshake(
    sink: &StdioSink,
    stream: &mut StdioStream,
    mut init: JsonRpcRequest,
    initialized: bool,
    attempt: u32,
    again: Vec<JsonRpcRequest>,
) -> Result<(), String> {
    let id = RequestId::String(Arc::from(format!("modelctx-restart-{attempt}")));
    init.id = id.clone();
    exchange(sink, stream, init).await?;
    if initialized {
        let note = JsonRpcNotification::new("notifications/initialized", None);
        sink.send(TransportMessage::new(JsonRpcMessage::Notification(note)))
            .await
            .map_err(|e| format!("could not be sent notifications/initialized: {e}"))?;
    }
    // The log level and the resource subscriptions of the session (an answer, error or
    // not, is all that is awaited: the server decides).
    for request in again {
        match exchange(sink, stream, request).await {
            Ok(()) | Err(Exchange::Refused(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

enum Exchange {
    Refused(String),
    Failed(String),
}

impl fmt::Display for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(s) | Self::Failed(s) => f.write_str(s),
        }
    }
}

impl From<Exchange> for String {
    fn from(e: Exchange) -> Self {
        e.to_string()
    }
}

/// Sends `request` to a new child and waits (bounded) for its answer; what else the
/// child says meanwhile does not belong to the session yet and is dropped.
async fn exchange(
    sink: &StdioSink,
    stream: &mut StdioStream,
    request: JsonRpcRequest,
) -> Result<(), Exchange> {
    let id = request.id.clone();
    let method = request.method.clone();
    sink.send(TransportMessage::new(JsonRpcMessage::Request(request)))
        .await
        .map_err(|e| Exchange::Failed(format!("could not be sent {method}: {e}")))?;
    let answer = async {
        loop {
            match stream.recv().await {
                Some(Ok(m)) => match m.message {
                    JsonRpcMessage::Response(r) if r.id == id => return Ok(()),
                    JsonRpcMessage::Error(e) if e.id.as_ref() == Some(&id) => {
                        return Err(Exchange::Refused(format!("refused {method}: {}", e.error)));
                    }
                    _ => {}
                },
                Some(Err(_)) => {}
                None => {
                    return Err(Exchange::Failed(format!(
                        "exited before it answered {method}"
                    )));
                }
            }
        }
    };
    tokio::time::timeout(HANDSHAKE_TIMEOUT, answer)
        .await
        .map_err(|_| Exchange::Failed(format!("did not answer {method} in time")))?
}

/// Ends the transport for `reason`: every request still waiting fails with it (those a
/// child may have seen as interrupted, those never sent as undelivered), later sends
/// fail with it, and the session's stream ends when the caller drops `tx`.
async fn end(shared: &Shared, tx: &mpsc::Sender<Inbound>, reason: &str) {
    let (sent, unsent) = {
        let mut st = shared.state();
        st.ended = Some(reason.to_owned());
        st.current = None;
        let sent: Vec<RequestId> = st.inflight.drain().map(|(id, _)| id).collect();
        let unsent: Vec<RequestId> = std::mem::take(&mut st.queued)
            .into_iter()
            .filter_map(|m| match m.message {
                JsonRpcMessage::Request(r) => Some(r.id),
                _ => None,
            })
            .collect();
        (sent, unsent)
    };
    if matches!(shared.policy, RestartPolicy::OnFailure(_)) && !shared.stopping() {
        shared
            .connection
            .send_replace(ConnectionState::Failed(reason.to_owned()));
    }
    // A plain exit or a close ends the session as closed, as a child without
    // restarts does; a restart that gave up says why.
    if shared.stopping() || !matches!(shared.policy, RestartPolicy::OnFailure(_)) {
        return;
    }
    for id in sent {
        let text = format!("{reason}; the request was in flight and may or may not have run");
        answer(tx, id, modelctx_transport::interrupted(text)).await;
    }
    for id in unsent {
        answer(tx, id, modelctx_transport::undelivered(reason.to_owned())).await;
    }
}

async fn answer(tx: &mpsc::Sender<Inbound>, id: RequestId, error: ErrorData) {
    let message = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id), error));
    let _ = tx.send(Ok(TransportMessage::new(message))).await;
}

/// The sending half of a [`RestartingChild`]: writes to the running child, or keeps the
/// message for the next one while it is being replaced.
pub struct RestartingSink {
    shared: Arc<Shared>,
}

impl fmt::Debug for RestartingSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestartingSink").finish_non_exhaustive()
    }
}

impl MessageSink for RestartingSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            {
                let mut st = self.shared.state();
                match &message.message {
                    JsonRpcMessage::Request(r) if r.method == "initialize" => {
                        st.init = Some(r.clone());
                    }
                    JsonRpcMessage::Notification(n) if n.method == "notifications/initialized" => {
                        st.initialized = true;
                    }
                    _ => {}
                }
            }
            let mut failed: Option<Arc<StdioSink>> = None;
            loop {
                let sink = {
                    let mut st = self.shared.state();
                    if let Some(reason) = &st.ended {
                        return Err(TransportError::other(reason.clone()));
                    }
                    let current = st.current.as_ref().map(|(sink, _)| sink.clone());
                    let sink = match current {
                        // The child is gone and its replacement is not there yet: the
                        // message waits for it.
                        None => None,
                        Some(sink) if failed.as_ref().is_some_and(|f| Arc::ptr_eq(f, &sink)) => {
                            None
                        }
                        Some(sink) => Some(sink),
                    };
                    let Some(sink) = sink else {
                        if let JsonRpcMessage::Request(r) = &message.message {
                            st.inflight.remove(&r.id);
                        }
                        st.queued.push(message);
                        return Ok(());
                    };
                    if let JsonRpcMessage::Request(r) = &message.message {
                        st.replay.sent(r);
                        let copy = self.shared.retries(&r.method).then(|| (r.clone(), 0));
                        st.inflight.insert(r.id.clone(), copy);
                    }
                    sink
                };
                match sink.send(message.clone()).await {
                    Ok(()) => return Ok(()),
                    // The child's input closed under us: it died, or the transport is
                    // closing.
                    Err(e) if self.shared.stopping() => return Err(e),
                    Err(e) if matches!(self.shared.policy, RestartPolicy::Never) => return Err(e),
                    Err(_) => failed = Some(sink),
                }
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.shared.stopping.send_replace(true);
            let current = self.shared.state().current.as_ref().map(|(s, _)| s.clone());
            if let Some(sink) = current {
                sink.close().await;
            }
        })
    }
}

impl Drop for RestartingSink {
    fn drop(&mut self) {
        // The session is gone: no more restarts; the running child is shut down in the
        // background once nothing holds its handle.
        self.shared.stopping.send_replace(true);
        let current = self.shared.state().current.take();
        drop(current);
    }
}

/// The receiving half of a [`RestartingChild`]: every child's messages, in order, and
/// the transport's own answers for requests a restart lost.
pub struct RestartingStream {
    rx: mpsc::Receiver<Inbound>,
}

impl fmt::Debug for RestartingStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestartingStream").finish_non_exhaustive()
    }
}

impl MessageStream for RestartingStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(self.rx.recv())
    }
}

/// A handle on a [`RestartingChild`]: the running process, how often it was restarted,
/// where the connection stands, shutdown.
#[derive(Clone)]
pub struct RestartHandle {
    shared: Arc<Shared>,
}

modelctx_types::__debug_shows!(RestartHandle, |v| {
    restarts: &v.restarts(),
    state: &*v.shared.connection.borrow(),
});

impl RestartHandle {
    /// The running child, if one runs (not while it is being replaced, nor after the
    /// transport ended).
    pub fn current(&self) -> Option<ChildHandle> {
        self.shared.state().current.as_ref().map(|(_, h)| h.clone())
    }

    /// How many times the child was started again.
    pub fn restarts(&self) -> u32 {
        self.shared.state().restarts
    }

    /// Where the connection stands, and its changes: `Reconnecting` while a restart is
    /// under way, `Failed` once the policy gave up.
    pub fn connection_state(&self) -> watch::Receiver<ConnectionState> {
        self.shared.connection.subscribe()
    }

    /// Stops restarting and shuts the running child down
    /// ([`ChildHandle::shutdown`]'s escalation). Fails when no child runs.
    pub async fn shutdown(&self) -> io::Result<Shutdown> {
        self.shared.stopping.send_replace(true);
        let Some(child) = self.current() else {
            return Err(io::Error::other("no server process is running"));
        };
        child.shutdown().await
    }
}
