//! The requirements manifest (`conformance/requirements.toml`): load, validate, look up.
//!
//! The file starts with the matrix, then has one `[[requirement]]` per ID:
//!
//! ```toml
//! spec_versions = ["2025-11-25", "2026-07-28"]   # the era axis, oldest first
//!
//! [transport_versions]          # era locks: a transport listed here runs only these
//! sse = ["2025-11-25"]
//!
//! [sdk_cells]                   # what the SDK runs today, per transport
//! in-memory = ["2025-11-25"]
//!
//! [[requirement]]
//! id = "tools:call:content:text"
//! section = "Tools"
//! source = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools"
//! behavior = "tools/call returns the tool's text content."
//! # transports = ["streamable-http"]   # absent = every transport
//! # added_in = "2026-07-28"            # the era window [added_in, removed_in)
//! # removed_in = "2026-07-28"
//! # supersedes = ["old:id"]            # / superseded_by = "new:id"; both ends must agree
//! # arm_exclusions = [{ transport = "streamable-http-stateless", reason = "requires-session" }]
//! # deferred = "why it is not tested yet (the issue that will cover it)"
//! # divergence = "what we do instead of the required behaviour"
//! ```
//!
//! A requirement *applies* to the cells (transport, version) its transports, its window,
//! the era locks and its exclusions leave; it *runs* in those the SDK has (`[sdk_cells]`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::kind::{Cell, SpecVersion, TransportKind};

/// The prefix every spec deep link starts with.
pub const SPEC_LINK_PREFIX: &str = "https://modelcontextprotocol.io/specification/";

/// Why a single cell is carved out of a requirement: the reference manifest's typed
/// vocabulary, kept as is so the reasons double as a re-admission checklist (grep for one
/// when the gap it names closes).
pub const EXCLUSION_REASONS: &[&str] = &[
    "asserts-legacy-handshake",
    "method-not-in-modern-registry",
    "legacy-only-vocabulary",
    "modern-error-surface",
    "requires-session",
    "drives-transport-directly",
    "server-initiated-request",
];

/// A validated manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    spec_versions: Vec<SpecVersion>,
    transport_versions: BTreeMap<TransportKind, Vec<SpecVersion>>,
    sdk_cells: Vec<Cell>,
    requirements: Vec<Requirement>,
    by_id: BTreeMap<String, usize>,
    /// Former IDs (a retired manifest's) to the ID that states the same behaviour here.
    aliases: BTreeMap<String, String>,
}

/// One `(transport, version)` carve-out of a requirement: `None` on a side means every
/// transport (or every version).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArmExclusion {
    /// The transport excluded, or every transport.
    pub transport: Option<TransportKind>,
    /// The version excluded, or every version.
    pub version: Option<SpecVersion>,
    /// One of [`EXCLUSION_REASONS`].
    pub reason: String,
    /// Free-form context.
    pub note: Option<String>,
}

impl ArmExclusion {
    /// Whether it carves out `cell` (an exclusion of a wire transport carves out its
    /// variants too, see [`TransportKind::variant_of`]).
    pub fn excludes(&self, cell: Cell) -> bool {
        self.transport.is_none_or(|t| cell.transport.serves(t))
            && self.version.is_none_or(|v| v == cell.version)
    }
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
    /// The wire transports it applies to; `None` = transport-independent (every
    /// transport, in-memory included).
    pub transports: Option<Vec<TransportKind>>,
    /// The required behaviour.
    pub behavior: String,
    /// Why it has no test yet.
    pub deferred: Option<String>,
    /// What the SDK does instead of the required behaviour (its tests pin that).
    pub divergence: Option<String>,
    /// The first version it applies in (`None`: since the first on the axis).
    pub added_in: Option<SpecVersion>,
    /// The first version it no longer applies in (`None`: still applies).
    pub removed_in: Option<SpecVersion>,
    /// The retired requirements it replaces.
    pub supersedes: Vec<String>,
    /// The requirement that replaces it.
    pub superseded_by: Option<String>,
    /// Single cells carved out, each for a typed reason.
    pub arm_exclusions: Vec<ArmExclusion>,
    cells: Vec<Cell>,
    runs_in: Vec<Cell>,
    stated: bool,
}

impl Requirement {
    /// Every cell it applies to, in report order (served by the SDK or not).
    pub fn applies_to(&self) -> &[Cell] {
        &self.cells
    }

    /// The cells it applies to that the SDK has: where its tests run.
    pub fn runs_in(&self) -> &[Cell] {
        &self.runs_in
    }

    /// Whether the requirement exists in `version` (its era window).
    pub fn in_window(&self, version: SpecVersion) -> bool {
        self.added_in.is_none_or(|a| version >= a) && self.removed_in.is_none_or(|r| version < r)
    }

    /// Whether it is deferred (no test expected).
    pub fn is_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    /// Whether the SDK knowingly diverges from it.
    pub fn is_divergent(&self) -> bool {
        self.divergence.is_some()
    }

    /// Whether we state it in our own words. A manifest built ahead of its reference
    /// (the next one, see [`next`](crate::next)) holds the reference's IDs we have not
    /// stated yet with the reference's era data and no behaviour: not yet covered.
    pub fn is_stated(&self) -> bool {
        self.stated
    }
}

/// Why a manifest did not load: every problem found, not just the first.
#[derive(Debug)]
pub struct ManifestError {
    problems: Vec<String>,
}

impl ManifestError {
    pub(crate) fn one(problem: impl Into<String>) -> Self {
        Self {
            problems: vec![problem.into()],
        }
    }

    pub(crate) fn many(problems: impl IntoIterator<Item = String>) -> Self {
        Self {
            problems: problems.into_iter().collect(),
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

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawManifest {
    pub(crate) spec_versions: Vec<String>,
    #[serde(default)]
    pub(crate) transport_versions: BTreeMap<String, Vec<String>>,
    pub(crate) sdk_cells: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub(crate) requirement: Vec<RawRequirement>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRequirement {
    pub(crate) id: String,
    pub(crate) section: String,
    pub(crate) source: String,
    pub(crate) transports: Option<Vec<String>>,
    pub(crate) behavior: String,
    pub(crate) deferred: Option<String>,
    pub(crate) divergence: Option<String>,
    pub(crate) added_in: Option<String>,
    pub(crate) removed_in: Option<String>,
    #[serde(default)]
    pub(crate) supersedes: Vec<String>,
    pub(crate) superseded_by: Option<String>,
    #[serde(default)]
    pub(crate) arm_exclusions: Vec<RawExclusion>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExclusion {
    pub(crate) transport: Option<String>,
    pub(crate) version: Option<String>,
    pub(crate) reason: String,
    pub(crate) note: Option<String>,
}

/// What a manifest built over another adds to plain parsing: the IDs held unstated
/// (the reference's, not yet in our words) and the former IDs that resolve to others.
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    pub(crate) unstated: BTreeSet<String>,
    pub(crate) aliases: BTreeMap<String, String>,
}

/// The matrix part of a manifest, validated.
struct Matrix {
    spec_versions: Vec<SpecVersion>,
    transport_versions: BTreeMap<TransportKind, Vec<SpecVersion>>,
    sdk_cells: Vec<Cell>,
}

impl Matrix {
    fn parse(raw: &RawManifest, problems: &mut Vec<String>) -> Self {
        let mut spec_versions = Vec::new();
        for name in &raw.spec_versions {
            match SpecVersion::from_name(name) {
                Some(v) if spec_versions.contains(&v) => {
                    problems.push(format!("spec_versions: {name:?} listed twice"))
                }
                Some(v) => spec_versions.push(v),
                None => problems.push(format!("spec_versions: unknown version {name:?}")),
            }
        }
        if spec_versions.is_empty() {
            problems.push("spec_versions is empty".into());
        }
        if !spec_versions.is_sorted() {
            problems.push("spec_versions must be oldest first".into());
        }
        let mut versions_of = |table: &str, map: &BTreeMap<String, Vec<String>>| {
            let mut out = BTreeMap::new();
            for (name, list) in map {
                let Some(kind) = TransportKind::from_name(name) else {
                    problems.push(format!("{table}: unknown transport {name:?}"));
                    continue;
                };
                let mut versions = Vec::new();
                for v in list {
                    match SpecVersion::from_name(v).filter(|v| spec_versions.contains(v)) {
                        Some(v) if !versions.contains(&v) => versions.push(v),
                        Some(_) => problems.push(format!("{table}.{name}: {v:?} listed twice")),
                        None => problems
                            .push(format!("{table}.{name}: {v:?} is not one of spec_versions")),
                    }
                }
                out.insert(kind, versions);
            }
            out
        };
        let mut transport_versions = versions_of("transport_versions", &raw.transport_versions);
        // Our own transports' locks, where the manifest leaves them out.
        for kind in TransportKind::ALL {
            if let Some(lock) = kind.era_lock() {
                transport_versions.entry(kind).or_insert_with(|| {
                    lock.iter()
                        .copied()
                        .filter(|v| spec_versions.contains(v))
                        .collect()
                });
            }
        }
        let sdk = versions_of("sdk_cells", &raw.sdk_cells);
        let mut sdk_cells = Vec::new();
        for (&transport, versions) in &sdk {
            for &version in versions {
                let locked_out = transport_versions
                    .get(&transport)
                    .is_some_and(|allowed| !allowed.contains(&version));
                if locked_out {
                    problems.push(format!(
                        "sdk_cells.{transport}: {version} is outside the transport's era lock"
                    ));
                }
                sdk_cells.push(Cell::new(transport, version));
            }
        }
        sdk_cells.sort();
        Self {
            spec_versions,
            transport_versions,
            sdk_cells,
        }
    }

    /// The cells a requirement with these transports, window and exclusions applies to.
    fn cells(
        &self,
        transports: Option<&[TransportKind]>,
        window: impl Fn(SpecVersion) -> bool,
        exclusions: &[ArmExclusion],
    ) -> Vec<Cell> {
        let kinds: Vec<TransportKind> = match transports {
            None => TransportKind::ALL.to_vec(),
            // A requirement on a wire transport applies to its variants too.
            Some(listed) => TransportKind::ALL
                .into_iter()
                .filter(|k| listed.iter().any(|&wire| k.serves(wire)))
                .collect(),
        };
        let mut cells = Vec::new();
        for transport in kinds {
            for &version in &self.spec_versions {
                let cell = Cell::new(transport, version);
                let locked_out = self
                    .transport_versions
                    .get(&transport)
                    .is_some_and(|allowed| !allowed.contains(&version));
                if window(version) && !locked_out && !exclusions.iter().any(|e| e.excludes(cell)) {
                    cells.push(cell);
                }
            }
        }
        cells.sort();
        cells
    }
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
        Self::from_raw(Self::raw(text)?, Overlay::default())
    }

    pub(crate) fn raw(text: &str) -> Result<RawManifest, ManifestError> {
        toml::from_str(text).map_err(|e| ManifestError::one(format!("not valid: {e}")))
    }

    pub(crate) fn from_raw(raw: RawManifest, overlay: Overlay) -> Result<Self, ManifestError> {
        let mut problems = Vec::new();
        let matrix = Matrix::parse(&raw, &mut problems);
        let version = |name: &Option<String>, what: &str, problems: &mut Vec<String>| {
            let name = name.as_deref()?;
            let v = SpecVersion::from_name(name).filter(|v| matrix.spec_versions.contains(v));
            if v.is_none() {
                problems.push(format!("{what} {name:?} is not one of spec_versions"));
            }
            v
        };
        let mut requirements = Vec::with_capacity(raw.requirement.len());
        let mut by_id = BTreeMap::new();
        for (index, r) in raw.requirement.into_iter().enumerate() {
            let at = if r.id.is_empty() {
                format!("requirement #{}", index + 1)
            } else {
                format!("requirement {:?}", r.id)
            };
            let mut local = Vec::new();
            let mut bad = |what: String| local.push(what);
            if !is_valid_id(&r.id) {
                bad("id must be `<area>:<feature>[:<variant>]` (no spaces)".into());
            }
            if by_id.insert(r.id.clone(), requirements.len()).is_some() {
                bad("duplicate id".into());
            }
            if r.section.trim().is_empty() {
                bad("section is empty".into());
            }
            let stated = !overlay.unstated.contains(&r.id);
            if stated && r.behavior.trim().is_empty() {
                bad("behavior is empty".into());
            }
            if stated && !is_valid_source(&r.source) {
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
            let transports = match &r.transports {
                None => None,
                Some(names) => {
                    let mut kinds = Vec::new();
                    if names.is_empty() {
                        bad("transports is empty: leave it out when transport-independent".into());
                    }
                    for name in names {
                        match TransportKind::from_name(name).filter(|k| k.is_wire()) {
                            Some(k) if kinds.contains(&k) => {
                                bad(format!("transport {name:?} listed twice"))
                            }
                            Some(k) => kinds.push(k),
                            None => bad(format!(
                                "unknown transport {name:?} (allowed: stdio, streamable-http, \
                                 streamable-http-stateless, sse)"
                            )),
                        }
                    }
                    Some(kinds)
                }
            };
            let added_in = version(&r.added_in, "added_in", &mut local);
            let removed_in = version(&r.removed_in, "removed_in", &mut local);
            if let (Some(a), Some(rm)) = (added_in, removed_in)
                && a >= rm
            {
                local.push(format!(
                    "the window [{a}, {rm}) is empty: added_in must come before removed_in"
                ));
            }
            let mut arm_exclusions = Vec::new();
            for e in r.arm_exclusions {
                if !EXCLUSION_REASONS.contains(&e.reason.as_str()) {
                    local.push(format!(
                        "arm exclusion reason {:?} is not one of {}",
                        e.reason,
                        EXCLUSION_REASONS.join(", ")
                    ));
                }
                let transport = e.transport.as_deref().and_then(|name| {
                    let kind = TransportKind::from_name(name);
                    if kind.is_none() {
                        local.push(format!("arm exclusion names unknown transport {name:?}"));
                    }
                    kind
                });
                let version = version(&e.version, "arm exclusion version", &mut local);
                if e.transport.is_none() && e.version.is_none() {
                    local.push("an arm exclusion needs a transport, a version or both".into());
                }
                arm_exclusions.push(ArmExclusion {
                    transport,
                    version,
                    reason: e.reason,
                    note: e.note,
                });
            }
            let window = |v: SpecVersion| {
                added_in.is_none_or(|a| v >= a) && removed_in.is_none_or(|rm| v < rm)
            };
            let cells = matrix.cells(transports.as_deref(), window, &arm_exclusions);
            if cells.is_empty() {
                local.push("applies to no cell of the matrix".into());
            }
            let runs_in: Vec<Cell> = cells
                .iter()
                .copied()
                .filter(|c| matrix.sdk_cells.contains(c))
                .collect();
            problems.extend(local.into_iter().map(|p| format!("{at}: {p}")));
            requirements.push(Requirement {
                id: r.id,
                section: r.section,
                source: r.source,
                transports,
                behavior: r.behavior,
                deferred: r.deferred,
                divergence: r.divergence,
                added_in,
                removed_in,
                supersedes: r.supersedes,
                superseded_by: r.superseded_by,
                arm_exclusions,
                cells,
                runs_in,
                stated,
            });
        }
        problems.extend(succession_problems(&requirements, &by_id));
        for (old, new) in &overlay.aliases {
            if by_id.contains_key(old) {
                problems.push(format!("alias {old:?} is also a requirement's own id"));
            }
            if !by_id.contains_key(new) {
                problems.push(format!("alias {old:?} names unknown requirement {new:?}"));
            }
        }
        if !problems.is_empty() {
            return Err(ManifestError { problems });
        }
        Ok(Self {
            spec_versions: matrix.spec_versions,
            transport_versions: matrix.transport_versions,
            sdk_cells: matrix.sdk_cells,
            requirements,
            by_id,
            aliases: overlay.aliases,
        })
    }

    /// The era axis, oldest first.
    pub fn spec_versions(&self) -> &[SpecVersion] {
        &self.spec_versions
    }

    /// The era locks: a transport listed runs only these versions.
    pub fn transport_versions(&self) -> &BTreeMap<TransportKind, Vec<SpecVersion>> {
        &self.transport_versions
    }

    /// The cells the SDK runs today, in report order.
    pub fn sdk_cells(&self) -> &[Cell] {
        &self.sdk_cells
    }

    /// The requirements, in file order.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The requirement with this ID, or the one a former ID resolves to.
    pub fn get(&self, id: &str) -> Option<&Requirement> {
        let id = self.aliases.get(id).map_or(id, String::as_str);
        self.by_id.get(id).map(|&i| &self.requirements[i])
    }

    /// Whether an ID (or a former ID resolving to one) is in the manifest.
    pub fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Former IDs and the requirement each resolves to here (none in a released manifest).
    pub fn aliases(&self) -> &BTreeMap<String, String> {
        &self.aliases
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

    /// The cells a test naming `ids` runs in: those the SDK has that every one of its
    /// (known) requirements admits.
    pub fn cells_for(&self, ids: &[&str]) -> Vec<Cell> {
        let mut cells = self.sdk_cells.clone();
        for id in ids {
            if let Some(r) = self.get(id) {
                cells.retain(|c| r.runs_in.contains(c));
            }
        }
        cells
    }
}

/// `supersedes` / `superseded_by` must name known requirements, agree both ways, and
/// be versioned: the retired end has `removed_in`, the replacement `added_in`.
fn succession_problems(
    requirements: &[Requirement],
    by_id: &BTreeMap<String, usize>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let get = |id: &str| by_id.get(id).map(|&i| &requirements[i]);
    for r in requirements {
        if let Some(next) = &r.superseded_by {
            match get(next) {
                None => problems.push(format!("requirement {:?}: superseded_by unknown {next:?}", r.id)),
                Some(n) if !n.supersedes.contains(&r.id) => problems.push(format!(
                    "requirement {:?}: superseded_by {next:?}, which does not list it in supersedes",
                    r.id
                )),
                Some(_) => {}
            }
            if r.removed_in.is_none() {
                problems.push(format!(
                    "requirement {:?}: superseded, so it needs removed_in",
                    r.id
                ));
            }
        }
        for old in &r.supersedes {
            match get(old) {
                None => problems.push(format!("requirement {:?}: supersedes unknown {old:?}", r.id)),
                Some(o) if o.superseded_by.as_deref() != Some(r.id.as_str()) => {
                    problems.push(format!(
                        "requirement {:?}: supersedes {old:?}, whose superseded_by does not name it",
                        r.id
                    ))
                }
                Some(_) => {}
            }
        }
        if !r.supersedes.is_empty() && r.added_in.is_none() {
            problems.push(format!(
                "requirement {:?}: supersedes others, so it needs added_in",
                r.id
            ));
        }
    }
    problems
}

fn is_valid_id(id: &str) -> bool {
    let segments: Vec<&str> = id.split(':').collect();
    segments.len() >= 2
        && segments.iter().all(|s| {
            !s.is_empty()
                && s.bytes()
                    // Upper case only where the shared vocabulary names a JSON Schema
                    // keyword (`prefixItems`).
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
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
mod tests;
