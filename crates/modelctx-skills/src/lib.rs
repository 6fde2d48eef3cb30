//! Skills over MCP (SEP-2640, extension `io.modelcontextprotocol/skills`).
//!
//! An [Agent Skill](https://agentskills.io/specification) is a directory with a
//! `SKILL.md` (YAML frontmatter with `name` and `description`, then instructions) and
//! any supporting files. A server serves each file as a resource under
//! `skill://<skill-path>/<file-path>` and answers `skills/list` (paginated; with the
//! list-caching attributes in protocol 2026-07-28), `skills/get` (any skill it serves,
//! listed or not) and `resources/directory/read`; a client lists skills, fetches their
//! files only when asked, and checks every file it fetches against the listing's
//! digest and size.
//!
//! # Server (feature `server`)
//!
//! Skills come from a directory on disk ([`Skills::dir`], [`Skill::from_dir`]) or from
//! code and bytes embedded in the binary ([`Skill::new`] with [`Skill::file`] and
//! `include_str!`/`include_bytes!`): the same [`Skill`] either way. Each is checked
//! when it is added — its frontmatter against the Agent Skills rules, its paths, the
//! SEP's limits — with an error naming the file and the rule; digests and sizes are
//! computed then, once. A directory can be watched ([`Skills::watcher`],
//! [`SkillsWatcher::watch`]): a skill added, removed or changed on disk is served as it
//! now is, and clients are told of the change.
//!
//! ```
//! # #[cfg(feature = "server")] {
//! use modelctx_server::Server;
//! use modelctx_skills::{ServerBuilderSkillsExt, Skill, Skills};
//!
//! let skill = Skill::new("git-workflow").file(
//!     "SKILL.md",
//!     "---\nname: git-workflow\ndescription: Branch and commit conventions\n---\nUse topic branches.\n",
//! );
//! let server = Server::builder("demo", "1.0.0")
//!     .skills(Skills::new().skill(skill)?)?
//!     .build();
//! assert!(server.capabilities().extensions.as_ref().unwrap().contains_key(modelctx_skills::EXTENSION_ID));
//! # }
//! # Ok::<(), modelctx_skills::SkillError>(())
//! ```
//!
//! # Client (feature `client`)
//!
//! [`ClientSkillsExt::skills`] gives a [`SkillsClient`] for one connected server, under
//! a label the host chooses (never the server's self-reported name): it lists and gets
//! entries, loads a skill (its `SKILL.md`, verified by digest, size and frontmatter),
//! reads a listed file on demand (an unlisted one is refused without a request), caches
//! what it verified by (server label, URI), and materialises a skill below a directory
//! at `<target>/<label>/<scheme>/<skill-path>/...`.
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `server` | [`Skills`], [`Skill`], [`ServerBuilderSkillsExt`], [`SkillsWatcher`] |
//! | `client` | [`SkillsClient`], [`ClientSkillsExt`], [`SkillCache`], [`SkillsError`] |
//!
//! # How it is built
//!
//! A crate of its own because the halves share the frontmatter, path and wire code, and the
//! server and client roles may not depend on each other; tidy lets this crate see both. On
//! the server, files are held in memory: a URI is looked up, never mapped to a disk path,
//! so a read cannot escape; from disk, symbolic links and special files are refused, hidden
//! entries skipped. A watch polls file metadata rather than using an OS notification crate:
//! none is in the lock, and a poll of metadata is cheap at skill sizes; a skill that fails
//! its checks after a change keeps its last good version until a later poll reads it whole.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Each half uses part of the shared code; only both halves use all of it.
#[cfg_attr(
    not(all(feature = "server", feature = "client")),
    allow(dead_code, unused_macros, unused_imports)
)]
mod frontmatter;
#[cfg_attr(
    not(all(feature = "server", feature = "client")),
    allow(dead_code, unused_macros, unused_imports)
)]
mod paths;
#[cfg_attr(
    not(all(feature = "server", feature = "client")),
    allow(dead_code, unused_macros, unused_imports)
)]
mod wire;

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod server;

pub use frontmatter::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, check_skill_name};
pub use paths::{MAX_PATH_DEPTH, SKILL_MD, SKILL_SCHEME};
pub use wire::{
    DIRECTORY_MIME_TYPE, DIRECTORY_READ_SETTING, EXTENSION_ID, MAX_RESOURCES_PER_SKILL,
    MAX_SKILL_BYTES, SkillEntry, SkillFile, SkillResources,
};

#[cfg(feature = "client")]
pub use client::{
    ClientSkillsExt, LoadedSkill, SkillCache, SkillsClient, SkillsError, SkillsErrorKind,
    SkillsListing, materialized_path,
};
#[cfg(feature = "server")]
pub use server::{
    ServerBuilderSkillsExt, Skill, SkillError, SkillErrorKind, Skills, SkillsWatch, SkillsWatcher,
};

use sha2::{Digest, Sha256};

/// The digest of `bytes` as the extension writes it: `sha256:` and 64 lowercase hex
/// digits.
///
/// ```
/// assert_eq!(
///     modelctx_skills::digest(b""),
///     "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/// );
/// ```
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 0xf)]));
    }
    out
}

/// The MIME type of a skill file by its name: `text/markdown` for Markdown (every
/// `SKILL.md`), the usual types of scripts, data and images, `text/plain` for other
/// UTF-8 text and `application/octet-stream` for other bytes.
///
/// ```
/// use modelctx_skills::mime_type;
///
/// assert_eq!(mime_type("SKILL.md", b"---"), "text/markdown");
/// assert_eq!(mime_type("scripts/extract.py", b"print()"), "text/x-python");
/// assert_eq!(mime_type("NOTES", b"plain words"), "text/plain");
/// assert_eq!(mime_type("blob.bin", &[0xff, 0xfe]), "application/octet-stream");
/// ```
pub fn mime_type(file_name: &str, bytes: &[u8]) -> &'static str {
    let extension = file_name
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    let known = match extension.as_deref() {
        Some("md" | "markdown") => Some("text/markdown"),
        Some("txt" | "text") => Some("text/plain"),
        Some("py") => Some("text/x-python"),
        Some("sh" | "bash") => Some("text/x-shellscript"),
        Some("js" | "mjs" | "cjs") => Some("text/javascript"),
        Some("ts") => Some("text/typescript"),
        Some("rs") => Some("text/x-rust"),
        Some("json") => Some("application/json"),
        Some("yaml" | "yml") => Some("application/yaml"),
        Some("toml") => Some("application/toml"),
        Some("xml") => Some("application/xml"),
        Some("html" | "htm") => Some("text/html"),
        Some("css") => Some("text/css"),
        Some("csv") => Some("text/csv"),
        Some("svg") => Some("image/svg+xml"),
        Some("png") => Some("image/png"),
        Some("jpg" | "jpeg") => Some("image/jpeg"),
        Some("gif") => Some("image/gif"),
        Some("webp") => Some("image/webp"),
        Some("pdf") => Some("application/pdf"),
        Some("zip") => Some("application/zip"),
        Some("gz") => Some("application/gzip"),
        Some("tar") => Some("application/x-tar"),
        _ => None,
    };
    known.unwrap_or(if std::str::from_utf8(bytes).is_ok() {
        "text/plain"
    } else {
        "application/octet-stream"
    })
}
