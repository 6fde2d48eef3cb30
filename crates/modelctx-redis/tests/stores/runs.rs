//! Run records of `modelctx_redis::EventStore` (its `RunStore`): two stores on one Redis stand for
//! two services. A run is `Running` while its owner keeps itself alive, `Orphaned` once
//! the owner stops saying so (or gives the run up), taken over by one service only, and
//! gone with its session.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{RedisServer, WITHIN};
use modelctx_store::{EventId, EventStore, RunState, RunStore};

/// Long enough that a loaded host's stall between a keep-alive and the checks after it
/// does not orphan a live owner's run (the test waits for the lapse on an event, so a
/// longer liveness costs only that wait).
const LIVENESS: Duration = Duration::from_millis(1500);

async fn service(redis: &RedisServer) -> modelctx_redis::EventStore {
    let config = modelctx_redis::EventStoreConfig::default()
        .prefix("runs:")
        .liveness(LIVENESS);
    modelctx_redis::EventStore::new(redis.connection().await, config)
}

fn runs(store: &modelctx_redis::EventStore) -> &dyn RunStore {
    store.runs().expect("the Redis event store records runs")
}

async fn state(store: &modelctx_redis::EventStore, stream: u64) -> RunState {
    tokio::time::timeout(WITHIN, runs(store).state("s", stream))
        .await
        .unwrap()
        .expect("Redis answers")
}

#[tokio::test]
async fn a_run_is_taken_over_once_after_its_owner_stops_and_ends_with_its_session() {
    let redis = RedisServer::start();
    let a = service(&redis).await;
    let b = service(&redis).await;
    let request: Arc<str> = Arc::from(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#);
    assert!(runs(&a).keep_alive("aaaa").await);
    assert!(runs(&b).keep_alive("bbbb").await);
    assert_eq!(
        runs(&a).keep_alive_interval(),
        LIVENESS / 4,
        "said every quarter of the liveness"
    );
    a.store("s", EventId { stream: 7, seq: 0 }, Arc::from(""));
    runs(&a).begin("s", 7, "aaaa", request.clone());
    // Ordered after the begin on A's queue: it is in Redis.
    assert_eq!(state(&a, 7).await, RunState::Running);
    assert_eq!(state(&b, 7).await, RunState::Running);
    assert_eq!(runs(&b).take_over("s", 7, "bbbb").await, None, "A is alive");

    // A stops saying it is alive (B goes on): its run is orphaned once that lapses.
    let orphaned = async {
        loop {
            assert!(runs(&b).keep_alive("bbbb").await);
            if state(&b, 7).await == RunState::Orphaned {
                return;
            }
            tokio::time::sleep(LIVENESS / 8).await;
        }
    };
    tokio::time::timeout(WITHIN, orphaned).await.unwrap();
    let taken = runs(&b)
        .take_over("s", 7, "bbbb")
        .await
        .expect("B takes it");
    assert_eq!(taken.request, request);
    assert_eq!(taken.last_stored, Some(0), "stored up to the priming event");
    assert_eq!(runs(&a).take_over("s", 7, "cccc").await, None, "taken once");
    assert_eq!(state(&a, 7).await, RunState::Running, "B runs it");
    // A's late end leaves B's record; B's own ends it.
    runs(&a).end("s", 7, "aaaa");
    assert_eq!(state(&a, 7).await, RunState::Running);
    runs(&b).end("s", 7, "bbbb");
    assert_eq!(state(&b, 7).await, RunState::Finished);

    // A run given up (its copy of the session ended) is orphaned at once.
    assert!(runs(&b).keep_alive("bbbb").await);
    runs(&b).begin("s", 8, "bbbb", request.clone());
    assert_eq!(state(&b, 8).await, RunState::Running);
    runs(&b).release("s", 8, "bbbb");
    assert_eq!(state(&b, 8).await, RunState::Orphaned);

    // The session's end takes its run records with its streams.
    b.store("s", EventId { stream: 8, seq: 0 }, Arc::from(""));
    b.forget_session("s");
    assert_eq!(state(&b, 8).await, RunState::Finished);
    let left: Vec<String> = redis
        .keys()
        .await
        .into_iter()
        .filter(|k| !k.starts_with("runs:live:"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
