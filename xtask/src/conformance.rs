//! `cargo xtask conformance`: run the conformance suite and report on it.
//!
//! Runs `cargo test -p modelctx-conformance --test conformance` with the harness's
//! results file enabled, then joins the results with the manifests and their contracts
//! (`modelctx_conformance::report`) into the per-section tables of the released manifest
//! and of the next one and, with `--json PATH`, the machine-readable report.
//! `--update-lock` (or `cargo xtask pin`) re-pins `conformance/requirements.lock` and
//! `conformance/requirements-next.lock` instead (`--reference PATH` moves the released
//! pin to another reference manifest); `--manifest-diff PATH` prints what a candidate
//! reference manifest adds, removes and changes against the pinned one, the review
//! before a move, with each removed ID's fate when the next manifest records one.
//!
//! A cell that needs a program the machine lacks (the two-instance legs need
//! `redis-server`, those behind a real balancer nginx or HAProxy too) is reported as not
//! run, with the command that enables it; `--shared` installs them
//! (`xtask/system/redis.sh`, `xtask/system/balancers.sh`) and makes those cells run.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use modelctx_conformance::contract::Contract;
use modelctx_conformance::manifest::Manifest;
use modelctx_conformance::next::{Fate, Next};
use modelctx_conformance::pin::{self, Paths};
use modelctx_conformance::report::{RESULTS_ENV, Report, Results};
use modelctx_conformance::services;

use crate::needs;

pub(crate) const USAGE: &str = "\
cargo xtask conformance [--shared] [--json PATH]
                                             run the conformance suite and report; a cell
                                             needing a program this machine lacks is shown
                                             as not run; --shared installs redis-server,
                                             nginx and HAProxy and runs the two-instance
                                             cells too
cargo xtask conformance --bare               the same as on a machine with only the Rust
                                             toolchain (redis-server, nginx, HAProxy,
                                             node, python hidden from PATH, CI unset):
                                             must pass, the two-instance cells shown as
                                             not run
cargo xtask conformance --manifest-diff PATH what a candidate reference manifest changes
cargo xtask conformance --update-lock [--reference PATH]
                                             re-pin conformance/requirements.lock (= cargo
                                             xtask pin), optionally to another reference";

/// The released manifest's name in the report.
const RELEASED: &str = "released: mcp 2.3.0 (requirements.toml)";
/// The next manifest's name in the report.
const NEXT: &str =
    "next: python-sdk PR #3018, unreleased (requirements.toml + requirements-next.toml)";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Report {
        json: Option<PathBuf>,
        shared: bool,
    },
    UpdateLock {
        reference: Option<PathBuf>,
    },
    ManifestDiff {
        candidate: PathBuf,
    },
    /// The report as a machine with only the Rust toolchain sees it (`--bare`).
    Bare,
}

pub(crate) fn parse_args(args: &[String]) -> Result<Action, String> {
    let mut json = None;
    let mut reference = None;
    let mut diff = None;
    let mut update_lock = false;
    let mut shared = false;
    let mut it = args.iter();
    let path = |flag: &str, value: Option<&String>| match value {
        Some(path) => Ok(Some(PathBuf::from(path))),
        None => Err(format!("{flag} needs a path")),
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--update-lock" => update_lock = true,
            "--shared" => shared = true,
            "--bare" if args.len() == 1 => return Ok(Action::Bare),
            "--json" => json = path("--json", it.next())?,
            "--reference" => reference = path("--reference", it.next())?,
            "--manifest-diff" => diff = path("--manifest-diff", it.next())?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if shared && (update_lock || diff.is_some()) {
        return Err("--shared goes with the report only".into());
    }
    match (update_lock, json, reference, diff) {
        (true, None, reference, None) => Ok(Action::UpdateLock { reference }),
        (true, ..) => Err("--update-lock takes only --reference".into()),
        (false, None, None, Some(candidate)) => Ok(Action::ManifestDiff { candidate }),
        (false, _, _, Some(_)) => Err("--manifest-diff takes no other argument".into()),
        (false, _, Some(_), None) => Err("--reference goes with --update-lock".into()),
        (false, json, None, None) => Ok(Action::Report { json, shared }),
    }
}

/// Runs the subcommand.
pub(crate) fn main(args: &[String]) -> ExitCode {
    match parse_args(args) {
        Ok(Action::UpdateLock { reference }) => pin_to(reference.as_deref()),
        Ok(Action::ManifestDiff { candidate }) => manifest_diff(&candidate),
        Ok(Action::Bare) => match on_a_bare_machine(&pin::workspace_root()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("conformance: {e}");
                ExitCode::FAILURE
            }
        },
        Ok(Action::Report { json, shared }) => {
            let machine = if shared {
                Machine::Shared
            } else {
                Machine::AsIs
            };
            report(json, &machine)
        }
        Err(e) => {
            eprintln!("conformance: {e}\nusage:\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Rewrites the lock (to the pinned reference) after checking that the manifest is valid.
pub(crate) fn update_lock() -> ExitCode {
    pin_to(None)
}

fn pin_to(reference: Option<&std::path::Path>) -> ExitCode {
    let paths = Paths::workspace();
    let next_paths = Paths::workspace_next();
    if let Err(e) = Manifest::load(&paths.manifest) {
        eprintln!("conformance: not pinning: {e}");
        return ExitCode::FAILURE;
    }
    let next = match Next::load(&paths.manifest, &next_paths) {
        Ok(next) => next,
        Err(e) => {
            eprintln!(
                "conformance: not pinning: {}: {e}",
                next_paths.manifest.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let mut pins = vec![(&paths, reference)];
    if next.is_some() {
        pins.push((&next_paths, None));
    }
    for (paths, reference) in pins {
        match pin::write_lock(paths, reference) {
            Ok((sha, reference_sha)) => println!(
                "conformance: pinned {} at sha256 {sha} and the reference {} at sha256 \
                 {reference_sha}",
                paths.manifest.display(),
                reference.unwrap_or(&paths.reference).display()
            ),
            Err(e) => {
                eprintln!("conformance: cannot write {}: {e}", paths.lock.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Prints what `candidate` adds, removes and changes against the pinned reference.
fn manifest_diff(candidate: &std::path::Path) -> ExitCode {
    let paths = Paths::workspace();
    // Each removed ID's fate, as the next manifest records it.
    let fates: Vec<(String, String)> = Next::load(&paths.manifest, &Paths::workspace_next())
        .ok()
        .flatten()
        .map(|next| {
            next.gone()
                .iter()
                .map(|g| {
                    let fate = match &g.fate {
                        Fate::Successor(s) => format!("successor {s}"),
                        Fate::NotCarried(why) => format!("not carried over: {why}"),
                        _ => String::new(),
                    };
                    (g.id.clone(), fate)
                })
                .collect()
        })
        .unwrap_or_default();
    match pin::manifest_diff(&paths.reference, candidate) {
        Ok(mut lines) => {
            for line in &mut lines {
                let removed = line.strip_prefix("- ").map(str::to_owned);
                if let Some((_, fate)) = removed.and_then(|id| fates.iter().find(|(g, _)| *g == id))
                {
                    line.push_str(&format!("  ({fate})"));
                }
            }
            println!(
                "conformance: {} against the pinned {}:",
                candidate.display(),
                paths.reference.display()
            );
            let count = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
            for line in &lines {
                println!("  {line}");
            }
            println!(
                "conformance: {} added, {} removed, {} changed field(s)",
                count("+"),
                count("-"),
                count("~")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether this is CI (`CI=true`).
pub(crate) fn is_ci() -> bool {
    pin::is_ci()
}

/// What the suite may use of the machine.
pub(crate) enum Machine {
    /// What it has: a cell whose program is missing is not run (unless `CI=true`).
    AsIs,
    /// `redis-server` installed first, and every cell required to run.
    Shared,
    /// A machine with only the Rust toolchain: this `PATH`, and neither `CI` nor
    /// the require switch set.
    Bare(std::ffi::OsString),
}

/// `cargo xtask conformance` as a new user runs it on a machine with only a Rust
/// toolchain (redis-server, nginx, HAProxy, node and python hidden from `PATH`, `CI`
/// unset): it must pass, and show the two-instance cells as not run rather than failed.
pub(crate) fn on_a_bare_machine(root: &std::path::Path) -> Result<(), String> {
    let path = needs::path_without(&needs::bare_path_dir(root), needs::ABSENT_ON_A_BARE_MACHINE)?;
    let json = needs::bare_path_dir(root).with_extension("json");
    if report(Some(json.clone()), &Machine::Bare(path)) != ExitCode::SUCCESS {
        return Err("`cargo xtask conformance` failed on a bare machine (see above)".into());
    }
    let text = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let not_run = &value["summary"]["cells_not_run"];
    for shared in [
        "streamable-http-shared@2025-11-25",
        "streamable-http-nginx@2025-11-25",
        "streamable-http-nginx@2026-07-28",
        "streamable-http-haproxy@2025-11-25",
        "streamable-http-haproxy@2026-07-28",
    ] {
        let shown = not_run
            .as_array()
            .is_some_and(|cells| cells.iter().any(|c| c["cell"] == shared));
        if !shown {
            return Err(format!(
                "on a bare machine the report should show {shared} as not run; it has {not_run}"
            ));
        }
    }
    println!("conformance on a bare machine: passed, the two-instance cells shown as not run");
    Ok(())
}

fn report(json: Option<PathBuf>, machine: &Machine) -> ExitCode {
    let paths = Paths::workspace();
    if let Machine::Shared = machine {
        for script in ["xtask/system/redis.sh", "xtask/system/balancers.sh"] {
            let script = pin::workspace_root().join(script);
            match Command::new("sh").arg(&script).status() {
                Ok(s) if s.success() => {}
                Ok(s) => {
                    eprintln!("conformance: --shared: {} failed ({s})", script.display());
                    return ExitCode::FAILURE;
                }
                Err(e) => {
                    eprintln!("conformance: --shared: cannot run sh: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let manifest = match Manifest::load(&paths.manifest) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::FAILURE;
        }
    };
    let next_paths = Paths::workspace_next();
    let next = match Next::load(&paths.manifest, &next_paths) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("conformance: {}: {e}", next_paths.manifest.display());
            return ExitCode::FAILURE;
        }
    };
    let results_path =
        std::env::temp_dir().join(format!("modelctx-conformance-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&results_path);

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    match machine {
        Machine::AsIs => {}
        Machine::Shared => {
            command.env(services::REQUIRE_ENV, "1");
        }
        Machine::Bare(path) => {
            command
                .env("PATH", path)
                .env_remove("CI")
                .env_remove(services::REQUIRE_ENV);
        }
    }
    let status = command
        .args([
            "test",
            "-p",
            "modelctx-conformance",
            "--test",
            "conformance",
        ])
        .env(RESULTS_ENV, &results_path)
        .current_dir(pin::workspace_root())
        .status();
    let suite_ok = match status {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("conformance: cannot run cargo test: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = std::fs::read_to_string(&results_path);
    let _ = std::fs::remove_file(&results_path);
    let results = match text
        .map_err(|e| e.to_string())
        .and_then(|t| Results::parse(&t))
    {
        Ok(r) if !r.tests.is_empty() => r,
        Ok(_) | Err(_) => {
            eprintln!(
                "conformance: the suite wrote no results: it did not build or could not start \
                 (see above); no report"
            );
            return ExitCode::FAILURE;
        }
    };
    let sha = match pin::manifest_sha256(&paths) {
        Ok(sha) => sha,
        Err(e) => {
            eprintln!("conformance: cannot read {}: {e}", paths.manifest.display());
            return ExitCode::FAILURE;
        }
    };
    let contract = Contract::check(
        &manifest,
        &results.tests,
        &paths,
        pin::is_ci(),
        next.as_ref().map(Next::manifest),
    );
    let mut report = Report::build(RELEASED, &manifest, sha, &results, contract);
    if let Some(next) = &next {
        let sha = match pin::manifest_sha256(&next_paths) {
            Ok(sha) => sha,
            Err(e) => {
                eprintln!(
                    "conformance: cannot read {}: {e}",
                    next_paths.manifest.display()
                );
                return ExitCode::FAILURE;
            }
        };
        let contract =
            Contract::check_next(next, &manifest, &results.tests, &next_paths, pin::is_ci());
        report = report.with_next(Report::build(
            NEXT,
            next.manifest(),
            sha,
            &results,
            contract,
        ));
    }
    println!("\n{}", report.render());
    if let Some(path) = json {
        if let Err(e) = std::fs::write(&path, report.to_json_string()) {
            eprintln!("conformance: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("conformance: JSON report written to {}", path.display());
    }
    if !suite_ok && report.passed() {
        eprintln!("conformance: cargo test failed although every recorded run passed (see above)");
    }
    if suite_ok && report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The tidy side of the pin: once a manifest exists (the released one, the next one),
/// its lock must match it.
pub(crate) fn lock_problems() -> Vec<String> {
    [Paths::workspace(), Paths::workspace_next()]
        .iter()
        .filter(|paths| paths.manifest.exists())
        .filter_map(|paths| pin::check_lock(paths).err())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_command_line_is_parsed() {
        assert_eq!(
            parse_args(&[]),
            Ok(Action::Report {
                json: None,
                shared: false
            })
        );
        assert_eq!(
            parse_args(&args(&["--json", "/tmp/x.json", "--shared"])),
            Ok(Action::Report {
                json: Some("/tmp/x.json".into()),
                shared: true
            })
        );
        assert!(parse_args(&args(&["--shared", "--update-lock"])).is_err());
        assert_eq!(parse_args(&args(&["--bare"])), Ok(Action::Bare));
        assert!(parse_args(&args(&["--bare", "--shared"])).is_err());
        assert_eq!(
            parse_args(&args(&["--update-lock"])),
            Ok(Action::UpdateLock { reference: None })
        );
        assert_eq!(
            parse_args(&args(&["--update-lock", "--reference", "r.json"])),
            Ok(Action::UpdateLock {
                reference: Some("r.json".into())
            })
        );
        assert_eq!(
            parse_args(&args(&["--manifest-diff", "c.json"])),
            Ok(Action::ManifestDiff {
                candidate: "c.json".into()
            })
        );
        assert!(parse_args(&args(&["--reference", "r.json"])).is_err());
        assert!(parse_args(&args(&["--manifest-diff", "c.json", "--json", "x"])).is_err());
        assert!(parse_args(&args(&["--json"])).is_err());
        assert!(parse_args(&args(&["--update-lock", "--json", "x"])).is_err());
        assert!(parse_args(&args(&["--frobnicate"])).is_err());
    }
}
