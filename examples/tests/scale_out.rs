//! Two `http-server` processes sharing one Redis (`--redis`) behind a round-robin load
//! balancer — the test kit's forwarder, nginx and HAProxy in turn — run as a user would
//! (README, "Several instances behind a load balancer"): a 2026-07-28 client lists the
//! tools and calls `countdown`, which outlasts its synchronous window and becomes a task
//! on one instance; the client follows it with `tasks/get` on both instances until its
//! result, read from Redis.
//!
//! Needs `redis-server` (`sh xtask/system/redis.sh`), nginx and HAProxy
//! (`sh xtask/system/balancers.sh`); fails, never skips, without them.

mod support;

use modelctx_test::within;
use support::{Deployment, Front, RedisServer, WITHIN, served};

behind!(
    two_http_servers_share_one_redis_behind_a_round_robin_balancer,
    a_task_started_on_one_instance_is_followed_on_the_other
);

async fn a_task_started_on_one_instance_is_followed_on_the_other(front: Front) {
    let redis = RedisServer::start();
    let d = Deployment::start(&redis, front, 2).await;
    let mut seen = d.seen.clone();

    let client = d.connect_modern().await;
    let tools = within(WITHIN, "tools/list", client.list_all_tools())
        .await
        .unwrap();
    assert_eq!(tools[0].name, "countdown");

    let args = serde_json::json!({"from": 2}).as_object().unwrap().clone();
    let result = within(WITHIN, "countdown", client.call_tool("countdown", args))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("liftoff"), "{result:?}");

    // The call became a task on one instance; the other answered tasks/get for it.
    let log = seen.borrow_and_update().clone();
    let calls = served(&log, "tools/call");
    assert_eq!(calls.len(), 1, "{log:?}");
    let polls = served(&log, "tasks/get");
    assert!(polls.contains(&(1 - calls[0])), "{log:?}");
    drop(client);
}
