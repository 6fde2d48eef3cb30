//! Access tokens as JWTs (RFC 9068), checked against the issuer's JWKS.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::{AuthInfo, DEFAULT_LEEWAY_SECS, TokenError, TokenVerifier, fetch};
use crate::ConfigError;
use crate::jose::{self, Jws, PublicKey};

/// Verifies JWT access tokens: an ES256 or RS256 signature by a key of the authorization
/// server's JWKS, `iss` equal to the issuer, `exp` present and not past, `nbf` (when
/// present) reached, both within a leeway (60 s by default). The resource server checks
/// `aud` itself.
///
/// The JWKS is fetched on first use and cached; a token signed with a key id the cache
/// does not know triggers a new fetch (at most once per
/// [`min_refresh_interval`](Self::min_refresh_interval), 10 s by default, so that
/// made-up key ids cannot make the server hammer the authorization server), and the
/// cache is fetched again after an hour anyway. If the JWKS cannot be fetched and no
/// key is known, the request gets 503.
///
/// Only ES256 (P-256) and RS256 (RSA, 2048 to 4096 bits) keys and tokens: others,
/// `none` and HMAC included, are refused as invalid. A token's `alg` must match its
/// key's type.
pub struct JwtVerifier {
    issuer: String,
    jwks_uri: Option<String>,
    leeway: u64,
    min_refresh: Duration,
    max_age: Duration,
    http: reqwest::Client,
    cache: tokio::sync::Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    keys: Vec<(Option<String>, PublicKey)>,
    fetched: Option<Instant>,
}

modelctx_types::__debug_shows!(JwtVerifier, |v| { issuer: &v.issuer, jwks_uri: &v.jwks_uri, .. });

impl JwtVerifier {
    /// Tokens from `issuer`, whose keys are at `jwks_uri` (its metadata's `jwks_uri`).
    pub fn new(issuer: impl Into<String>, jwks_uri: impl Into<String>) -> Self {
        Self::build(issuer.into(), Some(jwks_uri.into()), Vec::new())
    }

    /// Tokens from `issuer`, signed by a key of the fixed JWKS `jwks` (never fetched).
    /// `Err` when it holds no ES256 (P-256) or RS256 (RSA) key.
    pub fn with_jwks(issuer: impl Into<String>, jwks: &Value) -> Result<Self, ConfigError> {
        let keys = keys_of(jwks);
        if keys.is_empty() {
            return Err(ConfigError("the JWKS holds no P-256 or RSA key".into()));
        }
        Ok(Self::build(issuer.into(), None, keys))
    }

    fn build(
        issuer: String,
        jwks_uri: Option<String>,
        keys: Vec<(Option<String>, PublicKey)>,
    ) -> Self {
        let fetched = (!keys.is_empty()).then(Instant::now);
        Self {
            issuer,
            jwks_uri,
            leeway: DEFAULT_LEEWAY_SECS,
            min_refresh: Duration::from_secs(10),
            max_age: Duration::from_secs(3600),
            http: reqwest::Client::new(),
            cache: tokio::sync::Mutex::new(Cache { keys, fetched }),
        }
    }

    modelctx_types::__setters! {
        /// How far past `exp` and before `nbf` a token is still taken (clock skew).
        leeway(leeway: Duration) { leeway = leeway.as_secs() }

        /// The shortest time between two JWKS fetches caused by unknown key ids.
        min_refresh_interval(interval: Duration) { min_refresh = interval }

        /// The HTTP client that fetches the JWKS (for TLS, proxies); a plain reqwest client
        /// without TLS by default, enough for a loopback authorization server.
        http_client(client: reqwest::Client) { http = client }
    }

    async fn keys_for(&self, kid: Option<&str>) -> Result<Vec<PublicKey>, TokenError> {
        let mut cache = self.cache.lock().await;
        let matching = |cache: &Cache| -> Vec<PublicKey> {
            cache
                .keys
                .iter()
                .filter(|(k, _)| kid.is_none() || k.as_deref() == kid)
                .map(|(_, key)| key.clone())
                .collect()
        };
        let known = matching(&cache);
        let Some(uri) = &self.jwks_uri else {
            return Ok(known);
        };
        let age = cache.fetched.map(|t| t.elapsed());
        let stale = age.is_none_or(|a| a >= self.max_age);
        let may_refresh = age.is_none_or(|a| a >= self.min_refresh);
        if !(stale || (known.is_empty() && may_refresh)) {
            return Ok(known);
        }
        let request = self
            .http
            .get(uri)
            .header(http::header::ACCEPT, "application/json");
        match fetch::json(request, "the JWKS").await {
            Ok(jwks) => {
                cache.keys = keys_of(&jwks);
                cache.fetched = Some(Instant::now());
                Ok(matching(&cache))
            }
            // Keep serving with the keys we have.
            Err(_) if !known.is_empty() => Ok(known),
            Err(e) => Err(e),
        }
    }

    async fn check(&self, token: &str) -> Result<AuthInfo, TokenError> {
        let jws = Jws::parse(token)
            .map_err(|why| TokenError::invalid(format!("malformed token: {why}")))?;
        if !matches!(jws.alg(), Some("ES256" | "RS256")) {
            return Err(TokenError::invalid("the token's algorithm is not accepted"));
        }
        let keys = self.keys_for(jws.kid()).await?;
        if keys.is_empty() {
            return Err(TokenError::invalid("the token's signing key is unknown"));
        }
        if !keys.iter().any(|k| jws.verifies_with_key(k)) {
            return Err(TokenError::invalid("the token's signature does not verify"));
        }
        let claims = &jws.claims;
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(TokenError::invalid("the token comes from another issuer"));
        }
        let now = jose::now_secs();
        let leeway = self.leeway;
        let Some(exp) = claims.get("exp").and_then(Value::as_u64) else {
            return Err(TokenError::invalid("the token has no expiry"));
        };
        if exp.saturating_add(leeway) <= now {
            return Err(TokenError::invalid("the token has expired"));
        }
        if let Some(nbf) = claims.get("nbf") {
            match nbf.as_u64() {
                Some(nbf) if nbf <= now.saturating_add(leeway) => {}
                _ => return Err(TokenError::invalid("the token is not valid yet")),
            }
        }
        Ok(AuthInfo::from_claims(jws.claims))
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        Box::pin(self.check(token))
    }
}

/// The ES256 and RS256 signing keys of a JWKS, with their key ids.
fn keys_of(jwks: &Value) -> Vec<(Option<String>, PublicKey)> {
    jwks["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k["use"].as_str().is_none_or(|u| u == "sig"))
        .filter_map(|k| Some((k["kid"].as_str().map(str::to_owned), jose::public_key(k)?)))
        .collect()
}
