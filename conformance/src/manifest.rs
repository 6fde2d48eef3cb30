//! The requirements manifest (`conformance/requirements.toml`): load, validate, look up.
//!
//! One `[[requirement]]` per ID:
//!
//! ```toml
//! [[requirement]]
//! id = "tools:call:content:text"
//! section = "Tools"
//! source = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools"
//! behavior = "tools/call returns the tool's text content."
//! # transports = ["streamable-http"]   # absent = every transport the SDK has
//! # deferred = "why it is not tested yet"
//! # divergence = "what we do instead of the required behaviour"
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::kind::TransportKind;

/// The spec revision the manifest describes, unless it says otherwise (`spec_revision`).
pub const DEFAULT_SPEC_REVISION: &str = "2025-11-25";

/// The prefix every spec deep link starts with.
pub const SPEC_LINK_PREFIX: &str = "https://modelcontextprotocol.io/specification/";

/// A validated manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    spec_revision: String,
    requirements: Vec<Requirement>,
    by_id: BTreeMap<String, usize>,
}

/// One requirement of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Requirement {
    /// `<area>:<feature>[:<variant>]`, the shared interaction vocabulary.
    pub id: String,
    /// The section (report table row) it belongs to.
    pub section: String,
    /// A spec deep link, `sdk` (an SDK-chosen guarantee) or `issue:#n`.
    pub source: String,
    /// The wire transports it applies to; `None` = transport-independent (every transport
    /// the SDK has, in-memory included).
    pub transports: Option<Vec<TransportKind>>,
    /// The required behaviour.
    pub behavior: String,
    /// Why it has no test yet.
    pub deferred: Option<String>,
    /// What the SDK does instead of the required behaviour (its tests pin that).
    pub divergence: Option<String>,
}

impl Requirement {
    /// The transports it applies to: its own list, or every transport the SDK has.
    pub fn applies_to(&self) -> Vec<TransportKind> {
        match &self.transports {
            Some(list) => list.clone(),
            None => TransportKind::SDK.to_vec(),
        }
    }

    /// The transports it applies to that the SDK has: where its tests run.
    pub fn runs_on(&self) -> Vec<TransportKind> {
        let mut kinds = self.applies_to();
        kinds.retain(|k| k.in_sdk());
        kinds
    }

    /// Whether it is deferred (no test expected).
    pub fn is_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    /// Whether the SDK knowingly diverges from it.
    pub fn is_divergent(&self) -> bool {
        self.divergence.is_some()
    }
}

/// Why a manifest did not load: every problem found, not just the first.
#[derive(Debug)]
pub struct ManifestError {
    problems: Vec<String>,
}

impl ManifestError {
    fn one(problem: impl Into<String>) -> Self {
        Self {
            problems: vec![problem.into()],
        }
    }

    /// The problems, one line each.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid requirements manifest:")?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ManifestError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    spec_revision: Option<String>,
    #[serde(default)]
    requirement: Vec<RawRequirement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequirement {
    id: String,
    section: String,
    source: String,
    transports: Option<Vec<String>>,
    behavior: String,
    deferred: Option<String>,
    divergence: Option<String>,
}

impl Manifest {
    /// Reads and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ManifestError::one(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(&text)
    }

    /// Parses and validates manifest text.
    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let raw: RawManifest =
            toml::from_str(text).map_err(|e| ManifestError::one(format!("not valid: {e}")))?;
        let mut problems = Vec::new();
        let mut requirements = Vec::with_capacity(raw.requirement.len());
        let mut by_id = BTreeMap::new();
        for (index, r) in raw.requirement.into_iter().enumerate() {
            let at = if r.id.is_empty() {
                format!("requirement #{}", index + 1)
            } else {
                format!("requirement {:?}", r.id)
            };
            let mut bad = |what: String| problems.push(format!("{at}: {what}"));
            if !is_valid_id(&r.id) {
                bad("id must be `<area>:<feature>[:<variant>]` (lowercase, no spaces)".into());
            }
            if by_id.insert(r.id.clone(), requirements.len()).is_some() {
                bad("duplicate id".into());
            }
            if r.section.trim().is_empty() {
                bad("section is empty".into());
            }
            if r.behavior.trim().is_empty() {
                bad("behavior is empty".into());
            }
            if !is_valid_source(&r.source) {
                let source = &r.source;
                bad(format!(
                    "source {source:?} is not a spec deep link ({SPEC_LINK_PREFIX}...), \
                     \"sdk\" or \"issue:#<n>\""
                ));
            }
            if r.deferred.is_some() && r.divergence.is_some() {
                bad(
                    "deferred and divergence are both set: a divergence is tested, a deferral not"
                        .into(),
                );
            }
            if r.deferred.as_deref().is_some_and(|d| d.trim().is_empty()) {
                bad("deferred needs a reason".into());
            }
            if r.divergence.as_deref().is_some_and(|d| d.trim().is_empty()) {
                bad("divergence needs a note saying what the SDK does instead".into());
            }
            let transports = match r.transports {
                None => None,
                Some(names) => {
                    let mut kinds = Vec::new();
                    if names.is_empty() {
                        bad("transports is empty: leave it out when transport-independent".into());
                    }
                    for name in &names {
                        match TransportKind::from_name(name).filter(|k| k.is_wire()) {
                            Some(k) if kinds.contains(&k) => {
                                bad(format!("transport {name:?} listed twice"))
                            }
                            Some(k) => kinds.push(k),
                            None => bad(format!(
                                "unknown transport {name:?} (allowed: stdio, streamable-http, sse)"
                            )),
                        }
                    }
                    Some(kinds)
                }
            };
            requirements.push(Requirement {
                id: r.id,
                section: r.section,
                source: r.source,
                transports,
                behavior: r.behavior,
                deferred: r.deferred,
                divergence: r.divergence,
            });
        }
        if !problems.is_empty() {
            return Err(ManifestError { problems });
        }
        Ok(Self {
            spec_revision: raw
                .spec_revision
                .unwrap_or_else(|| DEFAULT_SPEC_REVISION.to_owned()),
            requirements,
            by_id,
        })
    }

    /// The spec revision it describes.
    pub fn spec_revision(&self) -> &str {
        &self.spec_revision
    }

    /// The requirements, in file order.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The requirement with this ID.
    pub fn get(&self, id: &str) -> Option<&Requirement> {
        self.by_id.get(id).map(|&i| &self.requirements[i])
    }

    /// Whether an ID is in the manifest.
    pub fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Every ID.
    pub fn ids(&self) -> BTreeSet<&str> {
        self.by_id.keys().map(String::as_str).collect()
    }

    /// The sections, in order of first appearance.
    pub fn sections(&self) -> Vec<&str> {
        let mut seen = Vec::new();
        for r in &self.requirements {
            if !seen.contains(&r.section.as_str()) {
                seen.push(r.section.as_str());
            }
        }
        seen
    }

    /// The transports a test naming `ids` runs on: those the SDK has that every one of
    /// its (known) requirements applies to.
    pub fn transports_for(&self, ids: &[&str]) -> Vec<TransportKind> {
        let mut kinds = TransportKind::SDK.to_vec();
        for id in ids {
            if let Some(r) = self.get(id) {
                let runs_on = r.runs_on();
                kinds.retain(|k| runs_on.contains(k));
            }
        }
        kinds
    }
}

fn is_valid_id(id: &str) -> bool {
    let segments: Vec<&str> = id.split(':').collect();
    segments.len() >= 2
        && segments.iter().all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_./".contains(&b))
        })
}

fn is_valid_source(source: &str) -> bool {
    if source == "sdk" {
        return true;
    }
    if let Some(n) = source.strip_prefix("issue:#") {
        return !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    }
    source
        .strip_prefix(SPEC_LINK_PREFIX)
        .is_some_and(|rest| !rest.is_empty() && !rest.contains(char::is_whitespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = r#"
spec_revision = "2025-11-25"

[[requirement]]
id = "tools:call:content:text"
section = "Tools"
source = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools"
behavior = "tools/call returns text content."

[[requirement]]
id = "transport:http:session-header"
section = "Hosting"
source = "sdk"
transports = ["sse"]
behavior = "Something HTTP."
deferred = "no HTTP transport yet"

[[requirement]]
id = "tools:list:order"
section = "Tools"
source = "issue:#12"
behavior = "Tools list in registration order."
divergence = "we sort by name"
"#;

    #[test]
    fn a_valid_manifest_loads_and_looks_up() {
        let m = Manifest::parse(TINY).unwrap();
        assert_eq!(m.requirements().len(), 3);
        assert_eq!(m.sections(), ["Tools", "Hosting"]);
        let http = m.get("transport:http:session-header").unwrap();
        assert_eq!(http.applies_to(), [TransportKind::Sse]);
        assert!(http.is_deferred());
        assert!(http.runs_on().is_empty());
        let text = m.get("tools:call:content:text").unwrap();
        assert_eq!(text.applies_to(), TransportKind::SDK);
        assert!(m.get("tools:call:nope").is_none());
        assert!(m.get("tools:list:order").unwrap().is_divergent());
        assert_eq!(
            m.transports_for(&["tools:call:content:text"]),
            TransportKind::SDK
        );
        assert!(
            m.transports_for(&["tools:call:content:text", "transport:http:session-header"])
                .is_empty()
        );
    }

    fn problems(text: &str) -> Vec<String> {
        Manifest::parse(text).unwrap_err().problems().to_vec()
    }

    fn one(fields: &str) -> String {
        format!("[[requirement]]\nsection = \"S\"\n{fields}\n")
    }

    #[test]
    fn every_rule_is_enforced() {
        let spec = "source = \"https://modelcontextprotocol.io/specification/x#y\"";
        let dup = format!(
            "{}{}",
            one(&format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}")),
            one(&format!("id = \"a:b\"\nbehavior = \"y\"\n{spec}"))
        );
        assert!(problems(&dup)[0].contains("duplicate id"));

        let cases = [
            (
                format!("id = \"a:b\"\nbehavior = \" \"\n{spec}"),
                "behavior is empty",
            ),
            (
                format!("id = \"Ab\"\nbehavior = \"x\"\n{spec}"),
                "id must be",
            ),
            (
                "id = \"a:b\"\nbehavior = \"x\"\nsource = \"http://example.com\"".into(),
                "source",
            ),
            (
                "id = \"a:b\"\nbehavior = \"x\"\nsource = \"issue:12\"".into(),
                "source",
            ),
            (
                format!(
                    "id = \"a:b\"\nbehavior = \"x\"\n{spec}\ndeferred = \"r\"\ndivergence = \"n\""
                ),
                "both set",
            ),
            (
                format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}\ntransports = [\"in-memory\"]"),
                "unknown transport \"in-memory\"",
            ),
            (
                format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}\ntransports = [\"http\"]"),
                "unknown transport",
            ),
            (
                format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}\ntransports = []"),
                "transports is empty",
            ),
            (
                format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}\ndeferred = \"\""),
                "needs a reason",
            ),
            (
                format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}\ndefered = \"typo\""),
                "unknown field",
            ),
        ];
        for (fields, expected) in cases {
            let p = problems(&one(&fields));
            assert!(
                p.iter().any(|p| p.contains(expected)),
                "{fields}: expected {expected:?} in {p:?}"
            );
        }
    }

    #[test]
    fn all_problems_are_reported_at_once() {
        let text = format!(
            "{}{}",
            one("id = \"a:b\"\nbehavior = \"\"\nsource = \"sdk\""),
            one("id = \"a:c\"\nbehavior = \"x\"\nsource = \"nope\"")
        );
        assert_eq!(problems(&text).len(), 2);
    }
}
