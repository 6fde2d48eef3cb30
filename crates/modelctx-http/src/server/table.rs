//! The state behind a [`StreamableHttpService`](super::StreamableHttpService): the
//! table of the sessions it hosts, their creation, their admission under the cap (and
//! the rate of new sessions per address), and their idle expiry.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use modelctx_store::SessionSnapshot;
use modelctx_transport::Extensions;
use modelctx_types::Principal;
use tokio::time::Instant;

use super::admission::{RateLimiter, Reservation};
use super::config::StreamableHttpServerConfig;
use super::era::MetaCache;
use super::kept::KeptSessions;
use super::reaper::Reaper;
use super::reply;
use super::session::{HttpServerTransport, OnEnd, OnHandshake, SessionState, new_session_id};
use super::shared::record::keep_record;
use super::shared::{Host, Sharing};

/// What the service calls with the transport of every new session.
pub(super) type Factory = dyn Fn(HttpServerTransport) + Send + Sync;

pub(super) struct Inner {
    pub(super) config: Arc<StreamableHttpServerConfig>,
    factory: Box<Factory>,
    sessions: Mutex<foldhash::HashMap<Arc<str>, Arc<SessionState>>>,
    /// Places under the session cap held by new sessions whose `initialize` is not
    /// answered yet (see [`Reservation`]).
    reserved: Arc<AtomicUsize>,
    /// The sessions holding those places, so that the service's end ends them too.
    handshaking: Mutex<foldhash::HashMap<Arc<str>, Weak<SessionState>>>,
    /// New sessions per client address, when limited.
    rate: RateLimiter,
    /// The id every stateless session shares (one allocation, not one per POST).
    stateless_id: Arc<str>,
    /// The `_meta` texts of the stateless era's requests read before (see
    /// [`MetaCache`]).
    pub(super) metas: MetaCache,
    /// Idle sessions of the stateless era, kept for the next POST.
    pub(super) kept: KeptSessions,
    /// Idle sessions of session-less mode's JSON POSTs (the handshake era), kept for
    /// the next POST.
    pub(super) kept_sessionless: KeptSessions,
    /// The sharing of sessions with other services, with a
    /// [session registry](StreamableHttpServerConfig::session_registry).
    pub(super) sharing: Option<Sharing>,
    /// The idle expiry of the sessions held here alone, when they expire.
    reaper: Option<Reaper>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.kept.end_all();
        self.kept_sessionless.end_all();
    }
}

impl Inner {
    /// The state of a new service with `config`, starting its sessions with `factory`.
    pub(super) fn new(config: StreamableHttpServerConfig, factory: Box<Factory>) -> Self {
        let sharing = Sharing::new(&config);
        let reaper = config.session_idle_timeout.map(Reaper::new);
        Self {
            config: Arc::new(config),
            factory,
            sessions: Mutex::default(),
            reserved: Arc::new(AtomicUsize::new(0)),
            handshaking: Mutex::default(),
            rate: RateLimiter::default(),
            stateless_id: Arc::from("stateless"),
            metas: MetaCache::default(),
            kept: KeptSessions::default(),
            kept_sessionless: KeptSessions::default(),
            sharing,
            reaper,
        }
    }

    /// Whether the sessions alive and the places reserved reach the cap.
    pub(super) fn at_cap(&self) -> bool {
        self.lock_sessions().len() + self.reserved.load(Ordering::Acquire)
            >= self.config.max_sessions
    }

    pub(super) fn lock_sessions(
        &self,
    ) -> MutexGuard<'_, foldhash::HashMap<Arc<str>, Arc<SessionState>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn report(&self, status: StatusCode, reason: String) {
        reply::report(&self.config, status, reason);
    }

    pub(super) fn reject(&self, status: StatusCode, reason: impl Into<String>) -> Response {
        reply::reject(&self.config, status, reason)
    }

    /// Creates a session and calls the factory. `id`: the id of a session recorded in
    /// the registry (`restored`: its state, when another service initialised it);
    /// otherwise a new one is made. `None` when the OS cannot supply randomness for the
    /// id. A restored session another request started meanwhile is answered instead.
    ///
    /// `handshake`: a stateful session started by a client's `initialize`, holding this
    /// place under the cap: it enters the table (is found by id, counts as a session)
    /// only once that `initialize` is answered with a result, and ends, giving the place
    /// back, when it is not (see `session/handshake.rs`). Without it, a stateful session
    /// is in the table at once.
    pub(super) fn create_session(
        self: &Arc<Self>,
        id: Option<Arc<str>>,
        stateful: bool,
        pre_initialized: bool,
        stateless_era: bool,
        restored: Option<(u64, SessionSnapshot)>,
        handshake: Option<Reservation>,
    ) -> Option<Arc<SessionState>> {
        // A stateless "session" lives for one POST and its id is never sent anywhere:
        // no randomness (a system call) for it.
        let id: Arc<str> = match id {
            Some(id) => id,
            None if stateful => new_session_id()?,
            None => self.stateless_id.clone(),
        };
        let on_end: Option<OnEnd> = stateful.then(|| {
            let weak: Weak<Inner> = Arc::downgrade(self);
            Box::new(move |session: &SessionState| {
                if let Some(inner) = weak.upgrade() {
                    if let Some(reaper) = &inner.reaper {
                        reaper.forget(session);
                    }
                    let mut sessions = inner.lock_sessions();
                    sessions.remove(&session.id);
                    modelctx_store::table::shrink_drained(&mut *sessions);
                }
            }) as OnEnd
        });
        let (shared, stream_base) = match &self.sharing {
            Some(sharing) if stateful => {
                let (shared, stream_base) = sharing.attach(id.clone(), restored)?;
                (Some(shared), stream_base)
            }
            _ => (None, 0),
        };
        let state = SessionState::with_shared(
            id.clone(),
            stateful,
            self.config.clone(),
            on_end,
            shared,
            stream_base,
        );
        match handshake {
            Some(place) if stateful => {
                state.await_handshake(self.on_handshake(place));
                self.handshaking
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id, Arc::downgrade(&state));
            }
            _ if stateful => {
                let mut sessions = self.lock_sessions();
                if let Some(other) = sessions.get(&id)
                    && !other.closed.is_cancelled()
                {
                    // Restored by another request meanwhile: that one serves it.
                    return Some(other.clone());
                }
                sessions.insert(id, state.clone());
                drop(sessions);
                self.reap_later(&state);
            }
            _ => {}
        }
        (self.factory)(HttpServerTransport {
            state: state.clone(),
            pre_initialized,
            stateless_era,
        });
        Some(state)
    }

    /// Ends `session` once it idles out: a session held here alone in the service's
    /// [`Reaper`], a shared session's local copy on a task of its own (see
    /// [`reap_when_idle`]).
    fn reap_later(&self, session: &Arc<SessionState>) {
        // A shared session's local copy is reaped even without an idle timeout: its
        // record expires some day, and the copy must not outlive it.
        let Some(shared) = &session.shared else {
            if let Some(reaper) = &self.reaper {
                reaper.watch(session);
            }
            return;
        };
        // (A handshake settles where the session's runtime answers: on a runtime, but
        // a sink driven from elsewhere must not make this panic.)
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(reap_when_idle(Arc::downgrade(session), shared.idle()));
        }
    }

    /// Admits a new session from `peer` (`extensions`: its POST's): within the rate of
    /// its address, unless a layer in front authenticated its caller (a
    /// [`Principal`]), and under the cap. The place it holds, or the answer refusing it
    /// (429 with `Retry-After`, or 503).
    pub(super) fn admit_new_session(
        self: &Arc<Self>,
        peer: Option<IpAddr>,
        extensions: &Extensions,
    ) -> Result<Reservation, Response> {
        if let (Some(limit), Some(addr)) = (&self.config.session_rate_limit, peer)
            && extensions.get::<Principal>().is_none()
            && let Err(wait) = self.rate.admit(limit, addr)
        {
            let mut refused = self.reject(
                StatusCode::TOO_MANY_REQUESTS,
                "Too Many Requests: too many new sessions from this address",
            );
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                refused.headers_mut().insert(header::RETRY_AFTER, value);
            }
            return Err(refused);
        }
        self.reserve().ok_or_else(|| {
            self.reject(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: too many sessions",
            )
        })
    }

    /// Ends the sessions whose handshake has not settled (the service is closing: their
    /// POSTs end too).
    pub(super) fn end_handshakes(&self) {
        let pending = modelctx_store::table::take_all(
            &mut *self.handshaking.lock().unwrap_or_else(|p| p.into_inner()),
        );
        for session in pending.iter().filter_map(Weak::upgrade) {
            session.terminate();
        }
    }

    /// Reserves a place for a new session whose handshake is to come; `None` at the
    /// cap (sessions alive and places reserved count alike).
    fn reserve(&self) -> Option<Reservation> {
        let sessions = self.lock_sessions();
        if sessions.len() + self.reserved.load(Ordering::Acquire) >= self.config.max_sessions {
            return None;
        }
        let place = Reservation::take(&self.reserved);
        drop(sessions);
        Some(place)
    }

    /// What a new session tells its service when its handshake ends (`reservation`:
    /// its place): answered with a result, it enters the table (found by id, reaped
    /// when idle); otherwise its place is given back, and a shared session's record
    /// goes too.
    fn on_handshake(self: &Arc<Self>, reservation: Reservation) -> OnHandshake {
        let service = Arc::downgrade(self);
        Box::new(move |session: &Weak<SessionState>, ok: bool| {
            let (Some(inner), Some(session)) = (service.upgrade(), session.upgrade()) else {
                return;
            };
            {
                let mut handshaking = inner.handshaking.lock().unwrap_or_else(|p| p.into_inner());
                handshaking.remove(&session.id);
                modelctx_store::table::shrink_drained(&mut *handshaking);
            }
            if !ok {
                drop(reservation);
                if let Some(shared) = session.shared.clone()
                    && let Ok(runtime) = tokio::runtime::Handle::try_current()
                {
                    runtime.spawn(async move { session.end_everywhere(&shared).await });
                }
                return;
            }
            {
                let mut sessions = inner.lock_sessions();
                // Ended meanwhile: its end already left the table (see `terminate`).
                if session.closed.is_cancelled() {
                    return;
                }
                sessions.insert(session.id.clone(), session.clone());
                // The place is the session's now: given back under the same lock, so
                // the count never misses it.
                drop(reservation);
            }
            inner.reap_later(&session);
        })
    }
}

impl Host for Inner {
    fn config(&self) -> &StreamableHttpServerConfig {
        &self.config
    }

    fn sharing(&self) -> Option<&Sharing> {
        self.sharing.as_ref()
    }

    fn local(&self, id: &str) -> Option<Arc<SessionState>> {
        self.lock_sessions().get(id).cloned()
    }

    fn local_count(&self) -> usize {
        self.lock_sessions().len()
    }

    fn start(
        self: &Arc<Self>,
        id: Arc<str>,
        restored: Option<(u64, SessionSnapshot)>,
        handshake: Option<Reservation>,
    ) -> Option<Arc<SessionState>> {
        self.create_session(Some(id), true, false, false, restored, handshake)
    }
}

/// Ends a shared session's local copy once it has seen no request and held no stream
/// for `idle`.
///
/// A shared session's record expires `idle` after the last request touched it, on
/// whichever service: while a stream is held open here (a long call, the GET stream),
/// this touches the record every `idle / 2`, and ends the local copy when the record
/// is gone (deleted or expired elsewhere). Its local copy ending leaves the record be.
async fn reap_when_idle(state: Weak<SessionState>, idle: std::time::Duration) {
    loop {
        let Some(s) = state.upgrade() else { return };
        let deadline = s.last_activity() + idle / 2;
        let closed = s.closed.clone();
        drop(s);
        tokio::select! {
            () = closed.cancelled() => return,
            () = tokio::time::sleep_until(deadline) => {}
        }
        let Some(s) = state.upgrade() else { return };
        if s.has_live_connection() {
            s.touch();
            if let Some(shared) = s.shared.clone() {
                let id = s.id.clone();
                drop(s);
                if !keep_record(&state, &id, &shared).await {
                    return;
                }
            }
        } else if s.last_activity() + idle <= Instant::now() {
            s.terminate();
            return;
        }
    }
}
