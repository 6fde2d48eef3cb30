//! Codes bound to a DPoP key by `dpop_jkt` (RFC 9449 §10).

use super::*;

#[tokio::test]
async fn a_code_bound_by_dpop_jkt_goes_only_to_that_key() {
    let world = World::start(None).await;
    let client_id = world.public_client().await;
    let (verifier, challenge) = pkce();
    let key = p256::ecdsa::SigningKey::from_slice(&[21u8; 32]).unwrap();
    let other = p256::ecdsa::SigningKey::from_slice(&[22u8; 32]).unwrap();
    let jkt = thumbprint(&key);

    // Not a thumbprint: refused at the authorization request, back to the client.
    let url = world.authorize_url(
        &client_id,
        &[
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("dpop_jkt", "not-a-thumbprint"),
        ],
    );
    let r = world.http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 302);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        query_param(&location, "error").as_deref(),
        Some("invalid_request")
    );

    // Without a proof, or with another key's: refused, and the code is spent.
    for wrong in [None, Some(&other)] {
        let code = world.bound_code(&client_id, &challenge, &jkt).await;
        let (status, body) = world
            .exchange_with_proof(&client_id, &code, &verifier, wrong)
            .await;
        assert_eq!(error_of(status, &body), (400, Some("invalid_dpop_proof")));
        let (status, body) = world
            .exchange_with_proof(&client_id, &code, &verifier, Some(&key))
            .await;
        assert_eq!(error_of(status, &body), (400, Some("invalid_grant")));
    }

    // With a proof by the bound key: a DPoP token bound to it.
    let code = world.bound_code(&client_id, &challenge, &jkt).await;
    let (status, body) = world
        .exchange_with_proof(&client_id, &code, &verifier, Some(&key))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token_type"], "DPoP");
    let access = body["access_token"].as_str().unwrap();
    assert_eq!(claims_of(access)["cnf"]["jkt"], jkt.as_str());
}

#[tokio::test]
async fn our_dpop_client_binds_the_code_to_its_key() {
    let world = World::start(None).await;
    let user = User::alice();
    let tokens = dpop_tokens(&world, user.clone(), "e2e-dpop-jkt").await;
    let urls = user.urls.lock().unwrap().clone();
    assert_eq!(urls.len(), 1);
    let sent = query_param(&urls[0], "dpop_jkt").expect("dpop_jkt on the authorization URL");
    assert_eq!(claims_of(&tokens.access_token)["cnf"]["jkt"], sent.as_str());

    // Without DPoP, no dpop_jkt.
    let plain_user = User::alice();
    let plain = our_client(&world, plain_user.clone(), "e2e-plain")
        .build()
        .unwrap();
    let client = world.connect(plain, "e2e", "connected").await;
    whoami(&client).await;
    let urls = plain_user.urls.lock().unwrap().clone();
    assert!(query_param(&urls[0], "dpop_jkt").is_none());
}
