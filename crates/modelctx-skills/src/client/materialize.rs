//! Writing a verified skill below a target directory: every path computed from the URI
//! and checked to stay below the target, no symbolic link followed on the way.

use std::path::{Path, PathBuf};

use super::SkillsError;
use crate::paths::{local_path, skill_root};
use crate::wire::SkillEntry;

/// The local directory of the skill `entry` describes.
pub(super) fn skill_dir(
    target: &Path,
    label: &str,
    entry: &SkillEntry,
) -> Result<PathBuf, SkillsError> {
    let root = skill_root(&entry.uri)
        .ok_or_else(|| SkillsError::unsafe_path(&entry.uri, "not the URI of a SKILL.md"))?;
    local_path(target, label, root).map_err(|e| SkillsError::unsafe_path(&entry.uri, e))
}

/// Where materialising writes the file at `uri` of the server labelled `label`:
/// `<target>/<label>/<scheme>/<segment>/...`, the label percent-encoded into one
/// segment (dots too) and every URI segment decoded into exactly one file name. Refused
/// (an [`UnsafePath`](crate::SkillsErrorKind::UnsafePath) error naming the URI) when the
/// URI is not a plain `scheme://path` (a query, fragment, userinfo or port), or a
/// segment is empty, `.` or `..`, or decodes to a `/`, `\`, `%`, control character or
/// bytes that are not UTF-8, or there are more than
/// [`MAX_PATH_DEPTH`](crate::MAX_PATH_DEPTH) segments: what is returned is always below
/// `target`. The mapping alone touches no file;
/// [`SkillsClient::materialize`](crate::SkillsClient::materialize) also refuses to
/// write through a symbolic link.
///
/// ```
/// use std::path::Path;
/// use modelctx_skills::materialized_path;
///
/// let target = Path::new("/srv/skills");
/// assert_eq!(
///     materialized_path(target, "docs", "skill://acme/refunds/a%20b.md").unwrap(),
///     target.join("docs/skill/acme/refunds/a b.md")
/// );
/// assert!(materialized_path(target, "docs", "skill://acme/%2e%2e/%2e%2e/etc").is_err());
/// ```
pub fn materialized_path(target: &Path, label: &str, uri: &str) -> Result<PathBuf, SkillsError> {
    local_path(target, label, uri).map_err(|e| SkillsError::unsafe_path(uri, e))
}

/// The local path of the file at `uri`, which must land below the skill's directory
/// `root` (itself below `target`).
pub(super) fn file_path(
    target: &Path,
    root: &Path,
    label: &str,
    uri: &str,
) -> Result<PathBuf, SkillsError> {
    let path = materialized_path(target, label, uri)?;
    if !path.starts_with(root) || path == root {
        return Err(SkillsError::unsafe_path(
            uri,
            format!(
                "would land outside the skill's directory {}",
                root.display()
            ),
        ));
    }
    Ok(path)
}

/// Refuses a symbolic link at `path`, if anything is there.
async fn no_link(uri: &Path, path: &Path) -> Result<(), SkillsError> {
    match tokio::fs::symlink_metadata(path).await {
        Ok(meta) if meta.file_type().is_symlink() => Err(SkillsError::unsafe_path(
            &uri.display().to_string(),
            format!("{} is a symbolic link: not written through", path.display()),
        )),
        _ => Ok(()),
    }
}

/// Writes `bytes` at `path` (below `target`), creating `target` if need be and the
/// directories between, none of which may be a symbolic link.
pub(super) async fn write(target: &Path, path: &Path, bytes: &[u8]) -> Result<(), SkillsError> {
    let shown = path.display().to_string();
    // The target is the caller's: made if missing, a link allowed. Below it, nothing
    // is followed.
    tokio::fs::create_dir_all(target)
        .await
        .map_err(|e| SkillsError::io(&shown, format!("cannot create {}: {e}", target.display())))?;
    let relative = path
        .strip_prefix(target)
        .map_err(|_| SkillsError::unsafe_path(&shown, "outside the target directory"))?;
    let mut at = target.to_path_buf();
    let parts: Vec<_> = relative.components().collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        no_link(path, &at).await?;
        if i + 1 < parts.len() {
            match tokio::fs::create_dir(&at).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let meta = tokio::fs::symlink_metadata(&at)
                        .await
                        .map_err(|e| SkillsError::io(&shown, e.to_string()))?;
                    if !meta.is_dir() {
                        return Err(SkillsError::unsafe_path(
                            &shown,
                            format!("{} is in the way (not a directory)", at.display()),
                        ));
                    }
                }
                Err(e) => {
                    return Err(SkillsError::io(
                        &shown,
                        format!("cannot create {}: {e}", at.display()),
                    ));
                }
            }
        }
    }
    tokio::fs::write(path, bytes)
        .await
        .map_err(|e| SkillsError::io(&shown, e.to_string()))
}
