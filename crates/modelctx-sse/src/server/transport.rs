//! One session's transport: the sink writes `message` events onto its event stream,
//! the stream yields what was POSTed for it.
//!
//! The body stream owns a `SessionGuard`: when hyper drops it (the client is gone) or it
//! ends (the sink closed, after what was queued), the session is forgotten, *then* its
//! token cancelled, so whoever sees the end finds a later POST answered 404.
//!
//! The outbound queue is bounded: a full queue makes the sender wait, and one full for
//! `send_timeout` ends the session (there is no `Last-Event-ID` to resume with, so
//! disconnecting a slow reader would lose the session anyway). The session is forgotten
//! right then, not when its event stream is dropped: hyper polls the stream again only
//! after the client reads, so a client that stopped reading would otherwise keep its
//! session counted under the cap for as long as it kept the connection open.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportError, TransportMessage};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::Inner;
use super::handshake::{Handshake, Outcome};

/// What the service keeps of a live session.
pub(crate) struct Session {
    /// Messages POSTed for the session, towards its handlers, and responses POSTed
    /// that could not be read (the runtime fails the calls they name).
    pub(crate) inbound: mpsc::Sender<Result<TransportMessage, TransportError>>,
    /// The session's event stream, for what the service itself answers there (weak:
    /// the stream ends once the sink closes).
    pub(crate) outbound: mpsc::WeakSender<Bytes>,
    /// Cancelled when the session ends (stream gone, send timeout, shutdown).
    pub(crate) closed: CancellationToken,
    /// Where its `initialize` stands.
    pub(crate) handshake: Arc<Handshake>,
}

/// The transport of one legacy SSE session, handed to the service's factory.
///
/// Start a session on it (`server.serve(transport)`). It ends when the client's event
/// stream disconnects: the stream half then ends, and sends fail as closed.
pub struct SseServerTransport {
    pub(crate) sink: SseServerSink,
    pub(crate) stream: SseServerStream,
}

modelctx_types::__debug_shows!(SseServerTransport, |v| { session_id: &v.sink.id, .. });

impl SseServerTransport {
    /// The session id the `endpoint` event carries.
    pub fn session_id(&self) -> &str {
        &self.sink.id
    }
}

impl Transport for SseServerTransport {
    type Sink = SseServerSink;
    type Stream = SseServerStream;

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("sse").with_session_id(self.sink.id.clone())
    }

    fn split(self) -> (SseServerSink, SseServerStream) {
        (self.sink, self.stream)
    }
}

/// The sending half: every message becomes a `message` event on the session's stream.
pub struct SseServerSink {
    pub(crate) id: Arc<str>,
    /// `None` once closed: the stream sends what is queued, then ends.
    pub(crate) out: Mutex<Option<mpsc::Sender<Bytes>>>,
    pub(crate) closed: CancellationToken,
    pub(crate) send_timeout: Duration,
    pub(crate) service: Weak<Inner>,
    pub(crate) handshake: Arc<Handshake>,
}

modelctx_types::__debug_shows!(SseServerSink, |v| { session_id: &v.id, .. });

impl SseServerSink {
    fn sender(&self) -> Option<mpsc::Sender<Bytes>> {
        self.out
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|_| !self.closed.is_cancelled())
            .cloned()
    }
}

impl MessageSink for SseServerSink {
    fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let Some(out) = self.sender() else {
                return Err(TransportError::closed());
            };
            let json = serde_json::to_string(&message.message)
                .map_err(|e| TransportError::other(format!("cannot encode a message: {e}")))?;
            let event = modelctx_http::sse::encode_event("message", &json);
            let outcome = self.handshake.outbound(&message.message);
            // A full queue waits for the reader (backpressure); one that stays full
            // ends the session, since nothing could resume the stream.
            match tokio::time::timeout(self.send_timeout, out.send(event)).await {
                Ok(Ok(())) => {
                    if outcome == Outcome::Failed {
                        // A failed `initialize` ends the session: its error goes out,
                        // then the stream ends (and the session leaves the table).
                        drop(out);
                        self.out.lock().unwrap_or_else(|p| p.into_inner()).take();
                    }
                    Ok(())
                }
                Ok(Err(_)) => Err(TransportError::closed()),
                Err(_) => {
                    if let Some(service) = self.service.upgrade() {
                        service.report(
                            http::StatusCode::OK,
                            format!(
                                "session {}: the client read nothing for {:?}; the session ends",
                                self.id, self.send_timeout
                            ),
                        );
                        // Forgotten now, not when the event stream is dropped: hyper
                        // polls that stream again only once the client reads, which a
                        // client that stopped reading never does, and the session would
                        // hold its place under the session cap as long as it keeps the
                        // connection open.
                        service.forget(&self.id);
                    }
                    self.closed.cancel();
                    Err(TransportError::closed())
                }
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        // Dropping the sender lets the stream send what is queued, then end.
        self.out.lock().unwrap_or_else(|p| p.into_inner()).take();
        Box::pin(async {})
    }
}

/// The receiving half: the messages POSTed for this session, in order.
pub struct SseServerStream {
    pub(crate) inbound: mpsc::Receiver<Result<TransportMessage, TransportError>>,
    pub(crate) closed: CancellationToken,
}

impl fmt::Debug for SseServerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseServerStream").finish_non_exhaustive()
    }
}

impl MessageStream for SseServerStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                m = self.inbound.recv() => m,
                () = self.closed.cancelled() => None,
            }
        })
    }
}

/// The body of a session's event stream: the `endpoint` event, then every queued
/// event, with keep-alive comments while idle. Dropping it (the client went away, or
/// the stream ended) ends the session and forgets it.
pub(crate) struct EventStream {
    pub(crate) endpoint: Option<Bytes>,
    pub(crate) events: mpsc::Receiver<Bytes>,
    pub(crate) keep_alive: Option<tokio::time::Interval>,
    pub(crate) ended: Pin<Box<WaitForCancellationFutureOwned>>,
    pub(crate) _guard: SessionGuard,
}

impl futures::Stream for EventStream {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(endpoint) = self.endpoint.take() {
            return Poll::Ready(Some(Ok(endpoint)));
        }
        if self.ended.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        match self.events.poll_recv(cx) {
            Poll::Ready(Some(event)) => {
                if let Some(tick) = &mut self.keep_alive {
                    tick.reset();
                }
                return Poll::Ready(Some(Ok(event)));
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        if let Some(tick) = &mut self.keep_alive
            && tick.poll_tick(cx).is_ready()
        {
            return Poll::Ready(Some(Ok(Bytes::from_static(b": keep-alive\n\n"))));
        }
        Poll::Pending
    }
}

/// Ends and forgets a session when its event stream goes away.
pub(crate) struct SessionGuard {
    pub(crate) id: Arc<str>,
    pub(crate) closed: CancellationToken,
    pub(crate) service: Weak<Inner>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        // Forgotten first: whoever sees the session end finds it gone.
        if let Some(service) = self.service.upgrade() {
            service.forget(&self.id);
        }
        self.closed.cancel();
    }
}
