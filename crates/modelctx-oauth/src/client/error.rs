//! The error of every OAuth client operation.

use std::fmt;

/// What went wrong, broadly; see [`OAuthError::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration the client cannot work with (missing redirect handler, bad URL…).
    Config,
    /// A URL that is not `https` (plain `http` is allowed for loopback only), or that
    /// carries a fragment or credentials.
    InsecureUrl,
    /// Neither protected-resource nor authorization-server metadata could be found.
    Discovery,
    /// A metadata document, token or registration response that is not what the
    /// specification says (bad JSON, missing fields, oversize).
    InvalidResponse,
    /// The protected-resource metadata names another resource than the server.
    ResourceMismatch,
    /// An issuer that does not match: the authorization-server metadata's `issuer`,
    /// the `iss` of an authorization response (RFC 9207), or the issuer of configured
    /// credentials after the resource moved to another authorization server.
    IssuerMismatch,
    /// The authorization server does not advertise PKCE with `S256`.
    PkceUnsupported,
    /// Dynamic client registration failed (see [`OAuthError::status`] and the message
    /// for the server's answer).
    Registration,
    /// The authorization response was an error (the user or server refused), lacked
    /// the code, or could not be obtained.
    Authorization,
    /// The `state` of the authorization response is not the one sent.
    StateMismatch,
    /// The token endpoint refused (see [`OAuthError::oauth_error`]).
    TokenEndpoint,
    /// The MCP server answered 403 `insufficient_scope` and the client was configured
    /// not to step up (`max_step_ups(0)`): see [`OAuthError::scopes`] and
    /// [`OAuthError::resource_metadata`]; the message holds the server's description.
    InsufficientScope,
    /// An HTTP exchange failed (connection, unexpected status, redirect refused).
    Http,
    /// A time limit ran out.
    Timeout,
    /// The credential store failed.
    Store,
    /// A JWT could not be signed or a key could not be read.
    Key,
    /// The application's [`AuthorizationHandler`](crate::AuthorizationHandler) or
    /// [`JwtBearerAssertion`](crate::JwtBearerAssertion) failed.
    Application,
}

/// An OAuth client failure: a [`kind`](Self::kind), a human-readable message, and where
/// the server said so, the HTTP status and the OAuth `error` code. Never contains a
/// token or a secret.
#[derive(Clone)]
pub struct OAuthError {
    kind: ErrorKind,
    message: String,
    status: Option<u16>,
    oauth_error: Option<String>,
    scopes: Vec<String>,
    resource_metadata: Option<String>,
}

impl OAuthError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            oauth_error: None,
            scopes: Vec::new(),
            resource_metadata: None,
        }
    }

    /// A 403 `insufficient_scope` challenge, for the caller to handle.
    pub(crate) fn insufficient_scope(
        scopes: Vec<String>,
        resource_metadata: Option<String>,
        description: Option<&str>,
    ) -> Self {
        let mut message = format!(
            "the server needs the scope {:?}; not stepping up (max_step_ups is 0)",
            scopes.join(" ")
        );
        if let Some(d) = description {
            message.push_str(": ");
            message.push_str(&excerpt(d.as_bytes()));
        }
        let mut e = Self::new(ErrorKind::InsufficientScope, message)
            .with_status(403)
            .with_oauth_error("insufficient_scope");
        e.scopes = scopes;
        e.resource_metadata = resource_metadata;
        e
    }

    /// The error of an application-supplied handler or assertion provider.
    pub fn application(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Application, message)
    }

    pub(crate) fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub(crate) fn with_oauth_error(mut self, code: impl Into<String>) -> Self {
        self.oauth_error = Some(code.into());
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The HTTP status of the answer that caused the failure, if any.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The OAuth `error` code the server sent (`invalid_grant`, `access_denied`…).
    pub fn oauth_error(&self) -> Option<&str> {
        self.oauth_error.as_deref()
    }

    /// The message alone.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The scopes a 403 `insufficient_scope` challenge asked for
    /// ([`ErrorKind::InsufficientScope`]); empty otherwise.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The `resource_metadata` URL of a 403 `insufficient_scope` challenge, if it had
    /// one.
    pub fn resource_metadata(&self) -> Option<&str> {
        self.resource_metadata.as_deref()
    }
}

modelctx_types::__debug_shows!(OAuthError, |v| {
    kind: &v.kind,
    message: &v.message,
    status: &v.status,
    oauth_error: &v.oauth_error,
    scopes: &v.scopes,
    resource_metadata: &v.resource_metadata,
});

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(code) = &self.oauth_error {
            write!(f, " (error {code})")?;
        }
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        Ok(())
    }
}

impl std::error::Error for OAuthError {}

/// Bounded, printable excerpt of a server's body for an error message.
pub(crate) fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 512;
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX)]);
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if body.len() > MAX {
        out.push('…');
    }
    out
}
