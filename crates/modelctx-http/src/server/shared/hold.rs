//! The one GET stream of a shared session across services: its hold recorded in the
//! registry when a GET opens or resumes it here, renewed while its connection is open,
//! given up when it ends, and taken over from another service's hold by a resumption,
//! with a hand-over of what the old holder sent on the lost connection.
//!
//! The hold is recorded (`hold_stream`, naming `"<instance>/<n>"`) before the GET's head
//! goes out. A plain GET is held only if no service holds the stream (or this one does,
//! having checked that none is open here); otherwise it draws the same 409 as on one
//! service and its connection is undone (`unclaim`: what waited for it goes to
//! `to_client`). A GET with `Last-Event-ID` takes the stream over, as a resumption replaces
//! the connection on one service; a `Last-Event-ID` of another copy's standalone stream
//! (low 32 bits zero) replays that stream's stored events, then continues on this copy's.
//!
//! The hold is a lease (`StreamableHttpServerConfig::stream_lease`): the holder renews it
//! every third of it, ends its connection when another service has taken the stream over,
//! and gives it up as soon as the response body is dropped (`HoldGuard`); a killed holder
//! blocks new GETs for at most the lease.
//!
//! The take-over is a lossless, ordered hand-over. `hold_stream` answers the hold it
//! replaced; when that is another service's, the new holder, still claiming (what its copy
//! sends waits in `pending`), relays `RelayedKind::HandOver` with the last event the client
//! has. The old holder lets go at once (what it sends next goes to `to_client`, hence
//! behind, to the new holder) and answers `HandedOver` with what its hold stored after the
//! client's position (read back from its own event store); relayed messages that reached it
//! before the hold moved come before the `HandOver`, since pub/sub keeps one channel's
//! order. The new holder puts them first, then what was kept, then `pending`. An old holder
//! that does not answer within `HAND_OVER_WAIT` is taken as stopped, and the stream the
//! client named is read once more from the store.
//!
//! A released hold is handed over too: the registry names the last released hold as the
//! one replaced, and the next holder on another service asks it, with or without
//! `Last-Event-ID`. The registry may have relayed messages to a hold just before its
//! release, which reach it after its connection ended; the old holder keeps them
//! (`Claim::late`, not back to `to_client` at once, where they would go behind what the
//! registry kept after the release) and hands them over first, or sends them first itself
//! when the next hold is its own. A copy that ends gives them back to `to_client`, and so
//! does one that no hold asked within the lease and `HAND_OVER_WAIT`. A hand-over sent
//! to a service that no longer listens fails at once (no wait); an answer that comes
//! after the wait is still delivered, late.
//!
//! A released hold's store writes behind on another connection than the registry's, so
//! the release waits for the store's barrier (`EventStore::flushed`, at most `FLUSH_WAIT`,
//! in the outbox's order) before `release_stream`; the release deletes only its own
//! holder, so a late release never ends a newer hold. The old holder's hand-over reads
//! the store after the release, and the taking side reads once more after its hold is
//! recorded (`stored_behind`) when no hold answers, because `resume` reads the replay
//! before `hold_stream`. The hand-over half is tested without timing, with a store that
//! holds writes behind a gate.

use std::sync::{Arc, Weak};

use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderMap, StatusCode};

use super::registry::{Relayed, RelayedKind};
use super::{Host, Sharing};
use crate::headers::LAST_EVENT_ID;
use crate::server::config::StreamableHttpServerConfig;
use crate::server::event_store::EventId;
use crate::server::reply::{reject, report};
use crate::server::session::SessionState;

/// How long a service taking a GET stream over waits for the old holder's hand-over
/// ([`RelayedKind::HandOver`]): a round trip through the registry when the old holder
/// is well; only one that stopped answering costs this much.
pub(super) const HAND_OVER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Sharing {
    /// Records the hold of `session`'s GET stream, whose `events` were just opened or
    /// resumed here: one GET stream per session across services. The hold is recorded
    /// only if no other service holds the stream, or by a resumption, which takes it
    /// over. Held here from then on: what was kept for it while no service held it goes
    /// first; what other copies send next is relayed here. `Err`: the stream is held
    /// elsewhere (409).
    pub(crate) async fn hold_stream<H: Host>(
        &self,
        host: &H,
        session: &Arc<SessionState>,
        headers: &HeaderMap,
        events: BoxStream<'static, Bytes>,
    ) -> Result<BoxStream<'static, Bytes>, Response> {
        let config = host.config();
        let (Some(shared), Some(holder)) = (&session.shared, session.claiming_holder()) else {
            return Ok(events);
        };
        // One GET stream per session across services: the hold is recorded only if no
        // other service holds the stream, or by a resumption, which takes it over. Held
        // here from then on: take what was kept for it while no service held it; what
        // other copies send next is relayed here.
        let lease = config.stream_lease;
        let take_over = headers
            .get(LAST_EVENT_ID)
            .is_some_and(|v| v.to_str().is_ok());
        let kept = match shared
            .registry()
            .hold_stream(&session.id, &holder, take_over, lease)
            .await
        {
            // Taken over from another service's hold, whose connection the client
            // lost, or opened after it was released: what it sent there after the
            // client's last event (in a resumption) and what reached it too late
            // come first.
            Ok(Some(held)) => match held.previous {
                Some(previous) if instance_of(&previous) != &*self.instance => {
                    let mut unsent = self
                        .take_over_from(config, session, &holder, &previous, take_over)
                        .await;
                    unsent.extend(held.kept);
                    unsent
                }
                // No other service's hold to hand over (this service's own, or a
                // hold that lapsed): what was stored on the stream the client named
                // since the resumption read it comes first.
                _ if take_over => {
                    let mut unsent = stored_behind(config, session).await;
                    unsent.extend(held.kept);
                    unsent
                }
                _ => held.kept,
            },
            Ok(None) => {
                session.unclaim(&holder);
                return Err(reject(
                    config,
                    StatusCode::CONFLICT,
                    "Conflict: only one standalone SSE stream is allowed per session",
                ));
            }
            Err(e) => {
                report(
                    config,
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("the GET stream's hold was not recorded: {e}"),
                );
                Vec::new()
            }
        };
        session.claimed(&holder, kept);
        tokio::spawn(renew_hold(Arc::downgrade(session), holder.clone(), lease));
        // The hold ends with the connection: a new GET may open the stream anywhere.
        let guard = HoldGuard {
            session: Arc::downgrade(session),
            holder,
        };
        Ok(events
            .map(move |event| {
                let _ = &guard;
                event
            })
            .boxed())
    }

    /// The GET stream of `session`, opened here, was held by `previous` on another
    /// service: asks it for what the new hold sends first, and answers it, oldest
    /// first. That is what was relayed to `previous` after its connection ended, and,
    /// when the GET `resumed` the stream, before it what `previous` sent on the
    /// connection the client lost after the last event the client has. The old holder
    /// hears this after every message the registry relayed to it before this hold was
    /// recorded (pub/sub keeps one channel's order), so none of them is missed. Waits
    /// at most [`HAND_OVER_WAIT`]; without an answer (the old holder stopped), reads
    /// the stream the client named once more from the store instead (what was stored
    /// on it since the resumption read it).
    async fn take_over_from(
        &self,
        config: &StreamableHttpServerConfig,
        session: &SessionState,
        holder: &Arc<str>,
        previous: &str,
        resumed: bool,
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
            "resumed": resumed,
        })
        .to_string();
        let asked = Relayed::of_kind(RelayedKind::HandOver, session.id.to_string(), message);
        let answer = match self
            .registry
            .relay(Some(instance_of(previous)), asked)
            .await
        {
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
        report(
            config,
            StatusCode::OK,
            format!(
                "session {}: the GET stream's old holder did not hand it over",
                session.id
            ),
        );
        if resumed {
            stored_behind(config, session).await
        } else {
            Vec::new()
        }
    }
}

/// What was stored on another service's GET stream, which the resumption here
/// named, after the resumption's replay read it (nothing when the resumption named
/// this copy's own stream). Read once this service's hold is recorded: a hold
/// released before is released only after its event store flushed
/// ([`EventStore::flushed`](crate::EventStore::flushed)), so the read has everything it stored.
async fn stored_behind(config: &StreamableHttpServerConfig, session: &SessionState) -> Vec<String> {
    match (&config.event_store, session.replayed_to()) {
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

/// The service part of a hold's name (`"<instance>/<n>"`).
pub(super) fn instance_of(holder: &str) -> &str {
    holder
        .rsplit_once('/')
        .map_or(holder, |(instance, _)| instance)
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
