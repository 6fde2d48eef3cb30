//! What a request to the client comes back with: how the user answered an
//! elicitation ([`Elicited`], [`FormValues`]), and why a request failed
//! ([`ClientRequestError`]).

use std::collections::BTreeMap;
use std::fmt;

use modelctx_session::SessionError;
use modelctx_types::{ElicitValue, ErrorData};

/// The submitted values of a form, by field name.
pub type FormValues = BTreeMap<String, ElicitValue>;

/// How the user answered an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// Accepted: the submitted form (checked against the form), or `()` for a URL
    /// request, where accepting only means the user agreed to open the link.
    Accepted(T),
    /// Explicitly declined.
    Declined,
    /// Dismissed without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The accepted value, if the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(value) => Some(value),
            Self::Declined | Self::Cancelled => None,
        }
    }

    /// Whether the user accepted.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Self::Accepted(_))
    }
}

/// Why a request to the client failed: refused locally, an answer that does not fit, or
/// the session's error (the client's JSON-RPC error, a timeout, a closed connection).
///
/// Converts into the [`ErrorData`] a handler returns, so `?` works in handlers: a local
/// refusal becomes `-32602`, the client's error passes through unchanged.
#[derive(Debug)]
pub struct ClientRequestError {
    kind: Kind,
}

/// Which way a [`ClientRequestError`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientRequestErrorKind {
    /// Refused before sending: an undeclared capability or invalid parameters.
    Refused,
    /// A typed form that does not fit the spec's restricted form schema.
    UnfitForm,
    /// The client's answer does not match what was asked.
    InvalidAnswer,
    /// The session's error ([`ClientRequestError::session_error`]).
    Session,
}

#[derive(Debug)]
enum Kind {
    /// Refused before sending: an undeclared capability or invalid parameters.
    Refused(String),
    /// The typed form does not fit the spec's restricted form schema (only typed forms,
    /// feature `schemars`, can be unfit).
    #[cfg_attr(not(feature = "schemars"), allow(dead_code))]
    UnfitForm(String),
    /// The client's answer does not match what was asked.
    InvalidAnswer(String),
    Session(SessionError),
}

impl ClientRequestError {
    pub(super) fn refused(reason: impl Into<String>) -> Self {
        Self {
            kind: Kind::Refused(reason.into()),
        }
    }

    pub(super) fn invalid_answer(reason: impl Into<String>) -> Self {
        Self {
            kind: Kind::InvalidAnswer(reason.into()),
        }
    }

    /// A typed form that does not fit the spec's restricted form schema.
    #[cfg(feature = "schemars")]
    pub(super) fn unfit_form(reason: impl Into<String>) -> Self {
        Self {
            kind: Kind::UnfitForm(reason.into()),
        }
    }

    /// Which way the request failed; the `is_*` predicates are shorthand (`is_refused`
    /// covers both local refusals, `Refused` and `UnfitForm`).
    pub fn kind(&self) -> ClientRequestErrorKind {
        match self.kind {
            Kind::Refused(_) => ClientRequestErrorKind::Refused,
            Kind::UnfitForm(_) => ClientRequestErrorKind::UnfitForm,
            Kind::InvalidAnswer(_) => ClientRequestErrorKind::InvalidAnswer,
            Kind::Session(_) => ClientRequestErrorKind::Session,
        }
    }

    /// Whether the request was refused locally (nothing was sent): the client did not
    /// declare the capability or mode it needs, or its parameters break the spec's rules.
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, Kind::Refused(_) | Kind::UnfitForm(_))
    }

    /// Whether a typed form could not be expressed as the spec's restricted form schema.
    pub fn is_unfit_form(&self) -> bool {
        matches!(self.kind, Kind::UnfitForm(_))
    }

    /// Whether the client's answer did not match the request (e.g. a form answer
    /// outside the form's schema).
    pub fn is_invalid_answer(&self) -> bool {
        matches!(self.kind, Kind::InvalidAnswer(_))
    }

    /// The session error, when the request was sent and failed there.
    pub fn session_error(&self) -> Option<&SessionError> {
        match &self.kind {
            Kind::Session(e) => Some(e),
            _ => None,
        }
    }

    /// The JSON-RPC error the client answered with, if it did.
    pub fn protocol_error(&self) -> Option<&ErrorData> {
        self.session_error()?.protocol_error()
    }

    /// The JSON-RPC error reporting this failure: `-32602` for a local refusal, the
    /// client's own error when it answered with one, `-32603` otherwise.
    pub fn to_error_data(&self) -> ErrorData {
        match &self.kind {
            Kind::Refused(reason) => ErrorData::invalid_params(reason.clone()),
            Kind::UnfitForm(_) | Kind::InvalidAnswer(_) => {
                ErrorData::internal_error(self.to_string())
            }
            Kind::Session(e) => e.to_error_data(),
        }
    }
}

impl fmt::Display for ClientRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Refused(reason) => write!(f, "refused: {reason}"),
            Kind::UnfitForm(reason) => write!(f, "the type cannot be a form: {reason}"),
            Kind::InvalidAnswer(reason) => write!(f, "invalid answer from the client: {reason}"),
            Kind::Session(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ClientRequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Session(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SessionError> for ClientRequestError {
    fn from(e: SessionError) -> Self {
        Self {
            kind: Kind::Session(e),
        }
    }
}

impl From<ClientRequestError> for ErrorData {
    fn from(e: ClientRequestError) -> Self {
        e.to_error_data()
    }
}
