//! The transport a hosted session runs over: [`HttpServerTransport`], handed to the
//! service's factory, its sink and stream, and [`StreamControl`].

use std::fmt;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use modelctx_store::SharedSession;
use modelctx_transport::{
    DirectReceiver, MessageSink, MessageStream, Transport, TransportError, TransportMessage,
};
use modelctx_types::RequestId;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Handover, Inbound, SessionState};

/// The transport a hosted session runs over, handed to the service's factory.
pub struct HttpServerTransport {
    pub(crate) state: Arc<SessionState>,
    pub(crate) pre_initialized: bool,
    /// Whether its session serves requests of the stateless era (2026-07-28): each
    /// comes with what the endpoint read of it ([`EraRead`](modelctx_transport::EraRead)).
    pub(crate) stateless_era: bool,
}

modelctx_types::__debug_shows!(HttpServerTransport, |v| {
    session_id: &v.session_id(),
    stateless: &v.is_stateless(),
});

impl HttpServerTransport {
    /// The `Mcp-Session-Id` of this session (`None` in session-less mode).
    pub fn session_id(&self) -> Option<&str> {
        self.state.stateful.then_some(&*self.state.id)
    }

    /// Whether this transport serves stateless POSTs: one, or in turn several of
    /// different clients (see
    /// [`StreamableHttpServerConfig::sessionless`](crate::StreamableHttpServerConfig::sessionless)).
    pub fn is_stateless(&self) -> bool {
        !self.state.stateful
    }

    /// Whether the session must start already initialised: true for a stateless POST
    /// that is not an `initialize` (there was no handshake on this transport), and for
    /// a shared session another process initialised, the client's
    /// `notifications/initialized` included (see
    /// [`SessionRegistry`](crate::SessionRegistry); the server role then starts from
    /// the state in
    /// [`TransportInfo::shared_session`](modelctx_transport::TransportInfo::shared_session)).
    pub fn needs_pre_initialized_session(&self) -> bool {
        self.pre_initialized
            || self
                .state
                .shared
                .as_ref()
                .is_some_and(|s| s.is_restored() && !s.started_uninitialized())
    }

    /// Whether the session continues a shared session whose `initialize` another
    /// process answered before the client's `notifications/initialized` arrived: it
    /// must start past `initialize` and serve nothing but `ping` until the note
    /// arrives (`SessionConfig::initialize_answered` in `modelctx-session`; the
    /// transport hands it the note if the client sends it to another process).
    pub fn needs_initialize_answered_session(&self) -> bool {
        self.state
            .shared
            .as_ref()
            .is_some_and(|s| s.is_restored() && s.started_uninitialized())
    }

    /// Whether handlers may send requests to the client over this transport (false in
    /// session-less mode: there is no stream to carry them back).
    pub fn allows_outbound_requests(&self) -> bool {
        self.state.stateful
    }

    /// A handle that closes this session's SSE connections early.
    pub fn stream_control(&self) -> StreamControl {
        StreamControl {
            state: Arc::downgrade(&self.state),
        }
    }
}

impl Transport for HttpServerTransport {
    type Sink = HttpServerSink;
    type Stream = HttpServerStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        let mut info = modelctx_transport::TransportInfo::new("streamable-http")
            .with_stateless_era(self.stateless_era)
            .with_starts_initialized(self.pre_initialized)
            .with_allows_outbound_requests(HttpServerTransport::allows_outbound_requests(self))
            .with_sessionless(!self.state.stateful);
        if self.state.stateful {
            info = info.with_session_id(self.state.id.clone());
        }
        if let Some(shared) = &self.state.shared {
            info = info
                .with_request_id_prefix(shared.id_prefix().clone())
                .with_shared_session(shared.clone() as Arc<dyn SharedSession>);
        }
        info
    }

    fn split(self) -> (HttpServerSink, HttpServerStream) {
        (
            HttpServerSink {
                state: self.state.clone(),
            },
            HttpServerStream {
                rx: None,
                closed: self.state.closed.clone(),
                state: self.state.clone(),
                taken: None,
            },
        )
    }
}

/// Closes SSE connections of one session early, without ending their streams: the
/// client reconnects after the `retry` interval and resumes with `Last-Event-ID`.
#[derive(Debug, Clone)]
pub struct StreamControl {
    state: Weak<SessionState>,
}

impl StreamControl {
    /// Closes the connection of the stream answering request `id`; false when that
    /// request has no open SSE stream.
    pub fn close_request_stream(&self, id: &RequestId) -> bool {
        self.state
            .upgrade()
            .is_some_and(|s| s.close_request_stream(id))
    }

    /// Closes the standalone GET stream's connection; false when none is open.
    pub fn close_standalone_stream(&self) -> bool {
        self.state
            .upgrade()
            .is_some_and(|s| s.close_standalone_stream())
    }
}

/// The sending half of [`HttpServerTransport`]: routes each message to its stream.
pub struct HttpServerSink {
    state: Arc<SessionState>,
}

impl fmt::Debug for HttpServerSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServerSink").finish_non_exhaustive()
    }
}

impl MessageSink for HttpServerSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        match self.state.route_outbound(message) {
            Ok(()) => Box::pin(Sent),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        // The server ends a shared session: it ends for every service (as a DELETE
        // would). A copy that ended here alone first (idle, or told the session ended)
        // leaves the record be.
        let ending = match &self.state.shared {
            Some(shared) if !self.state.closed.is_cancelled() => Some(shared.clone()),
            _ => None,
        };
        self.state.terminate();
        Box::pin(async move {
            if let Some(shared) = ending {
                self.state.end_everywhere(&shared).await;
            }
        })
    }
}

/// A message the sink has already routed: a future without state, so that boxing it
/// allocates nothing (the usual send, once per answer).
struct Sent;

impl std::future::Future for Sent {
    type Output = Result<(), TransportError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// The receiving half of [`HttpServerTransport`]: what the session's POSTs carried.
pub struct HttpServerStream {
    /// The session's queue, once made and taken (see `Inlet`).
    rx: Option<mpsc::Receiver<Inbound>>,
    closed: CancellationToken,
    state: Arc<SessionState>,
    /// The answer stream of the previous message, released when the runtime asks for
    /// the next one.
    taken: Option<u64>,
}

impl fmt::Debug for HttpServerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServerStream").finish_non_exhaustive()
    }
}

impl MessageStream for HttpServerStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        if let Some(stream) = self.taken.take() {
            self.state.release(stream);
        }
        self.state.direct.next();
        Box::pin(async move {
            let rx = loop {
                if let Some(rx) = &mut self.rx {
                    break rx;
                }
                match self.state.inbound.take_queue() {
                    Handover::Made(rx) => self.rx = Some(rx),
                    Handover::Ended => return None,
                    Handover::NotYet => tokio::select! {
                        biased;
                        () = self.state.inbound.changed() => {}
                        () = self.closed.cancelled() => return None,
                    },
                }
            };
            let inbound = tokio::select! {
                biased;
                m = rx.recv() => m?,
                () = self.closed.cancelled() => return None,
            };
            self.taken = inbound.taken;
            self.state.direct.took();
            Some(*inbound.message)
        })
    }

    fn offer_direct(&mut self, receiver: Arc<dyn DirectReceiver>) {
        self.state.direct.offer(&receiver);
    }
}
