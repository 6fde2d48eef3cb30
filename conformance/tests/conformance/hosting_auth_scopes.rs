//! Hosting: auth — what the resource server's refusals say about scopes (the 401's
//! hint, one 403 naming everything an operation needs, never `offline_access`) and a
//! malformed request's 400.

use modelctx::http::{StreamableHttpServerConfig, StreamableHttpService};
use modelctx_conformance::{Connector, Test, conformance_test};
use modelctx_oauth::{
    AuthorizationServer, AuthorizationServerConfig, InMemoryStore, Login, ResourceServer,
    ResourceServerConfig,
};
use serde_json::json;

use crate::hosting_auth::{
    Protected, access_token, challenge_of, protected, register_service_client, seconds_now,
    service_token,
};
use crate::http_support::{RawResponse, send};
use crate::support::{server_with_tool, text_tool};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            the_401_challenge_names_the_scopes_the_resource_needs,
            ["hosting:auth:401-scope-hint"]
        ),
        conformance_test!(
            a_request_with_two_authorization_headers_is_400_invalid_request,
            ["hosting:auth:malformed-request-400"]
        ),
        conformance_test!(
            one_403_names_every_scope_the_operation_needs,
            ["hosting:auth:scope-403:all-scopes"]
        ),
        conformance_test!(
            offline_access_is_neither_advertised_nor_asked_for,
            ["hosting:auth:scope:no-offline-access"]
        ),
    ]
}

/// The `scope` parameter of a challenge.
fn scope_of(challenge: &str) -> Option<&str> {
    let start = challenge.find("scope=\"")? + "scope=\"".len();
    let len = challenge[start..].find('"')?;
    Some(&challenge[start..start + len])
}

async fn the_401_challenge_names_the_scopes_the_resource_needs(connect: Connector) {
    let p = protected(&connect).await;
    // Before any authorization: the scope to ask for.
    let r = p.probe(&p.mcp, None).await;
    assert_eq!(r.status, 401);
    assert_eq!(scope_of(challenge_of(&r)), Some("mcp:tools"), "{r:?}");
    // A refused token: the same guidance.
    let r = p.probe(&p.mcp, Some("Bearer not-a-jwt")).await;
    assert_eq!(r.status, 401);
    let c = challenge_of(&r);
    assert!(c.contains("error=\"invalid_token\""), "{c}");
    assert_eq!(scope_of(c), Some("mcp:tools"), "{c}");
}

async fn a_request_with_two_authorization_headers_is_400_invalid_request(connect: Connector) {
    let p = protected(&connect).await;
    let token = p.token(&p.mcp, "mcp:tools").await;
    let bearer = format!("Bearer {token}");
    let r = send(
        p.http
            .post(&p.mcp)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", &bearer)
            .header("authorization", &bearer)
            .body(crate::http_support::initialize(1, "2025-11-25").to_string()),
    )
    .await;
    assert_eq!(r.status, 400, "{r:?}");
    let c = challenge_of(&r);
    assert!(c.contains("error=\"invalid_request\""), "{c}");
    assert!(c.contains("resource_metadata="), "{c}");
    // The token itself is good: sent once, the request passes.
    let r = p.probe(&p.mcp, Some(&bearer)).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// An access token of `p`'s authorization server (signed with its key) granting `scope`.
fn token_with_scope(p: &Protected, scope: &str) -> String {
    let now = seconds_now();
    access_token(p, scope, now, now + 600)
}

/// A 2026-07-28 `tools/call` of `tool` with `token`.
async fn call_tool(p: &Protected, tool: &str, token: &str) -> RawResponse {
    let body =
        crate::http_modern::modern_call(1, "tools/call", json!({"name": tool, "arguments": {}}));
    send(
        p.http
            .post(&p.mcp)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .header("authorization", format!("Bearer {token}"))
            .body(body.to_string()),
    )
    .await
}

async fn one_403_names_every_scope_the_operation_needs(connect: Connector) {
    let p = protected(&connect).await;
    // `admin` needs `mcp:tools` (every request) and `mcp:admin` (the tool): a token
    // with neither is told both at once, as is one missing only the tool's.
    for granted in ["profile", "mcp:tools"] {
        let r = call_tool(&p, "admin", &token_with_scope(&p, granted)).await;
        assert_eq!(r.status, 403, "{granted}: {r:?}");
        let c = challenge_of(&r);
        assert!(c.contains("error=\"insufficient_scope\""), "{c}");
        let mut named: Vec<&str> = scope_of(c).expect("a scope").split(' ').collect();
        named.sort_unstable();
        assert_eq!(named, ["mcp:admin", "mcp:tools"], "{granted}: {c}");
    }
    // With both, the call goes through.
    let r = call_tool(&p, "admin", &token_with_scope(&p, "mcp:tools mcp:admin")).await;
    assert_eq!(r.status, 200, "{r:?}");
}

async fn offline_access_is_neither_advertised_nor_asked_for(_: Connector) {
    // An integrator who lists `offline_access` among the resource's scopes.
    let issuer_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", issuer_listener.local_addr().unwrap());
    let mcp_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", mcp_listener.local_addr().unwrap());
    let mcp = format!("{origin}/mcp");
    let config = AuthorizationServerConfig::new(&issuer, &mcp)
        .scopes_supported(["mcp:tools", "offline_access"]);
    let users = |_: &Login<'_>| None;
    let auth = AuthorizationServer::new(config, InMemoryStore::new(), users).unwrap();
    register_service_client(&auth).await;
    let router = auth.router();
    tokio::spawn(async move { axum::serve(issuer_listener, router).await });
    let rs = ResourceServer::new(
        ResourceServerConfig::new(&mcp, &issuer)
            .scopes_supported(["mcp:tools", "offline_access"])
            .required_scopes(["mcp:tools", "offline_access"]),
        auth.verifier(),
    )
    .unwrap();
    let hello = text_tool("hello", "hi");
    let server = server_with_tool("offline", hello);
    let service = StreamableHttpService::with_config(StreamableHttpServerConfig::default(), {
        move |t| {
            server.serve(t);
        }
    });
    let app = axum::Router::new()
        .nest_service("/mcp", service.router().layer(rs.layer()))
        .merge(rs.metadata_router());
    tokio::spawn(async move { axum::serve(mcp_listener, app).await });
    let http = reqwest::Client::new();

    let prm = send(http.get(rs.metadata_url())).await.json();
    assert_eq!(prm["scopes_supported"], json!(["mcp:tools"]), "{prm}");
    let probe = |token: Option<String>| {
        let mut rb = http
            .post(&mcp)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list");
        if let Some(token) = token {
            rb = rb.header("authorization", format!("Bearer {token}"));
        }
        rb.body(crate::http_modern::modern_call(1, "tools/list", json!({})).to_string())
    };
    let r = send(probe(None)).await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(scope_of(challenge_of(&r)), Some("mcp:tools"), "{r:?}");
    // A token without a refresh grant is all the resource asks for.
    let token = service_token(&http, &issuer, &mcp, "mcp:tools").await;
    let r = send(probe(Some(token))).await;
    assert_eq!(r.status, 200, "{r:?}");
}
