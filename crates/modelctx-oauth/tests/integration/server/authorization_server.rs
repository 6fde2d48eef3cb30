//! The authorization server, request by request.

use super::*;

#[tokio::test]
async fn codes_are_single_use_verifier_bound_and_redirect_bound() {
    let world = World::start(None).await;
    let client_id = world.public_client().await;
    let (verifier, challenge) = pkce();

    let code = world.code(&client_id, &challenge).await;
    let form = |code: &str, verifier: &str, redirect: &str| {
        vec![
            ("grant_type", "authorization_code".to_owned()),
            ("client_id", client_id.clone()),
            ("code", code.to_owned()),
            ("code_verifier", verifier.to_owned()),
            ("redirect_uri", redirect.to_owned()),
        ]
    };
    let send = |f: Vec<(&'static str, String)>| {
        let world = &world;
        async move {
            let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
            world.exchange(&pairs).await
        }
    };
    let good = form(&code, &verifier, REDIRECT);
    let (status, headers, body) = send(good.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["pragma"], "no-cache");
    assert_eq!(body["token_type"], "Bearer");
    let access = body["access_token"].as_str().unwrap().to_owned();
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    // The token works at the resource server (audience = the MCP endpoint).
    let r = world.initialize_as(&access).await;
    assert_eq!(r.status(), 200);

    // Replayed code.
    let (status, headers, body) = send(good).await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["pragma"], "no-cache");

    // Wrong verifier (and the code is spent by the attempt).
    let code = world.code(&client_id, &challenge).await;
    let wrong = URL_SAFE_NO_PAD.encode([1u8; 32]);
    let (status, _, body) = send(form(&code, &wrong, REDIRECT)).await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));
    let (status, _, _) = send(form(&code, &verifier, REDIRECT)).await;
    assert_eq!(status, 400);

    // Redirect URI differing from the authorization request's.
    let code = world.code(&client_id, &challenge).await;
    let (status, _, body) = send(form(&code, &verifier, "http://127.0.0.1:9/other")).await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));

    // Refresh tokens rotate: the new one works, the old one is spent.
    let refresh_form = |token: &str| {
        vec![
            ("grant_type", "refresh_token".to_owned()),
            ("client_id", client_id.clone()),
            ("refresh_token", token.to_owned()),
        ]
    };
    // The first code was presented twice: what it gave is revoked.
    let (status, _, body) = send(refresh_form(&refresh)).await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));

    let code = world.code(&client_id, &challenge).await;
    let (status, _, body) = send(form(&code, &verifier, REDIRECT)).await;
    assert_eq!(status, 200, "{body}");
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let (status, _, body) = send(refresh_form(&refresh)).await;
    assert_eq!(status, 200, "{body}");
    let rotated = body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(rotated, refresh);
    let (status, _, body) = send(refresh_form(&rotated)).await;
    assert_eq!(status, 200, "{body}");
    let newest = body["refresh_token"].as_str().unwrap().to_owned();
    // A spent refresh token presented again: refused, and its family with it.
    let (status, _, body) = send(refresh_form(&refresh)).await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));
    let (status, _, body) = send(refresh_form(&newest)).await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));
}

#[tokio::test]
async fn authorize_refuses_without_pkce_and_never_redirects_to_unregistered_uris() {
    let world = World::start(None).await;
    let client_id = world.public_client().await;
    let (_, challenge) = pkce();

    // An unregistered redirect URI: an error page, no redirect.
    let url = world.authorize_url(
        &client_id,
        &[
            ("redirect_uri", "http://127.0.0.1:9/evil"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    );
    let r = world.http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.headers().get("location").is_none());

    // No PKCE: invalid_request, back at the (registered) redirect URI with state and iss.
    for extra in [
        vec![("redirect_uri", REDIRECT)],
        vec![
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
        ],
        vec![
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "plain"),
        ],
    ] {
        let r = world
            .http
            .get(world.authorize_url(&client_id, &extra))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 302);
        let location = r.headers()["location"].to_str().unwrap();
        assert!(location.starts_with(REDIRECT));
        assert_eq!(
            query_param(location, "error").as_deref(),
            Some("invalid_request")
        );
        assert_eq!(query_param(location, "state").as_deref(), Some("st-1"));
        assert_eq!(
            query_param(location, "iss").as_deref(),
            Some(world.issuer.as_str())
        );
    }

    // A failed login shows the page again; deny sends access_denied back.
    let url = world.authorize_url(
        &client_id,
        &[
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    );
    let page = page(&world.http, &url).await;
    let txn = field(&page, "txn");
    let post = |decision: &'static str, password: &'static str| {
        world
            .http
            .post(format!("{}/authorize", world.issuer))
            .form(&[
                ("txn", txn.as_str()),
                ("username", "alice"),
                ("password", password),
                ("decision", decision),
            ])
            .send()
    };
    let again = post("approve", "guess").await.unwrap();
    assert_eq!(again.status(), 200);
    assert!(again.text().await.unwrap().contains("The login failed"));
    let denied = post("deny", "").await.unwrap();
    assert_eq!(denied.status(), 302);
    let location = denied.headers()["location"].to_str().unwrap();
    assert_eq!(
        query_param(location, "error").as_deref(),
        Some("access_denied")
    );
    // The request is answered: the form cannot be replayed.
    assert_eq!(post("approve", "wonderland").await.unwrap().status(), 400);
}

#[tokio::test]
async fn registration_checks_redirect_uris_and_echoes_the_metadata() {
    let world = World::start(None).await;
    for bad in [
        "http://example.com/callback",
        "javascript:alert(1)",
        "https://example.com/cb#frag",
        "not a url",
    ] {
        let r = world.register(json!({"redirect_uris": [bad]})).await;
        assert_eq!(r.status(), 400, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "invalid_redirect_uri", "{bad}");
    }
    let r = world.register(json!({"redirect_uris": "https://x"})).await;
    assert_eq!(r.status(), 400);
    let r = world
        .register(json!({"redirect_uris": ["https://app.example/cb"], "grant_types": ["password"]}))
        .await;
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "invalid_client_metadata"
    );

    let r = world
        .register(json!({
            "redirect_uris": ["https://app.example/cb", "http://localhost:8080/cb", "http://[::1]/cb"],
            "client_name": "Native", "application_type": "native",
            "software_id": "abc", "scope": "mcp:tools"}))
        .await;
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["application_type"], "native");
    assert_eq!(body["client_name"], "Native");
    assert_eq!(body["software_id"], "abc");
    assert_eq!(body["scope"], "mcp:tools");
    assert_eq!(body["token_endpoint_auth_method"], "client_secret_basic");
    assert_eq!(body["grant_types"], json!(["authorization_code"]));
    assert!(
        body["client_secret"]
            .as_str()
            .is_some_and(|s| s.len() >= 43)
    );
    assert_eq!(body["client_secret_expires_at"], 0);
    assert!(body["client_id_issued_at"].as_u64().is_some());

    // A public client gets no secret; a body that is not JSON is an error body too.
    let r = world
        .register(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}))
        .await;
    let body: Value = r.json().await.unwrap();
    assert!(body.get("client_secret").is_none());
    assert!(
        body.get("application_type").is_none(),
        "no default substituted"
    );
    let r = world
        .http
        .post(format!("{}/register", world.issuer))
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "invalid_client_metadata"
    );
}

#[tokio::test]
async fn client_credentials_need_the_secret_and_revoked_refresh_tokens_stop() {
    let world = World::start(None).await;
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world.initialize_as(&token).await;
    assert_eq!(r.status(), 200);
    let bad = world
        .http
        .post(format!("{}/token", world.issuer))
        .basic_auth("svc", Some("wrong"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 401);
    assert_eq!(bad.headers()["pragma"], "no-cache");
    assert_eq!(
        bad.json::<Value>().await.unwrap()["error"],
        "invalid_client"
    );
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("client_id", "svc"),
            ("client_secret", "svc-secret"),
            ("resource", "https://unknown.example/mcp"),
        ])
        .await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_target")));

    // Revocation of a refresh token.
    let client_id = world.public_client().await;
    let (verifier, challenge) = pkce();
    let code = world.code(&client_id, &challenge).await;
    let (_, _, body) = world
        .exchange(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client_id),
            ("code", &code),
            ("code_verifier", &verifier),
            ("redirect_uri", REDIRECT),
        ])
        .await;
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let r = world
        .http
        .post(format!("{}/revoke", world.issuer))
        .form(&[
            ("client_id", client_id.as_str()),
            ("token", refresh.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            ("refresh_token", &refresh),
        ])
        .await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));
}
