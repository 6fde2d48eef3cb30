//! How the client settles the protocol era with one server, as a configuration entry
//! (`"mode"`, `"probeTimeout"`) or a command line (`--mode`, `--probe-timeout`) says it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use modelctx_client::{ClientBuilder, ConnectMode};
use modelctx_types::ProtocolVersion;
use serde_json::Value;

/// How the client settles the protocol era with a server: an entry's `"mode"`.
///
/// Written `auto`, `discover`, `handshake`, or a protocol revision:
///
/// | text | client |
/// |---|---|
/// | `auto` | [`ConnectMode::Auto`]: `server/discover` first, the `initialize` handshake when the server does not offer 2026-07-28 |
/// | `discover` (also `2026`) | [`ConnectMode::Discover`]: 2026-07-28 only, learnt from `server/discover` |
/// | `handshake` (also `2025`) | [`ConnectMode::Handshake`]: the handshake only, offering the newest handshake revision |
/// | `2026-07-28` | [`ConnectMode::Pin`]: no probe and no handshake (for a server, or a proxy in front of one, known to speak it) |
/// | `2025-11-25`, `2025-06-18`, ... | [`ConnectMode::Handshake`] offering that revision |
///
/// ```
/// use modelctx_pool::ProtocolMode;
///
/// assert_eq!("handshake".parse::<ProtocolMode>(), Ok(ProtocolMode::Handshake));
/// assert!("2024-01-01".parse::<ProtocolMode>().unwrap_err().contains("auto, discover, handshake"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProtocolMode {
    /// `server/discover` first, the handshake when 2026-07-28 is not offered.
    #[default]
    Auto,
    /// 2026-07-28 only, learnt from `server/discover`.
    Discover,
    /// The `initialize` handshake only.
    Handshake,
    /// This revision from the first message: 2026-07-28 pinned, or the handshake
    /// offering an earlier revision.
    Version(ProtocolVersion),
}

impl ProtocolMode {
    /// `client` set to connect in this mode.
    #[must_use]
    pub fn apply(&self, client: ClientBuilder) -> ClientBuilder {
        match self {
            Self::Auto => client.mode(ConnectMode::Auto),
            Self::Discover => client.mode(ConnectMode::Discover),
            Self::Handshake => client.mode(ConnectMode::Handshake),
            Self::Version(version) if *version == ProtocolVersion::V2026_07_28 => {
                client.mode(ConnectMode::Pin(version.clone()))
            }
            Self::Version(version) => client
                .mode(ConnectMode::Handshake)
                .protocol_version(version.clone()),
        }
    }
}

impl FromStr for ProtocolMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "auto" => Ok(Self::Auto),
            "discover" | "2026" => Ok(Self::Discover),
            "handshake" | "2025" => Ok(Self::Handshake),
            _ if text == ProtocolVersion::V2026_07_28.as_str() => {
                Ok(Self::Version(ProtocolVersion::V2026_07_28))
            }
            _ => ProtocolVersion::handshake(text)
                .map(Self::Version)
                .ok_or_else(|| {
                    let versions: Vec<&str> = ProtocolVersion::ALL
                        .iter()
                        .map(ProtocolVersion::as_str)
                        .collect();
                    format!(
                        "the mode is auto, discover, handshake or a protocol revision ({}), not {text:?}",
                        versions.join(", ")
                    )
                }),
        }
    }
}

impl fmt::Display for ProtocolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Discover => f.write_str("discover"),
            Self::Handshake => f.write_str("handshake"),
            Self::Version(version) => f.write_str(version.as_str()),
        }
    }
}

/// Reads a probe wait as a person writes it: seconds (`10`, `2.5`, `10s`) or
/// milliseconds (`500ms`). Zero is allowed (the handshake goes out beside the probe at
/// once); negative, non-finite and unit-less garbage are not.
///
/// ```
/// use std::time::Duration;
/// use modelctx_pool::parse_probe_timeout;
///
/// assert_eq!(parse_probe_timeout("2.5"), Ok(Duration::from_millis(2500)));
/// assert_eq!(parse_probe_timeout("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_probe_timeout("30s"), Ok(Duration::from_secs(30)));
/// assert!(parse_probe_timeout("soon").is_err());
/// ```
pub fn parse_probe_timeout(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = match text.strip_suffix("ms") {
        Some(ms) => (ms, 0.001),
        None => (text.strip_suffix('s').unwrap_or(text), 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .map(|n| n * scale)
        .filter(|secs| secs.is_finite() && *secs >= 0.0 && *secs <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            format!(
                "the probe timeout is seconds (10, 2.5, 10s) or milliseconds (500ms), up to a \
                 day, not {text:?}"
            )
        })
}

/// An entry's `"mode"` and `"probeTimeout"` (seconds as a number, or a string with a
/// unit).
pub(crate) fn from_entry(
    entry: &serde_json::Map<String, Value>,
) -> Result<(Option<ProtocolMode>, Option<Duration>), String> {
    let mode = match entry.get("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(mode)) => Some(mode.parse().map_err(|e| format!("`mode`: {e}"))?),
        Some(_) => return Err("`mode` must be a string".into()),
    };
    let probe_timeout = match entry.get("probeTimeout") {
        None | Some(Value::Null) => None,
        Some(Value::Number(secs)) => Some(
            parse_probe_timeout(&secs.to_string()).map_err(|e| format!("`probeTimeout`: {e}"))?,
        ),
        Some(Value::String(text)) => {
            Some(parse_probe_timeout(text).map_err(|e| format!("`probeTimeout`: {e}"))?)
        }
        Some(_) => {
            return Err("`probeTimeout` must be seconds or a string such as \"500ms\"".into());
        }
    };
    Ok((mode, probe_timeout))
}

/// `client` with an entry's mode and probe wait, where it sets them.
pub(crate) fn settle(
    client: ClientBuilder,
    mode: Option<&ProtocolMode>,
    probe_timeout: Option<Duration>,
) -> ClientBuilder {
    let client = match mode {
        Some(mode) => mode.apply(client),
        None => client,
    };
    match probe_timeout {
        Some(wait) => client.probe_timeout(wait),
        None => client,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_reads_and_prints_back() {
        for (text, mode) in [
            ("auto", ProtocolMode::Auto),
            ("discover", ProtocolMode::Discover),
            ("handshake", ProtocolMode::Handshake),
            (
                "2026-07-28",
                ProtocolMode::Version(ProtocolVersion::V2026_07_28),
            ),
            (
                "2025-06-18",
                ProtocolMode::Version(ProtocolVersion::V2025_06_18),
            ),
        ] {
            assert_eq!(text.parse::<ProtocolMode>().as_ref(), Ok(&mode), "{text}");
            assert_eq!(mode.to_string(), text);
        }
        assert_eq!("2026".parse(), Ok(ProtocolMode::Discover));
        assert_eq!("2025".parse(), Ok(ProtocolMode::Handshake));
        assert!("2099-01-01".parse::<ProtocolMode>().is_err());
    }

    #[test]
    fn probe_timeouts_read_with_or_without_a_unit() {
        assert_eq!(parse_probe_timeout("0"), Ok(Duration::ZERO));
        assert_eq!(parse_probe_timeout(" 12 "), Ok(Duration::from_secs(12)));
        assert_eq!(parse_probe_timeout("250ms"), Ok(Duration::from_millis(250)));
        for bad in ["-1", "NaN", "inf", "1h", "", "ms", "100000"] {
            assert!(parse_probe_timeout(bad).is_err(), "{bad}");
        }
    }
}
