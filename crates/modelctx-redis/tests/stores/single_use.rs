//! Single-use rounds across two instances sharing Redis: a round's `requestState` used
//! at one instance is refused at the other, over raw 2026-07-28 POSTs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::http::StreamableHttpService;
use modelctx::server::Server;
use serde_json::{Value, json};

use crate::support::{RedisServer, post_json, serve};

/// An instance serving the test kit's `pay` (asks for approval, then pays: counted in
/// `paid`), its rounds single-use through Redis; its URL.
async fn instance(redis: &RedisServer, paid: Arc<AtomicUsize>) -> String {
    let pay = modelctx_test::pay_tool(paid);
    let store = modelctx_redis::SingleUseIds::new(redis.connection().await).prefix("once-test:");
    let server = Server::builder("payer", "1.0.0")
        .request_state_key([5; 32])
        .single_use_rounds(store)
        .tool(pay)
        .unwrap()
        .build();
    let service = StreamableHttpService::new(move |t| {
        server.serve(t);
    });
    format!("{}/mcp", serve(service).await)
}

/// A `tools/call` of `pay` POSTed to `url` with `extra` params; the answer's JSON.
async fn call(url: &str, id: i64, extra: Value) -> Value {
    let mut params = json!({"name": "pay", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }});
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "pay"),
    ];
    let answer = post_json(url, &headers, &body).await;
    let text = answer.text().await.unwrap();
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&text);
    serde_json::from_str(json).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_used_at_one_instance_is_refused_at_the_other() {
    let redis = RedisServer::start();
    let paid = Arc::new(AtomicUsize::new(0));
    let a = instance(&redis, paid.clone()).await;
    let b = instance(&redis, paid.clone()).await;
    let interim = call(&a, 1, json!({})).await;
    assert_eq!(
        interim["result"]["resultType"], "input_required",
        "{interim}"
    );
    let state = interim["result"]["requestState"].clone();
    let approve = json!({
        "inputResponses": {"approve": {"action": "accept", "content": {}}},
        "requestState": state,
    });
    let done = call(&a, 2, approve.clone()).await;
    assert_eq!(done["result"]["content"][0]["text"], "paid (1)", "{done}");
    // The same retry at the other instance: refused, nothing paid twice.
    let replayed = call(&b, 3, approve.clone()).await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert!(
        replayed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used before"),
        "{replayed}"
    );
    // ... and at the first one.
    let replayed = call(&a, 4, approve).await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    // The id is kept in Redis, under the prefix, until the state expires.
    let keys = redis.keys().await;
    assert_eq!(
        keys.iter()
            .filter(|k| k.starts_with("once-test:once:"))
            .count(),
        1,
        "{keys:?}"
    );
}
