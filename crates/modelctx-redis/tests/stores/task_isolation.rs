//! Task isolation across two instances sharing `modelctx_redis::TaskStore`: the creator on one
//! instance, the other requestor on the other, each of either protocol revision, with
//! and without authentication. The other requestor never lists the creator's task,
//! and reaching it by id answers as for an unknown id, unless it is the same user (or
//! both are without principal and session, when the id is the capability) — the rule
//! holds from the stored owner, whichever process reads it.

use std::sync::Arc;

use modelctx_test::task_isolation::{Era, Requestor, WITHIN, check_pair, serve, server};
use modelctx_test::within;

use crate::support::RedisServer;

/// Two stateful instances on one Redis, behind the stand-in authentication layer when
/// `auth`; their URLs, and the gate their `slow` tasks wait on.
async fn two_instances(
    redis: &RedisServer,
    auth: bool,
) -> ([String; 2], tokio::sync::watch::Sender<bool>) {
    let (open, gate) = tokio::sync::watch::channel(false);
    let mut urls = Vec::new();
    for _ in 0..2 {
        let store = modelctx_redis::TaskStore::new(
            redis.connection().await,
            modelctx_redis::TaskStoreConfig::default().prefix("iso:"),
        );
        urls.push(serve(server(&gate, Some(Arc::new(store))), true, auth).await);
    }
    (urls.try_into().unwrap(), open)
}

async fn every_pair(auth: bool, users: &[(Option<&'static str>, Option<&'static str>)]) {
    let redis = RedisServer::start();
    let ([one, two], open) = two_instances(&redis, auth).await;
    for &(creator, other) in users {
        for a_era in [Era::Handshake, Era::Stateless] {
            for b_era in [Era::Handshake, Era::Stateless] {
                let a = Requestor::connect(&one, a_era, creator).await;
                let b = Requestor::connect(&two, b_era, other).await;
                within(WITHIN, "the pair", check_pair(&a, &b)).await;
            }
        }
    }
    let keys = redis.keys().await;
    assert!(keys.iter().any(|k| k.starts_with("iso:task:")), "{keys:?}");
    open.send_replace(true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_clients_on_two_instances_keep_their_tasks_apart() {
    every_pair(false, &[(None, None)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticated_callers_on_two_instances_reach_only_their_own_tasks() {
    every_pair(
        true,
        &[
            (Some("alice"), Some("bob")),
            (Some("alice"), Some("alice")),
            (None, Some("bob")),
            (Some("alice"), None),
        ],
    )
    .await;
}
