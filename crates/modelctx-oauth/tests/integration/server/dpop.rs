//! DPoP-bound tokens (RFC 9449): our client gets and uses them, and a proof fits one
//! request once.

use super::*;

#[tokio::test]
async fn our_client_gets_and_uses_dpop_bound_tokens() {
    let world = World::start(None).await;
    let tokens = dpop_tokens(&world, User::alice(), "e2e-dpop").await;
    // Stolen, the bound token is of no use as a bearer token, nor with a proof by
    // another key.
    let c = world.challenge_to(&tokens.access_token, 401).await;
    assert!(c.contains("invalid_token"), "{c}");
    let thief = p256::ecdsa::SigningKey::from_slice(&[12u8; 32]).unwrap();
    let r = world
        .post(&format!("DPoP {}", tokens.access_token))
        .header(
            "dpop",
            dpop_proof(&thief, "POST", &world.mcp, Some(&tokens.access_token)),
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let c = challenge(&r);
    assert!(c.starts_with("DPoP "), "{c}");
    assert!(c.contains("invalid_dpop_proof"), "{c}");
}

#[tokio::test]
async fn a_dpop_proof_fits_one_request_once() {
    let world = World::start(None).await;
    world.register_confidential("svc").await;
    let key = p256::ecdsa::SigningKey::from_slice(&[13u8; 32]).unwrap();
    let token_url = format!("{}/token", world.issuer);
    let request = world
        .client_credentials("svc", &[("scope", "mcp:tools")])
        .header("dpop", dpop_proof(&key, "POST", &token_url, None));
    let answer = json_answer(request).await;
    assert_eq!(answer["token_type"], "DPoP");
    let token = answer["access_token"].as_str().unwrap().to_owned();
    let post = |proof: String| {
        world
            .post(&format!("DPoP {token}"))
            .header("dpop", proof)
            .body(initialize().to_string())
            .send()
    };
    let proof = dpop_proof(&key, "POST", &world.mcp, Some(&token));
    let first = post(proof.clone()).await.unwrap();
    assert_eq!(
        first.status(),
        200,
        "{:?}",
        first.headers().get("www-authenticate")
    );
    // The same proof again: a replay.
    let replay = post(proof).await.unwrap();
    assert_eq!(replay.status(), 401);
    assert!(challenge(&replay).contains("used before"));
    // For another method, another URL, another token.
    for (what, proof) in [
        ("htm", dpop_proof(&key, "GET", &world.mcp, Some(&token))),
        ("htu", dpop_proof(&key, "POST", &world.other, Some(&token))),
        ("ath", dpop_proof(&key, "POST", &world.mcp, Some("another"))),
        ("no ath", dpop_proof(&key, "POST", &world.mcp, None)),
    ] {
        let r = post(proof).await.unwrap();
        assert_eq!(r.status(), 401, "{what}");
        assert!(challenge(&r).contains("invalid_dpop_proof"), "{what}");
    }
    // Without a proof at all.
    let r = world
        .initialize(&world.mcp, Some(&format!("DPoP {token}")))
        .await;
    assert_eq!(r.status(), 401);
}
