//! Ids that may be used once, remembered by every process of a server that shares
//! them: the `requestState` of a round of a multi round-trip request, when the server
//! makes rounds single-use (`ServerBuilder::single_use_rounds`), through
//! [`SingleUseIds`]; the `jti`s of OAuth assertions and DPoP proofs, each accepted
//! once, through [`SingleUseStore`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_core::future::BoxFuture;

/// Why a [`SingleUseIds`] store could not say whether an id is new (unreachable, full).
/// The id is then refused: never taken as new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingleUseError(String);

impl SingleUseError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SingleUseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SingleUseError {}

/// Where a server remembers the single-use ids it accepted until they expire. Give
/// every process serving one endpoint the same store (`modelctx_redis::SingleUseIds`),
/// and an id used at one is refused at every other;
/// [`InMemorySingleUseIds`] remembers them in this process only.
pub trait SingleUseIds: Send + Sync + 'static {
    /// Remembers `id` until `expires_at` (seconds since the Unix epoch) and answers
    /// whether it was new: `true` the first time, `false` while it is remembered. The
    /// check and the record are one atomic step for every process sharing the store.
    /// A store that cannot tell (full, unreachable) answers `false` or an error, never
    /// `true`.
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, SingleUseError>>;
}

impl<T: SingleUseIds + ?Sized> SingleUseIds for std::sync::Arc<T> {
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, SingleUseError>> {
        (**self).first_use(id, expires_at)
    }
}

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
/// balancer (modelctx-oauth's `ResourceServerConfig::replay_store`), and a DPoP proof
/// replayed to another instance is refused there too.
///
/// Every `AuthorizationStore` is one (feature
/// `authorization`), through its own `first_use`: `modelctx_redis::AuthorizationStore`
/// is the one to share through Redis.
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

#[cfg(feature = "authorization")]
impl<T: crate::AuthorizationStore + ?Sized> SingleUseStore for T {
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        crate::AuthorizationStore::first_use(self, id, expires_at)
    }
}

/// [`SingleUseIds`] in this process's memory: for a server that runs as one process.
/// Bounded: past [`InMemorySingleUseIds::MAX`] ids not yet expired, a new id is
/// refused (answered `false`) rather than an old one forgotten, which would let it be
/// used again; expired ids are swept as the map grows.
#[derive(Debug, Default)]
pub struct InMemorySingleUseIds {
    /// Id → expiry, and the size at which expired ids are swept next.
    seen: Mutex<(HashMap<String, u64>, usize)>,
}

impl InMemorySingleUseIds {
    /// How many ids not yet expired are remembered at most.
    pub const MAX: usize = 100_000;

    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn record(&self, id: &str, expires_at: u64, now: u64) -> bool {
        let mut guard = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let (seen, sweep_at) = &mut *guard;
        if seen.len() >= (*sweep_at).max(1024) {
            seen.retain(|_, until| *until >= now);
            *sweep_at = seen.len() * 2;
        }
        if seen.get(id).is_some_and(|until| *until >= now) || seen.len() >= Self::MAX {
            return false;
        }
        seen.insert(id.to_owned(), expires_at);
        true
    }
}

impl SingleUseIds for InMemorySingleUseIds {
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, SingleUseError>> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let first = self.record(id, expires_at, now);
        Box::pin(async move { Ok(first) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_new_once_until_it_expires_and_a_full_store_refuses() {
        let store = InMemorySingleUseIds::new();
        assert!(store.record("a", 100, 10));
        assert!(!store.record("a", 100, 50));
        assert!(store.record("b", 100, 50));
        // Expired: new again.
        assert!(store.record("a", 300, 101));
        // Full: refused, nothing forgotten.
        for i in 0..InMemorySingleUseIds::MAX {
            store.record(&format!("fill-{i}"), 1_000, 200);
        }
        assert!(!store.record("late", 1_000, 200));
        assert!(!store.record("a", 1_000, 200));
    }
}
