//! The matrix: transports by name, spec versions, and the (transport, version) cells a
//! test runs in.
//!
//! The matrix is data at the top of `requirements.toml`: `spec_versions` (the era axis),
//! `transport_versions` (the reference's era locks: legacy SSE and the session-less HTTP
//! leg run 2025-11-25 only) and `sdk_cells`, the cells the SDK runs today. A requirement's
//! cells come from its `transports`, its `[added_in, removed_in)` window, the era locks and
//! its `arm_exclusions` (typed reasons from the reference's vocabulary; ours each carry a
//! note starting "ours:"). The era lock of our own legs is built in
//! (`TransportKind::era_lock`), so a manifest need not list it.
//!
//! The legs: in-memory, stdio (the real framing over in-process pipes) and streamable HTTP
//! run both eras. Streamable HTTP stateless (a server session per POST) and streamable HTTP
//! at 2026-07-28 have no raw transport pair: each POST is served on its own, and tests that
//! drive a raw pair or close a server session carve those cells out with an "ours:"
//! exclusion. Legacy SSE has a pair like streamable HTTP's: an `SseService` on loopback
//! whose first stream is the server side, and an `SseClientTransport` connected to it.
//!
//! The shared leg, `streamable-http-shared` (ours, 2025-11-25 only), is two
//! `StreamableHttpService`s sharing sessions through one Redis (a session registry and an
//! event store each, as two processes would have) behind a loopback round-robin forwarder,
//! with a client whose pool keeps no idle connection, so consecutive requests alternate. It
//! is a variant of `streamable-http` (`TransportKind::variant_of`): every requirement on
//! streamable HTTP and every transport-independent one applies to it, and an exclusion
//! naming `streamable-http` carves it out too; the reference never names it (`is_wire` is
//! false), so the comparison with the reference is unchanged.
//!
//! The balancer legs, `streamable-http-nginx` and `streamable-http-haproxy` (ours), are
//! the shared leg with a real load balancer in place of the forwarder: nginx or HAProxy
//! from the distribution's packages, started per trial with the test kit's
//! configuration (round robin, no affinity, unbuffered streams, upstream keep-alive).
//! Each is a variant of the shared leg, so whatever applies to it or is carved out of it
//! applies or is carved out there too. nginx faces two services and an upstream that
//! refuses connections (it retries past it), HAProxy three services. They run both
//! eras: in 2025-11-25 the services share sessions, in 2026-07-28 each request stands
//! alone and may land on any service (a multi round-trip retry, a task's polls).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A transport a conformance test can run over.
///
/// The manifest names the wire transports (`stdio`, `streamable-http`,
/// `streamable-http-stateless`, `sse`); `in-memory` is the in-process transport every
/// transport-independent requirement also applies to, and `streamable-http-shared` a
/// deployment of streamable HTTP (two services sharing sessions) every requirement on
/// streamable HTTP also applies to. Which of them the SDK has, and in
/// which spec versions, is data: the `[sdk_cells]` table of `requirements.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TransportKind {
    /// The in-process duplex of `modelctx-memory`.
    InMemory,
    /// Newline-delimited JSON over a child's stdin/stdout.
    Stdio,
    /// Streamable HTTP (2025-03-26 and later) with sessions (`Mcp-Session-Id`).
    StreamableHttp,
    /// Streamable HTTP without sessions: a fresh server session per POST, no standalone
    /// GET stream, no server-to-client requests.
    StreamableHttpStateless,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
    /// Ours, not the spec's: streamable HTTP (2025-11-25) served by two services that
    /// share their sessions through Redis, behind a round-robin forwarder. A variant of
    /// [`StreamableHttp`](Self::StreamableHttp): every requirement on streamable HTTP
    /// applies to it too (see [`variant_of`](Self::variant_of)).
    StreamableHttpShared,
    /// Ours: the shared leg behind nginx instead of the forwarder. A variant of
    /// [`StreamableHttpShared`](Self::StreamableHttpShared).
    StreamableHttpNginx,
    /// Ours: the shared leg behind HAProxy instead of the forwarder. A variant of
    /// [`StreamableHttpShared`](Self::StreamableHttpShared).
    StreamableHttpHaproxy,
}

impl TransportKind {
    /// Every transport kind, in report order.
    pub const ALL: [TransportKind; 8] = [
        TransportKind::InMemory,
        TransportKind::Stdio,
        TransportKind::StreamableHttp,
        TransportKind::StreamableHttpShared,
        TransportKind::StreamableHttpNginx,
        TransportKind::StreamableHttpHaproxy,
        TransportKind::StreamableHttpStateless,
        TransportKind::Sse,
    ];

    /// The name used in the manifest, trial names and the report.
    pub const fn name(self) -> &'static str {
        match self {
            TransportKind::InMemory => "in-memory",
            TransportKind::Stdio => "stdio",
            TransportKind::StreamableHttp => "streamable-http",
            TransportKind::StreamableHttpStateless => "streamable-http-stateless",
            TransportKind::Sse => "sse",
            TransportKind::StreamableHttpShared => "streamable-http-shared",
            TransportKind::StreamableHttpNginx => "streamable-http-nginx",
            TransportKind::StreamableHttpHaproxy => "streamable-http-haproxy",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether a requirement's `transports` may name this transport (in-memory and the
    /// multi-instance streamable HTTP legs are ours, not the spec's).
    pub const fn is_wire(self) -> bool {
        !matches!(self, TransportKind::InMemory) && !self.is_shared()
    }

    /// Whether this is a leg of several services sharing sessions through Redis (behind
    /// the forwarder or a real balancer).
    pub const fn is_shared(self) -> bool {
        matches!(
            self,
            TransportKind::StreamableHttpShared
                | TransportKind::StreamableHttpNginx
                | TransportKind::StreamableHttpHaproxy
        )
    }

    /// The transport this one is a deployment of, if any: a requirement naming that
    /// transport applies to this one too, and an arm exclusion naming it carves this
    /// one out as well (transitively: the balancer legs are variants of the shared
    /// leg, itself a variant of streamable HTTP).
    pub const fn variant_of(self) -> Option<TransportKind> {
        match self {
            TransportKind::StreamableHttpShared => Some(TransportKind::StreamableHttp),
            TransportKind::StreamableHttpNginx | TransportKind::StreamableHttpHaproxy => {
                Some(TransportKind::StreamableHttpShared)
            }
            _ => None,
        }
    }

    /// The versions this transport runs in when the manifest's `[transport_versions]`
    /// does not say (a lock of ours: the reference never names the transport). The
    /// forwarder's leg shares 2025-era sessions: 2025-11-25 only; the balancer legs
    /// run both eras.
    pub const fn era_lock(self) -> Option<&'static [SpecVersion]> {
        match self {
            TransportKind::StreamableHttpShared => Some(&[SpecVersion::V2025_11_25]),
            _ => None,
        }
    }

    /// Whether a requirement on `wire` applies to this transport: it is `wire`, or a
    /// deployment of it (directly or through another deployment).
    pub fn serves(self, wire: TransportKind) -> bool {
        let mut kind = Some(self);
        while let Some(k) = kind {
            if k == wire {
                return true;
            }
            kind = k.variant_of();
        }
        false
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A protocol revision on the era axis of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SpecVersion {
    /// 2025-11-25: `initialize`, sessions.
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// 2026-07-28: no handshake, the per-request envelope, `server/discover`.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl SpecVersion {
    /// Every version, oldest first (the order of the era axis).
    pub const ALL: [SpecVersion; 2] = [SpecVersion::V2025_11_25, SpecVersion::V2026_07_28];

    /// The revision string.
    pub const fn name(self) -> &'static str {
        match self {
            SpecVersion::V2025_11_25 => "2025-11-25",
            SpecVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// The version with this revision string.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl fmt::Display for SpecVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One cell of the matrix: a transport in one spec version. Written
/// `<transport>@<version>` (trial names, the report's `results` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    /// The transport.
    pub transport: TransportKind,
    /// The spec version the client and server speak.
    pub version: SpecVersion,
}

impl Cell {
    /// The cell of `transport` in `version`.
    pub const fn new(transport: TransportKind, version: SpecVersion) -> Self {
        Self { transport, version }
    }

    /// Parses `<transport>@<version>`.
    pub fn parse(text: &str) -> Option<Self> {
        let (t, v) = text.split_once('@')?;
        Some(Self::new(
            TransportKind::from_name(t)?,
            SpecVersion::from_name(v)?,
        ))
    }

    /// Whether the connector can hand a test one raw `(client, server)` transport pair
    /// here. The session-less HTTP leg cannot (a server session lives for one POST), nor
    /// can streamable HTTP in 2026-07-28, stateless by construction, nor the shared leg
    /// (a session has one server transport per service): tests that drive the
    /// transport directly exclude them (`drives-transport-directly`).
    pub const fn has_transport_pair(self) -> bool {
        !matches!(
            (self.transport, self.version),
            (TransportKind::StreamableHttpStateless, _)
                | (TransportKind::StreamableHttp, SpecVersion::V2026_07_28)
        ) && !self.transport.is_shared()
    }
}

impl Cell {
    /// Whether the cell's services share 2025-era sessions: a two-instance leg in
    /// 2025-11-25 (in 2026-07-28 they share no session; each request stands alone).
    pub fn shares_sessions(self) -> bool {
        self.transport.is_shared() && self.version == SpecVersion::V2025_11_25
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.transport, self.version)
    }
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Cell::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not a `<transport>@<version>` cell"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in TransportKind::ALL {
            assert_eq!(TransportKind::from_name(kind.name()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
        }
        assert_eq!(TransportKind::from_name("http"), None);
        assert!(!TransportKind::InMemory.is_wire());
        assert!(!TransportKind::StreamableHttpShared.is_wire());
        assert!(TransportKind::StreamableHttpShared.serves(TransportKind::StreamableHttp));
        assert!(!TransportKind::StreamableHttp.serves(TransportKind::StreamableHttpShared));
        assert!(!TransportKind::Stdio.serves(TransportKind::StreamableHttp));
        for balanced in [
            TransportKind::StreamableHttpNginx,
            TransportKind::StreamableHttpHaproxy,
        ] {
            assert!(!balanced.is_wire());
            assert!(balanced.serves(TransportKind::StreamableHttpShared));
            assert!(balanced.serves(TransportKind::StreamableHttp));
            assert!(!TransportKind::StreamableHttpShared.serves(balanced));
            assert_eq!(balanced.era_lock(), None);
        }
        for v in SpecVersion::ALL {
            assert_eq!(SpecVersion::from_name(v.name()), Some(v));
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
        assert_eq!(SpecVersion::from_name("2024-11-05"), None);
    }

    #[test]
    fn cells_are_written_transport_at_version() {
        let cell = Cell::new(
            TransportKind::StreamableHttpStateless,
            SpecVersion::V2025_11_25,
        );
        assert_eq!(cell.to_string(), "streamable-http-stateless@2025-11-25");
        assert_eq!(Cell::parse(&cell.to_string()), Some(cell));
        assert_eq!(serde_json::to_string(&cell).unwrap(), format!("\"{cell}\""));
        let back: Cell = serde_json::from_str(&format!("\"{cell}\"")).unwrap();
        assert_eq!(back, cell);
        assert!(Cell::parse("stdio").is_none());
        assert!(Cell::parse("stdio@2099-01-01").is_none());
        assert!(serde_json::from_str::<Cell>("\"nope\"").is_err());
        assert!(!cell.has_transport_pair());
    }
}
