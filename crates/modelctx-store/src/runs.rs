//! Requests in flight on the answer streams of shared sessions, recorded so that
//! another service can finish an answer whose service stopped.

use std::sync::Arc;
use std::time::Duration;

use futures_core::future::BoxFuture;

/// What a [`RunStore`] knows of the request answered on one stream of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunState {
    /// No request runs there: it was answered (its events are all stored), or none
    /// was recorded.
    Finished,
    /// The service running it is alive.
    Running,
    /// The service running it stopped (it no longer keeps itself alive, or it gave the
    /// run up): another service may [take it over](RunStore::take_over).
    Orphaned,
}

/// A run [taken over](RunStore::take_over): the request, and how far its stream is
/// stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TakenRun {
    /// The request's text.
    pub request: Arc<str>,
    /// The position of the stream's last stored event (`None`: none is stored). The
    /// stopped service may have sent the client events it never stored (it writes
    /// behind): a client resuming from further on is ahead of the store, not lost.
    pub last_stored: Option<u64>,
}

impl TakenRun {
    /// A run of `request` whose stream is stored up to `last_stored`.
    pub fn new(request: Arc<str>, last_stored: Option<u64>) -> Self {
        Self {
            request,
            last_stored,
        }
    }
}

/// Records which service runs the request answered on each stream of a shared session
/// (see [`SessionRegistry`](crate::SessionRegistry)), so that a client resuming that
/// stream on another service gets its answer even when the service running it stopped.
///
/// An [`EventStore`](crate::EventStore) shared by several services offers one through
/// [`EventStore::runs`](crate::EventStore::runs) (`modelctx-redis`'s does). The
/// service records a request that is still running once its POST has been handled
/// (`begin`), and ends the record after the request's last event is stored (`end`), so
/// `begin`, the stream's events and `end` must reach the store in the order they are
/// called: a store sends them through the same ordered queue as its events, and
/// [`state`](Self::state) and [`take_over`](Self::take_over) through it too. `begin`,
/// `end` and `release` are called under the session's routing lock and must not wait.
///
/// A service that follows a stream running elsewhere polls [`state`](Self::state);
/// when it answers [`RunState::Orphaned`], one service wins
/// [`take_over`](Self::take_over) and finishes the answer: it runs the request again
/// when the server says that is harmless, otherwise it answers it with an error saying
/// it was interrupted.
pub trait RunStore: Send + Sync {
    /// Records that service `owner` runs `request` (the JSON-RPC request's text),
    /// answered on `stream` of `session`.
    fn begin(&self, session: &str, stream: u64, owner: &str, request: Arc<str>);

    /// The request on `stream` was answered (its last event is stored before this
    /// call): forgets the record, if `owner` still holds it.
    fn end(&self, session: &str, stream: u64, owner: &str);

    /// `owner` stops serving the request on `stream` unanswered (its copy of the
    /// session ended): another service may take it over at once.
    fn release(&self, session: &str, stream: u64, owner: &str);

    /// What runs on `stream` of `session`; `None` when the store cannot be asked.
    fn state(&self, session: &str, stream: u64) -> BoxFuture<'static, Option<RunState>>;

    /// Takes the run on `stream` over for service `instance` if it is orphaned:
    /// answers it when this call won it, `None` otherwise (not orphaned, taken by
    /// another service, or the store cannot be asked).
    fn take_over(
        &self,
        session: &str,
        stream: u64,
        instance: &str,
    ) -> BoxFuture<'static, Option<TakenRun>>;

    /// Says service `instance` is alive, for a while longer than
    /// [`keep_alive_interval`](Self::keep_alive_interval); false when the store cannot
    /// be reached.
    fn keep_alive(&self, instance: &str) -> BoxFuture<'static, bool>;

    /// How often a service calls [`keep_alive`](Self::keep_alive).
    fn keep_alive_interval(&self) -> Duration;
}
