//! A session's owner travels with it through the Redis session registry: two services,
//! each behind a resource server of its own (as two processes would be), serve a shared
//! session to the caller whose `initialize` made it, and to no one else, whichever
//! service a request reaches first.

use std::sync::Arc;

use axum::body::Body;
use http::{Request, StatusCode};
use modelctx::http::{StreamableHttpServerConfig, StreamableHttpService};
use modelctx::server::Server;
use modelctx_oauth::{ResourceServer, ResourceServerConfig};
use modelctx_test::TokenPerUser;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::support::{RedisServer, WITHIN};

const RESOURCE: &str = "http://127.0.0.1/mcp";

/// One service on the shared registry, behind its own resource server.
async fn service(redis: &RedisServer) -> axum::Router {
    let registry = redis.session_registry("bind:").await;
    let server = Server::builder("bound", "1.0.0").build();
    let service = StreamableHttpService::with_config(
        StreamableHttpServerConfig::default().session_registry(Arc::new(registry)),
        move |t| {
            server.serve(t);
        },
    );
    let rs = ResourceServer::new(
        ResourceServerConfig::new(RESOURCE, modelctx_test::ISSUER),
        TokenPerUser::new(RESOURCE),
    )
    .unwrap();
    service.router().layer(rs.layer())
}

/// A POST of `body` by `who` in session `id` (none: a new one); its status and
/// `Mcp-Session-Id`.
async fn post(
    app: &axum::Router,
    who: &str,
    id: Option<&str>,
    body: &Value,
) -> (StatusCode, Option<String>) {
    let mut request = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {who}-token"));
    if let Some(id) = id {
        request = request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    let answer = tokio::time::timeout(WITHIN, app.clone().oneshot(request))
        .await
        .expect("answered in time")
        .unwrap();
    let (parts, body) = answer.into_parts();
    // Read the answer through, as a client does: a new session is there for the next
    // request once its initialize result has gone out on this stream.
    tokio::time::timeout(WITHIN, axum::body::to_bytes(body, 1 << 20))
        .await
        .expect("the answer ends in time")
        .expect("the answer reads");
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (parts.status, session)
}

/// A `ping` by `who` in session `id`: its status.
async fn ping(app: &axum::Router, who: &str, id: &str) -> StatusCode {
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    post(app, who, Some(id), &ping).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_of_a_shared_session_holds_on_every_service() {
    let redis = RedisServer::start();
    let a = service(&redis).await;
    let b = service(&redis).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, id) = post(&a, "alice", None, &init).await;
    assert_eq!(status, StatusCode::OK);
    let id = id.expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(&a, "alice", Some(&id), &note).await.0,
        StatusCode::ACCEPTED
    );
    // B has never seen the session: mallory names it there first, and is refused.
    assert_eq!(ping(&b, "mallory", &id).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(&b, "alice", &id).await, StatusCode::OK);
    assert_eq!(ping(&a, "mallory", &id).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(&a, "alice", &id).await, StatusCode::OK);
}
