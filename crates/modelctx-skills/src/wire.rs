//! The wire shapes of the extension: skill entries, and the params and results of
//! `skills/list`, `skills/get` and `resources/directory/read`.

use std::collections::BTreeSet;

use modelctx_types::{JsonObject, Resource};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::frontmatter::check_skill_name;
use crate::paths::{SKILL_MD, skill_root, split_uri};

/// The extension's identifier (SEP-2133), under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// The capability setting that says the server answers `resources/directory/read`.
pub const DIRECTORY_READ_SETTING: &str = "directoryRead";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// Per-skill limit: entries of a skill's `resources`, `SKILL.md` included.
pub const MAX_RESOURCES_PER_SKILL: usize = 512;
/// Per-skill limit: the sum of the sizes of a skill's files (16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// One skill as `skills/list` and `skills/get` describe it: the URI of its `SKILL.md`,
/// its frontmatter verbatim, and its files with their digests and sizes (or
/// [`SkillResources::Dynamic`]). Entries read from a server are checked
/// ([`SkillEntry::from_value`]) before anything is done with them.
///
/// ```
/// use modelctx_skills::{SkillEntry, SkillResources};
///
/// let entry = SkillEntry::from_value(serde_json::json!({
///     "uri": "skill://git-workflow/SKILL.md",
///     "frontmatter": {"name": "git-workflow", "description": "Branch and commit conventions"},
///     "resources": [{
///         "uri": "skill://git-workflow/SKILL.md",
///         "digest": format!("sha256:{}", "0".repeat(64)),
///         "size": 12
///     }]
/// }))?;
/// assert_eq!(entry.name(), "git-workflow");
/// assert!(matches!(entry.resources, SkillResources::Files(ref files) if files.len() == 1));
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The skill's `SKILL.md` frontmatter, as JSON.
    pub frontmatter: JsonObject,
    /// The skill's files, or `"dynamic"`.
    pub resources: SkillResources,
}

/// The files of a skill: every one with its digest and size, or `"dynamic"` for a skill
/// generated on demand (which offers no integrity).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, each exactly once.
    Files(Vec<SkillFile>),
    /// The skill's content is generated: no digests are published.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str("dynamic"),
        }
    }
}

/// One file of a skill: its URI, SHA-256 digest (`sha256:` and 64 lowercase hex
/// digits) and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:{hex}` of the file's bytes.
    pub digest: String,
    /// The length of the file's bytes.
    pub size: u64,
}

impl SkillFile {
    /// A file entry.
    ///
    /// ```
    /// use modelctx_skills::SkillFile;
    ///
    /// let file = SkillFile::new("skill://a/SKILL.md", modelctx_skills::digest(b"x"), 1);
    /// assert!(file.digest.starts_with("sha256:"));
    /// ```
    pub fn new(uri: impl Into<String>, digest: impl Into<String>, size: u64) -> Self {
        Self {
            uri: uri.into(),
            digest: digest.into(),
            size,
        }
    }
}

/// Whether `digest` is `sha256:` followed by 64 lowercase hex digits.
pub(crate) fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl SkillEntry {
    /// Reads and checks an entry as a server sent it: `uri` names a `SKILL.md` whose
    /// directory is the frontmatter's `name` (which follows the naming rules),
    /// `description` is present, and `resources` is `"dynamic"` or lists every file
    /// once, the `SKILL.md` among them, each within the skill's directory with a
    /// well-formed digest and a size. The error says what is wrong; such an entry is
    /// never loaded.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(mut map) = value else {
            return Err("a skill entry is an object".to_owned());
        };
        let uri = match map.remove("uri") {
            Some(Value::String(uri)) => uri,
            _ => return Err("a skill entry has a string `uri`".to_owned()),
        };
        let frontmatter = match map.remove("frontmatter") {
            Some(Value::Object(f)) => f,
            _ => return Err(format!("{uri}: the entry has no `frontmatter` object")),
        };
        let root = skill_root(&uri)
            .ok_or_else(|| format!("{uri}: an entry's `uri` names the skill's {SKILL_MD}"))?;
        let split = split_uri(&uri).map_err(|e| format!("{uri}: {e}"))?;
        let directory = split
            .segments
            .len()
            .checked_sub(2)
            .map(|i| split.segments[i].as_str())
            .ok_or_else(|| format!("{uri}: no skill path before {SKILL_MD}"))?;
        let name = match frontmatter.get("name") {
            Some(Value::String(name)) => name,
            _ => return Err(format!("{uri}: the frontmatter has no string `name`")),
        };
        check_skill_name(name).map_err(|e| format!("{uri}: {e}"))?;
        if name != directory {
            return Err(format!(
                "{uri}: the frontmatter `name` {name:?} is not the skill's directory {directory:?}"
            ));
        }
        match frontmatter.get("description") {
            Some(Value::String(d)) if !d.is_empty() => {}
            _ => {
                return Err(format!(
                    "{uri}: the frontmatter has no non-empty `description`"
                ));
            }
        }
        let resources = match map.remove("resources") {
            Some(Value::String(s)) if s == "dynamic" => SkillResources::Dynamic,
            Some(Value::Array(items)) => {
                let mut files = Vec::with_capacity(items.len());
                let mut seen = BTreeSet::new();
                for item in items {
                    let file: SkillFile = serde_json::from_value(item)
                        .map_err(|e| format!("{uri}: a `resources` item: {e}"))?;
                    if !is_digest(&file.digest) {
                        return Err(format!(
                            "{uri}: {} has digest {:?}, not sha256: and 64 lowercase hex digits",
                            file.uri, file.digest
                        ));
                    }
                    let inside = file
                        .uri
                        .strip_prefix(root)
                        .is_some_and(|rest| rest.starts_with('/'));
                    if !inside {
                        return Err(format!(
                            "{uri}: {} is not a file of the skill's directory {root}",
                            file.uri
                        ));
                    }
                    split_uri(&file.uri).map_err(|e| format!("{uri}: {e}"))?;
                    if !seen.insert(file.uri.clone()) {
                        return Err(format!("{uri}: {} is listed twice", file.uri));
                    }
                    files.push(file);
                }
                if !seen.contains(&uri) {
                    return Err(format!("{uri}: `resources` does not list the {SKILL_MD}"));
                }
                SkillResources::Files(files)
            }
            Some(other) => {
                return Err(format!(
                    "{uri}: `resources` is neither an array nor \"dynamic\": {other}"
                ));
            }
            None => return Err(format!("{uri}: the entry has no `resources`")),
        };
        Ok(Self {
            uri,
            frontmatter,
            resources,
        })
    }

    /// The skill's name (the frontmatter's `name`, checked to be a string).
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The skill's description (the frontmatter's `description`).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The skill's root directory URI (its `SKILL.md` URI without `/SKILL.md`).
    pub fn root(&self) -> &str {
        skill_root(&self.uri).unwrap_or(&self.uri)
    }

    /// The listed file at `uri`, if the entry lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }

    /// The number of files and their total size, when the entry lists them.
    pub fn totals(&self) -> Option<(usize, u64)> {
        match &self.resources {
            SkillResources::Files(files) => Some((
                files.len(),
                files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size)),
            )),
            SkillResources::Dynamic => None,
        }
    }
}

/// `skills/list` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<String>,
}

/// `skills/get` and `resources/directory/read` params.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UriParams {
    pub(crate) uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<String>,
}

/// A `skills/list` result as the client reads it: entries still unchecked.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListResult<E> {
    pub(crate) skills: Vec<E>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_scope: Option<String>,
}

/// A `skills/get` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetResult<E> {
    pub(crate) skill: E,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_scope: Option<String>,
}

/// A `resources/directory/read` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DirectoryResult {
    pub(crate) resources: Vec<Resource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_scope: Option<String>,
}

/// Declares a request method of the extension for a params and result type.
macro_rules! method {
    ($name:ident, $method:literal, $params:ty, $result:ty) => {
        pub(crate) struct $name;
        impl modelctx_types::RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    };
}
pub(crate) use method;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn digest() -> String {
        format!("sha256:{}", "a".repeat(64))
    }

    fn entry(resources: Value) -> Value {
        json!({
            "uri": "skill://acme/refunds/SKILL.md",
            "frontmatter": {"name": "refunds", "description": "d"},
            "resources": resources
        })
    }

    #[test]
    fn a_well_formed_entry_reads() {
        let e = SkillEntry::from_value(entry(json!([
            {"uri": "skill://acme/refunds/SKILL.md", "digest": digest(), "size": 3},
            {"uri": "skill://acme/refunds/a/b.md", "digest": digest(), "size": 4}
        ])))
        .unwrap();
        assert_eq!(e.totals(), Some((2, 7)));
        assert_eq!(e.root(), "skill://acme/refunds");
        assert!(e.file("skill://acme/refunds/a/b.md").is_some());
        let dynamic = SkillEntry::from_value(entry(json!("dynamic"))).unwrap();
        assert_eq!(dynamic.resources, SkillResources::Dynamic);
    }

    #[test]
    fn malformed_entries_say_what_is_wrong() {
        let own = json!({"uri": "skill://acme/refunds/SKILL.md", "digest": digest(), "size": 3});
        for (value, needle) in [
            (entry(Value::Null), "neither an array"),
            (
                json!({"uri": "skill://acme/refunds/SKILL.md",
                        "frontmatter": {"name": "refunds", "description": "d"}}),
                "no `resources`",
            ),
            (entry(json!([])), "does not list"),
            (entry(json!([own, own])), "twice"),
            (
                entry(json!([own, {"uri": "skill://acme/other/x", "digest": digest(), "size": 1}])),
                "not a file of",
            ),
            (
                entry(
                    json!([own, {"uri": "skill://acme/refunds/../x", "digest": digest(), "size": 1}]),
                ),
                "..",
            ),
            (
                entry(
                    json!([{"uri": "skill://acme/refunds/SKILL.md", "digest": "sha256:AB", "size": 3}]),
                ),
                "digest",
            ),
            (
                entry(json!([{"uri": "skill://acme/refunds/SKILL.md", "digest": digest()}])),
                "size",
            ),
            (
                json!({"uri": "skill://acme/refunds/SKILL.md",
                        "frontmatter": {"name": "other", "description": "d"}, "resources": "dynamic"}),
                "not the skill's directory",
            ),
            (
                json!({"uri": "skill://acme/refunds/SKILL.md",
                        "frontmatter": {"name": "refunds"}, "resources": "dynamic"}),
                "description",
            ),
            (
                json!({"uri": "skill://acme/refunds/README.md",
                        "frontmatter": {"name": "refunds", "description": "d"}, "resources": "dynamic"}),
                "SKILL.md",
            ),
        ] {
            let err = SkillEntry::from_value(value).unwrap_err();
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }
}
