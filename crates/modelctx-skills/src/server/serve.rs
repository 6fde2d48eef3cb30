//! Serving installed skills: entries computed once, the directory tree, and the
//! handlers of `skills/list`, `skills/get` and `resources/directory/read`.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, RwLock};

use modelctx_server::{Blob, Context, ResourceDef, ServerBuilder};
use modelctx_types::{ErrorData, JsonObject, ProtocolVersion, RawValue, Resource, to_raw};
use serde::Serialize;

use super::{BuiltFile, BuiltSkill, SkillError, SkillErrorKind, Skills};
use crate::paths::decode_segment;
use crate::wire::{
    DIRECTORY_MIME_TYPE, DIRECTORY_READ_SETTING, DirectoryResult, EXTENSION_ID, GetResult,
    ListParams, ListResult, MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES, UriParams, method,
};

method!(
    ServeList,
    "skills/list",
    Option<ListParams>,
    ListResult<Arc<RawValue>>
);
method!(ServeGet, "skills/get", UriParams, GetResult<Arc<RawValue>>);
method!(
    ServeDirectory,
    "resources/directory/read",
    UriParams,
    DirectoryResult
);

/// What the handlers answer from, computed when the skills are installed (and again
/// when a watch sees them change).
pub(super) struct Served {
    /// The listed entries, in URI order.
    listed: Vec<Arc<RawValue>>,
    /// Every entry by its `SKILL.md` URI.
    by_uri: BTreeMap<String, Arc<RawValue>>,
    /// The children of every directory, by directory URI.
    directories: BTreeMap<String, Vec<Resource>>,
    page_size: usize,
    ttl_ms: u64,
    scope: String,
}

/// The current [`Served`], swapped whole when the skills change.
pub(super) type Current = Arc<RwLock<Arc<Served>>>;

/// How the skills are served, whatever skills there are.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    page_size: usize,
    ttl_ms: u64,
    scope: String,
}

/// A file served as a resource: its bytes and the resource that describes it.
#[derive(Debug, Clone)]
pub(super) struct Registered {
    pub(super) file: Arc<BuiltFile>,
    pub(super) resource: Resource,
    /// How errors name the skill the file is served for.
    pub(super) owner: String,
}

impl Registered {
    /// Whether `other` serves something different at the same URI.
    pub(super) fn differs(&self, other: &Registered) -> bool {
        self.file.digest != other.file.digest || self.resource != other.resource
    }

    /// The resource definition that serves the file.
    pub(super) fn def(&self) -> ResourceDef {
        match std::str::from_utf8(&self.file.bytes) {
            Ok(text) => {
                let text = text.to_owned();
                ResourceDef::from_resource(self.resource.clone(), move |_cx: Context| {
                    let text = text.clone();
                    async move { Ok::<_, Infallible>(text) }
                })
            }
            Err(_) => {
                let bytes = self.file.bytes.clone();
                ResourceDef::from_resource(self.resource.clone(), move |_cx: Context| {
                    let blob = Blob(bytes.to_vec());
                    async move { Ok::<_, Infallible>(blob) }
                })
            }
        }
    }
}

/// Everything served for a set of skills: the handlers' answers and every file.
pub(super) struct Snapshot {
    pub(super) served: Served,
    pub(super) files: BTreeMap<String, Registered>,
}

#[derive(Serialize)]
struct EntryFile<'a> {
    uri: &'a str,
    digest: &'a str,
    size: u64,
}

#[derive(Serialize)]
struct Entry<'a> {
    uri: &'a str,
    frontmatter: &'a crate::frontmatter::Node,
    resources: Vec<EntryFile<'a>>,
}

impl Settings {
    fn of(skills: &Skills) -> Self {
        Self {
            page_size: skills.page_size,
            ttl_ms: u64::try_from(skills.ttl.as_millis()).unwrap_or(u64::MAX),
            scope: skills.scope.as_str().to_owned(),
        }
    }
}

/// Computes what `skills` serve: the entries (digests and sizes as hashed when each
/// skill was built), the directory tree and the resources. Refused when two skills
/// serve different bytes at one URI, or a skill with those nested in it exceeds a
/// limit.
pub(super) fn snapshot(
    skills: &BTreeMap<String, BuiltSkill>,
    settings: &Settings,
) -> Result<Snapshot, SkillError> {
    // Every file served, once: a file of a nested skill is also one of the enclosing
    // skill, with the same bytes.
    let mut files: BTreeMap<String, (Arc<BuiltFile>, &BuiltSkill)> = BTreeMap::new();
    for skill in skills.values() {
        for file in &skill.files {
            match files.get(&file.uri) {
                Some((known, _)) if known.bytes != file.bytes => {
                    return Err(SkillError::of(
                        SkillErrorKind::Duplicate,
                        skill.display.clone(),
                        format!("{} is served by two skills with different bytes", file.uri),
                    ));
                }
                Some(_) => {}
                None => {
                    files.insert(file.uri.clone(), (file.clone(), skill));
                }
            }
        }
    }
    // Each entry lists every file below its root: its own and its nested skills'.
    let mut listed = Vec::new();
    let mut by_uri = BTreeMap::new();
    for skill in skills.values() {
        let root = format!(
            "{}/",
            skill
                .uri
                .trim_end_matches(crate::SKILL_MD)
                .trim_end_matches('/')
        );
        let mine: Vec<&Arc<BuiltFile>> = files
            .range(root.clone()..)
            .take_while(|(uri, _)| uri.starts_with(&root))
            .map(|(_, (file, _))| file)
            .collect();
        let total: u64 = mine.iter().map(|f| f.bytes.len() as u64).sum();
        if mine.len() > MAX_RESOURCES_PER_SKILL || total > MAX_SKILL_BYTES {
            return Err(SkillError::of(
                SkillErrorKind::Limit,
                skill.display.clone(),
                format!(
                    "with the skills nested in it, {} files of {total} bytes: more than \
                     {MAX_RESOURCES_PER_SKILL} files or {MAX_SKILL_BYTES} bytes",
                    mine.len()
                ),
            ));
        }
        let entry = Entry {
            uri: &skill.uri,
            frontmatter: &skill.frontmatter.node,
            resources: mine
                .iter()
                .map(|f| EntryFile {
                    uri: &f.uri,
                    digest: &f.digest,
                    size: f.bytes.len() as u64,
                })
                .collect(),
        };
        let raw: Arc<RawValue> = Arc::from(
            to_raw(&entry)
                .map_err(|e| SkillError::invalid(skill.display.clone(), e.to_string()))?,
        );
        if skill.listed {
            listed.push(raw.clone());
        }
        by_uri.insert(skill.uri.clone(), raw);
    }

    let manifests: BTreeMap<&str, &BuiltSkill> =
        skills.values().map(|s| (s.uri.as_str(), s)).collect();
    let mut directories: BTreeMap<String, BTreeMap<String, Resource>> = BTreeMap::new();
    let mut registered = BTreeMap::new();
    for (uri, (file, owner)) in files {
        let mut resource = Resource::new(uri.clone(), file.relative.clone());
        resource.mime_type = Some(file.mime.to_owned());
        resource.size = Some(file.bytes.len() as u64);
        if let Some(skill) = manifests.get(uri.as_str()) {
            resource.name = skill.frontmatter.name.clone();
            resource.description = Some(skill.frontmatter.description.clone());
        }
        add_to_tree(&mut directories, &uri, &file);
        let owner = owner.display.clone();
        registered.insert(
            uri,
            Registered {
                file,
                resource,
                owner,
            },
        );
    }

    Ok(Snapshot {
        served: Served {
            listed,
            by_uri,
            directories: directories
                .into_iter()
                .map(|(dir, children)| (dir, children.into_values().collect()))
                .collect(),
            page_size: settings.page_size,
            ttl_ms: settings.ttl_ms,
            scope: settings.scope.clone(),
        },
        files: registered,
    })
}

/// The error of registering a skill file as a resource, naming its skill.
pub(super) fn registration_error(
    registered: &Registered,
    e: &modelctx_server::RegistrationError,
) -> SkillError {
    let kind = if e.is_duplicate() {
        SkillErrorKind::Duplicate
    } else {
        SkillErrorKind::Invalid
    };
    SkillError::of(kind, registered.owner.clone(), e.to_string())
}

pub(super) fn install(skills: Skills, builder: ServerBuilder) -> Result<ServerBuilder, SkillError> {
    // A watcher held elsewhere: the skills are kept for it, and a watched directory
    // may gain skills, so the extension is served even with none yet.
    let watched = Arc::strong_count(&skills.live) > 1;
    if skills.skills.is_empty() && !watched {
        return Ok(builder);
    }
    let settings = Settings::of(&skills);
    let snapshot = snapshot(&skills.skills, &settings)?;
    let mut builder = builder;
    for registered in snapshot.files.values() {
        builder = builder
            .resource(registered.def())
            .map_err(|e| registration_error(registered, &e))?;
    }
    let current: Current = Arc::new(RwLock::new(Arc::new(snapshot.served)));

    let mut extension = JsonObject::new();
    if skills.directory_read {
        extension.insert(DIRECTORY_READ_SETTING.to_owned(), true.into());
    }
    let list = current.clone();
    let get = current.clone();
    let mut builder = builder
        .extension(EXTENSION_ID, extension)
        .request_handler::<ServeList, _, _>(move |params, cx| {
            let served = now(&list);
            async move { served.list(params.unwrap_or_default(), &cx) }
        })
        .request_handler::<ServeGet, _, _>(move |params, cx| {
            let served = now(&get);
            async move { served.get(&params.uri, &cx) }
        });
    if skills.directory_read {
        let dir = current.clone();
        builder = builder.request_handler::<ServeDirectory, _, _>(move |params, cx| {
            let served = now(&dir);
            async move { served.directory(params, &cx) }
        });
    }
    if watched {
        let live = super::watch::Live::new(
            current,
            skills.skills,
            snapshot.files,
            skills.roots,
            settings,
        );
        // Installed once: a second install of the same skills keeps the first's.
        let _ = skills.live.set(Arc::new(live));
    }
    Ok(builder)
}

/// The skills served at this moment.
fn now(current: &Current) -> Arc<Served> {
    current
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Adds `uri` (a file) and every directory above it to the tree.
fn add_to_tree(
    directories: &mut BTreeMap<String, BTreeMap<String, Resource>>,
    uri: &str,
    file: &BuiltFile,
) {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let mut dir = format!("{scheme}://{}", segments[0]);
    for (i, segment) in segments.iter().enumerate().skip(1) {
        let child = format!("{dir}/{segment}");
        let name = decode_segment(segment).unwrap_or_else(|_| (*segment).to_owned());
        let children = directories.entry(dir.clone()).or_default();
        if i + 1 == segments.len() {
            let mut resource = Resource::new(child.clone(), name);
            resource.mime_type = Some(file.mime.to_owned());
            resource.size = Some(file.bytes.len() as u64);
            children.insert(child.clone(), resource);
        } else {
            children.entry(child.clone()).or_insert_with(|| {
                let mut resource = Resource::new(child.clone(), name);
                resource.mime_type = Some(DIRECTORY_MIME_TYPE.to_owned());
                resource
            });
        }
        dir = child;
    }
}

/// A page of `items` from the opaque `cursor` (issued by `page` for the list `tag`).
fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    size: usize,
    tag: &str,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix(tag)
            .and_then(|n| n.strip_prefix(':'))
            .filter(|n| !n.starts_with('+'))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n <= items.len())
            .ok_or_else(|| ErrorData::invalid_params(format!("Invalid cursor for {tag}")))?,
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| format!("{tag}:{end}"));
    Ok((items[start..end].to_vec(), next))
}

impl Served {
    fn list(
        &self,
        params: ListParams,
        cx: &Context,
    ) -> Result<ListResult<Arc<RawValue>>, ErrorData> {
        let (skills, next_cursor) = page(
            &self.listed,
            params.cursor.as_deref(),
            self.page_size,
            "skills",
        )?;
        let (ttl_ms, cache_scope) = self.caching(cx);
        Ok(ListResult {
            skills,
            next_cursor,
            ttl_ms,
            cache_scope,
        })
    }

    /// `ttlMs` and `cacheScope`, which exist from protocol 2026-07-28 on. The SEP
    /// requires them on `skills/list`; on `skills/get` and `resources/directory/read`
    /// it leaves them open, and they are sent there too, as on `resources/read` and
    /// `resources/list`, because clients that require them (the TypeScript SDK v2)
    /// refuse those results without.
    fn caching(&self, cx: &Context) -> (Option<u64>, Option<String>) {
        let caching = cx
            .protocol_version()
            .is_some_and(|v| v.at_least(&ProtocolVersion::V2026_07_28));
        (
            caching.then_some(self.ttl_ms),
            caching.then(|| self.scope.clone()),
        )
    }

    fn get(&self, uri: &str, cx: &Context) -> Result<GetResult<Arc<RawValue>>, ErrorData> {
        match self.by_uri.get(uri) {
            Some(entry) => {
                let (ttl_ms, cache_scope) = self.caching(cx);
                Ok(GetResult {
                    skill: entry.clone(),
                    ttl_ms,
                    cache_scope,
                })
            }
            None => Err(ErrorData::invalid_params(format!(
                "{uri} is not the SKILL.md of a skill this server serves"
            ))),
        }
    }

    fn directory(&self, params: UriParams, cx: &Context) -> Result<DirectoryResult, ErrorData> {
        let Some(children) = self.directories.get(&params.uri) else {
            return Err(ErrorData::invalid_params(format!(
                "{} is not a directory this server serves",
                params.uri
            )));
        };
        let tag = format!("dir:{}", children.len());
        let (resources, next_cursor) =
            page(children, params.cursor.as_deref(), self.page_size, &tag)?;
        let (ttl_ms, cache_scope) = self.caching(cx);
        Ok(DirectoryResult {
            resources,
            next_cursor,
            ttl_ms,
            cache_scope,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn cursors_are_checked() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, None, 2, "skills").unwrap();
        assert_eq!((first, next.as_deref()), (vec![0, 1], Some("skills:2")));
        let (last, next) = page(&items, Some("skills:4"), 2, "skills").unwrap();
        assert_eq!((last, next), (vec![4], None));
        for bad in ["skills:9", "other:2", "skills:+1", "skills:x", "2", ""] {
            let err = page(&items, Some(bad), 2, "skills").unwrap_err();
            assert_eq!(err.code, modelctx_types::ErrorCode::INVALID_PARAMS, "{bad}");
        }
    }

    #[test]
    fn every_directory_level_is_in_the_tree() {
        let mut tree = BTreeMap::new();
        let file = BuiltFile {
            uri: "skill://acme/refunds/templates/a%20b.md".to_owned(),
            relative: "templates/a b.md".to_owned(),
            bytes: Arc::from(&b"x"[..]),
            digest: crate::digest(b"x"),
            mime: "text/markdown",
        };
        add_to_tree(&mut tree, &file.uri.clone(), &file);
        let dirs: BTreeSet<&str> = tree.keys().map(String::as_str).collect();
        assert_eq!(
            dirs,
            BTreeSet::from([
                "skill://acme",
                "skill://acme/refunds",
                "skill://acme/refunds/templates"
            ])
        );
        let leaf =
            &tree["skill://acme/refunds/templates"]["skill://acme/refunds/templates/a%20b.md"];
        assert_eq!(leaf.name, "a b.md");
        let sub = &tree["skill://acme"]["skill://acme/refunds"];
        assert_eq!(sub.mime_type.as_deref(), Some(DIRECTORY_MIME_TYPE));
    }
}
