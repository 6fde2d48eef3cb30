//! `--interop --skills DIR ...`: drives another SDK's skills server (SEP-2640) through
//! `client.skills(label)`, expecting exactly the skills found below DIR (every directory
//! holding a `SKILL.md`; its path below DIR is the skill path).
//!
//! Asserted: the listing names those skills and no other, with no malformed entry; each
//! entry's frontmatter `name` is its directory's name and `skills/get` returns it; it
//! lists every file below the skill's directory, each with the size and `sha256:`
//! digest of its bytes; the client's verified reads (`load`, `read_file`) return them
//! byte for byte; `materialize` writes them below `<target>/<label>/skill/<skill-path>/`;
//! a skill root lists its direct children (`resources/directory/read`, when offered);
//! a file the entry does not list is refused without a request; and `skills/get` of an
//! unknown skill is `-32602`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use modelctx::client::{Client, ConnectMode};
use modelctx::skills::{ClientSkillsExt, SkillResources, SkillsErrorKind, digest};
use modelctx::transport::Transport;
use modelctx::types::ErrorCode;

use crate::{Error, ensure};

/// The label this host gives the server under test.
const LABEL: &str = "interop-peer";

/// The skills below `root`: skill path -> its directory.
fn expected_skills(root: &Path) -> Result<BTreeMap<String, PathBuf>, Error> {
    fn visit(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> Result<(), Error> {
        if dir != root && dir.join("SKILL.md").is_file() {
            out.insert(relative(root, dir)?, dir.to_owned());
        }
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                visit(root, &entry.path(), out)?;
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    visit(root, root, &mut out)?;
    Ok(out)
}

/// `path` below `root`, `/`-separated.
fn relative(root: &Path, path: &Path) -> Result<String, Error> {
    let parts: Vec<String> = path
        .strip_prefix(root)?
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok(parts.join("/"))
}

/// Every file below `dir`: its path below `dir` -> its bytes.
fn files_below(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, Error> {
    fn visit(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<(), Error> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                visit(root, &path, out)?;
            } else {
                out.insert(relative(root, &path)?, std::fs::read(&path)?);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    visit(dir, dir, &mut out)?;
    Ok(out)
}

pub(crate) async fn interop_skills<T: Transport>(
    transport: T,
    mode: ConnectMode,
    expect: &Path,
) -> Result<(), Error> {
    let client = Client::builder("modelctx-interop-client", "1.0.0")
        .mode(mode)
        .connect(transport)
        .await?;
    // `cargo xtask interop` reads the era each leg negotiated from this line.
    println!("negotiated protocol version: {}", client.protocol_version());
    let name = client.server_info().name.clone();
    let sdk = match name.as_str() {
        "ts2-skills-server" => "TypeScript v2",
        "rmcp-skills-peer" => "rmcp",
        other => return Err(format!("unknown skills server {other:?}").into()),
    };
    let skills = client.skills(LABEL);
    ensure(
        skills.is_offered(),
        "the server declares io.modelcontextprotocol/skills",
    )?;

    let expected = expected_skills(expect)?;
    let listing = skills.list().await?;
    ensure(
        listing.invalid.is_empty(),
        format!("malformed entries: {:?}", listing.invalid),
    )?;
    let listed: BTreeSet<&str> = listing.skills.iter().map(|e| e.uri.as_str()).collect();
    let wanted: Vec<String> = expected
        .keys()
        .map(|path| format!("skill://{path}/SKILL.md"))
        .collect();
    let wanted: BTreeSet<&str> = wanted.iter().map(String::as_str).collect();
    ensure(
        listed == wanted,
        format!("skills/list: {listed:?}, expected {wanted:?}"),
    )?;

    let target =
        std::env::temp_dir().join(format!("modelctx-skills-interop-{}", std::process::id()));
    let mut verified = 0;
    for entry in &listing.skills {
        let path = entry
            .uri
            .strip_prefix("skill://")
            .and_then(|p| p.strip_suffix("/SKILL.md"))
            .ok_or_else(|| format!("{}: not a skill:// SKILL.md URI", entry.uri))?;
        let dir = &expected[path];
        let local = files_below(dir)?;
        let dir_name = path.rsplit('/').next().unwrap_or(path);
        ensure(
            entry.name() == dir_name,
            format!("{}: frontmatter name {:?}", entry.uri, entry.name()),
        )?;
        ensure(
            skills.get(&entry.uri).await? == *entry,
            format!("{}: skills/get differs from the listing", entry.uri),
        )?;

        let SkillResources::Files(files) = &entry.resources else {
            return Err(format!("{}: resources are dynamic", entry.uri).into());
        };
        let root = format!("{}/", entry.root());
        let listed_files: BTreeSet<&str> = files
            .iter()
            .filter_map(|f| f.uri.strip_prefix(&root))
            .collect();
        let on_disk: BTreeSet<&str> = local.keys().map(String::as_str).collect();
        ensure(
            listed_files == on_disk,
            format!("{}: files {listed_files:?}, on disk {on_disk:?}", entry.uri),
        )?;

        let loaded = skills.load(entry).await?;
        ensure(
            loaded.skill_md.as_bytes() == local["SKILL.md"],
            format!("{}: SKILL.md content", entry.uri),
        )?;
        for file in files {
            let bytes = &local[file.uri.strip_prefix(&root).unwrap_or_default()];
            ensure(
                file.size == bytes.len() as u64 && file.digest == digest(bytes),
                format!(
                    "{}: size {} and digest {} do not describe the file",
                    file.uri, file.size, file.digest
                ),
            )?;
            let read = skills.read_file(entry, &file.uri).await?;
            ensure(
                &*read == bytes.as_slice(),
                format!("{}: content differs", file.uri),
            )?;
            verified += 1;
        }
        let unlisted = skills
            .read_file(entry, &format!("{root}not-listed.md"))
            .await;
        ensure(
            unlisted
                .as_ref()
                .is_err_and(|e| e.kind() == SkillsErrorKind::Unlisted),
            format!("an unlisted file: {unlisted:?}"),
        )?;

        let written = skills.materialize(entry, &target).await?;
        ensure(
            written.starts_with(target.join(LABEL)) && files_below(&written)? == local,
            format!("{}: materialised as {}", entry.uri, written.display()),
        )?;

        if skills.directory_read_offered() {
            let children = skills.read_directory(entry.root()).await?;
            let names: BTreeSet<&str> = children.iter().map(|r| r.name.as_str()).collect();
            let want: BTreeSet<&str> = local
                .keys()
                .map(|p| p.split('/').next().unwrap_or_default())
                .collect();
            ensure(
                names == want,
                format!("{}: lists {names:?}, on disk {want:?}", entry.root()),
            )?;
        }
    }
    let _ = std::fs::remove_dir_all(&target);

    let unknown = skills.get("skill://no-such-skill/SKILL.md").await;
    let code = unknown
        .as_ref()
        .err()
        .and_then(|e| e.session_error())
        .and_then(|e| e.protocol_error())
        .map(|e| e.code);
    ensure(
        code == Some(ErrorCode::INVALID_PARAMS),
        format!("skills/get of an unknown skill: {unknown:?}"),
    )?;

    client.close().await;
    println!(
        "interop: {sdk} skills server: {} skills listed, got, loaded and materialised; {verified} files verified{}",
        listing.skills.len(),
        if skills.directory_read_offered() {
            "; directories read"
        } else {
            ""
        }
    );
    Ok(())
}
