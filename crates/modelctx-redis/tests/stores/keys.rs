//! No unbounded key growth: after churn, what is left in Redis is bounded by the
//! configuration, and every key but the task indexes expires on its own.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::support::{RedisServer, WITHIN};
use modelctx_store::{EventId, EventStore};
use modelctx_store::{TaskOwner, TaskRecord, TaskStore, TaskUpdate};
use modelctx_types::{Task, TaskStatus};

#[tokio::test]
async fn event_keys_go_with_their_sessions_and_expire_without_them() {
    let redis = RedisServer::start();
    let ttl = Duration::from_secs(600);
    let config = modelctx_redis::EventStoreConfig::default()
        .prefix("churn:")
        .ttl(ttl)
        .max_events_per_stream(4)
        .max_streams_per_session(3);
    let store = modelctx_redis::EventStore::new(redis.connection().await, config);
    let data: Arc<str> = Arc::from("{}");
    for session in 0..100 {
        let session = format!("s{session}");
        for stream in 0..6 {
            for seq in 0..10 {
                store.store(&session, EventId { stream, seq }, data.clone());
            }
        }
        // Half the sessions end cleanly; the rest are abandoned (a process died).
        if session.ends_with(['0', '2', '4', '6', '8']) {
            store.forget_session(&session);
        }
    }
    // A replay is ordered after every write before it: the churn has reached Redis.
    let last = tokio::time::timeout(
        WITHIN,
        store.replay_after("s99", EventId { stream: 5, seq: 8 }),
    )
    .await
    .unwrap();
    assert_eq!(last.map(|r| r.len()), Some(1));

    let keys = redis.keys().await;
    // 50 abandoned sessions: an index and at most 3 streams each.
    assert_eq!(keys.len(), 50 * (1 + 3), "{keys:?}");
    for key in &keys {
        assert!(key.starts_with("churn:ev:{s"), "{key}");
        let left: i64 = redis.query_key("PTTL", key).await;
        assert!(left > 0 && left <= 600_000, "{key} expires: {left}");
    }
    for session in (0..100).filter(|s| s % 2 == 0) {
        let prefix = format!("churn:ev:{{s{session}}}");
        assert!(
            !keys.iter().any(|k| k.starts_with(&prefix)),
            "{prefix} forgotten"
        );
    }
    // Each remaining stream is trimmed to its last 4 events.
    let len: usize = redis.query_key("XLEN", "churn:ev:{s99}:5").await;
    assert_eq!(len, 4);
}

#[tokio::test]
async fn task_keys_stay_within_capacity() {
    let redis = RedisServer::start();
    let capacity = 10;
    let config = modelctx_redis::TaskStoreConfig::default()
        .prefix("churn:")
        .capacity(capacity)
        .max_ttl(Duration::from_secs(3600));
    let store = modelctx_redis::TaskStore::new(redis.connection().await, config);
    let owner = TaskOwner::new(Some("s"), None);
    for n in 0..300 {
        let ttl = if n % 3 == 0 { None } else { Some(60_000) };
        let task = Task::new(format!("t{n}"), TaskStatus::Working, "t", "t", ttl);
        let mut record = TaskRecord::new(task, owner.clone(), "tools/call");
        if n % 3 == 1 {
            // Already expired: purged by a later insert.
            record.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
        }
        tokio::time::timeout(WITHIN, store.insert(record))
            .await
            .unwrap()
            .unwrap();
        tokio::time::timeout(WITHIN, store.update(&format!("t{n}"), TaskUpdate::Cancel))
            .await
            .unwrap()
            .ok();
    }
    let keys = redis.keys().await;
    let records: Vec<_> = keys
        .iter()
        .filter(|k| k.starts_with("churn:task:"))
        .collect();
    assert!(records.len() <= capacity, "{records:?}");
    for index in [
        "churn:tasks:order",
        "churn:tasks:done",
        "churn:tasks:expiry",
    ] {
        let len: usize = redis.query_key("ZCARD", index).await;
        assert!(len <= capacity, "{index}");
    }
    // Nothing else: the records, three indexes and the counter.
    assert!(keys.len() <= capacity + 4, "{keys:?}");
    for key in records {
        let left: i64 = redis.query_key("PTTL", key).await;
        assert!(left > 0 && left <= 3_600_000, "{key} expires: {left}");
    }
}
