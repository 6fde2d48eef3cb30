//! A shared session's record: a new session recorded before it starts, a copy started
//! here from the record of a session another service began, the record kept alive while
//! a stream is open here, and removed by DELETE.
//!
//! `initialize` without a session id creates the record first (the session cap counts every
//! service's records). A copy is started from a record with `create_session`, the id and
//! the restored state, under the map's lock, so two requests racing to restore start one
//! copy; `needs_pre_initialized_session()` is true for it once the record says the client's
//! `notifications/initialized` arrived, `needs_initialize_answered_session()` before.
//! DELETE removes the record (every service then answers 404), forgets the session's
//! events, and ends the local copy.

use std::sync::{Arc, Weak};

use axum::response::Response;
use http::{HeaderMap, StatusCode};

use super::registry::{Lookup, Relayed};
use super::state::SharedState;
use super::{Host, Sharing, registry_unavailable};
use crate::headers::MCP_SESSION_ID;
use crate::server::admission::Reservation;
use crate::server::reply::{reject, report, status_only};
use crate::server::session::{SessionState, new_session_id};

impl Sharing {
    /// Records a new session in the registry (under the cap of every service sharing
    /// it), then starts it here. `handshake`: the place of a session that exists only
    /// once its `initialize` is answered (see [`Host::start`]); without it,
    /// the session is in the table at once.
    pub(crate) async fn new_session<H: Host>(
        &self,
        host: &Arc<H>,
        handshake: Option<Reservation>,
    ) -> Result<Arc<SessionState>, Response> {
        let config = host.config();
        if handshake.is_none() && host.local_count() >= config.max_sessions {
            return Err(reject(
                config,
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: too many sessions",
            ));
        }
        let Some(id) = new_session_id() else {
            return Err(reject(
                config,
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness available for a session id",
            ));
        };
        self.ensure_listening(host).await?;
        match self
            .registry
            .create(&id, self.idle, config.max_sessions)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                return Err(reject(
                    config,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many sessions",
                ));
            }
            Err(e) => return Err(registry_unavailable(config, &e)),
        }
        host.start(id, None, handshake).ok_or_else(|| {
            reject(
                config,
                StatusCode::INTERNAL_SERVER_ERROR,
                "the session could not be created",
            )
        })
    }

    /// Resolves a shared session: touches its record, takes in state another service
    /// saved, and starts a local copy from the record when this service holds none.
    pub(crate) async fn find_session<H: Host>(
        &self,
        host: &Arc<H>,
        headers: &HeaderMap,
    ) -> Result<Arc<SessionState>, Response> {
        let config = host.config();
        let Some(id) = headers.get(MCP_SESSION_ID) else {
            return Err(reject(
                config,
                StatusCode::BAD_REQUEST,
                "Bad Request: the Mcp-Session-Id header is required",
            ));
        };
        let not_found = || reject(config, StatusCode::NOT_FOUND, "Not Found: no such session");
        let Ok(id) = id.to_str() else {
            return Err(not_found());
        };
        let local = host.local(id).filter(|s| !s.closed.is_cancelled());
        let known = local
            .as_ref()
            .and_then(|s| s.shared.as_ref())
            .map_or(0, |s| s.revision());
        let lookup = match self.registry.touch(id, self.idle, known).await {
            Ok(lookup) => lookup,
            Err(e) => return Err(registry_unavailable(config, &e)),
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
                self.ensure_listening(host).await?;
                if host.local_count() >= config.max_sessions {
                    return Err(reject(
                        config,
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Service Unavailable: too many sessions",
                    ));
                }
                let session = host
                    .start(Arc::from(id), Some((revision, *snapshot)), None)
                    .ok_or_else(|| {
                        reject(
                            config,
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
                    match self.registry.touch(id, self.idle, shared.revision()).await {
                        Ok(Lookup::State { revision, snapshot }) => {
                            shared.changed(revision, snapshot)
                        }
                        Ok(_) => {}
                        Err(e) => return Err(registry_unavailable(config, &e)),
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
            (_, None) => Err(reject(
                config,
                StatusCode::BAD_REQUEST,
                "Bad Request: the session is not initialised yet",
            )),
        }
    }

    /// DELETE of a shared session: gone for every service (their next request for it
    /// answers 404), its stored events too, and every other copy ends, with the
    /// requests it holds.
    pub(crate) async fn delete<H: Host>(&self, host: &H, session: &SessionState) -> Response {
        let config = host.config();
        if let Err(e) = self.registry.remove(&session.id).await {
            return registry_unavailable(config, &e);
        }
        if let Some(store) = &config.event_store {
            store.forget_session(&session.id);
        }
        session.terminate();
        if let Err(e) = self
            .registry
            .relay(None, Relayed::ended(session.id.to_string()))
            .await
        {
            report(
                config,
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not relayed: {e}"),
            );
        }
        status_only(StatusCode::OK)
    }
}

/// Touches the record of `session` (`id`), whose copy here holds a stream open, and
/// takes in the state another service saved. `false` when the record is gone (deleted
/// or expired elsewhere): the copy here has ended.
pub(crate) async fn keep_record(
    session: &Weak<SessionState>,
    id: &str,
    shared: &SharedState,
) -> bool {
    let touched = shared
        .registry()
        .touch(id, shared.idle(), shared.revision());
    match touched.await {
        Ok(Lookup::Missing) => {
            if let Some(s) = session.upgrade() {
                s.terminate();
            }
            false
        }
        Ok(Lookup::State { revision, snapshot }) => {
            shared.changed(revision, snapshot);
            true
        }
        // Unreachable now: the next request, or the next round, tries again.
        Ok(_) | Err(_) => true,
    }
}
