//! POST of the stateless era (protocol 2026-07-28): one request per POST, no session id,
//! served by a kept session of the era (see [`kept`](super::kept)).

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, StatusCode};
use modelctx_transport::{EraRead, Extensions};
use modelctx_types::{ErrorData, JsonRpcErrorResponse, JsonRpcMessage};

use super::reply::{bad_message, error_response, status_only};
use super::table::Inner;
use super::{dispatch, era};

/// A POST of the stateless era (2026-07-28): one request, its headers checked against
/// its body, served by a session of the era lent to it alone (see
/// [`KeptSessions::acquire`](super::kept::KeptSessions::acquire)).
pub(super) async fn post(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &Extensions,
    mut messages: Vec<JsonRpcMessage>,
    batch: bool,
) -> Response {
    if batch {
        return bad_message(
            &inner.config,
            ErrorData::invalid_request(
                "Invalid request: protocol version 2026-07-28 has no batches; send one message per POST",
            ),
        );
    }
    // Read in place: the body's one message goes on to the session in the same vector.
    let request = match messages.as_slice() {
        [] => return bad_message(&inner.config, ErrorData::invalid_request("empty body")),
        // The era defines no client notification over HTTP (closing a response stream
        // cancels its request): accepted, and nothing to deliver.
        [JsonRpcMessage::Notification(_), ..] => return status_only(StatusCode::ACCEPTED),
        [JsonRpcMessage::Request(request), ..] => request,
        [JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_), ..] => {
            return bad_message(
                &inner.config,
                ErrorData::invalid_request(
                    "Invalid request: in protocol version 2026-07-28 the client sends no responses",
                ),
            );
        }
    };
    let meta = match era::check_headers(headers, request, &inner.metas) {
        Ok(meta) => meta,
        Err(error) => {
            inner.report(StatusCode::BAD_REQUEST, error.message.to_string());
            return error_response(
                StatusCode::BAD_REQUEST,
                JsonRpcErrorResponse::new(Some(request.id.clone()), error),
            );
        }
    };
    let era = EraRead {
        mirrored: era::mirrored_params(headers),
        meta,
    };
    // A handshake (a server that does not serve the era answers one) changes its
    // session: that session is not lent again.
    let keep = request.method != "initialize";
    let new = || inner.create_session(None, false, false, true, None, None);
    let Some(lease) = inner.kept.acquire(keep, new) else {
        return inner.reject(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the session could not be created",
        );
    };
    messages.truncate(1);
    let session = lease.session().clone();
    dispatch::dispatch(inner, session, messages, extensions, false, Some(era)).await
}
