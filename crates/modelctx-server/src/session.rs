//! Per-session state: what the client declared, its log level and resource
//! subscriptions. It lives in the session's service, never in a global; a
//! [`ServerSession`] is the handle an application holds on it.
//!
//! When the transport shares the session (`TransportInfo::shared_session`), `serve_with` starts
//! from the restored snapshot (pre-initialised when the snapshot says the client's
//! `notifications/initialized` arrived; otherwise in `Initializing`, refusing requests but
//! `ping`), registers `apply` for changes made elsewhere, and its rerun check (see
//! `rerun`). `initialize`, `logging/setLevel` and `resources/(un)subscribe` save the
//! snapshot and await it before answering (a failure is `-32603`), so the client's next
//! request sees the change on any process. Two processes changing one session's state at
//! once: the last save wins; each change is answered only once stored. A shared session's
//! task key (the owner of its tasks when no `Principal` is given) is a SHA-256 of its
//! session id, the same on every process, so a task created through one copy is the
//! session's on every other.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use futures_core::future::BoxFuture;
use modelctx_session::{CancellationToken, Peer, SessionError};
use modelctx_store::{SessionSnapshot, SharedSession};
use modelctx_types::{
    ClientCapabilities, ErrorData, Implementation, LoggingLevel, NotificationMethod,
    ProtocolVersion, RequestMethod,
};

/// Where a session shared with other processes starts ([`SessionState::share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resumed {
    /// A new session: its handshake runs here.
    No,
    /// Another process answered its `initialize`; the client's
    /// `notifications/initialized` has not arrived yet.
    AwaitingInitialized,
    /// Another process ran its handshake to the end.
    Operational,
}

/// What one session knows about its client and what the client asked of it.
#[derive(Default)]
pub(crate) struct SessionState {
    pub(crate) info: OnceLock<Implementation>,
    pub(crate) capabilities: OnceLock<ClientCapabilities>,
    pub(crate) protocol_version: OnceLock<ProtocolVersion>,
    /// Fires when the client sends `notifications/initialized`.
    pub(crate) initialized: CancellationToken,
    /// The session's peer (not related to any request), set right after start.
    pub(crate) peer: OnceLock<Peer>,
    /// The minimum level set with `logging/setLevel`; everything passes until then.
    log_level: Mutex<Option<LoggingLevel>>,
    /// URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
    /// The session's key for binding tasks to it: random, made on first use.
    task_key: OnceLock<Option<Arc<str>>>,
    /// Where the state is kept for the server's other processes, when the transport
    /// shares the session (`TransportInfo::shared_session`).
    shared: OnceLock<Arc<dyn SharedSession>>,
}

modelctx_types::__debug_shows!(SessionState, |v| {
    info: &v.info.get(),
    protocol_version: &v.protocol_version.get(),
    shared: &v.shared.get().is_some(),
    ..
});

impl SessionState {
    /// Shares the session's state through `shared`: continues from its restored state
    /// (then the session starts past its `initialize`, operational when the client's
    /// `notifications/initialized` arrived) and takes in changes made by other
    /// processes. `session_id`, the transport's id of the session, keys its
    /// tasks: every process's copy of the session then owns the same tasks (a digest,
    /// so the task store never holds the id, which is the session's bearer).
    pub(crate) fn share(
        self: &Arc<Self>,
        shared: Arc<dyn SharedSession>,
        session_id: Option<&str>,
    ) -> Resumed {
        if let Some(id) = session_id {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(format!("modelctx task owner\n{id}").as_bytes());
            let key = base16ct::lower::encode_string(&digest);
            let _ = self.task_key.set(Some(key.into()));
        }
        let restored = shared.restored();
        let resumed = match &restored {
            None => Resumed::No,
            Some(snapshot) if snapshot.initialized => Resumed::Operational,
            Some(_) => Resumed::AwaitingInitialized,
        };
        if let Some(snapshot) = restored {
            let _ = self.info.set(snapshot.client_info.clone());
            let _ = self.capabilities.set(snapshot.client_capabilities.clone());
            let _ = self.protocol_version.set(snapshot.protocol_version.clone());
            if snapshot.initialized {
                self.initialized.cancel();
            }
            self.apply(snapshot);
        }
        let state = Arc::downgrade(self);
        shared.on_change(Box::new(move |snapshot| {
            if let Some(state) = state.upgrade() {
                state.apply(snapshot);
            }
        }));
        let _ = self.shared.set(shared);
        resumed
    }

    /// Takes in what the client changed through another process.
    fn apply(&self, snapshot: SessionSnapshot) {
        *self.log_level.lock().unwrap_or_else(|p| p.into_inner()) = snapshot.log_level;
        *self.subscriptions.lock().unwrap_or_else(|p| p.into_inner()) =
            snapshot.subscriptions.into_iter().collect();
    }

    /// Stores the session's state for the server's other processes; `None` when the
    /// session is not shared (nothing to wait for). The request that changed the state
    /// awaits it before answering, so the client's next request sees the change
    /// wherever it lands; a failure fails that request (`-32603`).
    pub(crate) fn save(&self) -> Option<BoxFuture<'static, Result<(), ErrorData>>> {
        let shared = self.shared.get()?;
        let (Some(version), Some(info), Some(capabilities)) = (
            self.protocol_version.get(),
            self.info.get(),
            self.capabilities.get(),
        ) else {
            return None;
        };
        let level = self
            .log_level
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let subscriptions: Vec<String> = self
            .subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        let snapshot = SessionSnapshot::new(version.clone(), info.clone(), capabilities.clone())
            .with_initialized(self.initialized.is_cancelled())
            .with_log_level(level)
            .with_subscriptions(subscriptions);
        let saving = shared.save(snapshot);
        Some(Box::pin(async move {
            saving.await.map_err(|e| {
                ErrorData::internal_error(format!(
                    "the session's state could not be shared with the server's other processes: {e}"
                ))
            })
        }))
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *self.log_level.lock().unwrap_or_else(|p| p.into_inner()) = Some(level);
    }

    /// Whether a message at `level` passes the client's chosen minimum.
    pub(crate) fn logs(&self, level: &LoggingLevel) -> bool {
        let threshold = self.log_level.lock().unwrap_or_else(|p| p.into_inner());
        threshold.as_ref().is_none_or(|t| level.passes(t))
    }

    pub(crate) fn subscribe(&self, uri: &str) {
        self.subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uri.to_owned());
    }

    pub(crate) fn unsubscribe(&self, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uri)
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(uri)
    }

    /// The key tasks created on this session are bound to (`None` only when the
    /// system has no randomness to offer).
    pub(crate) fn task_key(&self) -> Option<Arc<str>> {
        self.task_key
            .get_or_init(|| {
                let mut bytes = [0u8; 16];
                getrandom::fill(&mut bytes).ok()?;
                Some(base16ct::lower::encode_string(&bytes).into())
            })
            .clone()
    }

    /// What names the session across the copies of it this process may hold: one
    /// copy per HTTP service when the session is shared through a registry (its
    /// task key, derived from the session id); `None` for a session only this copy
    /// serves.
    pub(crate) fn shared_identity(&self) -> Option<Arc<str>> {
        self.shared.get()?;
        self.task_key.get().cloned().flatten()
    }

    /// The session's peer while it is open and initialised.
    pub(crate) fn live_peer(&self) -> Option<&Peer> {
        self.peer
            .get()
            .filter(|p| !p.is_closed() && p.is_initialized())
    }
}

/// One served session: the handle to talk to that client and watch the session.
#[derive(Debug, Clone)]
pub struct ServerSession {
    pub(crate) peer: Peer,
    pub(crate) state: Arc<SessionState>,
}

impl ServerSession {
    /// The session's peer (the client).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The client's name, version and title, once initialised.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.state.info.get()
    }

    /// The capabilities the client declared, once initialised.
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.state.capabilities.get()
    }

    /// The negotiated protocol revision, once initialised.
    pub fn protocol_version(&self) -> Option<&ProtocolVersion> {
        self.state.protocol_version.get()
    }

    /// Whether the client completed the handshake.
    pub fn is_initialized(&self) -> bool {
        self.peer.is_initialized()
    }

    /// Resolves once the client sent `notifications/initialized`.
    pub async fn initialized(&self) {
        self.state.initialized.cancelled().await;
    }

    /// Sends a request to the client.
    pub async fn request<M: RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        self.peer.request::<M>(params).await
    }

    /// Sends a notification to the client.
    pub async fn notify<N: NotificationMethod>(
        &self,
        params: N::Params,
    ) -> Result<(), SessionError> {
        self.peer.notify::<N>(params).await
    }

    /// Whether the client is subscribed to updates of `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.state.is_subscribed(uri)
    }

    /// Pings the client.
    pub async fn ping(&self) -> Result<(), SessionError> {
        self.peer.ping().await
    }

    /// Resolves when the session has ended.
    pub async fn closed(&self) {
        self.peer.closed().await;
    }

    /// Ends the session.
    pub async fn close(&self) {
        self.peer.close().await;
    }
}
