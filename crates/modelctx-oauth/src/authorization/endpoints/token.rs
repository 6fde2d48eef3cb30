//! The token endpoint: codes, refresh tokens, client credentials and identity
//! assertions exchanged for tokens; a replayed code or refresh token revokes its family.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::{
    Shared, json_response, oauth_error, params, pkce_text, resource_of, scopes_known, server_error,
};
use crate::authorization::client_auth::authenticate_client;
use crate::authorization::{Grant, GrantKind, Inner, hash, random_token, same};
use crate::jose;

pub(super) async fn token(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let p = match params(&body) {
        Ok(p) => p,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e),
    };
    let client = match authenticate_client(&inner, &headers, &p).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    // A DPoP proof binds the tokens to its key (RFC 9449 §5).
    let dpop_jkt = {
        let mut proofs = headers.get_all("dpop").iter();
        match (proofs.next(), proofs.next()) {
            (None, _) => None,
            (Some(proof), None) => {
                let checked = proof
                    .to_str()
                    .map_err(|_| "the DPoP proof is malformed")
                    .and_then(|proof| {
                        jose::check_dpop(proof, "POST", &inner.endpoint("/token"), None)
                    });
                match checked {
                    Ok(c) => {
                        let key = format!("dpop {}", c.replay_key);
                        match inner.first_use(&key, jose::dpop_replay_until()).await {
                            Ok(true) => Some(c.jkt),
                            Ok(false) => {
                                return oauth_error(
                                    StatusCode::BAD_REQUEST,
                                    "invalid_dpop_proof",
                                    "the DPoP proof was used before",
                                );
                            }
                            Err(_) => return server_error(),
                        }
                    }
                    Err(why) => {
                        return oauth_error(StatusCode::BAD_REQUEST, "invalid_dpop_proof", why);
                    }
                }
            }
            (Some(_), Some(_)) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_dpop_proof",
                    "send one DPoP proof",
                );
            }
        }
    };
    let grant_type = p.get("grant_type").map(String::as_str).unwrap_or("");
    if !client.grant_types.iter().any(|g| g == grant_type)
        && matches!(
            grant_type,
            "authorization_code" | "refresh_token" | "client_credentials"
        )
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            "the client may not use this grant type",
        );
    }
    let invalid_grant = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
    let grant = match grant_type {
        "authorization_code" => {
            let Some(code) = p.get("code") else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "code is missing",
                );
            };
            // Taken out whatever follows: a code is good for one attempt.
            let key = hash(code);
            let grant = match inner.store.take_grant(GrantKind::Code, &key).await {
                Ok(Some(g)) => g,
                Ok(None) => {
                    // A code presented again: what it was exchanged for is revoked.
                    revoke_family_of(&inner, &key).await;
                    return invalid_grant("the code is unknown or was already used");
                }
                Err(_) => return server_error(),
            };
            if grant.client_id != client.client_id || grant.expires_at <= jose::now_secs() {
                return invalid_grant("the code is expired or was issued to another client");
            }
            if p.get("redirect_uri") != grant.redirect_uri.as_ref() {
                return invalid_grant("the redirect URI differs from the authorization request's");
            }
            let verified = match (p.get("code_verifier"), &grant.code_challenge) {
                (Some(v), Some(challenge)) => pkce_text(v) && same(&hash(v), challenge),
                _ => false,
            };
            if !verified {
                return invalid_grant("the code verifier does not match the code challenge");
            }
            if grant.dpop_jkt.is_some() && grant.dpop_jkt != dpop_jkt {
                // RFC 9449 §10: a code bound by dpop_jkt goes only to its key.
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_dpop_proof",
                    "the code is bound to a DPoP key (dpop_jkt); prove possession of it",
                );
            }
            if let Some(asked) = p.get("resource")
                && resource_of(&inner, Some(asked)).ok().flatten() != grant.resource
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "the resource differs from the authorization request's",
                );
            }
            let mut spent = grant.clone();
            spent.family = Some(key.clone());
            spent.expires_at = jose::now_secs() + SPENT_TTL;
            if inner
                .store
                .put_grant(GrantKind::Spent, &key, spent)
                .await
                .is_err()
            {
                return server_error();
            }
            let mut grant = grant;
            grant.family = Some(key);
            grant
        }
        "refresh_token" => {
            let Some(refresh) = p.get("refresh_token") else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "refresh_token is missing",
                );
            };
            // Rotation: the refresh token is spent, a new one comes with the answer.
            let key = hash(refresh);
            let mut grant = match inner.store.take_grant(GrantKind::Refresh, &key).await {
                Ok(Some(g)) => g,
                Ok(None) => {
                    // A rotated refresh token presented again: one of its holders is
                    // not the client; the whole family is revoked.
                    revoke_family_of(&inner, &key).await;
                    return invalid_grant("the refresh token is unknown or was already used");
                }
                Err(_) => return server_error(),
            };
            if family_revoked(&inner, grant.family.as_deref()).await {
                return invalid_grant("the refresh token was revoked after a replay");
            }
            let spent = grant.clone();
            if inner
                .store
                .put_grant(GrantKind::Spent, &key, spent)
                .await
                .is_err()
            {
                return server_error();
            }
            if grant.client_id != client.client_id || grant.expires_at <= jose::now_secs() {
                return invalid_grant("the refresh token is expired or belongs to another client");
            }
            if grant.dpop_jkt.is_some() && grant.dpop_jkt != dpop_jkt {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_dpop_proof",
                    "the refresh token is bound to a DPoP key; prove possession of it",
                );
            }
            if let Some(scope) = p.get("scope") {
                let granted: Vec<&str> = grant.scope.split(' ').collect();
                if !scope
                    .split(' ')
                    .filter(|s| !s.is_empty())
                    .all(|s| granted.contains(&s))
                {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_scope",
                        "a refresh may only narrow the granted scopes",
                    );
                }
                grant.scope = scope
                    .split(' ')
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            if let Some(asked) = p.get("resource")
                && resource_of(&inner, Some(asked)).ok().flatten() != grant.resource
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "the resource differs from the granted one",
                );
            }
            grant
        }
        "client_credentials" => {
            if client.auth_method == "none" {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "unauthorized_client",
                    "client credentials need a confidential client",
                );
            }
            let scope = p
                .get("scope")
                .map(|s| {
                    s.split(' ')
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            if !scopes_known(&inner, &scope) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_scope",
                    "a requested scope is not supported",
                );
            }
            let Ok(resource) = resource_of(&inner, p.get("resource")) else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "the resource is not served by this authorization server",
                );
            };
            let mut grant =
                Grant::new(client.client_id.clone(), client.client_id.clone(), scope, 0);
            grant.resource = resource;
            grant
        }
        crate::authorization::JWT_BEARER if !inner.config.identity_providers.is_empty() => {
            if !client
                .grant_types
                .iter()
                .any(|g| g == crate::authorization::JWT_BEARER)
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "unauthorized_client",
                    "the client may not use the jwt-bearer grant",
                );
            }
            let Some(assertion) = p.get("assertion") else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "assertion is missing",
                );
            };
            match identity_assertion(&inner, &client.client_id, assertion, &p).await {
                Ok(grant) => grant,
                Err(Refusal::Store) => return server_error(),
                Err(Refusal::Target) => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_target",
                        "the resource is not served by this authorization server",
                    );
                }
                Err(Refusal::Scope) => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_scope",
                        "a requested scope is not granted by the assertion or not supported",
                    );
                }
                Err(Refusal::Grant(why)) => return invalid_grant(why),
            }
        }
        _ => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "the grant type is not supported",
            );
        }
    };
    let mut grant = grant;
    grant.dpop_jkt = dpop_jkt.or(grant.dpop_jkt.take());
    let (access, ttl) = inner.access_token(&grant);
    let token_type = if grant.dpop_jkt.is_some() {
        "DPoP"
    } else {
        "Bearer"
    };
    let mut answer = json!({
        "access_token": access,
        "token_type": token_type,
        "expires_in": ttl,
    });
    if !grant.scope.is_empty() {
        answer["scope"] = grant.scope.as_str().into();
    }
    let refreshable = !matches!(
        grant_type,
        "client_credentials" | crate::authorization::JWT_BEARER
    ) && client.grant_types.iter().any(|g| g == "refresh_token");
    if refreshable {
        let Ok(refresh) = random_token() else {
            return server_error();
        };
        let mut stored = grant;
        stored.redirect_uri = None;
        stored.code_challenge = None;
        stored.state = None;
        stored.expires_at = jose::now_secs() + inner.config.refresh_token_ttl.as_secs().max(1);
        if inner
            .store
            .put_grant(GrantKind::Refresh, &hash(&refresh), stored)
            .await
            .is_err()
        {
            return server_error();
        }
        answer["refresh_token"] = refresh.into();
    }
    json_response(StatusCode::OK, &answer)
}

/// Why an identity assertion was refused.
enum Refusal {
    Grant(&'static str),
    Target,
    Scope,
    /// The store could not say whether the assertion was used before.
    Store,
}

/// How far the clocks of the identity provider and this server may disagree.
const ASSERTION_SKEW_SECS: u64 = 60;

/// Checks an identity assertion (ID-JAG) presented by `client_id` and makes the grant
/// it stands for: the provider's subject, for the assertion's resource, with the scopes
/// asked for (within the assertion's) or else the assertion's.
async fn identity_assertion(
    inner: &Inner,
    client_id: &str,
    assertion: &str,
    p: &HashMap<String, String>,
) -> Result<Grant, Refusal> {
    let jws =
        jose::Jws::parse(assertion).map_err(|_| Refusal::Grant("the assertion is not a JWT"))?;
    let typ = jws.header.get("typ").and_then(Value::as_str).unwrap_or("");
    if !typ.eq_ignore_ascii_case(crate::authorization::ID_JAG_TYP) {
        return Err(Refusal::Grant(
            "the assertion is not an identity assertion (typ oauth-id-jag+jwt)",
        ));
    }
    let claim = |name: &str| jws.claims.get(name).and_then(Value::as_str);
    let issuer = claim("iss").ok_or(Refusal::Grant("the assertion names no issuer"))?;
    let provider = inner
        .config
        .identity_providers
        .iter()
        .find(|idp| idp.issuer() == issuer)
        .ok_or(Refusal::Grant("the assertion's issuer is not trusted"))?;
    if !provider.signed(&jws) {
        return Err(Refusal::Grant("the assertion's signature does not verify"));
    }
    let ours = inner.config.issuer.trim_end_matches('/');
    let for_us = match jws.claims.get("aud") {
        Some(Value::String(aud)) => aud.trim_end_matches('/') == ours,
        Some(Value::Array(auds)) => auds
            .iter()
            .filter_map(Value::as_str)
            .any(|aud| aud.trim_end_matches('/') == ours),
        _ => false,
    };
    if !for_us {
        return Err(Refusal::Grant(
            "the assertion is not for this authorization server",
        ));
    }
    let now = jose::now_secs();
    let exp = jws.claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
    if exp.saturating_add(ASSERTION_SKEW_SECS) <= now {
        return Err(Refusal::Grant("the assertion has expired"));
    }
    if jws
        .claims
        .get("iat")
        .and_then(Value::as_u64)
        .is_some_and(|iat| iat > now + ASSERTION_SKEW_SECS)
    {
        return Err(Refusal::Grant("the assertion was issued in the future"));
    }
    if claim("client_id") != Some(client_id) {
        return Err(Refusal::Grant("the assertion was issued to another client"));
    }
    let subject = claim("sub")
        .filter(|s| !s.is_empty())
        .ok_or(Refusal::Grant("the assertion names no subject"))?;
    let jti = claim("jti").ok_or(Refusal::Grant("the assertion has no jti"))?;
    let resource = resource_of(inner, claim("resource").map(str::to_owned).as_ref())
        .map_err(|()| Refusal::Target)?;
    if let Some(asked) = p.get("resource")
        && resource_of(inner, Some(asked)).ok().flatten() != resource
    {
        return Err(Refusal::Target);
    }
    let granted: Vec<&str> = claim("scope")
        .unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty())
        .collect();
    let scope = match p.get("scope") {
        Some(asked) => {
            let asked: Vec<&str> = asked.split(' ').filter(|s| !s.is_empty()).collect();
            if !asked.iter().all(|s| granted.contains(s)) {
                return Err(Refusal::Scope);
            }
            asked.join(" ")
        }
        None => granted.join(" "),
    };
    if !scopes_known(inner, &scope) {
        return Err(Refusal::Scope);
    }
    // One use per assertion, remembered (by every process sharing the store) as long
    // as the assertion would be accepted.
    let until = exp.saturating_add(ASSERTION_SKEW_SECS);
    match inner
        .first_use(&format!("id-jag {issuer} {jti}"), until)
        .await
    {
        Ok(true) => {}
        Ok(false) => return Err(Refusal::Grant("the assertion was used before")),
        Err(_) => return Err(Refusal::Store),
    }
    let mut grant = Grant::new(client_id, subject, scope, 0);
    grant.resource = resource;
    Ok(grant)
}

/// How long an exchanged code is remembered, to revoke its tokens if it comes again.
const SPENT_TTL: u64 = 900;

/// After a replay of the spent code or refresh token under `key`: revokes its family.
async fn revoke_family_of(inner: &Inner, key: &str) {
    let Ok(Some(spent)) = inner.store.take_grant(GrantKind::Spent, key).await else {
        return;
    };
    if let Some(family) = &spent.family {
        let mut revoked = spent.clone();
        revoked.expires_at = jose::now_secs() + inner.config.refresh_token_ttl.as_secs().max(1);
        let _ = inner
            .store
            .put_grant(GrantKind::RevokedFamily, family, revoked)
            .await;
    }
    // Still spent: a third attempt finds the family revoked all the same.
    let _ = inner.store.put_grant(GrantKind::Spent, key, spent).await;
}

/// Whether the token family was revoked after a replay.
async fn family_revoked(inner: &Inner, family: Option<&str>) -> bool {
    let Some(family) = family else {
        return false;
    };
    match inner
        .store
        .take_grant(GrantKind::RevokedFamily, family)
        .await
    {
        Ok(Some(revoked)) => {
            let _ = inner
                .store
                .put_grant(GrantKind::RevokedFamily, family, revoked)
                .await;
            true
        }
        Ok(None) => false,
        // Unknown: refuse rather than let a possibly stolen token through.
        Err(_) => true,
    }
}
