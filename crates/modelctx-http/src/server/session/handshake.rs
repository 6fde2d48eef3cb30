//! A new session's handshake: the session exists for its service (in the table,
//! found by id, counted against the cap) only once its `initialize` was answered with a
//! result. Until then it holds a reserved place; an error answer, a POST that ends
//! before the answer, or the session's end gives the place back at once.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use futures::stream::BoxStream;

use super::SessionState;

/// Settles a new session's handshake with the service that started it: called once,
/// with the session and whether its `initialize` was answered with a result.
pub(crate) type OnHandshake = Box<dyn FnOnce(&Weak<SessionState>, bool) + Send + Sync>;

impl SessionState {
    /// Makes this new session wait for its handshake: `settle` hears how it ended.
    pub(crate) fn await_handshake(self: &Arc<Self>, settle: OnHandshake) {
        *self.handshake.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Arc::downgrade(self), settle));
    }

    /// Whether the session waits for its `initialize` to be answered.
    pub(crate) fn handshake_pending(&self) -> bool {
        self.handshake
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// The handshake ended: `ok` when `initialize` was answered with a result. A
    /// session whose handshake failed ends here (what was already routed to its
    /// answer still goes out). Nothing when it was settled before.
    pub(crate) fn settle_handshake(&self, ok: bool) {
        let settle = self
            .handshake
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some((me, settle)) = settle else { return };
        settle(&me, ok);
        if !ok {
            self.terminate();
        }
    }

    /// Gives the reserved place back when the session ends before its handshake did
    /// (called by [`terminate`](Self::terminate)).
    pub(super) fn release_handshake(&self) {
        let settle = self
            .handshake
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((me, settle)) = settle {
            settle(&me, false);
        }
    }
}

/// Fails a session's handshake when the POST that carries its `initialize` ends before
/// the answer (the client left, or the session never answered): dropped with the POST,
/// or with the answer's SSE stream.
pub(crate) struct HandshakeGuard(pub(crate) Arc<SessionState>);

impl Drop for HandshakeGuard {
    fn drop(&mut self) {
        self.0.settle_handshake(false);
    }
}

/// `events`, holding `guard` until they end or are dropped.
pub(crate) fn guarded(
    events: BoxStream<'static, Bytes>,
    guard: HandshakeGuard,
) -> BoxStream<'static, Bytes> {
    use futures::StreamExt;
    let mut guard = Some(guard);
    events
        .chain(futures::stream::poll_fn(move |_| {
            // The answer ended: the handshake is settled by now, unless it never came.
            drop(guard.take());
            std::task::Poll::Ready(None)
        }))
        .boxed()
}
