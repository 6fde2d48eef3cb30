//! Redis-backed stores for modelctx servers that run as several processes behind one
//! load balancer, or that must keep state across a restart.
//!
//! - [`RedisEventStore`] implements the streamable HTTP transport's
//!   [`EventStore`](modelctx_http::EventStore): every SSE event of a resumable stream
//!   goes to a Redis Stream, bounded in length and age, and a `Last-Event-ID` replays
//!   exactly the events after it, in order, from that stream only.
//! - [`RedisTaskStore`] implements the sessions' [`TaskStore`](modelctx_session::tasks::TaskStore):
//!   status, results and expiry of tasks, shared by every process on the same Redis,
//!   with the same owner checks and cursors as the in-memory store.
//! - [`RedisSessionRegistry`] implements the streamable HTTP transport's
//!   [`SessionRegistry`](modelctx_http::SessionRegistry): a record per 2025-era session
//!   (negotiated revision, client info and capabilities, log level, subscriptions), so
//!   that every service on the same Redis serves every session's requests; idle expiry,
//!   the session cap and DELETE hold across them, and messages that belong to another
//!   service's copy of the session are relayed to it.
//! - [`RedisAnnouncements`] implements the server's
//!   [`AnnouncementBus`](modelctx_session::announce::AnnouncementBus): a list change or
//!   resource update raised in one process reaches the sessions and
//!   `subscriptions/listen` streams of every process (Redis pub/sub).
//! - [`RedisSingleUseIds`] implements the transport's
//!   [`SingleUseIds`](modelctx_transport::SingleUseIds): the ids of single-use rounds
//!   of multi round-trip requests (`ServerBuilder::single_use_rounds`), each taken once
//!   across processes by one `SET NX` that expires with the id.
//! - `RedisAuthorizationStore` (feature `oauth`) implements the bundled OAuth
//!   authorization server's `AuthorizationStore`: clients, and codes, refresh tokens
//!   and pending consents taken out atomically, so each is used once across processes.
//!
//! Every key starts with a configurable prefix (`"modelctx:"` by default). Event,
//! task and session keys expire on their own (only the task store's four index keys
//! and the registry's index of live sessions do not, and they are bounded by the task
//! capacity and the session cap), so a Redis shared for months does not fill up with
//! dead sessions.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use modelctx_http::StreamableHttpServerConfig;
//! use modelctx_redis::{
//!     RedisAnnouncements, RedisAnnouncementsConfig, RedisEventStore, RedisEventStoreConfig,
//!     RedisSessionRegistry, RedisSessionRegistryConfig, RedisTaskStore, RedisTaskStoreConfig,
//! };
//!
//! let url = "redis://127.0.0.1:6379/";
//! let events = RedisEventStore::connect(url, RedisEventStoreConfig::default().prefix("app:")).await?;
//! let tasks = RedisTaskStore::connect(url, RedisTaskStoreConfig::default().prefix("app:")).await?;
//! let sessions = RedisSessionRegistry::connect(url, RedisSessionRegistryConfig::default().prefix("app:")).await?;
//! let announcements = RedisAnnouncements::connect(url, RedisAnnouncementsConfig::default().prefix("app:")).await?;
//! let http = StreamableHttpServerConfig::default()
//!     .event_store(Arc::new(events))
//!     .session_registry(Arc::new(sessions));
//! // `tasks` goes to `ServerBuilder::task_store(Arc::new(tasks))`,
//! // `announcements` to `ServerBuilder::announcements(Arc::new(announcements))`.
//! # let _ = (http, tasks, announcements);
//! # Ok(()) }
//! ```
//!
//! With the registry, a client's POSTs may land on any process: a response to a
//! request a handler sent (sampling, elicitation, roots) and a cancellation are relayed
//! (Redis pub/sub, at most once) to the process they concern, and notifications not
//! tied to a request to the process holding the client's GET stream. With the
//! announcement bus, a list change or resource update raised on one process reaches
//! the sessions and listen streams of every process.
//!
//! | feature | what |
//! |---|---|
//! | — | the event and task stores, the session registry and the announcement bus, on redis-rs with tokio and its reconnecting `ConnectionManager`; no TLS |
//! | `oauth` | `RedisAuthorizationStore`, for modelctx-oauth's `authorization-server` |
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod announce;
mod events;
mod keys;
#[cfg(feature = "oauth")]
mod oauth;
mod sessions;
mod single_use;
mod tasks;

pub use announce::{RedisAnnouncements, RedisAnnouncementsConfig};
pub use events::{RedisEventStore, RedisEventStoreConfig};
#[cfg(feature = "oauth")]
pub use oauth::{RedisAuthorizationStore, RedisAuthorizationStoreConfig};
pub use sessions::{RedisSessionRegistry, RedisSessionRegistryConfig};
pub use single_use::RedisSingleUseIds;
pub use tasks::{RedisTaskStore, RedisTaskStoreConfig};

/// The redis-rs crate this one is built on, for [`ConnectionManager`](redis::aio::ConnectionManager)
/// and its configuration.
pub use redis;

/// The key prefix unless configured otherwise.
pub const DEFAULT_PREFIX: &str = "modelctx:";

/// Bounds on one Redis round trip: a store never hangs on a Redis that stopped
/// answering.
const RESPONSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A reconnecting connection to the Redis at `url`, with bounded connect and response
/// times (5 s each).
pub async fn connect(url: &str) -> Result<redis::aio::ConnectionManager, redis::RedisError> {
    let client = redis::Client::open(url)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    redis::aio::ConnectionManager::new_with_config(client, config).await
}
