//! What can go wrong consuming skills.

use std::fmt;

use modelctx_session::SessionError;

/// What kind of failure a [`SkillsError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillsErrorKind {
    /// The server did not declare the extension (or `directoryRead`): nothing was sent.
    NotOffered,
    /// The request failed (see [`SkillsError::session_error`]).
    Session,
    /// An entry is malformed; a host must not load it.
    InvalidEntry,
    /// A fetched file does not match its entry: size, digest, or (for a `SKILL.md`)
    /// frontmatter. The content was not used.
    Verification,
    /// A file the entry does not list was asked for: refused without a request.
    Unlisted,
    /// The entry's `resources` is `"dynamic"`: nothing to verify against.
    Dynamic,
    /// The entry exceeds the SEP's per-skill limits.
    Limits,
    /// A file would be written outside the target directory (or through a link).
    UnsafePath,
    /// Writing a materialised file failed.
    Io,
}

/// A failure to list, get, load, read or materialise a skill, naming the file (URI)
/// it is about.
#[derive(Debug)]
pub struct SkillsError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    kind: SkillsErrorKind,
    uri: Option<String>,
    message: String,
    session: Option<SessionError>,
}

impl SkillsError {
    fn new(kind: SkillsErrorKind, uri: Option<&str>, message: impl Into<String>) -> Self {
        Self(Box::new(Inner {
            kind,
            uri: uri.map(str::to_owned),
            message: message.into(),
            session: None,
        }))
    }

    pub(crate) fn not_offered(message: String) -> Self {
        Self::new(SkillsErrorKind::NotOffered, None, message)
    }

    pub(crate) fn session(what: &str, error: SessionError) -> Self {
        let mut e = Self::new(SkillsErrorKind::Session, Some(what), error.to_string());
        e.0.session = Some(error);
        e
    }

    pub(crate) fn invalid_entry(uri: Option<&str>, message: String) -> Self {
        Self::new(SkillsErrorKind::InvalidEntry, uri, message)
    }

    pub(crate) fn verification(uri: &str, message: impl Into<String>) -> Self {
        Self::new(SkillsErrorKind::Verification, Some(uri), message)
    }

    pub(crate) fn unlisted(uri: &str, skill: &str) -> Self {
        Self::new(
            SkillsErrorKind::Unlisted,
            Some(uri),
            format!(
                "not listed in the entry of {skill}: an unlisted file is a change to the skill \
                 (refresh the entry with skills/get)"
            ),
        )
    }

    pub(crate) fn dynamic(uri: &str) -> Self {
        Self::new(
            SkillsErrorKind::Dynamic,
            Some(uri),
            "the skill's resources are \"dynamic\": it offers no integrity to verify against",
        )
    }

    pub(crate) fn limits(uri: &str, message: String) -> Self {
        Self::new(SkillsErrorKind::Limits, Some(uri), message)
    }

    pub(crate) fn unsafe_path(uri: &str, message: impl Into<String>) -> Self {
        Self::new(SkillsErrorKind::UnsafePath, Some(uri), message)
    }

    pub(crate) fn io(uri: &str, message: impl Into<String>) -> Self {
        Self::new(SkillsErrorKind::Io, Some(uri), message)
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> SkillsErrorKind {
        self.0.kind
    }

    /// The file (or skill, or method) it is about.
    pub fn uri(&self) -> Option<&str> {
        self.0.uri.as_deref()
    }

    /// A fetched file did not match its entry, or an unlisted one was asked for: the
    /// skill changed (or was tampered with); refresh its entry before going on.
    pub fn is_verification_failure(&self) -> bool {
        matches!(
            self.0.kind,
            SkillsErrorKind::Verification | SkillsErrorKind::Unlisted
        )
    }

    /// The request's failure, for [`SkillsErrorKind::Session`].
    pub fn session_error(&self) -> Option<&SessionError> {
        self.0.session.as_ref()
    }
}

impl fmt::Display for SkillsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.uri {
            Some(uri) => write!(f, "{uri}: {}", self.0.message),
            None => f.write_str(&self.0.message),
        }
    }
}

impl std::error::Error for SkillsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .session
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
