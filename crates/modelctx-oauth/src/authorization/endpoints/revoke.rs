//! Token revocation (RFC 7009).

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::json;

use super::{Shared, client_request, json_response, required, server_error};
use crate::authorization::{GrantKind, hash};

/// Token revocation (RFC 7009): refresh tokens stop working at once; access tokens are
/// self-contained JWTs and stay valid until they expire (keep their lifetime short).
pub(super) async fn revoke(State(inner): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let (p, client) = match client_request(&inner, &headers, &body).await {
        Ok(request) => request,
        Err(refusal) => return refusal,
    };
    let token = match required(&p, "token") {
        Ok(token) => token,
        Err(refusal) => return refusal,
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
