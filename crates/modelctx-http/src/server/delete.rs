//! DELETE: the client ends its session.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, StatusCode};

use super::reply::status_only;
use super::request::named_session;
use super::table::Inner;

/// DELETE: ends the session the request names.
pub(super) async fn delete(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Response {
    let stateless = "Method Not Allowed: a stateless server has no sessions to end";
    let session = match named_session(inner, headers, extensions, stateless).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Some(sharing) = &inner.sharing
        && session.shared.is_some()
    {
        // Gone for every service: their next request for it answers 404.
        return sharing.delete(inner.as_ref(), &session).await;
    }
    session.terminate();
    status_only(StatusCode::OK)
}
