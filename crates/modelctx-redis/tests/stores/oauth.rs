//! The authorization store's behaviour, one suite run against the in-memory store and
//! against `RedisAuthorizationStore`, and single use across two processes.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::support::{RedisServer, WITHIN};
use modelctx_oauth::{AuthorizationStore, Grant, GrantKind, InMemoryStore, RegisteredClient};
use modelctx_redis::{RedisAuthorizationStore, RedisAuthorizationStoreConfig};
use serde_json::json;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn grant(expires_at: u64) -> Grant {
    serde_json::from_value(json!({
        "client_id": "c", "subject": "s", "scope": "", "resource": null,
        "redirect_uri": null, "code_challenge": null, "state": null,
        "expires_at": expires_at,
    }))
    .unwrap()
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(WITHIN, f)
        .await
        .expect("a store call never hangs")
}

#[tokio::test]
async fn the_store_is_bounded_and_grants_are_taken_once() {
    let redis = RedisServer::start();
    let config = RedisAuthorizationStoreConfig::default().limits(1, 50);
    let stores: Vec<(&str, Box<dyn AuthorizationStore>)> = vec![
        ("in-memory", Box::new(InMemoryStore::new().limits(1, 50))),
        (
            "redis",
            Box::new(RedisAuthorizationStore::new(
                redis.connection().await,
                config,
            )),
        ),
    ];
    for (name, store) in stores {
        within(store.put_client(RegisteredClient::public("a", ["https://a/cb"])))
            .await
            .unwrap();
        // Replacing is fine; a second client is not.
        within(store.put_client(RegisteredClient::public("a", ["https://a/cb2"])))
            .await
            .unwrap();
        let got = within(store.client("a")).await.unwrap().expect(name);
        assert_eq!(got.redirect_uris, ["https://a/cb2"], "{name}");
        assert!(
            within(store.put_client(RegisteredClient::public("b", ["https://b/cb"])))
                .await
                .is_err(),
            "{name}"
        );
        assert!(within(store.client("b")).await.unwrap().is_none(), "{name}");

        let live = now() + 600;
        for i in 0..50 {
            within(store.put_grant(GrantKind::Code, &i.to_string(), grant(live)))
                .await
                .unwrap();
        }
        assert!(
            within(store.put_grant(GrantKind::Code, "full", grant(live)))
                .await
                .is_err(),
            "{name}"
        );
        let taken = within(store.take_grant(GrantKind::Code, "7"))
            .await
            .unwrap();
        assert_eq!(taken, Some(grant(live)), "{name}");
        assert!(
            within(store.take_grant(GrantKind::Code, "7"))
                .await
                .unwrap()
                .is_none(),
            "{name}"
        );
        // Kinds are separate.
        assert!(
            within(store.take_grant(GrantKind::Refresh, "8"))
                .await
                .unwrap()
                .is_none(),
            "{name}"
        );
        // A taken grant made room.
        within(store.put_grant(GrantKind::Refresh, "8", grant(live)))
            .await
            .unwrap();
        assert!(
            within(store.take_grant(GrantKind::Refresh, "8"))
                .await
                .unwrap()
                .is_some(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_code_is_used_once_across_processes() {
    let redis = RedisServer::start();
    let config = RedisAuthorizationStoreConfig::default();
    let a = Arc::new(RedisAuthorizationStore::new(
        redis.connection().await,
        config.clone(),
    ));
    let b = Arc::new(RedisAuthorizationStore::new(
        redis.connection().await,
        config,
    ));
    for round in 0..20 {
        let key = format!("code-{round}");
        within(a.put_grant(GrantKind::Code, &key, grant(now() + 600)))
            .await
            .unwrap();
        let (ka, kb) = (key.clone(), key.clone());
        let (sa, sb) = (a.clone(), b.clone());
        let (ra, rb) = within(async move {
            tokio::join!(
                tokio::spawn(async move { sa.take_grant(GrantKind::Code, &ka).await }),
                tokio::spawn(async move { sb.take_grant(GrantKind::Code, &kb).await }),
            )
        })
        .await;
        let (ra, rb) = (ra.unwrap().unwrap(), rb.unwrap().unwrap());
        assert!(
            ra.is_some() != rb.is_some(),
            "exactly one process gets the code"
        );
    }
    // Expired grants leave nothing behind (Redis drops them at their expiry).
    within(a.put_grant(GrantKind::Pending, "old", grant(1)))
        .await
        .unwrap();
    assert!(
        within(b.take_grant(GrantKind::Pending, "old"))
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
