//! `private_key_jwt` client authentication (RFC 7523 assertions).

use super::*;

#[tokio::test]
async fn private_key_jwt_clients_sign_once_per_request() {
    let world = World::start(None).await;
    let key = p256::ecdsa::SigningKey::from_slice(&[31u8; 32]).unwrap();
    let stranger = p256::ecdsa::SigningKey::from_slice(&[32u8; 32]).unwrap();
    world
        .auth
        .register_client(RegisteredClient::private_key_jwt(
            "signer",
            json!({"keys": [public_jwk(&key, Some("k1"))]}),
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
    let asm = world.auth.metadata();
    assert!(
        asm["token_endpoint_auth_methods_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("private_key_jwt"))
    );
    assert_eq!(
        asm["token_endpoint_auth_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let token_url = format!("{}/token", world.issuer);
    let good = |jti: &str| {
        json!({"iss": "signer", "sub": "signer", "aud": token_url, "jti": jti,
            "iat": now(), "exp": now() + 120})
    };
    let grant = |assertion: String| {
        let world = &world;
        async move {
            world
                .exchange(&[
                    ("grant_type", "client_credentials"),
                    ("scope", "mcp:tools"),
                    ("resource", &world.mcp),
                    ("client_assertion_type", ASSERTION_TYPE),
                    ("client_assertion", &assertion),
                ])
                .await
        }
    };

    // A good assertion: a token for the client, usable at the resource server.
    let one = assertion(&key, &good("j1"));
    let (status, _, body) = grant(one.clone()).await;
    assert_eq!(status, 200, "{body}");
    let token = body["access_token"].as_str().unwrap();
    assert_eq!(claims_of(token)["client_id"], "signer");
    let r = world.initialize_as(token).await;
    assert_eq!(r.status(), 200);
    // The issuer as audience is taken too.
    let mut by_issuer = good("j2");
    by_issuer["aud"] = world.issuer.as_str().into();
    assert_eq!(grant(assertion(&key, &by_issuer)).await.0, 200);

    // Each of these is refused as invalid_client: `good(jti)` changed by `change`.
    let changed = |jti: &str, change: fn(&mut Value)| {
        let mut claims = good(jti);
        change(&mut claims);
        assertion(&key, &claims)
    };
    let cases = [
        ("replayed", one),
        (
            "another audience",
            changed("j3", |c| {
                c["aud"] = "https://elsewhere.example/token".into()
            }),
        ),
        (
            "no exp",
            changed("j4", |c| {
                c.as_object_mut().unwrap().remove("exp");
            }),
        ),
        (
            "expired",
            changed("j5", |c| c["exp"] = (now() - 600).into()),
        ),
        (
            "too long-lived",
            changed("j6", |c| c["exp"] = (now() + 3600).into()),
        ),
        // The largest exp there is: refused, never an overflow (it once panicked in
        // builds with overflow checks, before the signature was looked at).
        (
            "exp at u64::MAX",
            changed("j6b", |c| c["exp"] = u64::MAX.into()),
        ),
        (
            "sub is not iss",
            changed("j7", |c| c["sub"] = "someone-else".into()),
        ),
        (
            "no jti",
            changed("j8", |c| {
                c.as_object_mut().unwrap().remove("jti");
            }),
        ),
        ("another key", assertion(&stranger, &good("j9"))),
        (
            "a client of another method",
            changed("j10", |c| {
                c["iss"] = "svc".into();
                c["sub"] = "svc".into();
            }),
        ),
    ];
    for (what, bad) in cases {
        let (status, _, body) = grant(bad).await;
        assert_eq!(
            error_of(status, &body),
            (401, Some("invalid_client")),
            "{what}"
        );
    }
    // The client's bare id, or an unknown assertion type: no authentication.
    let (status, _, _) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("client_id", "signer"),
        ])
        .await;
    assert_eq!(status, 401);
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", "urn:example:other"),
            ("client_assertion", &assertion(&key, &good("j11"))),
        ])
        .await;
    assert_eq!(error_of(status, &body), (400, Some("invalid_request")));
}

#[tokio::test]
async fn registration_takes_private_key_jwt_with_keys_only() {
    let world = World::start(None).await;
    let key = p256::ecdsa::SigningKey::from_slice(&[33u8; 32]).unwrap();
    let jwks = json!({"keys": [public_jwk(&key, Some("k1"))]});
    let r = world
        .register(
            json!({"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks,
            "grant_types": ["client_credentials"], "client_name": "signer"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["token_endpoint_auth_method"], "private_key_jwt");
    assert!(body.get("client_secret").is_none(), "no secret: {body}");
    let client_id = body["client_id"].as_str().unwrap().to_owned();
    let token_url = format!("{}/token", world.issuer);
    let signed = assertion(
        &key,
        &json!({"iss": client_id, "sub": client_id, "aud": token_url, "jti": "r1",
            "exp": now() + 60}),
    );
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("resource", &world.mcp),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", &signed),
        ])
        .await;
    assert_eq!(status, 200, "{body}");

    for bad in [
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt", "jwks": {"keys": []},
            "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks,
            "jwks_uri": "https://app.example/jwks", "grant_types": ["client_credentials"]}),
        // Loopback or private key sets only where private-network documents are allowed.
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": "http://127.0.0.1:9/jwks", "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": "https://10.0.0.1/jwks", "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": "https://localhost/jwks", "grant_types": ["client_credentials"]}),
    ] {
        let r = world.register(bad.clone()).await;
        assert_eq!(r.status(), 400, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "invalid_client_metadata", "{bad}");
    }
}

#[tokio::test]
async fn a_jwks_uri_is_fetched_for_the_assertion() {
    let key = p256::ecdsa::SigningKey::from_slice(&[34u8; 32]).unwrap();
    let (keys_listener, keys_origin) = listener().await;
    let jwks = json!({"keys": [public_jwk(&key, Some("k1"))]});
    serve(
        keys_listener,
        axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let jwks = jwks.clone();
                async move { axum::Json(jwks) }
            }),
        ),
    );
    let (as_listener, issuer) = listener().await;
    let auth = AuthorizationServer::new(
        AuthorizationServerConfig::new(&issuer, "http://127.0.0.1:9/mcp")
            .private_network_documents(true),
        InMemoryStore::new(),
        |_: &Login<'_>| None,
    )
    .unwrap();
    serve(as_listener, auth.router());
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{issuer}/register"))
        .json(&json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": format!("{keys_origin}/jwks"), "grant_types": ["client_credentials"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let client_id = r.json::<Value>().await.unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The token endpoint's status for an assertion by `signer`.
    let status = |signer: &p256::ecdsa::SigningKey, jti: &str| {
        let form = [
            ("grant_type", "client_credentials".to_owned()),
            ("client_assertion_type", ASSERTION_TYPE.to_owned()),
            (
                "client_assertion",
                assertion(
                    signer,
                    &json!({"iss": client_id, "sub": client_id, "aud": issuer,
                        "jti": jti, "exp": now() + 60}),
                ),
            ),
        ];
        let sent = http.post(format!("{issuer}/token")).form(&form).send();
        async move {
            within(LIMIT, "the token endpoint", sent)
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(status(&key, "u1").await, 200);
    let stranger = p256::ecdsa::SigningKey::from_slice(&[35u8; 32]).unwrap();
    assert_eq!(status(&stranger, "u2").await, 401);
}

#[tokio::test]
async fn our_client_authenticates_with_private_key_jwt_end_to_end() {
    let world = World::start(None).await;
    let key = modelctx_oauth::SigningKey::generate().unwrap();
    world
        .auth
        .register_client(RegisteredClient::private_key_jwt(
            "m2m",
            json!({"keys": [key.public_jwk()]}),
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
    let oauth = OAuthClient::builder(&world.mcp)
        .client_credentials()
        .client(modelctx_oauth::ClientRegistration::new("m2m").with_auth_method("private_key_jwt"))
        .client_key(key)
        .build()
        .unwrap();
    let client = world
        .connect(oauth, "m2m", "connected with a client assertion")
        .await;
    assert_eq!(whoami(&client).await, "m2m via m2m [mcp:tools]");
}
