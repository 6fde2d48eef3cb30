//! [`AuthorizationStore`]: the bundled authorization server's clients and grants,
//! shared by every process of it.
//!
//! A client is a JSON value (`oauth:client:<id>`, its id in the set `oauth:clients`,
//! bounded by `limits`), a grant a JSON value (`oauth:grant:<kind>:<sha256>`) with `PXAT`
//! at its `expires_at` and a place in the sorted set `oauth:grants` (purged of expired ones
//! on every insert, bounded). Taking a grant is get-and-delete in one script, so a code or
//! refresh token is used once even when two processes race for it. Unlike the in-memory
//! store, an expired grant is gone (`None`) rather than handed back for the server to
//! refuse; the client gets `invalid_grant` either way. The feature is turned on by no
//! workspace member: `cargo xtask test` builds and tests it through `--features
//! modelctx-redis/oauth`.

use futures::FutureExt;
use futures::future::BoxFuture;
use modelctx_store::{self as store, Grant, GrantKind, RegisteredClient, StoreError};
use redis::aio::ConnectionManager;

use crate::keys::Keys;
use crate::single_use::{now_ms, set_new_until};

crate::config::config! {
    /// Bounds and key names of a [`AuthorizationStore`].
    pub struct AuthorizationStoreConfig {
        prefix: String = crate::DEFAULT_PREFIX.to_owned(),
        max_clients: usize = 10_000,
        max_grants: usize = 100_000,
    }

    /// Every key starts with `prefix` (default `"modelctx:"`).
    prefix(prefix: impl Into<String>) => prefix = prefix.into();

    /// Clients and live grants kept at most (defaults 10,000 and 100,000, as the
    /// in-memory store): anyone may register a client or open a consent page, so past
    /// that new ones are refused (the server answers `server_error`). At least one each.
    limits(max_clients: usize, max_grants: usize) =>
        max_clients = max_clients.max(1),
        max_grants = max_grants.max(1);
}

/// An [`AuthorizationStore`](store::AuthorizationStore) in Redis.
///
/// A client is one JSON value (`<prefix>oauth:client:<id>`, listed in the set
/// `oauth:clients` for the bound); a grant is one JSON value
/// (`<prefix>oauth:grant:<kind>:<key>`, the key being the SHA-256 the server computed)
/// that Redis expires at the grant's `expires_at`, listed by expiry in
/// `oauth:grants` for the bound (expired entries purged at every insert).
/// `take_grant` gets and deletes in one script, so a code or refresh token is used
/// once even when two processes see it at the same moment. A single-use id
/// ([`first_use`](store::AuthorizationStore::first_use): the `jti` of an identity assertion,
/// a client assertion or a DPoP proof) is one `SET NX` of
/// `<prefix>oauth:seen:<id>` that Redis expires at the id's expiry, so an assertion
/// replayed to another process is refused and the keys go away by themselves.
pub struct AuthorizationStore {
    conn: ConnectionManager,
    keys: Keys,
    config: AuthorizationStoreConfig,
    put_client: redis::Script,
    put_grant: redis::Script,
    take_grant: redis::Script,
}

modelctx_types::__debug_shows!(AuthorizationStore, |v| { prefix: &v.keys.prefix(), .. });

/// KEYS: client, clients set. ARGV: id, JSON, max clients. -1 when full.
const PUT_CLIENT: &str = r"
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 and
   redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  return -1
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
";

/// KEYS: grant, grants index. ARGV: now ms, index member, JSON, expiry ms, max
/// grants, grant key prefix. -1 when full.
const PUT_GRANT: &str = r"
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for _, member in ipairs(expired) do redis.call('DEL', ARGV[6] .. member) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[2], ARGV[2]) == false and
   redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  return -1
end
redis.call('SET', KEYS[1], ARGV[3], 'PXAT', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
return 1
";

/// KEYS: grant, grants index. ARGV: index member. The grant's JSON, or nil.
const TAKE_GRANT: &str = r"
local grant = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return grant
";

impl AuthorizationStore {
    /// A store on `conn`.
    pub fn new(conn: ConnectionManager, config: AuthorizationStoreConfig) -> Self {
        Self {
            conn,
            keys: Keys::new(&config.prefix),
            config,
            put_client: redis::Script::new(PUT_CLIENT),
            put_grant: redis::Script::new(PUT_GRANT),
            take_grant: redis::Script::new(TAKE_GRANT),
        }
    }

    /// Connects to the Redis at `url` with a reconnecting [`ConnectionManager`] and
    /// builds a store on it.
    pub async fn connect(
        url: &str,
        config: AuthorizationStoreConfig,
    ) -> Result<Self, redis::RedisError> {
        Ok(Self::new(crate::connect(url).await?, config))
    }
}

/// The grant kind as its serde name (`pending`, `code`, ...).
fn kind_name(kind: GrantKind) -> Result<String, StoreError> {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(name)) => Ok(name),
        _ => Err(StoreError("unknown grant kind".into())),
    }
}

fn unavailable(_: redis::RedisError) -> StoreError {
    // The Redis error stays here: it may name hosts and keys.
    StoreError("the authorization store is unavailable".into())
}

fn corrupt(_: serde_json::Error) -> StoreError {
    StoreError("the authorization store holds a value it cannot read".into())
}

impl store::AuthorizationStore for AuthorizationStore {
    fn put_client(&self, client: RegisteredClient) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            let json = serde_json::to_string(&client).map_err(corrupt)?;
            let n: i64 = self
                .put_client
                .key(self.keys.oauth_client(&client.client_id))
                .key(self.keys.oauth_clients())
                .arg(&client.client_id)
                .arg(json)
                .arg(self.config.max_clients)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(unavailable)?;
            if n < 0 {
                return Err(StoreError("the client store is full".into()));
            }
            Ok(())
        }
        .boxed()
    }

    fn client<'a>(
        &'a self,
        client_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RegisteredClient>, StoreError>> {
        async move {
            let json: Option<String> = redis::cmd("GET")
                .arg(self.keys.oauth_client(client_id))
                .query_async(&mut self.conn.clone())
                .await
                .map_err(unavailable)?;
            json.map(|j| serde_json::from_str(&j).map_err(corrupt))
                .transpose()
        }
        .boxed()
    }

    fn put_grant<'a>(
        &'a self,
        kind: GrantKind,
        key: &'a str,
        grant: Grant,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let member = format!("{}:{key}", kind_name(kind)?);
            let json = serde_json::to_string(&grant).map_err(corrupt)?;
            let now_ms = now_ms();
            // Expired already: Redis would drop it at once; keep it out altogether.
            let expiry_ms = grant.expires_at.saturating_mul(1000);
            if expiry_ms <= now_ms {
                return Ok(());
            }
            let n: i64 = self
                .put_grant
                .key(self.keys.oauth_grant(&member))
                .key(self.keys.oauth_grants())
                .arg(now_ms)
                .arg(&member)
                .arg(json)
                .arg(expiry_ms)
                .arg(self.config.max_grants)
                .arg(self.keys.oauth_grant_prefix())
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(unavailable)?;
            if n < 0 {
                return Err(StoreError("the grant store is full".into()));
            }
            Ok(())
        }
        .boxed()
    }

    fn take_grant<'a>(
        &'a self,
        kind: GrantKind,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Grant>, StoreError>> {
        async move {
            let member = format!("{}:{key}", kind_name(kind)?);
            let json: Option<String> = self
                .take_grant
                .key(self.keys.oauth_grant(&member))
                .key(self.keys.oauth_grants())
                .arg(&member)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(unavailable)?;
            json.map(|j| serde_json::from_str(&j).map_err(corrupt))
                .transpose()
        }
        .boxed()
    }

    fn first_use<'a>(
        &'a self,
        id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            // Past its expiry already: nothing to remember (the server refused it).
            let expiry_ms = expires_at.saturating_mul(1000);
            if expiry_ms <= now_ms() {
                return Ok(true);
            }
            set_new_until(&self.conn, self.keys.oauth_seen(id), expiry_ms)
                .await
                .map_err(unavailable)
        }
        .boxed()
    }
}
