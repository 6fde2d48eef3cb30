//! A session belongs to the caller whose `initialize` made it, for as long as it lives:
//! no flood of other session ids makes the binding go, and an id no session has is
//! never bound to whoever presents it. And the headers the resource server reads are
//! read once: sent twice, the request is refused. Requests go through the resource
//! server's layer to a real MCP server (in process, `tower::ServiceExt::oneshot`).

use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode};
use modelctx_http::StreamableHttpService;
use modelctx_oauth::{ResourceServer, ResourceServerConfig};
use modelctx_server::Server;
use modelctx_test::TokenPerUser;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const RESOURCE: &str = "http://127.0.0.1/mcp";
const WAIT: Duration = Duration::from_secs(10);

/// The MCP endpoint behind the resource server's layer.
fn endpoint() -> axum::Router {
    let rs = ResourceServer::new(
        ResourceServerConfig::new(RESOURCE, modelctx_test::ISSUER),
        TokenPerUser::new(RESOURCE).client_id("app"),
    )
    .unwrap();
    let server = Server::builder("bound", "1.0.0").build();
    let service = StreamableHttpService::new(move |t| {
        server.serve(t);
    });
    service.router().layer(rs.layer())
}

/// A POST of `body` with `lines` as headers; its status and `Mcp-Session-Id`.
async fn post(
    app: &axum::Router,
    lines: &[(&str, &str)],
    body: &Value,
) -> (StatusCode, Option<String>) {
    let mut request = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in lines {
        request = request.header(*name, *value);
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    let answer = tokio::time::timeout(WAIT, app.clone().oneshot(request))
        .await
        .expect("answered in time")
        .unwrap();
    let session = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (answer.status(), session)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// A session of `who`, initialised (its `notifications/initialized` sent).
async fn session_of(app: &axum::Router, who: &str) -> String {
    let bearer = format!("Bearer {who}-token");
    let (status, id) = post(app, &[("authorization", &bearer)], &initialize()).await;
    assert_eq!(status, StatusCode::OK);
    let id = id.expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let lines = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    assert_eq!(post(app, &lines, &note).await.0, StatusCode::ACCEPTED);
    id
}

/// A `ping` in session `id` by `who`: its status.
async fn ping(app: &axum::Router, who: &str, id: &str) -> StatusCode {
    let bearer = format!("Bearer {who}-token");
    ping_with(
        app,
        &[("authorization", bearer.as_str()), ("mcp-session-id", id)],
    )
    .await
}

/// A `ping` with `lines` (and the protocol version) as headers: its status.
async fn ping_with(app: &axum::Router, lines: &[(&str, &str)]) -> StatusCode {
    let mut lines = lines.to_vec();
    lines.push(("mcp-protocol-version", "2025-11-25"));
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    post(app, &lines, &ping).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_session_ids_does_not_unbind_a_session() {
    let app = endpoint();
    let victim = session_of(&app, "alice").await;
    assert_eq!(ping(&app, "alice", &victim).await, StatusCode::OK);
    assert_eq!(ping(&app, "mallory", &victim).await, StatusCode::NOT_FOUND);
    // Mallory, with her own valid token, names more session ids than any table of
    // bindings would keep: each is unknown.
    for n in 0..100_500u32 {
        let id = format!("{n:032x}");
        let status = ping(&app, "mallory", &id).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{id}");
    }
    // Alice's session is still hers alone: mallory can neither use nor end it.
    assert_eq!(ping(&app, "mallory", &victim).await, StatusCode::NOT_FOUND);
    let end = Request::delete("/mcp")
        .header("host", "127.0.0.1")
        .header("authorization", "Bearer mallory-token")
        .header("mcp-session-id", &victim)
        .body(Body::empty())
        .unwrap();
    let answer = tokio::time::timeout(WAIT, app.clone().oneshot(end))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    assert_eq!(ping(&app, "alice", &victim).await, StatusCode::OK);
}

#[tokio::test]
async fn the_headers_the_resource_server_reads_are_read_once() {
    let app = endpoint();
    let id = session_of(&app, "alice").await;
    let alice = ("authorization", "Bearer alice-token");
    let session = ("mcp-session-id", id.as_str());
    // Two Authorization lines, either of which alone is good: a malformed request
    // (RFC 6750 §3.1 `invalid_request`), refused before either token is read.
    let mallory = ("authorization", "Bearer mallory-token");
    let status = ping_with(&app, &[alice, mallory, session]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Two DPoP proofs, even with a bearer token that needs none.
    let proofs = [("dpop", "a.b.c"), ("dpop", "d.e.f")];
    let status = ping_with(&app, &[alice, proofs[0], proofs[1], session]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Two session ids, the owner's first.
    let other = session_of(&app, "alice").await;
    let status = ping_with(&app, &[alice, session, ("mcp-session-id", &other)]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Each once: served.
    assert_eq!(ping_with(&app, &[alice, session]).await, StatusCode::OK);
}
