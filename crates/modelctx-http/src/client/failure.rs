//! How the client transport fails a request, and when it tries again: the prefixes of
//! its failure reasons (undelivered, interrupted, session gone) and the connect backoff.
//!
//! A send error is split by reqwest's `is_connect()` (`after_send_error`):
//!
//! - the request never left (refused, unreachable, TLS handshake): any request may be tried
//!   again after the backoff, reporting `Reconnecting` through
//!   `HttpClientHandle::connection_state`, and it fails as `undelivered` once the attempts
//!   are used up;
//! - it may have run (the body went out, then the answer or its stream broke and could not
//!   be resumed, a resume GET failed, or the session ended meanwhile): the reason starts
//!   with `INTERRUPTED` and the request fails as `interrupted`, unless the policy calls it
//!   idempotent, in which case it is sent again (same id, new POST, after re-initialising
//!   when the session is gone) and the session sees one answer. Losing the session leaves
//!   such requests to their own tasks (the `retryable` set).
//!
//! The default policy, `ReconnectPolicy::never()`, keeps failures fast.

use crate::sse::SseTooLarge;
use http::StatusCode;
use modelctx_transport::{ConnectionState, TransportError, TransportMessage};
use modelctx_types::{ErrorCode, ErrorData, JsonRpcErrorResponse, JsonRpcMessage, RequestId};

use super::ClientInner;

/// The error code of requests failed by the transport (not by the server).
const TRANSPORT_ERROR: ErrorCode = ErrorCode(-32000);
/// How a failure to reach the server at all begins (the request never left).
pub(super) const UNDELIVERED: &str = "HTTP request failed";
/// How a failure after the request left begins (the server may have run it).
pub(super) const INTERRUPTED: &str =
    "the connection dropped with the request in flight (it may or may not have run)";

/// How a refusal for a session the server no longer knows begins.
pub(super) const SESSION_GONE: &str = "the server ended the session (HTTP 404)";

/// A request could not be sent (`error`). The connection could not even be made, so
/// nothing left: waits the policy's backoff for `attempt` (counted here) and returns
/// `Ok` to try again, or the reason to fail with once attempts are used up. Any other
/// error came after the request left: the reason says it may have run.
pub(super) async fn after_send_error(
    inner: &ClientInner,
    error: &reqwest::Error,
    attempt: &mut u32,
) -> Result<(), String> {
    let chain = super::error_chain(error);
    if !error.is_connect() {
        return Err(format!("{INTERRUPTED}: {chain}"));
    }
    *attempt += 1;
    if *attempt > inner.policy.attempts() || inner.closed.is_cancelled() {
        let reason = match *attempt {
            1 => format!("{UNDELIVERED}: {chain}"),
            n => format!("{UNDELIVERED} ({n} attempts): {chain}"),
        };
        inner.set_connection(ConnectionState::Failed(reason.clone()));
        return Err(reason);
    }
    inner.set_connection(ConnectionState::Reconnecting { attempt: *attempt });
    tokio::select! {
        () = tokio::time::sleep(inner.policy.delay(*attempt)) => Ok(()),
        () = inner.closed.cancelled() => Err(TransportError::closed().to_string()),
    }
}

/// Fails request `id` with a transport error, unless it was answered meanwhile.
pub(super) async fn fail_request(inner: &ClientInner, id: RequestId, reason: String) {
    inner.state().tool_lists.remove(&id);
    // A closed transport fails everything pending as closed, through the session.
    if inner.state().inflight.remove(&id).is_none() || inner.closed.is_cancelled() {
        return;
    }
    let error = if reason.starts_with(UNDELIVERED) {
        modelctx_transport::undelivered(reason)
    } else if reason.starts_with(INTERRUPTED) {
        modelctx_transport::interrupted(reason)
    } else {
        ErrorData::new(TRANSPORT_ERROR, reason)
    };
    let message = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id), error));
    let _ = inner.tx.send(TransportMessage::new(message)).await;
}

/// Why a request fails when its body could not be read: a body over the cap is the
/// server's doing, said as such (and not sent again: it would be as large again); a
/// connection that failed leaves the request interrupted.
pub(super) fn body_reason(error: super::BodyError) -> String {
    if error.is_too_large() {
        error.to_string()
    } else {
        format!("{INTERRUPTED}: {error}")
    }
}

/// Why a request fails when an event on its stream went over the cap.
pub(super) fn event_too_large(error: &SseTooLarge) -> String {
    format!("{error} (max_event_bytes); the response stream was closed")
}

/// Why a request failed with HTTP `status`: the message of the JSON-RPC error in the
/// body, when there is one (a body over the cap is not read).
pub(super) async fn status_reason(
    inner: &ClientInner,
    status: StatusCode,
    response: reqwest::Response,
) -> String {
    let text = super::body::refusal_text(response, inner.max_body_bytes).await;
    let detail = serde_json::from_str::<JsonRpcMessage>(&text)
        .ok()
        .and_then(|m| match m {
            JsonRpcMessage::Error(e) => Some(e.error.message.to_string()),
            _ => None,
        })
        .unwrap_or_default();
    format!("the server answered HTTP {status}: {detail}")
}
