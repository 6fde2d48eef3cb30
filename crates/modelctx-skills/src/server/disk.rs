//! Reading skills from disk: regular files only (a symbolic link is refused, never
//! followed, so nothing outside the skill's directory is read), hidden entries skipped,
//! the depth and size bounded while walking.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::SkillError;
use crate::paths::{MAX_PATH_DEPTH, SKILL_MD};
use crate::wire::{MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES};

/// The entries of `dir` by name, hidden ones left out; each with its metadata (not
/// followed through a link).
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, fs::Metadata)>, SkillError> {
    let shown = dir.display().to_string();
    let reader =
        fs::read_dir(dir).map_err(|e| SkillError::io(&shown, format!("cannot list: {e}")))?;
    let mut out = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|e| SkillError::io(&shown, format!("cannot list: {e}")))?;
        let path = entry.path();
        let name = entry.file_name().into_string().map_err(|_| {
            SkillError::invalid(path.display().to_string(), "a file name that is not UTF-8")
        })?;
        if name.starts_with('.') {
            continue;
        }
        let meta = fs::symlink_metadata(&path)
            .map_err(|e| SkillError::io(path.display().to_string(), e.to_string()))?;
        if meta.file_type().is_symlink() {
            return Err(SkillError::invalid(
                path.display().to_string(),
                "a symbolic link: skills are served from regular files only, links are not followed",
            ));
        }
        out.push((name, path, meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// What a poll compares to see whether a skill changed on disk: every regular file
/// below its directory with its modification time and length, in path order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Fingerprint(Vec<(String, Option<SystemTime>, u64)>);

/// A file of a skill: its `/`-separated path relative to the skill, and its bytes.
pub(super) type SkillFileBytes = (String, Vec<u8>);

/// Every regular file below `dir`, as (`/`-separated path relative to `dir`, bytes),
/// and the fingerprint of what was read (taken before each file is read, so a write
/// racing the read shows at the next poll).
pub(super) fn read_skill_dir(dir: &Path) -> Result<(Vec<SkillFileBytes>, Fingerprint), SkillError> {
    check_is_dir(dir, NOT_A_SKILL_DIR)?;
    let mut out = Vec::new();
    let mut fingerprint = Fingerprint::default();
    let mut total = 0u64;
    walk(dir, &mut Vec::new(), &mut |relative, path, meta| {
        let shown = path.display().to_string();
        total = total.saturating_add(meta.len());
        if total > MAX_SKILL_BYTES || out.len() >= MAX_RESOURCES_PER_SKILL {
            return Err(SkillError::of(
                super::SkillErrorKind::Limit,
                shown,
                format!(
                    "the skill exceeds {MAX_RESOURCES_PER_SKILL} files or {MAX_SKILL_BYTES} bytes"
                ),
            ));
        }
        fingerprint
            .0
            .push((relative.clone(), meta.modified().ok(), meta.len()));
        let bytes = fs::read(path).map_err(|e| SkillError::io(&shown, e.to_string()))?;
        out.push((relative, bytes));
        Ok(())
    })?;
    Ok((out, fingerprint))
}

/// The fingerprint of the skill in `dir`, from metadata alone (nothing is read).
pub(super) fn fingerprint(dir: &Path) -> Result<Fingerprint, SkillError> {
    check_is_dir(dir, NOT_A_SKILL_DIR)?;
    let mut fingerprint = Fingerprint::default();
    walk(dir, &mut Vec::new(), &mut |relative, _path, meta| {
        fingerprint
            .0
            .push((relative, meta.modified().ok(), meta.len()));
        Ok(())
    })?;
    Ok(fingerprint)
}

/// Refuses `dir` unless it is a directory itself (not a link to one); `refusal` says
/// what it should have been.
fn check_is_dir(dir: &Path, refusal: &'static str) -> Result<(), SkillError> {
    let meta = fs::symlink_metadata(dir)
        .map_err(|e| SkillError::io(dir.display().to_string(), e.to_string()))?;
    if !meta.is_dir() {
        return Err(SkillError::invalid(dir.display().to_string(), refusal));
    }
    Ok(())
}

/// The refusal of a skill path that is not a directory.
const NOT_A_SKILL_DIR: &str = "a skill is a directory (this is not one, or is a symbolic link)";

/// Adds the directory `name` (at `path`) to a walk's `prefix`, refusing depth beyond
/// [`MAX_PATH_DEPTH`]; the caller pops it when done below it.
fn step_in(prefix: &mut Vec<String>, name: String, path: &Path) -> Result<(), SkillError> {
    if prefix.len() + 1 >= MAX_PATH_DEPTH {
        return Err(SkillError::of(
            super::SkillErrorKind::Limit,
            path.display().to_string(),
            format!("deeper than {MAX_PATH_DEPTH} path segments"),
        ));
    }
    prefix.push(name);
    Ok(())
}

/// Calls `visit` with every regular file below `dir` (its path relative to the walk's
/// start, its path on disk, its metadata), refusing links, special files and depth
/// beyond [`MAX_PATH_DEPTH`].
fn walk(
    dir: &Path,
    prefix: &mut Vec<String>,
    visit: &mut dyn FnMut(String, &Path, &fs::Metadata) -> Result<(), SkillError>,
) -> Result<(), SkillError> {
    for (name, path, meta) in entries(dir)? {
        if meta.is_dir() {
            step_in(prefix, name, &path)?;
            walk(&path, prefix, visit)?;
            prefix.pop();
        } else if meta.is_file() {
            let mut relative = prefix.join("/");
            if !relative.is_empty() {
                relative.push('/');
            }
            relative.push_str(&name);
            visit(relative, &path, &meta)?;
        } else {
            return Err(SkillError::invalid(
                path.display().to_string(),
                "not a regular file or directory (skills serve regular files only)",
            ));
        }
    }
    Ok(())
}

/// Every skill below `root`: (skill path, directory), in path order.
pub(super) fn find_skills(root: &Path) -> Result<Vec<(String, PathBuf)>, SkillError> {
    check_is_dir(
        root,
        "the skills root is a directory (this is not one, or is a symbolic link)",
    )?;
    if root.join(SKILL_MD).exists() {
        return Err(SkillError::invalid(
            root.join(SKILL_MD).display().to_string(),
            "a SKILL.md directly in the skills root: each skill needs a directory of its own below it",
        ));
    }
    let mut found = Vec::new();
    search(root, &mut Vec::new(), &mut found)?;
    Ok(found)
}

fn search(
    dir: &Path,
    prefix: &mut Vec<String>,
    found: &mut Vec<(String, PathBuf)>,
) -> Result<(), SkillError> {
    let entries = entries(dir)?;
    if !prefix.is_empty()
        && entries
            .iter()
            .any(|(name, _, meta)| name == SKILL_MD && meta.is_file())
    {
        found.push((prefix.join("/"), dir.to_path_buf()));
    }
    for (name, path, meta) in entries {
        if !meta.is_dir() {
            continue;
        }
        step_in(prefix, name, &path)?;
        search(&path, prefix, found)?;
        prefix.pop();
    }
    Ok(())
}
