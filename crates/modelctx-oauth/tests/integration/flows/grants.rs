//! Tokens kept to their origin and store, the other grants (client credentials, JWT bearer,
//! enterprise ID-JAG), DPoP-bound requests, the loopback redirect, redacted debug output.

use super::*;

#[tokio::test]
async fn file_store_keeps_credentials_between_clients() {
    let dir = std::env::temp_dir().join(format!("modelctx-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store-test.json");
    let _ = std::fs::remove_file(&path);
    let world = World::start(Config::default()).await;
    let first = client(&world)
        .store(FileCredentialStore::new(&path))
        .build()
        .unwrap();
    assert!(rejected(&first, 401, &world.challenge(None)).await);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A second client (another run) finds the token: no new authorization.
    let second = client(&world)
        .store(FileCredentialStore::new(&path))
        .build()
        .unwrap();
    assert!(rejected(&second, 401, &world.challenge(None)).await);
    assert_sends(&second, &world.server, "Bearer at-2").await;
    assert_eq!(world.authorizations().len(), 1);
    // A corrupt file is an error, not a panic.
    std::fs::write(&path, "{not json").unwrap();
    let store = FileCredentialStore::new(&path);
    let e = store
        .load(&CredentialKey::new(&world.issuer, &world.server))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn migration_to_another_authorization_server_registers_anew() {
    let world = World::start(Config::default()).await;
    let other = World::start(Config::default()).await;
    *other.shared.counter.lock().unwrap() = 100;
    let store = Arc::new(InMemoryCredentialStore::new());
    let oauth = client(&world).store(store.clone()).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    headers_for(&oauth, &world.server).await.unwrap();
    headers_for(&oauth, &world.server).await.unwrap();
    // The resource now names the other authorization server.
    let new_issuer = other.issuer.clone();
    world.set(|c| c.prm_issuer = Some(new_issuer));
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(other.registrations().len(), 1);
    let q = &other.authorizations()[0];
    assert_eq!(q["client_id"], "client-101");
    assert_eq!(other.token_requests()[0].0["client_id"], "client-101");
    assert_eq!(world.registrations().len(), 1);
    // What was bound to the old server is gone.
    let old = CredentialKey::new(&world.issuer, &world.server);
    assert!(store.load(&old).await.unwrap().is_none());
    let new = CredentialKey::new(&other.issuer, &world.server);
    assert!(store.load(&new).await.unwrap().unwrap().tokens.is_some());
}

#[tokio::test]
async fn client_credentials_with_private_key_jwt() {
    let world = World::start_with(|c| c.auth_methods = vec!["private_key_jwt".into()]).await;
    let (oauth, key) = modelctx_test::private_key_jwt_client(&world.server);
    assert!(rejected(&oauth, 401, &world.challenge(Some("jobs"))).await);
    let (form, _, _) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["scope"], "jobs");
    assert_eq!(form["resource"], world.server);
    assert_client_assertion(form, &key.public_jwk(), "m2m", &world.issuer);
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn jwt_bearer_grant_with_the_application_assertion() {
    let world = World::start(Config::default()).await;
    let seen = Arc::new(Mutex::new(None));
    let record = seen.clone();
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(move |request: modelctx_oauth::AssertionRequest| {
            *record.lock().unwrap() = Some((request.issuer.clone(), request.resource.clone()));
            async move { Ok("workload.jwt".to_owned()) }
        })
        .client(ClientRegistration::new("workload"))
        .build()
        .unwrap();
    // The test AS does not know the grant: its error surfaces, with the code.
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::TokenEndpoint);
    assert_eq!(e.oauth_error(), Some("unsupported_grant_type"));
    let (form, _, _) = &world.token_requests()[0];
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(form["assertion"], "workload.jwt");
    assert_eq!(form["client_id"], "workload");
    assert_eq!(
        *seen.lock().unwrap(),
        Some((world.issuer.clone(), world.server.clone()))
    );
    // Not retried.
    assert_eq!(world.token_requests().len(), 1);
}

#[tokio::test]
async fn enterprise_id_jag_by_token_exchange_then_jwt_bearer() {
    let world = World::start_with(|c| c.auth_methods = vec!["client_secret_basic".into()]).await;
    // The MCP client, which exchanges `id_token` at the test IdP as `at_idp`.
    let enterprise_client = |at_idp: ClientRegistration, id_token: &str| {
        let idp =
            IdJagExchange::new(&format!("{}/idp/token", world.issuer), at_idp, id_token).unwrap();
        OAuthClient::builder(&world.server)
            .jwt_bearer(idp)
            .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
            .build()
            .unwrap()
    };
    let oauth = enterprise_client(
        ClientRegistration::new("idp-client").with_secret("idp-secret"),
        "user-id-token",
    );
    assert!(rejected(&oauth, 401, &world.challenge(Some("files"))).await);
    let exchange = world
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::Exchange(form, authorization) => Some((form, authorization)),
            _ => None,
        })
        .expect("a token exchange at the IdP");
    let (form, authorization) = exchange;
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(
        form["requested_token_type"],
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(
        form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(form["audience"], world.issuer);
    assert_eq!(form["resource"], world.server);
    assert_eq!(form["scope"], "files");
    let basic = base64::engine::general_purpose::STANDARD.encode("idp-client:idp-secret");
    assert_eq!(authorization, Some(format!("Basic {basic}")));
    // The ID-JAG is the assertion of the grant at the authorization server.
    let (form, authorization, _) = &world.token_requests()[0];
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(form["assertion"], "id-jag-1");
    let basic = base64::engine::general_purpose::STANDARD.encode("mcp-client:mcp-secret");
    assert_eq!(
        authorization.as_deref(),
        Some(format!("Basic {basic}").as_str())
    );
    assert!(authorization_to(&oauth, &world.server).await.is_some());

    // An IdP refusal surfaces with its code.
    let oauth = enterprise_client(ClientRegistration::new("idp-client"), "expired-id-token");
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.oauth_error(), Some("invalid_grant"));
}

#[tokio::test]
async fn dpop_binds_token_and_resource_requests() {
    let world = World::start_with(|c| c.dpop_algs = Some(vec!["ES256".into()])).await;
    let oauth = client(&world).dpop(true).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    let (_, _, proof) = &world.token_requests()[0];
    let proof = proof.clone().expect("a DPoP proof at the token endpoint");
    let header = jwt_part(&proof, 0);
    assert_eq!(header["typ"], "dpop+jwt");
    let claims = verify_es256(&proof, &header["jwk"]);
    assert_eq!(claims["htm"], "POST");
    assert_eq!(claims["htu"], format!("{}/token", world.issuer));

    let h = tokio::time::timeout(LIMIT, oauth.headers_for(&Method::GET, &world.server))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bearer(&h).as_deref(), Some("DPoP at-2"));
    let proof = h["dpop"].to_str().unwrap();
    let claims = verify_es256(proof, &jwt_part(proof, 0)["jwk"]);
    assert_eq!(claims["htm"], "GET");
    assert_eq!(claims["htu"], world.server);
    let ath =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b"at-2"));
    assert_eq!(claims["ath"], ath);

    // A nonce challenge: retried once with the nonce, not twice for the same one.
    let mut challenge = HeaderMap::new();
    challenge.insert(
        header::WWW_AUTHENTICATE,
        r#"DPoP error="use_dpop_nonce""#.parse().unwrap(),
    );
    challenge.insert("dpop-nonce", "n-1".parse().unwrap());
    assert!(rejected(&oauth, 401, &challenge).await);
    let h = headers_for(&oauth, &world.server).await.unwrap();
    let proof = h["dpop"].to_str().unwrap();
    assert_eq!(jwt_part(proof, 1)["nonce"], "n-1");
    assert!(!rejected(&oauth, 401, &challenge).await);
}

#[tokio::test]
async fn loopback_redirect_receives_the_callback() {
    let world = World::start(Config::default()).await;
    let (tx, rx) = tokio::sync::oneshot::channel::<String>();
    let tx = Mutex::new(Some(tx));
    let handler = LoopbackRedirect::bind(0)
        .await
        .unwrap()
        .timeout(LIMIT)
        .on_url(move |url| {
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(url.to_owned());
            }
        });
    let redirect_uri = handler.redirect_uri();
    assert!(redirect_uri.starts_with("http://127.0.0.1:"));
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(handler)
        .build()
        .unwrap();
    // The "user": opens the URL shown and follows the redirects to the listener.
    tokio::spawn(async move {
        let url = rx.await.unwrap();
        let _ = reqwest::get(url).await;
    });
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(world.authorizations()[0]["redirect_uri"], redirect_uri);
    assert_eq!(world.token_requests()[0].0["redirect_uri"], redirect_uri);
    assert!(authorization_to(&oauth, &world.server).await.is_some());
}

#[tokio::test]
async fn debug_output_hides_tokens_and_secrets() {
    let registration = ClientRegistration::new("id").with_secret("top-secret");
    assert!(!format!("{registration:?}").contains("top-secret"));
    let tokens: TokenSet = serde_json::from_value(json!({
        "access_token": "access-secret",
        "token_type": "Bearer",
        "refresh_token": "refresh-secret",
    }))
    .unwrap();
    let shown = format!("{tokens:?}");
    assert!(!shown.contains("access-secret") && !shown.contains("refresh-secret"));
    let response = AuthorizationResponse::from_query("code=the-code&state=s");
    assert!(!format!("{response:?}").contains("the-code"));
}
