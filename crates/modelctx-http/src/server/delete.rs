//! DELETE: the client ends its session.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, StatusCode};

use super::reply::status_only;
use super::request::{caller_of, protocol_version, resolve_session};
use super::table::Inner;

/// DELETE: ends the session the request names.
pub(super) async fn delete(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Response {
    if !inner.config.stateful {
        return inner.reject(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: a stateless server has no sessions to end",
        );
    }
    let session = match resolve_session(inner, headers, caller_of(extensions)).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = protocol_version(inner, headers, Some(&session)) {
        return r;
    }
    if let Some(sharing) = &inner.sharing
        && session.shared.is_some()
    {
        // Gone for every service: their next request for it answers 404.
        return sharing.delete(inner.as_ref(), &session).await;
    }
    session.terminate();
    status_only(StatusCode::OK)
}
