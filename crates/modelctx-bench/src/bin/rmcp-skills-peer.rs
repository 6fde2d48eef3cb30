//! An rmcp 3.11 peer for the skills legs of `cargo xtask interop` (SEP-2640,
//! `io.modelcontextprotocol/skills`), built from the registry with the `rmcp-skills`
//! feature (rmcp's `skills-fs`).
//!
//! ```text
//! rmcp-skills-peer server DIR
//!     a stdio server: rmcp's `SkillCatalog` over DIR, with `resources/directory/read`
//! rmcp-skills-peer client [--era 2025-11-25|2026-07-28] --expect DIR... -- PROGRAM [ARGS...]
//!     runs PROGRAM as a stdio server and checks its skills with rmcp's client
//! ```
//!
//! The client expects exactly the skills found below the `--expect` directories (every
//! directory holding a `SKILL.md`, its path below the root the skill path) and asserts,
//! through rmcp's own types and checks: each entry passes `Skill::validate`, its
//! frontmatter `name` and `description` are the local `SKILL.md`'s, `skills/get`
//! returns the listed entry, the entry lists every local file with the size and the
//! `sha256:` digest of its bytes, every file read with `resources/read` passes
//! `SkillResource::verify` and is byte for byte the local file, a skill root lists its
//! direct children with `resources/directory/read` (when the server offers it), and
//! `skills/get` of an unknown skill is `-32602`. It prints `negotiated protocol
//! version: V` once connected. Without `--era` it probes with `server/discover` and
//! falls back to the handshake.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;

use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::model::{
    GetSkillRequestParams, GetSkillResult, Implementation, ListResourcesResult, ListSkillsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse, ResourceContents,
    ServerCapabilities, ServerConfig, SkillResources, sha256_digest,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceError, ServiceExt};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("server") if args.len() == 2 => server(Path::new(&args[1])).await,
        Some("client") => client(&args[1..]).await,
        _ => Err("usage: rmcp-skills-peer server DIR | client [--era ERA] --expect DIR... -- PROGRAM [ARGS...]".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp-skills-peer: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------
// The server: rmcp's catalog behind its skills handler methods
// ---------------------------------------------------------------------------------------

#[derive(Clone)]
struct Skills(Arc<SkillCatalog>);

impl ServerHandler for Skills {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_skills_with_directory_read()
                .build(),
        )
        .with_server_info(Implementation::new("rmcp-skills-peer", "1.0.0"))
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        Ok(self.0.list_skills())
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.0.get_skill(&request.uri)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.0.read_resource_directory(&request.uri)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(self.0.resources()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.0
            .read_resource(&request.uri)
            .map(Into::into)
            .ok_or_else(|| ErrorData::resource_not_found(request.uri, None))
    }
}

async fn server(dir: &Path) -> Result<(), Error> {
    let dir = dir.to_owned();
    let catalog = tokio::task::spawn_blocking(move || SkillCatalog::from_dir(dir)).await??;
    eprintln!(
        "rmcp-skills-peer: serving {} skills",
        catalog.skills().len()
    );
    let running = Skills(Arc::new(catalog))
        .serve(rmcp::transport::stdio())
        .await?;
    running.waiting().await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The client: rmcp's skills methods and checks against a server run as a child
// ---------------------------------------------------------------------------------------

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), Error> {
    if ok { Ok(()) } else { Err(what().into()) }
}

/// The skills below the `--expect` roots: skill path -> its directory.
fn expected_skills(roots: &[PathBuf]) -> Result<BTreeMap<String, PathBuf>, Error> {
    fn visit(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> Result<(), Error> {
        if dir.join("SKILL.md").is_file() && dir != root {
            let path = relative(root, dir)?;
            out.insert(path, dir.to_owned());
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
    for root in roots {
        visit(root, root, &mut out)?;
    }
    Ok(out)
}

/// `dir` below `root`, `/`-separated.
fn relative(root: &Path, path: &Path) -> Result<String, Error> {
    let rel = path.strip_prefix(root)?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok(parts.join("/"))
}

/// Every file below `dir`: its path below `dir` -> its bytes.
fn local_files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, Error> {
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

/// The value of a top-level `key: value` of a `SKILL.md` frontmatter: a plain or
/// quoted scalar, or a folded one (`>-`), as the fixtures write them.
fn frontmatter_field(skill_md: &str, key: &str) -> Option<String> {
    let block = skill_md.strip_prefix("---\n")?.split("\n---").next()?;
    let mut lines = block.lines();
    let value = lines.find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))?;
    match value.trim() {
        ">-" => {
            let folded: Vec<&str> = lines
                .take_while(|l| l.starts_with(' '))
                .map(str::trim)
                .collect();
            Some(folded.join(" "))
        }
        plain => Some(plain.trim_matches(|c| c == '"' || c == '\'').to_owned()),
    }
}

/// Standard base64 (for a file the server sends as a blob).
fn base64_decode(text: &str) -> Result<Vec<u8>, Error> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for byte in text.bytes().filter(|b| *b != b'=') {
        let value = ALPHABET
            .iter()
            .position(|a| *a == byte)
            .ok_or("a blob that is not base64")?;
        acc = (acc << 6) | u32::try_from(value)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff)?);
        }
    }
    Ok(out)
}

fn is_invalid_params(error: &ServiceError) -> bool {
    matches!(error, ServiceError::McpError(e) if e.code.0 == -32602)
}

async fn client(args: &[String]) -> Result<(), Error> {
    let (era, mut rest) = match args {
        [flag, era, rest @ ..] if flag == "--era" => (Some(era.as_str()), rest),
        _ => (None, args),
    };
    let mut roots = Vec::new();
    while let [flag, dir, more @ ..] = rest {
        if flag != "--expect" {
            break;
        }
        roots.push(PathBuf::from(dir));
        rest = more;
    }
    let [dashes, program, server_args @ ..] = rest else {
        return Err("client: expected -- PROGRAM [ARGS...]".into());
    };
    ensure(dashes == "--" && !roots.is_empty(), || {
        "client: --expect DIR... -- PROGRAM [ARGS...]".into()
    })?;
    let lifecycle = match era {
        None => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
        Some("2025-11-25") => ClientLifecycleMode::Initialize,
        Some("2026-07-28") => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        Some(other) => return Err(format!("unknown era {other:?}").into()),
    };

    let mut child = tokio::process::Command::new(program)
        .args(server_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let running = ().serve_with_lifecycle((stdout, stdin), lifecycle).await?;
    let info = running.peer_info().ok_or("no server info")?;
    println!("negotiated protocol version: {}", info.protocol_version);
    ensure(info.capabilities.supports_skills(), || {
        "the server does not declare io.modelcontextprotocol/skills".into()
    })?;
    let directory_read = info.capabilities.supports_directory_read();

    let expected = expected_skills(&roots)?;
    let listed = running.list_all_skills().await?;
    let listed_uris: BTreeSet<String> = listed.iter().map(|s| s.uri.clone()).collect();
    let expected_uris: BTreeSet<String> = expected
        .keys()
        .map(|path| format!("skill://{path}/SKILL.md"))
        .collect();
    ensure(listed_uris == expected_uris, || {
        format!("skills/list: {listed_uris:?}, expected {expected_uris:?}")
    })?;

    let mut files_checked = 0;
    for skill in &listed {
        skill
            .validate()
            .map_err(|e| format!("{}: entry refused by rmcp: {e}", skill.uri))?;
        let path = skill
            .uri
            .strip_prefix("skill://")
            .and_then(|p| p.strip_suffix("/SKILL.md"))
            .ok_or("a skill URI outside skill://")?;
        let local = local_files(&expected[path])?;
        let skill_md = String::from_utf8(local["SKILL.md"].clone())?;
        for (key, got) in [
            ("name", &skill.frontmatter.name),
            ("description", &skill.frontmatter.description),
        ] {
            let want = frontmatter_field(&skill_md, key);
            ensure(want.as_ref() == Some(got), || {
                format!(
                    "{}: frontmatter {key} {got:?}, the file says {want:?}",
                    skill.uri
                )
            })?;
        }

        let got = running
            .get_skill(GetSkillRequestParams::new(&skill.uri))
            .await?;
        ensure(&got.skill == skill, || {
            format!("{}: skills/get differs from the listing", skill.uri)
        })?;

        let SkillResources::Files(files) = &skill.resources else {
            return Err(format!("{}: resources are dynamic", skill.uri).into());
        };
        let root = format!("skill://{path}/");
        let listed_files: BTreeSet<&str> = files
            .iter()
            .filter_map(|f| f.uri.strip_prefix(&root))
            .collect();
        let local_names: BTreeSet<&str> = local.keys().map(String::as_str).collect();
        ensure(listed_files == local_names, || {
            format!(
                "{}: files {listed_files:?}, on disk {local_names:?}",
                skill.uri
            )
        })?;
        for file in files {
            let bytes = &local[file.uri.strip_prefix(&root).unwrap_or_default()];
            ensure(
                file.size == bytes.len() as u64 && file.digest == sha256_digest(bytes),
                || {
                    format!(
                        "{}: size/digest {}/{} do not describe the file",
                        file.uri, file.size, file.digest
                    )
                },
            )?;
            let read = running
                .read_resource(ReadResourceRequestParams::new(&file.uri))
                .await?;
            let [contents] = read.contents.as_slice() else {
                return Err(format!("{}: {} contents", file.uri, read.contents.len()).into());
            };
            let fetched = match contents {
                ResourceContents::TextResourceContents { text, .. } => text.clone().into_bytes(),
                ResourceContents::BlobResourceContents { blob, .. } => base64_decode(blob)?,
                other => return Err(format!("{}: unknown contents {other:?}", file.uri).into()),
            };
            file.verify(&fetched)
                .map_err(|e| format!("rmcp refused the read: {e}"))?;
            ensure(&fetched == bytes, || {
                format!("{}: content differs", file.uri)
            })?;
            files_checked += 1;
        }

        if directory_read {
            let children = running
                .read_resource_directory(ReadResourceDirectoryRequestParams::new(
                    root.trim_end_matches('/'),
                ))
                .await?;
            let names: BTreeSet<String> =
                children.resources.iter().map(|r| r.name.clone()).collect();
            let want: BTreeSet<String> = local
                .keys()
                .map(|p| p.split('/').next().unwrap_or_default().to_owned())
                .collect();
            ensure(names == want, || {
                format!("{root}: directory lists {names:?}, on disk {want:?}")
            })?;
        }
    }

    let unknown = running
        .get_skill(GetSkillRequestParams::new("skill://no-such-skill/SKILL.md"))
        .await;
    ensure(unknown.as_ref().is_err_and(is_invalid_params), || {
        format!("skills/get of an unknown skill: {unknown:?}, expected -32602")
    })?;

    running.cancel().await?;
    println!(
        "rmcp-skills-peer: {} skills listed, got and read; {files_checked} files verified{}",
        listed.len(),
        if directory_read {
            "; directories read"
        } else {
            ""
        }
    );
    Ok(())
}
