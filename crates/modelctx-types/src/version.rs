//! Protocol revisions and version negotiation.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// An MCP protocol revision string, such as `"2025-11-25"`.
///
/// Any string deserialises — a peer may offer a revision this SDK does not know — and
/// [`ProtocolVersion::is_handshake`] and [`ProtocolVersion::is_stateless`] say whether
/// and in which era we speak it.
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
    /// The stateless era: no `initialize`, `server/discover`, multi round-trip requests,
    /// `subscriptions/listen`, cacheable results. Every request names it in its
    /// envelope; it is never negotiated in `initialize` ([`ProtocolVersion::STATELESS`]).
    pub const V2026_07_28: Self = Self(Cow::Borrowed("2026-07-28"));
    /// Every revision this build speaks, newest first: the stateless era's
    /// ([`ProtocolVersion::STATELESS`]) and the handshake era's
    /// ([`ProtocolVersion::HANDSHAKE`]).
    pub const ALL: [Self; 5] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];
    /// The revisions of the stateless era (no handshake; each request names its revision).
    pub const STATELESS: [Self; 1] = [Self::V2026_07_28];
    /// The newest revision of the handshake era, which `initialize` offers by default.
    pub const LATEST_HANDSHAKE: Self = Self::V2025_11_25;
    /// The revisions negotiated in `initialize` (the handshake era), newest first.
    pub const HANDSHAKE: [Self; 4] = [
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

    /// Whether this is a handshake revision this SDK negotiates in `initialize`.
    pub fn is_handshake(&self) -> bool {
        Self::HANDSHAKE.contains(self)
    }

    /// Whether this is a revision of the stateless era this SDK speaks.
    pub fn is_stateless(&self) -> bool {
        Self::STATELESS.contains(self)
    }

    /// The handshake revision named `version` when this SDK negotiates it (without
    /// allocating).
    pub fn handshake(version: &str) -> Option<Self> {
        Self::HANDSHAKE.into_iter().find(|v| v.as_str() == version)
    }

    /// A server's answer to a client's requested version in `initialize`: the same
    /// version when we negotiate it, otherwise our latest handshake revision (the client
    /// then decides whether it can go on).
    pub fn negotiate(requested: &Self) -> Self {
        if requested.is_handshake() {
            requested.clone()
        } else {
            Self::LATEST_HANDSHAKE
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
        Self::LATEST_HANDSHAKE
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
        assert!(!unknown.is_handshake() && !unknown.is_stateless());
        assert_eq!(
            ProtocolVersion::negotiate(&unknown),
            ProtocolVersion::LATEST_HANDSHAKE
        );
        assert!(ProtocolVersion::V2025_11_25.at_least(&ProtocolVersion::V2025_06_18));
        // Spoken, never negotiated in `initialize`.
        assert!(!ProtocolVersion::V2026_07_28.is_handshake());
        assert!(ProtocolVersion::V2026_07_28.is_stateless());
        assert_eq!(ProtocolVersion::handshake("2026-07-28"), None);
        assert_eq!(
            ProtocolVersion::negotiate(&ProtocolVersion::V2026_07_28),
            ProtocolVersion::V2025_11_25
        );
        assert!(ProtocolVersion::ALL.contains(&ProtocolVersion::V2026_07_28));
    }
}
