//! The JOSE the server half needs: compact ES256 JWS (RFC 7515/7518) signed and
//! verified with RustCrypto's P-256, and P-256 public keys as JWKs (RFC 7517).
//!
//! Only ES256: the bundled authorization server signs with it and it needs no C code.
//! A token with any other `alg` (including `none`) is refused.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::{Map, Value};

/// The largest token looked at: longer ones are refused before any decoding.
pub(crate) const MAX_TOKEN_LEN: usize = 16 * 1024;

#[cfg_attr(not(feature = "authorization-server"), allow(dead_code))]
pub(crate) fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A JWS split and decoded, signature not yet checked.
#[derive(Debug)]
pub(crate) struct Jws<'t> {
    pub(crate) header: Map<String, Value>,
    pub(crate) claims: Map<String, Value>,
    signing_input: &'t str,
    signature: Vec<u8>,
}

impl<'t> Jws<'t> {
    /// Splits and decodes a compact JWS; `Err` says why it is malformed.
    pub(crate) fn parse(token: &'t str) -> Result<Self, &'static str> {
        if token.len() > MAX_TOKEN_LEN {
            return Err("the token is too long");
        }
        let (signing_input, signature) = token.rsplit_once('.').ok_or("not a JWT")?;
        let (header, claims) = signing_input.split_once('.').ok_or("not a JWT")?;
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| "not base64url");
        let object = |bytes: Vec<u8>| match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err("a JWT part is not a JSON object"),
        };
        Ok(Self {
            header: object(decode(header)?)?,
            claims: object(decode(claims)?)?,
            signing_input,
            signature: decode(signature)?,
        })
    }

    pub(crate) fn alg(&self) -> Option<&str> {
        self.header.get("alg").and_then(Value::as_str)
    }

    #[cfg_attr(not(feature = "resource-server"), allow(dead_code))]
    pub(crate) fn kid(&self) -> Option<&str> {
        self.header.get("kid").and_then(Value::as_str)
    }

    /// Whether the ES256 signature verifies with `key`.
    pub(crate) fn verifies_with(&self, key: &VerifyingKey) -> bool {
        use p256::ecdsa::signature::Verifier as _;
        if self.alg() != Some("ES256") {
            return false;
        }
        let Ok(signature) = Signature::from_slice(&self.signature) else {
            return false;
        };
        key.verify(self.signing_input.as_bytes(), &signature)
            .is_ok()
    }
}

/// The P-256 public key of a JWK, if it is one (`kty` EC, `crv` P-256, `x`, `y`).
#[cfg_attr(not(feature = "resource-server"), allow(dead_code))]
pub(crate) fn p256_key(jwk: &Value) -> Option<VerifyingKey> {
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return None;
    }
    let coord = |name: &str| {
        let bytes = URL_SAFE_NO_PAD.decode(jwk[name].as_str()?).ok()?;
        (bytes.len() == 32).then_some(bytes)
    };
    let (x, y) = (coord("x")?, coord("y")?);
    let mut sec1 = Vec::with_capacity(65);
    sec1.push(4);
    sec1.extend_from_slice(&x);
    sec1.extend_from_slice(&y);
    VerifyingKey::from_sec1_bytes(&sec1).ok()
}

/// The public JWK of a P-256 key, with `kid`, `use` sig and `alg` ES256.
#[cfg(feature = "authorization-server")]
pub(crate) fn public_jwk(key: &VerifyingKey, kid: &str) -> Value {
    let point = key.to_encoded_point(false);
    let x = point.x().map(|x| b64url(x)).unwrap_or_default();
    let y = point.y().map(|y| b64url(y)).unwrap_or_default();
    serde_json::json!({
        "kty": "EC", "crv": "P-256", "x": x, "y": y,
        "kid": kid, "use": "sig", "alg": "ES256",
    })
}

/// A compact ES256 JWS of `claims`, with `typ` and `kid` in its header.
#[cfg(feature = "authorization-server")]
pub(crate) fn sign_es256(
    key: &p256::ecdsa::SigningKey,
    kid: &str,
    typ: &str,
    claims: &Value,
) -> String {
    use p256::ecdsa::signature::Signer as _;
    let header = serde_json::json!({"alg": "ES256", "typ": typ, "kid": kid});
    let input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let signature: Signature = key.sign(input.as_bytes());
    format!("{input}.{}", b64url(&signature.to_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_tokens_are_errors_not_panics() {
        for bad in [
            "",
            ".",
            "..",
            "a.b.c",
            "e30.e30.",
            "W10.e30.AA",
            "e30.W10.AA",
            "e30.e30.!!",
        ] {
            if let Ok(jws) = Jws::parse(bad) {
                let key = p256_key(&serde_json::json!({})).is_none();
                assert!(key);
                assert!(jws.alg().is_none(), "{bad}");
            }
        }
        assert!(Jws::parse(&"a".repeat(MAX_TOKEN_LEN + 1)).is_err());
        assert!(Jws::parse("e30.e30.").is_ok());
    }

    #[test]
    fn non_p256_jwks_are_not_keys() {
        assert!(p256_key(&serde_json::json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"})).is_none());
        assert!(
            p256_key(&serde_json::json!({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}))
                .is_none()
        );
    }

    #[cfg(feature = "authorization-server")]
    #[test]
    fn signed_tokens_verify_only_with_their_key_and_alg() {
        let key = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap();
        let other = p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap();
        let jwk = public_jwk(key.verifying_key(), "k1");
        let public = p256_key(&jwk).unwrap();
        let token = sign_es256(&key, "k1", "at+jwt", &serde_json::json!({"sub": "u"}));
        let jws = Jws::parse(&token).unwrap();
        assert_eq!(jws.kid(), Some("k1"));
        assert_eq!(jws.claims["sub"], "u");
        assert!(jws.verifies_with(&public));
        assert!(!jws.verifies_with(other.verifying_key()));
        // The same signature under a header claiming another algorithm is refused.
        let (_, rest) = token.split_once('.').unwrap();
        let none = format!("{}.{rest}", b64url(br#"{"alg":"none","kid":"k1"}"#));
        assert!(!Jws::parse(&none).unwrap().verifies_with(&public));
    }
}
