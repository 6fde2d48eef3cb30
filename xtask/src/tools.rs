//! Pinned cargo tools from the registry (cargo-deny, cargo-hack, cargo-public-api,
//! cargo-fuzz), installed into the ignored `.tools/<crate>` when missing.
//!
//! They are built with a quick profile (`opt-level = 1`, no LTO, no debug info, many
//! codegen units) in a temporary target directory that is removed afterwards: a CI run
//! builds each of them once, and the checks they run spend their time in cargo and
//! rustc, not in the tool.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tool from the registry, installed pinned into `.tools/<crate>`.
pub(crate) struct Tool {
    pub(crate) krate: &'static str,
    pub(crate) version: &'static str,
    /// The cargo subcommand it provides (`cargo <subcommand>`).
    pub(crate) subcommand: &'static str,
}

impl Tool {
    /// `<root>/.tools/<crate>/bin`.
    pub(crate) fn bin(&self, root: &Path) -> PathBuf {
        root.join(".tools").join(self.krate).join("bin")
    }
}

/// Runs `command` to its end: the error says that `program` could not be run, or that
/// `what` failed and with which status.
pub(crate) fn run_to_end(command: &mut Command, program: &str, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Puts `bin` first on the `PATH` of `c`.
pub(crate) fn with_tool(c: &mut Command, bin: &Path) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&path)),
    )
    .unwrap_or(path);
    c.env("PATH", path);
}

/// Installs `tool` with `cargo` (a command for the cargo to use, e.g. `cargo +nightly`,
/// with its working directory set) unless `cargo <subcommand> --version` already names
/// the pinned version; returns its `bin` directory.
pub(crate) fn install(
    root: &Path,
    tool: &Tool,
    cargo: impl Fn() -> Command,
    log_prefix: &str,
) -> Result<PathBuf, String> {
    let dir = root.join(".tools").join(tool.krate);
    let bin = tool.bin(root);
    let present = || {
        let mut c = cargo();
        with_tool(&mut c, &bin);
        c.args([tool.subcommand, "--version"])
            .output()
            .is_ok_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).contains(tool.version)
            })
    };
    if present() {
        return Ok(bin);
    }
    println!(
        "{log_prefix}: installing {} {} into {}",
        tool.krate,
        tool.version,
        dir.display()
    );
    let scratch = std::env::temp_dir().join(format!(
        "xtask-install-{}-{}",
        tool.krate,
        std::process::id()
    ));
    let status = cargo()
        .args([
            "install",
            tool.krate,
            "--locked",
            "--version",
            tool.version,
            "--root",
        ])
        .arg(&dir)
        .env("CARGO_TARGET_DIR", &scratch)
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "true")
        .status();
    let _ = std::fs::remove_dir_all(&scratch);
    let status = status.map_err(|e| format!("cannot run cargo install {}: {e}", tool.krate))?;
    if !status.success() {
        return Err(format!(
            "installing {} {} failed ({status}): install it with \
             `cargo install {} --locked --version {} --root {}`",
            tool.krate,
            tool.version,
            tool.krate,
            tool.version,
            dir.display()
        ));
    }
    if present() {
        Ok(bin)
    } else {
        Err(format!(
            "{} {} installed but does not run",
            tool.krate, tool.version
        ))
    }
}
