//! Where modelctx-oauth's bundled authorization server keeps clients and grants: the
//! [`AuthorizationStore`] trait, its records, and the in-memory [`InMemoryStore`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_core::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::single_use::{InMemorySingleUseIds, StoreError};

/// A registered client. Serde-serialisable, for stores that keep clients elsewhere.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RegisteredClient {
    /// The client's id.
    pub client_id: String,
    /// SHA-256 (base64url) of its secret; `None` for a public client and a
    /// `private_key_jwt` one.
    pub secret_hash: Option<String>,
    /// `token_endpoint_auth_method`: `none`, `client_secret_basic`,
    /// `client_secret_post` or `private_key_jwt` (its keys are the `jwks` or
    /// `jwks_uri` of [`metadata`](Self::metadata)).
    pub auth_method: String,
    /// The redirect URIs it may use, each compared exactly.
    pub redirect_uris: Vec<String>,
    /// The grant types it may use.
    pub grant_types: Vec<String>,
    /// Every metadata field it registered (echoed by the registration endpoint).
    pub metadata: Map<String, Value>,
}

modelctx_types::__debug_shows!(RegisteredClient, |v| {
    client_id: &v.client_id,
    auth_method: &v.auth_method,
    redirect_uris: &v.redirect_uris,
    grant_types: &v.grant_types,
    ..
});

impl RegisteredClient {
    /// A public client (no secret, PKCE only) using the authorization code with
    /// `redirect_uris`.
    pub fn public(
        client_id: impl Into<String>,
        redirect_uris: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            client_id: client_id.into(),
            secret_hash: None,
            auth_method: "none".into(),
            redirect_uris: redirect_uris.into_iter().map(Into::into).collect(),
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            metadata: Map::new(),
        }
    }

    /// A confidential client authenticating with `secret` (HTTP Basic or in the form)
    /// that may use the authorization code with `redirect_uris` and client credentials.
    pub fn confidential(
        client_id: impl Into<String>,
        secret: &str,
        redirect_uris: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            client_id: client_id.into(),
            secret_hash: Some(hash(secret)),
            auth_method: "client_secret_basic".into(),
            redirect_uris: redirect_uris.into_iter().map(Into::into).collect(),
            grant_types: vec![
                "authorization_code".into(),
                "refresh_token".into(),
                "client_credentials".into(),
            ],
            metadata: Map::new(),
        }
    }
}

impl RegisteredClient {
    /// A confidential client that authenticates with JWTs signed (ES256) by a key of
    /// `jwks` (a JWK set: `{"keys": [...]}`, public keys only) — `private_key_jwt`,
    /// RFC 7523 — and may use the authorization code with `redirect_uris` and client
    /// credentials.
    pub fn private_key_jwt(
        client_id: impl Into<String>,
        jwks: Value,
        redirect_uris: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let mut metadata = Map::new();
        metadata.insert(
            "token_endpoint_auth_method".into(),
            "private_key_jwt".into(),
        );
        metadata.insert("jwks".into(), jwks);
        Self {
            client_id: client_id.into(),
            secret_hash: None,
            auth_method: "private_key_jwt".into(),
            redirect_uris: redirect_uris.into_iter().map(Into::into).collect(),
            grant_types: vec![
                "authorization_code".into(),
                "refresh_token".into(),
                "client_credentials".into(),
            ],
            metadata,
        }
    }
}

/// What a code, a refresh token or a pending authorization request stands for.
/// Serde-serialisable, for stores that keep grants elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Grant {
    /// The client it was given to.
    pub client_id: String,
    /// The user who consented (the client itself for client credentials).
    pub subject: String,
    /// The granted (or requested) scopes, space-separated.
    pub scope: String,
    /// The resource (audience) the tokens are for.
    pub resource: Option<String>,
    /// The redirect URI of the authorization request.
    pub redirect_uri: Option<String>,
    /// The PKCE S256 challenge of the authorization request.
    pub code_challenge: Option<String>,
    /// The authorization request's `state`.
    pub state: Option<String>,
    /// The RFC 7638 thumbprint of the DPoP key the tokens are bound to (RFC 9449).
    #[serde(default)]
    pub dpop_jkt: Option<String>,
    /// The tokens that descend from one authorization code: revoked together when the
    /// code or one of its spent refresh tokens is presented again.
    #[serde(default)]
    pub family: Option<String>,
    /// When it stops being usable, in seconds since the Unix epoch.
    pub expires_at: u64,
}

impl Grant {
    /// What `client_id` was granted for `subject` with `scope` (space-separated), usable
    /// until `expires_at` (seconds since the Unix epoch): no resource, no redirect URI,
    /// no PKCE challenge, no `state`, no DPoP key, no token family (each a public field
    /// to set).
    pub fn new(
        client_id: impl Into<String>,
        subject: impl Into<String>,
        scope: impl Into<String>,
        expires_at: u64,
    ) -> Self {
        Self {
            client_id: client_id.into(),
            subject: subject.into(),
            scope: scope.into(),
            resource: None,
            redirect_uri: None,
            code_challenge: None,
            state: None,
            dpop_jkt: None,
            family: None,
            expires_at,
        }
    }
}

/// The kind of a [`Grant`] in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GrantKind {
    /// An authorization request waiting for the user's consent.
    Pending,
    /// An authorization code.
    Code,
    /// A refresh token.
    Refresh,
    /// A code or refresh token already exchanged (its `family`, to revoke on replay).
    Spent,
    /// A token family revoked after a replay (keyed by the family).
    RevokedFamily,
}

/// Clients and grants of the authorization server. Grants are stored under a SHA-256
/// of the code or token (never the value itself) and taken out when used, which makes
/// codes and refresh tokens single-use: `take_grant` must remove atomically.
/// [`InMemoryStore`] keeps them in memory.
///
/// Every process of one authorization server must share one store: the single-use
/// checks (codes, refresh tokens, the `jti`s of assertions and DPoP proofs, through
/// [`first_use`](Self::first_use)) hold across exactly the processes that share it.
pub trait AuthorizationStore: Send + Sync + 'static {
    /// Adds or replaces a client.
    fn put_client(&self, client: RegisteredClient) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The client with this id.
    fn client<'a>(
        &'a self,
        client_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RegisteredClient>, StoreError>>;

    /// Keeps `grant` under `key`.
    fn put_grant<'a>(
        &'a self,
        kind: GrantKind,
        key: &'a str,
        grant: Grant,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Removes and returns the grant under `key` (expired or not).
    fn take_grant<'a>(
        &'a self,
        kind: GrantKind,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Grant>, StoreError>>;

    /// Remembers `id` until `expires_at` (seconds since the Unix epoch) and answers
    /// whether it was new: `true` the first time, `false` while it is remembered. The
    /// check and the record must be one atomic step for every process sharing the
    /// store, since the server relies on it to accept an identity assertion, a client
    /// assertion or a DPoP proof once (their `jti`s). `id` is a SHA-256 (base64url)
    /// the server computed. Nothing needs to be kept past `expires_at` (an id already
    /// past it may be answered `true` without being kept: the server refuses what has
    /// expired before asking). A store that cannot tell (full, unreachable) answers
    /// `false` or an error, never `true`.
    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// An [`AuthorizationStore`] in memory, for development, tests and single-process
/// servers: everything is lost on restart, and single use holds in this process only.
/// Expired grants are dropped as new ones come.
///
/// Bounded, since anyone may register a client or open a consent page: at most
/// 10,000 clients and 100,000 live grants by default ([`limits`](Self::limits));
/// past that, new ones are refused (the server answers `server_error`). At most
/// 100,000 live single-use ids ([`first_use`](AuthorizationStore::first_use)); past
/// that, new ones count as used until the oldest expire.
#[derive(Debug)]
pub struct InMemoryStore {
    clients: Mutex<HashMap<String, RegisteredClient>>,
    grants: Mutex<Grants>,
    seen: InMemorySingleUseIds,
    max_clients: usize,
    max_grants: usize,
}

#[derive(Debug, Default)]
struct Grants {
    map: HashMap<(GrantKind, String), Grant>,
    /// The size at which expired grants are swept out next (amortised: a sweep at most
    /// every time the map doubles).
    sweep_at: usize,
}

impl Default for InMemoryStore {
    fn default() -> Self {
        Self {
            clients: Mutex::default(),
            grants: Mutex::default(),
            seen: InMemorySingleUseIds::default(),
            max_clients: 10_000,
            max_grants: 100_000,
        }
    }
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how many clients and live grants it holds at most.
    #[must_use]
    pub fn limits(mut self, max_clients: usize, max_grants: usize) -> Self {
        self.max_clients = max_clients;
        self.max_grants = max_grants;
        self
    }
}

impl AuthorizationStore for InMemoryStore {
    fn put_client(&self, client: RegisteredClient) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let result =
            if clients.len() >= self.max_clients && !clients.contains_key(&client.client_id) {
                Err(StoreError("the client store is full".into()))
            } else {
                clients.insert(client.client_id.clone(), client);
                Ok(())
            };
        Box::pin(async { result })
    }

    fn client<'a>(
        &'a self,
        client_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RegisteredClient>, StoreError>> {
        let clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let found = clients.get(client_id).cloned();
        Box::pin(async { Ok(found) })
    }

    fn put_grant<'a>(
        &'a self,
        kind: GrantKind,
        key: &'a str,
        grant: Grant,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let now = now_secs();
        let mut grants = self.grants.lock().unwrap_or_else(|p| p.into_inner());
        if grants.map.len() >= grants.sweep_at.max(1024) {
            grants.map.retain(|_, g| g.expires_at > now);
            grants.sweep_at = grants.map.len() * 2;
        }
        let result = if grants.map.len() >= self.max_grants {
            Err(StoreError("the grant store is full".into()))
        } else {
            grants.map.insert((kind, key.to_owned()), grant);
            Ok(())
        };
        Box::pin(async { result })
    }

    fn take_grant<'a>(
        &'a self,
        kind: GrantKind,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Grant>, StoreError>> {
        let mut grants = self.grants.lock().unwrap_or_else(|p| p.into_inner());
        let found = grants.map.remove(&(kind, key.to_owned()));
        Box::pin(async { Ok(found) })
    }

    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        // An id is spent until the second it expires, included: one that expires now is
        // new again.
        let new = self.seen.record(id, expires_at, now_secs() + 1);
        Box::pin(async move { Ok(new) })
    }
}

/// Seconds since the Unix epoch.
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// base64url(SHA-256(`text`)): how secrets, codes and tokens are stored.
fn hash(text: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(expires_at: u64) -> Grant {
        Grant::new("c", "s", "", expires_at)
    }

    #[tokio::test]
    async fn the_store_is_bounded_and_grants_are_taken_once() {
        let store = InMemoryStore::new().limits(1, 2000);
        store
            .put_client(RegisteredClient::public("a", ["https://a/cb"]))
            .await
            .unwrap();
        // Replacing is fine; a second client is not.
        store
            .put_client(RegisteredClient::public("a", ["https://a/cb2"]))
            .await
            .unwrap();
        assert!(
            store
                .put_client(RegisteredClient::public("b", ["https://b/cb"]))
                .await
                .is_err()
        );

        let live = now_secs() + 600;
        for i in 0..2000 {
            store
                .put_grant(GrantKind::Code, &i.to_string(), grant(live))
                .await
                .unwrap();
        }
        assert!(
            store
                .put_grant(GrantKind::Code, "full", grant(live))
                .await
                .is_err()
        );
        let taken = |kind, key: &'static str| {
            let store = &store;
            async move { store.take_grant(kind, key).await.unwrap().is_some() }
        };
        assert!(taken(GrantKind::Code, "7").await);
        assert!(!taken(GrantKind::Code, "7").await);
        assert!(!taken(GrantKind::Refresh, "8").await);

        // Expired grants make room as new ones come.
        let store = InMemoryStore::new().limits(1, 1500);
        for i in 0..1500 {
            store
                .put_grant(GrantKind::Pending, &i.to_string(), grant(1))
                .await
                .unwrap();
        }
        store
            .put_grant(GrantKind::Pending, "new", grant(live))
            .await
            .unwrap();

        // An id is new once until it expires.
        assert!(store.first_use("jti", live).await.unwrap());
        assert!(!store.first_use("jti", live).await.unwrap());
        assert!(store.first_use("old", 1).await.unwrap());
        assert!(store.first_use("old", live).await.unwrap());
    }
}
