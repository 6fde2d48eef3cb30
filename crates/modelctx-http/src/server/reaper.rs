//! The idle expiry of the sessions a service holds alone: one task for all of them,
//! asleep until the earliest deadline. A task and a timer of its own per session would
//! cost more than the rest of a short session's start and end. (A shared session's
//! local copy keeps a task of its own: it also keeps its record alive, see
//! `table::reap_when_idle`.)
//!
//! A session is due `idle` after its last activity. When it falls due, a session
//! holding a live stream counts as active (it is touched); one active since is due
//! again `idle` after that activity; any other is ended. A session that ends leaves the
//! schedule at once (see [`Reaper::forget`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::session::SessionState;

/// A session's place in the schedule: its deadline, and a number that tells apart
/// sessions due at the same instant.
pub(super) type ReapKey = (Instant, u64);

/// The schedule of a service's local sessions, and its task (started with the first
/// session, on that session's runtime; started again should that runtime end).
pub(super) struct Reaper {
    idle: Duration,
    schedule: Arc<Schedule>,
}

struct Schedule {
    due: Mutex<Due>,
    /// Told when a session falls due before the task looks again.
    earlier: Notify,
}

#[derive(Default)]
struct Due {
    sessions: BTreeMap<ReapKey, Weak<SessionState>>,
    next: u64,
    task: Option<JoinHandle<()>>,
    /// When the task looks at the schedule again at the latest: the earliest deadline,
    /// or `idle` after it found the schedule empty. A session due later needs no wake-up
    /// (most do not: a new session is due after every session before it).
    looks_at: Option<Instant>,
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(task) = self.schedule.lock().task.take() {
            task.abort();
        }
    }
}

impl Schedule {
    fn lock(&self) -> MutexGuard<'_, Due> {
        self.due.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts `session` in the schedule, due `idle` after its last activity; nothing
    /// for a session that has ended.
    fn watch(&self, session: &Arc<SessionState>, idle: Duration) {
        let deadline = session.last_activity() + idle;
        let mut due = self.lock();
        if session.closed.is_cancelled() {
            return;
        }
        let key = (deadline, due.next);
        due.next += 1;
        due.sessions.insert(key, Arc::downgrade(session));
        *session.reap_key() = Some(key);
        if due.looks_at.is_none_or(|at| deadline < at) {
            self.earlier.notify_one();
        }
    }

    /// Takes the first session due by `now` out of the schedule.
    fn take_due(&self, now: Instant) -> Option<Weak<SessionState>> {
        let mut due = self.lock();
        let entry = due.sessions.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let session = entry.remove();
        if let Some(s) = session.upgrade() {
            s.reap_key().take();
        }
        Some(session)
    }

    /// When the task looks again: at the earliest deadline, or `idle` from now when
    /// nothing is due (a session put in the schedule meanwhile is due later).
    fn next_look(&self, idle: Duration) -> Instant {
        let mut due = self.lock();
        let at = match due.sessions.first_key_value() {
            Some((k, _)) => k.0,
            None => Instant::now() + idle,
        };
        due.looks_at = Some(at);
        at
    }
}

impl Reaper {
    pub(super) fn new(idle: Duration) -> Self {
        Self {
            idle,
            schedule: Arc::new(Schedule {
                due: Mutex::default(),
                earlier: Notify::new(),
            }),
        }
    }

    /// Ends `session` once it idles out. Without a tokio runtime here, nothing.
    pub(super) fn watch(&self, session: &Arc<SessionState>) {
        {
            let mut due = self.schedule.lock();
            if due.task.as_ref().is_none_or(JoinHandle::is_finished) {
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                due.task = Some(runtime.spawn(run(self.schedule.clone(), self.idle)));
                due.looks_at = None;
            }
        }
        self.schedule.watch(session, self.idle);
    }

    /// Takes `session`, which has ended, out of the schedule.
    pub(super) fn forget(&self, session: &SessionState) {
        let mut due = self.schedule.lock();
        if let Some(key) = session.reap_key().take() {
            due.sessions.remove(&key);
        }
    }
}

/// The reaper's task: ends each session as it falls due (see the module's text).
async fn run(schedule: Arc<Schedule>, idle: Duration) {
    loop {
        let now = Instant::now();
        while let Some(session) = schedule.take_due(now) {
            let Some(s) = session.upgrade() else { continue };
            if s.closed.is_cancelled() {
                continue;
            }
            if s.has_live_connection() {
                s.touch();
            } else if s.last_activity() + idle <= now {
                s.terminate();
                continue;
            }
            schedule.watch(&s, idle);
        }
        let at = schedule.next_look(idle);
        tokio::select! {
            () = tokio::time::sleep_until(at) => {}
            () = schedule.earlier.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::{Reaper, SessionState};
    use crate::server::config::StreamableHttpServerConfig;

    /// A session whose end calls `reaper.forget`, as its service's does.
    fn session(reaper: &Arc<Reaper>, id: &str) -> Arc<SessionState> {
        let weak = Arc::downgrade(reaper);
        let on_end = Box::new(move |s: &SessionState| {
            if let Some(reaper) = weak.upgrade() {
                reaper.forget(s);
            }
        });
        let config = Arc::new(StreamableHttpServerConfig::default());
        SessionState::new(Arc::from(id), true, config, Some(on_end))
    }

    fn scheduled(reaper: &Reaper) -> usize {
        reaper.schedule.lock().sessions.len()
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_session_ends_and_an_ended_one_leaves_the_schedule() {
        let reaper = Arc::new(Reaper::new(Duration::from_secs(10)));
        let idle = session(&reaper, "idle");
        let deleted = session(&reaper, "deleted");
        reaper.watch(&idle);
        reaper.watch(&deleted);
        assert_eq!(scheduled(&reaper), 2);
        deleted.terminate();
        assert_eq!(
            scheduled(&reaper),
            1,
            "an ended session is forgotten at once"
        );
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(!idle.closed.is_cancelled(), "not idle for long enough yet");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(idle.closed.is_cancelled(), "ended once idle for 10 s");
        assert_eq!(scheduled(&reaper), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn activity_puts_the_deadline_off() {
        let reaper = Arc::new(Reaper::new(Duration::from_secs(10)));
        let active = session(&reaper, "active");
        reaper.watch(&active);
        tokio::time::sleep(Duration::from_secs(6)).await;
        active.touch();
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(
            !active.closed.is_cancelled(),
            "due 10 s after its last activity"
        );
        assert_eq!(scheduled(&reaper), 1);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(active.closed.is_cancelled());
    }
}
