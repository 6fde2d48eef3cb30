//! The official suite: its frozen requirement sets, runs per set and role, and the
//! verdict against the expected failures.
//!
//! Traps:
//!
//! - The suite's `latest` npm tag is older than the frozen sets; xtask refuses an installed
//!   suite whose version is not the pinned one.
//! - A scenario with only a WARNING check passes the tier score but fails the suite's
//!   baseline check, so it stays in the expected-failures file until it is clean.
//! - `--requirements` runs each set at its own wire version: a server that speaks only
//!   2025-11-25 fails most of the 2026-07-28 set at the first request.
//!
//! Every expected-failure entry names the issue that tracks it (a unit test checks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::process::{run_logged, start_both_eras_server};
use super::{Paths, Role, SUITE_LIMIT, SUITE_PACKAGE, SUITE_VERSION};

/// A frozen requirement set (`requirements/<revision>.yaml` of the suite package).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Requirements {
    pub(super) server: Vec<String>,
    pub(super) client: Vec<String>,
    /// `(scenario, role, reason)`: run and reported, never scored.
    pub(super) not_scored: Vec<(String, Role, String)>,
}

impl Requirements {
    pub(super) fn scored(&self, role: Role) -> &[String] {
        match role {
            Role::Server => &self.server,
            Role::Client => &self.client,
        }
    }
}

/// An expected-failures file: per role, the listed scenarios and the issue each names.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Expected {
    pub(super) entries: BTreeMap<Role, Vec<(String, Option<u32>)>>,
    pub(super) legs: Vec<(String, Option<u32>)>,
}

/// One scenario's result, read from its `checks.json`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ScenarioResult {
    /// No check failed and at least one succeeded (how the suite scores a scenario).
    pub(super) passed: bool,
    /// Some check failed or warned (how the suite's baseline check sees a failure).
    pub(super) failing: bool,
    /// `Some(false)` when its `wire-schema-valid` check did not succeed.
    pub(super) wire_valid: Option<bool>,
    pub(super) failed_checks: Vec<String>,
}

/// The outcome of one suite run: one frozen set, one role.
#[derive(Debug)]
pub(super) struct SetOutcome {
    pub(super) revision: &'static str,
    pub(super) role: Role,
    pub(super) scored: Vec<String>,
    pub(super) scored_passed: Vec<String>,
    pub(super) expected: Vec<(String, Option<u32>)>,
    pub(super) unexpected: Vec<String>,
    pub(super) stale: Vec<String>,
    pub(super) not_scored: Vec<(String, String, bool)>,
    pub(super) wire_violations: Vec<String>,
    pub(super) suite_status_ok: bool,
    /// When the first run failed and the set was run once more: the first run's findings
    /// (its logs are kept beside the second's as `*-first-run*`).
    pub(super) first_run: Option<Vec<String>>,
}

impl SetOutcome {
    pub(super) fn ok(&self) -> bool {
        self.unexpected.is_empty()
            && self.stale.is_empty()
            && self.wire_violations.is_empty()
            && self.suite_status_ok
    }

    /// What makes it fail, one line each.
    pub(super) fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(
            self.unexpected
                .iter()
                .map(|u| format!("unexpected failure: {u}")),
        );
        out.extend(
            self.stale
                .iter()
                .map(|s| format!("passes but is listed as an expected failure: {s}")),
        );
        out.extend(
            self.wire_violations
                .iter()
                .map(|w| format!("wire-schema-valid failed: {w}")),
        );
        if !self.suite_status_ok {
            out.push("the suite's own baseline check failed (see its log)".to_owned());
        }
        out
    }

    pub(super) fn to_json(&self) -> Value {
        json!({
            "revision": self.revision,
            "role": self.role.name(),
            "scored": { "passed": self.scored_passed.len(), "total": self.scored.len() },
            "expected_failures": self.expected.iter()
                .map(|(s, issue)| json!({ "scenario": s, "issue": issue }))
                .collect::<Vec<_>>(),
            "unexpected_failures": self.unexpected,
            "stale_expected_failures": self.stale,
            "not_scored": self.not_scored.iter()
                .map(|(s, reason, passed)| json!({ "scenario": s, "reason": reason, "passed": passed }))
                .collect::<Vec<_>>(),
            "wire_schema_violations": self.wire_violations,
            "suite_exit_ok": self.suite_status_ok,
            "first_run_failures": self.first_run,
            "ok": self.ok(),
        })
    }
}

/// The installed suite must be the pinned one (the registry's `latest` tag is older).
pub(super) fn check_suite_version(paths: &Paths) -> Result<(), String> {
    let manifest = read(&paths.suite.join("package.json"))?;
    let manifest: Value = serde_json::from_str(&manifest)
        .map_err(|e| format!("{SUITE_PACKAGE}/package.json: {e}"))?;
    match manifest["version"].as_str() {
        Some(SUITE_VERSION) => Ok(()),
        other => Err(format!(
            "{SUITE_PACKAGE} {other:?} is installed, but {SUITE_VERSION} is pinned: remove .tools/interop and run again"
        )),
    }
}

pub(super) fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// What one suite run is judged by: the role and revision run, the revision's scored
/// requirements and the expected failures (with the file they were read from).
#[derive(Clone, Copy)]
pub(super) struct SuiteSet<'a> {
    pub(super) revision: &'static str,
    pub(super) role: Role,
    pub(super) requirements: &'a Requirements,
    pub(super) expected: &'a Expected,
    pub(super) expected_file: &'a Path,
}

/// One suite run: `<role> --requirements <revision>` with its expected-failures file.
///
/// A run that fails is run once more, and the outcome is the second run's, with the first
/// run's findings attached: the report shows both, so a scenario that fails only
/// sometimes is seen (a suite run starts every scenario against fresh processes; a
/// machine under load has made single checks time out).
pub(super) fn suite_run(paths: &Paths, set: &SuiteSet<'_>) -> Result<SetOutcome, String> {
    let SuiteSet { revision, role, .. } = *set;
    let first = suite_attempt(paths, set)?;
    if first.ok() {
        return Ok(first);
    }
    let findings = first.findings();
    eprintln!(
        "== interop: official suite, {} {revision} failed ({}); running it once more",
        role.name(),
        findings.join("; ")
    );
    for name in [
        format!("{}-{revision}", role.name()),
        format!("{}-{revision}.log", role.name()),
        format!("conformance-server-{revision}.log"),
    ] {
        let from = paths.logs.join(&name);
        if from.exists() {
            let to = paths.logs.join(format!("first-run-{name}"));
            let _ = std::fs::remove_dir_all(&to);
            std::fs::rename(&from, &to)
                .map_err(|e| format!("cannot keep {}: {e}", from.display()))?;
        }
    }
    let mut second = suite_attempt(paths, set)?;
    second.first_run = Some(findings);
    Ok(second)
}

fn suite_attempt(paths: &Paths, set: &SuiteSet<'_>) -> Result<SetOutcome, String> {
    let SuiteSet {
        revision,
        role,
        requirements,
        expected,
        expected_file,
    } = *set;
    let out_dir = paths.logs.join(format!("{}-{revision}", role.name()));
    if out_dir.exists() {
        std::fs::remove_dir_all(&out_dir)
            .map_err(|e| format!("cannot clear {}: {e}", out_dir.display()))?;
    }
    let mut harness = Command::new(&paths.node);
    harness.arg(paths.suite.join("dist/index.js"));
    let log_name = format!("{}-{revision}.log", role.name());
    let server = match role {
        Role::Server => {
            let (server, url) =
                start_both_eras_server(paths, &format!("conformance-server-{revision}.log"))?;
            eprintln!(
                "== interop: official suite, server --requirements {revision}, against conformance-server at {url}"
            );
            harness.args(["server", "--url", &url]);
            Some(server)
        }
        Role::Client => {
            eprintln!(
                "== interop: official suite, client --requirements {revision}, running conformance-client"
            );
            harness
                .args(["client", "--command"])
                .arg(paths.bin.join("conformance-client"));
            None
        }
    };
    harness
        .args(["--requirements", revision])
        .arg("--output-dir")
        .arg(&out_dir)
        .arg("--expected-failures")
        .arg(expected_file);
    let (status, _) = run_logged(paths, &mut harness, &log_name, SUITE_LIMIT)?;
    drop(server);
    let results = read_results(&out_dir, role)?;
    Ok(judge(
        revision,
        role,
        requirements,
        expected,
        &results,
        status.success(),
    ))
}

/// Scores one run against its frozen set and checks its expected failures.
pub(super) fn judge(
    revision: &'static str,
    role: Role,
    requirements: &Requirements,
    expected: &Expected,
    results: &BTreeMap<String, ScenarioResult>,
    suite_status_ok: bool,
) -> SetOutcome {
    let listed = expected.entries.get(&role).cloned().unwrap_or_default();
    let listed_names: BTreeSet<&str> = listed.iter().map(|(s, _)| s.as_str()).collect();
    let scored = requirements.scored(role).to_vec();
    let mut scored_passed = Vec::new();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for scenario in &scored {
        // A scored scenario that wrote no results did not pass.
        let result = results.get(scenario);
        let passed = result.is_some_and(|r| r.passed);
        let failing = result.is_none_or(|r| r.failing);
        if passed {
            scored_passed.push(scenario.clone());
        }
        match (failing, listed_names.contains(scenario.as_str())) {
            (true, false) => {
                let why =
                    result.map_or_else(|| "no results".to_owned(), |r| r.failed_checks.join(", "));
                unexpected.push(format!("{scenario} ({why})"));
            }
            (false, true) => stale.push(scenario.clone()),
            _ => {}
        }
    }
    // A listed scenario the set does not score is a stale entry too.
    for (name, _) in &listed {
        if !scored.contains(name) {
            stale.push(format!(
                "{name} (not a scored {} scenario of {revision})",
                role.name()
            ));
        }
    }
    let not_scored = requirements
        .not_scored
        .iter()
        .filter(|(_, r, _)| *r == role)
        .map(|(s, _, reason)| {
            let passed = results.get(s).is_some_and(|r| r.passed);
            (s.clone(), reason.clone(), passed)
        })
        .collect();
    let wire_violations = results
        .iter()
        .filter(|(_, r)| r.wire_valid == Some(false))
        .map(|(s, _)| s.clone())
        .collect();
    SetOutcome {
        revision,
        role,
        scored,
        scored_passed,
        expected: listed,
        unexpected,
        stale,
        not_scored,
        wire_violations,
        suite_status_ok,
        first_run: None,
    }
}

/// Reads every `checks.json` under `dir` (the suite's `--output-dir`): one folder per
/// scenario, named `[server-]<scenario>-<timestamp>`, auth scenarios under `auth/`.
pub(super) fn read_results(
    dir: &Path,
    role: Role,
) -> Result<BTreeMap<String, ScenarioResult>, String> {
    let mut found = Vec::new();
    collect_checks(dir, &mut found)?;
    let mut results = BTreeMap::new();
    for file in found {
        let folder = file
            .parent()
            .and_then(|p| p.strip_prefix(dir).ok())
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        let name = scenario_name(&folder, role);
        let checks: Value =
            serde_json::from_str(&read(&file)?).map_err(|e| format!("{}: {e}", file.display()))?;
        results.insert(name, scenario_result(&checks));
    }
    Ok(results)
}

pub(super) fn collect_checks(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            collect_checks(&path, found)?;
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            found.push(path);
        }
    }
    Ok(())
}

/// `server-tools-list-2026-11-25T07-45-14-827Z` -> `tools-list`;
/// `auth/metadata-default-2026-...Z` -> `auth/metadata-default`.
pub(super) fn scenario_name(folder: &str, role: Role) -> String {
    let mut name = folder;
    // The timestamp suffix: `-YYYY-MM-DDTHH-MM-SS-mmmZ`, 25 characters.
    if name.len() > 25 && name.ends_with('Z') {
        let (head, stamp) = name.split_at(name.len() - 25);
        let bytes = stamp.as_bytes();
        if bytes[0] == b'-' && bytes[11] == b'T' && stamp[1..5].bytes().all(|b| b.is_ascii_digit())
        {
            name = head;
        }
    }
    if role == Role::Server {
        name = name.strip_prefix("server-").unwrap_or(name);
    }
    name.to_owned()
}

pub(super) fn scenario_result(checks: &Value) -> ScenarioResult {
    let checks = checks.as_array().map(Vec::as_slice).unwrap_or_default();
    let status = |c: &Value| c["status"].as_str().unwrap_or("").to_owned();
    let successes = checks.iter().filter(|c| status(c) == "SUCCESS").count();
    let failed_checks: Vec<String> = checks
        .iter()
        .filter(|c| matches!(status(c).as_str(), "FAILURE" | "WARNING"))
        .map(|c| c["id"].as_str().unwrap_or("?").to_owned())
        .collect();
    let failures = checks.iter().filter(|c| status(c) == "FAILURE").count();
    let wire_valid = checks
        .iter()
        .find(|c| c["id"] == "wire-schema-valid")
        .map(|c| status(c) == "SUCCESS");
    ScenarioResult {
        passed: failures == 0 && successes > 0,
        failing: !failed_checks.is_empty(),
        wire_valid,
        failed_checks,
    }
}

/// Parses a frozen requirement set: `server:` and `client:` lists of scenario names and
/// `not_scored:` entries (`- scenario: X` with `leg:` and `reason:` lines). Only this
/// shape is accepted; anything else is an error, so a format change is noticed.
pub(super) fn parse_requirements(text: &str) -> Result<Requirements, String> {
    let mut req = Requirements::default();
    let mut section = "";
    for (n, raw, line) in content_lines(text) {
        let bad = || format!("requirements line {n}: unexpected {raw:?}");
        if !line.starts_with(' ') {
            section = match line.trim_end() {
                "server:" => "server",
                "client:" => "client",
                "not_scored:" => "not_scored",
                _ => return Err(bad()),
            };
            continue;
        }
        let item = line.trim();
        match section {
            "server" | "client" => {
                let name = item.strip_prefix("- ").ok_or_else(bad)?.trim().to_owned();
                if section == "server" {
                    req.server.push(name);
                } else {
                    req.client.push(name);
                }
            }
            "not_scored" => {
                if let Some(name) = item.strip_prefix("- scenario:") {
                    req.not_scored
                        .push((name.trim().to_owned(), Role::Server, String::new()));
                } else if let Some(leg) = item.strip_prefix("leg:") {
                    let entry = req.not_scored.last_mut().ok_or_else(bad)?;
                    entry.1 = match leg.trim() {
                        "server" => Role::Server,
                        "client" => Role::Client,
                        _ => return Err(bad()),
                    };
                } else if let Some(reason) = item.strip_prefix("reason:") {
                    let entry = req.not_scored.last_mut().ok_or_else(bad)?;
                    entry.2 = reason.trim().to_owned();
                }
                // `note:` and its folded continuation lines are commentary.
            }
            _ => return Err(bad()),
        }
    }
    if req.server.is_empty() && req.client.is_empty() {
        return Err("the requirement set lists no scenario".to_owned());
    }
    Ok(req)
}

/// Parses an expected-failures file: `server:`, `client:` (suite sets) or `legs:`
/// (cross-SDK) lists, each entry `- name  # issue N`.
pub(super) fn parse_expected(text: &str) -> Result<Expected, String> {
    let mut expected = Expected::default();
    let mut section = None;
    for (n, raw, line) in content_lines(text) {
        let bad = || format!("expected-failures line {n}: unexpected {raw:?}");
        if !line.starts_with(' ') {
            let (key, rest) = line.split_once(':').ok_or_else(bad)?;
            if !matches!(rest.trim(), "" | "[]") {
                return Err(bad());
            }
            section = Some(match key {
                "server" => Some(Role::Server),
                "client" => Some(Role::Client),
                "legs" => None,
                _ => return Err(bad()),
            });
            if let Some(Some(role)) = section {
                expected.entries.entry(role).or_default();
            }
            continue;
        }
        let name = line
            .trim()
            .strip_prefix("- ")
            .ok_or_else(bad)?
            .trim()
            .trim_matches('"')
            .to_owned();
        let issue = raw
            .split_once('#')
            .and_then(|(_, c)| c.trim().strip_prefix("issue "))
            .and_then(|n| {
                let digits: String = n.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            });
        match section.ok_or_else(bad)? {
            Some(role) => expected
                .entries
                .entry(role)
                .or_default()
                .push((name, issue)),
            None => expected.legs.push((name, issue)),
        }
    }
    Ok(expected)
}

/// The line without its `#` comment (a `#` inside quotes is not one; the files here
/// do not quote `#`).
/// The lines of `text` that say something: each with its number (from 1), as written
/// and without its comment.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str, &str)> {
    text.lines()
        .enumerate()
        .map(|(n, raw)| (n + 1, raw, strip_comment(raw)))
        .filter(|(_, _, line)| !line.trim().is_empty())
}

pub(super) fn strip_comment(line: &str) -> &str {
    match line.find('#') {
        Some(i) if i == 0 || line[..i].ends_with(' ') => line[..i].trim_end(),
        _ => line.trim_end(),
    }
}

// ---------------------------------------------------------------------------------------
// Cross-SDK legs
// ---------------------------------------------------------------------------------------
