//! `cargo xtask conformance`: run the conformance suite and report on it.
//!
//! Runs `cargo test -p modelctx-conformance --test conformance` with the harness's
//! results file enabled, then joins the results with the manifest and the contract
//! (`modelctx_conformance::report`) into the per-section table and, with `--json PATH`,
//! the machine-readable report. `--update-lock` (or `cargo xtask pin`) re-pins
//! `conformance/requirements.lock` instead (`--reference PATH` moves the pin to another
//! reference manifest); `--manifest-diff PATH` prints what a candidate reference manifest
//! adds, removes and changes against the pinned one, the review before a move.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use modelctx_conformance::contract::Contract;
use modelctx_conformance::manifest::Manifest;
use modelctx_conformance::pin::{self, Paths};
use modelctx_conformance::report::{RESULTS_ENV, Report, Results};

pub(crate) const USAGE: &str = "\
cargo xtask conformance [--json PATH]        run the conformance suite and report
cargo xtask conformance --manifest-diff PATH what a candidate reference manifest changes
cargo xtask conformance --update-lock [--reference PATH]
                                             re-pin conformance/requirements.lock (= cargo
                                             xtask pin), optionally to another reference";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Report { json: Option<PathBuf> },
    UpdateLock { reference: Option<PathBuf> },
    ManifestDiff { candidate: PathBuf },
}

pub(crate) fn parse_args(args: &[String]) -> Result<Action, String> {
    let mut json = None;
    let mut reference = None;
    let mut diff = None;
    let mut update_lock = false;
    let mut it = args.iter();
    let path = |flag: &str, value: Option<&String>| match value {
        Some(path) => Ok(Some(PathBuf::from(path))),
        None => Err(format!("{flag} needs a path")),
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--update-lock" => update_lock = true,
            "--json" => json = path("--json", it.next())?,
            "--reference" => reference = path("--reference", it.next())?,
            "--manifest-diff" => diff = path("--manifest-diff", it.next())?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    match (update_lock, json, reference, diff) {
        (true, None, reference, None) => Ok(Action::UpdateLock { reference }),
        (true, ..) => Err("--update-lock takes only --reference".into()),
        (false, None, None, Some(candidate)) => Ok(Action::ManifestDiff { candidate }),
        (false, _, _, Some(_)) => Err("--manifest-diff takes no other argument".into()),
        (false, _, Some(_), None) => Err("--reference goes with --update-lock".into()),
        (false, json, None, None) => Ok(Action::Report { json }),
    }
}

/// Runs the subcommand.
pub(crate) fn main(args: &[String]) -> ExitCode {
    match parse_args(args) {
        Ok(Action::UpdateLock { reference }) => pin_to(reference.as_deref()),
        Ok(Action::ManifestDiff { candidate }) => manifest_diff(&candidate),
        Ok(Action::Report { json }) => report(json),
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
    if let Err(e) = Manifest::load(&paths.manifest) {
        eprintln!("conformance: not pinning: {e}");
        return ExitCode::FAILURE;
    }
    match pin::write_lock(&paths, reference) {
        Ok((sha, reference_sha)) => {
            println!(
                "conformance: pinned requirements.toml at sha256 {sha} and the reference \
                 {} at sha256 {reference_sha}",
                reference.unwrap_or(&paths.reference).display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance: cannot write {}: {e}", paths.lock.display());
            ExitCode::FAILURE
        }
    }
}

/// Prints what `candidate` adds, removes and changes against the pinned reference.
fn manifest_diff(candidate: &std::path::Path) -> ExitCode {
    let paths = Paths::workspace();
    match pin::manifest_diff(&paths.reference, candidate) {
        Ok(lines) => {
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

fn report(json: Option<PathBuf>) -> ExitCode {
    let paths = Paths::workspace();
    let manifest = match Manifest::load(&paths.manifest) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::FAILURE;
        }
    };
    let results_path =
        std::env::temp_dir().join(format!("modelctx-conformance-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&results_path);

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
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
    let contract = Contract::check(&manifest, &results.tests, &paths, pin::is_ci());
    let report = Report::build(&manifest, sha, &results, contract);
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

/// The tidy side of the pin: once the manifest exists, its lock must match it.
pub(crate) fn lock_problems() -> Vec<String> {
    let paths = Paths::workspace();
    if !paths.manifest.exists() {
        return Vec::new();
    }
    pin::check_lock(&paths).err().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_command_line_is_parsed() {
        assert_eq!(parse_args(&[]), Ok(Action::Report { json: None }));
        assert_eq!(
            parse_args(&args(&["--json", "/tmp/x.json"])),
            Ok(Action::Report {
                json: Some("/tmp/x.json".into())
            })
        );
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
