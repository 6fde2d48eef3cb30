//! POST of the stateless era (protocol 2026-07-28): one request per POST, no session id,
//! served by a kept session of the era (see [`kept`](super::kept)).
//!
//! A POST names the era when its `MCP-Protocol-Version` names no handshake-era version and
//! it names no session (without the header: when its request carries the envelope); a
//! version neither era knows on a request of a session is the handshake era's to refuse
//! (`400`, "Unsupported protocol version", the literal other SDKs' clients match). What the
//! endpoint read (headers, `_meta`) travels down with the message (`EraRead`, `FoundMeta`),
//! so the request context does not scan the params again.
//!
//! The answer's route (`Route::Era`) stays a oneshot until the handler sends something that
//! is not its response. A lone response goes out as JSON with the status its error implies,
//! with no stream or channel built; the first progress or log message builds the SSE
//! stream; a handler with nothing sent when the head is due gets its stream then
//! (`settle_era_answer`). The response carries its error code to the POST
//! (`EraAnswer::Json`), so its status is known without reading the body, and it is
//! serialised once. An SSE stream complete with one event is still sent as JSON. Dropping a
//! streaming body before its end (the client closed the stream) pushes
//! `notifications/cancelled` for its request into the session: the era's cancellation,
//! which also ends a `subscriptions/listen` handler.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, StatusCode};
use modelctx_transport::{EraRead, Extensions};
use modelctx_types::{ErrorData, JsonRpcErrorResponse, JsonRpcMessage};

use super::reply::{bad_message, error_response, status_only};
use super::request::VersionHeader;
use super::session::Messages;
use super::table::Inner;
use super::{dispatch, era};

/// A POST of the stateless era (2026-07-28): one request, its headers checked against
/// its body, served by a session of the era lent to it alone (see
/// [`KeptSessions::acquire`](super::kept::KeptSessions::acquire)).
pub(super) async fn post(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &Extensions,
    version: &VersionHeader,
    mut messages: Messages,
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
    // Read in place: the body's one message goes on to the session in the same list.
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
    let meta = match era::check_headers(headers, version, request, &inner.metas) {
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
