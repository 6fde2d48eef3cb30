//! Our client through the HTTP transport: a whole authorization, step-up within one request,
//! DPoP nonces, and a server that refuses every token.

use super::*;

#[tokio::test]
async fn authorization_code_through_the_transport() {
    let world = World::start_with(|c| {
        c.prm_scopes = Some(vec!["mcp:read".into(), "mcp:write".into()]);
        c.challenge_scope = Some("mcp:read".into());
    })
    .await;
    let oauth = client(&world).build().unwrap();
    assert_eq!(initialize(&world, &oauth).await.unwrap(), "7");

    // Discovery from the challenge, registration as a native public client.
    let events = world.events();
    assert!(matches!(
        &events[0],
        Event::Mcp {
            authorization: None
        }
    ));
    assert!(
        matches!(&events[1], Event::Prm(p) if p == "/.well-known/oauth-protected-resource/mcp")
    );
    assert!(
        matches!(&events[2], Event::Metadata(p) if p == "/.well-known/oauth-authorization-server")
    );
    let reg = &world.registrations()[0];
    assert_eq!(reg["application_type"], "native");
    assert_eq!(reg["token_endpoint_auth_method"], "none");
    assert!(
        reg["grant_types"]
            .as_array()
            .unwrap()
            .contains(&json!("refresh_token"))
    );
    assert_eq!(reg["redirect_uris"], json!(["http://127.0.0.1:9/callback"]));

    // Authorization: PKCE S256, state, resource exactly as the PRM says, the
    // challenge's scope.
    let q = &world.authorizations()[0];
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"].len(), 43);
    assert!(q["state"].len() >= 32);
    assert_eq!(q["resource"], world.server);
    assert_eq!(q["scope"], "mcp:read");
    assert_eq!(q["client_id"], "client-1");

    // Token request: the verifier, the same resource, the client id (method none).
    let (form, authorization, _) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["resource"], world.server);
    assert_eq!(form["client_id"], "client-1");
    assert_eq!(form["redirect_uri"], "http://127.0.0.1:9/callback");
    assert!(authorization.is_none());

    // The retried request carried the token.
    let last = events.last().unwrap();
    assert!(
        matches!(last, Event::Mcp { authorization: Some(a) } if a == "Bearer at-2"),
        "{last:?}"
    );
    assert_eq!(oauth.tokens().await.unwrap().access_token, "at-2");
}

#[tokio::test]
async fn step_up_within_one_request_through_the_transport() {
    let world = World::start_with(|c| {
        c.challenge_scope = Some("read".into());
        c.required_scope = Some("write".into());
    })
    .await;
    let oauth = client(&world).build().unwrap();
    // 401 → authorize(read) → retry → 403 insufficient_scope(write) → authorize(read
    // write) → retry → answered.
    assert_eq!(initialize(&world, &oauth).await.unwrap(), "7");
    let scopes: Vec<String> = world
        .authorizations()
        .iter()
        .map(|q| q["scope"].clone())
        .collect();
    assert_eq!(scopes, ["read", "read write"]);
}

#[tokio::test]
async fn dpop_nonce_right_after_a_new_token_through_the_transport() {
    let world = World::start_with(|c| {
        c.dpop_algs = Some(vec!["ES256".into()]);
        c.rs_nonce = Some("rs-nonce-1".into());
    })
    .await;
    let oauth = client(&world).dpop(true).build().unwrap();
    // 401 → authorize → retry with the DPoP token → 401 use_dpop_nonce → retry with
    // the nonce → answered: two retries of one request.
    assert_eq!(initialize(&world, &oauth).await.unwrap(), "7");
    let presented: Vec<Option<String>> = world
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Mcp { authorization } => Some(authorization),
            _ => None,
        })
        .collect();
    assert_eq!(
        presented,
        [None, Some("DPoP at-2".into()), Some("DPoP at-2".into())]
    );
    assert_eq!(world.authorizations().len(), 1);
}

#[tokio::test]
async fn dpop_bound_tokens_of_an_earlier_run_keep_their_key() {
    let world = World::start_with(|c| c.dpop_algs = Some(vec!["ES256".into()])).await;
    let store = Arc::new(InMemoryCredentialStore::new());
    // A run of the application: a client with DPoP on, and the one store.
    let run = || {
        client(&world)
            .dpop(true)
            .store(store.clone())
            .build()
            .unwrap()
    };
    let first = run();
    assert_eq!(initialize(&world, &first).await.unwrap(), "7");
    let key = proof_key(&first, &world.server).await;
    // The stored credentials hold the key (and their Debug form does not show it).
    let stored = store
        .load(&CredentialKey::new(&world.issuer, &world.server))
        .await
        .unwrap()
        .unwrap();
    assert!(stored.dpop_key.is_some());
    assert!(!format!("{stored:?}").contains("PRIVATE KEY"));

    // A later run with the same store: the stored DPoP token, proofs by the same key,
    // no new authorization.
    let later = run();
    assert_eq!(initialize(&world, &later).await.unwrap(), "7");
    assert_eq!(proof_key(&later, &world.server).await, key);
    assert_eq!(world.authorizations().len(), 1);
}

#[tokio::test]
async fn a_server_refusing_every_token_fails_the_request_without_looping() {
    // Without DPoP the nonce never comes: every authenticated request is refused.
    let world = World::start_with(|c| c.rs_nonce = Some("never-sent".into())).await;
    let oauth = client(&world).build().unwrap();
    let e = initialize(&world, &oauth).await;
    assert!(e.is_err(), "{e:?}");
    assert_eq!(world.authorizations().len(), 1);
    assert_eq!(world.token_requests().len(), 1);
    // The unauthenticated try and one retry with the new token; a nonce challenge is
    // not answered by a client without DPoP.
    let tries = world
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Mcp { .. }))
        .count();
    assert_eq!(tries, 2);
}

#[tokio::test]
async fn scope_falls_back_to_scopes_supported_then_none() {
    let world = World::start_with(|c| c.prm_scopes = Some(vec!["a".into(), "b".into()])).await;
    authorized(&world).await;
    assert_eq!(world.authorizations()[0]["scope"], "a b");

    let world = World::start(Config::default()).await;
    authorized(&world).await;
    assert!(!world.authorizations()[0].contains_key("scope"));
}
