//! What services sharing sessions relay to each other: the listener taking in what
//! others relay here, the task sending on this service's messages for GET streams held
//! elsewhere, the liveness this service records for its runs, and the messages of a
//! POST that belong to another service.
//!
//! A service listens (once, before it creates or restores its first shared session, so a
//! message relayed to a holder finds it listening) for messages to its instance name
//! (random, 16 hex digits) or to all. A shared session's outbound request ids are
//! `"<instance>/<n>"` (`TransportInfo::request_id_prefix`; progress tokens are the ids), so a
//! POST's response, error or progress naming another instance is relayed to it, and a
//! `notifications/cancelled` for a request not in flight here is broadcast; the receiver
//! pushes it into its local copy (a cancellation only if that request is in flight there).
//!
//! A message not tied to a request, on a session whose GET stream is not open here, goes
//! through a bounded per-service queue and one task (so in order) to
//! `SessionRegistry::to_client`: relayed to the holder, which delivers it with its own
//! event ids, or, with no holder, kept in the registry (at most `stream_queue` per session,
//! the oldest dropped) for the next `hold_stream`. List changes and resource updates
//! (`is_announcement`) are sent by every copy of a session; `to_client` drops the others'
//! while a holder exists and keeps one of each text while none does, so the client hears
//! each once.
//!
//! A state saved by one copy is relayed (`RelayedKind::Changed`, with the snapshot) and
//! acknowledged: the request that changed it is answered only once every listening service
//! has taken it in (at most `CHANGE_WAIT`; a service that stopped answering costs the
//! request that wait, never its answer). So a subscription made through one copy holds for
//! the holder's, and an update raised after `resources/unsubscribe` is answered finds no
//! copy still subscribed. Acknowledging the rare state change costs one round trip per
//! service on it alone, where having the raising side check the state would cost one per
//! session per update.

use std::sync::{Arc, Weak};

use axum::response::Response;
use futures::StreamExt;
use http::StatusCode;
use modelctx_transport::Extensions;
use modelctx_types::{JsonRpcMessage, RequestId};

use super::hold::instance_of;
use super::registry::{Outgoing, RegistryError, Relayed, RelayedKind, SessionRegistry};
use super::{Host, Sharing, registry_unavailable};
use crate::server::event_store::{EventId, EventStore};
use crate::server::reply::report;
use crate::server::run_store::RunStore;
use crate::server::session::{INITIALIZED, Messages, SessionState};
use crate::shared::{cancelled_id, notification_params};

/// How long the release of a GET stream's hold waits for the event store to flush
/// what the hold stored ([`EventStore::flushed`]): one write round trip when the
/// store is well; only one that cannot write costs this much.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Sharing {
    /// Listens for messages relayed to this service, once, before it serves its first
    /// shared session: a response to one of its requests, or a cancellation, relayed
    /// by another service must find it listening.
    pub(super) async fn ensure_listening<H: Host>(&self, host: &Arc<H>) -> Result<(), Response> {
        let registry = &self.registry;
        let config = host.config();
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
                        config.stream_queue,
                        self.stop.clone(),
                    ));
                }
                tokio::spawn(relay_loop(
                    Arc::downgrade(host),
                    registry.clone(),
                    self.instance.clone(),
                    self.stop.clone(),
                    stream,
                ));
                if let Some(store) = &config.event_store
                    && let Some(runs) = store.runs()
                {
                    // Alive before it records its first run: another service takes
                    // over the runs of a service that no longer says so.
                    runs.keep_alive(&self.instance).await;
                    tokio::spawn(keep_alive(
                        store.clone(),
                        self.instance.clone(),
                        self.stop.clone(),
                    ));
                }
                Ok::<(), RegistryError>(())
            })
            .await;
        started
            .map(|_| ())
            .map_err(|e| registry_unavailable(config, &e))
    }

    /// A message another service relayed: a response for one of this service's
    /// requests, or a cancellation of a request that may run here, a message for the
    /// GET stream held here, the client's `notifications/initialized`, the session's
    /// end or new state. Dropped when the session is not held here (any more) or the
    /// request is not in flight here.
    async fn take_relayed<H: Host>(&self, host: &H, relayed: Relayed) {
        match relayed.kind {
            RelayedKind::HandOver => return self.hand_over(host, relayed),
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
                    let unheard = match waiting {
                        Some(waiting) => waiting.send(handed.events).err(),
                        None => Some(handed.events),
                    };
                    // Came after the hold stopped waiting: late, not lost.
                    if let Some(events) = unheard.filter(|e| !e.is_empty())
                        && let Some(session) = host.local(relayed.session.as_str())
                    {
                        session.deliver_handed(&handed.holder, events);
                    }
                }
                return;
            }
            _ => {}
        }
        let Some(session) = host
            .local(relayed.session.as_str())
            .filter(|s| !s.closed.is_cancelled())
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
                session.hand_missed_initialized().await;
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
            session.hand_missed_initialized().await;
            return;
        }
        match &message {
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                let _ = session
                    .push(smallvec::smallvec![message], None, &Extensions::new())
                    .await;
            }
            JsonRpcMessage::Notification(_) => match cancelled_id(&message) {
                Some(id) => {
                    if session.is_in_flight(&id) {
                        let _ = session
                            .push(smallvec::smallvec![message], None, &Extensions::new())
                            .await;
                        session.cancel_request(&id);
                    }
                }
                // Progress on one of this service's requests.
                None => {
                    let _ = session
                        .push(smallvec::smallvec![message], None, &Extensions::new())
                        .await;
                }
            },
            JsonRpcMessage::Request(_) => {}
        }
    }

    /// Another service took over the GET stream of a session from a hold of this one,
    /// or opened it after that hold was released ([`RelayedKind::HandOver`]): the
    /// hold lets go at once (what the session sends next goes to the registry, which
    /// relays it to the new holder), then what the new holder puts first on its stream
    /// is sent to it: in a resumption, what the hold sent that the client may have
    /// missed, read back from the event store; in either case, what was relayed to
    /// the hold after its connection ended. Always answered (with nothing, when this
    /// copy has no such hold), so the new holder waits no longer than a round trip.
    fn hand_over<H: Host>(&self, host: &H, relayed: Relayed) {
        #[derive(serde::Deserialize)]
        struct HandOver {
            holder: String,
            to: String,
            stream: u64,
            after: u64,
            /// False for a plain GET (no `Last-Event-ID`); absent from older services,
            /// which ask only in a resumption.
            #[serde(default = "resumed")]
            resumed: bool,
        }
        fn resumed() -> bool {
            true
        }
        let Ok(asked) = serde_json::from_str::<HandOver>(&relayed.message) else {
            return;
        };
        let registry = self.registry.clone();
        let session = host.local(relayed.session.as_str());
        let after = asked.resumed.then_some(EventId {
            stream: asked.stream,
            seq: asked.after,
        });
        let (unsent, late) = session
            .as_ref()
            .map(|s| s.let_go(&asked.holder, after))
            .unwrap_or_default();
        let unsent = unsent.zip(host.config().event_store.clone());
        // What reached the hold late goes back to the registry if the answer cannot go.
        let give_back = (!late.is_empty()).then(|| (session.clone(), late.clone()));
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
            events.extend(late);
            let to = instance_of(&asked.to).to_owned();
            let message = serde_json::json!({"holder": asked.to, "events": events}).to_string();
            let answer = Relayed::of_kind(RelayedKind::HandedOver, relayed.session, message);
            if let Err(e) = registry.relay(Some(&to), answer).await {
                tracing::warn!(target: "modelctx_http", %e, "a GET stream's hand-over was not answered");
                if let Some((Some(session), late)) = give_back {
                    session.relayed_to_registry(late);
                }
            }
        });
    }

    /// Sends on the messages of a shared session's POST that belong to another
    /// service, and answers the rest: a response (or progress) whose id (token) names
    /// another service goes to it; a cancellation of a request not in flight here goes
    /// to every service.
    pub(crate) async fn relay_foreign<H: Host>(
        &self,
        host: &H,
        session: &SessionState,
        messages: Messages,
    ) -> Messages {
        let mut kept = Messages::with_capacity(messages.len());
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
            if let Err(e) = self.registry.relay(to.as_deref(), relayed).await {
                // At most once: the request this answers or cancels times out.
                report(
                    host.config(),
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("not relayed: {e}"),
                );
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
}

/// The progress token of a `notifications/progress`, as the request id it is (the
/// session runtime uses a request's id as its token).
fn progress_token(message: &JsonRpcMessage) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Progress {
        progress_token: RequestId,
    }
    notification_params::<Progress>(message, "notifications/progress").map(|p| p.progress_token)
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
async fn relay_loop<H: Host>(
    host: Weak<H>,
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
            let Some(host) = host.upgrade() else { return };
            let Some(sharing) = host.sharing() else {
                return;
            };
            sharing.take_relayed(&*host, relayed).await;
        }
    }
}
