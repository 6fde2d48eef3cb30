//! The server half: skills defined in code or read from disk, checked and hashed once,
//! installed into a [`ServerBuilder`] as resources and the extension's methods.

pub(crate) mod disk;
mod serve;
mod watch;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use modelctx_server::ServerBuilder;
use modelctx_types::CacheScope;

use crate::frontmatter::{self, Checked};
use crate::paths::{self, MAX_PATH_DEPTH, SKILL_MD};
use crate::wire::{MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES};

pub use watch::{SkillsWatch, SkillsWatcher};

/// Why a skill was refused: the file (a path on disk, or `<skill-path>/<file-path>` for
/// a skill built in code) and the rule it breaks.
///
/// ```
/// use modelctx_skills::{Skill, SkillErrorKind, Skills};
///
/// let skill = Skill::new("notes").file("SKILL.md", "---\nname: notes\ndescription: Notes.\n---\n");
/// let error = Skills::new().skill(skill.clone())?.skill(skill).unwrap_err();
/// match error.kind() {
///     SkillErrorKind::Duplicate => assert!(error.is_duplicate()),
///     other => panic!("unexpected {other:?}"),
/// }
/// # Ok::<(), modelctx_skills::SkillError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillError {
    file: String,
    message: String,
    kind: SkillErrorKind,
}

/// Which rule a [`SkillError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillErrorKind {
    /// The skill breaks a rule of the Agent Skills format or of the SEP: its
    /// frontmatter, its name or a path.
    Invalid,
    /// Reading the skill from disk failed.
    Io,
    /// Another skill (or resource) already has this path or URI.
    Duplicate,
    /// The skill exceeds a limit of the SEP (512 files, 16 MiB) or the path depth.
    Limit,
}

impl SkillError {
    pub(crate) fn invalid(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self::of(SkillErrorKind::Invalid, file, message)
    }

    pub(crate) fn io(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self::of(SkillErrorKind::Io, file, message)
    }

    fn of(kind: SkillErrorKind, file: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            message: message.into(),
            kind,
        }
    }

    /// The file (or skill) the error is about.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The rule broken, without the file.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Which rule was broken.
    pub fn kind(&self) -> SkillErrorKind {
        self.kind
    }

    /// The skill breaks a rule of the format: its frontmatter, its name or a path.
    pub fn is_invalid(&self) -> bool {
        self.kind == SkillErrorKind::Invalid
    }

    /// Reading the skill from disk failed.
    pub fn is_io(&self) -> bool {
        self.kind == SkillErrorKind::Io
    }

    /// Another skill (or resource) already has this path or URI.
    pub fn is_duplicate(&self) -> bool {
        self.kind == SkillErrorKind::Duplicate
    }

    /// The skill exceeds a limit of the SEP (512 files, 16 MiB) or the path depth.
    pub fn is_limit(&self) -> bool {
        self.kind == SkillErrorKind::Limit
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

impl std::error::Error for SkillError {}

/// One skill: its skill path (`git-workflow`, `acme/billing/refunds`, whose last
/// segment is the skill's name) and its files, from code ([`Skill::new`] and
/// [`Skill::file`], with `include_str!`/`include_bytes!` for files embedded in the
/// binary) or from a directory ([`Skill::from_dir`]). It is checked when added to
/// [`Skills`].
///
/// ```
/// use modelctx_skills::{Skill, Skills};
///
/// let skill = Skill::new("acme/billing/refunds")
///     .file("SKILL.md", "---\nname: refunds\ndescription: Refund requests per policy\n---\nSee examples/email.md.\n")
///     .file("examples/email.md", "Dear customer, ...\n");
/// let skills = Skills::new().skill(skill)?;
/// assert_eq!(skills.len(), 1);
/// # Ok::<(), modelctx_skills::SkillError>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct Skill {
    path: String,
    files: Vec<(String, Vec<u8>)>,
    listed: bool,
    /// Where the files came from, for errors (`None`: built in code).
    origin: Option<String>,
    /// The directory read and what it held then, for a watch to compare.
    disk: Option<DiskSource>,
}

/// The directory a skill was read from and the fingerprint of what was read.
#[derive(Debug, Clone)]
pub(crate) struct DiskSource {
    pub(crate) dir: PathBuf,
    pub(crate) fingerprint: disk::Fingerprint,
}

modelctx_types::__debug_shows!(Skill, |v| {
    path: &v.path,
    files: &v.files.iter().map(|(p, _)| p).collect::<Vec<_>>(),
    listed: &v.listed,
});

impl Skill {
    /// A skill at `path` (`<prefix>/.../<name>`), with no files yet.
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            files: Vec::new(),
            listed: true,
            origin: None,
            disk: None,
        }
    }

    /// Adds a file at `path` (relative to the skill, `/`-separated) with these bytes.
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.into(), bytes.into()));
        self
    }

    /// Reads the skill at `path` from the directory `dir`: every regular file below it,
    /// hidden ones (a name starting with `.`) left out. A symbolic link, a special file
    /// or a name that is not UTF-8 is refused, never followed.
    pub fn from_dir(path: impl Into<String>, dir: impl AsRef<Path>) -> Result<Self, SkillError> {
        let dir = dir.as_ref();
        let (files, fingerprint) = disk::read_skill_dir(dir)?;
        Ok(Self {
            path: path.into(),
            files,
            listed: true,
            origin: Some(dir.display().to_string()),
            disk: Some(DiskSource {
                dir: dir.to_path_buf(),
                fingerprint,
            }),
        })
    }

    /// Leaves the skill out of `skills/list`: it is still served, and `skills/get`
    /// answers for it (for a skill a host learns of from instructions or another
    /// skill).
    pub fn unlisted(mut self) -> Self {
        self.listed = false;
        self
    }

    /// The skill path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The URI the file at `file_path` of the skill at `skill_path` is served at
    /// (`skill://<skill-path>/<file-path>`, each file segment percent-encoded), after
    /// the checks [`Skills::skill`] makes of both paths (segments, separators, depth);
    /// the error names the file and the rule.
    ///
    /// ```
    /// use modelctx_skills::Skill;
    ///
    /// assert_eq!(
    ///     Skill::file_uri("acme/refunds", "templates/a b.md").unwrap(),
    ///     "skill://acme/refunds/templates/a%20b.md"
    /// );
    /// assert!(Skill::file_uri("acme/refunds", "../secret").is_err());
    /// ```
    pub fn file_uri(skill_path: &str, file_path: &str) -> Result<String, SkillError> {
        let display = || format!("{skill_path}/{file_path}");
        let segments = paths::skill_segments(skill_path)
            .map_err(|e| SkillError::invalid(format!("{skill_path}/"), e))?;
        checked_uri(skill_path, &segments, file_path, display)
    }

    /// How a file of this skill is named in errors.
    fn display(&self, file: &str) -> String {
        match &self.origin {
            Some(dir) => format!("{}/{file}", dir.trim_end_matches('/')),
            None => format!("{}/{file}", self.path),
        }
    }
}

/// A file accepted into [`Skills`]: hashed once.
#[derive(Debug)]
pub(crate) struct BuiltFile {
    pub(crate) uri: String,
    /// The path relative to the skill that contributed it.
    pub(crate) relative: String,
    pub(crate) bytes: Arc<[u8]>,
    pub(crate) digest: String,
    pub(crate) mime: &'static str,
}

/// A skill accepted into [`Skills`] (cloned cheaply: its files are shared).
#[derive(Debug, Clone)]
pub(crate) struct BuiltSkill {
    pub(crate) path: String,
    pub(crate) uri: String,
    pub(crate) listed: bool,
    pub(crate) frontmatter: Checked,
    pub(crate) files: Vec<Arc<BuiltFile>>,
    /// How errors name the skill.
    pub(crate) display: String,
    /// Where it was read from, when it was.
    pub(crate) disk: Option<DiskSource>,
}

/// The skills a server serves, checked as they are added, and how it serves them:
/// install them into a server with [`ServerBuilderSkillsExt::skills`] (or
/// [`Skills::install`]).
///
/// - Every file of every skill becomes a resource `skill://<skill-path>/<file-path>`
///   (`resources/list`, `resources/read`), its MIME type from its name
///   ([`mime_type`](crate::mime_type)); a `SKILL.md` carries its skill's name and
///   description.
/// - `skills/list` lists the skills not marked [`Skill::unlisted`], ordered by URI,
///   [`page_size`](Self::page_size) at a time; in protocol 2026-07-28 with `ttlMs` and
///   `cacheScope` ([`cache_hints`](Self::cache_hints)).
/// - `skills/get` answers for every skill served; any other URI is `-32602`.
/// - `resources/directory/read` lists the children of every directory of the skill
///   namespace (skill roots, their subdirectories, and the prefixes above them);
///   declared as `directoryRead: true` unless [`directory_read`](Self::directory_read)
///   turns it off.
/// - `skills/get` and `resources/directory/read` results carry `ttlMs` and
///   `cacheScope` in protocol 2026-07-28 too (the SEP leaves them open there).
/// - The capability `extensions["io.modelcontextprotocol/skills"]` is declared when at
///   least one skill is installed, and not otherwise.
///
/// A skill nested in another's directory is a skill of its own and, from the enclosing
/// skill's view, supporting files: the enclosing entry lists them too.
///
/// ```no_run
/// use modelctx_server::Server;
/// use modelctx_skills::{ServerBuilderSkillsExt, Skills};
///
/// let server = Server::builder("docs", "1.0.0")
///     .skills(Skills::new().dir("./skills")?)?
///     .build();
/// # let _ = server;
/// # Ok::<(), modelctx_skills::SkillError>(())
/// ```
#[derive(Debug)]
#[must_use]
pub struct Skills {
    pub(crate) skills: BTreeMap<String, BuiltSkill>,
    pub(crate) page_size: usize,
    pub(crate) ttl: Duration,
    pub(crate) scope: CacheScope,
    pub(crate) directory_read: bool,
    /// The directories given to [`Skills::dir`], which a watch searches again.
    pub(crate) roots: Vec<PathBuf>,
    /// Where the installed skills are kept for a [`SkillsWatcher`] (filled when they
    /// are installed, and only when a watcher was asked for).
    pub(crate) live: Arc<OnceLock<Arc<watch::Live>>>,
}

impl Default for Skills {
    fn default() -> Self {
        Self::new()
    }
}

impl Skills {
    /// How many entries a `skills/list` page holds unless [`Skills::page_size`] says
    /// otherwise.
    pub const DEFAULT_PAGE_SIZE: usize = 50;

    /// No skills yet.
    pub fn new() -> Self {
        Self {
            skills: BTreeMap::new(),
            page_size: Self::DEFAULT_PAGE_SIZE,
            ttl: Duration::ZERO,
            scope: CacheScope::Private,
            directory_read: true,
            roots: Vec::new(),
            live: Arc::new(OnceLock::new()),
        }
    }

    /// Adds a skill, after checking it: its skill path (segments of `A-Z a-z 0-9 - . _
    /// ~`), its file paths (relative, no `.`/`..`/empty segment, no `\`, `%` or control
    /// character), a `SKILL.md` whose frontmatter follows the Agent Skills rules (`name`
    /// present, well formed and equal to the skill path's last segment; `description`
    /// present), at most [`MAX_RESOURCES_PER_SKILL`](crate::MAX_RESOURCES_PER_SKILL)
    /// files of at most [`MAX_SKILL_BYTES`](crate::MAX_SKILL_BYTES) together, no deeper
    /// than [`MAX_PATH_DEPTH`](crate::MAX_PATH_DEPTH), and no skill at the same path.
    pub fn skill(mut self, skill: Skill) -> Result<Self, SkillError> {
        let built = build(skill)?;
        if let Some(existing) = self.skills.get(&built.path) {
            return Err(SkillError::of(
                SkillErrorKind::Duplicate,
                built.display,
                format!(
                    "a skill is already served at {} (from {})",
                    existing.path, existing.display
                ),
            ));
        }
        self.skills.insert(built.path.clone(), built);
        Ok(self)
    }

    /// Adds every skill below `root`: each directory holding a `SKILL.md` is a skill
    /// whose skill path is its path below `root` (so `root/acme/refunds/SKILL.md` is
    /// `skill://acme/refunds/SKILL.md`). Hidden directories are skipped; symbolic links
    /// are refused. A `SKILL.md` directly in `root` is refused (a skill needs a
    /// directory of its own).
    pub fn dir(mut self, root: impl AsRef<Path>) -> Result<Self, SkillError> {
        for (path, dir) in disk::find_skills(root.as_ref())? {
            self = self.skill(Skill::from_dir(path, dir)?)?;
        }
        self.roots.push(root.as_ref().to_path_buf());
        Ok(self)
    }

    /// A handle for keeping these skills in step with the disk once they are
    /// installed: [`SkillsWatcher::watch`] polls the directories given to
    /// [`Skills::dir`] and the skills read with [`Skill::from_dir`]. Asking for one
    /// also declares the extension when there is no skill yet (a watched directory
    /// may gain some).
    pub fn watcher(&self) -> SkillsWatcher {
        SkillsWatcher::new(self.live.clone())
    }

    /// How many entries a `skills/list` page holds (at least one).
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// The caching attributes of `skills/list` results in protocol 2026-07-28: how long
    /// a client may keep a page (`ttl`, whole milliseconds) and who may share it. The
    /// default, `0` and `private`, lets nothing be served stale or shared.
    pub fn cache_hints(mut self, ttl: Duration, scope: CacheScope) -> Self {
        self.ttl = ttl;
        self.scope = scope;
        self
    }

    /// Whether to answer `resources/directory/read` and declare `directoryRead` (on by
    /// default).
    pub fn directory_read(mut self, on: bool) -> Self {
        self.directory_read = on;
        self
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Installs the skills into `builder`: their files as resources, the extension's
    /// methods as request handlers, the capability under `extensions` (only when there
    /// is a skill). Refused when a file's URI is already a resource of the builder, or
    /// when a skill together with the skills nested in it exceeds a limit.
    pub fn install(self, builder: ServerBuilder) -> Result<ServerBuilder, SkillError> {
        serve::install(self, builder)
    }
}

/// Registering skills on a [`ServerBuilder`].
pub trait ServerBuilderSkillsExt: Sized {
    /// Serves `skills` (see [`Skills`] and [`Skills::install`]).
    fn skills(self, skills: Skills) -> Result<Self, SkillError>;
}

impl ServerBuilderSkillsExt for ServerBuilder {
    fn skills(self, skills: Skills) -> Result<Self, SkillError> {
        skills.install(self)
    }
}

/// The URI of the file at `relative` in the skill at `skill_path` (whose checked
/// segments are `segments`), once the file path is checked; `display` names the file in
/// errors.
fn checked_uri(
    skill_path: &str,
    segments: &[&str],
    relative: &str,
    display: impl Fn() -> String,
) -> Result<String, SkillError> {
    let file_segments =
        paths::file_segments(relative).map_err(|e| SkillError::invalid(display(), e))?;
    if segments.len() + file_segments.len() > MAX_PATH_DEPTH {
        return Err(SkillError::of(
            SkillErrorKind::Limit,
            display(),
            format!("deeper than {MAX_PATH_DEPTH} path segments"),
        ));
    }
    Ok(paths::file_uri(skill_path, &file_segments))
}

/// Checks a skill and hashes its files.
fn build(skill: Skill) -> Result<BuiltSkill, SkillError> {
    let whole = skill.display(SKILL_MD);
    let segments = paths::skill_segments(&skill.path)
        .map_err(|e| SkillError::invalid(skill.display(""), e))?;
    let directory = segments.last().copied().unwrap_or_default();
    frontmatter::check_skill_name(directory).map_err(|e| {
        SkillError::invalid(
            skill.display(""),
            format!("the skill path's last segment is the skill's name: {e}"),
        )
    })?;
    if skill.files.len() > MAX_RESOURCES_PER_SKILL {
        return Err(SkillError::of(
            SkillErrorKind::Limit,
            skill.display(""),
            format!(
                "{} files, more than the {MAX_RESOURCES_PER_SKILL} a skill may have",
                skill.files.len()
            ),
        ));
    }
    let total: u64 = skill.files.iter().map(|(_, b)| b.len() as u64).sum();
    if total > MAX_SKILL_BYTES {
        return Err(SkillError::of(
            SkillErrorKind::Limit,
            skill.display(""),
            format!("{total} bytes, more than the {MAX_SKILL_BYTES} a skill may have"),
        ));
    }
    let mut files: BTreeMap<String, Arc<BuiltFile>> = BTreeMap::new();
    let mut frontmatter = None;
    for (relative, bytes) in &skill.files {
        let uri = checked_uri(&skill.path, &segments, relative, || skill.display(relative))?;
        if relative == SKILL_MD {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| SkillError::invalid(whole.clone(), "SKILL.md is not UTF-8 text"))?;
            frontmatter = Some(
                frontmatter::check(text, directory)
                    .map_err(|e| SkillError::invalid(whole.clone(), e))?,
            );
        }
        let file = BuiltFile {
            uri: uri.clone(),
            relative: relative.clone(),
            digest: crate::digest(bytes),
            mime: crate::mime_type(relative, bytes),
            bytes: Arc::from(bytes.as_slice()),
        };
        if files.insert(uri, Arc::new(file)).is_some() {
            return Err(SkillError::of(
                SkillErrorKind::Duplicate,
                skill.display(relative),
                "the file is given twice",
            ));
        }
    }
    let frontmatter = frontmatter.ok_or_else(|| {
        SkillError::invalid(
            whole.clone(),
            "every skill has a SKILL.md at its root (none given)",
        )
    })?;
    Ok(BuiltSkill {
        uri: paths::file_uri(&skill.path, &[SKILL_MD]),
        display: skill.display(""),
        path: skill.path,
        listed: skill.listed,
        disk: skill.disk,
        frontmatter,
        files: files.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "---\nname: refunds\ndescription: Refunds\n---\nBody\n";

    #[test]
    fn errors_name_the_file_and_the_rule() {
        for (skill, file, needle) in [
            (Skill::new("refunds"), "refunds/SKILL.md", "none given"),
            (
                Skill::new("acme/Refunds").file("SKILL.md", MD),
                "acme/Refunds/",
                "lowercase",
            ),
            (
                Skill::new("acme/other").file("SKILL.md", MD),
                "acme/other/SKILL.md",
                "does not match",
            ),
            (
                Skill::new("refunds").file("SKILL.md", "no frontmatter"),
                "refunds/SKILL.md",
                "must begin",
            ),
            (
                Skill::new("refunds").file("SKILL.md", MD).file("../x", "x"),
                "refunds/../x",
                "\"..\"",
            ),
            (
                Skill::new("refunds")
                    .file("SKILL.md", MD)
                    .file("/etc/passwd", "x"),
                "refunds//etc/passwd",
                "absolute",
            ),
            (
                Skill::new("refunds")
                    .file("SKILL.md", MD)
                    .file("a%2F..%2Fb", "x"),
                "refunds/a%2F..%2Fb",
                "`%`",
            ),
            (
                Skill::new("../refunds").file("SKILL.md", MD),
                "../refunds/",
                "\"..\"",
            ),
            (
                Skill::new("refunds")
                    .file("SKILL.md", MD)
                    .file("SKILL.md", MD),
                "refunds/SKILL.md",
                "twice",
            ),
            (
                Skill::new("refunds").file("SKILL.md", vec![0xff, 0xfe]),
                "refunds/SKILL.md",
                "UTF-8",
            ),
        ] {
            let err = Skills::new().skill(skill).unwrap_err();
            assert_eq!(err.file(), file, "{err}");
            assert!(err.message().contains(needle), "{err}");
        }
    }

    #[test]
    fn the_limits_of_the_sep_are_enforced() {
        let mut many = Skill::new("refunds").file("SKILL.md", MD);
        for i in 0..MAX_RESOURCES_PER_SKILL {
            many = many.file(format!("f{i}.txt"), "x");
        }
        let err = Skills::new().skill(many).unwrap_err();
        assert!(err.is_limit() && err.message().contains("512"), "{err}");

        let big = Skill::new("refunds")
            .file("SKILL.md", MD)
            .file("big.bin", vec![0u8; MAX_SKILL_BYTES as usize]);
        let err = Skills::new().skill(big).unwrap_err();
        assert!(err.is_limit() && err.message().contains("bytes"), "{err}");

        let deep_path = vec!["d"; MAX_PATH_DEPTH].join("/");
        let deep = Skill::new("refunds")
            .file("SKILL.md", MD)
            .file(format!("{deep_path}/x.md"), "x");
        let err = Skills::new().skill(deep).unwrap_err();
        assert!(err.is_limit() && err.message().contains("deeper"), "{err}");

        // At the limit is fine.
        let mut full = Skill::new("refunds").file("SKILL.md", MD);
        for i in 1..MAX_RESOURCES_PER_SKILL {
            full = full.file(format!("f{i}.txt"), "x");
        }
        assert!(Skills::new().skill(full).is_ok());
    }

    #[test]
    fn a_skill_path_is_served_once() {
        let skill = || Skill::new("refunds").file("SKILL.md", MD);
        let err = Skills::new()
            .skill(skill())
            .unwrap()
            .skill(skill())
            .unwrap_err();
        assert!(err.is_duplicate(), "{err}");
    }
}
