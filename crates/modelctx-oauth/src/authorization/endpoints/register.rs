//! Dynamic client registration (RFC 7591).

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Map, Value, json};

use super::{Shared, json_response, oauth_error, scopes_known, server_error};
use crate::authorization::cimd;
use crate::authorization::client_auth;
use crate::authorization::{RegisteredClient, hash, random_token, secure_or_loopback};
use crate::jose;

const GRANT_TYPES: [&str; 4] = [
    "authorization_code",
    "refresh_token",
    "client_credentials",
    crate::authorization::JWT_BEARER,
];
const AUTH_METHODS: [&str; 4] = [
    "none",
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
];

/// Dynamic client registration (RFC 7591).
pub(super) async fn register(State(inner): Shared, body: Bytes) -> Response {
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
    let mut client = RegisteredClient::public(client_id.clone(), redirect_uris);
    client.secret_hash = confidential.then(|| hash(&secret));
    client.auth_method = method;
    client.grant_types = grant_types;
    client.metadata = metadata.clone();
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
