//! Client registration and the credentials it keeps: metadata documents, pre-registered
//! clients, refresh, invalid grants, a configured authorization server.

use super::*;

#[tokio::test]
async fn pre_registered_credentials_with_basic_auth_only_at_their_issuer() {
    let world = World::start_with(|c| c.auth_methods = vec!["client_secret_basic".into()]).await;
    let oauth = client(&world)
        .pre_registered(
            "https://other-as.example",
            ClientRegistration::new("elsewhere"),
        )
        .pre_registered(
            world.issuer.clone(),
            ClientRegistration::new("pre id").with_secret("s3cret:&"),
        )
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(world.registrations().is_empty());
    assert_eq!(world.authorizations()[0]["client_id"], "pre id");
    let (form, authorization, _) = &world.token_requests()[0];
    // RFC 6749 §2.3.1: id and secret form-urlencoded, then Basic.
    let expected = base64::engine::general_purpose::STANDARD.encode("pre+id:s3cret%3A%26");
    assert_eq!(
        authorization.as_deref(),
        Some(format!("Basic {expected}").as_str())
    );
    assert!(!form.contains_key("client_secret"));
}

#[tokio::test]
async fn client_secret_post_when_that_is_all_the_server_takes() {
    let world = World::start_with(|c| c.auth_methods = vec!["client_secret_post".into()]).await;
    authorized(&world).await;
    let (form, authorization, _) = &world.token_requests()[0];
    assert_eq!(form["client_secret"], "secret-1");
    assert_eq!(form["client_id"], "client-1");
    assert!(authorization.is_none());
}

#[tokio::test]
async fn refresh_before_expiry_is_transparent() {
    let world = World::start_with(|c| c.expires_in = 10).await;
    let oauth = authorized(&world).await;
    // The token expires within the refresh margin: the next request refreshes first.
    assert_sends(&oauth, &world.server, "Bearer at-3").await;
    let requests = world.token_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].0["grant_type"], "refresh_token");
    assert_eq!(requests[1].0["refresh_token"], "rt-2");
    assert_eq!(requests[1].0["resource"], world.server);
    assert_eq!(world.authorizations().len(), 1);
}

/// A client whose refresh the token endpoint refuses with `refusal`, once it has
/// tried: no token went out. The servers, the client and what its store kept.
async fn refused_refresh(
    refusal: &'static str,
) -> (World, OAuthClient, modelctx_oauth::StoredCredentials) {
    let world = World::start_with(|c| {
        c.expires_in = 10;
        c.refresh = refusal;
    })
    .await;
    let store = Arc::new(InMemoryCredentialStore::new());
    let oauth = client(&world).store(store.clone()).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(authorization_to(&oauth, &world.server).await.is_none());
    let key = CredentialKey::new(&world.issuer, &world.server);
    let stored = store.load(&key).await.unwrap().unwrap();
    (world, oauth, stored)
}

#[tokio::test]
async fn invalid_grant_clears_tokens_only_and_invalid_client_the_registration() {
    // The refresh is refused: no token goes out, the registration stays.
    let (_, _, stored) = refused_refresh("invalid_grant").await;
    assert!(stored.tokens.is_none());
    assert_eq!(stored.registration.unwrap().client_id, "client-1");

    for refusal in ["invalid_client", "unauthorized_client"] {
        let (world, oauth, stored) = refused_refresh(refusal).await;
        assert!(stored.tokens.is_none(), "{refusal}");
        assert!(stored.registration.is_none(), "{refusal}");
        // The next 401 registers anew.
        assert!(rejected(&oauth, 401, &world.challenge(None)).await);
        assert_eq!(world.registrations().len(), 2, "{refusal}");
    }
}

#[tokio::test]
async fn a_configured_authorization_server_is_used_alone() {
    // The resource names another authorization server; the configured one is used,
    // and the resource server is not asked.
    let world = World::start_with(|c| c.prm_issuer = Some("http://127.0.0.1:1".into())).await;
    let oauth = client(&world)
        .authorization_server(world.issuer.clone())
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(!world.events().iter().any(|e| matches!(e, Event::Prm(_))));
    assert_eq!(world.authorizations()[0]["resource"], world.server);
    assert!(authorization_to(&oauth, &world.server).await.is_some());

    // Its metadata must name it: else no assertion is asked for, nothing is sent.
    let world =
        World::start_with(|c| c.metadata_issuer = Some("https://attacker.example".into())).await;
    let asked = Arc::new(Mutex::new(0));
    let count = asked.clone();
    let oauth = OAuthClient::builder(&world.server)
        .authorization_server(world.issuer.clone())
        .jwt_bearer(move |_: modelctx_oauth::AssertionRequest| {
            *count.lock().unwrap() += 1;
            async { Ok("id-jag".to_owned()) }
        })
        .client(ClientRegistration::new("c").with_secret("s"))
        .build()
        .unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::IssuerMismatch);
    assert_eq!(*asked.lock().unwrap(), 0);
    assert!(world.token_requests().is_empty());
    // A configured issuer must be a usable URL.
    let e = client(&world)
        .authorization_server("not a url")
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
}

#[tokio::test]
async fn step_up_asks_for_the_union_within_a_limit() {
    let world = World::start(Config::default()).await;
    let oauth = client(&world).max_step_ups(2).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("read"))).await);
    headers_for(&oauth, &world.server).await.unwrap();
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(rejected(&oauth, 403, &world.insufficient("write")).await);
    assert_eq!(world.authorizations()[1]["scope"], "read write");
    headers_for(&oauth, &world.server).await.unwrap();
    // The same challenge again: the token was granted write, so no authorization would
    // help; a refreshed token is tried instead (no user).
    assert!(rejected(&oauth, 403, &world.insufficient("write")).await);
    assert_eq!(world.authorizations().len(), 2);
    headers_for(&oauth, &world.server).await.unwrap();
    // Refused again on its first use: the limit (2) is reached.
    assert!(!rejected(&oauth, 403, &world.insufficient("read write")).await);
    // Another operation's challenge, then the one of its retry; then the limit.
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(rejected(&oauth, 403, &world.insufficient("admin")).await);
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(rejected(&oauth, 403, &world.insufficient("root")).await);
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(!rejected(&oauth, 403, &world.insufficient("more")).await);
    assert_eq!(world.authorizations().len(), 4);
    // A 403 without insufficient_scope is not a scope problem.
    let mut plain = HeaderMap::new();
    plain.insert(
        header::WWW_AUTHENTICATE,
        "Bearer error=\"invalid_token\"".parse().unwrap(),
    );
    assert!(!rejected(&oauth, 403, &plain).await);
}
