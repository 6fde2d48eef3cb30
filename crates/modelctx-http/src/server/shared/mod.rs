//! Sessions shared between server processes through a
//! [`registry::SessionRegistry`]: everything a service does beyond
//! serving its own sessions, behind one seam, [`Sharing`].
//!
//! - [`registry`]: the trait a deployment implements, and the messages relayed through it;
//! - [`state`]: one session's link to its record (its saved state and revision);
//! - `record`: creating, finding (a copy started from the record) and removing a
//!   shared session;
//! - `relay`: the relay task and listener, and the messages of a POST sent on to the
//!   service they belong to;
//! - `hold`: the one GET stream of a session across services (its hold, renewed, and
//!   taken over with a hand-over of what the old holder sent);
//! - `claims`: the hold as the session's standalone stream sees it;
//! - `note`: the client's `notifications/initialized` reaching a copy that did not see it;
//! - `takeover`: answer streams that outlive the service running them.
//!
//! The service ([`Host`]) owns a `Sharing` when it has a registry, and calls it where a
//! request meets a shared session; nothing here knows the service's own types.
//!
//! Without a registry (`StreamableHttpServerConfig::session_registry`, `None` by default)
//! nothing here runs: the service keeps its own map, and the POST path has no I/O,
//! suspension or allocation it would not have otherwise (`resolve_session` is ready at its
//! first poll, `hand_note_first` and `note_from_client` return at their first line). With
//! one, every stateful request resolves its session through it: `touch(id, idle, known
//! revision)` refreshes the record's expiry and answers `Missing` (the local copy ends;
//! 404), `Uninitialized` (400 unless the session is local: its `initialize` is still
//! running elsewhere), `Unchanged`, or `State` (taken into the local copy through the
//! server's `on_change`, or a local copy started from it). A registry error is 503, never a
//! guess.
//!
//! The local copy of a shared session is a cache: it ends after the idle time here (records
//! then live 24 h when `session_idle_timeout` is `None`) without touching the record or the
//! event store, since other services may still serve the session; while it holds a stream
//! open it touches the record every `idle / 2`, and ends when the record is gone. Its
//! streams are numbered from a random base (`u32 << 32`, the standalone stream known as the
//! base in event ids), so the streams several services open for one session never share
//! event ids in a shared event store.
//!
//! The end of a shared session is everybody's: DELETE, or the server closing its copy
//! (`end_everywhere` removes the record, holder and kept messages and forgets the events),
//! relays `RelayedKind::Ended`, and every other copy ends with its streams and in-flight
//! requests (a copy that misses it ends at its next request or keepalive, finding the
//! record gone). A copy ending on its own (idle, or told of the end) leaves the record be.
//! Delivery between services is at most once throughout: a relayed answer that is lost
//! becomes its request's timeout; a full queue or a registry error is reported and dropped.

mod claims;
mod hold;
mod note;
pub(super) mod record;
pub(crate) mod registry;
mod relay;
pub(crate) mod state;
mod takeover;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::Response;
use http::StatusCode;
use modelctx_store::SessionSnapshot;
use tokio::sync::{OnceCell, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::admission::Reservation;
use super::config::StreamableHttpServerConfig;
use super::reply;
use super::session::{SessionState, new_session_id};
use registry::{IDLE_WITHOUT_TIMEOUT, Outgoing, RegistryError, SessionRegistry};
use state::SharedState;

/// Messages for GET streams held by other services queued at most (per service).
const RELAY_QUEUE: usize = 1024;

/// What the sharing of sessions asks of the service that hosts them.
pub(crate) trait Host: Send + Sync + Sized + 'static {
    /// The service's settings.
    fn config(&self) -> &StreamableHttpServerConfig;
    /// The service's sharing (the one calling, when it calls).
    fn sharing(&self) -> Option<&Sharing>;
    /// The service's copy of session `id`, ended or not.
    fn local(&self, id: &str) -> Option<Arc<SessionState>>;
    /// How many sessions the service holds.
    fn local_count(&self) -> usize;
    /// Starts a copy of recorded session `id` here (`restored`: its state, when another
    /// service initialised it; `handshake`: the place of a new session, see
    /// [`Reservation`]). `None` without OS randomness.
    fn start(
        self: &Arc<Self>,
        id: Arc<str>,
        restored: Option<(u64, SessionSnapshot)>,
        handshake: Option<Reservation>,
    ) -> Option<Arc<SessionState>>;
}

/// A service's part in sharing sessions with the others using the same registry: its
/// name among them, its listener for what they relay to it, and its queue of messages
/// for GET streams they hold.
pub(crate) struct Sharing {
    registry: Arc<dyn SessionRegistry>,
    /// This service's name among those sharing the registry (random), and what its
    /// shared sessions' outbound request ids start with (`"<instance>/"`).
    instance: Arc<str>,
    id_prefix: Arc<str>,
    /// How long a shared session's record outlives its last request.
    idle: Duration,
    /// Set once this service listens for messages relayed to it (see
    /// [`SessionRegistry::listen`]); before it serves a shared session.
    listening: OnceCell<()>,
    /// Ends the relay listener with the service.
    stop: CancellationToken,
    /// Messages for GET streams held elsewhere, in order, to the task that relays them
    /// (started with the listener; bounded: a Redis far behind drops, never grows).
    outbox: mpsc::Sender<Outgoing>,
    outbox_rx: Mutex<Option<mpsc::Receiver<Outgoing>>>,
    /// GET streams taken over from another service's hold, by the new hold's name:
    /// waiting for what the old holder sent on the lost connection
    /// ([`RelayedKind::HandedOver`](registry::RelayedKind::HandedOver)).
    handovers: Mutex<HashMap<Arc<str>, oneshot::Sender<Vec<String>>>>,
}

impl Drop for Sharing {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Sharing {
    /// The sharing of a service with `config`, when it has a session registry.
    pub(crate) fn new(config: &StreamableHttpServerConfig) -> Option<Self> {
        let registry = config.session_registry.clone()?;
        // A relayed message finds its service by this name. Without OS randomness no
        // shared session is made anyway.
        let instance: Arc<str> =
            Arc::from(new_session_id().unwrap_or_default().get(..16).unwrap_or(""));
        let (outbox, outbox_rx) = mpsc::channel(RELAY_QUEUE);
        Some(Self {
            registry,
            id_prefix: Arc::from(format!("{instance}/")),
            instance,
            idle: config.session_idle_timeout.unwrap_or(IDLE_WITHOUT_TIMEOUT),
            listening: OnceCell::new(),
            stop: CancellationToken::new(),
            outbox,
            outbox_rx: Mutex::new(Some(outbox_rx)),
            handovers: Mutex::new(HashMap::new()),
        })
    }

    /// The link of a new copy of session `id` to its record (`restored`: the record's
    /// state, when another service initialised it), and the base its streams are
    /// numbered from. `None` without OS randomness.
    pub(crate) fn attach(
        &self,
        id: Arc<str>,
        restored: Option<(u64, SessionSnapshot)>,
    ) -> Option<(Arc<SharedState>, u64)> {
        // A shared session's streams are numbered from a random base: each service that
        // serves it opens streams of its own, and their event ids must not meet in a
        // shared event store.
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).ok()?;
        let stream_base = u64::from(u32::from_le_bytes(bytes) | 1) << 32;
        let shared = SharedState::new(
            self.registry.clone(),
            id,
            self.id_prefix.clone(),
            self.outbox.clone(),
            self.idle,
            restored,
        );
        Some((Arc::new(shared), stream_base))
    }
}

/// The answer to a request the registry could not serve (`503`).
pub(crate) fn registry_unavailable(
    config: &StreamableHttpServerConfig,
    error: &RegistryError,
) -> Response {
    reply::reject(
        config,
        StatusCode::SERVICE_UNAVAILABLE,
        format!("Service Unavailable: {error}"),
    )
}
