//! A server-wide bound on running handlers: two sessions of one server share it, so a
//! handler of the second waits until the first one's ends.

use std::sync::{Arc, Mutex};

use modelctx_server::{Context, Server, ToolDef};
use modelctx_types::{CallToolResult, Tool};
use serde_json::json;
use tokio::sync::Notify;

use crate::support::{handshake, serve};

fn tool(name: &str) -> Tool {
    Tool::new(
        name,
        json!({"type": "object"}).as_object().cloned().unwrap(),
    )
}

#[tokio::test]
async fn sessions_of_one_server_share_its_bound_on_running_handlers() {
    let events = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let hold = {
        let (events, started, release) = (events.clone(), started.clone(), release.clone());
        ToolDef::with_schema(tool("hold"), move |_args, _cx: Context| {
            let (events, started, release) = (events.clone(), started.clone(), release.clone());
            async move {
                events.lock().unwrap().push("hold started");
                started.notify_one();
                release.notified().await;
                events.lock().unwrap().push("hold ended");
                Ok::<_, String>(CallToolResult::text("held"))
            }
        })
    };
    let quick = {
        let events = events.clone();
        ToolDef::with_schema(tool("quick"), move |_args, _cx: Context| {
            let events = events.clone();
            async move {
                events.lock().unwrap().push("quick ran");
                Ok::<_, String>(CallToolResult::text("quick"))
            }
        })
    };
    let server = Server::builder("bounded", "1.0.0")
        .max_concurrent_handlers(1)
        .tool(hold)
        .unwrap()
        .tool(quick)
        .unwrap()
        .build();
    let (_a_session, mut a) = serve(&server);
    let (_b_session, mut b) = serve(&server);
    handshake(&mut a, json!({})).await;
    handshake(&mut b, json!({})).await;

    a.request(1, "tools/call", json!({"name": "hold", "arguments": {}}))
        .await;
    tokio::time::timeout(std::time::Duration::from_secs(5), started.notified())
        .await
        .expect("the first handler starts");
    // The second session's call is taken (its ping, behind it, is answered) but waits
    // for the server's one slot.
    b.request(1, "tools/call", json!({"name": "quick", "arguments": {}}))
        .await;
    b.request(2, "ping", json!({})).await;
    assert_eq!(b.expect_result(2).await, json!({}));

    release.notify_one();
    assert_eq!(a.expect_result(1).await["content"][0]["text"], "held");
    assert_eq!(b.expect_result(1).await["content"][0]["text"], "quick");
    assert_eq!(
        *events.lock().unwrap(),
        ["hold started", "hold ended", "quick ran"]
    );
}
