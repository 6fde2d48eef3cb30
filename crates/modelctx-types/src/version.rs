//! Protocol revisions and version negotiation.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// An MCP protocol revision string, such as `"2025-11-25"`.
///
/// Any string deserialises — a peer may offer a revision this SDK does not know — and
/// [`ProtocolVersion::is_supported`] says whether we speak it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProtocolVersion(Cow<'static, str>);

impl ProtocolVersion {
    /// The first revision (HTTP+SSE transport, no structured output).
    pub const V2024_11_05: Self = Self(Cow::Borrowed("2024-11-05"));
    /// Streamable HTTP, JSON-RPC batches, tool annotations, audio content.
    pub const V2025_03_26: Self = Self(Cow::Borrowed("2025-03-26"));
    /// Structured tool output, elicitation, resource links; batches removed.
    pub const V2025_06_18: Self = Self(Cow::Borrowed("2025-06-18"));
    /// URL elicitation, sampling with tools, tasks, icons.
    pub const V2025_11_25: Self = Self(Cow::Borrowed("2025-11-25"));
    /// Stateless MCP: no `initialize`, `server/discover`, multi round-trip requests,
    /// `subscriptions/listen`, cacheable results.
    ///
    /// The wire types carry this revision, but the runtime does not negotiate it yet: it
    /// is not in [`ProtocolVersion::SUPPORTED`], so [`ProtocolVersion::is_supported`] is
    /// false for it. See [`ProtocolVersion::KNOWN`].
    pub const V2026_07_28: Self = Self(Cow::Borrowed("2026-07-28"));
    /// Every revision whose wire types this crate carries, newest first: the revisions
    /// the runtime negotiates ([`ProtocolVersion::SUPPORTED`]) and those it only has
    /// types for.
    pub const KNOWN: [Self; 5] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];
    /// The newest revision this SDK speaks, offered by default.
    pub const LATEST: Self = Self::V2025_11_25;
    /// Every revision this SDK speaks, newest first.
    pub const SUPPORTED: [Self; 4] = [
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];
    /// The revision a streamable HTTP server assumes when a request carries no
    /// `MCP-Protocol-Version` header.
    pub const HTTP_DEFAULT: Self = Self::V2025_03_26;

    /// A version from any string.
    pub fn new(version: impl Into<Cow<'static, str>>) -> Self {
        Self(version.into())
    }

    /// The version string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this SDK speaks this revision.
    pub fn is_supported(&self) -> bool {
        Self::SUPPORTED.contains(self)
    }

    /// The revision named `version` when this SDK speaks it (without allocating).
    pub fn supported(version: &str) -> Option<Self> {
        Self::SUPPORTED.into_iter().find(|v| v.as_str() == version)
    }

    /// A server's answer to a client's requested version: the same version when we speak
    /// it, otherwise our latest (the client then decides whether it can go on).
    pub fn negotiate(requested: &Self) -> Self {
        if requested.is_supported() {
            requested.clone()
        } else {
            Self::LATEST
        }
    }

    /// Whether this revision is at least `other` (revision strings are dates, so they
    /// order lexically).
    pub fn at_least(&self, other: &Self) -> bool {
        self.0.as_ref() >= other.0.as_ref()
    }

    /// Whether JSON-RPC batches are part of this revision (2025-03-26 only).
    pub fn allows_batches(&self) -> bool {
        *self == Self::V2025_03_26
    }
}

impl Default for ProtocolVersion {
    fn default() -> Self {
        Self::LATEST
    }
}

impl fmt::Debug for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProtocolVersion({})", self.0)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&'static str> for ProtocolVersion {
    fn from(v: &'static str) -> Self {
        Self(Cow::Borrowed(v))
    }
}

impl From<String> for ProtocolVersion {
    fn from(v: String) -> Self {
        Self(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_and_offers_latest_otherwise() {
        assert_eq!(
            ProtocolVersion::negotiate(&ProtocolVersion::V2025_03_26),
            ProtocolVersion::V2025_03_26
        );
        let unknown: ProtocolVersion = serde_json::from_str("\"1999-01-01\"").unwrap();
        assert_eq!(unknown.as_str(), "1999-01-01");
        assert!(!unknown.is_supported());
        assert_eq!(
            ProtocolVersion::negotiate(&unknown),
            ProtocolVersion::LATEST
        );
        assert!(ProtocolVersion::V2025_11_25.at_least(&ProtocolVersion::V2025_06_18));
        // Typed, not negotiated.
        assert!(!ProtocolVersion::V2026_07_28.is_supported());
        assert_eq!(ProtocolVersion::supported("2026-07-28"), None);
        assert_eq!(
            ProtocolVersion::negotiate(&ProtocolVersion::V2026_07_28),
            ProtocolVersion::V2025_11_25
        );
        assert!(ProtocolVersion::KNOWN.contains(&ProtocolVersion::V2026_07_28));
    }
}
