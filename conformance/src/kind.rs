//! The transports of the matrix, by name.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A transport a conformance test can run over.
///
/// The manifest names the wire transports (`stdio`, `streamable-http`, `sse`);
/// `in-memory` is this SDK's own extra transport, which every transport-independent
/// requirement also applies to. [`TransportKind::SDK`] lists the ones the SDK has today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TransportKind {
    /// The in-process duplex of `modelctx-memory`.
    InMemory,
    /// Newline-delimited JSON over a child's stdin/stdout.
    Stdio,
    /// Streamable HTTP (2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
}

impl TransportKind {
    /// Every transport kind, in report order.
    pub const ALL: [TransportKind; 4] = [
        TransportKind::InMemory,
        TransportKind::Stdio,
        TransportKind::StreamableHttp,
        TransportKind::Sse,
    ];

    /// The transports the SDK has, in report order: a transport-independent requirement
    /// applies to each of these. Adding a transport = add it here and give `Connector` a
    /// way to build it (a unit test in `connect.rs` checks that they agree).
    pub const SDK: &'static [TransportKind] = &[
        TransportKind::InMemory,
        TransportKind::Stdio,
        TransportKind::StreamableHttp,
    ];

    /// The name used in the manifest, trial names and the report.
    pub const fn name(self) -> &'static str {
        match self {
            TransportKind::InMemory => "in-memory",
            TransportKind::Stdio => "stdio",
            TransportKind::StreamableHttp => "streamable-http",
            TransportKind::Sse => "sse",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether a manifest may name this transport (in-memory is ours, not the spec's).
    pub const fn is_wire(self) -> bool {
        !matches!(self, TransportKind::InMemory)
    }

    /// Whether the SDK has this transport yet.
    pub fn in_sdk(self) -> bool {
        Self::SDK.contains(&self)
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in TransportKind::ALL {
            assert_eq!(TransportKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(TransportKind::from_name("http"), None);
        assert!(!TransportKind::InMemory.is_wire());
        for kind in TransportKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
        }
    }
}
