//! Every store of this crate built from one Redis URL and one key prefix, for a
//! deployment that shares all of its state through one Redis.

use crate::{
    Announcements, AnnouncementsConfig, EventStore, EventStoreConfig, SessionRegistry,
    SessionRegistryConfig, SingleUseIds, TaskStore, TaskStoreConfig,
};

/// Every store a server run as several processes shares, on one Redis and under one
/// key prefix: hand each to the part of the server that uses it.
///
/// The stores share one reconnecting connection (the announcement bus and the session
/// registry's relays also subscribe on connections of their own); each store's
/// defaults apply besides the prefix. To configure a store further, build it on its
/// own (`EventStore::connect` and the like).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use modelctx::http::StreamableHttpServerConfig;
/// use modelctx_redis::Stores;
/// use modelctx::server::Server;
///
/// let stores = Stores::connect("redis://127.0.0.1:6379/", "app:").await?;
/// let http = StreamableHttpServerConfig::default()
///     .event_store(Arc::new(stores.events))
///     .session_registry(Arc::new(stores.sessions));
/// let server = Server::builder("app", "1.0.0")
///     .task_store(Arc::new(stores.tasks))
///     .announcements(Arc::new(stores.announcements))
///     .single_use_rounds(stores.single_use);
/// // With feature `oauth`, `stores.authorization` goes to modelctx-oauth's
/// // `AuthorizationServer::new`.
/// # let _ = (http, server);
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Stores {
    /// The streamable HTTP transport's event store
    /// (`StreamableHttpServerConfig::event_store`).
    pub events: EventStore,
    /// The streamable HTTP transport's session registry
    /// (`StreamableHttpServerConfig::session_registry`).
    pub sessions: SessionRegistry,
    /// The task store (`ServerBuilder::task_store`).
    pub tasks: TaskStore,
    /// The announcement bus (`ServerBuilder::announcements`).
    pub announcements: Announcements,
    /// The single-use ids of multi round-trip requests
    /// (`ServerBuilder::single_use_rounds`).
    pub single_use: SingleUseIds,
    /// The OAuth authorization server's store (`AuthorizationServer::new`), also the
    /// resource server's replay store (`ResourceServerConfig::replay_store`).
    #[cfg(feature = "oauth")]
    pub authorization: crate::AuthorizationStore,
}

impl Stores {
    /// Connects to the Redis at `url` (`redis://host:port/db`) and builds every store
    /// with its keys under `prefix` (such as [`DEFAULT_PREFIX`](crate::DEFAULT_PREFIX)).
    /// Must be called within a tokio runtime; fails when Redis cannot be reached
    /// within 5 s.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let conn = crate::connect(url).await?;
        Ok(Self {
            events: EventStore::new(conn.clone(), EventStoreConfig::default().prefix(prefix)),
            sessions: SessionRegistry::new(
                client,
                conn.clone(),
                SessionRegistryConfig::default().prefix(prefix),
            ),
            tasks: TaskStore::new(conn.clone(), TaskStoreConfig::default().prefix(prefix)),
            announcements: Announcements::connect(
                url,
                AnnouncementsConfig::default().prefix(prefix),
            )
            .await?,
            #[cfg(feature = "oauth")]
            authorization: crate::AuthorizationStore::new(
                conn.clone(),
                crate::AuthorizationStoreConfig::default().prefix(prefix),
            ),
            single_use: SingleUseIds::new(conn).prefix(prefix),
        })
    }
}
