//! The manifest pin. `requirements.lock` holds two lines in `sha256sum` format: the
//! sha256 of `requirements.toml`, and the sha256 and path (relative to `conformance/`) of
//! the reference manifest it follows — so `sha256sum -c requirements.lock` in
//! `conformance/` checks both. The contract checks that both hashes hold, that the
//! manifest's ID set equals the reference's, and that each requirement's era data (window,
//! succession, transports, the reference's arm exclusions) agrees with the reference.
//!
//! Moving the pin to a new reference is a reviewed act: `cargo xtask conformance
//! --manifest-diff PATH` prints what a candidate adds, removes and changes against the
//! pinned one; `cargo xtask conformance --update-lock --reference PATH` then re-pins.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::manifest::Manifest;

/// The reference manifest pinned when the lock names none: the shared interaction
/// vocabulary as the Python SDK ships it in `mcp` 2.3.0 (relative to `conformance/`).
pub const DEFAULT_REFERENCE: &str = "../../shared/interaction-manifest/v2.3.0/requirements.json";

/// The next reference pinned when its lock names none: the manifest of python-sdk pull
/// request #3018, not released yet (relative to `conformance/`).
pub const DEFAULT_NEXT_REFERENCE: &str =
    "../../shared/interaction-manifest/pr3018/requirements.json";

/// Where the manifest, its lock and the reference live.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `conformance/requirements.toml`.
    pub manifest: PathBuf,
    /// `conformance/requirements.lock`.
    pub lock: PathBuf,
    /// The reference manifest the lock names (or [`DEFAULT_REFERENCE`]).
    pub reference: PathBuf,
}

impl Paths {
    /// The paths in this checkout (found from this crate's own directory); the reference
    /// is the one the lock names.
    pub fn workspace() -> Self {
        Self::in_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
    }

    /// The next manifest's paths in this checkout: `requirements-next.toml`, its lock
    /// and the reference that lock names.
    pub fn workspace_next() -> Self {
        Self::next_in_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
    }

    /// The paths for a conformance directory `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self::named(dir, "requirements", DEFAULT_REFERENCE)
    }

    /// The next manifest's paths for a conformance directory `dir`.
    pub fn next_in_dir(dir: &Path) -> Self {
        Self::named(dir, "requirements-next", DEFAULT_NEXT_REFERENCE)
    }

    fn named(dir: &Path, stem: &str, default_reference: &str) -> Self {
        let lock = dir.join(format!("{stem}.lock"));
        let manifest = dir.join(format!("{stem}.toml"));
        let reference = std::fs::read_to_string(&lock)
            .ok()
            .and_then(|text| parse_lock(&text, &file_name(&manifest)).reference)
            .map(|(_, path)| path)
            .unwrap_or_else(|| default_reference.to_owned());
        Self {
            manifest,
            lock,
            reference: dir.join(reference),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The workspace root (the parent of the conformance crate).
pub fn workspace_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.to_path_buf())
}

/// Whether this run is CI (`CI=true`): a missing reference then fails instead of
/// being skipped.
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The sha256 of the manifest file.
pub fn manifest_sha256(paths: &Paths) -> io::Result<String> {
    Ok(sha256_hex(&std::fs::read(&paths.manifest)?))
}

/// What a lock file says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Lock {
    manifest: Option<String>,
    /// (sha256, path relative to the lock's directory).
    reference: Option<(String, String)>,
}

fn parse_lock(text: &str, manifest_file: &str) -> Lock {
    let mut lock = Lock::default();
    for line in text.lines() {
        let Some((sha, path)) = line.split_once("  ") else {
            continue;
        };
        if path == manifest_file {
            lock.manifest = Some(sha.to_owned());
        } else {
            lock.reference = Some((sha.to_owned(), path.to_owned()));
        }
    }
    lock
}

/// The path of `target` relative to `dir` (both made absolute first), written with `/`.
fn relative_to(dir: &Path, target: &Path) -> String {
    let abs = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .components()
            .fold(PathBuf::new(), |mut acc, c| {
                match c {
                    std::path::Component::ParentDir => {
                        acc.pop();
                    }
                    std::path::Component::CurDir => {}
                    other => acc.push(other),
                }
                acc
            })
    };
    let (dir, target) = (abs(dir), abs(target));
    let common = dir
        .components()
        .zip(target.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = dir
        .components()
        .skip(common)
        .map(|_| "..".to_owned())
        .collect();
    parts.extend(
        target
            .components()
            .skip(common)
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// Rewrites the lock from the manifest and `reference` (the pinned one when `None`);
/// returns the manifest's hash and the reference's.
pub fn write_lock(paths: &Paths, reference: Option<&Path>) -> io::Result<(String, String)> {
    let sha = manifest_sha256(paths)?;
    let reference = reference.unwrap_or(&paths.reference);
    let reference_sha = sha256_hex(&std::fs::read(reference)?);
    let dir = paths.lock.parent().unwrap_or(Path::new("."));
    let relative = relative_to(dir, reference);
    let name = file_name(&paths.manifest);
    std::fs::write(
        &paths.lock,
        format!("{sha}  {name}\n{reference_sha}  {relative}\n"),
    )?;
    Ok((sha, reference_sha))
}

/// Checks that the lock holds the manifest's hash, and the reference's when the
/// reference is present (absent outside CI: a note, see [`check_reference`]); `Ok`
/// carries the manifest's hash.
pub fn check_lock(paths: &Paths) -> Result<String, String> {
    let sha = manifest_sha256(paths)
        .map_err(|e| format!("cannot read {}: {e}", paths.manifest.display()))?;
    let text = std::fs::read_to_string(&paths.lock).map_err(|e| {
        format!(
            "cannot read {}: {e} (create it with `cargo xtask conformance --update-lock`)",
            paths.lock.display()
        )
    })?;
    let name = file_name(&paths.manifest);
    let lock = parse_lock(&text, &name);
    let pinned = lock.manifest.unwrap_or_default();
    if pinned != sha {
        return Err(format!(
            "{name} changed since it was pinned (lock {pinned:?}, file {sha}): review the \
             change, then run `cargo xtask conformance --update-lock`"
        ));
    }
    let Some((reference_sha, path)) = lock.reference else {
        return Err(
            "the lock names no reference manifest: pin one with `cargo xtask conformance \
             --update-lock --reference PATH`"
                .into(),
        );
    };
    if let Ok(bytes) = std::fs::read(&paths.reference) {
        let now = sha256_hex(&bytes);
        if now != reference_sha {
            return Err(format!(
                "the reference manifest {path} changed since it was pinned (lock {reference_sha}, \
                 file {now}): review it with `cargo xtask conformance --manifest-diff {path}`, \
                 then re-pin"
            ));
        }
    }
    Ok(sha)
}

/// How the reference check went when it passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceCheck {
    /// The ID sets and era data agree.
    Matches,
    /// The reference file is absent outside CI: nothing checked, the lock is relied on.
    Absent(String),
}

fn read_reference(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    if !json["requirements"].is_array() {
        return Err(format!("{} has no requirements array", path.display()));
    }
    Ok(json)
}

fn by_id(json: &Value) -> BTreeMap<&str, &Value> {
    json["requirements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r["id"].as_str()?, r)))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// Checks that the manifest follows the reference: the same ID set, and per requirement
/// the same transports, era window and succession, with every arm exclusion of the
/// reference present (ours may add more). A missing reference passes (with a note)
/// unless `ci` is set.
pub fn check_reference(
    manifest: &Manifest,
    reference: &Path,
    ci: bool,
) -> Result<ReferenceCheck, Vec<String>> {
    if !reference.exists() && !ci {
        return Ok(ReferenceCheck::Absent(format!(
            "reference {} is absent: the ID set is not compared; relying on the lock",
            reference.display()
        )));
    }
    let json = read_reference(reference).map_err(|e| vec![e])?;
    let theirs = by_id(&json);
    let reference_ids: BTreeSet<&str> = theirs.keys().copied().collect();
    let ours = manifest.ids();
    let mut problems: Vec<String> = reference_ids
        .difference(&ours)
        .map(|id| format!("{id}: in the reference, missing from requirements.toml"))
        .collect();
    problems.extend(
        ours.difference(&reference_ids)
            .map(|id| format!("{id}: in requirements.toml, not in the reference")),
    );
    for r in manifest.requirements() {
        let Some(t) = theirs.get(r.id.as_str()) else {
            continue;
        };
        let mut differs = |what: &str, ours: String, theirs: String| {
            if ours != theirs {
                problems.push(format!(
                    "{}: {what} is {ours} here but {theirs} in the reference",
                    r.id
                ));
            }
        };
        let opt = |v: Option<String>| v.unwrap_or_else(|| "none".into());
        differs(
            "transports",
            opt(r
                .transports
                .as_ref()
                .map(|ts| ts.iter().map(|t| t.name()).collect::<Vec<_>>().join(","))),
            opt(t["transports"]
                .as_array()
                .map(|_| strings(&t["transports"]).join(","))),
        );
        differs(
            "added_in",
            opt(r.added_in.map(|v| v.to_string())),
            opt(t["added_in"].as_str().map(str::to_owned)),
        );
        differs(
            "removed_in",
            opt(r.removed_in.map(|v| v.to_string())),
            opt(t["removed_in"].as_str().map(str::to_owned)),
        );
        differs(
            "supersedes",
            r.supersedes.join(","),
            strings(&t["supersedes"]).join(","),
        );
        differs(
            "superseded_by",
            opt(r.superseded_by.clone()),
            opt(t["superseded_by"].as_str().map(str::to_owned)),
        );
        for e in t["arm_exclusions"].as_array().into_iter().flatten() {
            let (transport, version, reason) = (
                e["transport"].as_str(),
                e["spec_version"].as_str(),
                e["reason"].as_str().unwrap_or_default(),
            );
            let kept = r.arm_exclusions.iter().any(|x| {
                x.transport.map(|k| k.name()) == transport
                    && x.version.map(|v| v.name()) == version
                    && x.reason == reason
            });
            if !kept {
                problems.push(format!(
                    "{}: the reference's arm exclusion ({} @ {}, {reason}) is missing",
                    r.id,
                    transport.unwrap_or("every transport"),
                    version.unwrap_or("every version"),
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(ReferenceCheck::Matches)
    } else {
        Err(problems)
    }
}

/// What a candidate reference manifest changes against the pinned one: one line per
/// added or removed ID, and per changed field of a kept ID (section, source, behaviour
/// text, transports, era window, succession, arm exclusions), plus the header's era axis
/// and transport locks.
pub fn manifest_diff(pinned: &Path, candidate: &Path) -> Result<Vec<String>, String> {
    let (old, new) = (read_reference(pinned)?, read_reference(candidate)?);
    let mut lines = Vec::new();
    for key in ["spec_versions", "transport_spec_versions"] {
        if old[key] != new[key] {
            lines.push(format!("~ {key}: {} -> {}", old[key], new[key]));
        }
    }
    let (before, after) = (by_id(&old), by_id(&new));
    for (id, r) in &after {
        match before.get(id) {
            None => lines.push(format!(
                "+ {id} [{}] {}",
                r["section"].as_str().unwrap_or_default(),
                era(r)
            )),
            Some(o) => {
                for field in [
                    "section",
                    "source",
                    "behavior",
                    "transports",
                    "added_in",
                    "removed_in",
                    "supersedes",
                    "superseded_by",
                    "arm_exclusions",
                ] {
                    let (a, b) = (field_of(o, field), field_of(r, field));
                    if a != b {
                        lines.push(format!("~ {id} {field}: {a} -> {b}"));
                    }
                }
            }
        }
    }
    for id in before.keys().filter(|id| !after.contains_key(*id)) {
        lines.push(format!("- {id}"));
    }
    Ok(lines)
}

/// A field as the diff shows it; an absent field reads as its empty value.
fn field_of(r: &Value, field: &str) -> String {
    match &r[field] {
        Value::Null => match field {
            "supersedes" | "arm_exclusions" => "[]".into(),
            _ => "null".into(),
        },
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn era(r: &Value) -> String {
    let side = |k: &str| r[k].as_str().unwrap_or("-").to_owned();
    format!("window [{}, {})", side("added_in"), side("removed_in"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "modelctx-conformance-pin-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(dir.join("conformance")).unwrap();
        dir
    }

    /// `<dir>/conformance/` holds the manifest and lock, `<dir>/reference.json` the reference.
    fn paths(dir: &Path) -> Paths {
        let conformance = dir.join("conformance");
        Paths {
            manifest: conformance.join("requirements.toml"),
            lock: conformance.join("requirements.lock"),
            reference: dir.join("reference.json"),
        }
    }

    const MANIFEST: &str = "spec_versions = [\"2025-11-25\", \"2026-07-28\"]\n[sdk_cells]\n\
        in-memory = [\"2025-11-25\"]\n\
        [[requirement]]\nid = \"a:b\"\nsection = \"S\"\nsource = \"sdk\"\nbehavior = \"x\"\n\
        removed_in = \"2026-07-28\"\n\
        arm_exclusions = [{ transport = \"stdio\", reason = \"requires-session\" }]\n";

    const REFERENCE: &str = r#"{"spec_versions": ["2025-11-25", "2026-07-28"], "requirements": [
        {"id": "a:b", "section": "S", "behavior": "x", "transports": null, "added_in": null,
         "removed_in": "2026-07-28", "supersedes": [], "superseded_by": null,
         "arm_exclusions": [{"transport": "stdio", "spec_version": null, "reason": "requires-session"}]}
    ]}"#;

    #[test]
    fn sha256_is_the_standard_one() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn the_lock_pins_the_manifest_and_the_reference() {
        let dir = temp_dir("lock");
        let p = paths(&dir);
        std::fs::write(&p.manifest, MANIFEST).unwrap();
        std::fs::write(&p.reference, REFERENCE).unwrap();
        let _ = std::fs::remove_file(&p.lock);
        assert!(check_lock(&p).unwrap_err().contains("--update-lock"));
        let (sha, reference_sha) = write_lock(&p, None).unwrap();
        assert_eq!(check_lock(&p), Ok(sha.clone()));
        let lock = std::fs::read_to_string(&p.lock).unwrap();
        assert_eq!(
            lock,
            format!("{sha}  requirements.toml\n{reference_sha}  ../reference.json\n")
        );
        // The lock names the reference, so the paths found from the directory agree.
        let found = Paths::in_dir(&dir.join("conformance"));
        assert_eq!(
            std::path::absolute(&found.reference).unwrap(),
            std::path::absolute(dir.join("conformance/../reference.json")).unwrap()
        );

        std::fs::write(&p.reference, REFERENCE.replace("\"x\"", "\"y\"")).unwrap();
        assert!(check_lock(&p).unwrap_err().contains("--manifest-diff"));
        std::fs::write(&p.reference, REFERENCE).unwrap();
        std::fs::write(&p.manifest, format!("{MANIFEST}\n# edited\n")).unwrap();
        assert!(
            check_lock(&p)
                .unwrap_err()
                .contains("changed since it was pinned")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_reference_ids_and_era_data_must_match() {
        let dir = temp_dir("reference");
        let p = paths(&dir);
        let m = Manifest::parse(MANIFEST).unwrap();

        assert!(matches!(
            check_reference(&m, &p.reference, false),
            Ok(ReferenceCheck::Absent(_))
        ));
        assert!(check_reference(&m, &p.reference, true).is_err());

        std::fs::write(&p.reference, REFERENCE).unwrap();
        assert_eq!(
            check_reference(&m, &p.reference, true),
            Ok(ReferenceCheck::Matches)
        );

        std::fs::write(&p.reference, REFERENCE.replace("a:b", "a:c")).unwrap();
        let problems = check_reference(&m, &p.reference, false).unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");

        let moved = REFERENCE
            .replace("\"removed_in\": \"2026-07-28\"", "\"removed_in\": null")
            .replace("\"stdio\"", "\"sse\"");
        std::fs::write(&p.reference, moved).unwrap();
        let problems = check_reference(&m, &p.reference, false).unwrap_err();
        assert!(
            problems.iter().any(|p| p.contains("removed_in")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("(sse @ every version, requires-session)")),
            "{problems:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_manifest_diff_names_what_a_candidate_changes() {
        let dir = temp_dir("diff");
        let (old, new) = (dir.join("old.json"), dir.join("new.json"));
        std::fs::write(&old, REFERENCE).unwrap();
        let candidate = REFERENCE
            .replace("\"behavior\": \"x\"", "\"behavior\": \"x2\"")
            .replace(
                "]}\n    ]}",
                "]},\n {\"id\": \"a:new\", \"section\": \"S\", \"added_in\": \"2026-07-28\"}]}",
            );
        std::fs::write(&new, candidate).unwrap();
        let lines = manifest_diff(&old, &new).unwrap();
        assert_eq!(
            lines,
            [
                "~ a:b behavior: \"x\" -> \"x2\"",
                "+ a:new [S] window [2026-07-28, -)",
            ],
            "{lines:?}"
        );
        let back = manifest_diff(&new, &old).unwrap();
        assert!(back.contains(&"- a:new".to_owned()), "{back:?}");
        assert!(manifest_diff(&old, &old).unwrap().is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
