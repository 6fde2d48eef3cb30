//! The session error type.

use std::fmt;

use modelctx_transport::TransportError;
use modelctx_types::ErrorData;

/// Why an outbound request or notification failed. [`SessionError::kind`] says which
/// way, to `match` on; the `is_*` predicates are shorthand for one kind each.
///
/// ```
/// use modelctx_session::{SessionError, SessionErrorKind};
///
/// let error = SessionError::refused("the server has no tools");
/// match error.kind() {
///     SessionErrorKind::Refused => assert!(error.is_refused()),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Debug)]
pub struct SessionError {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// The peer answered with a JSON-RPC error.
    Protocol(ErrorData),
    /// No response within the timeout.
    Timeout,
    /// The request was cancelled through its handle.
    Cancelled,
    /// The connection closed before a response arrived.
    Closed,
    /// Refused locally, before anything was sent.
    Refused(String),
    /// The result could not be decoded into the method's result type.
    InvalidResult(String),
    /// The peer's response could not be read as a response at all.
    InvalidResponse(String),
    /// The transport refused to carry the request, with this JSON-RPC error.
    TransportRefused(ErrorData),
    /// The transport failed.
    Transport(TransportError),
    /// Another error, told with a fuller explanation (see [`SessionError::explained`]).
    Explained(String, Box<SessionError>),
}

/// Which way a [`SessionError`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionErrorKind {
    /// The peer answered with a JSON-RPC error ([`SessionError::protocol_error`]), or the
    /// transport refused to carry the request with one.
    Protocol,
    /// The connection dropped while the request was in flight: the peer may or may not
    /// have run it ([`SessionError::is_interrupted`]).
    Interrupted,
    /// The transport could not deliver the request: the peer never saw it.
    Undelivered,
    /// No response within the timeout.
    Timeout,
    /// The request was cancelled through its handle.
    Cancelled,
    /// The connection closed before a response arrived.
    Closed,
    /// Refused locally, before anything was sent.
    Refused,
    /// The result did not decode into the method's result type, or is not one the
    /// caller can accept.
    InvalidResult,
    /// The peer's response could not be read as a response at all.
    InvalidResponse,
    /// The transport failed otherwise.
    Transport,
}

impl SessionError {
    /// The failure's name in telemetry (`error.type`) when it is no error response.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self.kind() {
            SessionErrorKind::Protocol => "protocol",
            SessionErrorKind::Interrupted => "interrupted",
            SessionErrorKind::Undelivered => "undelivered",
            SessionErrorKind::Timeout => "timeout",
            SessionErrorKind::Cancelled => "cancelled",
            SessionErrorKind::Closed => "closed",
            SessionErrorKind::Refused => "refused",
            SessionErrorKind::InvalidResult => "invalid_result",
            SessionErrorKind::InvalidResponse => "invalid_response",
            SessionErrorKind::Transport => "transport",
        }
    }

    /// Which way the call failed (under any explanation added to it).
    pub fn kind(&self) -> SessionErrorKind {
        match self.root() {
            Kind::Protocol(e) if modelctx_transport::is_interrupted(e) => {
                SessionErrorKind::Interrupted
            }
            Kind::Protocol(e) if modelctx_transport::is_undelivered(e) => {
                SessionErrorKind::Undelivered
            }
            Kind::Protocol(_) | Kind::TransportRefused(_) => SessionErrorKind::Protocol,
            Kind::Timeout => SessionErrorKind::Timeout,
            Kind::Cancelled => SessionErrorKind::Cancelled,
            Kind::Closed => SessionErrorKind::Closed,
            Kind::Refused(_) => SessionErrorKind::Refused,
            Kind::InvalidResult(_) => SessionErrorKind::InvalidResult,
            Kind::InvalidResponse(_) => SessionErrorKind::InvalidResponse,
            Kind::Transport(_) => SessionErrorKind::Transport,
            Kind::Explained(_, inner) => inner.kind(),
        }
    }

    pub(crate) fn protocol(error: ErrorData) -> Self {
        Self {
            kind: Kind::Protocol(error),
        }
    }
    pub(crate) fn timeout() -> Self {
        Self {
            kind: Kind::Timeout,
        }
    }
    pub(crate) fn cancelled() -> Self {
        Self {
            kind: Kind::Cancelled,
        }
    }
    pub(crate) fn closed() -> Self {
        Self { kind: Kind::Closed }
    }
    /// A result that does not decode or is not one the caller can accept (e.g. a
    /// `resultType` the client does not support).
    pub fn invalid_result(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::InvalidResult(message.into()),
        }
    }
    pub(crate) fn invalid_response(reason: String) -> Self {
        Self {
            kind: Kind::InvalidResponse(reason),
        }
    }
    pub(crate) fn transport(err: TransportError) -> Self {
        if err.is_closed() {
            return Self::closed();
        }
        if let Some(refusal) = err.refusal() {
            return Self {
                kind: Kind::TransportRefused(refusal.clone()),
            };
        }
        Self {
            kind: Kind::Transport(err),
        }
    }

    /// A request or notification refused locally, with the reason: the peer did not
    /// declare the capability, the session is not initialised, and the like. Role crates
    /// use it for their own local checks.
    pub fn refused(reason: impl Into<String>) -> Self {
        Self {
            kind: Kind::Refused(reason.into()),
        }
    }

    /// The same error told with `explanation` in place of its own text (what was tried
    /// before it, and what came back): every predicate, and the JSON-RPC error it
    /// carries, stay the original's, which [`source`](std::error::Error::source) gives.
    #[must_use]
    pub fn explained(self, explanation: impl Into<String>) -> Self {
        Self {
            kind: Kind::Explained(explanation.into(), Box::new(self)),
        }
    }

    /// The error under its explanations.
    fn root(&self) -> &Kind {
        let mut kind = &self.kind;
        while let Kind::Explained(_, inner) = kind {
            kind = &inner.kind;
        }
        kind
    }

    /// A JSON-RPC error the peer reported other than as a response to the request —
    /// the error a task of the tasks extension failed with, inlined in `tasks/get`. It
    /// reads as [`SessionError::protocol_error`] like any other.
    pub fn from_peer_error(error: ErrorData) -> Self {
        Self::protocol(error)
    }

    /// The JSON-RPC error the peer answered with, or the one the transport refused the
    /// request with (a request the streamable HTTP server cannot carry: `-32600`).
    pub fn protocol_error(&self) -> Option<&ErrorData> {
        match self.root() {
            Kind::Protocol(e) | Kind::TransportRefused(e) => Some(e),
            _ => None,
        }
    }

    /// Turns the error into the JSON-RPC error it carries, if any.
    pub fn into_protocol_error(self) -> Result<ErrorData, Self> {
        match self.kind {
            Kind::Protocol(e) | Kind::TransportRefused(e) => Ok(e),
            Kind::Explained(explanation, inner) => inner
                .into_protocol_error()
                .map_err(|inner| inner.explained(explanation)),
            kind => Err(Self { kind }),
        }
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self.root(), Kind::Timeout)
    }

    /// Whether the request was cancelled through its handle.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.root(), Kind::Cancelled)
    }

    /// Whether the connection closed.
    pub fn is_closed(&self) -> bool {
        matches!(self.root(), Kind::Closed)
    }

    /// Whether the call was refused locally before anything was sent.
    pub fn is_refused(&self) -> bool {
        matches!(self.root(), Kind::Refused(_))
    }

    /// Whether the connection to the peer dropped while the request was in flight and
    /// the transport did not send it again: the peer **may or may not have run it**.
    /// Sending it again is the caller's decision (a client transport re-sends only
    /// idempotent requests by itself, see `modelctx_transport::ReconnectPolicy`).
    pub fn is_interrupted(&self) -> bool {
        matches!(self.root(), Kind::Protocol(e) if modelctx_transport::is_interrupted(e))
    }

    /// Whether the transport could not deliver the request at all (no connection to the
    /// peer; attempts to reconnect, if any, failed): the peer never saw it.
    pub fn is_undelivered(&self) -> bool {
        matches!(self.root(), Kind::Protocol(e) if modelctx_transport::is_undelivered(e))
    }

    /// Whether the peer's result did not decode into the method's result type.
    pub fn is_invalid_result(&self) -> bool {
        matches!(self.root(), Kind::InvalidResult(_))
    }

    /// Whether the peer answered with a response that could not be read: an error
    /// object without `message` or with a `code` that is not an integer, both `result`
    /// and `error`, and the like. The call fails as soon as it arrives
    /// (rather than at its timeout); the session goes on and nothing answers the peer.
    /// [`SessionError::to_error_data`] reports it as `-32603`.
    pub fn is_invalid_response(&self) -> bool {
        matches!(self.root(), Kind::InvalidResponse(_))
    }

    /// The JSON-RPC error that reports this failure to a peer: the protocol error itself,
    /// or an internal error describing the local failure.
    pub fn to_error_data(&self) -> ErrorData {
        match self.root() {
            Kind::Protocol(e) | Kind::TransportRefused(e) => e.clone(),
            _ => ErrorData::internal_error(self.to_string()),
        }
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Protocol(e) if modelctx_transport::is_interrupted(e) => write!(
                f,
                "the connection dropped with the request in flight; it may or may not have run: {}",
                e.message
            ),
            Kind::Protocol(e) if modelctx_transport::is_undelivered(e) => {
                write!(f, "the request was not delivered: {}", e.message)
            }
            Kind::Protocol(e) => write!(f, "peer returned an error: {e}"),
            Kind::Timeout => f.write_str("request timed out"),
            Kind::Cancelled => f.write_str("request cancelled"),
            Kind::Closed => f.write_str("connection closed"),
            Kind::Refused(r) => write!(f, "refused: {r}"),
            Kind::InvalidResult(m) => write!(f, "invalid result: {m}"),
            Kind::InvalidResponse(m) => write!(f, "invalid response from peer: {m}"),
            Kind::TransportRefused(e) => write!(f, "the transport refused the request: {e}"),
            Kind::Transport(e) => write!(f, "transport error: {e}"),
            Kind::Explained(explanation, _) => f.write_str(explanation),
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Protocol(e) | Kind::TransportRefused(e) => Some(e),
            Kind::Transport(e) => Some(e),
            Kind::Explained(_, inner) => Some(inner.as_ref()),
            _ => None,
        }
    }
}

impl From<ErrorData> for SessionError {
    fn from(e: ErrorData) -> Self {
        Self::protocol(e)
    }
}

/// A transport that failed, as a session error: [`SessionErrorKind::Closed`] for a
/// closed transport, [`SessionErrorKind::Protocol`] for one that refused with a
/// JSON-RPC error, [`SessionErrorKind::Transport`] otherwise (a child process that
/// could not start, say).
impl From<TransportError> for SessionError {
    fn from(e: TransportError) -> Self {
        Self::transport(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explained_error_keeps_what_it_explains() {
        let refusal = ErrorData::invalid_request("already initialized");
        let explained = SessionError::protocol(refusal.clone())
            .explained("sent initialize twice")
            .explained("tried server/discover, then initialize twice");
        assert_eq!(
            explained.to_string(),
            "tried server/discover, then initialize twice"
        );
        assert_eq!(explained.protocol_error(), Some(&refusal));
        assert_eq!(explained.to_error_data(), refusal);
        let source = std::error::Error::source(&explained).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("sent initialize twice"));
        assert_eq!(explained.into_protocol_error().ok(), Some(refusal));

        let timeout = SessionError::timeout().explained("no answer to server/discover");
        assert!(timeout.is_timeout() && !timeout.is_closed());
        let timeout = timeout.into_protocol_error().unwrap_err();
        assert_eq!(timeout.to_string(), "no answer to server/discover");
        assert_eq!(
            timeout.to_error_data().message,
            "no answer to server/discover"
        );
    }

    #[test]
    fn the_kind_agrees_with_the_predicates_under_any_explanation() {
        let cases = [
            (SessionError::timeout(), SessionErrorKind::Timeout),
            (SessionError::cancelled(), SessionErrorKind::Cancelled),
            (SessionError::closed(), SessionErrorKind::Closed),
            (SessionError::refused("no"), SessionErrorKind::Refused),
            (
                SessionError::invalid_result("bad"),
                SessionErrorKind::InvalidResult,
            ),
            (
                SessionError::invalid_response("bad".into()),
                SessionErrorKind::InvalidResponse,
            ),
            (
                SessionError::protocol(ErrorData::method_not_found("x")),
                SessionErrorKind::Protocol,
            ),
            (
                SessionError::protocol(modelctx_transport::interrupted("dropped")),
                SessionErrorKind::Interrupted,
            ),
            (
                SessionError::protocol(modelctx_transport::undelivered("refused")),
                SessionErrorKind::Undelivered,
            ),
        ];
        for (error, kind) in cases {
            let explained = error.explained("while connecting");
            assert_eq!(explained.kind(), kind, "{explained:?}");
            assert_eq!(explained.is_timeout(), kind == SessionErrorKind::Timeout);
            assert_eq!(
                explained.is_cancelled(),
                kind == SessionErrorKind::Cancelled
            );
            assert_eq!(explained.is_closed(), kind == SessionErrorKind::Closed);
            assert_eq!(explained.is_refused(), kind == SessionErrorKind::Refused);
            assert_eq!(
                explained.is_interrupted(),
                kind == SessionErrorKind::Interrupted
            );
            assert_eq!(
                explained.is_undelivered(),
                kind == SessionErrorKind::Undelivered
            );
            assert_eq!(
                explained.is_invalid_result(),
                kind == SessionErrorKind::InvalidResult
            );
            assert_eq!(
                explained.is_invalid_response(),
                kind == SessionErrorKind::InvalidResponse
            );
        }
    }
}
