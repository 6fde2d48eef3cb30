//! What a command needs from the machine beyond the Rust toolchain, said before it
//! starts: a missing program is one clear line naming the program and the command that
//! provides it, never a panic halfway through.
//!
//! Also the bare machine of a new user, for the test that `cargo xtask conformance`
//! passes there: a `PATH` of links to every program on this one's except the services
//! and runtimes a fresh machine lacks.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use modelctx_conformance::services;

/// A program a command needs, and how to get it.
pub(crate) struct Need {
    pub(crate) program: &'static str,
    pub(crate) get_it: &'static str,
}

/// Checks that every program of `needs` is on `PATH`; the error lists each missing one
/// with how to get it.
pub(crate) fn require(command: &str, needs: &[Need]) -> Result<(), String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<String> = needs
        .iter()
        .filter(|n| !services::on_path(n.program, &path))
        .map(|n| format!("  - {} (not on PATH): {}", n.program, n.get_it))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{command} needs what this machine lacks; nothing was run:\n{}",
            missing.join("\n")
        ))
    }
}

/// What a fresh machine with only a Rust toolchain does not have.
pub(crate) const ABSENT_ON_A_BARE_MACHINE: &[&str] = &[
    "redis-server",
    "redis-cli",
    "nginx",
    "haproxy",
    "node",
    "nodejs",
    "npm",
    "npx",
    "python",
    "python3",
    "pip",
    "pip3",
];

/// Builds `dir` as a directory of links to every executable on `PATH` whose name is not
/// in `hidden` (nor `python3.N`, `pythonN` and the like when `python` is hidden), and
/// returns it as a `PATH` value.
pub(crate) fn path_without(dir: &Path, hidden: &[&str]) -> Result<OsString, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let is_hidden = |name: &str| {
        hidden.contains(&name)
            || hidden.iter().any(|h| {
                name.strip_prefix(h)
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
            })
    };
    for entry_dir in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&entry_dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name_text) = name.to_str() else {
                continue;
            };
            let link = dir.join(&name);
            if is_hidden(name_text) || link.exists() {
                continue;
            }
            if !services::on_path(
                name_text,
                &std::env::join_paths([&entry_dir]).unwrap_or_default(),
            ) {
                continue;
            }
            link_to(&entry.path(), &link)?;
        }
    }
    std::env::join_paths([dir]).map_err(|e| e.to_string())
}

#[cfg(unix)]
fn link_to(target: &Path, link: &Path) -> Result<(), String> {
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| format!("cannot link {}: {e}", link.display()))
}

#[cfg(not(unix))]
fn link_to(target: &Path, link: &Path) -> Result<(), String> {
    std::fs::copy(target, link)
        .map(drop)
        .map_err(|e| format!("cannot copy {}: {e}", link.display()))
}

/// Where the bare machine's `PATH` lives: under the target directory, rebuilt per run.
pub(crate) fn bare_path_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("bare-machine-path")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named_with_how_to_get_it() {
        let err = require(
            "cargo xtask demo",
            &[Need {
                program: "surely-no-such-program-here",
                get_it: "install it with `sh get.sh`",
            }],
        )
        .unwrap_err();
        assert!(err.contains("cargo xtask demo needs"), "{err}");
        assert!(
            err.contains("surely-no-such-program-here (not on PATH): install it with `sh get.sh`")
        );
        assert!(
            require(
                "x",
                &[Need {
                    program: "cargo",
                    get_it: ""
                }]
            )
            .is_ok()
        );
    }

    #[test]
    fn the_bare_path_hides_the_services_and_keeps_the_toolchain() {
        let dir = std::env::temp_dir().join(format!("xtask-bare-{}", std::process::id()));
        let path = path_without(&dir, &["cargo", "sh"]).unwrap();
        assert!(!services::on_path("cargo", &path));
        assert!(!services::on_path("sh", &path));
        assert!(services::on_path("rustc", &path), "rustc stays");
        let _ = std::fs::remove_dir_all(dir);
    }
}
