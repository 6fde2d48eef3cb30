//! The authorization endpoint: the request checked, the consent page shown, the
//! user's answer turned into a code sent back to the client's redirect URI.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::{PENDING_TTL, Shared, asked_scope_and_resource, issue, params, pkce_text, redirect_to};
use crate::authorization::cimd;
use crate::authorization::page::{self, Consent};
use crate::authorization::{Grant, GrantKind, Inner, Login, RegisteredClient, hash, random_token};
use crate::jose;

pub(super) async fn authorize(State(inner): Shared, RawQuery(query): RawQuery) -> Response {
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
        // A client ID metadata document, fetched (or reused while its cache headers
        // allow).
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
    let (scope, resource) = match asked_scope_and_resource(&inner, &p) {
        Ok(asked) => asked,
        Err((error, description)) => return fail(error, description),
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
    let mut grant = Grant::new(
        client.client_id.clone(),
        String::new(),
        scope,
        jose::now_secs() + PENDING_TTL,
    );
    grant.resource = resource;
    grant.redirect_uri = Some(redirect_uri);
    grant.code_challenge = Some(challenge.clone());
    grant.state = state.map(str::to_owned);
    grant.dpop_jkt = dpop_jkt.cloned();
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
pub(super) async fn consent(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
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
    let mut code_grant = grant.clone();
    code_grant.subject = subject;
    code_grant.state = None;
    let code = match issue(&inner, GrantKind::Code, code_grant, inner.config.code_ttl).await {
        Ok(code) => code,
        Err(why) => return page::error(StatusCode::INTERNAL_SERVER_ERROR, why),
    };
    redirect_to(&inner, &redirect_uri, state, &[("code", &code)])
}
