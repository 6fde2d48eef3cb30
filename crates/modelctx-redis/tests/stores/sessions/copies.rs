//! Every copy of a shared session: the initialized note, messages kept for a GET stream not
//! yet open, the end of the session, and one announcement per change.

use super::*;

/// Gap (a): messages for the GET stream sent while no service holds it are kept in
/// Redis (bounded as one service's backlog: the oldest dropped) and delivered, in
/// order and once, by whichever service the stream then opens on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_before_the_get_stream_opens_are_kept_for_it() {
    let redis = RedisServer::start();
    let start = |redis: &RedisServer| {
        let url = redis.url();
        async move {
            let config = modelctx_redis::SessionRegistryConfig::default().prefix("kept:");
            let registry = modelctx_redis::SessionRegistry::connect(&url, config)
                .await
                .unwrap();
            let config = StreamableHttpServerConfig::default()
                .stream_queue(4)
                .session_registry(Arc::new(registry));
            Instance::start_with(config, None).await
        }
    };
    let a = start(&redis).await;
    let b = start(&redis).await;
    let (url, _) = round_robin(vec![host_port(&a.url), host_port(&b.url)]).await;
    // Through the forwarder: initialize on A, the note on B.
    let session = open(&url).await;

    // No GET stream anywhere: A's copy sends six notes; Redis keeps the last four. It
    // sends once it knows the client is initialised (B relays the note to it).
    let peer = first_copy(&a).await;
    for n in 1..=6 {
        note(&peer, n).await;
    }
    let stored = async {
        loop {
            let mut conn = redis.connection().await;
            let last: Vec<String> = redis::cmd("LRANGE")
                .arg(format!("kept:sess:{{{session}}}:out"))
                .arg(-1)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .unwrap();
            if last.iter().any(|m| m.contains(r#""n":6"#)) {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, stored)
        .await
        .expect("kept in Redis");
    assert_eq!(kept(&redis, "kept:", &session).await, 4, "bounded");

    // A ping (on A), then the stream opens on B: the four kept, in order, once; what
    // A sends next reaches it too.
    let (status, _) = raw(reqwest::Method::POST, &url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200);
    let (mut stream, mut seen) = get_stream(&url, &session).await;
    note(&peer, 7).await;
    read_until(&mut stream, &mut seen, r#""n":7"#).await;
    let mut at = 0;
    for n in 3..=7 {
        let needle = format!(r#""n":{n}"#);
        assert_eq!(seen.matches(&needle).count(), 1, "{needle} once: {seen}");
        let found = seen.find(&needle).unwrap();
        assert!(found >= at, "{needle} in order: {seen}");
        at = found;
    }
    for n in 1..=2 {
        assert!(!seen.contains(&format!(r#""n":{n}"#)), "dropped: {seen}");
    }
    assert_eq!(kept(&redis, "kept:", &session).await, 0, "taken");
}

/// Gap (c): a DELETE on one service, and the server closing one copy, end the session
/// on every service: the other copy's GET stream and pending request end at once (its
/// handler is cancelled), and the record is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_a_session_reaches_every_service() {
    let redis = RedisServer::start();
    let (a, mut b) = Instance::two(&redis, "end:", 100).await;
    let wait = json!({"jsonrpc": "2.0", "id": 9, "method": "test/wait"});

    // DELETE on A while B holds the GET stream and a request.
    let session = open(&a.url).await;
    let (mut get, _) = get_stream(&b.url, &session).await;
    let mut pending = post_stream(&b.url, &session, wait.clone()).await;
    let started = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(started, Some("started"));
    let (status, _) = raw(reqwest::Method::DELETE, &a.url, Some(&session), None).await;
    assert_eq!(status, 200);
    read_to_end(&mut get).await;
    read_to_end(&mut pending).await;
    let stopped = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(
        stopped,
        Some("cancelled"),
        "B's handler ended with the session"
    );
    assert_eq!(b.service.session_count(), 0, "B's copy ended");

    // The server closes A's copy of another session while B holds a request of it.
    let session = open(&a.url).await;
    let mut pending = post_stream(&b.url, &session, wait).await;
    let started = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(started, Some("started"));
    let peer = a.peers.lock().unwrap().last().unwrap().clone();
    tokio::time::timeout(WITHIN, peer.close()).await.unwrap();
    read_to_end(&mut pending).await;
    let stopped = tokio::time::timeout(WITHIN, b.events.recv()).await.unwrap();
    assert_eq!(stopped, Some("cancelled"));
    for url in [&a.url, &b.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "ended everywhere ({url})");
    }
    let keys = redis.keys().await;
    assert!(
        !keys.iter().any(|k| k.contains(&session)),
        "its record is gone: {keys:?}"
    );
}

/// Gap (d): one server serving both services' copies of a session (no announcement
/// bus: one process) announces a list change once on the GET stream, not once per
/// copy; and a resource update once to a subscription made through the other copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_behind_both_services_announces_once() {
    let redis = RedisServer::start();
    let server = Server::builder("one", "1.0.0")
        .enable_tools()
        .resource(modelctx::server::ResourceDef::new(
            "test://r",
            "r",
            |_cx: modelctx::server::Context| async { Ok::<_, String>("r") },
        ))
        .unwrap()
        .build();
    let peers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut urls = Vec::new();
    for _ in 0..2 {
        let config =
            StreamableHttpServerConfig::default().session_registry(registry(&redis, "one:").await);
        let server = server.clone();
        let started = peers.clone();
        let service = StreamableHttpService::with_config(config, move |transport| {
            let session = server.serve(transport);
            started.lock().unwrap().push(session.peer().clone());
        });
        urls.push(format!("{}/mcp", serve(service).await));
    }
    let (a, b) = (&urls[0], &urls[1]);
    let session = open(a).await;
    // B holds the GET stream; the subscription is made through A's copy.
    let (mut stream, mut seen) = get_stream(b, &session).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe",
        "params": {"uri": "test://r"}});
    let (status, _) = raw(reqwest::Method::POST, a, Some(&session), Some(subscribe)).await;
    assert_eq!(status, 200);

    server.add_tool(added_tool()).unwrap();
    read_until(&mut stream, &mut seen, "notifications/tools/list_changed").await;
    server.notify_resource_updated("test://r").await;
    read_until(&mut stream, &mut seen, "notifications/resources/updated").await;
    // Each copy sends its messages in order: once A's note is here, a copy of the
    // announcements A's copy sent before it would be too.
    let first = peers.lock().unwrap()[0].clone();
    note(&first, 1).await;
    read_until(&mut stream, &mut seen, r#""n":1"#).await;
    assert_once(&seen, "notifications/tools/list_changed");
    assert_once(&seen, "notifications/resources/updated");
}

/// `hosting:http:second-sse-rejected` across two services: while the GET stream is
/// open on A, a second GET draws 409 on B as on A (the same answer one service gives);
/// once A's stream closes, its hold is given up and a GET opens the stream on either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_get_stream_is_refused_on_either_service() {
    let redis = RedisServer::start();
    let (a, b) = two_holding(&redis, "one:", Duration::from_secs(30)).await;
    let session = open(&a.url).await;

    let (status, first, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200);
    for url in [&b.url, &a.url] {
        let (status, mut refused, _) = try_get_stream(url, &session, None).await;
        assert_eq!(status, 409, "a second GET on {url}");
        let body = read_to_end(&mut refused).await;
        assert!(body.contains("only one standalone SSE stream"), "{body}");
    }

    // A's stream closes: its hold leaves Redis, and B opens the stream.
    drop(first);
    until_released(
        &redis,
        "one:",
        &session,
        "the hold is given up when A's stream closes",
    )
    .await;
    let (status, on_b, _) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 200, "a new GET on B after the first stream closed");
    let (status, _, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 409, "B holds it now");

    // And back on A once B's closes; what A's copy sends then reaches A's stream.
    drop(on_b);
    until_released(
        &redis,
        "one:",
        &session,
        "the hold is given up when B's stream closes",
    )
    .await;
    let (status, mut on_a, mut seen) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 200, "a new GET on A after B's stream closed");
    let peer = b.peers.lock().unwrap()[0].clone();
    note(&peer, 1).await;
    read_until(&mut on_a, &mut seen, r#""n":1"#).await;
}
