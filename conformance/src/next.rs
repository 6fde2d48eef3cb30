//! The next manifest: the reference's next version, run beside the released one before
//! it ships.
//!
//! `requirements.toml` states every requirement of the released reference once.
//! `requirements-next.toml` holds only what the next reference differs by, so a shared ID
//! is never written twice:
//!
//! ```toml
//! [[changed]]                   # a shared ID whose era data the next reference changes
//! id = "tools:list-changed"
//! removed_in = "2026-07-28"     # any of transports, added_in, removed_in, supersedes,
//! superseded_by = "tools:listen:list-changed"   # superseded_by, arm_exclusions (a
//! arm_exclusions = []           # list replaces the whole list)
//! clear = ["removed_in"]        # fields the next reference leaves unset
//!
//! [[gone]]                      # a released ID the next reference does not have
//! id = "meta:request-to-handler"
//! successor = "protocol:meta:request-to-handler"  # the same behaviour, renamed
//! # not_carried = "why"         # or: not carried over, and why
//!
//! [[requirement]]               # a new ID, in our own words (the usual keys)
//! ```
//!
//! The next manifest is built from both files: the released requirements less the gone
//! ones (a renamed one keeps its statement under its successor's ID, or joins a shared
//! successor; tests naming the old ID count for the new one: one test, both names), the
//! changes applied, the new ones added, and every ID of the next reference we have not
//! stated yet held with the reference's era data and no behaviour (not yet covered, see
//! [`Requirement::is_stated`](crate::manifest::Requirement::is_stated)). A test's cells
//! come from each of its IDs where that ID is at home: the released manifest for a
//! released ID, the next one for a new ID ([`cells_for`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::kind::Cell;
use crate::manifest::{Manifest, ManifestError, Overlay, RawExclusion, RawRequirement};
use crate::pin::Paths;

/// What became of a released ID the next reference does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fate {
    /// The same behaviour under this ID in the next manifest.
    Successor(String),
    /// Not carried over, and why.
    NotCarried(String),
}

/// A released ID the next reference does not have, and its fate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gone {
    /// The released ID.
    pub id: String,
    /// Where it went.
    pub fate: Fate,
}

/// The next manifest, built over the released one.
#[derive(Debug, Clone)]
pub struct Next {
    manifest: Manifest,
    gone: Vec<Gone>,
    /// The next reference's IDs, when it was present.
    reference_ids: Option<BTreeSet<String>>,
    notes: Vec<String>,
}

impl Next {
    /// The next manifest as a manifest: stated and unstated requirements, the gone IDs
    /// with a successor as its aliases.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The released IDs it does not have, each with its fate, in file order.
    pub fn gone(&self) -> &[Gone] {
        &self.gone
    }

    /// Remarks on how it was built (the reference was absent: no unstated IDs held).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Loads the next manifest at `next` over the released manifest at `released`, with
    /// the reference at `next.reference`; `Ok(None)` when there is no next manifest.
    pub fn load(released: &Path, next: &Paths) -> Result<Option<Self>, ManifestError> {
        if !next.manifest.exists() {
            return Ok(None);
        }
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map_err(|e| ManifestError::one(format!("cannot read {}: {e}", p.display())))
        };
        let (base, text) = (read(released)?, read(&next.manifest)?);
        let (reference, notes) = match std::fs::read_to_string(&next.reference) {
            Ok(json) => (
                Some(serde_json::from_str(&json).map_err(|e| {
                    ManifestError::one(format!("{}: not JSON: {e}", next.reference.display()))
                })?),
                Vec::new(),
            ),
            Err(_) => (
                None,
                vec![format!(
                    "the next reference {} is absent: only the requirements we state are held",
                    next.reference.display()
                )],
            ),
        };
        let mut built = Self::build(&base, &text, reference.as_ref())?;
        built.notes.extend(notes);
        Ok(Some(built))
    }

    /// Builds the next manifest from the released manifest's text, the next file's text
    /// and the next reference (when present).
    pub fn build(
        released: &str,
        next: &str,
        reference: Option<&Value>,
    ) -> Result<Self, ManifestError> {
        let mut raw = Manifest::raw(released)?;
        let file: RawNext = toml::from_str(next)
            .map_err(|e| ManifestError::one(format!("next: not valid: {e}")))?;
        let mut problems = Vec::new();
        let mut overlay = Overlay::default();
        let mut gone = Vec::new();
        let released_ids: BTreeSet<String> = raw.requirement.iter().map(|r| r.id.clone()).collect();
        let new_ids: BTreeSet<String> = file.requirement.iter().map(|r| r.id.clone()).collect();
        let mut renamed: BTreeMap<String, String> = BTreeMap::new();
        let mut dropped = BTreeSet::new();
        for g in file.gone {
            if !released_ids.contains(&g.id) {
                problems.push(format!("gone {:?}: not a released requirement", g.id));
            }
            let fate = match (g.successor, g.not_carried) {
                (Some(s), None) => Fate::Successor(s),
                (None, Some(why)) if !why.trim().is_empty() => Fate::NotCarried(why),
                _ => {
                    problems.push(format!(
                        "gone {:?}: give exactly one of successor or not_carried (with a reason)",
                        g.id
                    ));
                    continue;
                }
            };
            match &fate {
                Fate::Successor(s) if released_ids.contains(s) => {
                    dropped.insert(g.id.clone());
                    overlay.aliases.insert(g.id.clone(), s.clone());
                }
                Fate::Successor(s) if new_ids.contains(s) => problems.push(format!(
                    "gone {:?}: its successor {s:?} is also stated as new: state it once",
                    g.id
                )),
                Fate::Successor(s) => {
                    renamed.insert(g.id.clone(), s.clone());
                    overlay.aliases.insert(g.id.clone(), s.clone());
                }
                Fate::NotCarried(_) => {
                    dropped.insert(g.id.clone());
                }
            }
            gone.push(Gone { id: g.id, fate });
        }
        raw.requirement.retain(|r| !dropped.contains(&r.id));
        for r in &mut raw.requirement {
            if let Some(s) = renamed.get(&r.id) {
                r.id = s.clone();
            }
        }
        raw.requirement.extend(file.requirement);
        let mut changed = BTreeSet::new();
        for c in file.changed {
            if !changed.insert(c.id.clone()) {
                problems.push(format!("changed {:?}: listed twice", c.id));
            }
            match raw.requirement.iter_mut().find(|r| r.id == c.id) {
                Some(r) => c.apply(r, &mut problems),
                None => problems.push(format!("changed {:?}: no such requirement", c.id)),
            }
        }
        let reference_ids = reference.map(|json| {
            json["requirements"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["id"].as_str().map(str::to_owned))
                .collect()
        });
        if let Some(reference) = reference {
            let held: BTreeSet<String> = raw.requirement.iter().map(|r| r.id.clone()).collect();
            for r in reference["requirements"].as_array().into_iter().flatten() {
                let Some(id) = r["id"].as_str() else { continue };
                if !held.contains(id) {
                    overlay.unstated.insert(id.to_owned());
                    raw.requirement.push(unstated(r));
                }
            }
        }
        if !problems.is_empty() {
            return Err(ManifestError::many(problems));
        }
        let manifest = Manifest::from_raw(raw, overlay)
            .map_err(|e| ManifestError::many(e.problems().iter().map(|p| format!("next: {p}"))))?;
        Ok(Self {
            manifest,
            gone,
            reference_ids,
            notes: Vec::new(),
        })
    }

    /// Every released ID the next reference does not have must have a fate, and only
    /// those: the completeness of the mapping. (Without the reference, only the
    /// successors are checked.)
    pub fn mapping_problems(&self, released: &Manifest) -> Vec<String> {
        let next_ids = self.manifest.ids();
        let mut problems = Vec::new();
        for id in released.ids() {
            let mapped = self.gone.iter().any(|g| g.id == id);
            let in_reference = self.reference_ids.as_ref().map(|ids| ids.contains(id));
            match in_reference {
                Some(false) if !mapped => problems.push(format!(
                    "{id}: released, not in the next reference, and not in \
                     requirements-next.toml's [[gone]]: give its successor or why it is not \
                     carried over"
                )),
                Some(true) if mapped => problems.push(format!(
                    "{id}: in requirements-next.toml's [[gone]] but still in the next reference"
                )),
                _ => {}
            }
        }
        for g in &self.gone {
            if let Fate::Successor(s) = &g.fate
                && !next_ids.contains(s.as_str())
            {
                problems.push(format!(
                    "{}: its successor {s:?} is not in the next manifest",
                    g.id
                ));
            }
        }
        problems
    }
}

/// The cells a test naming `ids` runs in: those of the SDK that each ID admits where it
/// is at home (a released ID in the released manifest, a new one in the next).
pub fn cells_for(released: &Manifest, next: Option<&Manifest>, ids: &[&str]) -> Vec<Cell> {
    let mut cells = released.sdk_cells().to_vec();
    for id in ids {
        let home = released.get(id).or_else(|| next.and_then(|n| n.get(id)));
        if let Some(r) = home {
            cells.retain(|c| r.runs_in().contains(c));
        }
    }
    cells
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNext {
    #[serde(default)]
    changed: Vec<RawChange>,
    #[serde(default)]
    gone: Vec<RawGone>,
    #[serde(default)]
    requirement: Vec<RawRequirement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGone {
    id: String,
    successor: Option<String>,
    not_carried: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChange {
    id: String,
    transports: Option<Vec<String>>,
    added_in: Option<String>,
    removed_in: Option<String>,
    supersedes: Option<Vec<String>>,
    superseded_by: Option<String>,
    arm_exclusions: Option<Vec<RawExclusion>>,
    #[serde(default)]
    clear: Vec<String>,
}

impl RawChange {
    fn apply(self, r: &mut RawRequirement, problems: &mut Vec<String>) {
        for field in &self.clear {
            match field.as_str() {
                "transports" => r.transports = None,
                "added_in" => r.added_in = None,
                "removed_in" => r.removed_in = None,
                "supersedes" => r.supersedes.clear(),
                "superseded_by" => r.superseded_by = None,
                "arm_exclusions" => r.arm_exclusions.clear(),
                other => problems.push(format!("changed {:?}: cannot clear {other:?}", self.id)),
            }
        }
        let set = |v: Option<String>, into: &mut Option<String>| {
            if v.is_some() {
                *into = v;
            }
        };
        if self.transports.is_some() {
            r.transports = self.transports;
        }
        set(self.added_in, &mut r.added_in);
        set(self.removed_in, &mut r.removed_in);
        set(self.superseded_by, &mut r.superseded_by);
        if let Some(s) = self.supersedes {
            r.supersedes = s;
        }
        if let Some(e) = self.arm_exclusions {
            r.arm_exclusions = e;
        }
    }
}

/// A reference requirement we have not stated yet: its era data, no behaviour.
fn unstated(r: &Value) -> RawRequirement {
    let text = |k: &str| r[k].as_str().map(str::to_owned);
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    RawRequirement {
        id: text("id").unwrap_or_default(),
        section: text("section").unwrap_or_default(),
        source: text("source").unwrap_or_default(),
        transports: r["transports"].as_array().map(|_| list(&r["transports"])),
        behavior: String::new(),
        deferred: None,
        divergence: None,
        added_in: text("added_in"),
        removed_in: text("removed_in"),
        supersedes: list(&r["supersedes"]),
        superseded_by: text("superseded_by"),
        arm_exclusions: r["arm_exclusions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| RawExclusion {
                transport: e["transport"].as_str().map(str::to_owned),
                version: e["spec_version"].as_str().map(str::to_owned),
                reason: e["reason"].as_str().unwrap_or_default().to_owned(),
                note: None,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
