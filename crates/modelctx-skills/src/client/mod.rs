//! The client half: listing and getting entries, loading a skill and reading its files
//! on demand, every read verified against the entry (size, digest, and for a
//! `SKILL.md` its frontmatter), a cache keyed by (server label, URI), and materialising
//! a skill below a directory.

mod error;
mod materialize;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use modelctx_client::Client;
use modelctx_types::{
    ReadResourceRequest, Resource, ResourceRequestParams, TextOrBlobResourceContents,
};
use serde_json::Value;

pub use error::{SkillsError, SkillsErrorKind};
pub use materialize::materialized_path;

use crate::frontmatter;
use crate::wire::{
    DIRECTORY_READ_SETTING, DirectoryResult, EXTENSION_ID, GetResult, ListParams, ListResult,
    MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES, SkillEntry, SkillResources, UriParams, method,
};

method!(ListSkills, "skills/list", ListParams, ListResult<Value>);
method!(GetSkill, "skills/get", UriParams, GetResult<Value>);
method!(
    ReadDirectory,
    "resources/directory/read",
    UriParams,
    DirectoryResult
);

/// How many `skills/list` pages [`SkillsClient::list`] follows before it stops.
const MAX_PAGES: usize = 1_000;

/// Verified skill files, keyed by (server label, URI): a file is served from here when
/// its digest matches the entry a read is checked against, and fetched again when it
/// does not (the skill changed). The cache lives in the host's memory, where nothing
/// but the host writes to it; it is shared by cloning, so several
/// [`SkillsClient`]s (one per server) may use one.
///
/// ```
/// use modelctx_skills::SkillCache;
///
/// let cache = SkillCache::new();
/// assert!(cache.is_empty());
/// cache.remove_server("github");
/// ```
#[derive(Clone, Default)]
pub struct SkillCache {
    files: Arc<Mutex<HashMap<(String, String), Cached>>>,
}

#[derive(Clone)]
struct Cached {
    digest: String,
    bytes: Arc<[u8]>,
}

modelctx_types::__debug_shows!(SkillCache, |v| { files: &v.len() });

impl SkillCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Cached>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every file of the server labelled `label` (when the host removes it).
    pub fn remove_server(&self, label: &str) {
        self.lock().retain(|(server, _), _| server != label);
    }

    /// Forgets everything.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn get(&self, label: &str, uri: &str, digest: &str) -> Option<Arc<[u8]>> {
        self.lock()
            .get(&(label.to_owned(), uri.to_owned()))
            .filter(|c| c.digest == digest)
            .map(|c| c.bytes.clone())
    }

    fn put(&self, label: &str, uri: &str, digest: &str, bytes: Arc<[u8]>) {
        self.lock().insert(
            (label.to_owned(), uri.to_owned()),
            Cached {
                digest: digest.to_owned(),
                bytes,
            },
        );
    }
}

/// Entries of `skills/list`: the well-formed ones, and why each malformed one was left
/// out (a host must not load those).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SkillsListing {
    /// The well-formed entries, in the server's order.
    pub skills: Vec<SkillEntry>,
    /// What was wrong with each malformed entry.
    pub invalid: Vec<String>,
    /// The cursor of the next page ([`SkillsClient::list_page`] only).
    pub next_cursor: Option<String>,
    /// How long the listing may be kept (protocol 2026-07-28), in milliseconds.
    pub ttl_ms: Option<u64>,
    /// Who may share it (protocol 2026-07-28).
    pub cache_scope: Option<String>,
}

/// A loaded skill: its entry, and its `SKILL.md`, verified against it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The host's label of the server it came from.
    pub server: String,
    /// The entry it was verified against.
    pub entry: SkillEntry,
    /// The text of its `SKILL.md`.
    pub skill_md: String,
}

/// The skills of one connected server, under a label the host assigns to that server
/// (the server's identity for the cache and for materialised paths; never the server's
/// self-reported name). Made by [`ClientSkillsExt::skills`].
///
/// Nothing is fetched ahead of need: listing reads only the listing, [`load`](Self::load)
/// fetches one `SKILL.md`, [`read_file`](Self::read_file) one file.
///
/// ```no_run
/// # async fn demo(client: modelctx_client::Client) -> Result<(), modelctx_skills::SkillsError> {
/// use modelctx_skills::ClientSkillsExt;
///
/// let skills = client.skills("docs-server");
/// let listing = skills.list().await?;
/// for entry in &listing.skills {
///     println!("{}: {}", entry.name(), entry.description());
/// }
/// if let Some(entry) = listing.skills.first() {
///     let loaded = skills.load(entry).await?; // SKILL.md, verified
///     println!("{}", loaded.skill_md);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SkillsClient {
    client: Client,
    label: String,
    cache: SkillCache,
}

/// `client.skills(label)`.
pub trait ClientSkillsExt {
    /// The skills of this client's server, labelled `label` by the host.
    fn skills(&self, label: impl Into<String>) -> SkillsClient;
}

impl ClientSkillsExt for Client {
    fn skills(&self, label: impl Into<String>) -> SkillsClient {
        SkillsClient {
            client: self.clone(),
            label: label.into(),
            cache: SkillCache::new(),
        }
    }
}

impl SkillsClient {
    /// Uses `cache` (shared with other servers' clients) instead of a cache of its own.
    #[must_use]
    pub fn with_cache(mut self, cache: SkillCache) -> Self {
        self.cache = cache;
        self
    }

    /// The host's label of the server.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The cache it reads through.
    pub fn cache(&self) -> &SkillCache {
        &self.cache
    }

    /// Whether the server declared the skills extension.
    pub fn is_offered(&self) -> bool {
        self.settings().is_some()
    }

    /// Whether the server declared `directoryRead: true`.
    pub fn directory_read_offered(&self) -> bool {
        self.settings()
            .and_then(|s| s.get(DIRECTORY_READ_SETTING))
            .and_then(Value::as_bool)
            == Some(true)
    }

    fn settings(&self) -> Option<&modelctx_types::JsonObject> {
        self.client
            .server_capabilities()
            .extensions
            .as_ref()?
            .get(EXTENSION_ID)
    }

    fn offered(&self) -> Result<(), SkillsError> {
        if self.is_offered() {
            Ok(())
        } else {
            Err(SkillsError::not_offered(format!(
                "the server {:?} did not declare the {EXTENSION_ID} extension",
                self.label
            )))
        }
    }

    /// One page of `skills/list` from `cursor`.
    pub async fn list_page(&self, cursor: Option<&str>) -> Result<SkillsListing, SkillsError> {
        self.offered()?;
        let page = self
            .client
            .request::<ListSkills>(ListParams {
                cursor: cursor.map(str::to_owned),
            })
            .await
            .map_err(|e| SkillsError::session("skills/list", e))?;
        let mut listing = SkillsListing {
            skills: Vec::with_capacity(page.skills.len()),
            invalid: Vec::new(),
            next_cursor: page.next_cursor.filter(|c| !c.is_empty()),
            ttl_ms: page.ttl_ms,
            cache_scope: page.cache_scope,
        };
        for value in page.skills {
            match SkillEntry::from_value(value) {
                Ok(entry) => listing.skills.push(entry),
                Err(why) => listing.invalid.push(why),
            }
        }
        Ok(listing)
    }

    /// Every page of `skills/list` (a repeated cursor ends the walk with an error). An
    /// empty listing does not mean the server has no skills: it may serve unlisted
    /// ones, which [`get`](Self::get) reaches.
    pub async fn list(&self) -> Result<SkillsListing, SkillsError> {
        let mut all = self.list_page(None).await?;
        let mut seen = std::collections::HashSet::new();
        let mut pages = 1;
        while let Some(cursor) = all.next_cursor.take() {
            if !seen.insert(cursor.clone()) || pages >= MAX_PAGES {
                return Err(SkillsError::invalid_entry(
                    None,
                    format!("skills/list does not end: cursor {cursor:?} came back"),
                ));
            }
            let page = self.list_page(Some(&cursor)).await?;
            pages += 1;
            all.skills.extend(page.skills);
            all.invalid.extend(page.invalid);
            all.next_cursor = page.next_cursor;
        }
        Ok(all)
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`), listed or
    /// not; checked like a listed entry.
    pub async fn get(&self, uri: &str) -> Result<SkillEntry, SkillsError> {
        self.offered()?;
        let result = self
            .client
            .request::<GetSkill>(UriParams {
                uri: uri.to_owned(),
                cursor: None,
            })
            .await
            .map_err(|e| SkillsError::session("skills/get", e))?;
        let entry = SkillEntry::from_value(result.skill)
            .map_err(|why| SkillsError::invalid_entry(Some(uri), why))?;
        if entry.uri != uri {
            return Err(SkillsError::invalid_entry(
                Some(uri),
                format!("skills/get answered with another skill, {}", entry.uri),
            ));
        }
        Ok(entry)
    }

    /// Loads a skill: fetches its `SKILL.md` (or takes it from the cache when the
    /// digest still matches), verifies its size and digest against `entry`, parses its
    /// frontmatter and compares it field by field with the entry's. Any difference is a
    /// verification failure and the skill is not loaded. A skill over the SEP's limits
    /// (from the entry alone) or whose `resources` is `"dynamic"` is refused.
    pub async fn load(&self, entry: &SkillEntry) -> Result<LoadedSkill, SkillsError> {
        // Cached only once the frontmatter matches too.
        let bytes = self.fetch(entry, &entry.uri, false).await?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| SkillsError::verification(&entry.uri, "the SKILL.md is not UTF-8 text"))?;
        let found = frontmatter::as_json(text).map_err(|e| {
            SkillsError::verification(&entry.uri, format!("the SKILL.md frontmatter: {e}"))
        })?;
        let mut keys: Vec<&String> = found.keys().chain(entry.frontmatter.keys()).collect();
        keys.sort();
        keys.dedup();
        if let Some(key) = keys
            .into_iter()
            .find(|k| found.get(*k) != entry.frontmatter.get(*k))
        {
            return Err(SkillsError::verification(
                &entry.uri,
                format!(
                    "the SKILL.md frontmatter `{key}` is {} where the entry says {}",
                    found.get(key).map_or("absent".to_owned(), Value::to_string),
                    entry
                        .frontmatter
                        .get(key)
                        .map_or("absent".to_owned(), Value::to_string),
                ),
            ));
        }
        if let Some(file) = entry.file(&entry.uri) {
            self.cache
                .put(&self.label, &entry.uri, &file.digest, bytes.clone());
        }
        Ok(LoadedSkill {
            server: self.label.clone(),
            entry: entry.clone(),
            skill_md: text.to_owned(),
        })
    }

    /// The bytes of the file at `uri` of the skill `entry` describes: served from the
    /// cache when its digest matches the entry, else fetched with `resources/read` and
    /// verified — its length against the entry's `size`, its SHA-256 against the
    /// entry's `digest` — before it is cached or returned. A URI the entry does not
    /// list is refused without a request (an unlisted file is a change to the skill:
    /// refresh the entry with [`get`](Self::get)).
    pub async fn read_file(&self, entry: &SkillEntry, uri: &str) -> Result<Arc<[u8]>, SkillsError> {
        self.fetch(entry, uri, true).await
    }

    /// [`read_file`](Self::read_file), caching what it fetched when `keep`.
    async fn fetch(
        &self,
        entry: &SkillEntry,
        uri: &str,
        keep: bool,
    ) -> Result<Arc<[u8]>, SkillsError> {
        let files = match &entry.resources {
            SkillResources::Files(files) => files,
            SkillResources::Dynamic => {
                return Err(SkillsError::dynamic(&entry.uri));
            }
        };
        if let Some((count, total)) = entry.totals()
            && (count > MAX_RESOURCES_PER_SKILL || total > MAX_SKILL_BYTES)
        {
            return Err(SkillsError::limits(
                &entry.uri,
                format!(
                    "{count} files of {total} bytes: more than the {MAX_RESOURCES_PER_SKILL} files \
                     or {MAX_SKILL_BYTES} bytes this client loads"
                ),
            ));
        }
        let Some(file) = files.iter().find(|f| f.uri == uri) else {
            return Err(SkillsError::unlisted(uri, &entry.uri));
        };
        if let Some(bytes) = self.cache.get(&self.label, uri, &file.digest) {
            return Ok(bytes);
        }
        let result = self
            .client
            .request::<ReadResourceRequest>(ResourceRequestParams::new(uri))
            .await
            .map_err(|e| SkillsError::session(uri, e))?;
        let bytes = contents_bytes(uri, result.contents)?;
        if bytes.len() as u64 != file.size {
            return Err(SkillsError::verification(
                uri,
                format!(
                    "{} bytes read where the entry says {} (size mismatch)",
                    bytes.len(),
                    file.size
                ),
            ));
        }
        let digest = crate::digest(&bytes);
        if digest != file.digest {
            return Err(SkillsError::verification(
                uri,
                format!(
                    "the content's digest is {digest} where the entry says {} (digest mismatch)",
                    file.digest
                ),
            ));
        }
        let bytes: Arc<[u8]> = Arc::from(bytes);
        if keep {
            self.cache
                .put(&self.label, uri, &file.digest, bytes.clone());
        }
        Ok(bytes)
    }

    /// The children of the directory at `uri` (`resources/directory/read`, every
    /// page). Refused without a request when the server did not declare
    /// `directoryRead`. What it lists is a live view: it never extends what an entry
    /// lets [`read_file`](Self::read_file) read.
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>, SkillsError> {
        self.offered()?;
        if !self.directory_read_offered() {
            return Err(SkillsError::not_offered(format!(
                "the server {:?} did not declare directoryRead",
                self.label
            )));
        }
        let mut out = Vec::new();
        let mut cursor = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            let page = self
                .client
                .request::<ReadDirectory>(UriParams {
                    uri: uri.to_owned(),
                    cursor: cursor.take(),
                })
                .await
                .map_err(|e| SkillsError::session(uri, e))?;
            out.extend(page.resources);
            match page.next_cursor.filter(|c| !c.is_empty()) {
                Some(next) if seen.insert(next.clone()) && seen.len() < MAX_PAGES => {
                    cursor = Some(next);
                }
                Some(next) => {
                    return Err(SkillsError::invalid_entry(
                        Some(uri),
                        format!("resources/directory/read does not end: cursor {next:?} came back"),
                    ));
                }
                None => return Ok(out),
            }
        }
    }

    /// Writes the skill `entry` describes below `target`, at
    /// `<target>/<label>/<scheme>/<skill-path>/...` (the server's label percent-encoded
    /// into one segment, so the same URI from two servers lands apart and the origin is
    /// recoverable from the path), and returns the skill's directory. The skill is
    /// loaded first ([`load`](Self::load)), then every listed file is read (verified,
    /// through the cache) and written. A URI that would land outside `target` — a `..`
    /// or `.` segment, an encoded separator, an absolute path — or a symbolic link on
    /// the way is refused, and nothing is written outside `target`.
    pub async fn materialize(
        &self,
        entry: &SkillEntry,
        target: &Path,
    ) -> Result<PathBuf, SkillsError> {
        self.load(entry).await?;
        let SkillResources::Files(files) = &entry.resources else {
            return Err(SkillsError::dynamic(&entry.uri));
        };
        let root = materialize::skill_dir(target, &self.label, entry)?;
        let mut planned = Vec::with_capacity(files.len());
        for file in files {
            let path = materialize::file_path(target, &root, &self.label, &file.uri)?;
            planned.push((file.uri.clone(), path));
        }
        for (uri, path) in planned {
            let bytes = self.read_file(entry, &uri).await?;
            materialize::write(target, &path, &bytes).await?;
        }
        Ok(root)
    }
}

/// The bytes of the contents of `uri` in a `resources/read` answer (text as UTF-8, a
/// blob decoded from base64).
fn contents_bytes(
    uri: &str,
    contents: Vec<TextOrBlobResourceContents>,
) -> Result<Vec<u8>, SkillsError> {
    let mut matching = contents.into_iter().filter(|c| match c {
        TextOrBlobResourceContents::Text(t) => t.uri == uri,
        TextOrBlobResourceContents::Blob(b) => b.uri == uri,
    });
    let first = matching.next().ok_or_else(|| {
        SkillsError::verification(uri, "resources/read returned no contents for it")
    })?;
    if matching.next().is_some() {
        return Err(SkillsError::verification(
            uri,
            "resources/read returned several contents for it",
        ));
    }
    match first {
        TextOrBlobResourceContents::Text(t) => Ok(t.text.into_bytes()),
        TextOrBlobResourceContents::Blob(b) => base64_decode(&b.blob)
            .ok_or_else(|| SkillsError::verification(uri, "the blob is not valid base64")),
    }
}

/// Standard base64 (with or without padding).
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let trimmed = text.trim_end_matches('=');
    if text.len() - trimmed.len() > 2 || trimmed.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    for chunk in trimmed.as_bytes().chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_what_the_server_encodes() {
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("Zg==").unwrap(), b"f");
        assert_eq!(base64_decode("Zm8=").unwrap(), b"fo");
        assert_eq!(base64_decode("Zm9v").unwrap(), b"foo");
        assert_eq!(base64_decode("//79").unwrap(), [0xff, 0xfe, 0xfd]);
        for bad in ["Z", "Zm9v!", "Zg===", "Z==="] {
            assert!(base64_decode(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_cache_is_keyed_by_server_and_uri_and_revalidated_by_digest() {
        let cache = SkillCache::new();
        let bytes: Arc<[u8]> = Arc::from(&b"x"[..]);
        cache.put("a", "skill://s/SKILL.md", "sha256:1", bytes.clone());
        assert!(cache.get("a", "skill://s/SKILL.md", "sha256:1").is_some());
        assert!(cache.get("b", "skill://s/SKILL.md", "sha256:1").is_none());
        assert!(cache.get("a", "skill://s/SKILL.md", "sha256:2").is_none());
        cache.put("b", "skill://s/SKILL.md", "sha256:1", bytes);
        cache.remove_server("a");
        assert_eq!(cache.len(), 1);
    }
}
