//! The queue that carries one stream's SSE events from the session to the HTTP
//! response writing them: one sender (the stream's connection in the session's routes),
//! one receiver (the response body), bounded.
//!
//! Made for this one use rather than a general channel: every SSE answer opens one, so
//! it is one small allocation (the events' buffer comes with the first event) and a lock
//! that no one else ever holds for long.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

/// A queue of at most `capacity` events (at least one).
pub(crate) fn queue(capacity: usize) -> (EventSender, EventReceiver) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            events: VecDeque::new(),
            capacity: capacity.max(1),
            sender_gone: false,
            receiver_gone: false,
            reader: None,
            writer: None,
        }),
    });
    (
        EventSender {
            shared: shared.clone(),
        },
        EventReceiver { shared },
    )
}

struct Shared {
    state: Mutex<State>,
}

struct State {
    events: VecDeque<Bytes>,
    capacity: usize,
    sender_gone: bool,
    receiver_gone: bool,
    /// The receiver, waiting for an event or the end.
    reader: Option<Waker>,
    /// The sender, waiting for room or for the receiver to leave.
    writer: Option<Waker>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why [`EventSender::try_send`] did not queue its event.
#[derive(Debug)]
pub(crate) enum NotSent {
    /// The queue holds `capacity` events: the reader is behind (the event is dropped).
    Full,
    /// The receiver is gone: the connection closed (the event is given back).
    Closed(Bytes),
}

/// The sending half: the session's end of a stream's connection.
pub(crate) struct EventSender {
    shared: Arc<Shared>,
}

impl EventSender {
    /// Queues `event` at once, or says why not.
    pub(crate) fn try_send(&self, event: Bytes) -> Result<(), NotSent> {
        let reader = {
            let mut state = self.shared.lock();
            if state.receiver_gone {
                return Err(NotSent::Closed(event));
            }
            if state.events.len() >= state.capacity {
                return Err(NotSent::Full);
            }
            state.events.push_back(event);
            state.reader.take()
        };
        if let Some(reader) = reader {
            reader.wake();
        }
        Ok(())
    }

    /// Queues `event` once there is room; `Err` with it when the receiver is gone.
    pub(crate) async fn send(&self, event: Bytes) -> Result<(), Bytes> {
        let mut event = Some(event);
        std::future::poll_fn(|cx| {
            let reader = {
                let mut state = self.shared.lock();
                let Some(next) = event.take() else {
                    return Poll::Ready(Ok(()));
                };
                if state.receiver_gone {
                    return Poll::Ready(Err(next));
                }
                if state.events.len() >= state.capacity {
                    event = Some(next);
                    set_waker(&mut state.writer, cx);
                    return Poll::Pending;
                }
                state.events.push_back(next);
                state.reader.take()
            };
            if let Some(reader) = reader {
                reader.wake();
            }
            Poll::Ready(Ok(()))
        })
        .await
    }

    /// Whether the receiver is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.lock().receiver_gone
    }

    /// Resolves when the receiver is gone.
    pub(crate) async fn closed(&self) {
        std::future::poll_fn(|cx| {
            let mut state = self.shared.lock();
            if state.receiver_gone {
                return Poll::Ready(());
            }
            set_waker(&mut state.writer, cx);
            Poll::Pending
        })
        .await
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        let reader = {
            let mut state = self.shared.lock();
            state.sender_gone = true;
            state.reader.take()
        };
        if let Some(reader) = reader {
            reader.wake();
        }
    }
}

/// The receiving half: the events of one connection of a stream, in order, until the
/// sender is gone and all are read.
pub(crate) struct EventReceiver {
    shared: Arc<Shared>,
}

impl EventReceiver {
    /// The next event; `None` once the sender is gone and every event was read.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let (next, writer) = {
            let mut state = self.shared.lock();
            match state.events.pop_front() {
                Some(event) => (event, state.writer.take()),
                None if state.sender_gone => return Poll::Ready(None),
                None => {
                    set_waker(&mut state.reader, cx);
                    return Poll::Pending;
                }
            }
        };
        if let Some(writer) = writer {
            writer.wake();
        }
        Poll::Ready(Some(next))
    }
}

impl Drop for EventReceiver {
    fn drop(&mut self) {
        let (events, writer) = {
            let mut state = self.shared.lock();
            state.receiver_gone = true;
            (std::mem::take(&mut state.events), state.writer.take())
        };
        // Dropped without the lock held.
        drop(events);
        if let Some(writer) = writer {
            writer.wake();
        }
    }
}

fn set_waker(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(waker) if waker.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const LIMIT: Duration = Duration::from_secs(5);

    async fn recv(rx: &mut EventReceiver) -> Option<Bytes> {
        tokio::time::timeout(LIMIT, std::future::poll_fn(|cx| rx.poll_recv(cx)))
            .await
            .expect("an event or the end within the limit")
    }

    #[tokio::test]
    async fn events_arrive_in_order_then_the_end() {
        let (tx, mut rx) = queue(4);
        tx.try_send(Bytes::from_static(b"a")).unwrap();
        tx.send(Bytes::from_static(b"b")).await.unwrap();
        drop(tx);
        assert_eq!(recv(&mut rx).await.as_deref(), Some(&b"a"[..]));
        assert_eq!(recv(&mut rx).await.as_deref(), Some(&b"b"[..]));
        assert_eq!(recv(&mut rx).await, None);
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once_and_makes_send_wait_for_room() {
        let (tx, mut rx) = queue(1);
        tx.try_send(Bytes::from_static(b"a")).unwrap();
        assert!(matches!(
            tx.try_send(Bytes::from_static(b"b")),
            Err(NotSent::Full)
        ));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(event) = recv(&mut rx).await {
                got.push(event);
            }
            got
        });
        tokio::time::timeout(LIMIT, tx.send(Bytes::from_static(b"c")))
            .await
            .unwrap()
            .unwrap();
        drop(tx);
        let got = tokio::time::timeout(LIMIT, reader).await.unwrap().unwrap();
        assert_eq!(got, [Bytes::from_static(b"a"), Bytes::from_static(b"c")]);
    }

    #[tokio::test]
    async fn the_sender_learns_that_the_receiver_left() {
        let (tx, rx) = queue(1);
        tx.try_send(Bytes::from_static(b"a")).unwrap();
        assert!(!tx.is_closed());
        let waiting = tokio::spawn(async move {
            // Waits for room that never comes: the receiver leaves instead.
            let refused = tx.send(Bytes::from_static(b"b")).await;
            tx.closed().await;
            (refused, tx.is_closed())
        });
        tokio::task::yield_now().await;
        drop(rx);
        let (refused, closed) = tokio::time::timeout(LIMIT, waiting).await.unwrap().unwrap();
        assert_eq!(refused, Err(Bytes::from_static(b"b")));
        assert!(closed);
        let (tx, rx) = queue(1);
        drop(rx);
        assert!(matches!(
            tx.try_send(Bytes::from_static(b"c")),
            Err(NotSent::Closed(e)) if e == "c"
        ));
    }
}
