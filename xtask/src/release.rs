//! `cargo xtask release-check`: what stands between `main` and the registry, checked the
//! way a user's build would meet it.
//!
//! - **publish**: `cargo publish --workspace --dry-run`: every publishable crate packs,
//!   and builds from its own package against its dependencies' packages, in dependency
//!   order, as the registry would build it.
//! - **features**: `cargo hack check --each-feature --no-dev-deps` over the publishable
//!   crates: each builds with no default features and with each feature alone (a
//!   feature that leans on another crate's feature only through workspace unification
//!   fails here).
//! - **docs**: `cargo doc` of each library crate alone, with its own default features,
//!   warning-free (a link to an item behind a feature that is off is found here).
//! - **api**: the public API of each library crate (all features), listed by
//!   cargo-public-api from the nightly rustdoc JSON, must equal its record in `api/`;
//!   `--bless` rewrites the records, so an API change is a reviewed diff.
//!
//! - **deny**: `cargo deny check licenses bans sources` with the policy in `deny.toml`:
//!   permissive licences only, no C TLS stacks, crates from crates.io only.
//!
//! `cargo xtask release-check [publish|features|docs|api|deny]...` runs the named parts
//! (all by default). cargo-hack, cargo-public-api and cargo-deny are installed, pinned,
//! into `.tools/` when missing (see `tools.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use crate::tools::{Tool, with_tool};

pub(crate) const USAGE: &str = "\
cargo xtask release-check [publish|features|docs|api|deny]... [--bless]
                                             the crates as the registry would build them:
                                             publish dry run, each feature alone, each
                                             crate's docs alone, the recorded public API
                                             (--bless rewrites api/), the licence and
                                             source policy (deny.toml)";

const CARGO_HACK: Tool = Tool {
    krate: "cargo-hack",
    version: "0.6.46",
    subcommand: "hack",
};

const CARGO_PUBLIC_API: Tool = Tool {
    krate: "cargo-public-api",
    version: "0.52.0",
    subcommand: "public-api",
};

const CARGO_DENY: Tool = Tool {
    krate: "cargo-deny",
    version: "0.20.2",
    subcommand: "deny",
};

/// The parts, in the order they run.
const PARTS: [&str; 5] = ["deny", "api", "docs", "publish", "features"];

pub(crate) fn main(root: &Path, args: &[String]) -> ExitCode {
    let mut parts = Vec::new();
    let mut bless = false;
    for arg in args {
        match arg.as_str() {
            "--bless" => bless = true,
            part if PARTS.contains(&part) => parts.push(part),
            other => {
                eprintln!("release-check: unknown argument {other:?}\nusage:\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if parts.is_empty() {
        parts = PARTS.to_vec();
    }
    let crates = match publishable(root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("release-check: {e}");
            return ExitCode::FAILURE;
        }
    };
    for part in parts {
        let started = Instant::now();
        println!("== release-check: {part}");
        let outcome = match part {
            "publish" => publish(root, &crates),
            "features" => features(root, &crates),
            "docs" => docs(root, &crates),
            "deny" => deny(root),
            _ => api(root, &crates, bless),
        };
        match outcome {
            Ok(()) => println!(
                "release-check: {part} ok in {:.1} s",
                started.elapsed().as_secs_f64()
            ),
            Err(e) => {
                eprintln!("release-check: {part} FAILED: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// A publishable crate of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Crate {
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    /// Whether it has a library target (the CLI has only a binary).
    pub(crate) lib: bool,
}

/// The crates under `crates/` whose manifest does not say `publish = false`, by name.
pub(crate) fn publishable(root: &Path) -> Result<Vec<Crate>, String> {
    let dir = root.join("crates");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut crates = Vec::new();
    for entry in entries.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        if text.lines().any(|l| l.trim() == "publish = false") {
            continue;
        }
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .ok_or_else(|| format!("{}: no package name", manifest.display()))?;
        crates.push(Crate {
            name: name.to_owned(),
            dir: entry.path(),
            lib: entry.path().join("src/lib.rs").exists(),
        });
    }
    crates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(crates)
}

/// What a publishable crate's package must carry: the metadata the registry shows, the
/// docs.rs settings, both licence files, and no placeholder address. Checked by tidy.
pub(crate) fn manifest_problems(root: &Path) -> Vec<String> {
    let crates = match publishable(root) {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    let mut problems = Vec::new();
    for k in &crates {
        let manifest = k.dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap_or_default();
        let has = |key: &str| text.lines().any(|l| l.trim_start().starts_with(key));
        for key in [
            "description = ",
            "keywords = ",
            "categories = ",
            "readme = ",
            "documentation = ",
            "[package.metadata.docs.rs]",
        ] {
            if !has(key) {
                problems.push(format!(
                    "{}: no `{}`",
                    manifest.display(),
                    key.trim_end_matches(" = ")
                ));
            }
        }
        if text.contains("example.invalid") || text.contains("repository.workspace") {
            problems.push(format!(
                "{}: a placeholder repository address (leave `repository` out until there is one)",
                manifest.display()
            ));
        }
        for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
            if !k.dir.join(licence).is_file() {
                problems.push(format!(
                    "{}: no {licence} (a link to the workspace root's, so the package carries it)",
                    k.dir.display()
                ));
            }
        }
        if k.lib {
            let lib = std::fs::read_to_string(k.dir.join("src/lib.rs")).unwrap_or_default();
            if !lib.contains("#![cfg_attr(docsrs, feature(doc_cfg))]") {
                problems.push(format!(
                    "{}: no `#![cfg_attr(docsrs, feature(doc_cfg))]` (docs.rs shows the feature gating each item)",
                    k.dir.join("src/lib.rs").display()
                ));
            }
        }
    }
    problems
}

fn cargo(root: &Path) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    c.current_dir(root);
    c
}

fn run(mut command: Command, what: &str) -> Result<(), String> {
    crate::tools::run_to_end(&mut command, what, what)
}

fn deny(root: &Path) -> Result<(), String> {
    let bin = install(root, &CARGO_DENY)?;
    let mut c = cargo(root);
    with_tool(&mut c, &bin);
    // cargo-deny reads `cargo metadata` for every platform, offline (it must not fetch
    // its advisory database, which is not checked here): the crates of the other
    // platforms are fetched first, as a clean machine has only those it built.
    let mut fetch = cargo(root);
    fetch.args(["fetch", "--locked"]);
    run(fetch, "cargo fetch --locked")?;
    c.args(["deny", "--offline", "check", "licenses", "bans", "sources"]);
    run(c, "cargo deny check licenses bans sources")
}

fn publish(root: &Path, crates: &[Crate]) -> Result<(), String> {
    forget_earlier_dry_runs(crates)?;
    let mut c = cargo(root);
    c.args(["publish", "--workspace", "--dry-run"]);
    // A clean clone (CI) has nothing uncommitted; a working tree may.
    if !crate::conformance::is_ci() {
        c.arg("--allow-dirty");
    }
    run(c, "cargo publish --workspace --dry-run")
}

/// The dry run verifies each package against the others through a local registry that
/// stands in for crates.io, and cargo unpacks those packages into the shared
/// `$CARGO_HOME/registry/src` like any downloaded crate. An unpacked copy left by an
/// earlier dry run is taken as it is (cargo never unpacks a crate version twice), so a
/// later run would verify against stale sources of our own crates: remove them first.
/// Only this workspace's crates at this workspace's version are touched.
fn forget_earlier_dry_runs(crates: &[Crate]) -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(home) = home else {
        return Ok(());
    };
    let version = env!("CARGO_PKG_VERSION");
    for kind in ["src", "cache"] {
        let Ok(indexes) = std::fs::read_dir(home.join("registry").join(kind)) else {
            continue;
        };
        for index in indexes.flatten() {
            for k in crates {
                let name = format!("{}-{version}", k.name);
                for entry in [
                    index.path().join(&name),
                    index.path().join(format!("{name}.crate")),
                ] {
                    let removed = if entry.is_dir() {
                        std::fs::remove_dir_all(&entry)
                    } else if entry.exists() {
                        std::fs::remove_file(&entry)
                    } else {
                        continue;
                    };
                    removed.map_err(|e| format!("cannot remove {}: {e}", entry.display()))?;
                }
            }
        }
    }
    Ok(())
}

fn features(root: &Path, crates: &[Crate]) -> Result<(), String> {
    let bin = install(root, &CARGO_HACK)?;
    let mut c = cargo(root);
    with_tool(&mut c, &bin);
    c.args(["hack", "check", "--each-feature", "--no-dev-deps"]);
    for k in crates {
        c.args(["-p", &k.name]);
    }
    run(c, "cargo hack check --each-feature --no-dev-deps")
}

fn docs(root: &Path, crates: &[Crate]) -> Result<(), String> {
    for k in crates.iter().filter(|k| k.lib) {
        let mut c = cargo(root);
        c.args(["doc", "--no-deps", "-p", &k.name])
            .env("RUSTDOCFLAGS", "-D warnings");
        run(c, &format!("cargo doc -p {} (alone)", k.name))?;
    }
    Ok(())
}

/// Where a crate's recorded public API lives.
fn record_of(root: &Path, name: &str) -> PathBuf {
    root.join("api").join(format!("{name}.txt"))
}

fn api(root: &Path, crates: &[Crate], bless: bool) -> Result<(), String> {
    let bin = install(root, &CARGO_PUBLIC_API)?;
    let mut changed = Vec::new();
    for k in crates.iter().filter(|k| k.lib) {
        let mut c = cargo(root);
        with_tool(&mut c, &bin);
        // cargo-public-api builds the rustdoc JSON with the nightly toolchain itself.
        c.args([
            "public-api",
            "--simplified",
            "--all-features",
            "-p",
            &k.name,
        ])
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTDOC")
        .env_remove("RUSTC");
        let out = c
            .output()
            .map_err(|e| format!("cannot run cargo public-api: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cargo public-api -p {} failed ({}):\n{}",
                k.name,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let listed = String::from_utf8_lossy(&out.stdout).into_owned();
        let record = record_of(root, &k.name);
        let recorded = std::fs::read_to_string(&record).unwrap_or_default();
        if recorded == listed {
            continue;
        }
        if bless {
            std::fs::create_dir_all(root.join("api")).map_err(|e| e.to_string())?;
            std::fs::write(&record, &listed).map_err(|e| format!("{}: {e}", record.display()))?;
            println!(
                "release-check: recorded the public API of {} in {}",
                k.name,
                record.display()
            );
        } else {
            changed.push(format!("{}:\n{}", k.name, line_diff(&recorded, &listed)));
        }
    }
    if changed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the public API differs from its record in api/ (- recorded, + now); if the \
             change is meant, record it with `cargo xtask release-check api --bless` and \
             let the diff be reviewed:\n{}",
            changed.join("\n")
        ))
    }
}

/// The lines only in `old` (`- `) and only in `new` (`+ `), in order of appearance;
/// when there are none, a line saying the two differ in order only.
fn line_diff(old: &str, new: &str) -> String {
    let old_lines: std::collections::BTreeSet<&str> = old.lines().collect();
    let new_lines: std::collections::BTreeSet<&str> = new.lines().collect();
    let mut out = String::new();
    for l in old.lines().filter(|l| !new_lines.contains(l)) {
        out.push_str(&format!("  - {l}\n"));
    }
    for l in new.lines().filter(|l| !old_lines.contains(l)) {
        out.push_str(&format!("  + {l}\n"));
    }
    if out.is_empty() {
        // The same lines, in another order or some repeated (a record
        // edited by hand): nothing for a reviewer to read, but still not the record.
        out.push_str("  (the same items in another order: record them again)\n");
    }
    out
}

/// Installs `tool` into `.tools/<crate>` unless it is there; returns its `bin` directory.
fn install(root: &Path, tool: &Tool) -> Result<PathBuf, String> {
    crate::tools::install(root, tool, || cargo(root), "release-check")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_publishable_crates_are_the_libraries_and_the_cli() {
        let crates = publishable(&crate::tidy::workspace_root()).unwrap();
        let names: Vec<&str> = crates.iter().map(|k| k.name.as_str()).collect();
        assert!(names.contains(&"modelctx"));
        assert!(names.contains(&"modelctx-types"));
        assert!(names.contains(&"modelctx-cli"));
        assert!(!names.contains(&"modelctx-bench"), "{names:?}");
        let cli = crates.iter().find(|k| k.name == "modelctx-cli").unwrap();
        assert!(!cli.lib);
    }

    #[test]
    fn every_publishable_crate_carries_its_metadata_and_licences() {
        let problems = manifest_problems(&crate::tidy::workspace_root());
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn an_api_diff_names_what_went_and_what_came() {
        let diff = line_diff("pub fn a()\npub fn b()\n", "pub fn a()\npub fn c()\n");
        assert_eq!(diff, "  - pub fn b()\n  + pub fn c()\n");
    }

    #[test]
    fn a_record_in_another_order_says_so() {
        let diff = line_diff("pub fn b()\npub fn a()\n", "pub fn a()\npub fn b()\n");
        assert_eq!(
            diff,
            "  (the same items in another order: record them again)\n"
        );
    }
}
