//! Client authentication at the token, revocation and introspection endpoints:
//! `client_secret_basic`, `client_secret_post`, `none` (RFC 6749 §2.3) and
//! `private_key_jwt` (RFC 7523 §2.2, OpenID Connect Core §9).
//!
//! A public `client_id` alone is accepted only for `none` clients (a `private_key_jwt`
//! client has no secret either). A client assertion needs `iss` = `sub` = a client
//! registered with that method, `aud` the issuer or the token endpoint, an `exp` at most
//! five minutes ahead (the cap keeps what is remembered short), and a `jti` used once; it
//! is checked with ES256 against the client's `jwks`, or its `jwks_uri`, fetched under the
//! same rule as a client ID metadata document, at registration and at each assertion (the
//! key set is not cached). One authentication method per request; two is `invalid_request`.

use std::collections::HashMap;

use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

use super::endpoints::{oauth_error, required, server_error};
use super::{Inner, RegisteredClient, hash, same};
use crate::body::read_bounded;
use crate::jose::{self, Jws};

/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub(crate) const CLIENT_ASSERTION_TYPE: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How far the client's clock may be off.
const SKEW_SECS: u64 = 60;
/// The longest an assertion may live from now: its `jti` is remembered that long
/// (the replay cache's window), so it cannot be used twice while it is still good.
const MAX_LIFETIME_SECS: u64 = jose::DPOP_WINDOW_SECS;
/// The largest key set read from a client's `jwks_uri`.
const MAX_JWKS: usize = 64 * 1024;

/// The client a request authenticates as, or the answer refusing it: HTTP Basic,
/// `client_secret` in the form, a signed client assertion, or a public client's bare
/// `client_id`. A client authenticates only by the method it registered.
pub(crate) async fn authenticate_client(
    inner: &Inner,
    headers: &HeaderMap,
    p: &HashMap<String, String>,
) -> Result<RegisteredClient, Response> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Basic ")
                .or_else(|| v.strip_prefix("basic "))
        });
    let assertion = p.contains_key("client_assertion") || p.contains_key("client_assertion_type");
    let methods = usize::from(basic.is_some())
        + usize::from(p.contains_key("client_secret"))
        + usize::from(assertion);
    if methods > 1 {
        return Err(oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "use one client authentication method",
        ));
    }
    if assertion {
        return assertion_client(inner, p).await;
    }
    let (id, secret, is_basic) = if let Some(encoded) = basic {
        let decoded = STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
        let Some((id, secret)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
            return Err(invalid(true));
        };
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        (decode(id), Some(decode(secret)), true)
    } else {
        let Some(id) = p.get("client_id") else {
            return Err(invalid(false));
        };
        (id.clone(), p.get("client_secret").cloned(), false)
    };
    let client = match inner.store.client(&id).await {
        Ok(Some(c)) => c,
        Ok(None) => return Err(invalid(is_basic)),
        Err(_) => return Err(server_error()),
    };
    match (&client.secret_hash, secret) {
        (Some(stored), Some(given)) if same(stored, &hash(&given)) => Ok(client),
        // Only a public client gets by on its id: a private_key_jwt client has no
        // secret either, and must sign.
        (None, None) if client.auth_method == "none" => Ok(client),
        _ => Err(invalid(is_basic)),
    }
}

fn invalid(basic: bool) -> Response {
    let mut r = oauth_error(
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        "client authentication failed",
    );
    if basic {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"token\""),
        );
    }
    r
}

/// `private_key_jwt`: a JWT by the client about itself (`iss` = `sub` = its id), for
/// this server (`aud`: the issuer or the token endpoint), unexpired and short-lived,
/// its `jti` unseen, signed (ES256) by a key of the client's registered `jwks` or
/// `jwks_uri`.
async fn assertion_client(
    inner: &Inner,
    p: &HashMap<String, String>,
) -> Result<RegisteredClient, Response> {
    let refuse = |why: &str| {
        oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            &format!("client authentication failed: {why}"),
        )
    };
    if p.get("client_assertion_type").map(String::as_str) != Some(CLIENT_ASSERTION_TYPE) {
        return Err(oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ));
    }
    let assertion = required(p, "client_assertion")?;
    let jws = Jws::parse(assertion).map_err(|_| refuse("the assertion is not a JWT"))?;
    let claim = |name: &str| jws.claims.get(name).and_then(Value::as_str);
    let Some(client_id) = claim("iss") else {
        return Err(refuse("the assertion names no issuer"));
    };
    if claim("sub") != Some(client_id) {
        return Err(refuse("the assertion's sub is not its iss"));
    }
    if p.get("client_id").is_some_and(|id| id != client_id) {
        return Err(refuse("the assertion is by another client"));
    }
    let client = match inner.store.client(client_id).await {
        Ok(Some(c)) if c.auth_method == "private_key_jwt" => c,
        Ok(_) => {
            return Err(refuse(
                "the client does not authenticate with private_key_jwt",
            ));
        }
        Err(_) => return Err(server_error()),
    };
    let ours = [
        inner.config.issuer.trim_end_matches('/').to_owned(),
        inner.endpoint("/token"),
    ];
    let for_us = |aud: &str| ours.iter().any(|o| o == aud.trim_end_matches('/'));
    let addressed = match jws.claims.get("aud") {
        Some(Value::String(aud)) => for_us(aud),
        Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(for_us),
        _ => false,
    };
    if !addressed {
        return Err(refuse("the assertion is not for this authorization server"));
    }
    let now = jose::now_secs();
    let exp = match jws.claims.get("exp").and_then(Value::as_u64) {
        None => return Err(refuse("the assertion has no exp")),
        Some(exp) if exp.saturating_add(SKEW_SECS) <= now => {
            return Err(refuse("the assertion has expired"));
        }
        Some(exp) if exp > now + MAX_LIFETIME_SECS => {
            return Err(refuse(
                "the assertion lives too long (at most five minutes)",
            ));
        }
        Some(exp) => exp,
    };
    if jws
        .claims
        .get("nbf")
        .and_then(Value::as_u64)
        .is_some_and(|nbf| nbf > now + SKEW_SECS)
    {
        return Err(refuse("the assertion is not valid yet"));
    }
    let Some(jti) = claim("jti") else {
        return Err(refuse("the assertion has no jti"));
    };
    let keys = match client.metadata.get("jwks") {
        Some(jwks) => jwks.clone(),
        None => match client.metadata.get("jwks_uri").and_then(Value::as_str) {
            Some(uri) => fetch_jwks(inner, uri).await.map_err(|why| refuse(&why))?,
            None => return Err(refuse("the client registered no keys")),
        },
    };
    let kid = jws.kid();
    let signed = keys["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| kid.is_none() || k.get("kid").and_then(Value::as_str) == kid)
        .filter_map(jose::p256_key)
        .any(|key| jws.verifies_with(&key));
    if !signed {
        return Err(refuse("the assertion's signature does not verify"));
    }
    // Checked last: a forged assertion does not use up a jti. Remembered as long as
    // the assertion would be accepted.
    let until = exp.saturating_add(SKEW_SECS);
    match inner
        .first_use(&format!("client-assertion {client_id} {jti}"), until)
        .await
    {
        Ok(true) => {}
        Ok(false) => return Err(refuse("the assertion was used before")),
        Err(_) => return Err(server_error()),
    }
    Ok(client)
}

/// The key set at a client's `jwks_uri`, fetched as client ID metadata documents are
/// (no redirects; public addresses only unless `private_network_documents`).
async fn fetch_jwks(inner: &Inner, uri: &str) -> Result<Value, String> {
    let url = url::Url::parse(uri).map_err(|_| "the client's jwks_uri is not a URL".to_owned())?;
    if !super::cimd::fetchable(inner, &url) {
        return Err("the client's jwks_uri is not an https URL on a public host".into());
    }
    let response = inner
        .documents
        .get(url)
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|_| "the client's key set could not be fetched".to_owned())?;
    if !response.status().is_success() {
        return Err("the client's key set could not be fetched".into());
    }
    let body = read_bounded(response, MAX_JWKS)
        .await
        .map_err(|e| e.describe("the client's key set"))?;
    serde_json::from_slice(&body).map_err(|_| "the client's key set is not JSON".to_owned())
}

/// Whether `jwks` is a JWK set holding at least one key an assertion can be checked
/// with (P-256, for ES256).
pub(crate) fn usable_jwks(jwks: &Value) -> bool {
    jwks["keys"]
        .as_array()
        .is_some_and(|keys| keys.iter().any(|k| jose::p256_key(k).is_some()))
}
