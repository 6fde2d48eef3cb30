//! GET: the standalone SSE stream of a stateful session, opened or resumed.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, StatusCode};
use modelctx_transport::Extensions;

use super::era;
use super::event_store::EventId;
use super::reply::sse_response;
use super::request::{accepts, header_str, named_session};
use super::table::Inner;
use crate::headers::LAST_EVENT_ID;

/// GET: the session's standalone SSE stream, opened, or resumed after `Last-Event-ID`.
pub(super) async fn get(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Response {
    if !accepts(headers, ["text/event-stream"]) {
        return inner.reject(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept text/event-stream",
        );
    }
    let stateless = "Method Not Allowed: a stateless server has no standalone stream";
    let session = match named_session(inner, headers, extensions, stateless).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    // The client's `notifications/initialized` recorded by another service: the
    // runtime here takes it first (see `SessionState::missed_initialized`).
    session.hand_missed_initialized().await;
    let events = match header_str(headers, LAST_EVENT_ID) {
        Some(last) => {
            let Ok(after) = last.parse::<EventId>() else {
                return inner.reject(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: Last-Event-ID is not an event id of this server",
                );
            };
            let resumed = if session.follows(after) {
                // The GET's extensions and headers, for a request run again here.
                let mut extensions = extensions.get::<Extensions>().cloned().unwrap_or_default();
                extensions.insert(crate::headers::sensitive_headers(headers.clone()));
                session.follow(after, extensions).await
            } else {
                session.resume(after).await
            };
            match resumed {
                Ok(events) => events,
                Err(()) => {
                    return inner.reject(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: Last-Event-ID names no stream of this session that can be replayed",
                    );
                }
            }
        }
        None => match session.open_standalone() {
            Some(events) => events,
            None => {
                return inner.reject(
                    StatusCode::CONFLICT,
                    "Conflict: only one standalone SSE stream is allowed per session",
                );
            }
        },
    };
    // One GET stream per session across services: the stream is held here only if the
    // registry records the hold.
    let events = match &inner.sharing {
        Some(sharing) if session.shared.is_some() => {
            match sharing
                .hold_stream(inner.as_ref(), &session, headers, events)
                .await
            {
                Ok(events) => events,
                Err(r) => return r,
            }
        }
        _ => events,
    };
    let mut response = sse_response(events);
    if let Some(v) = &session.id_header {
        response
            .headers_mut()
            .insert(era::SESSION_ID_HEADER.clone(), v.clone());
    }
    response
}
