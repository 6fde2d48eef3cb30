//! The authorization store's behaviour, one suite run against the in-memory store and
//! against `modelctx_redis::AuthorizationStore`, and single use across two processes (codes,
//! identity and client assertions).

use crate::support::{RedisServer, race, store_call};
use modelctx_oauth::{
    AuthorizationServer, AuthorizationServerConfig, AuthorizationStore, Grant, GrantKind,
    InMemoryStore, Login, RegisteredClient, TrustedIdentityProvider,
};
use modelctx_test::jose::{es256_jwt, now, public_jwk};
use serde_json::{Value, json};

fn grant(expires_at: u64) -> Grant {
    serde_json::from_value(json!({
        "client_id": "c", "subject": "s", "scope": "", "resource": null,
        "redirect_uri": null, "code_challenge": null, "state": null,
        "expires_at": expires_at,
    }))
    .unwrap()
}

/// The grant `store` takes under `kind` and `key`, if any; the call must succeed.
async fn take(store: &dyn AuthorizationStore, kind: GrantKind, key: &str) -> Option<Grant> {
    store_call(store.take_grant(kind, key)).await.unwrap()
}

#[tokio::test]
async fn the_store_is_bounded_and_grants_are_taken_once() {
    let redis = RedisServer::start();
    let config = modelctx_redis::AuthorizationStoreConfig::default().limits(1, 50);
    let stores: Vec<(&str, Box<dyn AuthorizationStore>)> = vec![
        ("in-memory", Box::new(InMemoryStore::new().limits(1, 50))),
        (
            "redis",
            Box::new(modelctx_redis::AuthorizationStore::new(
                redis.connection().await,
                config,
            )),
        ),
    ];
    for (name, store) in stores {
        store_call(store.put_client(RegisteredClient::public("a", ["https://a/cb"])))
            .await
            .unwrap();
        // Replacing is fine; a second client is not.
        store_call(store.put_client(RegisteredClient::public("a", ["https://a/cb2"])))
            .await
            .unwrap();
        let got = store_call(store.client("a")).await.unwrap().expect(name);
        assert_eq!(got.redirect_uris, ["https://a/cb2"], "{name}");
        assert!(
            store_call(store.put_client(RegisteredClient::public("b", ["https://b/cb"])))
                .await
                .is_err(),
            "{name}"
        );
        assert!(
            store_call(store.client("b")).await.unwrap().is_none(),
            "{name}"
        );

        let live = now() + 600;
        for i in 0..50 {
            store_call(store.put_grant(GrantKind::Code, &i.to_string(), grant(live)))
                .await
                .unwrap();
        }
        assert!(
            store_call(store.put_grant(GrantKind::Code, "full", grant(live)))
                .await
                .is_err(),
            "{name}"
        );
        let taken = take(&*store, GrantKind::Code, "7").await;
        assert_eq!(taken, Some(grant(live)), "{name}");
        assert!(
            take(&*store, GrantKind::Code, "7").await.is_none(),
            "{name}"
        );
        // Kinds are separate.
        assert!(
            take(&*store, GrantKind::Refresh, "8").await.is_none(),
            "{name}"
        );
        // A taken grant made room.
        store_call(store.put_grant(GrantKind::Refresh, "8", grant(live)))
            .await
            .unwrap();
        assert!(
            take(&*store, GrantKind::Refresh, "8").await.is_some(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_code_is_used_once_across_processes() {
    let redis = RedisServer::start();
    let config = modelctx_redis::AuthorizationStoreConfig::default();
    let (a, b) = redis
        .two_stores(|c| modelctx_redis::AuthorizationStore::new(c, config.clone()))
        .await;
    for round in 0..20 {
        let key = format!("code-{round}");
        store_call(a.put_grant(GrantKind::Code, &key, grant(now() + 600)))
            .await
            .unwrap();
        let (ka, kb) = (key.clone(), key.clone());
        let (sa, sb) = (a.clone(), b.clone());
        let (ra, rb) = race(
            async move { sa.take_grant(GrantKind::Code, &ka).await },
            async move { sb.take_grant(GrantKind::Code, &kb).await },
        )
        .await;
        let (ra, rb) = (ra.unwrap(), rb.unwrap());
        assert!(
            ra.is_some() != rb.is_some(),
            "exactly one process gets the code"
        );
    }
    // Expired grants leave nothing behind (Redis drops them at their expiry).
    store_call(a.put_grant(GrantKind::Pending, "old", grant(1)))
        .await
        .unwrap();
    assert!(
        store_call(b.take_grant(GrantKind::Pending, "old"))
            .await
            .unwrap()
            .is_none()
    );
    let keys = redis.keys().await;
    assert!(
        keys.is_empty(),
        "every grant was taken or expired: {keys:?}"
    );
}

#[tokio::test]
async fn single_use_ids_are_new_once_and_expire() {
    let redis = RedisServer::start();
    let store = modelctx_redis::AuthorizationStore::new(
        redis.connection().await,
        modelctx_redis::AuthorizationStoreConfig::default().prefix("t:"),
    );
    assert!(
        store_call(store.first_use("id-1", now() + 600))
            .await
            .unwrap()
    );
    assert!(
        !store_call(store.first_use("id-1", now() + 600))
            .await
            .unwrap()
    );
    // Past its expiry there is nothing to remember.
    assert!(
        store_call(store.first_use("id-0", now() - 1))
            .await
            .unwrap()
    );
    assert_eq!(redis.keys().await, ["t:oauth:seen:id-1"]);
    // Redis drops a remembered id at its expiry (one to two seconds from now): waited
    // for by watching the keys, within a bound.
    assert!(
        store_call(store.first_use("id-2", now() + 2))
            .await
            .unwrap()
    );
    assert_eq!(redis.keys().await.len(), 2);
    store_call(async {
        while redis.keys().await.len() > 1 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(redis.keys().await, ["t:oauth:seen:id-1"]);
    assert!(
        store_call(store.first_use("id-2", now() + 600))
            .await
            .unwrap()
    );
}

// ---- the authorization server on two processes sharing one Redis ----

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const IDP: &str = "https://idp.example";

/// The P-256 key whose secret is 32 bytes of `seed`.
fn key(seed: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap()
}

/// Two processes of one authorization server (same issuer, same configuration), each
/// with its own `modelctx_redis::AuthorizationStore` on `redis`, each on its own port: their
/// token endpoints, and the issuer.
async fn two_instances(
    redis: &RedisServer,
    idp: &p256::ecdsa::SigningKey,
    client: &p256::ecdsa::SigningKey,
) -> ([String; 2], String) {
    let listeners = [
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    ];
    let origins = listeners
        .each_ref()
        .map(|l| format!("http://{}", l.local_addr().unwrap()));
    let issuer = origins[0].clone();
    let config = AuthorizationServerConfig::new(&issuer, format!("{issuer}/mcp"))
        .scopes_supported(["mcp:tools"])
        .trust_identity_provider(
            TrustedIdentityProvider::new(IDP, &json!({"keys": [public_jwk(idp, Some("idp-1"))]}))
                .unwrap(),
        );
    let users = |_: &Login<'_>| None::<String>;
    let mut first = None;
    for listener in listeners {
        let store =
            modelctx_redis::AuthorizationStore::new(redis.connection().await, Default::default());
        let server = AuthorizationServer::new(config.clone(), store, users).unwrap();
        let router = server.router();
        first.get_or_insert(server);
        tokio::spawn(async move { axum::serve(listener, router).await });
    }
    // One registration: the instances share their store.
    let server = first.unwrap();
    let mut enterprise =
        RegisteredClient::confidential("enterprise", "ent-secret", Vec::<String>::new());
    enterprise.grant_types = vec![JWT_BEARER.to_owned()];
    store_call(server.register_client(enterprise))
        .await
        .unwrap();
    store_call(server.register_client(RegisteredClient::private_key_jwt(
        "signer",
        json!({"keys": [public_jwk(client, Some("c-1"))]}),
        Vec::<String>::new(),
    )))
    .await
    .unwrap();
    (origins.map(|o| format!("{o}/token")), issuer)
}

/// POSTs `form` to `url`: the status and the JSON answer.
async fn post(url: &str, form: &[(&str, &str)]) -> (u16, Value) {
    store_call(async {
        let r = reqwest::Client::new()
            .post(url)
            .form(form)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (
            status,
            serde_json::from_slice(&r.bytes().await.unwrap()).unwrap(),
        )
    })
    .await
}

/// Sends `form` to `first`, granted a token; then again to `second` and to `first`,
/// refused each time as a replay with `refusal`'s status and error code.
async fn granted_once(first: &str, second: &str, form: &[(&str, &str)], refusal: (u16, &str)) {
    let (status, body) = post(first, form).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["access_token"].is_string(), "{body}");
    for again in [second, first] {
        let (status, body) = post(again, form).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (refusal.0, Some(refusal.1)),
            "{again}"
        );
    }
}

/// `count` `oauth:seen:` keys, each expiring within `longest` ms.
async fn assert_seen_once_each(redis: &RedisServer, count: usize, longest: i64) {
    let mut seen = Vec::new();
    for key in redis.keys().await {
        if key.contains("oauth:seen:") {
            let ttl: i64 = redis.query_key("PTTL", &key).await;
            seen.push((key, ttl));
        }
    }
    assert_eq!(seen.len(), count, "{seen:?}");
    assert!(
        seen.iter().all(|(_, ttl)| (1..=longest).contains(ttl)),
        "{seen:?}"
    );
}

#[tokio::test]
async fn an_identity_assertion_replayed_to_the_other_process_is_refused() {
    let redis = RedisServer::start();
    let (idp, client) = (key(41), key(42));
    let (tokens, issuer) = two_instances(&redis, &idp, &client).await;
    let id_jag = |jti: &str| {
        es256_jwt(
            &idp,
            &json!({"alg": "ES256", "typ": "oauth-id-jag+jwt", "kid": "idp-1"}),
            &json!({"iss": IDP, "sub": "alice", "aud": issuer, "client_id": "enterprise",
                "jti": jti, "scope": "mcp:tools", "iat": now(), "exp": now() + 300}),
        )
    };
    for round in 0..5 {
        // Each assertion first to one process, then again to the other, and again to
        // the first: a token once, then invalid_grant (RFC 7523 §3.1).
        let (first, second) = (&tokens[round % 2], &tokens[(round + 1) % 2]);
        let assertion = id_jag(&format!("jag-{round}"));
        let form = [
            ("grant_type", JWT_BEARER),
            ("assertion", assertion.as_str()),
            ("client_id", "enterprise"),
            ("client_secret", "ent-secret"),
        ];
        granted_once(first, second, &form, (400, "invalid_grant")).await;
    }
    // One key per assertion, each expiring (with the clock skew) after the assertion.
    assert_seen_once_each(&redis, 5, 360_000).await;
}

#[tokio::test]
async fn a_client_assertion_replayed_to_the_other_process_is_refused() {
    let redis = RedisServer::start();
    let (idp, client) = (key(43), key(44));
    let (tokens, issuer) = two_instances(&redis, &idp, &client).await;
    for round in 0..5 {
        let (first, second) = (&tokens[round % 2], &tokens[(round + 1) % 2]);
        let assertion = es256_jwt(
            &client,
            &json!({"alg": "ES256", "typ": "JWT", "kid": "c-1"}),
            &json!({"iss": "signer", "sub": "signer", "aud": issuer,
                "jti": format!("ca-{round}"), "iat": now(), "exp": now() + 120}),
        );
        let form = [
            ("grant_type", "client_credentials"),
            ("scope", "mcp:tools"),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", assertion.as_str()),
        ];
        // Client authentication failed: invalid_client (RFC 6749 §5.2, RFC 7523 §3.2).
        granted_once(first, second, &form, (401, "invalid_client")).await;
    }
    assert_seen_once_each(&redis, 5, 180_000).await;
}
