//! The JOSE the server half needs: compact ES256 JWS (RFC 7515/7518) signed and
//! verified with RustCrypto's P-256, and P-256 public keys as JWKs (RFC 7517).
//!
//! Only ES256: the bundled authorization server signs with it and it needs no C code.
//! A token with any other `alg` (including `none`) is refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::{Map, Value};

pub(crate) use crate::jws::now_secs;
use crate::jws::sha256_b64url;

/// The largest token looked at: longer ones are refused before any decoding.
pub(crate) const MAX_TOKEN_LEN: usize = 16 * 1024;

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

    /// Whether the signature verifies with `key`, under the algorithm the key is for
    /// (the header's `alg` must name it).
    #[cfg(feature = "resource-server")]
    pub(crate) fn verifies_with_key(&self, key: &PublicKey) -> bool {
        match key {
            PublicKey::Es256(key) => self.verifies_with(key),
            PublicKey::Rs256(key) => {
                use rsa::signature::Verifier as _;
                if self.alg() != Some("RS256") {
                    return false;
                }
                let Ok(signature) = rsa::pkcs1v15::Signature::try_from(self.signature.as_slice())
                else {
                    return false;
                };
                key.verify(self.signing_input.as_bytes(), &signature)
                    .is_ok()
            }
        }
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

/// A public key that verifies access tokens: ES256 (P-256) or RS256 (RSA of 2048 to
/// 4096 bits).
#[cfg(feature = "resource-server")]
#[derive(Clone, Debug)]
pub(crate) enum PublicKey {
    Es256(VerifyingKey),
    Rs256(rsa::pkcs1v15::VerifyingKey<sha2::Sha256>),
}

/// The public key of a JWK, if it is a P-256 or an RSA (2048 to 4096 bits) one.
#[cfg(feature = "resource-server")]
pub(crate) fn public_key(jwk: &Value) -> Option<PublicKey> {
    if jwk["kty"] == "EC" {
        return p256_key(jwk).map(PublicKey::Es256);
    }
    if jwk["kty"] != "RSA" || jwk.get("alg").is_some_and(|a| a != "RS256") {
        return None;
    }
    let number = |name: &str| {
        let bytes = URL_SAFE_NO_PAD.decode(jwk[name].as_str()?).ok()?;
        Some(rsa::BigUint::from_bytes_be(&bytes))
    };
    let key = rsa::RsaPublicKey::new(number("n")?, number("e")?).ok()?;
    use rsa::traits::PublicKeyParts as _;
    if key.size() < 256 {
        return None;
    }
    Some(PublicKey::Rs256(rsa::pkcs1v15::VerifyingKey::new(key)))
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
    let (x, y) = crate::jws::jwk_coordinates(key);
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
    let header = serde_json::json!({"alg": "ES256", "typ": typ, "kid": kid});
    crate::jws::sign_es256(key, &header, claims)
}

/// How old a DPoP proof may be (its `iat`), and so how long its `jti` is remembered.
pub(crate) const DPOP_WINDOW_SECS: u64 = 300;
/// How far in the future a proof's `iat` may lie (clock skew).
const DPOP_SKEW_SECS: u64 = 60;

/// A DPoP proof that checked out: the RFC 7638 thumbprint of its key, and the replay
/// key (`jkt` and `jti`) to remember for the proof window.
#[derive(Debug)]
pub(crate) struct DpopProof {
    pub(crate) jkt: String,
    pub(crate) replay_key: String,
}

/// The RFC 7638 SHA-256 thumbprint of a P-256 JWK (`crv`, `kty`, `x`, `y`, in order).
pub(crate) fn thumbprint(jwk: &Value) -> String {
    let canonical = serde_json::json!({
        "crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"],
    })
    .to_string();
    sha256_b64url(&canonical)
}

/// Whether two URLs are the same `htu` (RFC 9449 §4.3: scheme, host, port and path;
/// query and fragment ignored; a trailing `/` too).
fn same_htu(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            a.scheme() == b.scheme()
                && a.host() == b.host()
                && a.port_or_known_default() == b.port_or_known_default()
                && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
        }
        _ => false,
    }
}

/// Checks a DPoP proof (RFC 9449 §4.3) for a request `method` to `htu`, presenting
/// `access_token` (then `ath` must match) or none (a token request). Only ES256 keys.
pub(crate) fn check_dpop(
    proof: &str,
    method: &str,
    htu: &str,
    access_token: Option<&str>,
) -> Result<DpopProof, &'static str> {
    let jws = Jws::parse(proof)?;
    if jws.header.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
        return Err("the proof's typ is not dpop+jwt");
    }
    let jwk = jws.header.get("jwk").ok_or("the proof carries no jwk")?;
    if jwk.get("d").is_some() {
        return Err("the proof's jwk is a private key");
    }
    let key = p256_key(jwk).ok_or("the proof's key is not an ES256 (P-256) key")?;
    if !jws.verifies_with(&key) {
        return Err("the proof's signature does not verify");
    }
    let claims = &jws.claims;
    if claims.get("htm").and_then(Value::as_str) != Some(method) {
        return Err("the proof is for another HTTP method (htm)");
    }
    if !claims
        .get("htu")
        .and_then(Value::as_str)
        .is_some_and(|u| same_htu(u, htu))
    {
        return Err("the proof is for another URL (htu)");
    }
    let now = now_secs();
    match claims.get("iat").and_then(Value::as_u64) {
        Some(iat)
            if iat.saturating_add(DPOP_WINDOW_SECS) >= now
                && iat <= now.saturating_add(DPOP_SKEW_SECS) => {}
        _ => return Err("the proof is stale or from the future (iat)"),
    }
    let jti = claims
        .get("jti")
        .and_then(Value::as_str)
        .filter(|j| !j.is_empty() && j.len() <= 256)
        .ok_or("the proof has no usable jti")?;
    if let Some(token) = access_token {
        let ath = sha256_b64url(token);
        if claims.get("ath").and_then(Value::as_str) != Some(ath.as_str()) {
            return Err("the proof is for another access token (ath)");
        }
    }
    let jkt = thumbprint(jwk);
    Ok(DpopProof {
        replay_key: format!("{jkt}.{jti}"),
        jkt,
    })
}

/// The id a shared single-use store keeps for `value`: its SHA-256, base64url.
pub(crate) fn single_use_id(value: &str) -> String {
    sha256_b64url(value)
}

/// When a DPoP proof checked now stops being acceptable (its `iat` window and the
/// clock skew), in seconds since the Unix epoch: how long its `jti` is remembered.
pub(crate) fn dpop_replay_until() -> u64 {
    now_secs() + DPOP_WINDOW_SECS + DPOP_SKEW_SECS
}

/// Single-use ids (DPoP proof, assertion `jti`s) remembered until their expiry, in
/// this process only. Bounded: past `MAX` live entries new ids are refused (expiry
/// empties it). The resource server's (the authorization server keeps its single-use
/// ids in its store).
#[cfg(feature = "resource-server")]
#[derive(Debug, Default)]
pub(crate) struct ReplayCache {
    seen: std::sync::Mutex<(std::collections::HashMap<String, u64>, usize)>,
}

#[cfg(feature = "resource-server")]
impl ReplayCache {
    const MAX: usize = 100_000;

    /// Records `key` until `until` (seconds since the Unix epoch); `false` when it is
    /// remembered already (or the cache is full).
    pub(crate) fn first_use(&self, key: &str, until: u64) -> bool {
        let now = now_secs();
        let mut guard = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let (seen, sweep_at) = &mut *guard;
        if seen.len() >= (*sweep_at).max(1024) {
            seen.retain(|_, until| *until > now);
            *sweep_at = seen.len() * 2;
        }
        if seen.get(key).is_some_and(|until| *until > now) || seen.len() >= Self::MAX {
            return false;
        }
        seen.insert(key.to_owned(), until);
        true
    }
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
                assert!(jws.alg().is_none(), "{bad}");
            }
        }
        assert!(Jws::parse(&"a".repeat(MAX_TOKEN_LEN + 1)).is_err());
        assert!(Jws::parse("e30.e30.").is_ok());
    }

    #[cfg(feature = "authorization-server")]
    #[test]
    fn dpop_proofs_are_checked_claim_by_claim() {
        let key = p256::ecdsa::SigningKey::from_slice(&[11u8; 32]).unwrap();
        let jwk = public_jwk(key.verifying_key(), "");
        let sign = |header: Value, claims: Value| crate::jws::sign_es256(&key, &header, &claims);
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk});
        let claims = |htm: &str, htu: &str, iat: u64| serde_json::json!({"htm": htm, "htu": htu, "iat": iat, "jti": "j1"});
        let now = now_secs();
        let url = "https://rs.example/mcp";
        let good = sign(
            header.clone(),
            claims("POST", "https://rs.example/mcp?x", now),
        );
        let proof = check_dpop(&good, "POST", url, None).unwrap();
        assert_eq!(proof.jkt, thumbprint(&jwk));
        assert!(check_dpop(&good, "GET", url, None).is_err());
        assert!(check_dpop(&good, "POST", "https://rs.example/other", None).is_err());
        assert!(
            check_dpop(&good, "POST", url, Some("token")).is_err(),
            "no ath"
        );
        let stale = sign(header.clone(), claims("POST", url, now - 3600));
        assert!(check_dpop(&stale, "POST", url, None).is_err());
        let mut plain = header.clone();
        plain["typ"] = "JWT".into();
        assert!(check_dpop(&sign(plain, claims("POST", url, now)), "POST", url, None).is_err());
        #[cfg(feature = "resource-server")]
        {
            let cache = ReplayCache::default();
            assert!(cache.first_use(&proof.replay_key, dpop_replay_until()));
            assert!(!cache.first_use(&proof.replay_key, dpop_replay_until()));
            // Remembered until its expiry only.
            assert!(cache.first_use("gone", now - 1));
            assert!(cache.first_use("gone", now + 60));
        }
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
        let none = format!(
            "{}.{rest}",
            crate::jws::b64url(br#"{"alg":"none","kid":"k1"}"#)
        );
        assert!(!Jws::parse(&none).unwrap().verifies_with(&public));
    }
}
