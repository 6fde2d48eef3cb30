//! The event store's behaviour, one suite run against the in-memory store and against
//! `modelctx_redis::EventStore` on a real redis-server: both must answer the same.

use std::sync::Arc;

use crate::support::{RedisServer, WITHIN};
use modelctx_store::{EventId, EventStore, InMemoryEventStore};

fn id(stream: u64, seq: u64) -> EventId {
    EventId { stream, seq }
}

fn data(s: &str) -> Arc<str> {
    Arc::from(s)
}

async fn replay(
    store: &dyn EventStore,
    session: &str,
    after: EventId,
) -> Option<Vec<(EventId, Arc<str>)>> {
    tokio::time::timeout(WITHIN, store.replay_after(session, after))
        .await
        .expect("a replay never hangs")
}

/// Stores built with at most `events` per stream and `streams` per session.
async fn both(
    redis: &RedisServer,
    events: usize,
    streams: usize,
) -> Vec<(&'static str, Box<dyn EventStore>)> {
    let config = modelctx_redis::EventStoreConfig::default()
        .max_events_per_stream(events)
        .max_streams_per_session(streams);
    vec![
        (
            "in-memory",
            Box::new(InMemoryEventStore::with_limits(events, streams)),
        ),
        (
            "redis",
            Box::new(modelctx_redis::EventStore::new(
                redis.connection().await,
                config,
            )),
        ),
    ]
}

/// A Redis event store whose stream 1 of session `s` holds a priming event and one
/// message, which it replays.
async fn with_one_message(redis: &RedisServer) -> modelctx_redis::EventStore {
    let store = modelctx_redis::EventStore::new(
        redis.connection().await,
        modelctx_redis::EventStoreConfig::default(),
    );
    store.store("s", id(1, 0), data(""));
    store.store("s", id(1, 1), data("m"));
    assert_eq!(
        replay(&store, "s", id(1, 0)).await.map(|r| r.len()),
        Some(1)
    );
    store
}

#[tokio::test]
async fn replays_only_its_stream_and_refuses_gaps() {
    let redis = RedisServer::start();
    for (name, store) in both(&redis, 2, 8).await {
        let store = &*store;
        for seq in 0..4 {
            store.store("s", id(1, seq), data(&format!("a{seq}")));
            store.store("s", id(2, seq), data(&format!("b{seq}")));
        }
        let got = replay(store, "s", id(1, 2)).await;
        assert_eq!(got, Some(vec![(id(1, 3), data("a3"))]), "{name}");
        // seq 0 and 1 were trimmed: replaying after 0 would skip 1.
        assert_eq!(replay(store, "s", id(1, 0)).await, None, "{name}");
        // After the last event: nothing missed.
        assert_eq!(replay(store, "s", id(2, 3)).await, Some(vec![]), "{name}");
        // Past the end: not an id this stream issued.
        assert_eq!(replay(store, "s", id(2, 4)).await, None, "{name}");
        // Unknown stream, unknown session.
        assert_eq!(replay(store, "s", id(9, 0)).await, None, "{name}");
        assert_eq!(replay(store, "t", id(1, 3)).await, None, "{name}");
        store.forget_session("s");
        assert_eq!(replay(store, "s", id(1, 3)).await, None, "{name}");
        assert_eq!(replay(store, "s", id(2, 3)).await, None, "{name}");
    }
}

#[tokio::test]
async fn replays_exactly_the_missed_events_in_order() {
    let redis = RedisServer::start();
    for (name, store) in both(&redis, 1024, 8).await {
        let store = &*store;
        // A priming event (empty data), then messages, on two sessions' stream 3.
        store.store("s", id(3, 0), data(""));
        store.store("other", id(3, 0), data(""));
        for seq in 1..200 {
            store.store("s", id(3, seq), data(&format!(r#"{{"n":{seq}}}"#)));
            store.store("other", id(3, seq), data("x"));
        }
        let got = replay(store, "s", id(3, 150)).await.expect(name);
        let want: Vec<_> = (151..200)
            .map(|seq| (id(3, seq), data(&format!(r#"{{"n":{seq}}}"#))))
            .collect();
        assert_eq!(got, want, "{name}");
        // After the priming event: every message, none of the other session's.
        let all = replay(store, "s", id(3, 0)).await.expect(name);
        assert_eq!(all.len(), 199, "{name}");
        assert!(all.iter().all(|(_, d)| &**d != "x"), "{name}");
    }
}

#[tokio::test]
async fn the_oldest_stream_of_a_session_goes_first() {
    let redis = RedisServer::start();
    for (name, store) in both(&redis, 8, 2).await {
        let store = &*store;
        for stream in 1..=3 {
            store.store("s", id(stream, 0), data(""));
            store.store("s", id(stream, 1), data("m"));
        }
        assert_eq!(replay(store, "s", id(1, 0)).await, None, "{name}");
        for stream in 2..=3 {
            let got = replay(store, "s", id(stream, 0)).await;
            assert_eq!(got, Some(vec![(id(stream, 1), data("m"))]), "{name}");
        }
    }
}

#[tokio::test]
async fn another_process_replays_what_one_stored() {
    let redis = RedisServer::start();
    let config = modelctx_redis::EventStoreConfig::default().prefix("shared:");
    let a = modelctx_redis::EventStore::new(redis.connection().await, config.clone());
    let b = modelctx_redis::EventStore::new(redis.connection().await, config);
    for seq in 0..5 {
        a.store("s", id(1, seq), data(&seq.to_string()));
    }
    // A replay on `a` is ordered after its writes; then `b` reads the same.
    assert_eq!(replay(&a, "s", id(1, 2)).await.map(|r| r.len()), Some(2));
    let got = replay(&b, "s", id(1, 2)).await;
    assert_eq!(
        got,
        Some(vec![(id(1, 3), data("3")), (id(1, 4), data("4"))])
    );
    // Another prefix is another store.
    let c = modelctx_redis::EventStore::new(
        redis.connection().await,
        modelctx_redis::EventStoreConfig::default().prefix("other:"),
    );
    assert_eq!(replay(&c, "s", id(1, 2)).await, None);
}

#[tokio::test]
async fn a_redis_that_is_gone_refuses_replays_without_hanging() {
    let redis = RedisServer::start();
    let store = with_one_message(&redis).await;
    drop(redis);
    // The write fails: its stream is damaged, and a replay is refused, not partial.
    store.store("s", id(1, 2), data("lost"));
    assert_eq!(replay(&store, "s", id(1, 0)).await, None);
}

#[tokio::test]
async fn after_a_redis_restart_lost_streams_are_refused_and_new_ones_work() {
    let mut redis = RedisServer::start();
    let store = with_one_message(&redis).await;
    redis.restart();
    // What Redis lost is refused, never replayed with a gap.
    assert_eq!(replay(&store, "s", id(1, 0)).await, None);
    // A stream written after the restart replays (the connection came back; a write
    // sent while it was down damages only its own stream).
    let mut stream = 2;
    let got = loop {
        store.store("s", id(stream, 0), data(""));
        store.store("s", id(stream, 1), data("after"));
        if let Some(got) = replay(&store, "s", id(stream, 0)).await {
            break got;
        }
        assert!(stream < 4, "the store did not reconnect");
        stream += 1;
    };
    assert_eq!(got, vec![(id(stream, 1), data("after"))]);
}
