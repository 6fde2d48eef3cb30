//! The custom test harness behind `tests/conformance/main.rs` (`harness = false`).
//!
//! [`main`] checks every registered test against the manifest before anything runs (an
//! unknown requirement ID stops the run, loudly), turns each (test, cell) pair into a
//! libtest-mimic trial named `<area>::<function>[<transport>@<version>]`, adds one trial per
//! contract rule (`contract::<rule>`), and runs them with the usual `cargo test` flags and
//! filters. Each trial gets a fresh multi-thread tokio runtime and [`TRIAL_TIMEOUT`], so a
//! hang fails instead of stalling. With [`RESULTS_ENV`] set, it writes the results file
//! (see [`report`](crate::report)).

use std::any::Any;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::connect::Connector;
use crate::contract::{Contract, Registered};
use crate::kind::Cell;
use crate::manifest::Manifest;
use crate::next::{self, Next};
use crate::pin::{self, Paths};
use crate::registry::Test;
use crate::report::{Outcome, RESULTS_ENV, ResultLine, Run};
use crate::selftest;
use crate::services;

/// The longest one trial may run before it fails.
pub const TRIAL_TIMEOUT: Duration = Duration::from_secs(30);

type ResultsFile = Option<Arc<Mutex<File>>>;

/// Runs the conformance suite: the self-tests plus `tests`. Call it from the test
/// binary's `main`.
pub fn main(tests: Vec<Test>) -> ExitCode {
    let args = Arguments::from_args();
    let paths = Paths::workspace();
    let manifest = match Manifest::load(&paths.manifest) {
        Ok(m) => m,
        Err(e) => {
            let at = paths.manifest.display();
            let problems: Vec<String> = e.problems().iter().map(|p| format!("{at}: {p}")).collect();
            return fatal(&problems);
        }
    };
    let next_paths = Paths::workspace_next();
    let next = match Next::load(&paths.manifest, &next_paths) {
        Ok(n) => n,
        Err(e) => {
            let at = next_paths.manifest.display();
            let problems: Vec<String> = e.problems().iter().map(|p| format!("{at}: {p}")).collect();
            return fatal(&problems);
        }
    };
    let next_manifest = next.as_ref().map(Next::manifest);
    let mut all = selftest::tests();
    all.extend(tests);
    if let Err(problems) = validate(&manifest, next_manifest, &all) {
        return fatal(&problems);
    }
    let registered = registrations(&manifest, next_manifest, &all);

    let results = match std::env::var_os(RESULTS_ENV) {
        None => None,
        Some(path) => match File::create(&path) {
            Ok(file) => Some(Arc::new(Mutex::new(file))),
            Err(e) => return fatal(&[format!("cannot create {RESULTS_ENV} file: {e}")]),
        },
    };
    for r in &registered {
        write_line(&results, &ResultLine::Test(r.clone()));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let not_run = services::not_run(manifest.sdk_cells(), &path, services::every_cell_required());
    for skipped in &not_run {
        eprintln!(
            "conformance: NOT RUN {}: {}; to run it: {}",
            skipped.cell, skipped.reason, skipped.enable
        );
        write_line(&results, &ResultLine::NotRun(skipped.clone()));
    }

    let contract = Contract::check(&manifest, &registered, &paths, pin::is_ci(), next_manifest);
    let next_contract = next
        .as_ref()
        .map(|n| Contract::check_next(n, &manifest, &registered, &next_paths, pin::is_ci()));
    let mut trials = Vec::new();
    let checks = contract.checks.into_iter().map(|c| ("", c));
    let next_checks = next_contract
        .into_iter()
        .flat_map(|c| c.checks)
        .map(|c| ("next::", c));
    for (prefix, check) in checks.chain(next_checks) {
        for note in &check.notes {
            eprintln!("conformance: note: {prefix}{}: {note}", check.name);
        }
        let problems = check.problems;
        trials.push(Trial::test(
            format!("contract::{prefix}{}", check.name),
            move || {
                if problems.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "{} violation(s):\n  {}",
                        problems.len(),
                        problems.join("\n  ")
                    )
                    .into())
                }
            },
        ));
    }
    for (test, reg) in all.into_iter().zip(&registered) {
        for &cell in &reg.cells {
            if not_run.iter().any(|n| n.cell == cell) {
                continue;
            }
            let (test, results) = (test.clone(), results.clone());
            trials.push(Trial::test(format!("{}[{cell}]", test.name()), move || {
                let outcome = run_trial(&test, cell, TRIAL_TIMEOUT);
                let line = Run {
                    test: test.name().to_owned(),
                    cell,
                    outcome: if outcome.is_ok() {
                        Outcome::Pass
                    } else {
                        Outcome::Fail
                    },
                };
                write_line(&results, &ResultLine::Run(line));
                outcome
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}

/// The start-up checks: every ID is known (to the released manifest or the next one),
/// every name is unique.
fn validate(
    manifest: &Manifest,
    next: Option<&Manifest>,
    tests: &[Test],
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    for t in tests {
        if !names.insert(t.name()) {
            problems.push(format!("test `{}` is registered twice", t.name()));
        }
        let known = |id: &str| manifest.contains(id) || next.is_some_and(|n| n.contains(id));
        for id in t.ids().iter().filter(|id| !known(id)) {
            problems.push(format!(
                "test `{}` names unknown requirement `{id}` (not in conformance/requirements.toml \
                 nor requirements-next.toml)",
                t.name()
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// What the contract and the report see of each test: a self-test (no IDs) runs in
/// every SDK cell that has a raw transport pair, any other test in the SDK cells all
/// its requirements admit, each where it is at home ([`next::cells_for`]).
fn registrations(manifest: &Manifest, next: Option<&Manifest>, tests: &[Test]) -> Vec<Registered> {
    tests
        .iter()
        .map(|t| Registered {
            name: t.name().to_owned(),
            ids: t.ids().iter().map(|id| (*id).to_owned()).collect(),
            cells: if t.ids().is_empty() {
                manifest
                    .sdk_cells()
                    .iter()
                    .copied()
                    .filter(|c| c.has_transport_pair())
                    .collect()
            } else {
                next::cells_for(manifest, next, t.ids())
            },
        })
        .collect()
}

fn run_trial(test: &Test, cell: Cell, limit: Duration) -> Result<(), Failed> {
    let connector = Connector::new(cell).ok_or_else(|| format!("no connector for {cell}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime: {e}"))?;
    let finished = catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(async { tokio::time::timeout(limit, test.run(connector)).await })
    }));
    // Tasks a test left behind must not hold the next trial up.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match finished {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(format!("timed out after {limit:?}").into()),
        Err(panic) => Err(panic_message(&*panic).into()),
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => format!("panicked: {s}"),
        (_, Some(s)) => format!("panicked: {s}"),
        _ => "panicked".to_owned(),
    }
}

fn write_line(results: &ResultsFile, line: &ResultLine) {
    let Some(file) = results else { return };
    let Ok(json) = serde_json::to_string(line) else {
        return;
    };
    let written = file
        .lock()
        .map_err(|_| std::io::Error::other("results file lock poisoned"))
        .and_then(|mut f| writeln!(f, "{json}"));
    if let Err(e) = written {
        eprintln!("conformance: cannot write the results file: {e}");
    }
}

fn fatal(problems: &[String]) -> ExitCode {
    eprintln!("\nconformance: FATAL: the suite cannot start; nothing was run:");
    for p in problems {
        eprintln!("  - {p}");
    }
    eprintln!();
    ExitCode::from(101)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
spec_versions = ["2025-11-25"]
[sdk_cells]
in-memory = ["2025-11-25"]

[[requirement]]
id = "a:b"
section = "S"
source = "sdk"
behavior = "x"
"#;

    async fn noop(_: Connector) {}

    async fn hangs(_: Connector) {
        std::future::pending::<()>().await;
    }

    async fn panics(_: Connector) {
        panic!("boom");
    }

    #[test]
    fn unknown_ids_and_duplicate_names_stop_the_run() {
        let m = Manifest::parse(MANIFEST).unwrap();
        let ok = [Test::new("a::t", &["a:b"], noop)];
        assert!(validate(&m, None, &ok).is_ok());
        let bad = [
            Test::new("a::t", &["a:b", "a:nope"], noop),
            Test::new("a::t", &["a:b"], noop),
        ];
        let problems = validate(&m, None, &bad).unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("unknown requirement `a:nope`"));
    }

    #[test]
    fn a_trial_fails_on_panic_or_timeout_and_passes_otherwise() {
        let kind = Cell::new(
            crate::kind::TransportKind::InMemory,
            crate::kind::SpecVersion::V2025_11_25,
        );
        let err = run_trial(&Test::new("a::p", &[], panics), kind, TRIAL_TIMEOUT).unwrap_err();
        assert!(format!("{err:?}").contains("boom"), "{err:?}");
        let short = Duration::from_millis(50);
        let err = run_trial(&Test::new("a::h", &[], hangs), kind, short).unwrap_err();
        assert!(format!("{err:?}").contains("timed out"), "{err:?}");
        assert!(run_trial(&Test::new("a::n", &[], noop), kind, TRIAL_TIMEOUT).is_ok());
    }
}
