//! Our client against both servers end to end, the metadata documents, the resource
//! server's challenges and its token verifiers.

use super::*;

#[tokio::test]
async fn our_client_authorizes_calls_a_tool_and_steps_up() {
    let world = World::start(None).await;
    let user = User::alice();
    let oauth = our_client(&world, user.clone(), "e2e").build().unwrap();
    let client = world
        .connect(oauth.clone(), "e2e", "connected through OAuth")
        .await;

    // Discovery, dynamic registration, consent, token: the handler sees the caller.
    let text = whoami(&client).await;
    assert!(text.starts_with("alice via "), "{text}");
    assert!(text.ends_with("[mcp:tools]"), "{text}");
    assert_eq!(user.consents.load(Ordering::SeqCst), 1);
    assert_eq!(user.scopes_asked.lock().unwrap()[0], "mcp:tools");

    // `admin` needs mcp:admin: 403 insufficient_scope, the client asks again with the
    // union of scopes, and the call goes through.
    let admin = within(LIMIT, "admin", client.call_tool("admin", JsonObject::new()))
        .await
        .unwrap();
    assert_eq!(text_of(&admin), "admin done");
    assert_eq!(user.consents.load(Ordering::SeqCst), 2);
    let second = user.scopes_asked.lock().unwrap()[1].clone();
    let mut asked: Vec<&str> = second.split(' ').collect();
    asked.sort_unstable();
    assert_eq!(asked, ["mcp:admin", "mcp:tools"]);
    let who = whoami(&client).await;
    assert!(who.ends_with("[mcp:admin mcp:tools]"));
    let tokens = oauth.tokens().await.expect("tokens kept");
    assert!(tokens.refresh_token.is_some(), "a refresh token came too");
}

#[tokio::test]
async fn metadata_documents_describe_both_servers() {
    let world = World::start(None).await;
    let origin = world.mcp.trim_end_matches("/mcp");
    let prm_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(world.rs.metadata_url(), prm_url);
    let prm = json_answer(world.http.get(&prm_url)).await;
    assert_eq!(prm["resource"], world.mcp.as_str());
    assert_eq!(prm["authorization_servers"], json!([world.issuer]));
    assert_eq!(prm["scopes_supported"], json!(["mcp:tools", "mcp:admin"]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    assert_eq!(prm["resource_name"], "protected test server");

    let asm_url = format!("{}/.well-known/oauth-authorization-server", world.issuer);
    let asm = json_answer(world.http.get(asm_url)).await;
    assert_eq!(asm["issuer"], world.issuer.as_str());
    for endpoint in [
        "authorization",
        "token",
        "registration",
        "revocation",
        "introspection",
    ] {
        let url = asm[format!("{endpoint}_endpoint")].as_str().unwrap();
        assert!(url.starts_with(&world.issuer), "{endpoint}: {url}");
    }
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["authorization_response_iss_parameter_supported"], true);
    assert_eq!(asm["jwks_uri"], format!("{}/jwks", world.issuer));
}

#[tokio::test]
async fn requests_without_a_good_token_are_challenged() {
    let world = World::start(None).await;
    let prm = world.rs.metadata_url().to_owned();

    // No token: 401, where the metadata is, no error code.
    let r = world.initialize(&world.mcp, None).await;
    assert_eq!(r.status(), 401);
    let c = challenge(&r);
    assert!(c.starts_with("Bearer "), "{c}");
    assert!(c.contains(&format!("resource_metadata=\"{prm}\"")), "{c}");
    assert!(c.contains("scope=\"mcp:tools\""), "{c}");
    assert!(!c.contains("error="), "{c}");

    // A good token in the query string is ignored: still unauthenticated.
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world
        .initialize(&format!("{}?access_token={token}", world.mcp), None)
        .await;
    assert_eq!(r.status(), 401);
    assert!(!challenge(&r).contains("error="));
    // The same token in the header is accepted.
    let r = world.initialize_as(&token).await;
    assert_eq!(r.status(), 200);

    // Malformed: not a JWT, bad characters, two tokens.
    for bad in ["Bearer not-a-jwt", "Bearer a b", "Bearer", "Bearer x.y.z"] {
        let r = world.initialize(&world.mcp, Some(bad)).await;
        assert_eq!(r.status(), 401, "{bad}");
        let c = challenge(&r);
        assert!(c.contains("error=\"invalid_token\""), "{bad}: {c}");
        assert!(c.contains(&format!("resource_metadata=\"{prm}\"")), "{c}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "invalid_token");
    }

    // A token of this issuer for another resource: refused on audience.
    let elsewhere = world.service_token(&world.other, "mcp:tools").await;
    let c = world.challenge_to(&elsewhere, 401).await;
    assert!(c.contains("error=\"invalid_token\""), "{c}");
    assert!(c.contains("audience"), "{c}");
    // Nothing about the token is echoed.
    assert!(!c.contains(&elsewhere));

    // Valid token without the scope every request needs: 403.
    let weak = world.service_token(&world.mcp, "").await;
    let c = world.challenge_to(&weak, 403).await;
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"mcp:tools\""), "{c}");
    assert!(c.contains(&format!("resource_metadata=\"{prm}\"")), "{c}");
}

#[tokio::test]
async fn a_tool_scope_is_a_403_with_the_scopes_needed() {
    let world = World::start(None).await;
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let bearer = format!("Bearer {token}");
    let r = world.initialize_as(&token).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let call = |name: &str| {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": {}}});
        world.post_in(&session, &bearer, &call).send()
    };
    let r = within(LIMIT, "admin", call("admin")).await.unwrap();
    assert_eq!(r.status(), 403);
    let c = challenge(&r);
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"mcp:admin mcp:tools\""), "{c}");
    let r = within(LIMIT, "whoami", call("whoami")).await.unwrap();
    assert_eq!(r.status(), 200);

    // A body larger than the resource server reads to find the operation: 413.
    let big = world
        .post(&bearer)
        .body(vec![b' '; 65 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
}

#[tokio::test]
async fn the_jwt_verifier_checks_lifetime_issuer_and_signature() {
    let key = p256::ecdsa::SigningKey::from_slice(&[3u8; 32]).unwrap();
    let stranger = p256::ecdsa::SigningKey::from_slice(&[4u8; 32]).unwrap();
    let jwks = json!({"keys": [public_jwk(&key, Some("k1"))]});
    let verifier = JwtVerifier::with_jwks("https://as.example", &jwks).unwrap();
    let claims = |over: Value| {
        let mut c = json!({"iss": "https://as.example", "sub": "bob", "aud": "https://mcp.example/mcp",
            "exp": now() + 300, "scope": "a b"});
        for (k, v) in over.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let good = verifier
        .verify(&signed(&key, "k1", &claims(json!({}))))
        .await
        .unwrap();
    assert_eq!(good.subject.as_deref(), Some("bob"));
    assert!(good.has_scopes(["a", "b"]));
    assert_eq!(good.audience, ["https://mcp.example/mcp"]);

    let refused = [
        (
            "expired",
            signed(&key, "k1", &claims(json!({"exp": now() - 120}))),
        ),
        ("no exp", {
            let mut c = claims(json!({}));
            c.as_object_mut().unwrap().remove("exp");
            signed(&key, "k1", &c)
        }),
        (
            "not yet",
            signed(&key, "k1", &claims(json!({"nbf": now() + 600}))),
        ),
        (
            "issuer",
            signed(&key, "k1", &claims(json!({"iss": "https://evil.example"}))),
        ),
        ("stranger", signed(&stranger, "k1", &claims(json!({})))),
        ("unknown kid", signed(&key, "k2", &claims(json!({})))),
    ];
    for (what, token) in refused {
        let e = verifier.verify(&token).await.expect_err(what);
        assert!(e.is_invalid(), "{what}");
    }
    // Within the leeway an expired token still counts (clock skew).
    let skewed = signed(&key, "k1", &claims(json!({"exp": now() - 10})));
    assert!(verifier.verify(&skewed).await.is_ok());
    // alg "none" with the signature stripped.
    let good_token = signed(&key, "k1", &claims(json!({})));
    let mut parts = good_token.split('.');
    let (_, body) = (parts.next(), parts.next().unwrap());
    let none = format!("{}.{body}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#));
    assert!(verifier.verify(&none).await.unwrap_err().is_invalid());
}

#[tokio::test]
async fn the_jwks_is_fetched_again_for_an_unknown_key_id() {
    let old = p256::ecdsa::SigningKey::from_slice(&[5u8; 32]).unwrap();
    let new = p256::ecdsa::SigningKey::from_slice(&[6u8; 32]).unwrap();
    let jwks = Arc::new(Mutex::new(json!({"keys": [public_jwk(&old, Some("old"))]})));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (l, origin) = listener().await;
    let served = jwks.clone();
    let counted = fetches.clone();
    serve(
        l,
        axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let doc = served.lock().unwrap().clone();
                async move { axum::Json(doc) }
            }),
        ),
    );
    let verifier = JwtVerifier::new("https://as.example", format!("{origin}/jwks"))
        .min_refresh_interval(Duration::ZERO);
    let claims = json!({"iss": "https://as.example", "sub": "s", "aud": "x", "exp": now() + 60});
    verifier
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap();
    verifier
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "cached");
    // The authorization server rotates its key.
    *jwks.lock().unwrap() =
        json!({"keys": [public_jwk(&old, Some("old")), public_jwk(&new, Some("new"))]});
    verifier
        .verify(&signed(&new, "new", &claims))
        .await
        .unwrap();
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        2,
        "fetched again for the new kid"
    );

    // With the default interval, made-up key ids do not cause a fetch each.
    let verifier = JwtVerifier::new("https://as.example", format!("{origin}/jwks"));
    verifier
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap();
    for _ in 0..3 {
        assert!(
            verifier
                .verify(&signed(&old, "nope", &claims))
                .await
                .is_err()
        );
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 3);

    // No JWKS reachable and no key known: 503-worthy, not "invalid".
    let down = JwtVerifier::new("https://as.example", "http://127.0.0.1:9/jwks");
    let e = down
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap_err();
    assert!(e.is_unavailable(), "{e}");
}

#[tokio::test]
async fn introspection_verifies_opaque_tokens_with_the_audience_checked() {
    let world = World::start(Some(Box::new(|issuer: &str| {
        Box::new(
            IntrospectionVerifier::new(format!("{issuer}/introspect"), "rs", "rs-secret")
                .issuer(issuer),
        )
    })))
    .await;
    world.register_confidential("rs").await;
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world.initialize_as(&token).await;
    assert_eq!(r.status(), 200);
    let elsewhere = world.service_token(&world.other, "mcp:tools").await;
    assert!(
        world
            .challenge_to(&elsewhere, 401)
            .await
            .contains("invalid_token")
    );
    let r = world
        .initialize(&world.mcp, Some("Bearer forged.token.here"))
        .await;
    assert_eq!(r.status(), 401);
}
