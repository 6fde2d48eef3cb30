//! The resource server's DPoP replay check across two instances sharing Redis: a proof
//! accepted by one is refused by the other.

use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_oauth::{AuthInfo, ResourceServer, ResourceServerConfig, TokenError, TokenVerifier};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::support::{RedisServer, WITHIN};
use modelctx_test::jose::{b64, es256_jwt, now, public_jwk, thumbprint};

/// Takes one token, bound to the key whose thumbprint is `jkt`, for `resource`.
struct BoundToken {
    resource: String,
    jkt: String,
}

impl TokenVerifier for BoundToken {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        Box::pin(async move {
            if token != "the-token" {
                return Err(TokenError::invalid("unknown token"));
            }
            let claims = json!({"sub": "alice", "aud": self.resource, "exp": now() + 300,
                "cnf": {"jkt": self.jkt}});
            let Value::Object(claims) = claims else {
                unreachable!()
            };
            Ok(AuthInfo::from_claims(claims))
        })
    }
}

/// A DPoP proof (RFC 9449 §4.2) by `key` for a POST to `htu` with the token, its
/// `jti` `jti`.
fn proof(key: &p256::ecdsa::SigningKey, htu: &str, jti: &str) -> String {
    let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": public_jwk(key, None)});
    let claims = json!({"htm": "POST", "htu": htu, "iat": now(), "jti": jti,
        "ath": b64(&sha2::Sha256::digest(b"the-token"))});
    es256_jwt(key, &header, &claims)
}

/// One instance of the resource on a port of its own, taking the token bound to `key`;
/// its URL.
async fn instance(
    config: ResourceServerConfig,
    resource: &str,
    key: &p256::ecdsa::SigningKey,
) -> String {
    let verifier = BoundToken {
        resource: resource.to_owned(),
        jkt: thumbprint(key),
    };
    let rs = ResourceServer::new(config, verifier).unwrap();
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(|| async { "ok" }))
        .layer(rs.layer());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// POSTs to `url` with the token and `proof`: the status and the challenge.
async fn call(url: &str, proof: &str) -> (u16, String) {
    let sent = reqwest::Client::new()
        .post(url)
        .header("authorization", "DPoP the-token")
        .header("dpop", proof)
        .body("{}")
        .send();
    let r = tokio::time::timeout(WITHIN, sent)
        .await
        .expect("the resource server answers")
        .unwrap();
    let challenge = r
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (r.status().as_u16(), challenge)
}

#[tokio::test]
async fn a_dpop_proof_replayed_to_the_other_instance_is_refused() {
    let redis = RedisServer::start();
    let key = p256::ecdsa::SigningKey::from_slice(&[45u8; 32]).unwrap();
    // Two instances of one resource behind a load balancer: the same resource URI
    // (the proofs' `htu`), each on its own port with its own store on the one Redis.
    let resource = "http://127.0.0.1/mcp".to_owned();
    let mut urls = Vec::new();
    for _ in 0..2 {
        let store =
            modelctx_redis::AuthorizationStore::new(redis.connection().await, Default::default());
        let config = ResourceServerConfig::new(&resource, "http://127.0.0.1/issuer")
            .replay_store(Arc::new(store));
        urls.push(instance(config, &resource, &key).await);
    }
    for round in 0..4 {
        let (first, second) = (&urls[round % 2], &urls[(round + 1) % 2]);
        let proof = proof(&key, &resource, &format!("proof-{round}"));
        assert_eq!(call(first, &proof).await.0, 200);
        for again in [second, first] {
            let (status, challenge) = call(again, &proof).await;
            assert_eq!(status, 401);
            assert!(challenge.contains("invalid_dpop_proof"), "{challenge}");
        }
    }
    // One key per proof, each expiring with the proof's window.
    let seen: Vec<String> = redis
        .keys()
        .await
        .into_iter()
        .filter(|k| k.contains("oauth:seen:"))
        .collect();
    assert_eq!(seen.len(), 4, "{seen:?}");
}

#[tokio::test]
async fn without_a_replay_store_each_instance_remembers_its_own() {
    let key = p256::ecdsa::SigningKey::from_slice(&[46u8; 32]).unwrap();
    let resource = "http://127.0.0.1/mcp".to_owned();
    let mut urls = Vec::new();
    for _ in 0..2 {
        let config = ResourceServerConfig::new(&resource, "http://127.0.0.1/issuer");
        urls.push(instance(config, &resource, &key).await);
    }
    // The default: a replay to the same instance is refused, to the other one not
    // (what `replay_store` is for).
    let proof = proof(&key, &resource, "proof");
    assert_eq!(call(&urls[0], &proof).await.0, 200);
    assert_eq!(call(&urls[0], &proof).await.0, 401);
    assert_eq!(call(&urls[1], &proof).await.0, 200);
}
