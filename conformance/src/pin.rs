//! The manifest pin: `requirements.lock` holds the sha256 of `requirements.toml`, and the
//! manifest's ID set equals the reference set in
//! `<root>/../shared/interaction-manifest/requirements.json`.
//!
//! The lock is in `sha256sum` format (`<hex>  requirements.toml`), so
//! `sha256sum -c requirements.lock` in `conformance/` checks it too. Rewrite it with
//! `cargo xtask conformance --update-lock` (or `cargo xtask pin`).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::manifest::Manifest;

/// Where the manifest, its lock and the reference ID set live.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `conformance/requirements.toml`.
    pub manifest: PathBuf,
    /// `conformance/requirements.lock`.
    pub lock: PathBuf,
    /// `<root>/../shared/interaction-manifest/requirements.json`.
    pub reference: PathBuf,
}

impl Paths {
    /// The paths in this checkout (found from this crate's own directory).
    pub fn workspace() -> Self {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = workspace_root();
        Self {
            manifest: dir.join("requirements.toml"),
            lock: dir.join("requirements.lock"),
            reference: root
                .join("..")
                .join("shared")
                .join("interaction-manifest")
                .join("requirements.json"),
        }
    }
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

/// Rewrites the lock from the manifest; returns the new hash.
pub fn write_lock(paths: &Paths) -> io::Result<String> {
    let sha = manifest_sha256(paths)?;
    std::fs::write(&paths.lock, format!("{sha}  requirements.toml\n"))?;
    Ok(sha)
}

/// Checks that the lock holds the manifest's hash; `Ok` carries the hash.
pub fn check_lock(paths: &Paths) -> Result<String, String> {
    let sha = manifest_sha256(paths)
        .map_err(|e| format!("cannot read {}: {e}", paths.manifest.display()))?;
    let lock = std::fs::read_to_string(&paths.lock).map_err(|e| {
        format!(
            "cannot read {}: {e} (create it with `cargo xtask conformance --update-lock`)",
            paths.lock.display()
        )
    })?;
    let pinned = lock.split_whitespace().next().unwrap_or_default();
    if pinned == sha {
        Ok(sha)
    } else {
        Err(format!(
            "requirements.toml changed since it was pinned (lock {pinned:?}, file {sha}): review the \
             change, then run `cargo xtask conformance --update-lock`"
        ))
    }
}

/// How the reference ID check went when it passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceCheck {
    /// The ID sets are equal.
    Matches,
    /// The reference file is absent outside CI: nothing checked, the lock is relied on.
    Absent(String),
}

/// Checks that the manifest's ID set equals the reference set. A missing reference
/// passes (with a note) unless `ci` is set.
pub fn check_reference(
    manifest: &Manifest,
    reference: &Path,
    ci: bool,
) -> Result<ReferenceCheck, Vec<String>> {
    let text = match std::fs::read_to_string(reference) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !ci => {
            return Ok(ReferenceCheck::Absent(format!(
                "reference {} is absent: the ID set is not compared; relying on the lock",
                reference.display()
            )));
        }
        Err(e) => return Err(vec![format!("cannot read {}: {e}", reference.display())]),
    };
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| vec![format!("{} is not JSON: {e}", reference.display())])?;
    let reference_ids: BTreeSet<&str> = json["requirements"]
        .as_array()
        .ok_or_else(|| vec![format!("{} has no requirements array", reference.display())])?
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    let ours = manifest.ids();
    let mut problems: Vec<String> = reference_ids
        .difference(&ours)
        .map(|id| format!("{id}: in the reference, missing from requirements.toml"))
        .collect();
    problems.extend(
        ours.difference(&reference_ids)
            .map(|id| format!("{id}: in requirements.toml, not in the reference")),
    );
    if problems.is_empty() {
        Ok(ReferenceCheck::Matches)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "modelctx-conformance-pin-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn paths(dir: &Path) -> Paths {
        Paths {
            manifest: dir.join("requirements.toml"),
            lock: dir.join("requirements.lock"),
            reference: dir.join("requirements.json"),
        }
    }

    const MANIFEST: &str =
        "[[requirement]]\nid = \"a:b\"\nsection = \"S\"\nsource = \"sdk\"\nbehavior = \"x\"\n";

    #[test]
    fn sha256_is_the_standard_one() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn the_lock_catches_an_edit() {
        let dir = temp_dir("lock");
        let p = paths(&dir);
        std::fs::write(&p.manifest, MANIFEST).unwrap();
        let _ = std::fs::remove_file(&p.lock);
        assert!(check_lock(&p).unwrap_err().contains("--update-lock"));
        let sha = write_lock(&p).unwrap();
        assert_eq!(check_lock(&p), Ok(sha));
        std::fs::write(&p.manifest, format!("{MANIFEST}\n# edited\n")).unwrap();
        assert!(
            check_lock(&p)
                .unwrap_err()
                .contains("changed since it was pinned")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_reference_id_set_must_match() {
        let dir = temp_dir("reference");
        let p = paths(&dir);
        let m = Manifest::parse(MANIFEST).unwrap();

        assert!(matches!(
            check_reference(&m, &p.reference, false),
            Ok(ReferenceCheck::Absent(_))
        ));
        assert!(check_reference(&m, &p.reference, true).is_err());

        std::fs::write(&p.reference, r#"{"requirements": [{"id": "a:b"}]}"#).unwrap();
        assert_eq!(
            check_reference(&m, &p.reference, true),
            Ok(ReferenceCheck::Matches)
        );

        std::fs::write(&p.reference, r#"{"requirements": [{"id": "a:c"}]}"#).unwrap();
        let problems = check_reference(&m, &p.reference, false).unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
