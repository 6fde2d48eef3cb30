//! Single-use ids shared by every process of a server: the `jti`s of assertions and
//! DPoP proofs, each accepted once.

use std::fmt;

use futures::future::BoxFuture;

/// A store failure (the authorization server answers `server_error`; the resource
/// server refuses the proof it could not check).
#[derive(Debug, Clone)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// Where a server remembers the single-use ids it accepted, for every process that
/// shares it: give the same one to every instance of a resource server behind a load
/// balancer ([`ResourceServerConfig::replay_store`](crate::ResourceServerConfig::replay_store)),
/// and a DPoP proof replayed to another instance is refused there too.
///
/// Every [`AuthorizationStore`](crate::AuthorizationStore) is one (feature
/// `authorization-server`), through its own `first_use`: `modelctx-redis`'s
/// `RedisAuthorizationStore` is the one to share through Redis.
pub trait SingleUseStore: Send + Sync + 'static {
    /// Remembers `id` until `expires_at` (seconds since the Unix epoch) and answers
    /// whether it was new: `true` the first time, `false` while it is remembered. The
    /// check and the record must be one atomic step for every process sharing the
    /// store. `id` is a SHA-256 (base64url) the server computed. A store that cannot
    /// tell (full, unreachable) answers `false` or an error, never `true`.
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}

#[cfg(feature = "authorization-server")]
impl<T: crate::AuthorizationStore + ?Sized> SingleUseStore for T {
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        crate::AuthorizationStore::first_use(self, id, expires_at)
    }
}
