//! One session's link to the registry: what the server role saves its state through
//! ([`SharedSession`]), the revision of the state this process holds, and the queue
//! its messages for a GET stream held elsewhere go through.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use modelctx_store::{ApplySnapshot, RerunCheck, SessionSnapshot, SharedSession};
use modelctx_types::JsonRpcMessage;

use crate::server::event_store::EventId;

use super::registry::{CHANGE_WAIT, Outgoing, RegistryError, Relayed, SessionRegistry};

/// One session's link to the registry: what the server role saves its state through
/// ([`SharedSession`]), and the revision of the state this process holds.
pub(crate) struct SharedState {
    registry: Arc<dyn SessionRegistry>,
    id: Arc<str>,
    /// What the ids of the session's outbound requests start with: the service's
    /// instance name and a slash.
    id_prefix: Arc<str>,
    /// The service's queue of messages for GET streams held elsewhere.
    outbox: tokio::sync::mpsc::Sender<Outgoing>,
    idle: Duration,
    restored: Option<SessionSnapshot>,
    revision: Arc<AtomicU64>,
    /// Whether the client's `notifications/initialized` is recorded in the registry,
    /// as far as this process knows (it never goes back to false).
    client_initialized: Arc<AtomicBool>,
    /// The newest state this process knows (restored, saved here, or taken in), which
    /// the client's `notifications/initialized` is recorded on.
    latest: Arc<Mutex<Option<SessionSnapshot>>>,
    apply: OnceLock<ApplySnapshot>,
    /// What the server says may run again here (see [`SharedSession::on_rerun`]).
    rerun: OnceLock<RerunCheck>,
    /// The caller the session was bound to here (restored copies read the record's).
    owner: OnceLock<Arc<str>>,
}

impl SharedState {
    pub(crate) fn new(
        registry: Arc<dyn SessionRegistry>,
        id: Arc<str>,
        id_prefix: Arc<str>,
        outbox: tokio::sync::mpsc::Sender<Outgoing>,
        idle: Duration,
        restored: Option<(u64, SessionSnapshot)>,
    ) -> Self {
        let (revision, restored) = match restored {
            Some((revision, snapshot)) => (revision, Some(snapshot)),
            None => (0, None),
        };
        let client_initialized = restored.as_ref().is_some_and(|s| s.initialized);
        Self {
            client_initialized: Arc::new(AtomicBool::new(client_initialized)),
            latest: Arc::new(Mutex::new(restored.clone())),
            registry,
            id,
            id_prefix,
            outbox,
            idle,
            restored,
            revision: Arc::new(AtomicU64::new(revision)),
            apply: OnceLock::new(),
            rerun: OnceLock::new(),
            owner: OnceLock::new(),
        }
    }

    /// The id of the caller the session belongs to: bound here, or recorded by the
    /// service that ran its `initialize`.
    pub(crate) fn owner(&self) -> Option<&str> {
        match self.owner.get() {
            Some(owner) => Some(owner),
            None => self.restored.as_ref()?.owner.as_deref(),
        }
    }

    /// Binds the session to caller `owner` (once: a bound session keeps its owner);
    /// every state saved from now on records it, for the other services.
    pub(crate) fn bind_owner(&self, owner: &Arc<str>) {
        if self.owner().is_none() {
            let _ = self.owner.set(owner.clone());
        }
    }

    pub(crate) fn registry(&self) -> &Arc<dyn SessionRegistry> {
        &self.registry
    }

    pub(crate) fn id_prefix(&self) -> &Arc<str> {
        &self.id_prefix
    }

    /// The service's instance name (what its outbound request ids start with).
    pub(crate) fn instance(&self) -> &str {
        self.id_prefix.strip_suffix('/').unwrap_or(&self.id_prefix)
    }

    /// Whether the server says `request`, which a stopped service was running, may run
    /// again here (never, when it said nothing).
    pub(crate) fn may_rerun(&self, request: &modelctx_types::JsonRpcRequest) -> bool {
        self.rerun.get().is_some_and(|check| check(request))
    }

    /// Sends `data`, a message not tied to a request, towards the session's GET
    /// stream: to the service holding it, or kept for the next one that opens it
    /// ([`SessionRegistry::to_client`]). False when the queue is full (Redis far
    /// behind): the message is dropped.
    pub(crate) fn to_client(&self, data: &str, announcement: bool) -> bool {
        self.outbox
            .try_send(Outgoing::ToClient {
                session: self.id.clone(),
                message: data.to_owned(),
                announcement,
            })
            .is_ok()
    }

    /// Gives up `holder`, this service's hold on the GET stream (its connection
    /// ended), once `flushed` resolves (what the hold stored is readable by every
    /// service), and before anything queued after it.
    pub(crate) fn release(&self, holder: Arc<str>, flushed: BoxFuture<'static, ()>) {
        if self
            .outbox
            .try_send(Outgoing::Release {
                session: self.id.clone(),
                holder,
                flushed,
            })
            .is_err()
        {
            tracing::warn!(target: "modelctx_http", session_id = %self.id, "relay queue full, the GET stream's hold is not released");
        }
    }

    /// A new name for a hold on the GET stream: `"<instance>/<n>"`, unique in the
    /// process.
    pub(crate) fn new_holder(&self) -> Arc<str> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Arc::from(format!(
            "{}{}",
            self.id_prefix,
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
    }

    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    /// Whether this copy of the session continues one another service initialised.
    pub(crate) fn is_restored(&self) -> bool {
        self.restored.is_some()
    }

    /// Whether this copy's session runtime started before the client's
    /// `notifications/initialized` arrived (it ran `initialize` here, or continues a
    /// session whose note had not arrived): it then needs the note, from the client or
    /// in its place once the registry says it arrived elsewhere.
    pub(crate) fn started_uninitialized(&self) -> bool {
        self.restored.as_ref().is_none_or(|s| !s.initialized)
    }

    /// Whether the registry says the client's `notifications/initialized` arrived (at
    /// any service), as far as this process has heard.
    pub(crate) fn client_initialized(&self) -> bool {
        self.client_initialized.load(Ordering::Acquire)
    }

    /// Takes in that another service relayed the client's `notifications/initialized`
    /// itself (a service that relays it so has recorded nothing).
    pub(crate) fn initialized_relayed(&self) {
        self.client_initialized.store(true, Ordering::Release);
    }

    /// Records in the registry that the client's `notifications/initialized` arrived
    /// (a new revision of the state, relayed to every copy as a save is), before its
    /// POST is answered: from then on every service serves the session. `Ok(true)`
    /// when it is recorded (now or before), `Ok(false)` when there is no state to
    /// record it on (the note came before `initialize` was answered, or the session is
    /// gone from the registry).
    pub(crate) fn record_initialized(&self) -> BoxFuture<'static, Result<bool, RegistryError>> {
        if self.client_initialized() {
            return Box::pin(async { Ok(true) });
        }
        let latest = self
            .latest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(snapshot) = latest else {
            return Box::pin(async { Ok(false) });
        };
        let storing = self.store(snapshot.with_initialized(true));
        Box::pin(async move { storing.await.map(|saved| saved.is_some()) })
    }

    /// Stores `snapshot` (with the client's `notifications/initialized` when this
    /// process knows it arrived: that never goes back) and relays it to every copy:
    /// the new revision, `None` when the session is not recorded any more.
    fn store(
        &self,
        mut snapshot: SessionSnapshot,
    ) -> BoxFuture<'static, Result<Option<u64>, RegistryError>> {
        snapshot.initialized |= self.client_initialized();
        // The owner travels with every state: a service that starts a copy from the
        // record serves it to that caller only.
        if snapshot.owner.is_none() {
            snapshot.owner = self.owner().map(str::to_owned);
        }
        let saving = self.registry.save(&self.id, &snapshot, self.idle);
        let revision = self.revision.clone();
        let client_initialized = self.client_initialized.clone();
        let latest = self.latest.clone();
        let registry = self.registry.clone();
        let id = self.id.clone();
        let instance = self.instance().to_owned();
        Box::pin(async move {
            let Some(saved) = saving.await? else {
                return Ok(None);
            };
            // Our own save: known, not a change to take in.
            if revision.fetch_max(saved, Ordering::AcqRel) < saved {
                *latest.lock().unwrap_or_else(|p| p.into_inner()) = Some(snapshot.clone());
            }
            if snapshot.initialized {
                client_initialized.store(true, Ordering::Release);
            }
            // The other copies take it in now, not at their next request, and the
            // request that changed it is answered once they all have (the caller
            // awaits this): an update raised after the client's `resources/unsubscribe`
            // is answered finds no copy still subscribed, one raised after
            // `resources/subscribe` finds every copy subscribed, and a request after
            // the client's `notifications/initialized` finds every copy serving. A copy
            // that misses it (Redis lost the message, `CHANGE_WAIT` passed) takes it in
            // at its next touch.
            if let Ok(state) = serde_json::to_string(&snapshot) {
                let message = format!(r#"{{"revision":{saved},"state":{state}}}"#);
                let changed = Relayed::changed(&*id, message);
                match registry
                    .relay_acknowledged(&instance, changed, CHANGE_WAIT)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(target: "modelctx_http", session_id = %id, "not every service acknowledged a session's new state in time");
                    }
                    Err(e) => {
                        tracing::warn!(target: "modelctx_http", session_id = %id, %e, "a session's new state was not relayed");
                    }
                }
            }
            Ok(Some(saved))
        })
    }

    /// The revision of the state this process holds (0: none yet).
    pub(crate) fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    /// Takes in a state another service relayed ([`RelayedKind::Changed`](super::registry::RelayedKind::Changed)).
    pub(crate) fn changed_relayed(&self, message: &str) {
        #[derive(serde::Deserialize)]
        struct Changed {
            revision: u64,
            state: SessionSnapshot,
        }
        if let Ok(changed) = serde_json::from_str::<Changed>(message) {
            self.changed(changed.revision, Box::new(changed.state));
        }
    }

    /// Takes in a state another process saved, if it is newer than the one held.
    pub(crate) fn changed(&self, revision: u64, snapshot: Box<SessionSnapshot>) {
        if snapshot.initialized {
            self.client_initialized.store(true, Ordering::Release);
        }
        if self.revision.fetch_max(revision, Ordering::AcqRel) < revision {
            *self.latest.lock().unwrap_or_else(|p| p.into_inner()) = Some((*snapshot).clone());
            if let Some(apply) = self.apply.get() {
                apply(*snapshot);
            }
        }
    }
}

impl SharedSession for SharedState {
    fn restored(&self) -> Option<SessionSnapshot> {
        self.restored.clone()
    }

    fn save(&self, snapshot: SessionSnapshot) -> BoxFuture<'static, Result<(), RegistryError>> {
        let storing = self.store(snapshot);
        Box::pin(async move {
            match storing.await {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err(RegistryError::new("the session is gone")),
                Err(e) => Err(e),
            }
        })
    }

    fn on_change(&self, apply: ApplySnapshot) {
        let _ = self.apply.set(apply);
    }

    fn on_rerun(&self, check: RerunCheck) {
        let _ = self.rerun.set(check);
    }
}

/// Whether `message` is a list change or a resource update: every copy of a shared
/// session hears it (from its own process's server) and would send it.
pub(crate) fn is_announcement(message: &JsonRpcMessage) -> bool {
    matches!(
        message.method(),
        Some(
            "notifications/tools/list_changed"
                | "notifications/prompts/list_changed"
                | "notifications/resources/list_changed"
                | "notifications/resources/updated"
        )
    )
}

/// This copy's hold on a shared session's standalone stream, as the stream carries it
/// (see `claims.rs`).
#[derive(Default)]
pub(crate) struct Claim {
    /// The hold's name in the registry, while the stream is held here
    /// ([`SessionRegistry::hold_stream`]).
    pub(crate) holder: Option<Arc<str>>,
    /// While the hold is being recorded: what is routed to the stream waits in
    /// `pending` (data, no event id yet, and whether it is an announcement: see
    /// [`is_announcement`]), behind the messages kept for the stream.
    pub(crate) recording: bool,
    pub(crate) pending: VecDeque<(String, bool)>,
    /// The latest hold of the standalone stream here: what it sent is handed to a
    /// service that takes the stream over (`SessionState::let_go`). Boxed: every
    /// session's standalone stream carries a claim, and only a shared one holds this.
    pub(crate) last: Option<Box<LastHold>>,
    /// The last event a resumption of the standalone stream here replayed (on the
    /// stream the client named): what the client has, for the hand-over.
    pub(crate) replayed_to: Option<EventId>,
    /// Messages the registry relayed to a hold here that reached it after its
    /// connection ended: they go to the next hold, first (handed over when it is
    /// another service's, which asks for that hold), so they keep their place before
    /// what the registry kept after the release. Given back to the registry when no
    /// one asked for them in time.
    pub(crate) late: Option<Late>,
}

/// Messages relayed to hold `holder` that reached it after its connection ended,
/// oldest first.
pub(crate) struct Late {
    pub(crate) holder: Arc<str>,
    pub(crate) messages: VecDeque<String>,
}

impl Claim {
    /// Keeps `data` back while the hold is being recorded (at most `limit` messages,
    /// the oldest dropped): `None` when it is not (`data` goes out now), else whether
    /// the oldest was dropped.
    pub(crate) fn keep_back(
        &mut self,
        data: &str,
        announcement: bool,
        limit: usize,
    ) -> Option<bool> {
        if !self.recording {
            return None;
        }
        Some(push_bounded(
            &mut self.pending,
            (data.to_owned(), announcement),
            limit,
        ))
    }

    /// Keeps `data`, relayed to `holder` after its connection ended, for the next hold
    /// (at most `limit` messages, the oldest dropped). Answers what was kept for an
    /// older hold (for the registry), and whether the oldest was dropped.
    pub(crate) fn keep_late(
        &mut self,
        holder: &Arc<str>,
        data: &str,
        limit: usize,
    ) -> (Option<Late>, bool) {
        let older = self.late.take_if(|late| late.holder != *holder);
        let late = self.late.get_or_insert_with(|| Late {
            holder: holder.clone(),
            messages: VecDeque::new(),
        });
        let dropped = push_bounded(&mut late.messages, data.to_owned(), limit.max(1));
        (older, dropped)
    }
}

/// Pushes `item` on `queue`, dropping the oldest when it holds `limit` already: true
/// when it dropped one.
pub(crate) fn push_bounded<T>(queue: &mut VecDeque<T>, item: T, limit: usize) -> bool {
    let full = queue.len() >= limit;
    if full {
        queue.pop_front();
    }
    queue.push_back(item);
    full
}

/// One hold of a shared session's standalone stream by this copy: its name, the
/// first position it sent on, and (once it ended) the position after its last.
pub(crate) struct LastHold {
    pub(crate) holder: Arc<str>,
    pub(crate) from: u64,
    pub(crate) until: Option<u64>,
}
