//! The session registry: one session across two services, the cap, a failed
//! `initialize`, churn, and the state it records.

use super::*;

/// A session's state once its `initialize` is answered.
fn snapshot() -> SessionSnapshot {
    SessionSnapshot::new(
        ProtocolVersion::V2025_11_25,
        Implementation::new("c", "1"),
        ClientCapabilities::default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_counts_every_service_and_records_expire() {
    let redis = RedisServer::start();
    let (a, b) = Instance::two(&redis, "cap:", 2).await;
    let (status, first) = raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &b.url, None, Some(initialize())).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
    assert_eq!(
        status, 503,
        "two sessions, one on each service: the cap is reached"
    );
    let (status, _) = raw(reqwest::Method::DELETE, &b.url, Some(&first), None).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &b.url, None, Some(initialize())).await;
    assert_eq!(
        status, 200,
        "a deleted session frees its place for every service"
    );

    // Every record expires on its own, after the idle timeout (300 s by default).
    for key in redis.keys().await {
        if key.starts_with("cap:sess:") {
            let ttl: i64 = redis.query_key("PTTL", &key).await;
            assert!(ttl > 0 && ttl <= 300_000, "{key} expires: {ttl}");
        }
    }
}

/// A failed `initialize` leaves no shared session: its record goes, so its place under
/// the cap of every service is free again, and no service holds a copy of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_initialize_leaves_no_record() {
    let redis = RedisServer::start();
    let (a, b) = Instance::two(&redis, "fail:", 1).await;
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let (status, _) = raw(reqwest::Method::POST, &a.url, None, Some(bad)).await;
    assert_eq!(status, 200, "the error is the answer");
    let gone = async {
        while redis
            .keys()
            .await
            .iter()
            .any(|k| k.starts_with("fail:sess:"))
        {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, gone)
        .await
        .expect("the failed session's record goes");
    assert_eq!(a.service.session_count(), 0);
    let (status, session) = raw(reqwest::Method::POST, &b.url, None, Some(initialize())).await;
    assert_eq!(status, 200, "the only place is free");
    let (status, _) = raw(reqwest::Method::POST, &a.url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200, "and the real session is served everywhere");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_do_not_pile_up_after_churn() {
    let redis = RedisServer::start();
    let registry = registry(&redis, "churn:").await;
    let idle = Duration::from_secs(60);
    let snapshot = snapshot();
    for i in 0..200 {
        let id = format!("s{i}");
        assert!(registry.create(&id, idle, 1000).await.unwrap());
        assert!(registry.save(&id, &snapshot, idle).await.unwrap().is_some());
        if i % 2 == 0 {
            registry.remove(&id).await.unwrap();
        }
    }
    assert_eq!(registry.count().await.unwrap(), 100);
    let keys = redis.keys().await;
    assert_eq!(keys.len(), 101, "100 records and the index");
    // A removed session is missing everywhere, and is never saved again.
    assert_eq!(
        registry.touch("s0", idle, 0).await.unwrap(),
        Lookup::Missing
    );
    assert_eq!(registry.save("s0", &snapshot, idle).await.unwrap(), None);
    assert!(matches!(
        registry.touch("s1", idle, 0).await.unwrap(),
        Lookup::State { revision: 1, .. }
    ));
    assert_eq!(
        registry.touch("s1", idle, 1).await.unwrap(),
        Lookup::Unchanged
    );

    // Records expire on their own, and the index forgets them when it counts.
    let short = Duration::from_millis(1);
    for i in 0..10 {
        assert!(
            registry
                .create(&format!("t{i}"), short, 1000)
                .await
                .unwrap()
        );
    }
    let gone = async {
        while registry.count().await.unwrap() != 100 || redis.keys().await.len() != 101 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, gone)
        .await
        .expect("expired records leave the count and Redis: 100 records and the index");
}

/// Whether the client's `notifications/initialized` arrived is part of the recorded
/// state: another service's registry reads it back as saved, a save that records it is
/// a new revision (how every copy learns it), and a record written before the field
/// existed reads as initialised (such a session was served as initialised).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initialized_note_is_recorded_in_the_state() {
    let redis = RedisServer::start();
    let a = registry(&redis, "note:").await;
    let b = registry(&redis, "note:").await;
    let idle = Duration::from_secs(60);
    let answered = snapshot();
    assert!(a.create("s", idle, 10).await.unwrap());
    assert_eq!(a.save("s", &answered, idle).await.unwrap(), Some(1));
    let Lookup::State { revision, snapshot } = b.touch("s", idle, 0).await.unwrap() else {
        panic!("the other service finds the state");
    };
    assert_eq!(revision, 1);
    assert!(!snapshot.initialized, "initialize answered, no note yet");

    let noted = answered.clone().with_initialized(true);
    assert_eq!(b.save("s", &noted, idle).await.unwrap(), Some(2));
    let Lookup::State { revision, snapshot } = a.touch("s", idle, 1).await.unwrap() else {
        panic!("a service that knows revision 1 is told of revision 2");
    };
    assert_eq!(revision, 2);
    assert_eq!(*snapshot, noted);

    // A record as written before the field existed.
    let mut state = serde_json::to_value(&answered).unwrap();
    state.as_object_mut().unwrap().remove("initialized");
    let mut conn = redis.connection().await;
    let _: i64 = redis::cmd("HSET")
        .arg("note:sess:{s}")
        .arg("state")
        .arg(state.to_string())
        .query_async(&mut conn)
        .await
        .unwrap();
    let Lookup::State { snapshot, .. } = b.touch("s", idle, 0).await.unwrap() else {
        panic!("the older record is read");
    };
    assert!(snapshot.initialized);
}

/// Gap (b) of the two-instance conformance leg: the client's `notifications/initialized`
/// lands (round-robin) on B; A's copy, which ran the handshake, learns it without a
/// request of its own and may then send its own messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initialized_note_reaches_the_copy_that_ran_the_handshake() {
    let redis = RedisServer::start();
    let (a, b) = Instance::two(&redis, "init:", 100).await;
    let (url, forwarded) = round_robin(vec![host_port(&a.url), host_port(&b.url)]).await;

    // A connection per request through the forwarder: initialize on A, the note on B.
    let session = open(&url).await;
    assert_eq!(forwarded.load(Ordering::Relaxed), 2);
    assert_eq!(b.service.session_count(), 1, "the note went to B's copy");

    let peer = first_copy(&a).await;
    // So it sends its own messages (refused before initialisation): a note, kept until
    // the GET stream opens (on A, the forwarder's next).
    note(&peer, 1).await;
    let (mut stream, mut seen) = get_stream(&url, &session).await;
    read_until(&mut stream, &mut seen, r#""n":1"#).await;
}
