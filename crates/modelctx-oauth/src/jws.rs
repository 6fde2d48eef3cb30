//! The JOSE encoding both halves do: base64url and SHA-256 digests (PKCE, DPoP `ath`,
//! JWK thumbprints), the seconds clock of claims, and ES256 signing (the client's
//! `private_key_jwt` assertions and DPoP proofs, the authorization server's tokens).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Now, in whole seconds since the epoch, as JWT claims (`iat`, `exp`) and grant expiries
/// count time.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `bytes` in unpadded base64url, as JOSE writes them.
pub(crate) fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The SHA-256 of `text`, base64url.
pub(crate) fn sha256_b64url(text: &str) -> String {
    use sha2::Digest as _;
    b64url(&sha2::Sha256::digest(text.as_bytes()))
}

/// The `x` and `y` members of the JWK of `key`.
#[cfg(any(feature = "client", feature = "authorization-server"))]
pub(crate) fn jwk_coordinates(key: &p256::ecdsa::VerifyingKey) -> (String, String) {
    let point = key.to_encoded_point(false);
    let x = point.x().map(|x| b64url(x)).unwrap_or_default();
    let y = point.y().map(|y| b64url(y)).unwrap_or_default();
    (x, y)
}

/// The compact ES256 JWS of `claims` under `header` (which names `alg` itself).
#[cfg(any(feature = "client", feature = "authorization-server"))]
pub(crate) fn sign_es256(
    key: &p256::ecdsa::SigningKey,
    header: &serde_json::Value,
    claims: &serde_json::Value,
) -> String {
    use p256::ecdsa::Signature;
    use p256::ecdsa::signature::Signer as _;
    let input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let signature: Signature = key.sign(input.as_bytes());
    format!("{input}.{}", b64url(&signature.to_bytes()))
}
