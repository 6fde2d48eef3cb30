//! The routes of the bundled authorization server.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Map, Value, json};

use super::cimd;
use super::client_auth::{self, authenticate_client};
use super::page::{self, Consent};
use super::{
    Grant, GrantKind, Inner, Login, RegisteredClient, hash, random_token, same, secure_or_loopback,
};
use crate::jose::{self, Jws};

type Shared = State<Arc<Inner>>;

/// How long the consent page stays usable.
const PENDING_TTL: u64 = 600;
/// The largest request body taken by any endpoint.
const MAX_BODY: usize = 64 * 1024;

pub(crate) fn router(inner: Arc<Inner>) -> Router {
    let p = inner.prefix.clone();
    Router::new()
        .route(
            &format!("/.well-known/oauth-authorization-server{p}"),
            get(metadata),
        )
        .route(&format!("{p}/jwks"), get(jwks))
        .route(&format!("{p}/authorize"), get(authorize).post(consent))
        .route(&format!("{p}/token"), post(token))
        .route(&format!("{p}/register"), post(register))
        .route(&format!("{p}/revoke"), post(revoke))
        .route(&format!("{p}/introspect"), post(introspect))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(inner)
}

fn server(inner: &Arc<Inner>) -> super::AuthorizationServer {
    super::AuthorizationServer {
        inner: inner.clone(),
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

fn public_json(body: &Value) -> Response {
    let mut response = json_response(StatusCode::OK, body);
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=300"),
    );
    response.headers_mut().remove(header::PRAGMA);
    response
}

/// An OAuth error answer (RFC 6749 §5.2).
pub(crate) fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    json_response(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

async fn metadata(State(inner): Shared) -> Response {
    public_json(&server(&inner).metadata())
}

async fn jwks(State(inner): Shared) -> Response {
    public_json(&server(&inner).jwks())
}

/// The parameters of a query or form; `Err` when one is repeated (RFC 6749 §3.1).
fn params(text: &[u8]) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for (k, v) in url::form_urlencoded::parse(text) {
        if out.insert(k.to_string(), v.into_owned()).is_some() {
            return Err(format!("the parameter {k} is repeated"));
        }
    }
    Ok(out)
}

/// A redirect to the client with `pairs`, `state` and `iss` added to its URI's query.
fn redirect_to(inner: &Inner, uri: &str, state: Option<&str>, pairs: &[(&str, &str)]) -> Response {
    let Ok(mut url) = url::Url::parse(uri) else {
        return page::error(StatusCode::BAD_REQUEST, "the redirect URI is not a URL");
    };
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in pairs {
            query.append_pair(k, v);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        query.append_pair("iss", &inner.config.issuer);
    }
    let Ok(location) = HeaderValue::from_str(url.as_str()) else {
        return page::error(StatusCode::BAD_REQUEST, "the redirect URI is not a URL");
    };
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::FOUND;
    response.headers_mut().insert(header::LOCATION, location);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

pub(crate) fn server_error() -> Response {
    oauth_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "the authorization server could not complete the request",
    )
}

/// A PKCE code challenge or verifier: 43 to 128 unreserved characters (RFC 7636 §4.1).
fn pkce_text(text: &str) -> bool {
    (43..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// Whether every scope of `scope` may be asked for.
fn scopes_known(inner: &Inner, scope: &str) -> bool {
    let supported = &inner.config.scopes_supported;
    supported.is_empty()
        || scope
            .split(' ')
            .filter(|s| !s.is_empty())
            .all(|s| supported.iter().any(|k| k == s))
}

/// The resource a request names, if it may (`Err`: `invalid_target`); the default one
/// when it names none.
fn resource_of(inner: &Inner, asked: Option<&String>) -> Result<Option<String>, ()> {
    let resources = &inner.config.resources;
    match asked {
        None => Ok(resources.first().cloned()),
        Some(r) => {
            let r = r.trim_end_matches('/');
            resources
                .iter()
                .find(|k| k.trim_end_matches('/') == r)
                .cloned()
                .map(Some)
                .ok_or(())
        }
    }
}

async fn authorize(State(inner): Shared, RawQuery(query): RawQuery) -> Response {
    let p = match params(query.unwrap_or_default().as_bytes()) {
        Ok(p) => p,
        Err(e) => return page::error(StatusCode::BAD_REQUEST, &e),
    };
    let Some(client_id) = p.get("client_id") else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "the request names no client (client_id)",
        );
    };
    let client = if cimd::is_document_url(&inner, client_id) {
        // A client ID metadata document, fetched anew for each authorization request.
        match cimd::fetch(&inner, client_id).await {
            Ok(client) => {
                if inner.store.put_client(client.clone()).await.is_err() {
                    return page::error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed");
                }
                client
            }
            Err(why) => return page::error(StatusCode::BAD_REQUEST, &why),
        }
    } else {
        match inner.store.client(client_id).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                return page::error(StatusCode::BAD_REQUEST, "the client is not registered");
            }
            Err(_) => return page::error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed"),
        }
    };
    // The redirect URI is checked before anything is sent to it: a URI the client did
    // not register gets an error page, never a redirect.
    let redirect_uri = match p.get("redirect_uri") {
        Some(uri) if client.redirect_uris.iter().any(|r| r == uri) => uri.clone(),
        Some(_) => {
            return page::error(
                StatusCode::BAD_REQUEST,
                "the redirect URI is not one the client registered",
            );
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return page::error(StatusCode::BAD_REQUEST, "the request names no redirect URI");
        }
    };
    let state = p.get("state").map(String::as_str);
    let fail = |error: &str, description: &str| {
        redirect_to(
            &inner,
            &redirect_uri,
            state,
            &[("error", error), ("error_description", description)],
        )
    };
    if p.get("response_type").map(String::as_str) != Some("code") {
        return fail(
            "unsupported_response_type",
            "only response_type=code is supported",
        );
    }
    if !client.grant_types.iter().any(|g| g == "authorization_code") {
        return fail(
            "unauthorized_client",
            "the client may not use the authorization code",
        );
    }
    let Some(challenge) = p.get("code_challenge") else {
        return fail(
            "invalid_request",
            "PKCE is required: code_challenge is missing",
        );
    };
    if p.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return fail("invalid_request", "code_challenge_method must be S256");
    }
    if !pkce_text(challenge) {
        return fail("invalid_request", "the code_challenge is malformed");
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
        return fail("invalid_scope", "a requested scope is not supported");
    }
    let Ok(resource) = resource_of(&inner, p.get("resource")) else {
        return fail(
            "invalid_target",
            "the resource is not served by this authorization server",
        );
    };
    // RFC 9449 §10: the code will be bound to this DPoP key (a JWK SHA-256 thumbprint,
    // 43 base64url characters).
    let dpop_jkt = p.get("dpop_jkt");
    if let Some(jkt) = dpop_jkt
        && (jkt.len() != 43
            || !jkt
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    {
        return fail(
            "invalid_request",
            "dpop_jkt is not a JWK SHA-256 thumbprint",
        );
    }
    let Ok(txn) = random_token() else {
        return page::error(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let grant = Grant {
        client_id: client.client_id.clone(),
        subject: String::new(),
        scope,
        resource,
        redirect_uri: Some(redirect_uri),
        code_challenge: Some(challenge.clone()),
        state: state.map(str::to_owned),
        dpop_jkt: dpop_jkt.cloned(),
        family: None,
        expires_at: jose::now_secs() + PENDING_TTL,
    };
    show_consent(&inner, &client, &txn, &grant, None).await
}

async fn show_consent(
    inner: &Inner,
    client: &RegisteredClient,
    txn: &str,
    grant: &Grant,
    error: Option<&str>,
) -> Response {
    if inner
        .store
        .put_grant(GrantKind::Pending, &hash(txn), grant.clone())
        .await
        .is_err()
    {
        return page::error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed");
    }
    let name = client
        .metadata
        .get("client_name")
        .and_then(Value::as_str)
        .unwrap_or(&client.client_id);
    let host = grant
        .redirect_uri
        .as_deref()
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    page::consent(&Consent {
        action: &inner.endpoint("/authorize"),
        txn,
        client: name,
        redirect_host: &host,
        scope: &grant.scope,
        error,
    })
}

/// The consent form's POST.
async fn consent(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let p = match params(&body) {
        Ok(p) => p,
        Err(e) => return page::error(StatusCode::BAD_REQUEST, &e),
    };
    let Some(txn) = p.get("txn") else {
        return page::error(StatusCode::BAD_REQUEST, "the form is incomplete");
    };
    let grant = match inner.store.take_grant(GrantKind::Pending, &hash(txn)).await {
        Ok(Some(g)) if g.expires_at > jose::now_secs() => g,
        Ok(_) => {
            return page::error(
                StatusCode::BAD_REQUEST,
                "this authorization request has expired or was already answered; start again from the application",
            );
        }
        Err(_) => return page::error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed"),
    };
    let redirect_uri = grant.redirect_uri.clone().unwrap_or_default();
    let state = grant.state.as_deref();
    if p.get("decision").map(String::as_str) != Some("approve") {
        return redirect_to(
            &inner,
            &redirect_uri,
            state,
            &[
                ("error", "access_denied"),
                ("error_description", "the user denied access"),
            ],
        );
    }
    let login = Login {
        username: p.get("username").map(String::as_str).unwrap_or(""),
        password: p.get("password").map(String::as_str).unwrap_or(""),
        headers: &headers,
        client_id: &grant.client_id,
        scope: &grant.scope,
    };
    let Some(subject) = inner.users.authenticate(&login).await else {
        let client = match inner.store.client(&grant.client_id).await {
            Ok(Some(c)) => c,
            _ => return page::error(StatusCode::BAD_REQUEST, "the client is not registered"),
        };
        return show_consent(
            &inner,
            &client,
            txn,
            &grant,
            Some("The login failed; try again."),
        )
        .await;
    };
    let Ok(code) = random_token() else {
        return page::error(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let code_grant = Grant {
        subject,
        state: None,
        expires_at: jose::now_secs() + inner.config.code_ttl.as_secs().max(1),
        ..grant.clone()
    };
    if inner
        .store
        .put_grant(GrantKind::Code, &hash(&code), code_grant)
        .await
        .is_err()
    {
        return page::error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed");
    }
    redirect_to(&inner, &redirect_uri, state, &[("code", &code)])
}

async fn token(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
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
            let spent = Grant {
                family: Some(key.clone()),
                expires_at: jose::now_secs() + SPENT_TTL,
                ..grant.clone()
            };
            if inner
                .store
                .put_grant(GrantKind::Spent, &key, spent)
                .await
                .is_err()
            {
                return server_error();
            }
            Grant {
                family: Some(key),
                ..grant
            }
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
            Grant {
                client_id: client.client_id.clone(),
                subject: client.client_id.clone(),
                scope,
                resource,
                redirect_uri: None,
                code_challenge: None,
                state: None,
                dpop_jkt: None,
                family: None,
                expires_at: 0,
            }
        }
        super::JWT_BEARER if !inner.config.identity_providers.is_empty() => {
            if !client.grant_types.iter().any(|g| g == super::JWT_BEARER) {
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
    let grant = Grant {
        dpop_jkt: dpop_jkt.or(grant.dpop_jkt),
        ..grant
    };
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
    let refreshable = !matches!(grant_type, "client_credentials" | super::JWT_BEARER)
        && client.grant_types.iter().any(|g| g == "refresh_token");
    if refreshable {
        let Ok(refresh) = random_token() else {
            return server_error();
        };
        let stored = Grant {
            redirect_uri: None,
            code_challenge: None,
            state: None,
            expires_at: jose::now_secs() + inner.config.refresh_token_ttl.as_secs().max(1),
            ..grant
        };
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
    if !typ.eq_ignore_ascii_case(super::ID_JAG_TYP) {
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
    Ok(Grant {
        client_id: client_id.to_owned(),
        subject: subject.to_owned(),
        scope,
        resource,
        redirect_uri: None,
        code_challenge: None,
        state: None,
        dpop_jkt: None,
        family: None,
        expires_at: 0,
    })
}

/// How long an exchanged code is remembered, to revoke its tokens if it comes again.
const SPENT_TTL: u64 = 900;

/// After a replay of the spent code or refresh token under `key`: revokes its family.
async fn revoke_family_of(inner: &Inner, key: &str) {
    let Ok(Some(spent)) = inner.store.take_grant(GrantKind::Spent, key).await else {
        return;
    };
    if let Some(family) = &spent.family {
        let revoked = Grant {
            expires_at: jose::now_secs() + inner.config.refresh_token_ttl.as_secs().max(1),
            ..spent.clone()
        };
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

const GRANT_TYPES: [&str; 4] = [
    "authorization_code",
    "refresh_token",
    "client_credentials",
    super::JWT_BEARER,
];
const AUTH_METHODS: [&str; 4] = [
    "none",
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
];

/// Dynamic client registration (RFC 7591).
async fn register(State(inner): Shared, body: Bytes) -> Response {
    let bad =
        |error: &str, description: &str| oauth_error(StatusCode::BAD_REQUEST, error, description);
    if !inner.config.dynamic_registration {
        return oauth_error(
            StatusCode::FORBIDDEN,
            "access_denied",
            "dynamic registration is turned off",
        );
    }
    let Ok(Value::Object(mut metadata)) = serde_json::from_slice::<Value>(&body) else {
        return bad("invalid_client_metadata", "the body is not a JSON object");
    };
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        match v {
            None => Some(Vec::new()),
            Some(Value::Array(a)) => a.iter().map(|s| s.as_str().map(str::to_owned)).collect(),
            Some(_) => None,
        }
    };
    let Some(redirect_uris) = strings(metadata.get("redirect_uris")) else {
        return bad(
            "invalid_redirect_uri",
            "redirect_uris must be a list of strings",
        );
    };
    for uri in &redirect_uris {
        let ok =
            url::Url::parse(uri).is_ok_and(|u| secure_or_loopback(&u) && u.fragment().is_none());
        if !ok {
            return bad(
                "invalid_redirect_uri",
                "each redirect URI must be an https URL, or http on a loopback host, without fragment",
            );
        }
    }
    let Some(mut grant_types) = strings(metadata.get("grant_types")) else {
        return bad(
            "invalid_client_metadata",
            "grant_types must be a list of strings",
        );
    };
    if grant_types.is_empty() {
        grant_types.push("authorization_code".into());
    }
    if let Some(g) = grant_types
        .iter()
        .find(|g| !GRANT_TYPES.contains(&g.as_str()))
    {
        return bad(
            "invalid_client_metadata",
            &format!("the grant type {g:?} is not supported"),
        );
    }
    let Some(response_types) = strings(metadata.get("response_types")) else {
        return bad(
            "invalid_client_metadata",
            "response_types must be a list of strings",
        );
    };
    if response_types.iter().any(|r| r != "code") {
        return bad(
            "invalid_client_metadata",
            "only the code response type is supported",
        );
    }
    let uses_code = grant_types.iter().any(|g| g == "authorization_code");
    if uses_code && redirect_uris.is_empty() {
        return bad(
            "invalid_redirect_uri",
            "the authorization code needs at least one redirect URI",
        );
    }
    let method = match metadata.get("token_endpoint_auth_method") {
        None => "client_secret_basic".to_owned(),
        Some(Value::String(m)) if AUTH_METHODS.contains(&m.as_str()) => m.clone(),
        Some(_) => {
            return bad(
                "invalid_client_metadata",
                "token_endpoint_auth_method must be none, client_secret_basic, client_secret_post or private_key_jwt",
            );
        }
    };
    // private_key_jwt: the keys come with the registration, as a set or by reference
    // (RFC 7591 §2: not both); keys are never sent with another method.
    let jwks_uri_ok = |v: &Value| {
        v.as_str()
            .and_then(|u| url::Url::parse(u).ok())
            .is_some_and(|u| cimd::fetchable(&inner, &u) && u.fragment().is_none())
    };
    match (
        method == "private_key_jwt",
        metadata.get("jwks"),
        metadata.get("jwks_uri"),
    ) {
        (_, Some(_), Some(_)) => {
            return bad("invalid_client_metadata", "give jwks or jwks_uri, not both");
        }
        (true, Some(jwks), None) if !client_auth::usable_jwks(jwks) => {
            return bad(
                "invalid_client_metadata",
                "jwks must hold a P-256 key (private_key_jwt is checked with ES256)",
            );
        }
        (true, None, Some(uri)) if !jwks_uri_ok(uri) => {
            return bad(
                "invalid_client_metadata",
                "jwks_uri must be an https URL on a public host",
            );
        }
        (true, None, None) => {
            return bad(
                "invalid_client_metadata",
                "private_key_jwt needs the client's keys (jwks or jwks_uri)",
            );
        }
        _ => {}
    }
    if method == "none" && grant_types.iter().any(|g| g == "client_credentials") {
        return bad(
            "invalid_client_metadata",
            "client credentials need a confidential client",
        );
    }
    if let Some(scope) = metadata.get("scope")
        && !scope.as_str().is_some_and(|s| scopes_known(&inner, s))
    {
        return bad("invalid_client_metadata", "a scope is not supported");
    }
    let (Ok(client_id), Ok(secret)) = (random_token(), random_token()) else {
        return server_error();
    };
    // Registered as given, plus the defaults applied (RFC 7591 §3.2.1).
    metadata.insert("grant_types".into(), json!(grant_types));
    if uses_code {
        metadata.insert("response_types".into(), json!(["code"]));
    }
    metadata.insert("token_endpoint_auth_method".into(), method.clone().into());
    metadata.insert("redirect_uris".into(), json!(redirect_uris));
    for issued in [
        "client_id",
        "client_secret",
        "client_id_issued_at",
        "client_secret_expires_at",
    ] {
        metadata.remove(issued);
    }
    // A secret only for the secret methods: a private_key_jwt client signs instead.
    let confidential = method.starts_with("client_secret");
    let client = RegisteredClient {
        client_id: client_id.clone(),
        secret_hash: confidential.then(|| hash(&secret)),
        auth_method: method,
        redirect_uris,
        grant_types,
        metadata: metadata.clone(),
    };
    if inner.store.put_client(client).await.is_err() {
        return server_error();
    }
    let mut answer: Map<String, Value> = metadata;
    answer.insert("client_id".into(), client_id.into());
    answer.insert("client_id_issued_at".into(), jose::now_secs().into());
    if confidential {
        answer.insert("client_secret".into(), secret.into());
        answer.insert("client_secret_expires_at".into(), 0.into());
    }
    json_response(StatusCode::CREATED, &Value::Object(answer))
}

/// Token revocation (RFC 7009): refresh tokens stop working at once; access tokens are
/// self-contained JWTs and stay valid until they expire (keep their lifetime short).
async fn revoke(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let p = match params(&body) {
        Ok(p) => p,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e),
    };
    let client = match authenticate_client(&inner, &headers, &p).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let Some(token) = p.get("token") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "token is missing",
        );
    };
    let key = hash(token);
    match inner.store.take_grant(GrantKind::Refresh, &key).await {
        // Another client's token stays as it was.
        Ok(Some(grant)) if grant.client_id != client.client_id => {
            if inner
                .store
                .put_grant(GrantKind::Refresh, &key, grant)
                .await
                .is_err()
            {
                return server_error();
            }
        }
        Ok(_) => {}
        Err(_) => return server_error(),
    }
    json_response(StatusCode::OK, &json!({}))
}

/// Token introspection (RFC 7662) of this server's access tokens, for confidential
/// clients (resource servers).
async fn introspect(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let p = match params(&body) {
        Ok(p) => p,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e),
    };
    let client = match authenticate_client(&inner, &headers, &p).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if client.auth_method == "none" {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "introspection needs a confidential client",
        );
    }
    let inactive = || json_response(StatusCode::OK, &json!({"active": false}));
    let Some(token) = p.get("token") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "token is missing",
        );
    };
    let Ok(jws) = Jws::parse(token) else {
        return inactive();
    };
    let now = jose::now_secs();
    let valid = jws.verifies_with(inner.key.verifying_key())
        && jws.claims.get("iss").and_then(Value::as_str) == Some(inner.config.issuer.as_str())
        && jws
            .claims
            .get("exp")
            .and_then(Value::as_u64)
            .is_some_and(|exp| exp > now);
    if !valid {
        return inactive();
    }
    let mut answer = jws.claims;
    answer.insert("active".into(), true.into());
    answer.insert("token_type".into(), "Bearer".into());
    json_response(StatusCode::OK, &Value::Object(answer))
}
