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

/// How a failure by an HTTP error status without a JSON-RPC answer begins; the status
/// code follows.
pub(super) const ANSWERED: &str = "the server answered HTTP ";

/// The HTTP status a failure reason names, if it is a failure by status.
fn status_of(reason: &str) -> Option<u16> {
    if reason.starts_with(SESSION_GONE) || reason.contains(&format!(": {SESSION_GONE}")) {
        return Some(404);
    }
    let code = reason.strip_prefix(ANSWERED)?.get(..3)?;
    code.parse().ok().filter(|c| (100..600).contains(c))
}

/// The HTTP status of the response that failed a request, when the streamable HTTP
/// client transport failed it because of one (an error status without a JSON-RPC
/// answer: 401 or 403 the auth hook did not resolve, a 404 for a session the server
/// ended, a 5xx): read from `data.httpStatus`, which the transport sets on such errors.
/// `None` for a server's own JSON-RPC error and for failures of the connection.
pub fn http_status(error: &ErrorData) -> Option<u16> {
    error
        .data
        .as_ref()?
        .get(HTTP_STATUS)?
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
}

/// The key of `data` that carries the HTTP status of a failure by status.
const HTTP_STATUS: &str = "httpStatus";

/// The key of `data` that carries what broke a response body mid-read: the original
/// error's kind (and the kind of the I/O error under it) and its chain of causes.
const CAUSE: &str = "cause";

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
    fail_request_with(inner, id, reason, None).await;
}

/// [`fail_request`], with the error that broke the request's response body (its
/// kind and chain of causes go into `data.cause`).
pub(super) async fn fail_request_with(
    inner: &ClientInner,
    id: RequestId,
    reason: String,
    cause: Option<BrokenBody>,
) {
    inner.state().tool_lists.remove(&id);
    // A closed transport fails everything pending as closed, through the session.
    if inner.state().inflight.remove(&id).is_none() || inner.closed.is_cancelled() {
        return;
    }
    let status = status_of(&reason);
    let mut error = if reason.starts_with(UNDELIVERED) {
        modelctx_transport::undelivered(reason)
    } else if reason.starts_with(INTERRUPTED) {
        modelctx_transport::interrupted(reason)
    } else {
        ErrorData::new(TRANSPORT_ERROR, reason)
    };
    let data = error.data.get_or_insert_with(|| serde_json::json!({}));
    if let Some(status) = status {
        data[HTTP_STATUS] = status.into();
    }
    if let Some(cause) = cause {
        data[CAUSE] = serde_json::json!({"kind": cause.kind, "message": cause.message});
        if let Some(io_kind) = cause.io_kind {
            data[CAUSE]["ioKind"] = io_kind.into();
        }
    }
    if data.as_object().is_some_and(serde_json::Map::is_empty) {
        error.data = None;
    }
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
    format!("{ANSWERED}{status}: {detail}")
}

/// The error that broke a response body while it was read: what kind of failure it
/// was (`timeout`; `io`, the connection failed underneath, with the I/O error's kind
/// in `ioKind`; else `body`) and its message with every cause.
#[derive(Debug, Clone)]
pub(crate) struct BrokenBody {
    kind: &'static str,
    io_kind: Option<String>,
    pub(super) message: String,
}

impl BrokenBody {
    pub(super) fn of(error: &reqwest::Error) -> Self {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        let mut io_kind = None;
        while let Some(e) = source {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                io_kind = Some(format!("{:?}", io.kind()));
                break;
            }
            source = e.source();
        }
        let kind = if error.is_timeout() {
            "timeout"
        } else if io_kind.is_some() {
            "io"
        } else {
            "body"
        };
        Self {
            kind,
            io_kind,
            message: super::error_chain(error),
        }
    }
}
