//! The transport error type.

use std::fmt;

use modelctx_types::{ErrorData, InvalidMessage};

/// A transport fault. [`TransportError::kind`] says which, to `match` on; the
/// predicates are shorthand.
///
/// ```
/// use modelctx_transport::{TransportError, TransportErrorKind};
///
/// assert_eq!(TransportError::closed().kind(), TransportErrorKind::Closed);
/// ```
#[derive(Debug)]
pub struct TransportError {
    kind: Kind,
}

/// Which fault a [`TransportError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The transport is closed; nothing more can be sent or received.
    Closed,
    /// Bytes arrived that are not a valid message ([`TransportError::invalid_message`]).
    InvalidMessage,
    /// An I/O failure.
    Io,
    /// The transport refuses to carry the message ([`TransportError::refusal`]).
    Refused,
    /// Any other fault.
    Other,
}

#[derive(Debug)]
enum Kind {
    Closed,
    Invalid(InvalidMessage),
    Io(std::io::Error),
    Refused(ErrorData),
    Other(String),
}

impl TransportError {
    /// Which fault this is.
    pub fn kind(&self) -> TransportErrorKind {
        match self.kind {
            Kind::Closed => TransportErrorKind::Closed,
            Kind::Invalid(_) => TransportErrorKind::InvalidMessage,
            Kind::Io(_) => TransportErrorKind::Io,
            Kind::Refused(_) => TransportErrorKind::Refused,
            Kind::Other(_) => TransportErrorKind::Other,
        }
    }

    /// The transport is closed; nothing more can be sent or received.
    pub fn closed() -> Self {
        Self { kind: Kind::Closed }
    }

    /// Bytes arrived that are not a valid message; the receiver may answer with the
    /// error the [`InvalidMessage`] carries.
    pub fn invalid(invalid: InvalidMessage) -> Self {
        Self {
            kind: Kind::Invalid(invalid),
        }
    }

    /// An I/O failure.
    pub fn io(err: std::io::Error) -> Self {
        Self {
            kind: Kind::Io(err),
        }
    }

    /// The transport refuses to carry this message, for the reason a JSON-RPC error
    /// states: what the sender's caller gets, as if the peer had answered with it. The
    /// streamable HTTP server refuses so a request a handler sends in JSON-response mode
    /// (`-32600`: its POST's single JSON body can carry only the response).
    pub fn refused(error: ErrorData) -> Self {
        Self {
            kind: Kind::Refused(error),
        }
    }

    /// Any other fault, described.
    pub fn other(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Other(message.into()),
        }
    }

    /// Whether the transport is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self.kind, Kind::Closed)
    }

    /// The invalid message, when that is what this error reports.
    pub fn invalid_message(&self) -> Option<&InvalidMessage> {
        match &self.kind {
            Kind::Invalid(m) => Some(m),
            _ => None,
        }
    }

    /// The JSON-RPC error of a [`TransportError::refused`] message.
    pub fn refusal(&self) -> Option<&ErrorData> {
        match &self.kind {
            Kind::Refused(e) => Some(e),
            _ => None,
        }
    }

    /// Whether this is an I/O failure.
    pub fn is_io(&self) -> bool {
        matches!(self.kind, Kind::Io(_))
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Closed => f.write_str("transport closed"),
            Kind::Invalid(m) => write!(f, "invalid message: {m}"),
            Kind::Io(e) => write!(f, "transport I/O error: {e}"),
            Kind::Refused(e) => write!(f, "the transport refused the message: {e}"),
            Kind::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Io(e) => Some(e),
            Kind::Invalid(m) => Some(m),
            Kind::Refused(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for TransportError {
    fn from(err: std::io::Error) -> Self {
        Self::io(err)
    }
}
