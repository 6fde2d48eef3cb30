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

use std::sync::{Mutex, MutexGuard};

use modelctx_transport::{EraRead, Extensions, TransportError, TransportMessage};
use modelctx_types::{InvalidMessage, JsonRpcMessage};
use tokio::sync::{Notify, mpsc};

/// The messages of a POST: the usual one in place, a batch's on the heap.
pub(crate) type Messages = smallvec::SmallVec<[JsonRpcMessage; 1]>;

use super::{Inbound, SessionState};

/// The entry of a session's queue: open until the session takes no more messages. The
/// queue itself is made when a first message has to wait: most sessions hand every
/// message over directly and never need one.
pub(crate) struct Inlet {
    state: Mutex<InletState>,
    /// Wakes the runtime's receiver when the queue is made or the inlet closes.
    changed: Notify,
    /// The queue's capacity.
    capacity: usize,
}

struct InletState {
    open: bool,
    /// The queue's sender, once made, while open.
    sender: Option<mpsc::Sender<Inbound>>,
    /// The queue's receiver, once made, until the runtime's receiver takes it.
    receiver: Option<mpsc::Receiver<Inbound>>,
}

/// What the runtime's receiver finds when it has no queue yet.
pub(crate) enum Handover {
    /// The queue, made meanwhile.
    Made(mpsc::Receiver<Inbound>),
    /// None yet: wait for [`Inlet::changed`].
    NotYet,
    /// The inlet closed without one: nothing more will come.
    Ended,
}

impl Inlet {
    /// An open inlet whose queue, once made, holds `capacity` messages (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(InletState {
                open: true,
                sender: None,
                receiver: None,
            }),
            changed: Notify::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, InletState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the session still takes messages.
    pub(crate) fn is_open(&self) -> bool {
        self.lock().open
    }

    /// Takes no more messages. What the queue holds is still received; the receiver
    /// ends once the senders in use are done.
    pub(crate) fn close(&self) {
        let sender = {
            let mut state = self.lock();
            state.open = false;
            state.sender.take()
        };
        drop(sender);
        self.changed.notify_one();
    }

    /// The queue's sender, made now if need be; `Err` once closed.
    fn sender(&self) -> Result<mpsc::Sender<Inbound>, ()> {
        let mut state = self.lock();
        if !state.open {
            return Err(());
        }
        if let Some(sender) = &state.sender {
            return Ok(sender.clone());
        }
        let (sender, receiver) = mpsc::channel(self.capacity);
        state.sender = Some(sender.clone());
        state.receiver = Some(receiver);
        drop(state);
        self.changed.notify_one();
        Ok(sender)
    }

    /// For the runtime's receiver without a queue: the queue, if made meanwhile.
    pub(crate) fn take_queue(&self) -> Handover {
        let mut state = self.lock();
        match state.receiver.take() {
            Some(receiver) => Handover::Made(receiver),
            None if state.open => Handover::NotYet,
            None => Handover::Ended,
        }
    }

    /// Resolves once the queue is made or the inlet closes (or at once when that
    /// happened since the last wake-up).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }
}

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
        if !self.inbound.is_open() {
            return Err(());
        }
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
        if queued.is_empty() {
            return Ok(false);
        }
        let tx = self.inbound.sender()?;
        let last = queued.len() - 1;
        for (i, message) in queued.into_iter().enumerate() {
            let inbound = Inbound {
                message: Box::new(Ok(message)),
                taken: if i == last { answer.take() } else { None },
            };
            self.enqueue(&tx, inbound).await?;
        }
        Ok(true)
    }

    /// Hands the session a response POSTed for it that could not be read
    /// ([`InvalidMessage::is_response`]): the runtime fails the call of the session's it
    /// names at once, as every transport does, instead of leaving it to its timeout.
    /// Queued behind the messages before it. `Err` when the session takes no more.
    pub(crate) async fn push_invalid_response(&self, invalid: InvalidMessage) -> Result<(), ()> {
        let tx = self.inbound.sender()?;
        let inbound = Inbound {
            message: Box::new(Err(TransportError::invalid(invalid))),
            taken: None,
        };
        self.enqueue(&tx, inbound).await
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
