//! The scopes the client asks for, and what it refuses before and during authorization.

use super::*;

#[tokio::test]
async fn offline_access_only_when_the_server_offers_it() {
    let world =
        World::start_with(|c| c.as_scopes = Some(vec!["mcp".into(), "offline_access".into()]))
            .await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("mcp"))).await);
    assert_eq!(world.authorizations()[0]["scope"], "mcp offline_access");
    assert_eq!(world.authorizations()[0]["prompt"], "consent");

    let world = World::start_with(|c| c.as_scopes = Some(vec!["mcp".into()])).await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("mcp"))).await);
    assert_eq!(world.authorizations()[0]["scope"], "mcp");
    assert!(!world.authorizations()[0].contains_key("prompt"));
}

#[tokio::test]
async fn pkce_without_s256_is_refused_before_authorization() {
    let (world, e) = refused_flow(|c| c.pkce_methods = vec!["plain".into()]).await;
    assert_eq!(e.kind(), ErrorKind::PkceUnsupported);
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn metadata_with_another_issuer_is_refused() {
    let (world, e) =
        refused_flow(|c| c.metadata_issuer = Some("https://attacker.example".into())).await;
    assert_eq!(e.kind(), ErrorKind::IssuerMismatch);
    assert!(world.registrations().is_empty());
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn prm_for_another_resource_is_refused() {
    let (world, e) =
        refused_flow(|c| c.prm_resource = Some("https://evil.example/mcp".into())).await;
    assert_eq!(e.kind(), ErrorKind::ResourceMismatch);
    assert!(
        !world
            .events()
            .iter()
            .any(|e| matches!(e, Event::Metadata(_)))
    );
}

#[tokio::test]
async fn insecure_authorization_server_is_refused() {
    let (world, e) = refused_flow(|c| c.prm_issuer = Some("http://as.example".into())).await;
    assert_eq!(e.kind(), ErrorKind::InsecureUrl);
    // With the private-network guard forced on, even this loopback setup is refused
    // before anything is fetched.
    let guarded = client(&world).private_network_guard(true).build().unwrap();
    let before = world.events().len();
    let e = failing_flow(&world, &guarded).await;
    assert_eq!(e.kind(), ErrorKind::InsecureUrl);
    assert!(e.message().contains("private-network guard"), "{e}");
    assert_eq!(world.events().len(), before);
    let e = OAuthClient::builder("http://mcp.example/mcp")
        .authorization_code(Browser::honest())
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
}

/// SECURITY.md case 31: an authorization endpoint with a dangerous scheme
/// (`javascript:`, `file:`, `data:`) or plain http off loopback is refused before the
/// user is sent anywhere: the browser never sees it and no token is asked for.
#[tokio::test]
async fn dangerous_authorization_endpoints_are_refused_before_the_browser() {
    for endpoint in [
        "javascript:alert(document.cookie)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "http://as.example/authorize",
    ] {
        let (world, e) = refused_flow(|c| c.authorization_endpoint = Some(endpoint.into())).await;
        assert_eq!(e.kind(), ErrorKind::InsecureUrl, "{endpoint}: {e}");
        assert!(
            !world
                .events()
                .iter()
                .any(|e| matches!(e, Event::Authorize(_) | Event::Token { .. })),
            "{endpoint}: the flow stopped before the browser"
        );
    }
}

#[tokio::test]
async fn oversize_metadata_is_refused() {
    let world = World::start_with(|c| c.prm_padding = 64 * 1024).await;
    let oauth = client(&world).limits(LIMIT, 16 * 1024).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::InvalidResponse);
    assert!(e.message().contains("larger than"), "{e}");
}

#[tokio::test]
async fn tampered_state_is_refused_before_the_token_request() {
    let world = World::start(Config::default()).await;
    let oauth = client_through(&world, tampering("state", "forged"));
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::StateMismatch);
    assert!(world.token_requests().is_empty());
}

#[tokio::test]
async fn wrong_or_missing_iss_is_refused() {
    for (mode, supported) in [("wrong", true), ("wrong", false), ("omit", true)] {
        let (world, e) = refused_flow(|c| {
            c.iss_mode = mode;
            c.iss_supported = supported;
        })
        .await;
        assert_eq!(e.kind(), ErrorKind::IssuerMismatch, "{mode} {supported}");
        assert!(world.token_requests().is_empty());
    }
    // Not advertised and absent: fine.
    let world = World::start_with(|c| {
        c.iss_mode = "omit";
        c.iss_supported = false;
    })
    .await;
    let oauth = authorized(&world).await;
    assert!(authorization_to(&oauth, &world.server).await.is_some());
}

#[tokio::test]
async fn authorization_error_surfaces() {
    let world = World::start(Config::default()).await;
    let oauth = client_through(&world, tampering("error", "access_denied"));
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::Authorization);
    assert_eq!(e.oauth_error(), Some("access_denied"));
}

#[tokio::test]
async fn registration_errors_surface_status_and_body() {
    let (_, e) = refused_flow(|c| c.register_status = 400).await;
    assert_eq!(e.kind(), ErrorKind::Registration);
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.oauth_error(), Some("invalid_redirect_uri"));
    assert!(e.message().contains("not allowed here"), "{e}");
}

#[tokio::test]
async fn substituted_redirect_uris_are_refused() {
    let (world, e) = refused_flow(|c| c.substitute_redirect = true).await;
    assert_eq!(e.kind(), ErrorKind::Registration);
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn client_id_metadata_document_where_supported_else_registration() {
    const DOC: &str = "https://app.example/client.json";
    let world = World::start_with(|c| c.cimd = true).await;
    let oauth = client(&world)
        .client_metadata_document(DOC)
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(world.registrations().is_empty());
    assert_eq!(world.authorizations()[0]["client_id"], DOC);
    assert_eq!(world.token_requests()[0].0["client_id"], DOC);

    // Not advertised: dynamic registration.
    let world = World::start(Config::default()).await;
    let oauth = client(&world)
        .client_metadata_document(DOC)
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(world.registrations().len(), 1);
    assert_eq!(world.authorizations()[0]["client_id"], "client-1");

    // A metadata document URL must be https with a path.
    let e = client(&world)
        .client_metadata_document("https://app.example/")
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
}
