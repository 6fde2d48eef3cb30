//! Faults under scale-out: two `http-server --redis` processes behind a round-robin
//! load balancer — the test kit's forwarder, nginx and HAProxy in turn — and a
//! 2025-era client (sessions shared through Redis).
//!
//! - An instance is killed (SIGKILL) in the middle of a streamed tool call; the client
//!   resumes the call's stream (GET + `Last-Event-ID`) on the other instance. A call
//!   of `countdown` (annotated read-only and idempotent) is run again there, and the
//!   client gets every progress notification and the result exactly once; a call of
//!   `ticket` (not safe to repeat) is not run again: the client gets an error saying
//!   it was interrupted.
//! - Redis is restarted while the session is idle: with an append-only file the
//!   session continues on both instances; without persistence the session is gone,
//!   both instances answer 404 for it, and the client starts a new one.
//! - Redis stalls (SIGSTOP): a call fails with the instance's 503 once its Redis
//!   response timeout passes; when Redis goes on (SIGCONT) the session does too. Under
//!   load (clients calling without a pause), the calls after the first fail at once,
//!   the instances' memory stays where it was over thousands of them, and every session
//!   goes on once Redis is back. The same when Redis is killed under load and started
//!   again.
//! - The balancer (nginx, HAProxy) is killed and started again in the middle of a
//!   streamed call: the client resumes the stream through it and gets every progress
//!   notification and the result once; the session goes on. Under load, a call caught
//!   by the restart fails as interrupted or undelivered, and every client's calls then
//!   succeed again in its own session.
//! - The instance running a task (2026-07-28, the tasks extension) is killed: once the
//!   task's lease in Redis lapses, the client's next poll finds it failed, the work
//!   interrupted and maybe or maybe not done.
//! - The instance that asked the user a question (2026-07-28: the `input_required`
//!   round of `greet`) is killed while the user answers: the client's retry, carrying
//!   the answer and the sealed `requestState`, reaches the other instance, which opens
//!   the state and completes the call.
//!
//! - The instance holding the client's stream of changes is killed: in 2025-11-25 the
//!   client opens its GET stream again (with `Last-Event-ID`) on the other instance,
//!   and each update of a watched resource reaches it once; in 2026-07-28 the
//!   `subscriptions/listen` stream is reported broken (interrupted), and a new one,
//!   opened on the other instance, carries the next update.
//!
//! Needs `redis-server` (`sh xtask/system/redis.sh`), nginx and HAProxy
//! (`sh xtask/system/balancers.sh`); fails, never skips, without them.

mod support;

use std::sync::{Arc, Mutex};

use modelctx::client::Watch;
use modelctx::client::{Client, ConnectMode, FormAnswer, FormContent};
use modelctx::http::StreamableHttpClientTransport;
use modelctx::session::RequestOptions;
use modelctx::types::{
    CallToolRequestParams, JsonObject, JsonRpcMessage, ServerNotification, SubscriptionFilter,
};
use modelctx_test::record::{Recording, record};
use modelctx_test::within;
use support::{Front, RedisServer, Served, WITHIN, logged, served};
use tokio::sync::mpsc;

/// Two instances on `redis` behind `front`, and a 2025-era client connected through
/// it.
struct Deployment {
    deployed: support::Deployment,
    client: Client,
    transport: modelctx::http::HttpClientHandle,
    /// Every message the client sent and received.
    wire: Recording,
}

async fn deploy(redis: &RedisServer, front: Front) -> Deployment {
    let deployed = support::Deployment::start(redis, front, 2).await;
    let transport = StreamableHttpClientTransport::builder(&deployed.endpoint)
        .build()
        .unwrap();
    let handle = transport.handle();
    let (transport, wire) = record(modelctx::transport::boxed(transport));
    let client = Client::builder("faults-test", "1.0.0")
        .mode(ConnectMode::Handshake)
        .connect(transport);
    let client = within(WITHIN, "connect", client).await.unwrap();
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    Deployment {
        deployed,
        client,
        transport: handle,
        wire,
    }
}

fn args(arguments: serde_json::Value) -> JsonObject {
    arguments.as_object().unwrap().clone()
}

/// What happens to a call in the middle.
enum Fault {
    /// The instance running it is killed.
    KillInstance,
    /// The balancer is killed and started again.
    RestartBalancer,
}

/// Starts a call of `tool` that reports progress, waits for its first two progress
/// notifications, then does `fault`. Answers the call's outcome, every progress value
/// the client got, and the instance that was running it.
async fn fault_mid_call(
    d: &mut Deployment,
    tool: &str,
    arguments: serde_json::Value,
    fault: Fault,
) -> (
    Result<modelctx::types::CallToolResult, modelctx::session::SessionError>,
    Vec<f64>,
    usize,
) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let (progressed, mut progress) = mpsc::unbounded_channel();
    let options = RequestOptions::default().on_progress({
        let got = got.clone();
        move |p| {
            got.lock().unwrap().push(p.progress);
            let _ = progressed.send(());
        }
    });
    let client = d.client.clone();
    let params = CallToolRequestParams::new(tool).with_arguments(args(arguments));
    let running = tokio::spawn(async move { client.call_tool_with(params, options).await });
    for _ in 0..2 {
        within(WITHIN, "progress before the fault", progress.recv())
            .await
            .unwrap();
    }
    let calls = served(&d.deployed.seen.borrow(), "tools/call");
    let running_on = *calls.last().unwrap();
    match fault {
        Fault::KillInstance => d.deployed.instances[running_on].kill().await,
        Fault::RestartBalancer => {
            let balancer = d.deployed.balancer.as_mut().expect("a balancer in front");
            // A few milliseconds of blocking work: start it and wait until it listens.
            tokio::task::block_in_place(|| balancer.restart());
        }
    }
    let outcome = within(WITHIN, "the call's outcome", running).await.unwrap();
    let values = got.lock().unwrap().clone();
    (outcome, values, running_on)
}

behind!(
    an_idempotent_call_resumes_on_the_other_instance_with_every_event_once,
    an_idempotent_call_resumes
);

async fn an_idempotent_call_resumes(front: Front) {
    let redis = RedisServer::start();
    let mut d = deploy(&redis, front).await;
    let (outcome, progress, killed) = fault_mid_call(
        &mut d,
        "countdown",
        serde_json::json!({"from": 6}),
        Fault::KillInstance,
    )
    .await;
    let result = outcome.expect("the call is finished on the other instance");
    assert_eq!(result.content[0].as_text(), Some("liftoff"), "{result:?}");
    // Every step once, in order: those sent before the kill are not repeated by the
    // run on the other instance.
    assert_eq!(progress, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // The rest of the stream came from the surviving instance.
    let log = d.deployed.seen.borrow().clone();
    let survivor = 1 - killed;
    assert!(
        log.iter()
            .any(|s| s.http == "GET" && s.instance == survivor),
        "{log:?}"
    );
    // The session goes on there.
    let again = within(WITHIN, "a call after the kill", countdown_once(&d.client))
        .await
        .unwrap();
    assert_eq!(again.content[0].as_text(), Some("liftoff"));
}

behind!(
    a_call_not_safe_to_repeat_is_answered_interrupted_and_not_run_again,
    a_call_not_safe_to_repeat_is_not_run_again
);

async fn a_call_not_safe_to_repeat_is_not_run_again(front: Front) {
    let redis = RedisServer::start();
    let mut d = deploy(&redis, front).await;
    let (outcome, progress, _) = fault_mid_call(
        &mut d,
        "ticket",
        serde_json::json!({"steps": 6}),
        Fault::KillInstance,
    )
    .await;
    let error = outcome.expect_err("an interrupted ticket is an error");
    let text = error.to_string();
    assert!(text.contains("may or may not have run"), "{text}");
    assert!(progress.len() >= 2 && progress.len() < 6, "{progress:?}");
    // The surviving instance did not run it: its first ticket is the next call's.
    let next = within(
        WITHIN,
        "the next ticket",
        d.client
            .call_tool("ticket", args(serde_json::json!({"steps": 1}))),
    )
    .await
    .unwrap();
    assert_eq!(next.content[0].as_text(), Some("ticket 1"), "{next:?}");
}

/// Calls `countdown` until each instance has served one call after `since` (the
/// access log's length); bounded.
async fn call_on_both(d: &mut Deployment, since: usize) {
    for _ in 0..8 {
        let result = within(WITHIN, "countdown", countdown_once(&d.client))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("liftoff"));
        let log = d.deployed.seen.borrow().clone();
        let calls = served(&log[since..], "tools/call");
        if calls.contains(&0) && calls.contains(&1) {
            return;
        }
    }
    panic!(
        "8 calls did not reach both instances: {:?}",
        d.deployed.seen.borrow()
    );
}

behind!(
    sessions_redis_kept_continue_after_a_redis_restart,
    sessions_continue_after_a_redis_restart
);

async fn sessions_continue_after_a_redis_restart(front: Front) {
    let mut redis = RedisServer::start_persistent();
    let mut d = deploy(&redis, front).await;
    call_on_both(&mut d, 0).await;
    let session = d.transport.session_id().unwrap();
    redis.restart();
    until_answered(&d.client).await;
    let since = d.deployed.seen.borrow().len();
    call_on_both(&mut d, since).await;
    assert_eq!(d.transport.session_id(), Some(session), "the same session");
}

/// A `tools/list` POST of session `session` straight to one instance.
async fn probe(base: &str, session: &str) -> reqwest::StatusCode {
    let body = r#"{"jsonrpc":"2.0","id":99,"method":"tools/list"}"#;
    reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
}

behind!(
    a_session_redis_lost_is_404_everywhere_and_the_client_starts_anew,
    a_lost_session_is_404_everywhere
);

async fn a_lost_session_is_404_everywhere(front: Front) {
    let mut redis = RedisServer::start();
    let mut d = deploy(&redis, front).await;
    call_on_both(&mut d, 0).await;
    let session = d.transport.session_id().unwrap();
    redis.restart();
    // Both instances ask the new Redis (their connections reconnect) and answer the
    // spec's 404 for a session they cannot find, at once.
    for instance in &d.deployed.instances {
        let status = within(WITHIN, "a probe", probe(&instance.base, &session)).await;
        assert_eq!(status, reqwest::StatusCode::NOT_FOUND, "{}", instance.base);
    }
    // The client's next call gets the 404, starts a new session and is sent there.
    let since = d.deployed.seen.borrow().len();
    call_on_both(&mut d, since).await;
    let renewed = d.transport.session_id().unwrap();
    assert_ne!(renewed, session, "a new session");
}

behind!(
    a_balancer_restarted_mid_call_is_reconnected_to_and_the_call_goes_on,
    a_balancer_restarted_mid_call,
    nginx,
    haproxy
);

async fn a_balancer_restarted_mid_call(front: Front) {
    let redis = RedisServer::start();
    let mut d = deploy(&redis, front).await;
    let session = d.transport.session_id().unwrap();
    let (outcome, progress, _) = fault_mid_call(
        &mut d,
        "countdown",
        serde_json::json!({"from": 6}),
        Fault::RestartBalancer,
    )
    .await;
    // The client resumed the call's stream through the new balancer: every step once.
    let result = outcome.expect("the call goes on");
    assert_eq!(result.content[0].as_text(), Some("liftoff"), "{result:?}");
    assert_eq!(progress, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let since = d.deployed.seen.borrow().len();
    call_on_both(&mut d, since).await;
    assert_eq!(d.transport.session_id(), Some(session), "the same session");
}

behind!(
    under_load_a_restarted_balancer_is_reconnected_to_and_every_session_goes_on,
    a_balancer_restarted_under_load,
    nginx,
    haproxy
);

/// Loaders call `countdown` (two steps) without a pause while the balancer is killed and
/// started again. A call caught by the restart fails as interrupted (it may or may not
/// have run) or undelivered (never sent), never otherwise; once the balancer is back,
/// each loader's calls succeed again in its own session.
async fn a_balancer_restarted_under_load(front: Front) {
    use modelctx::session::SessionErrorKind;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let redis = RedisServer::start();
    let mut deployed = support::Deployment::start(&redis, front, 2).await;
    // Successful calls, all loaders together.
    let done = Arc::new(AtomicUsize::new(0));
    let (restarted_tx, restarted) = tokio::sync::watch::channel(false);
    let mut loaders = Vec::with_capacity(LOADERS);
    for _ in 0..LOADERS {
        let (client, handle) = connect_handshake(&deployed.endpoint).await;
        let session = handle.session_id();
        let (done, mut restarted) = (done.clone(), restarted.clone());
        loaders.push(tokio::spawn(async move {
            let mut after_restart = 0;
            while after_restart < 2 {
                let started_after = *restarted.borrow_and_update();
                let calling = client.call_tool("countdown", args(serde_json::json!({"from": 2})));
                match calling.await {
                    Ok(result) => {
                        assert_eq!(result.content[0].as_text(), Some("liftoff"));
                        done.fetch_add(1, Ordering::Relaxed);
                        after_restart += usize::from(started_after);
                    }
                    Err(error) => assert!(
                        matches!(
                            error.kind(),
                            SessionErrorKind::Interrupted | SessionErrorKind::Undelivered
                        ),
                        "{error}"
                    ),
                }
            }
            assert_eq!(handle.session_id(), session, "the same session");
        }));
    }
    let warm = async {
        while done.load(Ordering::Relaxed) < LOADERS {
            tokio::task::yield_now().await;
        }
    };
    within(WITHIN, "calls before the restart", warm).await;
    let balancer = deployed.balancer.as_mut().expect("a balancer in front");
    tokio::task::block_in_place(|| balancer.restart());
    restarted_tx.send_replace(true);
    for loader in loaders {
        within(WITHIN, "calls once the balancer is back", loader)
            .await
            .unwrap();
    }
}

behind!(
    a_stalled_redis_fails_requests_with_a_clear_error_and_they_recover,
    a_stalled_redis
);

async fn a_stalled_redis(front: Front) {
    let redis = RedisServer::start();
    let mut d = deploy(&redis, front).await;
    call_on_both(&mut d, 0).await;
    let session = d.transport.session_id().unwrap();
    redis.pause();
    // Every request of a shared session asks Redis first: an instance gives up on it
    // after its response timeout and answers 503, which the client reports.
    let stalled = within(
        WITHIN,
        "a call while Redis stalls",
        countdown_once(&d.client),
    )
    .await;
    redis.resume();
    let error = stalled.expect_err("no answer without Redis");
    assert!(error.to_string().contains("503"), "{error}");
    // Once Redis answers again, so do the instances, in the same session.
    until_answered(&d.client).await;
    let since = d.deployed.seen.borrow().len();
    call_on_both(&mut d, since).await;
    assert_eq!(d.transport.session_id(), Some(session), "the same session");
}

behind!(
    under_load_a_stalled_redis_fails_calls_fast_holds_memory_and_recovers,
    a_stalled_redis_under_load,
    nginx,
    haproxy
);

behind!(
    under_load_a_redis_down_fails_calls_fast_holds_memory_and_recovers,
    a_redis_down_under_load,
    nginx,
    haproxy
);

/// How Redis goes away.
#[derive(Clone, Copy)]
enum Outage {
    /// It stops answering (SIGSTOP), then goes on (SIGCONT).
    Stall,
    /// It is killed, then started again on its append-only file.
    Down,
}

async fn a_stalled_redis_under_load(front: Front) {
    redis_away_under_load(front, Outage::Stall).await;
}

async fn a_redis_down_under_load(front: Front) {
    redis_away_under_load(front, Outage::Down).await;
}

/// Clients calling without a pause while Redis is away.
const LOADERS: usize = 8;
/// Calls the loaders see fail while Redis is away, together. Were each to wait for
/// Redis's response timeout (5 s), `LOADERS` could not see a hundred fail within
/// [`WITHIN`].
const FAILED_WHILE_AWAY: usize = 4_000;
/// How much an instance's resident memory may grow over those calls: a request that
/// left 4 KiB behind would pass it.
const GROWTH_KIB: u64 = 16 * 1024;

async fn redis_away_under_load(front: Front, outage: Outage) {
    let mut redis = RedisServer::start_persistent();
    let deployed = support::Deployment::start(&redis, front, 2).await;
    let mut clients = Vec::with_capacity(LOADERS);
    for _ in 0..LOADERS {
        let (client, handle) = connect_handshake(&deployed.endpoint).await;
        countdown_once(&client)
            .await
            .expect("a call before the outage");
        clients.push((client, handle));
    }
    let before: Vec<u64> = deployed.instances.iter().map(resident_kib).collect();

    match outage {
        Outage::Stall => redis.pause(),
        Outage::Down => redis.kill(),
    }
    // Every call asks Redis first. Once one got no answer (timed out, or refused), an
    // instance sends nothing to Redis until it answers a probe, and fails the calls at
    // once with 503.
    let failed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let loaders: Vec<_> = clients
        .iter()
        .map(|(client, _)| {
            let (client, failed) = (client.clone(), failed.clone());
            tokio::spawn(async move {
                use std::sync::atomic::Ordering;
                while failed.load(Ordering::Relaxed) < FAILED_WHILE_AWAY {
                    let error = countdown_once(&client)
                        .await
                        .expect_err("no answer without Redis");
                    assert!(error.to_string().contains("503"), "{error}");
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for loader in loaders {
        within(WITHIN, "calls failing while Redis is away", loader)
            .await
            .unwrap();
    }
    let after: Vec<u64> = deployed.instances.iter().map(resident_kib).collect();
    match outage {
        Outage::Stall => redis.resume(),
        Outage::Down => tokio::task::block_in_place(|| redis.start_again()),
    }
    for (before, after) in before.iter().zip(&after) {
        assert!(
            after.saturating_sub(*before) <= GROWTH_KIB,
            "resident memory {before} KiB before the outage, {after} KiB after {FAILED_WHILE_AWAY} failed calls"
        );
    }
    // Redis is back: every session goes on, without a restart of the instances. (A
    // call may come before an instance's probe is answered, and fail at once.)
    for (client, handle) in &clients {
        let session = handle.session_id();
        until_answered(client).await;
        assert_eq!(handle.session_id(), session, "the same session");
    }
}

/// Calls `countdown` until a call succeeds (within [`WITHIN`]): once Redis is back, an
/// instance that took it as away answers 503 until its next probe is answered.
async fn until_answered(client: &Client) {
    let answered = async { while countdown_once(client).await.is_err() {} };
    within(WITHIN, "a call once Redis is back", answered).await;
}

/// A 2025-era client connected through `endpoint`, and its transport's handle.
async fn connect_handshake(endpoint: &str) -> (Client, modelctx::http::HttpClientHandle) {
    let transport = StreamableHttpClientTransport::builder(endpoint)
        .build()
        .unwrap();
    let handle = transport.handle();
    let connecting = Client::builder("faults-test", "1.0.0")
        .mode(ConnectMode::Handshake)
        .connect(transport);
    (within(WITHIN, "connect", connecting).await.unwrap(), handle)
}

/// One call of `countdown` from 1 (one half-second step).
async fn countdown_once(
    client: &Client,
) -> Result<modelctx::types::CallToolResult, modelctx::session::SessionError> {
    client
        .call_tool("countdown", args(serde_json::json!({"from": 1})))
        .await
}

/// An instance's resident memory, in KiB.
fn resident_kib(instance: &support::Instance) -> u64 {
    let pid = instance.child.id().expect("the instance runs");
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the instance's status")
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in KiB")
}

behind!(
    a_task_whose_instance_is_killed_fails_as_interrupted_once_its_lease_lapses,
    a_task_whose_instance_is_killed,
    nginx,
    haproxy
);

async fn a_task_whose_instance_is_killed(front: Front) {
    let redis = RedisServer::start();
    let mut d = support::Deployment::start(&redis, front, 2).await;
    let client = d.connect_modern().await;
    // Ten seconds of countdown: a task of the tasks extension after its sync window.
    let calling = client.clone();
    let running = tokio::spawn(async move {
        calling
            .call_tool("countdown", args(serde_json::json!({"from": 20})))
            .await
    });
    let mut seen = d.seen.clone();
    // Each instance's access log is read on its own: wait for both lines.
    let log = logged(
        &mut seen,
        "the call and the client polling its task",
        |log| !served(log, "tools/call").is_empty() && !served(log, "tasks/get").is_empty(),
    )
    .await;
    let running_on = served(&log, "tools/call")[0];
    d.instances[running_on].kill().await;
    // Nobody renews the task's lease in Redis any more: once it lapses, the other
    // instance's answer to the next poll is the task failed as interrupted.
    let outcome = within(WITHIN, "the task's outcome", running).await.unwrap();
    let text = match outcome {
        Ok(result) => format!("{result:?}"),
        Err(error) => error.to_string(),
    };
    assert!(text.contains("may or may not have run"), "{text}");
}

behind!(
    an_input_round_whose_instance_is_killed_completes_on_the_other,
    an_input_round_whose_instance_is_killed,
    nginx,
    haproxy
);

async fn an_input_round_whose_instance_is_killed(front: Front) {
    let redis = RedisServer::start();
    let mut d = support::Deployment::start(&redis, front, 2).await;
    // The user answers once the test has killed the instance that asked.
    let (asked_tx, mut asked) = mpsc::unbounded_channel();
    let killed = Arc::new(tokio::sync::Semaphore::new(0));
    let answering = killed.clone();
    let client = d
        .connect_modern_with(|client| {
            client.form_elicitation(move |form, _cx| {
                let _ = asked_tx.send(form.message().to_owned());
                let answering = answering.clone();
                async move {
                    answering.acquire().await.unwrap().forget();
                    let mut values = FormContent::new();
                    values.insert("name".to_owned(), "Ada".into());
                    Ok(FormAnswer::Accept(values))
                }
            })
        })
        .await;

    let calling = client.clone();
    let running = tokio::spawn(async move { calling.call_tool("greet", JsonObject::new()).await });
    let question = within(WITHIN, "the question", asked.recv()).await.unwrap();
    assert_eq!(question, "Who is there?");
    let mut seen = d.seen.clone();
    let log = logged(&mut seen, "the first round in the access logs", |log| {
        !served(log, "tools/call").is_empty()
    })
    .await;
    let asked_by = served(&log, "tools/call")[0];
    d.instances[asked_by].kill().await;
    killed.add_permits(1);

    let result = within(WITHIN, "the call's outcome", running)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("Hello, Ada!"),
        "{result:?}"
    );
    // The retry reached the instance still running (the balancer tried the dead one's
    // address, was refused, and went on), which ran the tool again with the answer.
    let log = logged(&mut seen, "the retry in the access logs", |log| {
        served(log, "tools/call").len() == 2
    })
    .await;
    assert_eq!(served(&log, "tools/call"), vec![asked_by, 1 - asked_by]);
}

/// The resource `ticket` updates.
const LAST_TICKET: &str = "tickets://last";

/// The instances that served a GET (a stream of the session's own messages), in order.
fn gets(log: &[Served]) -> Vec<usize> {
    log.iter()
        .filter(|s| s.http == "GET")
        .map(|s| s.instance)
        .collect()
}

/// Takes a ticket (one step) and waits for the update of `tickets://last` it makes.
async fn ticket_and_update(client: &Client, watch: &mut Watch) {
    let ticket = client.call_tool("ticket", args(serde_json::json!({"steps": 1})));
    within(WITHIN, "a ticket", ticket).await.unwrap();
    let update = within(WITHIN, "the update", watch.next()).await;
    match update {
        Some(Ok(ServerNotification::ResourceUpdated(n))) => assert_eq!(n.params.uri, LAST_TICKET),
        other => panic!("expected the update of {LAST_TICKET}, got {other:?}"),
    }
}

fn watching_tickets() -> SubscriptionFilter {
    SubscriptionFilter::new().with_resource_subscriptions(vec![LAST_TICKET.to_owned()])
}

behind!(
    a_get_stream_whose_instance_is_killed_opens_again_on_the_other,
    a_get_stream_whose_instance_is_killed
);

async fn a_get_stream_whose_instance_is_killed(front: Front) {
    let redis = RedisServer::start();
    let mut d = deploy(&redis, front).await;
    let watch = d.client.watch(watching_tickets());
    let mut watch = within(WITHIN, "the watch", watch).await.unwrap();
    let mut seen = d.deployed.seen.clone();
    let log = logged(&mut seen, "the GET stream", |log| !gets(log).is_empty()).await;
    let holder = gets(&log)[0];
    ticket_and_update(&d.client, &mut watch).await;

    d.deployed.instances[holder].kill().await;
    // The client opens its stream again, through the balancer, on the instance left.
    logged(&mut seen, "the GET stream on the other instance", |log| {
        gets(log).contains(&(1 - holder))
    })
    .await;
    ticket_and_update(&d.client, &mut watch).await;

    // Nothing twice: a replay of the first update when the stream opened again would
    // have come before the second, so the wire, once the client is closed, would show
    // three. (An update still on its way at the close would go uncounted; none is due.)
    d.client.close().await;
    let updates = d
        .wire
        .received()
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Notification(n) if n.method == "notifications/resources/updated"))
        .count();
    assert_eq!(updates, 2);
}

behind!(
    a_listen_stream_whose_instance_is_killed_is_reported_and_opened_again,
    a_listen_stream_whose_instance_is_killed
);

async fn a_listen_stream_whose_instance_is_killed(front: Front) {
    let redis = RedisServer::start();
    let mut d = support::Deployment::start(&redis, front, 2).await;
    let client = d.connect_modern().await;
    let watch = client.watch(watching_tickets());
    let mut watch = within(WITHIN, "the listen stream", watch).await.unwrap();
    let mut seen = d.seen.clone();
    let log = logged(&mut seen, "the listen stream in the access logs", |log| {
        !served(log, "subscriptions/listen").is_empty()
    })
    .await;
    let holder = served(&log, "subscriptions/listen")[0];
    ticket_and_update(&client, &mut watch).await;

    d.instances[holder].kill().await;
    // The stream broke with its instance: reported once, as interrupted (a change made
    // before a new stream opens is not replayed: the caller knows to read again).
    match within(WITHIN, "the stream's end", watch.next()).await {
        Some(Err(e)) => assert!(e.is_interrupted(), "{e}"),
        other => panic!("expected the stream reported interrupted, got {other:?}"),
    }
    let watch = client.watch(watching_tickets());
    let mut watch = within(WITHIN, "a new listen stream", watch).await.unwrap();
    ticket_and_update(&client, &mut watch).await;
    // The new stream is the other instance's (the killed one cannot have taken it).
    let log = logged(
        &mut seen,
        "the new listen stream in the access logs",
        |log| served(log, "subscriptions/listen").len() == 2,
    )
    .await;
    assert_eq!(
        served(&log, "subscriptions/listen"),
        vec![holder, 1 - holder]
    );
}
