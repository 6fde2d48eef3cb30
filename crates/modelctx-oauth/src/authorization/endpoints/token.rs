//! The token endpoint: codes, refresh tokens, client credentials and identity
//! assertions exchanged for tokens; a replayed code or refresh token revokes its family.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::{
    Shared, asked_scope_and_resource, client_request, issue, json_response, normalized_scope,
    oauth_error, pkce_text, required, resource_of, scopes_known, server_error,
};
use crate::authorization::{Grant, GrantKind, Inner, RegisteredClient, hash, same};
use crate::jose;

pub(super) async fn token(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let (p, client) = match client_request(&inner, &headers, &body).await {
        Ok(request) => request,
        Err(refusal) => return refusal,
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
    let presented = Presented {
        inner: &inner,
        p: &p,
        client: &client,
        proven_jkt: dpop_jkt.as_deref(),
    };
    let grant = match grant_type {
        "authorization_code" => presented.exchange_code().await,
        "refresh_token" => presented.refresh().await,
        "client_credentials" => {
            if client.auth_method == "none" {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "unauthorized_client",
                    "client credentials need a confidential client",
                );
            }
            let (scope, resource) = match asked_scope_and_resource(&inner, &p) {
                Ok(asked) => asked,
                Err((error, description)) => {
                    return oauth_error(StatusCode::BAD_REQUEST, error, description);
                }
            };
            let mut grant =
                Grant::new(client.client_id.clone(), client.client_id.clone(), scope, 0);
            grant.resource = resource;
            Ok(grant)
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
            let assertion = match required(&p, "assertion") {
                Ok(assertion) => assertion,
                Err(refusal) => return refusal,
            };
            identity_assertion(&inner, &client.client_id, assertion, &p)
                .await
                .map_err(Refusal::answer)
        }
        _ => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "the grant type is not supported",
            );
        }
    };
    let mut grant = match grant {
        Ok(grant) => grant,
        Err(refusal) => return refusal,
    };
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
        let mut stored = grant;
        stored.redirect_uri = None;
        stored.code_challenge = None;
        stored.state = None;
        let ttl = inner.config.refresh_token_ttl;
        let Ok(refresh) = issue(&inner, GrantKind::Refresh, stored, ttl).await else {
            return server_error();
        };
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

impl Refusal {
    /// The token endpoint's answer to the refused assertion.
    fn answer(self) -> Response {
        match self {
            Self::Store => server_error(),
            Self::Target => oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "the resource is not served by this authorization server",
            ),
            Self::Scope => oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_scope",
                "a requested scope is not granted by the assertion or not supported",
            ),
            Self::Grant(why) => invalid_grant(why),
        }
    }
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
    if names_other_resource(inner, p, &resource) {
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

/// A token request presenting a code or a refresh token, each good once.
struct Presented<'a> {
    inner: &'a Inner,
    p: &'a HashMap<String, String>,
    client: &'a RegisteredClient,
    /// The key of the request's DPoP proof, if it sent one.
    proven_jkt: Option<&'a str>,
}

impl Presented<'_> {
    /// Takes the code (`kind` [`GrantKind::Code`]) or refresh token the form presents out
    /// of the store (whatever follows: it is good for one attempt), with its key; or
    /// refuses it, and when it was presented before (spent, so no longer there) revokes
    /// its family.
    async fn take(&self, kind: GrantKind) -> Result<(String, Grant), Response> {
        let (param, unknown) = if kind == GrantKind::Code {
            ("code", "the code is unknown or was already used")
        } else {
            (
                "refresh_token",
                "the refresh token is unknown or was already used",
            )
        };
        let key = hash(required(self.p, param)?);
        match self.inner.store.take_grant(kind, &key).await {
            Ok(Some(grant)) => Ok((key, grant)),
            Ok(None) => {
                revoke_family_of(self.inner, &key).await;
                Err(invalid_grant(unknown))
            }
            Err(_) => Err(server_error()),
        }
    }

    /// The grant of an authorization code (single-use, verifier checked, redirect URI,
    /// client, DPoP key and resource bound), or the answer refusing it.
    async fn exchange_code(&self) -> Result<Grant, Response> {
        let (key, mut grant) = self.take(GrantKind::Code).await?;
        if !usable_by(&grant, self.client) {
            return Err(invalid_grant(
                "the code is expired or was issued to another client",
            ));
        }
        if self.p.get("redirect_uri") != grant.redirect_uri.as_ref() {
            return Err(invalid_grant(
                "the redirect URI differs from the authorization request's",
            ));
        }
        let verified = match (self.p.get("code_verifier"), &grant.code_challenge) {
            (Some(v), Some(challenge)) => pkce_text(v) && same(&hash(v), challenge),
            _ => false,
        };
        if !verified {
            return Err(invalid_grant(
                "the code verifier does not match the code challenge",
            ));
        }
        // RFC 9449 §10: a code bound by dpop_jkt goes only to its key.
        check_key_binding(
            &grant,
            self.proven_jkt,
            "the code is bound to a DPoP key (dpop_jkt); prove possession of it",
        )?;
        if names_other_resource(self.inner, self.p, &grant.resource) {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "the resource differs from the authorization request's",
            ));
        }
        let mut spent = grant.clone();
        spent.family = Some(key.clone());
        spent.expires_at = jose::now_secs() + SPENT_TTL;
        keep_spent(self.inner, &key, spent).await?;
        grant.family = Some(key);
        Ok(grant)
    }

    /// The grant of a refresh token (rotated: single-use; client, DPoP key and resource
    /// bound; the scopes narrowed if asked), or the answer refusing it.
    async fn refresh(&self) -> Result<Grant, Response> {
        // Rotation: the refresh token is spent, a new one comes with the answer. One
        // presented again means one of its holders is not the client.
        let (key, mut grant) = self.take(GrantKind::Refresh).await?;
        if family_revoked(self.inner, grant.family.as_deref()).await {
            return Err(invalid_grant(
                "the refresh token was revoked after a replay",
            ));
        }
        keep_spent(self.inner, &key, grant.clone()).await?;
        if !usable_by(&grant, self.client) {
            return Err(invalid_grant(
                "the refresh token is expired or belongs to another client",
            ));
        }
        check_key_binding(
            &grant,
            self.proven_jkt,
            "the refresh token is bound to a DPoP key; prove possession of it",
        )?;
        if let Some(scope) = self.p.get("scope") {
            let granted: Vec<&str> = grant.scope.split(' ').collect();
            if !scope
                .split(' ')
                .filter(|s| !s.is_empty())
                .all(|s| granted.contains(&s))
            {
                return Err(oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_scope",
                    "a refresh may only narrow the granted scopes",
                ));
            }
            grant.scope = normalized_scope(scope);
        }
        if names_other_resource(self.inner, self.p, &grant.resource) {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "the resource differs from the granted one",
            ));
        }
        Ok(grant)
    }
}

fn invalid_grant(why: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why)
}

/// Keeps an exchanged code or refresh token as spent, for [`revoke_family_of`].
async fn keep_spent(inner: &Inner, key: &str, spent: Grant) -> Result<(), Response> {
    inner
        .store
        .put_grant(GrantKind::Spent, key, spent)
        .await
        .map_err(|_| server_error())
}

/// Whether `grant` was given to `client` and has not expired.
fn usable_by(grant: &Grant, client: &RegisteredClient) -> bool {
    grant.client_id == client.client_id && grant.expires_at > jose::now_secs()
}

/// Refuses a grant bound to a DPoP key unless this request proved possession of it.
fn check_key_binding(grant: &Grant, proven_jkt: Option<&str>, why: &str) -> Result<(), Response> {
    if grant.dpop_jkt.is_some() && grant.dpop_jkt.as_deref() != proven_jkt {
        return Err(oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_dpop_proof",
            why,
        ));
    }
    Ok(())
}

/// Whether the request names a resource other than `granted`, the grant's.
fn names_other_resource(
    inner: &Inner,
    p: &HashMap<String, String>,
    granted: &Option<String>,
) -> bool {
    p.get("resource")
        .is_some_and(|asked| resource_of(inner, Some(asked)).ok().flatten() != *granted)
}

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
