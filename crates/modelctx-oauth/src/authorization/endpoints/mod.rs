//! The routes of the bundled authorization server.

// The request steps below fail with the HTTP response that answers the request; it is
// built once per refused request, so its size does not matter.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::client_auth::authenticate_client;
use super::page;
use super::{Grant, GrantKind, Inner, RegisteredClient, hash, random_token};
use crate::jose;

mod authorize;
mod introspect;
mod register;
mod revoke;
mod token;

use authorize::{authorize, consent};
use introspect::introspect;
use register::register;
use revoke::revoke;
use token::token;

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
    let body = Body::from(body.to_string());
    let mut response = page::not_stored(status, body, "application/json");
    response
        .headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
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

/// The form of a request from a client and the client it authenticates as, or the
/// answer refusing it: what the token, revocation and introspection endpoints start with.
async fn client_request(
    inner: &Inner,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(HashMap<String, String>, RegisteredClient), Response> {
    let p =
        params(body).map_err(|e| oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e))?;
    let client = authenticate_client(inner, headers, &p).await?;
    Ok((p, client))
}

/// The parameter `name` of a form, or the `invalid_request` answer saying it is missing.
pub(crate) fn required<'a>(
    p: &'a HashMap<String, String>,
    name: &str,
) -> Result<&'a String, Response> {
    p.get(name).ok_or_else(|| {
        oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!("{name} is missing"),
        )
    })
}

/// Stores `grant` as a new grant of `kind` that lives `ttl` (at least a second) and
/// returns its token, of which only the hash is stored; or why it could not.
async fn issue(
    inner: &Inner,
    kind: GrantKind,
    mut grant: Grant,
    ttl: std::time::Duration,
) -> Result<String, &'static str> {
    let token = random_token().map_err(|_| "no randomness")?;
    grant.expires_at = jose::now_secs() + ttl.as_secs().max(1);
    inner
        .store
        .put_grant(kind, &hash(&token), grant)
        .await
        .map_err(|_| "the store failed")?;
    Ok(token)
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

/// The scopes of a space-separated list, separated by single spaces.
fn normalized_scope(scope: &str) -> String {
    scope
        .split(' ')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The scopes and resource a new authorization asks for, checked against what this
/// server supports; `Err`: the OAuth error code and description that refuse them (an
/// error answer at the token endpoint, a redirect at the authorization endpoint).
fn asked_scope_and_resource(
    inner: &Inner,
    p: &HashMap<String, String>,
) -> Result<(String, Option<String>), (&'static str, &'static str)> {
    let scope = p
        .get("scope")
        .map(|s| normalized_scope(s))
        .unwrap_or_default();
    if !scopes_known(inner, &scope) {
        return Err(("invalid_scope", "a requested scope is not supported"));
    }
    let resource = resource_of(inner, p.get("resource")).map_err(|()| {
        (
            "invalid_target",
            "the resource is not served by this authorization server",
        )
    })?;
    Ok((scope, resource))
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
