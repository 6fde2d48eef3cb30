//! The server side: a tower service hosting one MCP session per `Mcp-Session-Id`.

// The request steps below fail with the HTTP response that answers the request; it is
// built once per rejected request, so its size does not matter.
#![allow(clippy::result_large_err)]

mod admission;
mod config;
mod era;
mod event_store;
pub mod hosting;
mod registry;
mod run_store;
mod session;

use crate::shared::cancelled_id;
use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use modelctx_transport::{EraRead, Extensions, Principal};
use modelctx_types::{
    ErrorData, InvalidMessage, JsonRpcErrorResponse, JsonRpcMessage, ProtocolVersion, RawValue,
    RequestId,
};
use tokio::time::Instant;

pub use admission::SessionRateLimit;
pub use config::{
    ErrorCallback, HostPolicy, OriginPolicy, Rejection, StreamableHttpServerConfig, cors_layer,
};
pub use event_store::{EventId, EventStore, InMemoryEventStore, InvalidEventId, Replay};
pub use registry::{Lookup, RegistryError, Relayed, RelayedKind, SessionRegistry, StreamHold};
pub use run_store::{RunState, RunStore, TakenRun};
pub use session::{HttpServerSink, HttpServerStream, HttpServerTransport, StreamControl};

use crate::headers::{LAST_EVENT_ID, MCP_SESSION_ID};
use modelctx_transport::SessionSnapshot;
use registry::{Outgoing, SharedState};
use session::{Answer, EraAnswer, SessionState};

type Factory = dyn Fn(HttpServerTransport) + Send + Sync;

/// Messages for GET streams held by other services queued at most (per service).
const RELAY_QUEUE: usize = 1024;

/// Hosts MCP sessions over streamable HTTP.
///
/// The service knows nothing of tools or handlers: for every new MCP session (every
/// POST in stateless mode) it calls the factory with an [`HttpServerTransport`], and
/// the factory starts a session on it, typically `server.serve(transport)`. Mount
/// [`router`](Self::router) anywhere (`Router::new().nest_service("/mcp", ..)`), or run
/// it on a listener with [`serve`](Self::serve).
///
/// A stateful session belongs to the authenticated caller of its `initialize` (the
/// [`Principal`] a layer in front attached, as `modelctx-oauth`'s resource server
/// does) for as long as it lives, on every service sharing it through a
/// [`SessionRegistry`]: a request naming it with another caller is answered `404`, as
/// for an unknown session.
#[derive(Clone)]
pub struct StreamableHttpService {
    inner: Arc<Inner>,
}

struct Inner {
    config: Arc<StreamableHttpServerConfig>,
    factory: Box<Factory>,
    sessions: Mutex<HashMap<Arc<str>, Arc<SessionState>>>,
    /// Places under the session cap held by new sessions whose `initialize` is not
    /// answered yet (see [`admission::Reservation`]).
    reserved: std::sync::atomic::AtomicUsize,
    /// The sessions holding those places, so that the service's end ends them too.
    handshaking: Mutex<HashMap<Arc<str>, Weak<SessionState>>>,
    /// New sessions per client address, when limited.
    rate: admission::RateLimiter,
    /// The id every stateless session shares (one allocation, not one per POST).
    stateless_id: Arc<str>,
    /// The `_meta` texts of the stateless era's requests read before (see
    /// [`era::MetaCache`]).
    metas: era::MetaCache,
    /// Idle sessions of the stateless era, kept for the next POST (see
    /// [`Inner::lend_era_session`]).
    era_sessions: Mutex<Vec<Arc<SessionState>>>,
    /// This service's name among those sharing a session registry (random), and what
    /// its shared sessions' outbound request ids start with (`"<instance>/"`).
    instance: Arc<str>,
    id_prefix: Arc<str>,
    /// Set once this service listens for messages relayed to it (see
    /// [`SessionRegistry::listen`]); before it serves a shared session.
    listening: tokio::sync::OnceCell<()>,
    /// Ends the relay listener with the service.
    relay_stop: tokio_util::sync::CancellationToken,
    /// Messages for GET streams held elsewhere, in order, to the task that relays them
    /// (started with the listener; bounded: a Redis far behind drops, never grows).
    outbox: tokio::sync::mpsc::Sender<Outgoing>,
    outbox_rx: Mutex<Option<tokio::sync::mpsc::Receiver<Outgoing>>>,
    /// GET streams taken over from another service's hold, by the new hold's name:
    /// waiting for what the old holder sent on the lost connection
    /// ([`RelayedKind::HandedOver`]).
    handovers: Mutex<HashMap<Arc<str>, tokio::sync::oneshot::Sender<Vec<String>>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.relay_stop.cancel();
        self.end_kept_era_sessions();
    }
}

impl fmt::Debug for StreamableHttpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpService")
            .field("config", &self.inner.config)
            .field("sessions", &self.session_count())
            .finish()
    }
}

impl StreamableHttpService {
    /// A service with the default settings (stateful, SSE answers, resumable, Origin
    /// and Host limited to loopback names).
    pub fn new(factory: impl Fn(HttpServerTransport) + Send + Sync + 'static) -> Self {
        Self::with_config(StreamableHttpServerConfig::default(), factory)
    }

    /// A service with explicit settings.
    pub fn with_config(
        config: StreamableHttpServerConfig,
        factory: impl Fn(HttpServerTransport) + Send + Sync + 'static,
    ) -> Self {
        // Named only when sessions are shared: a relayed message finds its service by
        // this name. Without OS randomness no shared session is made anyway.
        let instance: Arc<str> = match &config.session_registry {
            Some(_) => Arc::from(new_session_id().unwrap_or_default().get(..16).unwrap_or("")),
            None => Arc::from(""),
        };
        let (outbox, outbox_rx) = tokio::sync::mpsc::channel(RELAY_QUEUE);
        Self {
            inner: Arc::new(Inner {
                config: Arc::new(config),
                factory: Box::new(factory),
                sessions: Mutex::new(HashMap::new()),
                reserved: std::sync::atomic::AtomicUsize::new(0),
                handshaking: Mutex::new(HashMap::new()),
                rate: admission::RateLimiter::default(),
                stateless_id: Arc::from("stateless"),
                metas: era::MetaCache::default(),
                era_sessions: Mutex::new(Vec::new()),
                instance: instance.clone(),
                id_prefix: Arc::from(format!("{instance}/")),
                listening: tokio::sync::OnceCell::new(),
                relay_stop: tokio_util::sync::CancellationToken::new(),
                outbox,
                outbox_rx: Mutex::new(Some(outbox_rx)),
                handovers: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The MCP endpoint as an axum router answering on every path it is mounted at.
    pub fn router(&self) -> Router {
        Router::new()
            .fallback(handle)
            .with_state(self.inner.clone())
    }

    /// Starts a stateful session ahead of any `initialize` and returns its id: for a
    /// client attached out of band (a gateway that provisions sessions, or a test
    /// harness). The factory is called as usual; the session then takes its
    /// `initialize` (sent with this id) like any other. `None` in stateless mode, at the
    /// session cap, without OS randomness, or with a
    /// [session registry](StreamableHttpServerConfig::session_registry) (a shared
    /// session is recorded before it starts: see
    /// [`open_shared_session`](Self::open_shared_session)).
    pub fn open_session(&self) -> Option<String> {
        if !self.inner.config.stateful
            || self.inner.config.session_registry.is_some()
            || self.inner.lock_sessions().len()
                + self
                    .inner
                    .reserved
                    .load(std::sync::atomic::Ordering::Acquire)
                >= self.inner.config.max_sessions
        {
            return None;
        }
        self.inner
            .create_session(None, true, false, false, None, None)
            .map(|s| s.id.to_string())
    }

    /// [`open_session`](Self::open_session) for a service with a
    /// [session registry](StreamableHttpServerConfig::session_registry): the session is
    /// recorded first (under the cap of all services), then started here. `None` as
    /// for `open_session`, at the registry's cap, or when the registry cannot be
    /// reached.
    pub async fn open_shared_session(&self) -> Option<String> {
        let registry = self.inner.config.session_registry.clone()?;
        if !self.inner.config.stateful {
            return None;
        }
        self.inner
            .new_shared_session(&registry, None)
            .await
            .ok()
            .map(|s| s.id.to_string())
    }

    /// How many sessions are alive.
    pub fn session_count(&self) -> usize {
        self.inner.lock_sessions().len()
    }

    /// Ends every session (their streams close, their handlers see the transport end).
    pub fn close_all_sessions(&self) {
        let sessions: Vec<_> = {
            let mut sessions = self.inner.lock_sessions();
            let ended = sessions.drain().map(|(_, s)| s).collect();
            modelctx_transport::table::shrink_drained(&mut *sessions);
            ended
        };
        for s in sessions {
            s.terminate();
        }
        self.inner.end_handshakes();
        self.inner.end_kept_era_sessions();
    }

    /// Serves the endpoint at every path of `listener` until `shutdown` resolves, then
    /// stops accepting, ends every session and waits for open connections to finish.
    ///
    /// Each connection gets `TCP_NODELAY` (SSE writes small events; without it Nagle's
    /// algorithm and delayed ACKs stall each one) and the configured
    /// [header read timeout](StreamableHttpServerConfig::header_read_timeout).
    ///
    /// Bind `127.0.0.1` for a local server. The default [`HostPolicy`] admits only
    /// loopback host names, so a server reachable under another name must list it (or,
    /// behind a proxy that checks it, use [`HostPolicy::Any`]).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_with(listener, hosting::Acceptor::Plain, shutdown)
            .await
    }

    /// [`serve`](Self::serve) over HTTPS (feature `rustls`): each connection, with
    /// `TCP_NODELAY`, first completes a TLS handshake with `tls` (see
    /// [`tls::server_config`](crate::tls::server_config)) within the header read
    /// timeout; a failed handshake ends that connection only.
    #[cfg(feature = "rustls")]
    pub async fn serve_tls(
        self,
        listener: tokio::net::TcpListener,
        tls: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let acceptor = hosting::Acceptor::Tls(tokio_rustls::TlsAcceptor::from(tls));
        self.serve_with(listener, acceptor, shutdown).await
    }

    async fn serve_with(
        self,
        listener: tokio::net::TcpListener,
        acceptor: hosting::Acceptor,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        // The endpoint answers on every path, so the connection calls it straight,
        // without the router's matching, boxing and service layers.
        let inner = self.inner.clone();
        let endpoint = hyper::service::service_fn(move |request: http::Request<_>| {
            let inner = inner.clone();
            async move { Ok::<_, Infallible>(respond(&inner, request).await) }
        });
        let connections = hosting::Connections {
            acceptor,
            header_read_timeout: self.inner.config.header_read_timeout,
            // Read only to limit new sessions per address.
            peer_address: self.inner.config.session_rate_limit.is_some(),
        };
        let reporter = self.inner.clone();
        hosting::accept_loop(
            listener,
            connections,
            shutdown,
            endpoint,
            move |reason| reporter.report(StatusCode::SERVICE_UNAVAILABLE, reason),
            || self.close_all_sessions(),
        )
        .await
    }
}

impl Inner {
    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<SessionState>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long a shared session's record outlives its last request.
    fn shared_idle(&self) -> std::time::Duration {
        self.config
            .session_idle_timeout
            .unwrap_or(registry::IDLE_WITHOUT_TIMEOUT)
    }

    /// Records a new session in the registry (under the cap of every service sharing
    /// it), then starts it here. `handshake`: the place of a session that exists only
    /// once its `initialize` is answered (see [`Inner::create_session`]); without it,
    /// the session is in the table at once.
    async fn new_shared_session(
        self: &Arc<Self>,
        registry: &Arc<dyn SessionRegistry>,
        handshake: Option<admission::Reservation>,
    ) -> Result<Arc<SessionState>, Response> {
        if handshake.is_none() && self.lock_sessions().len() >= self.config.max_sessions {
            return Err(self.reject(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: too many sessions",
            ));
        }
        let Some(id) = new_session_id() else {
            return Err(self.reject(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness available for a session id",
            ));
        };
        self.ensure_listening(registry).await?;
        match registry
            .create(&id, self.shared_idle(), self.config.max_sessions)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                return Err(self.reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many sessions",
                ));
            }
            Err(e) => return Err(self.registry_unavailable(&e)),
        }
        self.create_session(Some(Arc::from(id)), true, false, false, None, handshake)
            .ok_or_else(|| {
                self.reject(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the session could not be created",
                )
            })
    }

    /// Listens for messages relayed to this service, once, before it serves its first
    /// shared session: a response to one of its requests, or a cancellation, relayed
    /// by another service must find it listening.
    async fn ensure_listening(
        self: &Arc<Self>,
        registry: &Arc<dyn SessionRegistry>,
    ) -> Result<(), Response> {
        let started = self
            .listening
            .get_or_try_init(|| async {
                let stream = registry.listen(&self.instance).await?;
                let outbox = self
                    .outbox_rx
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                if let Some(outbox) = outbox {
                    tokio::spawn(send_relayed(
                        outbox,
                        registry.clone(),
                        self.config.stream_queue,
                        self.relay_stop.clone(),
                    ));
                }
                tokio::spawn(relay_loop(
                    Arc::downgrade(self),
                    registry.clone(),
                    self.instance.clone(),
                    self.relay_stop.clone(),
                    stream,
                ));
                if let Some(store) = &self.config.event_store
                    && let Some(runs) = store.runs()
                {
                    // Alive before it records its first run: another service takes
                    // over the runs of a service that no longer says so.
                    runs.keep_alive(&self.instance).await;
                    tokio::spawn(keep_alive(
                        store.clone(),
                        self.instance.clone(),
                        self.relay_stop.clone(),
                    ));
                }
                Ok::<(), RegistryError>(())
            })
            .await;
        started
            .map(|_| ())
            .map_err(|e| self.registry_unavailable(&e))
    }

    /// A message another service relayed: a response for one of this service's
    /// requests, or a cancellation of a request that may run here, a message for the
    /// GET stream held here, the client's `notifications/initialized`, the session's
    /// end or new state. Dropped when the session is not held here (any more) or the
    /// request is not in flight here.
    async fn take_relayed(&self, relayed: Relayed) {
        match relayed.kind {
            RelayedKind::HandOver => return self.hand_over(relayed),
            RelayedKind::HandedOver => {
                #[derive(serde::Deserialize)]
                struct HandedOver {
                    holder: String,
                    events: Vec<String>,
                }
                if let Ok(handed) = serde_json::from_str::<HandedOver>(&relayed.message) {
                    let waiting = self
                        .handovers
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(handed.holder.as_str());
                    if let Some(waiting) = waiting {
                        let _ = waiting.send(handed.events);
                    }
                }
                return;
            }
            _ => {}
        }
        let Some(session) = self
            .lock_sessions()
            .get(relayed.session.as_str())
            .filter(|s| !s.closed.is_cancelled())
            .cloned()
        else {
            return;
        };
        match relayed.kind {
            RelayedKind::ForClient => {
                session.deliver_relayed(&relayed.message);
                return;
            }
            RelayedKind::Ended => {
                session.terminate();
                return;
            }
            RelayedKind::Changed => {
                if let Some(shared) = &session.shared {
                    shared.changed_relayed(&relayed.message);
                }
                // The new state may say the client's `notifications/initialized`
                // arrived elsewhere: a copy still waiting for it takes it now, so it
                // serves the client's next request and may send its own messages.
                hand_missed_initialized(&session).await;
                return;
            }
            _ => {}
        }
        let Ok(message) = relayed.message.parse::<JsonRpcMessage>() else {
            return;
        };
        if message.method() == Some(INITIALIZED) {
            // Relayed by a service that records nothing of it (an older version):
            // taken in as if recorded.
            if let Some(shared) = &session.shared {
                shared.initialized_relayed();
            }
            hand_missed_initialized(&session).await;
            return;
        }
        match &message {
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                let _ = session.push(vec![message], None, &Extensions::new()).await;
            }
            JsonRpcMessage::Notification(_) => match cancelled_id(&message) {
                Some(id) => {
                    if session.is_in_flight(&id) {
                        let _ = session.push(vec![message], None, &Extensions::new()).await;
                        session.cancel_request(&id);
                    }
                }
                // Progress on one of this service's requests.
                None => {
                    let _ = session.push(vec![message], None, &Extensions::new()).await;
                }
            },
            JsonRpcMessage::Request(_) => {}
        }
    }

    /// Another service took over the GET stream of a session from a hold of this one
    /// ([`RelayedKind::HandOver`]): the hold lets go at once (what the session sends
    /// next goes to the registry, which relays it to the new holder), then what it
    /// sent that the client may have missed is read back from the event store and
    /// sent to the new holder, which puts it first on its stream. Always answered
    /// (with nothing, when this copy has no such hold), so the new holder waits no
    /// longer than a round trip.
    fn hand_over(&self, relayed: Relayed) {
        #[derive(serde::Deserialize)]
        struct HandOver {
            holder: String,
            to: String,
            stream: u64,
            after: u64,
        }
        let Ok(asked) = serde_json::from_str::<HandOver>(&relayed.message) else {
            return;
        };
        let Some(registry) = self.config.session_registry.clone() else {
            return;
        };
        let session = self.lock_sessions().get(relayed.session.as_str()).cloned();
        let after = EventId {
            stream: asked.stream,
            seq: asked.after,
        };
        let unsent = session
            .as_ref()
            .and_then(|s| s.let_go(&asked.holder, after))
            .zip(self.config.event_store.clone());
        tokio::spawn(async move {
            let mut events = Vec::new();
            if let Some(((from, until), store)) = unsent
                && let Some(stored) = store.replay_after(&relayed.session, from).await
            {
                events.extend(
                    stored
                        .into_iter()
                        .filter(|(id, _)| id.seq < until)
                        .map(|(_, data)| data.to_string()),
                );
            }
            let to = instance_of(&asked.to).to_owned();
            let message = serde_json::json!({"holder": asked.to, "events": events}).to_string();
            let answer = Relayed::of_kind(RelayedKind::HandedOver, relayed.session, message);
            if let Err(e) = registry.relay(Some(&to), answer).await {
                tracing::warn!(target: "modelctx_http", %e, "a GET stream's hand-over was not answered");
            }
        });
    }

    /// The GET stream of `session`, resumed here, was held by `previous` on another
    /// service: asks it for what it sent on the connection the client lost after the
    /// last event the client has, and answers it, oldest first. Waits at most
    /// [`HAND_OVER_WAIT`]; without an answer (the old holder stopped), reads the
    /// stream the client named once more from the store instead (what was stored on
    /// it since the resumption read it).
    async fn take_over_from(
        &self,
        session: &SessionState,
        registry: &Arc<dyn SessionRegistry>,
        holder: &Arc<str>,
        previous: &str,
    ) -> Vec<String> {
        let after = session.replayed_to().unwrap_or(EventId {
            stream: session.wire_standalone(),
            seq: 0,
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.handovers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(holder.clone(), tx);
        let message = serde_json::json!({
            "holder": previous,
            "to": &**holder,
            "stream": after.stream,
            "after": after.seq,
        })
        .to_string();
        let asked = Relayed::of_kind(RelayedKind::HandOver, session.id.to_string(), message);
        let answer = match registry.relay(Some(instance_of(previous)), asked).await {
            Ok(()) => tokio::time::timeout(HAND_OVER_WAIT, rx)
                .await
                .ok()
                .and_then(Result::ok),
            Err(_) => None,
        };
        self.handovers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(holder);
        if let Some(events) = answer {
            return events;
        }
        self.report(
            StatusCode::OK,
            format!(
                "session {}: the GET stream's old holder did not hand it over",
                session.id
            ),
        );
        self.stored_behind(session).await
    }

    /// What was stored on another service's GET stream, which the resumption here
    /// named, after the resumption's replay read it (nothing when the resumption named
    /// this copy's own stream). Read once this service's hold is recorded: a hold
    /// released before is released only after its event store flushed
    /// ([`EventStore::flushed`]), so the read has everything it stored.
    async fn stored_behind(&self, session: &SessionState) -> Vec<String> {
        match (&self.config.event_store, session.replayed_to()) {
            (Some(store), Some(after)) if after.stream != session.wire_standalone() => store
                .replay_after(&session.id, after)
                .await
                .unwrap_or_default()
                .into_iter()
                .map(|(_, data)| data.to_string())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Sends on the messages of a shared session's POST that belong to another
    /// service, and answers the rest: a response (or progress) whose id (token) names
    /// another service goes to it; a cancellation of a request not in flight here goes
    /// to every service.
    async fn relay_foreign(
        &self,
        session: &SessionState,
        registry: &Arc<dyn SessionRegistry>,
        messages: Vec<JsonRpcMessage>,
    ) -> Vec<JsonRpcMessage> {
        let mut kept = Vec::with_capacity(messages.len());
        for message in messages {
            let to: Option<Option<String>> = match &message {
                JsonRpcMessage::Response(r) => self.foreign_instance(&r.id).map(Some),
                JsonRpcMessage::Error(e) => {
                    e.id.as_ref()
                        .and_then(|id| self.foreign_instance(id))
                        .map(Some)
                }
                JsonRpcMessage::Notification(_) => match cancelled_id(&message) {
                    Some(id) => (!session.is_in_flight(&id)).then_some(None),
                    None => progress_token(&message)
                        .and_then(|token| self.foreign_instance(&token))
                        .map(Some),
                },
                JsonRpcMessage::Request(_) => None,
            };
            let Some(to) = to else {
                kept.push(message);
                continue;
            };
            let Ok(text) = serde_json::to_string(&message) else {
                continue;
            };
            let relayed = Relayed::new(session.id.to_string(), text);
            if let Err(e) = registry.relay(to.as_deref(), relayed).await {
                // At most once: the request this answers or cancels times out.
                self.report(StatusCode::SERVICE_UNAVAILABLE, format!("not relayed: {e}"));
            }
        }
        kept
    }

    /// The service an outbound request id names, when it is another than this one.
    fn foreign_instance(&self, id: &RequestId) -> Option<String> {
        let RequestId::String(id) = id else {
            return None;
        };
        let (instance, n) = id.split_once('/')?;
        (instance != &*self.instance
            && instance.len() == 16
            && instance.bytes().all(|b| b.is_ascii_hexdigit())
            && n.parse::<u64>().is_ok())
        .then(|| instance.to_owned())
    }

    fn registry_unavailable(&self, error: &RegistryError) -> Response {
        self.reject(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Service Unavailable: {error}"),
        )
    }

    fn report(&self, status: StatusCode, reason: String) {
        // What a peer got wrong is DEBUG (a flood of bad requests must not become a
        // flood of warnings); what the server could not do is WARN.
        if status.is_server_error() {
            tracing::warn!(target: "modelctx_http", status = status.as_u16(), %reason, "request rejected");
        } else {
            tracing::debug!(target: "modelctx_http", status = status.as_u16(), %reason, "request rejected");
        }
        if let Some(cb) = &self.config.on_error {
            cb(&Rejection { status, reason });
        }
    }

    fn reject(&self, status: StatusCode, reason: impl Into<String>) -> Response {
        let reason = reason.into();
        self.report(status, reason.clone());
        let code = if status == StatusCode::BAD_REQUEST {
            ErrorData::invalid_request(reason)
        } else {
            ErrorData::new(modelctx_types::ErrorCode(-32000), reason)
        };
        error_response(status, JsonRpcErrorResponse::new(None, code))
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
    fn create_session(
        self: &Arc<Self>,
        id: Option<Arc<str>>,
        stateful: bool,
        pre_initialized: bool,
        stateless_era: bool,
        restored: Option<(u64, SessionSnapshot)>,
        handshake: Option<admission::Reservation>,
    ) -> Option<Arc<SessionState>> {
        // A stateless "session" lives for one POST and its id is never sent anywhere:
        // no randomness (a system call) for it.
        let id: Arc<str> = match id {
            Some(id) => id,
            None if stateful => Arc::from(new_session_id()?),
            None => self.stateless_id.clone(),
        };
        let on_end: Option<session::OnEnd> = stateful.then(|| {
            let weak: Weak<Inner> = Arc::downgrade(self);
            Box::new(move |id: &str| {
                if let Some(inner) = weak.upgrade() {
                    let mut sessions = inner.lock_sessions();
                    sessions.remove(id);
                    modelctx_transport::table::shrink_drained(&mut *sessions);
                }
            }) as session::OnEnd
        });
        let shared = match &self.config.session_registry {
            Some(registry) if stateful => Some(Arc::new(SharedState::new(
                registry.clone(),
                id.clone(),
                self.id_prefix.clone(),
                self.outbox.clone(),
                self.shared_idle(),
                restored,
            ))),
            _ => None,
        };
        // A shared session's streams are numbered from a random base: each service that
        // serves it opens streams of its own, and their event ids must not meet in a
        // shared event store.
        let stream_base = if shared.is_some() {
            let mut bytes = [0u8; 4];
            getrandom::fill(&mut bytes).ok()?;
            u64::from(u32::from_le_bytes(bytes) | 1) << 32
        } else {
            0
        };
        let (state, rx) = SessionState::with_shared(
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
            rx,
            pre_initialized,
            stateless_era,
        });
        Some(state)
    }
}

impl Inner {
    /// Ends `session` once it idles out (see [`reap_when_idle`]).
    fn reap_later(&self, session: &Arc<SessionState>) {
        // A shared session's local copy is reaped even without an idle timeout: its
        // record expires some day, and the copy must not outlive it.
        let idle = match &session.shared {
            Some(shared) => Some(shared.idle()),
            None => self.config.session_idle_timeout,
        };
        // (A handshake settles where the session's runtime answers: on a runtime, but
        // a sink driven from elsewhere must not make this panic.)
        if let Some(idle) = idle
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(reap_when_idle(Arc::downgrade(session), idle));
        }
    }
}

/// The progress token of a `notifications/progress`, as the request id it is (the
/// session runtime uses a request's id as its token).
fn progress_token(message: &JsonRpcMessage) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Progress {
        progress_token: RequestId,
    }
    match message {
        JsonRpcMessage::Notification(n) if n.method == "notifications/progress" => n
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Progress>(p.get()).ok())
            .map(|p| p.progress_token),
        _ => None,
    }
}

/// How long a service taking a GET stream over waits for the old holder's hand-over
/// ([`RelayedKind::HandOver`]): a round trip through the registry when the old holder
/// is well; only one that stopped answering costs this much.
const HAND_OVER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long the release of a GET stream's hold waits for the event store to flush
/// what the hold stored ([`EventStore::flushed`]): one write round trip when the
/// store is well; only one that cannot write costs this much.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The service part of a hold's name (`"<instance>/<n>"`).
fn instance_of(holder: &str) -> &str {
    holder
        .rsplit_once('/')
        .map_or(holder, |(instance, _)| instance)
}

/// Sends on the service's messages for GET streams not held here, and the releases of
/// its holds on them, in order. `keep`: how many messages a session's stream keeps
/// while no service holds it (the backlog of one service's GET stream).
async fn send_relayed(
    mut outbox: tokio::sync::mpsc::Receiver<Outgoing>,
    registry: Arc<dyn SessionRegistry>,
    keep: usize,
    stop: tokio_util::sync::CancellationToken,
) {
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = outbox.recv() => next,
        };
        let Some(next) = next else { return };
        let sent = match next {
            Outgoing::ToClient {
                session,
                message,
                announcement,
            } => {
                registry
                    .to_client(&session, &message, announcement, keep)
                    .await
            }
            Outgoing::Release {
                session,
                holder,
                flushed,
            } => {
                // What the hold stored first, so a service taking the stream as no
                // one's reads it all; bounded, as a store that cannot write would
                // otherwise hold every later message back.
                if tokio::time::timeout(FLUSH_WAIT, flushed).await.is_err() {
                    tracing::warn!(target: "modelctx_http", session_id = %session, "the event store did not flush before the GET stream's hold was released");
                }
                registry.release_stream(&session, &holder).await
            }
        };
        if let Err(e) = sent {
            tracing::warn!(target: "modelctx_http", %e, "a message for a GET stream was not relayed");
        }
    }
}

/// Says this service is alive in the event store's run records, until the service is
/// dropped (see [`RunStore::keep_alive`]).
async fn keep_alive(
    store: Arc<dyn EventStore>,
    instance: Arc<str>,
    stop: tokio_util::sync::CancellationToken,
) {
    let Some(interval) = store.runs().map(RunStore::keep_alive_interval) else {
        return;
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        let Some(runs) = store.runs() else { return };
        let alive = runs.keep_alive(&instance);
        tokio::select! {
            () = stop.cancelled() => return,
            _ = alive => {}
        }
    }
}

/// Takes in what other services relay to this one, until the service is dropped;
/// listens again (after a pause) when the registry's connection is lost.
async fn relay_loop(
    inner: Weak<Inner>,
    registry: Arc<dyn SessionRegistry>,
    instance: Arc<str>,
    stop: tokio_util::sync::CancellationToken,
    first: futures::stream::BoxStream<'static, Relayed>,
) {
    let mut stream = Some(first);
    loop {
        let mut current = match stream.take() {
            Some(s) => s,
            None => {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                }
                match registry.listen(&instance).await {
                    Ok(s) => s,
                    Err(_) => continue,
                }
            }
        };
        loop {
            let next = tokio::select! {
                () = stop.cancelled() => return,
                next = current.next() => next,
            };
            let Some(relayed) = next else { break };
            let Some(inner) = inner.upgrade() else { return };
            inner.take_relayed(relayed).await;
        }
    }
}

/// Gives a GET stream's hold up when its response body is dropped (the connection
/// ended), unless the hold was replaced meanwhile.
struct HoldGuard {
    session: Weak<SessionState>,
    holder: Arc<str>,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        if let Some(session) = self.session.upgrade() {
            session.stream_gone(&self.holder);
        }
    }
}

/// Renews a GET stream's hold every third of `lease` (or of the session's idle time,
/// when shorter: the hold never outlives the record it is renewed to) while it is this
/// copy's and its connection is open. A hold another service took over (a resumption there) ends the
/// connection here; one that lapsed with no other holder is taken again.
async fn renew_hold(session: Weak<SessionState>, holder: Arc<str>, lease: std::time::Duration) {
    loop {
        let Some(s) = session.upgrade() else { return };
        let closed = s.closed.clone();
        let every = s
            .shared
            .as_ref()
            .map_or(lease, |shared| lease.min(shared.idle()))
            / 3;
        drop(s);
        tokio::select! {
            () = closed.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let Some(s) = session.upgrade() else { return };
        let Some(shared) = s.shared.clone() else {
            return;
        };
        if !s.holds(&holder) {
            return;
        }
        let renewing = shared.registry().renew_stream(&s.id, &holder, lease);
        drop(s);
        let renewed = renewing.await;
        let Some(s) = session.upgrade() else { return };
        match renewed {
            Ok(Some(kept)) => {
                if !kept.is_empty() {
                    s.claimed(&holder, kept);
                }
            }
            Ok(None) => {
                s.lost_hold(&holder);
                return;
            }
            // Unreachable now: the next round tries again.
            Err(e) => {
                tracing::warn!(target: "modelctx_http", session_id = %s.id, %e, "the GET stream's hold was not renewed");
            }
        }
    }
}

/// Ends a session once it has seen no request and held no stream for `idle`.
///
/// A shared session's record expires `idle` after the last request touched it, on
/// whichever service: while a stream is held open here (a long call, the GET stream),
/// this touches the record every `idle / 2`, and ends the local copy when the record
/// is gone (deleted or expired elsewhere). Its local copy ending leaves the record be.
async fn reap_when_idle(state: Weak<SessionState>, idle: std::time::Duration) {
    loop {
        let Some(s) = state.upgrade() else { return };
        let wait = if s.shared.is_some() { idle / 2 } else { idle };
        let deadline = s.last_activity() + wait;
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
                let touched = shared
                    .registry()
                    .touch(&s.id, shared.idle(), shared.revision());
                drop(s);
                match touched.await {
                    Ok(Lookup::Missing) => {
                        if let Some(s) = state.upgrade() {
                            s.terminate();
                        }
                        return;
                    }
                    Ok(Lookup::State { revision, snapshot }) => shared.changed(revision, snapshot),
                    // Unreachable now: the next request, or the next round, tries again.
                    Ok(_) | Err(_) => {}
                }
            }
        } else if s.last_activity() + idle <= Instant::now() {
            s.terminate();
            return;
        }
    }
}

/// A session id: 128 random bits from the OS, as 32 hex digits (visible ASCII).
/// `None` without OS randomness: a guessable id is never minted.
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn error_response(status: StatusCode, body: JsonRpcErrorResponse) -> Response {
    let body = serde_json::to_vec(&JsonRpcMessage::Error(body)).unwrap_or_default();
    Response::builder()
        .status(status)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )
        .body(Body::from(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

fn status_only(status: StatusCode) -> Response {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    respond(&inner, request).await
}

/// Answers one HTTP request to the endpoint. Generic over the body so that `serve()`
/// hands hyper's body straight in (the router passes axum's boxed one).
async fn respond<B>(inner: &Arc<Inner>, request: http::Request<B>) -> Response
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    if let Err(r) =
        hosting::check_origin_and_host(&inner.config.origins, &inner.config.hosts, &parts.headers)
    {
        return inner.reject(r.status, r.reason);
    }
    // A header of one meaning sent twice is refused, never read first-wins.
    if let Some(repeated) = crate::headers::repeated_header(&parts.headers) {
        return era::refuse_repeated(inner, &parts.method, &parts.headers, &repeated);
    }
    match parts.method {
        Method::POST => {
            // What layers in front of the endpoint attached for the session's handlers,
            // and the POST's own headers (`Context::extensions().get::<HeaderMap>()`):
            // moved there, not copied, and read back from there.
            let mut extensions = parts
                .extensions
                .get::<Extensions>()
                .cloned()
                .unwrap_or_default();
            // A POST that will be served by a session of its own is marked so here,
            // while the map is still this POST's alone (marking it later copies it).
            let era_by_headers = inner
                .config
                .stateless_era
                .then(|| era::stateless_by_headers(&parts.headers))
                .flatten();
            let sessionless = !inner.config.stateful || era_by_headers == Some(true);
            if sessionless {
                extensions.insert(modelctx_transport::Sessionless);
            }
            let peer = admission::peer(&inner.config, &parts.extensions);
            extensions.insert(crate::headers::sensitive_headers(parts.headers));
            let none = http::HeaderMap::new();
            let headers = extensions.get::<http::HeaderMap>().unwrap_or(&none);
            post(inner, headers, &extensions, body, era_by_headers, peer).await
        }
        Method::GET => get(inner, &parts.headers, &parts.extensions).await,
        Method::DELETE => delete(inner, &parts.headers, &parts.extensions).await,
        _ => {
            let mut response = inner.reject(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("method {} is not allowed on the MCP endpoint", parts.method),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// Whether `Accept` allows `mime` (`type/subtype`), wildcards included.
fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    let (kind, _) = mime.split_once('/').unwrap_or((mime, ""));
    headers.get_all(header::ACCEPT).iter().any(|v| {
        v.to_str().unwrap_or("").split(',').any(|item| {
            let range = item.split(';').next().unwrap_or("").trim();
            range.eq_ignore_ascii_case(mime)
                || range == "*/*"
                || range
                    .strip_suffix("/*")
                    .is_some_and(|k| k.eq_ignore_ascii_case(kind))
        })
    })
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Resolves the session a non-initialize request names.
fn find_session(inner: &Inner, headers: &HeaderMap) -> Result<Arc<SessionState>, Response> {
    let Some(id) = headers.get(&era::SESSION_ID_HEADER) else {
        return Err(inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required",
        ));
    };
    let session = id
        .to_str()
        .ok()
        .and_then(|id| inner.lock_sessions().get(id).cloned());
    match session {
        Some(s) if !s.closed.is_cancelled() => {
            s.touch();
            Ok(s)
        }
        _ => Err(inner.reject(StatusCode::NOT_FOUND, "Not Found: no such session")),
    }
}

/// Resolves the session a request names: this service's own map, or, with a session
/// registry, the registry (every request touches the session's record there). A
/// session bound to another caller than `caller` is answered as unknown (see
/// `session/owner.rs`).
async fn resolve_session(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    caller: Option<&Principal>,
) -> Result<Arc<SessionState>, Response> {
    let session = match &inner.config.session_registry {
        None => find_session(inner, headers)?,
        Some(registry) => find_shared_session(inner, registry, headers).await?,
    };
    if !session.admits(caller) {
        return Err(inner.reject(StatusCode::NOT_FOUND, "Not Found: no such session"));
    }
    Ok(session)
}

/// The authenticated caller a layer in front attached to a request (`extensions`: the
/// HTTP request's).
fn caller_of(extensions: &http::Extensions) -> Option<&Principal> {
    extensions.get::<Extensions>()?.get::<Principal>()
}

/// Resolves a shared session: touches its record, takes in state another service
/// saved, and starts a local copy from the record when this service holds none.
async fn find_shared_session(
    inner: &Arc<Inner>,
    registry: &Arc<dyn SessionRegistry>,
    headers: &HeaderMap,
) -> Result<Arc<SessionState>, Response> {
    let Some(id) = headers.get(MCP_SESSION_ID) else {
        return Err(inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required",
        ));
    };
    let not_found = || inner.reject(StatusCode::NOT_FOUND, "Not Found: no such session");
    let Ok(id) = id.to_str() else {
        return Err(not_found());
    };
    let local = inner
        .lock_sessions()
        .get(id)
        .filter(|s| !s.closed.is_cancelled())
        .cloned();
    let known = local
        .as_ref()
        .and_then(|s| s.shared.as_ref())
        .map_or(0, |s| s.revision());
    let lookup = match registry.touch(id, inner.shared_idle(), known).await {
        Ok(lookup) => lookup,
        Err(e) => return Err(inner.registry_unavailable(&e)),
    };
    match (lookup, local) {
        (Lookup::Missing, local) => {
            // Deleted or expired elsewhere: the local copy ends too.
            if let Some(s) = local {
                s.terminate();
            }
            Err(not_found())
        }
        (Lookup::State { revision, snapshot }, Some(s)) => {
            if let Some(shared) = &s.shared {
                shared.changed(revision, snapshot);
            }
            s.touch();
            Ok(s)
        }
        (Lookup::State { revision, snapshot }, None) => {
            inner.ensure_listening(registry).await?;
            if inner.lock_sessions().len() >= inner.config.max_sessions {
                return Err(inner.reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many sessions",
                ));
            }
            let session = inner
                .create_session(
                    Some(Arc::from(id)),
                    true,
                    false,
                    false,
                    Some((revision, *snapshot)),
                    None,
                )
                .ok_or_else(|| {
                    inner.reject(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the session could not be created",
                    )
                })?;
            if let Some(shared) = &session.shared
                && shared.started_uninitialized()
                && !shared.client_initialized()
            {
                // Started from a record that did not have the client's
                // `notifications/initialized` yet. Had another service recorded it
                // meanwhile, its relay found no copy here to take it in; asked again now
                // that the copy is in the map (a later relay reaches it), so the copy
                // does not wait for the note until its next request here.
                match registry
                    .touch(id, inner.shared_idle(), shared.revision())
                    .await
                {
                    Ok(Lookup::State { revision, snapshot }) => shared.changed(revision, snapshot),
                    Ok(_) => {}
                    Err(e) => return Err(inner.registry_unavailable(&e)),
                }
            }
            Ok(session)
        }
        (_, Some(s)) => {
            s.touch();
            Ok(s)
        }
        // Recorded, but its `initialize` has not been answered (on another service):
        // nothing to continue from yet.
        (_, None) => Err(inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: the session is not initialised yet",
        )),
    }
}

/// Checks `MCP-Protocol-Version` and returns the revision the request speaks: the
/// session's negotiated one when there is a session, else the header's, else 2025-03-26.
///
/// Only a malformed or unsupported header is refused. A supported revision other than
/// the negotiated one is accepted, as the spec asks (and as the official conformance
/// suite, which sends `2025-03-26` on a 2025-11-25 session, expects); the session keeps
/// speaking the revision it negotiated.
fn protocol_version(
    inner: &Inner,
    headers: &HeaderMap,
    session: Option<&SessionState>,
) -> Result<ProtocolVersion, Response> {
    let negotiated = session.and_then(SessionState::negotiated_version);
    match headers.get(&era::PROTOCOL_VERSION_HEADER) {
        Some(value) => match value.to_str().ok().and_then(ProtocolVersion::supported) {
            Some(v) => Ok(negotiated.cloned().unwrap_or(v)),
            None => Err(inner.reject(
                StatusCode::BAD_REQUEST,
                // Other SDKs' clients look for this literal while negotiating.
                format!(
                    "Bad Request: Unsupported protocol version {value:?} (MCP-Protocol-Version)"
                ),
            )),
        },
        None => Ok(negotiated.cloned().unwrap_or(ProtocolVersion::V2025_03_26)),
    }
}

/// Reads the whole body, at most `max_body_bytes`, within `body_timeout`.
async fn read_body<B>(inner: &Inner, body: B) -> Result<Bytes, Response>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    hosting::read_body(body, inner.config.max_body_bytes, inner.config.body_timeout)
        .await
        .map_err(|r| inner.reject(r.status, r.reason))
}

/// A body that is no message (or a batch holding one): the 400 that answers it, and
/// the responses in it that could not be read, for the session whose calls they name.
struct BadBody {
    answer: Response,
    invalid_responses: Vec<InvalidMessage>,
}

impl From<Response> for BadBody {
    fn from(answer: Response) -> Self {
        Self {
            answer,
            invalid_responses: Vec::new(),
        }
    }
}

/// The body's messages and whether it was a batch; `Err` answers 400.
fn parse_body(inner: &Inner, bytes: &[u8]) -> Result<(Vec<JsonRpcMessage>, bool), BadBody> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let items = serde_json::from_slice::<Vec<Box<RawValue>>>(bytes)
            .map_err(|e| bad_message(inner, ErrorData::parse_error(format!("Parse error: {e}"))))?;
        if items.is_empty() {
            return Err(bad_message(inner, ErrorData::invalid_request("empty batch")).into());
        }
        let mut messages = Vec::with_capacity(items.len());
        let mut first_fault = None;
        let mut invalid_responses = Vec::new();
        for item in &items {
            match JsonRpcMessage::from_slice(item.get().as_bytes()) {
                Ok(m) => messages.push(m),
                Err(invalid) => {
                    if first_fault.is_none() {
                        first_fault = Some(invalid.error.clone());
                    }
                    if invalid.is_response() {
                        invalid_responses.push(invalid);
                    }
                }
            }
        }
        return match first_fault {
            None => Ok((messages, true)),
            Some(error) => Err(BadBody {
                answer: bad_message(inner, error),
                invalid_responses,
            }),
        };
    }
    JsonRpcMessage::from_slice(bytes)
        .map(|m| (vec![m], false))
        .map_err(|invalid| {
            let status = StatusCode::BAD_REQUEST;
            inner.report(status, invalid.error.message.to_string());
            if invalid.is_response() {
                // The spec's error body for a refused response has no id (the id is
                // the server's own, not one the client asked with).
                let answer = error_response(
                    status,
                    JsonRpcErrorResponse::new(None, invalid.error.clone()),
                );
                BadBody {
                    answer,
                    invalid_responses: vec![invalid],
                }
            } else {
                error_response(status, invalid.into_response()).into()
            }
        })
}

/// Responses POSTed for a session that could not be read: refused with 400 (the
/// caller's answer), and handed to the session named by the headers, whose runtime
/// fails the calls they name at once (as over stdio) rather than at their timeouts.
/// Nothing is handed over without a live stateful session of the era that has client
/// responses; another session, or none, is never touched.
async fn hand_over_invalid_responses(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    era_by_headers: Option<bool>,
    invalid: Vec<InvalidMessage>,
    caller: Option<&Principal>,
) {
    if invalid.is_empty()
        || !inner.config.stateful
        || (inner.config.stateless_era && era_by_headers == Some(true))
        || headers.get(&era::SESSION_ID_HEADER).is_none()
    {
        return;
    }
    let Ok(session) = resolve_session(inner, headers, caller).await else {
        return;
    };
    for invalid in invalid {
        if session.push_invalid_response(invalid).await.is_err() {
            return;
        }
    }
}

fn bad_message(inner: &Inner, error: ErrorData) -> Response {
    inner.report(StatusCode::BAD_REQUEST, error.message.to_string());
    error_response(
        StatusCode::BAD_REQUEST,
        JsonRpcErrorResponse::new(None, error),
    )
}

const INITIALIZE: &str = "initialize";
const INITIALIZED: &str = "notifications/initialized";

/// Hands the session's runtime the client's `notifications/initialized` when the
/// registry says it arrived at another service and the runtime here still waits for it
/// (see [`SessionState::missed_initialized`]).
async fn hand_missed_initialized(session: &SessionState) {
    let mut note = Vec::new();
    let gate = session.hand_note_first(&mut note).await;
    if !note.is_empty() {
        let _ = session.push(note, None, &Extensions::new()).await;
    }
    drop(gate);
}

/// `era_by_headers`: whether the headers alone put the POST in the stateless era
/// ([`era::stateless_by_headers`], when that era is served). `peer`: the client's
/// address, when new sessions are rate-limited per address and it is known.
async fn post<B>(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &Extensions,
    body: B,
    era_by_headers: Option<bool>,
    peer: Option<std::net::IpAddr>,
) -> Response
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !accepts(headers, "application/json") || !accepts(headers, "text/event-stream") {
        return inner.reject(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    if let Err(r) = hosting::check_json_content_type(headers) {
        return inner.reject(r.status, r.reason);
    }
    let bytes = match read_body(inner, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (messages, batch) = match parse_body(inner, &bytes) {
        Ok(m) => m,
        Err(bad) => {
            hand_over_invalid_responses(
                inner,
                headers,
                era_by_headers,
                bad.invalid_responses,
                extensions.get::<Principal>(),
            )
            .await;
            return bad.answer;
        }
    };
    if inner.config.stateless_era && era::is_stateless(era_by_headers, &messages) {
        return stateless_post(inner, headers, extensions, messages, batch).await;
    }
    // Only a request starts a handshake: a notification named `initialize` is no
    // handshake, and goes to the session its POST names like any other.
    let init = messages
        .iter()
        .any(|m| matches!(m, JsonRpcMessage::Request(r) if r.method == INITIALIZE));
    if init && messages.len() > 1 {
        return inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: initialize must be sent on its own",
        );
    }
    let stateful = inner.config.stateful;
    let mut reservation = None;
    let session = if !stateful {
        None
    } else if init && headers.get(&era::SESSION_ID_HEADER).is_none() {
        // A new session: it holds a place under the cap until its `initialize` is
        // answered, and exists only if that succeeds.
        let place = match inner.admit_new_session(peer, extensions) {
            Ok(place) => place,
            Err(r) => return r,
        };
        if let Some(registry) = &inner.config.session_registry {
            match inner.new_shared_session(registry, Some(place)).await {
                Ok(s) => Some(s),
                Err(r) => return r,
            }
        } else {
            reservation = Some(place);
            None
        }
    } else {
        match resolve_session(inner, headers, extensions.get::<Principal>()).await {
            Ok(s) => Some(s),
            Err(r) => return r,
        }
    };
    if !init {
        let version = match protocol_version(inner, headers, session.as_deref()) {
            Ok(v) => v,
            Err(r) => return r,
        };
        if batch && !version.allows_batches() {
            return bad_message(
                inner,
                ErrorData::invalid_request(format!(
                    "batches are not supported in protocol version {}",
                    version.as_str()
                )),
            );
        }
    }
    let session = match session {
        Some(s) => s,
        None => {
            match inner.create_session(None, stateful, !stateful && !init, false, None, reservation)
            {
                Some(s) => s,
                None => {
                    return inner.reject(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "no randomness available for a session id",
                    );
                }
            }
        }
    };
    if init {
        // Bound to the caller of its `initialize` for as long as it lives.
        session.bind_owner(extensions.get::<Principal>());
    }
    dispatch(inner, session, messages, extensions, init, None).await
}

/// A POST of the stateless era (2026-07-28): one request, its headers checked against
/// its body, served by a session of the era lent to it alone (see
/// [`Inner::lend_era_session`]).
async fn stateless_post(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &Extensions,
    mut messages: Vec<JsonRpcMessage>,
    batch: bool,
) -> Response {
    if batch {
        return bad_message(
            inner,
            ErrorData::invalid_request(
                "Invalid request: protocol version 2026-07-28 has no batches; send one message per POST",
            ),
        );
    }
    // Read in place: the body's one message goes on to the session in the same vector.
    let request = match messages.as_slice() {
        [] => return bad_message(inner, ErrorData::invalid_request("empty body")),
        // The era defines no client notification over HTTP (closing a response stream
        // cancels its request): accepted, and nothing to deliver.
        [JsonRpcMessage::Notification(_), ..] => return status_only(StatusCode::ACCEPTED),
        [JsonRpcMessage::Request(request), ..] => request,
        [JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_), ..] => {
            return bad_message(
                inner,
                ErrorData::invalid_request(
                    "Invalid request: in protocol version 2026-07-28 the client sends no responses",
                ),
            );
        }
    };
    let meta = match era::check_headers(headers, request, &inner.metas) {
        Ok(meta) => meta,
        Err(error) => {
            inner.report(StatusCode::BAD_REQUEST, error.message.to_string());
            return error_response(
                StatusCode::BAD_REQUEST,
                JsonRpcErrorResponse::new(Some(request.id.clone()), error),
            );
        }
    };
    let era = EraRead {
        mirrored: era::mirrored_params(headers),
        meta,
    };
    // A handshake (a server that does not serve the era answers one) changes its
    // session: that session is not lent again.
    let Some(lease) = inner.lend_era_session(request.method != "initialize") else {
        return inner.reject(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the session could not be created",
        );
    };
    messages.truncate(1);
    let session = lease.session.clone();
    dispatch(inner, session, messages, extensions, false, Some(era)).await
}

/// How many idle sessions of the stateless era an endpoint keeps (see
/// [`Inner::lend_era_session`]): about as many as POSTs of the era it serves at once.
/// Each is a session runtime waiting for its next message (a few KiB).
const KEPT_ERA_SESSIONS: usize = 64;

/// A session of the stateless era lent to one POST: handed back to its endpoint when
/// the POST ends (answered, or dropped with its connection), kept if it is idle.
struct EraLease<'a> {
    inner: &'a Inner,
    session: Arc<SessionState>,
    /// Whether the POST's request leaves its session as it found it.
    keep: bool,
}

impl Drop for EraLease<'_> {
    fn drop(&mut self) {
        if !self.session.take_back_era(self.keep) {
            return;
        }
        let mut kept = self
            .inner
            .era_sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT_ERA_SESSIONS {
            kept.push(self.session.clone());
        } else {
            drop(kept);
            self.session.end_era();
        }
    }
}

impl Inner {
    /// A session for one POST of the stateless era: an idle one kept from an earlier
    /// POST, else a new one. A request of the era brings everything it needs (its
    /// envelope, its headers in [`EraRead`]) and leaves nothing in its session (the
    /// era has no handshake, no `logging/setLevel`, no `resources/subscribe`; tasks
    /// are not bound to a session without an id), so one session serves POST after
    /// POST, one at a time, and a POST skips starting and ending a session runtime.
    /// `keep`: whether the POST's request leaves its session as it found it. `None`
    /// when a new session cannot be made.
    fn lend_era_session(self: &Arc<Self>, keep: bool) -> Option<EraLease<'_>> {
        loop {
            let kept = self
                .era_sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop();
            match kept {
                Some(session) if session.is_open() => {
                    return Some(EraLease {
                        inner: self,
                        session,
                        keep,
                    });
                }
                // Ended meanwhile (its runtime stopped): dropped.
                Some(session) => session.end_era(),
                None => break,
            }
        }
        let session = self.create_session(None, false, false, true, None, None)?;
        session.lend_era();
        Some(EraLease {
            inner: self,
            session,
            keep,
        })
    }

    /// Ends the kept sessions of the stateless era (a kept session's runtime holds the
    /// session: it ends only when told).
    fn end_kept_era_sessions(&self) {
        let kept =
            std::mem::take(&mut *self.era_sessions.lock().unwrap_or_else(|p| p.into_inner()));
        for session in kept {
            session.end_era();
        }
    }
}

/// Hands a POST's messages to its session and answers the POST. `stateless_era`: the
/// answer's HTTP status follows the JSON-RPC error it carries, when it is known before
/// the head goes out (see [`era::status_of`]).
async fn dispatch(
    inner: &Inner,
    session: Arc<SessionState>,
    mut messages: Vec<JsonRpcMessage>,
    extensions: &Extensions,
    init: bool,
    mut era: Option<EraRead>,
) -> Response {
    let stateless_era = era.is_some();
    // A new session's handshake fails if this POST ends before its answer.
    let mut handshake =
        (init && session.handshake_pending()).then(|| session::HandshakeGuard(session.clone()));
    if session.shared.is_some()
        && let Some(registry) = &inner.config.session_registry
    {
        messages = inner.relay_foreign(&session, registry, messages).await;
    }
    let ids: Vec<RequestId> = messages
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        })
        .collect();
    if let Some(dup) = ids.iter().find(|id| session.is_in_flight(id)) {
        return bad_message(
            inner,
            ErrorData::invalid_request(format!("request id {dup} is already in flight")),
        );
    }
    let cancelled: Vec<RequestId> = messages.iter().filter_map(cancelled_id).collect();
    session.note_from_client(&messages);
    let note = session.shared.is_some() && messages.iter().any(|m| m.method() == Some(INITIALIZED));
    if init && let Some(id) = ids.first() {
        session.expect_initialize(id.clone());
    }
    // The stateless era's one request: its answer is JSON unless something must be
    // streamed, and the stream is built only then (see `Route::Era`). (In JSON-response
    // mode it is JSON in any case.) Its session offers direct delivery, so a handler
    // that answers at once has answered when `push` returns; one whose message was
    // queued (a transport user that starts its session later) gets its stream at once,
    // and the answer follows on it.
    if stateless_era
        && !inner.config.json_response
        && let [id] = ids.as_slice()
    {
        let answer = session.open_era_answer(id);
        if session
            .push_era(messages, None, extensions, era)
            .await
            .is_err()
        {
            return inner.reject(StatusCode::NOT_FOUND, "Not Found: the session has ended");
        }
        return match session.settle_era_answer(id, answer) {
            Some(EraAnswer::Json(body, error)) => json_response(era::status_for(error), body),
            Some(EraAnswer::Stream(events)) => era_stream(&session, &ids, events),
            None => era_stream(&session, &ids, futures::stream::empty().boxed()),
        };
    }
    let mut answer = (!ids.is_empty()).then(|| session.open_answer(&ids));
    let stream = match &answer {
        Some(Answer::Sse { stream, .. }) => Some(*stream),
        _ => None,
    };
    // A request of a shared session still running once the POST is handled is
    // recorded, so another service can finish its answer if this one stops.
    let run_request: Option<Arc<str>> = (!init && ids.len() == 1 && session.records_runs())
        .then(|| {
            messages
                .iter()
                .find(|m| matches!(m, JsonRpcMessage::Request(_)))
        })
        .flatten()
        .and_then(|m| serde_json::to_string(m).ok())
        .map(Arc::from);
    // A shared session's runtime still waiting for the client's
    // `notifications/initialized`, which the registry says went to another service,
    // takes one in its place first: only then (see `SessionState::missed_initialized`).
    let gate = session.hand_note_first(&mut messages).await;
    let pushed = session
        .push_era(messages, stream, extensions, era.take())
        .await;
    drop(gate);
    let Ok(queued) = pushed else {
        return inner.reject(StatusCode::NOT_FOUND, "Not Found: the session has ended");
    };
    if note && let Some(shared) = &session.shared {
        // The client's `notifications/initialized`, handed to the runtime here first
        // (it then has the time the registry takes to take it in: a request of its own
        // right after the 202 finds it operational), is recorded before the POST is
        // answered: a new revision every copy takes in. Until then each copy refuses
        // the client's requests but `ping` (as one service does before the note) and
        // sends nothing but pings and logging; after it, every copy serves the session.
        // Nothing to record on a session whose `initialize` is not answered yet.
        if let Err(e) = shared.record_initialized().await {
            return inner.registry_unavailable(&e);
        }
    }
    // The head of an SSE answer waits until the runtime has handled the POST's
    // messages (or the stream's first event, or its end): a handler that answers at
    // once has then queued its event and ended the stream, and hyper writes head, event
    // and end in one write instead of three, each a wake-up of the client. A handler
    // still running leaves the stream open and the head goes out. Messages the runtime
    // took directly were handled before `push` returned.
    if queued && let Some(Answer::Sse { handled, .. }) = &mut answer {
        let _ = handled.await;
    }
    if let (Some(request), Some(stream)) = (run_request, stream) {
        session.begin_run(stream, request);
    }
    for id in &cancelled {
        session.cancel_request(id);
    }
    let mut response = match answer {
        None => {
            if !session.stateful {
                session.finish_inbound();
            }
            status_only(StatusCode::ACCEPTED)
        }
        Some(Answer::Sse { events, .. }) if stateless_era => era_stream(&session, &ids, events),
        Some(Answer::Sse { events, .. }) => match handshake.take() {
            Some(guard) => sse_response(session::guarded(events, guard)),
            None => sse_response(events),
        },
        Some(Answer::Json(waiters)) => {
            let mut out = Vec::with_capacity(waiters.len());
            let mut error = None;
            for rx in waiters {
                match rx.await {
                    Ok((m, code)) => {
                        out.push(m);
                        error = code;
                    }
                    Err(_) => {
                        return inner.reject(
                            StatusCode::NOT_FOUND,
                            "Not Found: the session ended before answering",
                        );
                    }
                }
            }
            let out_len = out.len();
            let body = if out_len == 1 {
                out.swap_remove(0)
            } else {
                format!("[{}]", out.join(","))
            };
            // The era has no batches: its one answer's error sets the status.
            let status = if stateless_era && out_len == 1 {
                era::status_for(error)
            } else {
                StatusCode::OK
            };
            json_response(status, body)
        }
    };
    if let Some(v) = &session.id_header {
        response
            .headers_mut()
            .insert(era::SESSION_ID_HEADER.clone(), v.clone());
    }
    response
}

/// A JSON answer (`body`: its text).
fn json_response(status: StatusCode, body: String) -> Response {
    Response::builder()
        .status(status)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )
        .body(Body::from(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// The answer of the stateless era's request(s) `ids` on `events` (see
/// [`era::response`]): closing the response stream cancels them (protocol 2026-07-28).
fn era_stream(
    session: &Arc<SessionState>,
    ids: &[RequestId],
    events: futures::stream::BoxStream<'static, Bytes>,
) -> Response {
    era::response(events, || {
        let session = session.clone();
        let ids = ids.to_vec();
        Box::new(move || {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            runtime.spawn(async move {
                let notices = ids.iter().map(era::cancelled).collect();
                let _ = session.push(notices, None, &Extensions::new()).await;
                // A cancelled request gets no answer: its route goes now, so that the
                // session (which serves no other request) ends.
                for id in &ids {
                    session.cancel_request(id);
                }
            });
        })
    })
}

/// An SSE answer. The events already queued are taken at once; when the stream has
/// ended too (a handler that answered in its first poll), the answer goes out as one
/// body of known length instead of a chunked stream: one write, no chunk framing, and
/// nothing left for hyper to poll.
fn sse_response(mut events: futures::stream::BoxStream<'static, Bytes>) -> Response {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut ready = Vec::new();
    // Polling with a waker that does nothing is sound: a pending stream is polled
    // again by hyper, with its own waker, before anything waits on it.
    let complete = loop {
        match events.poll_next_unpin(&mut cx) {
            std::task::Poll::Ready(Some(event)) => ready.push(event),
            std::task::Poll::Ready(None) => break true,
            std::task::Poll::Pending => break false,
        }
    };
    let body = if complete {
        Body::from(match ready.len() {
            1 => ready.swap_remove(0),
            _ => Bytes::from(ready.concat()),
        })
    } else {
        let events = futures::stream::iter(ready).chain(events);
        Body::from_stream(events.map(Ok::<_, Infallible>))
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        )
        .header(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

async fn get(inner: &Arc<Inner>, headers: &HeaderMap, extensions: &http::Extensions) -> Response {
    if !accepts(headers, "text/event-stream") {
        return inner.reject(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept text/event-stream",
        );
    }
    if !inner.config.stateful {
        return inner.reject(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: a stateless server has no standalone stream",
        );
    }
    let session = match resolve_session(inner, headers, caller_of(extensions)).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = protocol_version(inner, headers, Some(&session)) {
        return r;
    }
    // The client's `notifications/initialized` recorded by another service: the
    // runtime here takes it first (see `SessionState::missed_initialized`).
    hand_missed_initialized(&session).await;
    let events = match header_str(headers, LAST_EVENT_ID) {
        Some(last) => {
            let Ok(after) = last.parse::<EventId>() else {
                return inner.reject(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: Last-Event-ID is not an event id of this server",
                );
            };
            let resumed = if session.follows(after) {
                // The GET's extensions and headers, for a request run again here.
                let mut extensions = extensions.get::<Extensions>().cloned().unwrap_or_default();
                extensions.insert(crate::headers::sensitive_headers(headers.clone()));
                session.follow(after, extensions).await
            } else {
                session.resume(after).await
            };
            match resumed {
                Ok(events) => events,
                Err(()) => {
                    return inner.reject(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: Last-Event-ID names no stream of this session that can be replayed",
                    );
                }
            }
        }
        None => match session.open_standalone() {
            Some(events) => events,
            None => {
                return inner.reject(
                    StatusCode::CONFLICT,
                    "Conflict: only one standalone SSE stream is allowed per session",
                );
            }
        },
    };
    let mut events = events;
    if let Some(shared) = &session.shared
        && let Some(holder) = session.claiming_holder()
    {
        // One GET stream per session across services: the hold is recorded only if no
        // other service holds the stream, or by a resumption, which takes it over. Held
        // here from then on: take what was kept for it while no service held it; what
        // other copies send next is relayed here.
        let lease = inner.config.stream_lease;
        let take_over = header_str(headers, LAST_EVENT_ID).is_some();
        let kept = match shared
            .registry()
            .hold_stream(&session.id, &holder, take_over, lease)
            .await
        {
            // Taken over from another service's hold, whose connection the client
            // lost: what it sent there after the client's last event comes first.
            Ok(Some(held)) => match held.previous {
                Some(previous) if take_over && instance_of(&previous) != &*inner.instance => {
                    let mut unsent = inner
                        .take_over_from(&session, shared.registry(), &holder, &previous)
                        .await;
                    unsent.extend(held.kept);
                    unsent
                }
                // No other service's hold to hand over (a hold released before this
                // one was recorded, or none): what was stored on the stream the client
                // named since the resumption read it comes first.
                _ if take_over => {
                    let mut unsent = inner.stored_behind(&session).await;
                    unsent.extend(held.kept);
                    unsent
                }
                _ => held.kept,
            },
            Ok(None) => {
                session.unclaim(&holder);
                return inner.reject(
                    StatusCode::CONFLICT,
                    "Conflict: only one standalone SSE stream is allowed per session",
                );
            }
            Err(e) => {
                inner.report(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("the GET stream's hold was not recorded: {e}"),
                );
                Vec::new()
            }
        };
        session.claimed(&holder, kept);
        tokio::spawn(renew_hold(Arc::downgrade(&session), holder.clone(), lease));
        // The hold ends with the connection: a new GET may open the stream anywhere.
        let guard = HoldGuard {
            session: Arc::downgrade(&session),
            holder,
        };
        events = events
            .map(move |event| {
                let _ = &guard;
                event
            })
            .boxed();
    }
    let mut response = sse_response(events);
    if let Some(v) = &session.id_header {
        response
            .headers_mut()
            .insert(era::SESSION_ID_HEADER.clone(), v.clone());
    }
    response
}

async fn delete(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Response {
    if !inner.config.stateful {
        return inner.reject(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: a stateless server has no sessions to end",
        );
    }
    let session = match resolve_session(inner, headers, caller_of(extensions)).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = protocol_version(inner, headers, Some(&session)) {
        return r;
    }
    if let Some(shared) = &session.shared {
        // Gone for every service: their next request for it answers 404.
        if let Err(e) = shared.registry().remove(&session.id).await {
            return inner.registry_unavailable(&e);
        }
        if let Some(store) = &inner.config.event_store {
            store.forget_session(&session.id);
        }
        session.terminate();
        // Every other copy ends, and the requests it holds.
        if let Err(e) = shared
            .registry()
            .relay(None, Relayed::ended(session.id.to_string()))
            .await
        {
            inner.report(StatusCode::SERVICE_UNAVAILABLE, format!("not relayed: {e}"));
        }
        return status_only(StatusCode::OK);
    }
    session.terminate();
    status_only(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_random_visible_ascii() {
        let a = new_session_id().unwrap();
        let b = new_session_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
    }

    #[tokio::test]
    async fn the_session_table_gives_its_room_back_as_sessions_end() {
        let service = StreamableHttpService::new(drop);
        let inner = &service.inner;
        let sessions: Vec<_> = (0..2_000)
            .map(|_| {
                inner
                    .create_session(None, true, false, false, None, None)
                    .unwrap()
            })
            .collect();
        assert_eq!(service.session_count(), 2_000);
        let room = || inner.lock_sessions().capacity();
        assert!(room() >= 2_000);
        for session in &sessions {
            session.terminate();
        }
        assert_eq!(service.session_count(), 0);
        assert_eq!(room(), 0);
    }

    #[tokio::test]
    async fn idle_sessions_of_the_stateless_era_are_kept_within_bounds_and_end_with_the_service() {
        let service = StreamableHttpService::new(drop);
        let inner = service.inner.clone();
        // More POSTs at once than the endpoint keeps sessions for: each its own session.
        let leases: Vec<_> = (0..KEPT_ERA_SESSIONS + 8)
            .map(|_| inner.lend_era_session(true).unwrap())
            .collect();
        let sessions: Vec<_> = leases.iter().map(|l| l.session.clone()).collect();
        drop(leases);
        let kept = sessions.iter().filter(|s| s.is_open()).count();
        assert_eq!(kept, KEPT_ERA_SESSIONS);
        assert_eq!(inner.era_sessions.lock().unwrap().len(), KEPT_ERA_SESSIONS);
        // The next POST is lent a kept one.
        let lease = inner.lend_era_session(true).unwrap();
        assert!(sessions.iter().any(|s| Arc::ptr_eq(s, &lease.session)));
        drop(lease);
        // A session that ended while kept is not lent again.
        let ended = inner.era_sessions.lock().unwrap().last().unwrap().clone();
        ended.end_era();
        let lease = inner.lend_era_session(true).unwrap();
        assert!(!Arc::ptr_eq(&ended, &lease.session));
        drop(lease);
        // The service gone, every kept session ends (its runtime would wait forever).
        drop(service);
        drop(inner);
        assert!(sessions.iter().all(|s| !s.is_open()));
    }

    #[test]
    fn accept_wildcards() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&h, "application/json") && accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/html"));
        assert!(!accepts(&h, "application/json"));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*;q=0.8"));
        assert!(accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("Text/*"));
        assert!(accepts(&h, "text/event-stream") && !accepts(&h, "application/json"));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/"));
        assert!(!accepts(&h, "text/event-stream"));
    }
}
