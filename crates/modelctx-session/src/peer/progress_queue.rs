//! The bounded queue between the receive loop and an outbound request's progress
//! callback (SECURITY.md case 27: a progress flood).
//!
//! The receive loop routes each `notifications/progress` for one of our requests here
//! and never waits; the request's task takes the updates and calls the callback. A
//! caller that falls behind (a slow callback, a future not polled) would let an
//! unbounded channel grow with every update the peer sends. Here at most
//! [`PROGRESS_BACKLOG`] updates wait: beyond that the newest replaces the last one
//! waiting, so the callback still sees updates in order and always the latest one, and
//! a flood costs one slot's worth of memory and one lock per update.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;

use super::Progress;

/// How many progress updates may wait for a request's callback.
pub(crate) const PROGRESS_BACKLOG: usize = 32;

/// One request's waiting progress updates.
#[derive(Default)]
pub(crate) struct ProgressQueue {
    waiting: Mutex<VecDeque<Progress>>,
    arrived: Notify,
}

impl ProgressQueue {
    /// Queues an update; when [`PROGRESS_BACKLOG`] wait already, it replaces the
    /// newest of them (the ones before stay, in order). Never waits.
    pub(crate) fn push(&self, progress: Progress) {
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            if waiting.len() >= PROGRESS_BACKLOG {
                waiting.pop_back();
            }
            waiting.push_back(progress);
        }
        self.arrived.notify_one();
    }

    /// The oldest waiting update, without waiting.
    pub(crate) fn try_pop(&self) -> Option<Progress> {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
    }

    /// The oldest waiting update, once there is one.
    pub(crate) async fn pop(&self) -> Progress {
        loop {
            // `notify_one` leaves a permit when nobody waits: an update pushed between
            // the check and the wait is not missed.
            if let Some(p) = self.try_pop() {
                return p;
            }
            self.arrived.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_keeps_the_first_updates_and_the_latest() {
        let queue = ProgressQueue::default();
        for i in 1..=1_000 {
            queue.push(Progress::new(f64::from(i)));
        }
        let seen: Vec<f64> = std::iter::from_fn(|| queue.try_pop())
            .map(|p| p.progress)
            .collect();
        assert_eq!(seen.len(), PROGRESS_BACKLOG);
        assert_eq!(
            seen[..PROGRESS_BACKLOG - 1],
            (1..PROGRESS_BACKLOG as i32)
                .map(f64::from)
                .collect::<Vec<_>>()[..]
        );
        assert_eq!(seen.last(), Some(&1_000.0));
    }
}
