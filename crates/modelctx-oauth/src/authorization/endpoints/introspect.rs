//! Token introspection (RFC 7662).

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::{Shared, client_request, json_response, oauth_error, required};
use crate::jose::{self, Jws};

/// Token introspection (RFC 7662) of this server's access tokens, for confidential
/// clients (resource servers).
pub(super) async fn introspect(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let (p, client) = match client_request(&inner, &headers, &body).await {
        Ok(request) => request,
        Err(refusal) => return refusal,
    };
    if client.auth_method == "none" {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "introspection needs a confidential client",
        );
    }
    let inactive = || json_response(StatusCode::OK, &json!({"active": false}));
    let token = match required(&p, "token") {
        Ok(token) => token,
        Err(refusal) => return refusal,
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
