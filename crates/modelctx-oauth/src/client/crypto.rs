//! Randomness, PKCE (RFC 7636), base64url, and ES256 JWTs (private_key_jwt, DPoP).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use p256::ecdsa::SigningKey as EcKey;
use p256::pkcs8::DecodePrivateKey as _;

use super::error::{ErrorKind, OAuthError};
use crate::jws::b64url;
pub(crate) use crate::jws::{now_secs, sha256_b64url};

pub(crate) fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// `n` random bytes from the operating system, base64url-encoded.
pub(crate) fn random_string(n: usize) -> Result<String, OAuthError> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| {
        OAuthError::new(
            ErrorKind::Key,
            format!("the system random source failed: {e}"),
        )
    })?;
    Ok(b64url(&buf))
}

/// A PKCE verifier (43 characters from 32 random bytes) and its S256 challenge.
pub(crate) fn pkce() -> Result<(String, String), OAuthError> {
    let verifier = random_string(32)?;
    let challenge = sha256_b64url(&verifier);
    Ok((verifier, challenge))
}

/// A P-256 private key that signs ES256 JWTs: `private_key_jwt` client assertions
/// (RFC 7523) and DPoP proofs (RFC 9449). Its `Debug` shows no key material.
#[derive(Clone)]
pub struct SigningKey {
    key: EcKey,
    kid: Option<String>,
}

modelctx_types::__debug_shows!(SigningKey, |v| { alg: &"ES256", kid: &v.kid, .. });

impl SigningKey {
    /// A key read from a PKCS#8 PEM document (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, OAuthError> {
        let key = EcKey::from_pkcs8_pem(pem).map_err(|e| {
            OAuthError::new(
                ErrorKind::Key,
                format!("not a PKCS#8 PEM P-256 private key: {e}"),
            )
        })?;
        Ok(Self { key, kid: None })
    }

    /// The key as a PKCS#8 PEM document (to keep it: a secret).
    pub fn to_pkcs8_pem(&self) -> Result<String, OAuthError> {
        use p256::pkcs8::EncodePrivateKey as _;
        self.key
            .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
            .map(|pem| pem.to_string())
            .map_err(|e| OAuthError::new(ErrorKind::Key, format!("cannot encode the key: {e}")))
    }

    /// A fresh random key (for DPoP: one per client).
    pub fn generate() -> Result<Self, OAuthError> {
        loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| {
                OAuthError::new(
                    ErrorKind::Key,
                    format!("the system random source failed: {e}"),
                )
            })?;
            // Out-of-range scalars (probability ~2^-32) are drawn again.
            if let Ok(key) = EcKey::from_slice(&bytes) {
                return Ok(Self { key, kid: None });
            }
        }
    }

    /// Sets the `kid` header of the JWTs this key signs.
    #[must_use]
    pub fn with_key_id(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    pub(crate) fn without_key_id(mut self) -> Self {
        self.kid = None;
        self
    }

    /// The public key as a JWK (RFC 7517) object.
    pub fn public_jwk(&self) -> serde_json::Value {
        let (x, y) = crate::jws::jwk_coordinates(self.key.verifying_key());
        serde_json::json!({ "kty": "EC", "crv": "P-256", "x": x, "y": y })
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key.
    pub fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        // Members in lexicographic order, no whitespace (RFC 7638 §3).
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap_or_default(),
            jwk["y"].as_str().unwrap_or_default()
        );
        sha256_b64url(&canonical)
    }

    /// A compact JWS: `header` gets `alg` (and `kid` when set) added.
    pub(crate) fn sign_jwt(
        &self,
        mut header: serde_json::Map<String, serde_json::Value>,
        claims: &serde_json::Value,
    ) -> String {
        header.insert("alg".into(), "ES256".into());
        if let Some(kid) = &self.kid {
            header.entry("kid").or_insert_with(|| kid.clone().into());
        }
        crate::jws::sign_es256(&self.key, &serde_json::Value::Object(header), claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use p256::ecdsa::Signature;
    use p256::ecdsa::signature::Verifier as _;

    #[test]
    fn pkce_challenge_is_s256_of_verifier() {
        // RFC 7636 appendix B.
        assert_eq!(
            sha256_b64url("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let (v, c) = pkce().unwrap();
        assert_eq!(v.len(), 43);
        assert_eq!(c, sha256_b64url(&v));
    }

    #[test]
    fn jwt_signature_verifies_with_the_public_key() {
        let key = SigningKey::generate().unwrap().with_key_id("k1");
        let jwt = key.sign_jwt(serde_json::Map::new(), &serde_json::json!({"iss": "me"}));
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], "k1");
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        let input = format!("{}.{}", parts[0], parts[1]);
        key.key
            .verifying_key()
            .verify(input.as_bytes(), &sig)
            .unwrap();
        assert_eq!(key.thumbprint().len(), 43);
        assert!(!format!("{key:?}").contains(&b64url(&key.key.to_bytes())));
    }

    #[test]
    fn bad_pem_is_an_error() {
        let e = SigningKey::from_pkcs8_pem(
            "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n",
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Key);
    }
}
