//! Sessions bound to their caller, keys of other identity providers, and client ID
//! metadata documents.

use super::*;

#[tokio::test]
async fn a_session_answers_only_the_caller_that_opened_it() {
    let world = World::start(None).await;
    let mine = world.service_token(&world.mcp, "mcp:tools").await;
    world.register_confidential("other").await;
    let theirs = granted(world.client_credentials("other", &[("scope", "mcp:tools")])).await;
    let r = world.initialize_as(&mine).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let tools_list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let list = |token: &str| {
        world
            .post_in(&session, &format!("Bearer {token}"), &tools_list)
            .send()
    };
    // Another caller with a valid token and the leaked session id: no such session.
    assert_eq!(list(&theirs).await.unwrap().status(), 404);
    assert_eq!(list(&mine).await.unwrap().status(), 200);
}

#[tokio::test]
async fn rs256_tokens_of_an_identity_provider_verify_too() {
    use rsa::pkcs8::DecodePrivateKey as _;
    use rsa::signature::{SignatureEncoding as _, Signer as _};
    use rsa::traits::PublicKeyParts as _;
    // A throwaway key made for this test.
    let private =
        rsa::RsaPrivateKey::from_pkcs8_pem(include_str!("../keys/rs256-test.pem")).unwrap();
    let public = private.to_public_key();
    let jwks = json!({"keys": [{"kty": "RSA", "kid": "r1", "alg": "RS256", "use": "sig",
        "n": URL_SAFE_NO_PAD.encode(public.n().to_bytes_be()),
        "e": URL_SAFE_NO_PAD.encode(public.e().to_bytes_be())}]});
    let signer = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(private);
    let sign = |alg: &str, claims: &Value| {
        let header = json!({"alg": alg, "typ": "JWT", "kid": "r1"});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = signer.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
    };
    let verifier = JwtVerifier::with_jwks("https://idp.example", &jwks).unwrap();
    let claims = json!({"iss": "https://idp.example", "sub": "carol", "aud": "https://mcp.example/mcp",
        "exp": now() + 300, "scp": ["a", "b"], "azp": "app"});
    let info = verifier.verify(&sign("RS256", &claims)).await.unwrap();
    assert_eq!(info.subject.as_deref(), Some("carol"));
    assert_eq!(info.client_id.as_deref(), Some("app"));
    assert!(info.has_scopes(["a", "b"]));
    // The same RSA signature under another algorithm's name is refused, and so is a
    // token for another issuer.
    for alg in ["ES256", "RS512"] {
        let e = verifier.verify(&sign(alg, &claims)).await.unwrap_err();
        assert!(e.is_invalid(), "{alg}");
    }
    let mut other = claims.clone();
    other["iss"] = "https://evil.example".into();
    assert!(verifier.verify(&sign("RS256", &other)).await.is_err());
}

#[tokio::test]
async fn an_unreachable_key_set_is_a_503_not_a_refused_token() {
    // Nothing listens on port 9: the JWKS cannot be fetched.
    let world = World::start(Some(Box::new(|issuer: &str| {
        Box::new(JwtVerifier::new(issuer, "http://127.0.0.1:9/jwks"))
    })))
    .await;
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world.initialize_as(&token).await;
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("www-authenticate").is_none());
    // A malformed token is still refused as such, without asking for keys.
    let r = world.initialize(&world.mcp, Some("Bearer abc")).await;
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn a_client_id_metadata_document_stands_in_for_registration() {
    // The document, served on its own loopback origin.
    let (l, origin) = listener().await;
    let doc_url = format!("{origin}/client.json");
    let liar_url = format!("{origin}/liar.json");
    let doc = doc_url.clone();
    serve(
        l,
        axum::Router::new()
            .route(
                "/client.json",
                axum::routing::get(move || {
                    let doc = json!({"client_id": doc, "client_name": "Doc App",
                        "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
                    async move { axum::Json(doc) }
                }),
            )
            .route(
                "/liar.json",
                axum::routing::get(|| async {
                    axum::Json(json!({"client_id": "https://someone.else/c.json",
                        "redirect_uris": [REDIRECT]}))
                }),
            ),
    );
    let (as_listener, issuer) = listener().await;
    let mcp = "http://127.0.0.1:1/mcp";
    let config = AuthorizationServerConfig::new(&issuer, mcp)
        .scopes_supported(["mcp:tools"])
        .private_network_documents(true);
    let auth = AuthorizationServer::new(config, InMemoryStore::new(), |l: &Login<'_>| {
        Some(l.username.to_owned())
    })
    .unwrap();
    assert_eq!(
        auth.metadata()["client_id_metadata_document_supported"],
        true
    );
    serve(as_listener, auth.router());
    let http = no_redirects();
    let (verifier, challenge) = pkce();
    let authorize = |client_id: &str, redirect: &str| {
        let mut url = url::Url::parse(&format!("{issuer}/authorize")).unwrap();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", "s");
        url.to_string()
    };
    let page = page(&http, &authorize(&doc_url, REDIRECT)).await;
    assert!(page.contains("Doc App"), "{page}");
    let location = consent(&http, &authorize(&doc_url, REDIRECT), "any").await;
    let code = query_param(&location, "code").unwrap();
    let answer = http
        .post(format!("{issuer}/token"))
        .form(&[
            ("grant_type", "authorization_code"),
            ("client_id", doc_url.as_str()),
            ("code", code.as_str()),
            ("code_verifier", verifier.as_str()),
            ("redirect_uri", REDIRECT),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    // A redirect URI the document does not list, a document naming another client.
    for (client, redirect) in [
        (doc_url.as_str(), "http://127.0.0.1:9/elsewhere"),
        (liar_url.as_str(), REDIRECT),
    ] {
        let r = http.get(authorize(client, redirect)).send().await.unwrap();
        assert_eq!(r.status(), 400, "{client} {redirect}");
        assert!(r.headers().get("location").is_none());
    }

    // By default the server fetches from the public internet only: a loopback
    // document URL is just an unknown client.
    let (l2, issuer2) = listener().await;
    let guarded = AuthorizationServer::new(
        AuthorizationServerConfig::new(&issuer2, mcp),
        InMemoryStore::new(),
        |l: &Login<'_>| Some(l.username.to_owned()),
    )
    .unwrap();
    serve(l2, guarded.router());
    let r = http
        .get(authorize(&doc_url, REDIRECT).replace(&issuer, &issuer2))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("not registered"));
}
