//! Single-use ids shared by every process on one Redis ([`SingleUseIds`](store::SingleUseIds)).

use std::time::{SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use futures::future::BoxFuture;
use modelctx_store::{self as store, SingleUseError};
use redis::aio::ConnectionManager;

use crate::keys::Keys;

/// [`SingleUseIds`](store::SingleUseIds) in Redis: give every process serving one endpoint the same one
/// (`ServerBuilder::single_use_rounds`), and a single-use round's `requestState` used
/// at one is refused at every other. Each id is one `SET NX` of `<prefix>once:<id>`
/// that Redis expires with the id, so the check and the record are one atomic step
/// and the keys go away by themselves. A Redis that does not answer refuses the id
/// (an error, never "new").
#[derive(Clone)]
pub struct SingleUseIds {
    conn: ConnectionManager,
    keys: Keys,
}

modelctx_types::__debug_shows!(SingleUseIds, |v| { prefix: &v.keys.prefix(), .. });

impl SingleUseIds {
    /// A store on `conn`, its keys under [`DEFAULT_PREFIX`](crate::DEFAULT_PREFIX).
    pub fn new(conn: ConnectionManager) -> Self {
        Self {
            conn,
            keys: Keys::new(crate::DEFAULT_PREFIX),
        }
    }

    /// Connects to the Redis at `url` (see [`connect`](crate::connect)).
    pub async fn connect(url: &str) -> Result<Self, redis::RedisError> {
        Ok(Self::new(crate::connect(url).await?))
    }

    /// Puts every key under `prefix` instead.
    #[must_use]
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.keys = Keys::new(prefix);
        self
    }
}

impl store::SingleUseIds for SingleUseIds {
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, SingleUseError>> {
        async move {
            // Kept at least a second: an id at the edge of its expiry is still refused
            // if sent again within it.
            let expiry_ms = expires_at.saturating_mul(1000).max(now_ms() + 1000);
            set_new_until(&self.conn, self.keys.used_once(id), expiry_ms)
                .await
                .map_err(|e| SingleUseError::new(format!("redis: {e}")))
        }
        .boxed()
    }
}

/// Milliseconds since the Unix epoch, by this process's clock.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Records `key` until `expiry_ms` (epoch milliseconds) unless it is there: one atomic
/// `SET NX PXAT`. Whether it was new.
pub(crate) async fn set_new_until(
    conn: &ConnectionManager,
    key: String,
    expiry_ms: u64,
) -> redis::RedisResult<bool> {
    let set: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(1)
        .arg("NX")
        .arg("PXAT")
        .arg(expiry_ms)
        .query_async(&mut conn.clone())
        .await?;
    Ok(set.is_some())
}
