//! The messages of POSTs handed to the session's runtime: directly on the POST's task
//! while nothing waits in the queue, else through the queue, in order.
//!
//! A POST's requests are normally taken directly on its connection task (see
//! `modelctx-transport`): a handler that answers in its first poll has answered when `push`
//! returns, and an SSE answer whose stream is then complete goes out as one body of known
//! length (no chunked framing, nothing left to poll). So are a new session's `initialize`
//! and notifications: a POST of `notifications/initialized` is answered `202` after its
//! handler's first poll, and the client's next request finds the session operational and
//! nothing queued. When messages go through the queue instead (a message behind a queued
//! one, one the runtime gives back), an SSE answer's head waits until the runtime has
//! handled the POST's messages: the runtime asking for its next message
//! (`HttpServerStream::recv`), the stream's first event or its end releases it
//! (`StreamState::handled`). A handler that answers in its first poll has then queued its
//! event and ended the stream, so hyper writes head, event and end in one `writev` instead
//! of three wake-ups of the client.

use modelctx_transport::{EraRead, Extensions, TransportError, TransportMessage};
use modelctx_types::{InvalidMessage, JsonRpcMessage};
use tokio::sync::mpsc;

/// The messages of a POST: the usual one in place, a batch's on the heap.
pub(crate) type Messages = smallvec::SmallVec<[JsonRpcMessage; 1]>;

use super::{Inbound, SessionState};

impl SessionState {
    /// Hands `messages` to the session's handlers, in order. `answer` names the SSE
    /// stream answering them, released once the runtime has handled the last one.
    ///
    /// While nothing waits in the session's queue, messages the runtime takes directly
    /// ([`DirectReceiver`](modelctx_transport::DirectReceiver)) are handled here, on the
    /// POST's task: a handler that answers at once has answered when this returns. The
    /// first message it gives back, and every later one, go through the queue. `Ok(true)`
    /// when some did. Each message carries `extensions` (the POST's, see
    /// [`modelctx_transport::Extensions`]).
    pub(crate) async fn push(
        &self,
        messages: Messages,
        answer: Option<u64>,
        extensions: &Extensions,
    ) -> Result<bool, ()> {
        self.push_era(messages, answer, extensions, None).await
    }

    /// [`push`](Self::push), the first message with `era`: what the endpoint read of a
    /// request of the stateless era beside its JSON (see [`EraRead`]).
    pub(crate) async fn push_era(
        &self,
        messages: Messages,
        mut answer: Option<u64>,
        extensions: &Extensions,
        mut era: Option<EraRead>,
    ) -> Result<bool, ()> {
        let tx = self.sender()?;
        let mut messages = messages.into_iter();
        let mut queued = Vec::new();
        for message in messages.by_ref() {
            let mut message = TransportMessage::new(message).with_extensions(extensions.clone());
            message.era = era.take().map(Box::new);
            if let Some(back) = self.direct.try_deliver(message) {
                queued.push(back);
                break;
            }
        }
        queued
            .extend(messages.map(|m| TransportMessage::new(m).with_extensions(extensions.clone())));
        let last = queued.len().saturating_sub(1);
        let any = !queued.is_empty();
        for (i, message) in queued.into_iter().enumerate() {
            let inbound = Inbound {
                message: Box::new(Ok(message)),
                taken: if i == last { answer.take() } else { None },
            };
            self.enqueue(&tx, inbound).await?;
        }
        Ok(any)
    }

    /// Hands the session a response POSTed for it that could not be read
    /// ([`InvalidMessage::is_response`]): the runtime fails the call of the session's it
    /// names at once, as every transport does, instead of leaving it to its timeout.
    /// Queued behind the messages before it. `Err` when the session takes no more.
    pub(crate) async fn push_invalid_response(&self, invalid: InvalidMessage) -> Result<(), ()> {
        let tx = self.sender()?;
        let inbound = Inbound {
            message: Box::new(Err(TransportError::invalid(invalid))),
            taken: None,
        };
        self.enqueue(&tx, inbound).await
    }

    /// The session's queue, while it takes messages.
    fn sender(&self) -> Result<mpsc::Sender<Inbound>, ()> {
        self.inbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(())
    }

    /// Queues `inbound` (the runtime's direct entry then waits behind it). `Err` when
    /// the session takes no more.
    async fn enqueue(&self, tx: &mpsc::Sender<Inbound>, inbound: Inbound) -> Result<(), ()> {
        self.direct.queue();
        if tx.send(inbound).await.is_err() {
            self.direct.unqueue();
            return Err(());
        }
        Ok(())
    }
}
