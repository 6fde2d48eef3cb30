//! The server side: a tower service hosting one MCP session per `Mcp-Session-Id`.
//!
//! - the service and serving: `service` ([`StreamableHttpService`], its router and
//!   listener loops, one request's dispatch by method), `table` (the state behind it:
//!   its sessions, their creation, admission and idle expiry), `hosting`, `config`,
//!   `admission`;
//! - a request: `request` (headers, body, the session it names), `post` and
//!   `post_era` (the handshake era's POST, and the stateless era's), `dispatch` (a
//!   POST's messages to its session, and its answer), `get` (the standalone stream),
//!   `delete`, `reply` (the HTTP answers), `era` (the stateless era's header rules);
//! - `session`: one hosted session and its transport; `kept`: the stateless era's
//!   kept sessions;
//! - `shared`: sessions shared between processes through a registry;
//!   `event_store`, `run_store`: resumption and runs that outlive their service.

// The request steps below fail with the HTTP response that answers the request; it is
// built once per rejected request, so its size does not matter.
#![allow(clippy::result_large_err)]

mod admission;
mod config;
mod delete;
mod dispatch;
mod era;
mod event_store;
mod get;
pub mod hosting;
mod kept;
mod post;
mod post_era;
mod reaper;
mod reply;
mod request;
mod run_store;
mod service;
mod session;
mod shared;
mod table;

pub use admission::SessionRateLimit;
pub use config::{
    ErrorCallback, HostPolicy, OriginPolicy, Rejection, StreamableHttpServerConfig, cors_layer,
};
pub use event_store::{EventId, EventStore, InMemoryEventStore, InvalidEventId, Replay};
pub use run_store::{RunState, RunStore, TakenRun};
pub use service::StreamableHttpService;
pub use session::{HttpServerSink, HttpServerStream, HttpServerTransport, StreamControl};
pub use shared::registry::{
    Lookup, RegistryError, Relayed, RelayedKind, SessionRegistry, StreamHold,
};

#[cfg(test)]
mod tests {
    use super::kept::KEPT_ERA_SESSIONS;
    use super::session::new_session_id;
    use super::*;
    use std::sync::Arc;

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
        let new = || inner.create_session(None, false, false, true, None, None);
        // More POSTs at once than the endpoint keeps sessions for: each its own session.
        let leases: Vec<_> = (0..KEPT_ERA_SESSIONS + 8)
            .map(|_| inner.kept.acquire(true, new).unwrap())
            .collect();
        let sessions: Vec<_> = leases.iter().map(|l| l.session().clone()).collect();
        drop(leases);
        let kept = sessions.iter().filter(|s| s.is_open()).count();
        assert_eq!(kept, KEPT_ERA_SESSIONS);
        assert_eq!(inner.kept.len(), KEPT_ERA_SESSIONS);
        // The next POST is lent a kept one.
        let lease = inner.kept.acquire(true, new).unwrap();
        assert!(sessions.iter().any(|s| Arc::ptr_eq(s, lease.session())));
        drop(lease);
        // A session that ended while kept is not lent again.
        let ended = inner.kept.next().unwrap();
        ended.end_era();
        let lease = inner.kept.acquire(true, new).unwrap();
        assert!(!Arc::ptr_eq(&ended, lease.session()));
        drop(lease);
        // The service gone, every kept session ends (its runtime would wait forever).
        drop(service);
        drop(inner);
        assert!(sessions.iter().all(|s| !s.is_open()));
    }
}
