//! The JOSE pieces a test signs with itself, to stand in for an identity provider, a
//! client with a key of its own, or a DPoP proof: ES256 JWTs by a P-256 key, the key's
//! JWK and RFC 7638 thumbprint, and the clock their claims count by.
//!
//! ```
//! use modelctx_test::jose::{es256_jwt, now, public_jwk, thumbprint};
//! use serde_json::json;
//!
//! let key = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap();
//! let jwks = json!({"keys": [public_jwk(&key, Some("k1"))]});
//! let token = es256_jwt(
//!     &key,
//!     &json!({"alg": "ES256", "typ": "JWT", "kid": "k1"}),
//!     &json!({"sub": "alice", "exp": now() + 60}),
//! );
//! assert_eq!(token.split('.').count(), 3);
//! assert_eq!(thumbprint(&key).len(), 43);
//! # drop(jwks);
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use p256::ecdsa::SigningKey;
use p256::ecdsa::signature::Signer as _;
use serde_json::{Value, json};
use sha2::Digest as _;

/// `bytes` in base64url without padding, as JOSE writes them.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A JWT with `header` and `claims`, signed (ES256) by `key`.
pub fn es256_jwt(key: &SigningKey, header: &Value, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", b64(&signature.to_bytes()))
}

/// `key`'s public JWK (`kty`, `crv`, `x`, `y`), and its `kid` when given.
pub fn public_jwk(key: &SigningKey, kid: Option<&str>) -> Value {
    let (x, y) = coordinates(key);
    let mut jwk = json!({"kty": "EC", "crv": "P-256", "x": x, "y": y});
    if let Some(kid) = kid {
        jwk["kid"] = kid.into();
    }
    jwk
}

/// The RFC 7638 thumbprint of `key`'s public JWK (what `cnf.jkt` and `dpop_jkt` name).
pub fn thumbprint(key: &SigningKey) -> String {
    let (x, y) = coordinates(key);
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    b64(&sha2::Sha256::digest(canonical.as_bytes()))
}

/// The JSON of part `i` of a JWT (0: its header, 1: its claims), signature not checked.
pub fn jwt_part(jwt: &str, i: usize) -> Value {
    let part = jwt.split('.').nth(i).expect("a JWT part");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON")
}

/// Verifies the ES256 JWT `jwt` with the public JWK `jwk` and returns its claims; panics
/// unless its header says ES256 and the signature is valid.
pub fn verify_es256(jwt: &str, jwk: &Value) -> Value {
    use p256::ecdsa::signature::Verifier as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    assert_eq!(jwt_part(jwt, 0)["alg"], "ES256");
    let coordinate = |name: &str| b64.decode(jwk[name].as_str().unwrap()).unwrap();
    let (x, y) = (coordinate("x"), coordinate("y"));
    let point = p256::EncodedPoint::from_affine_coordinates(
        x.as_slice().into(),
        y.as_slice().into(),
        false,
    );
    let key = p256::ecdsa::VerifyingKey::from_encoded_point(&point).unwrap();
    let (input, signature) = jwt.rsplit_once('.').unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&b64.decode(signature).unwrap()).unwrap();
    key.verify(input.as_bytes(), &signature)
        .expect("a valid ES256 signature");
    jwt_part(jwt, 1)
}

/// Asserts that the token request `form` authenticates the client `client_id` with a JWT
/// assertion (RFC 7523, `private_key_jwt`) signed by the key of `jwk`, for `audience`
/// (the authorization server's issuer): the assertion type, the signature, and the
/// claims `iss`, `sub` and `aud`.
pub fn assert_client_assertion(
    form: &std::collections::HashMap<String, String>,
    jwk: &Value,
    client_id: &str,
    audience: &str,
) {
    assert_eq!(
        form["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    let claims = verify_es256(&form["client_assertion"], jwk);
    assert_eq!(claims["iss"], client_id);
    assert_eq!(claims["sub"], client_id);
    assert_eq!(claims["aud"], audience);
}

/// Seconds since the Unix epoch: what `iat`, `nbf` and `exp` count.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The public key's coordinates, base64url.
fn coordinates(key: &SigningKey) -> (String, String) {
    let point = key.verifying_key().to_encoded_point(false);
    let coordinate = |c: Option<&p256::FieldBytes>| b64(c.expect("an uncompressed point"));
    (coordinate(point.x()), coordinate(point.y()))
}
