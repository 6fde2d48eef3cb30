//! DPoP proofs (RFC 9449): a proof-of-possession key per client, a fresh proof per
//! request, the servers' nonces.
//!
//! The key lives with the client and is not persisted.

use serde_json::json;

use super::crypto::{SigningKey, now_secs, random_string, sha256_b64url};
use super::error::OAuthError;

/// `htu`: the request URL without query and fragment (RFC 9449 §4.2).
fn htu(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].to_owned()
}

/// A proof for `method` `url`, bound to `access_token` (`ath`) when presenting one.
pub(crate) fn proof(
    key: &SigningKey,
    method: &str,
    url: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
) -> Result<String, OAuthError> {
    let mut header = serde_json::Map::new();
    header.insert("typ".into(), "dpop+jwt".into());
    header.insert("jwk".into(), key.public_jwk());
    let mut claims = json!({
        "jti": random_string(16)?,
        "htm": method,
        "htu": htu(url),
        "iat": now_secs(),
    });
    if let Some(token) = access_token {
        claims["ath"] = sha256_b64url(token).into();
    }
    if let Some(nonce) = nonce {
        claims["nonce"] = nonce.into();
    }
    // The proof names its key by the `jwk` header alone.
    Ok(key.clone().without_key_id().sign_jwt(header, &claims))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htu_drops_query_and_fragment() {
        assert_eq!(htu("https://a.example/mcp?x=1#f"), "https://a.example/mcp");
        assert_eq!(htu("https://a.example/mcp"), "https://a.example/mcp");
    }

    #[test]
    fn proof_carries_the_claims() {
        use base64::Engine as _;
        let key = SigningKey::generate().unwrap();
        let p = proof(
            &key,
            "POST",
            "https://a.example/t?q",
            Some("tok"),
            Some("n1"),
        )
        .unwrap();
        let parts: Vec<&str> = p.split('.').collect();
        let dec = |s: &str| -> serde_json::Value {
            serde_json::from_slice(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(s)
                    .unwrap(),
            )
            .unwrap()
        };
        let (h, c) = (dec(parts[0]), dec(parts[1]));
        assert_eq!(h["typ"], "dpop+jwt");
        assert_eq!(h["jwk"]["kty"], "EC");
        assert!(h["jwk"].get("d").is_none());
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], "https://a.example/t");
        assert_eq!(c["nonce"], "n1");
        assert_eq!(c["ath"], sha256_b64url("tok"));
    }
}
