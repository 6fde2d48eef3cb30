//! Redis-backed stores for modelctx servers that run as several processes behind one
//! load balancer, or that must keep state across a restart.
//!
//! Each implements a seam of [`modelctx-store`](modelctx_store), the crate this one
//! depends on (with the protocol types only: no HTTP stack):
//!
//! - [`EventStore`] implements the streamable HTTP transport's
//!   [`EventStore`](modelctx_store::EventStore): every SSE event of a resumable stream
//!   goes to a Redis Stream, bounded in length and age, and a `Last-Event-ID` replays
//!   exactly the events after it, in order, from that stream only.
//! - [`TaskStore`] implements the sessions' [`TaskStore`](modelctx_store::TaskStore):
//!   status, results and expiry of tasks, shared by every process on the same Redis,
//!   with the same owner checks and cursors as the in-memory store.
//! - [`SessionRegistry`] implements the streamable HTTP transport's
//!   [`SessionRegistry`](modelctx_store::SessionRegistry): a record per 2025-era session
//!   (negotiated revision, client info and capabilities, log level, subscriptions), so
//!   that every service on the same Redis serves every session's requests; idle expiry,
//!   the session cap and DELETE hold across them, and messages that belong to another
//!   service's copy of the session are relayed to it.
//! - [`Announcements`] implements the server's
//!   [`AnnouncementBus`](modelctx_store::AnnouncementBus): a list change or
//!   resource update raised in one process reaches the sessions and
//!   `subscriptions/listen` streams of every process (Redis pub/sub).
//! - [`SingleUseIds`] implements the transport's
//!   [`SingleUseIds`](modelctx_store::SingleUseIds): the ids of single-use rounds
//!   of multi round-trip requests (`ServerBuilder::single_use_rounds`), each taken once
//!   across processes by one `SET NX` that expires with the id.
//! - `AuthorizationStore` (feature `oauth`) implements the bundled OAuth
//!   authorization server's `AuthorizationStore`: clients, and codes, refresh tokens
//!   and pending consents taken out atomically, so each is used once across processes.
//!
//! Every key starts with a configurable prefix (`"modelctx:"` by default). Event,
//! task and session keys expire on their own (only the task store's four index keys
//! and the registry's index of live sessions do not, and they are bounded by the task
//! capacity and the session cap), so a Redis shared for months does not fill up with
//! dead sessions.
//!
//! [`Stores::connect`] builds them all from one URL and one key prefix:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use modelctx::http::StreamableHttpServerConfig;
//! use modelctx_redis::Stores;
//!
//! let stores = Stores::connect("redis://127.0.0.1:6379/", "app:").await?;
//! let http = StreamableHttpServerConfig::default()
//!     .event_store(Arc::new(stores.events))
//!     .session_registry(Arc::new(stores.sessions));
//! // `stores.tasks` goes to `ServerBuilder::task_store(Arc::new(..))`, `stores.announcements`
//! // to `ServerBuilder::announcements(Arc::new(..))`, `stores.single_use` to
//! // `ServerBuilder::single_use_rounds`.
//! # let _ = http;
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
//! | `oauth` | `AuthorizationStore`, for modelctx-oauth's `authorization-server` |
//!
//! # How it works
//!
//! The crate uses redis-rs (`tokio-comp`, `connection-manager`, `streams`, `script`;
//! default features off): the most used Rust client, whose `ConnectionManager` reconnects
//! by itself and multiplexes one connection for every caller (short commands, no blocking
//! reads), and whose tree with these features has no C code. No TLS feature: redis-rs'
//! rustls feature brings the aws-lc C build and its native-tls feature OpenSSL.
//! `connect(url)` bounds connecting and each response (5 s), so a Redis that stops
//! answering makes calls fail, never hang. Once one of its scripts gets no answer, the
//! session registry sends no more of them until Redis answers a `PING` (asked again a
//! quarter second after each try that got none): meanwhile every request of a shared
//! session fails at once with 503 at its lookup, instead of each waiting the 5 s, so
//! requests do not pile up under load. Relays (pub/sub) are not held back. A script whose
//! connection broke (Redis restarted) is tried once more on the reconnected manager (not
//! one that timed out), and every write pipeline starts by loading its scripts, so a
//! restarted Redis never answers `NOSCRIPT`.
//!
//! Registries of tools and prompts are built per process: a dynamic change is the
//! application's to apply on every instance (the bus carries the notification, not the
//! tool). 2025-era resource subscriptions live in each copy of a session, kept alike by the
//! registry's acknowledged state relays, so an update reaches a subscribed session wherever
//! it lives. Relays and announcements are pub/sub, at most once: one lost to a Redis
//! failure is not retried.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod announce;
mod breaker;
mod config;
mod events;
mod keys;
#[cfg(feature = "oauth")]
mod oauth;
mod sessions;
mod single_use;
mod stores;
mod tasks;

pub use announce::{Announcements, AnnouncementsConfig};
pub use events::{EventStore, EventStoreConfig};
#[cfg(feature = "oauth")]
pub use oauth::{AuthorizationStore, AuthorizationStoreConfig};
pub use sessions::{SessionRegistry, SessionRegistryConfig};
pub use single_use::SingleUseIds;
pub use stores::Stores;
pub use tasks::{TaskStore, TaskStoreConfig};

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
