//! Messages relayed between the two services (answers, cancellations, GET-stream
//! messages, list changes); expiry, a restarted Redis, and tasks across services.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_posted_to_the_other_service_reaches_the_handler_that_asked() {
    let redis = RedisServer::start();
    let (a, b) = Instance::two(&redis, "ask:", 100).await;
    let session = open(&a.url).await;

    // The handler on A asks; its request's id names A.
    let ask = json!({"jsonrpc": "2.0", "id": 7, "method": "test/ask"});
    let mut stream = post_stream(&a.url, &session, ask).await;
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "elicitation/create").await;
    let data = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains("elicitation/create"))
        .expect("the request's event");
    let request: Value = serde_json::from_str(data).unwrap();
    let id = request["id"].clone();
    assert!(id.as_str().is_some_and(|s| s.contains('/')), "{id}");

    // The client answers on B: B relays it to A, and the handler finishes there.
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {}}});
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(answer)).await;
    assert_eq!(status, 202);
    read_until(&mut stream, &mut seen, r#""accepted":true"#).await;
    assert!(seen.contains(r#""id":7"#), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_posted_to_the_other_service_stops_the_request() {
    let redis = RedisServer::start();
    let (mut a, b) = Instance::two(&redis, "cancel:", 100).await;
    let session = open(&a.url).await;

    let wait = json!({"jsonrpc": "2.0", "id": 9, "method": "test/wait"});
    let mut stream = post_stream(&a.url, &session, wait).await;
    let started = tokio::time::timeout(WITHIN, a.events.recv()).await.unwrap();
    assert_eq!(started, Some("started"));

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "changed my mind"}});
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(cancel)).await;
    assert_eq!(status, 202);
    let cancelled = tokio::time::timeout(WITHIN, a.events.recv()).await.unwrap();
    assert_eq!(
        cancelled,
        Some("cancelled"),
        "the handler on A was cancelled"
    );
    // And A's answer stream ends with the cancellation's error, as on one service.
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "-32800").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_for_the_get_stream_reaches_it_on_the_other_service() {
    let redis = RedisServer::start();
    let (a, b) = Instance::two(&redis, "get:", 100).await;
    let session = open(&a.url).await;
    let peer = first_copy(&a).await;

    // The GET stream is open on B, with its priming event.
    let (status, mut stream, mut seen) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 200);

    // A, whose copy has no GET stream, sends two notes: B delivers them, in order.
    for n in 1..=2 {
        note(&peer, n).await;
    }
    read_until(&mut stream, &mut seen, r#""n":2"#).await;
    let first = seen.find(r#""n":1"#).expect("the first note");
    assert!(first < seen.find(r#""n":2"#).unwrap(), "in order: {seen}");
    assert_once(&seen, r#""n":1"#);
}

/// With the session registry and the announcement bus together, a list change made on
/// A reaches the shared session's GET stream on B, and only once (not once through the
/// bus and again relayed from A's copy of the session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_reaches_a_shared_sessions_get_stream_once() {
    let redis = RedisServer::start();
    let bus = || async { Arc::new(redis.announcements("once:").await) };
    let a = Instance::start_announcing(registry(&redis, "once:").await, bus().await).await;
    let b = Instance::start_announcing(registry(&redis, "once:").await, bus().await).await;
    let session = open(&a.url).await;
    // A's copy announces and sends (the note below) only once initialised.
    let peer = first_copy(&a).await;

    let (status, mut stream, mut seen) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 200);

    a.server.add_tool(added_tool()).unwrap();
    read_until(&mut stream, &mut seen, "notifications/tools/list_changed").await;
    // A relays its own messages in order: once its note is here, a relayed copy of the
    // list change (sent before it) would be too.
    note(&peer, 1).await;
    read_until(&mut stream, &mut seen, r#""n":1"#).await;
    assert_once(&seen, "notifications/tools/list_changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_expires_on_every_service() {
    let redis = RedisServer::start();
    let idle = Duration::from_millis(300);
    let a = Instance::start_idle(registry(&redis, "idle:").await, idle).await;
    let b = Instance::start_idle(registry(&redis, "idle:").await, idle).await;
    // Both services hold it: opened on A, used on B. How long that takes is the
    // machine's: a session that idled out in between (404) is the expiry under test
    // come early, so another is opened.
    let both = async {
        loop {
            let (status, session) =
                raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
            assert_eq!(status, 200);
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let (status, _) = raw(
                reqwest::Method::POST,
                &a.url,
                Some(&session),
                Some(initialized),
            )
            .await;
            if status == 404 {
                continue;
            }
            assert_eq!(status, 202);
            let (status, _) =
                raw(reqwest::Method::POST, &b.url, Some(&session), Some(ping())).await;
            if status != 404 {
                assert_eq!(status, 200, "both services hold it");
                return session;
            }
        }
    };
    let session = tokio::time::timeout(WITHIN, both)
        .await
        .expect("a session both services hold");

    // Nobody touches it: its record expires in Redis.
    let counter = registry(&redis, "idle:").await;
    let expired = async {
        while counter.count().await.unwrap() != 0 || !redis.keys().await.is_empty() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, expired)
        .await
        .expect("the idle record expires");
    for url in [&a.url, &b.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "expired everywhere ({url})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_lost_with_a_restarted_redis_answer_404_and_new_ones_work() {
    let mut redis = RedisServer::start();
    let (a, b) = Instance::two(&redis, "restart:", 100).await;
    let session = open(&a.url).await;
    redis.restart();
    // The registries reconnect; the session's record is gone with the old Redis: a
    // clear 404 on both services (A's local copy ends), no hang.
    for url in [&b.url, &a.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "{url}");
    }
    assert_eq!(a.service.session_count(), 0, "A's copy ended");
    // A new session works across both.
    let session = open(&a.url).await;
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_service_is_the_sessions_on_the_other() {
    let redis = RedisServer::start();
    let start = |prefix: &'static str| {
        let redis = &redis;
        async move {
            let tasks = modelctx_redis::TaskStore::new(
                redis.connection().await,
                modelctx_redis::TaskStoreConfig::default().prefix(prefix),
            );
            let schema = json!({"type": "object"}).as_object().cloned().unwrap();
            let tool = ToolDef::with_schema(Tool::new("quick", schema), |_, _cx| async move {
                Ok::<_, String>("done".to_owned())
            })
            .task_support(TaskSupport::Optional);
            let server = Server::builder("tasks", "1.0.0")
                .tasks(TaskConfig::new())
                .task_store(Arc::new(tasks))
                .tool(tool)
                .unwrap()
                .build();
            let config = StreamableHttpServerConfig::default()
                .session_registry(registry(redis, prefix).await);
            let service = StreamableHttpService::with_config(config, move |transport| {
                server.serve(transport);
            });
            format!("{}/mcp", serve(service).await)
        }
    };
    let a = start("tasks:").await;
    let b = start("tasks:").await;
    let session = open(&a).await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "quick", "arguments": {}, "task": {"ttl": 60000}}});
    let (status, body) = raw(reqwest::Method::POST, &a, Some(&session), Some(call)).await;
    assert_eq!(status, 200);
    let at = body
        .find(r#""taskId":""#)
        .unwrap_or_else(|| panic!("a task: {body}"))
        + r#""taskId":""#.len();
    let task = &body[at..at + body[at..].find('"').unwrap()];

    // Owned by the session, not by the copy that created it: B finds it.
    let get = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task}});
    let (status, body) = raw(reqwest::Method::POST, &b, Some(&session), Some(get)).await;
    assert_eq!(status, 200);
    assert!(
        body.contains(task) && !body.contains(r#""error""#),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_runs_across_two_services_round_robin() {
    let redis = RedisServer::start();
    // Two services, as two processes would be: each its own connection to Redis.
    let (a, b) = Instance::two(&redis, "rr:", 100).await;
    let (url, forwarded) = round_robin(vec![host_port(&a.url), host_port(&b.url)]).await;

    // A connection per request: the forwarder sends each to the next service.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&url)
        .client(http)
        .build()
        .unwrap();
    let (client, mut logs) = hearing::<LoggingMessageNotification>(
        Client::builder("round-robin", "1.0.0").mode(ConnectMode::Handshake),
    );
    let client = client.connect(transport);
    let client = tokio::time::timeout(WITHIN, client).await.unwrap().unwrap();

    // Only errors from now on, wherever this lands; then a probe on each service.
    tokio::time::timeout(
        WITHIN,
        client.request::<SetLevelRequest>(SetLevelRequestParams::new(LoggingLevel::Error)),
    )
    .await
    .unwrap()
    .unwrap();
    for _ in 0..4 {
        let answer = tokio::time::timeout(WITHIN, client.request::<Probe>(json!({})))
            .await
            .expect("the probe ends")
            .expect("the probe succeeds");
        assert_eq!(answer, json!({"client": "round-robin"}));
    }
    assert!(
        forwarded.load(Ordering::Relaxed) >= 6,
        "one connection per request"
    );
    assert_eq!(a.service.session_count(), 1, "service A holds the session");
    assert_eq!(b.service.session_count(), 1, "service B holds it too");
    // Four probes, each an error only: the level set on one service held on both.
    for _ in 0..4 {
        let log = tokio::time::timeout(WITHIN, logs.recv()).await.unwrap();
        assert_eq!(log.map(|log| log.level), Some(LoggingLevel::Error));
    }
    assert!(logs.try_recv().is_err(), "no info message passed");
    drop(client);

    // DELETE on one service: 404 on both.
    let (status, session) = raw(reqwest::Method::POST, &a.url, None, Some(initialize())).await;
    assert_eq!(status, 200);
    let (status, _) = raw(reqwest::Method::POST, &b.url, Some(&session), Some(ping())).await;
    assert_eq!(status, 200, "B serves a session initialised on A");
    let (status, _) = raw(reqwest::Method::DELETE, &b.url, Some(&session), None).await;
    assert_eq!(status, 200);
    for url in [&a.url, &b.url] {
        let (status, _) = raw(reqwest::Method::POST, url, Some(&session), Some(ping())).await;
        assert_eq!(status, 404, "deleted everywhere ({url})");
    }
    assert_eq!(
        a.service.session_count() + b.service.session_count(),
        2,
        "only the client's session is left on each: the deleted one ended on both"
    );
    let keys = redis.keys().await;
    assert!(
        !keys.iter().any(|k| k.contains(&session)),
        "its record is gone: {keys:?}"
    );
}
