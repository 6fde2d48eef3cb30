//! The results file the harness writes and the report built from it.
//!
//! With `MODELCTX_CONFORMANCE_RESULTS=<path>` set, the harness writes one JSON object
//! per line: first every registered test (`{"kind":"test","name","ids","cells"}`), then
//! one line per finished trial (`{"kind":"run","test","cell","outcome"}`), a cell being
//! written `"<transport>@<version>"`. [`Report::build`] joins that with the manifest and
//! the contract.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::contract::{Contract, Registered};
use crate::kind::{Cell, SpecVersion, TransportKind};
use crate::manifest::{Manifest, Requirement};
use crate::services::NotRun;

/// The environment variable naming the results file.
pub const RESULTS_ENV: &str = "MODELCTX_CONFORMANCE_RESULTS";

/// How one trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It passed.
    Pass,
    /// It failed, panicked or timed out.
    Fail,
}

/// One finished trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// The test's name.
    pub test: String,
    /// The cell it ran in.
    pub cell: Cell,
    /// How it ended.
    pub outcome: Outcome,
}

/// One line of the results file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResultLine {
    /// A registered test.
    Test(Registered),
    /// A finished trial.
    Run(Run),
    /// A cell that was not run on this machine, and why.
    NotRun(NotRun),
}

/// A parsed results file.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// Every registered test.
    pub tests: Vec<Registered>,
    /// Every finished trial.
    pub runs: Vec<Run>,
    /// The cells that were not run on this machine.
    pub not_run: Vec<NotRun>,
}

impl Results {
    /// Parses a results file.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut results = Self::default();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            match serde_json::from_str(line) {
                Ok(ResultLine::Test(t)) => results.tests.push(t),
                Ok(ResultLine::Run(r)) => results.runs.push(r),
                Ok(ResultLine::NotRun(n)) => results.not_run.push(n),
                Err(e) => return Err(format!("results line {}: {e}", n + 1)),
            }
        }
        Ok(results)
    }
}

/// A requirement's standing (overall, or within one version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every cell it applies to that the SDK has passed, and there is at least one.
    Covered,
    /// Its tests pin what the SDK does instead (see its `divergence`).
    Divergent,
    /// Not tested yet (see its `deferred`).
    Deferred,
    /// None of the cells it applies to (in that version) is one the SDK has yet.
    Unserved,
    /// The cells it applies to that the SDK has were not run on this machine.
    NotRun,
    /// None of those: a run failed, or a cell the SDK has went without a run.
    Uncovered,
}

/// A requirement's result in one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunResult {
    /// At least one run, all passed.
    Pass,
    /// At least one run failed.
    Fail,
    /// The SDK has the cell, but no run named the requirement there.
    Missing,
    /// The SDK does not have this cell yet (transport or version not built).
    Unserved,
    /// The SDK has the cell, but it was not run on this machine (see the summary's
    /// `cells_not_run`).
    NotRun,
}

/// One requirement in the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct RequirementReport {
    /// Its ID.
    pub id: String,
    /// Its standing over every cell the SDK has.
    pub status: Status,
    /// Its standing per version it exists in.
    pub by_version: BTreeMap<SpecVersion, Status>,
    /// The cells it applies to.
    pub applies_to: Vec<Cell>,
    /// Its result per cell it applies to, keyed `"<transport>@<version>"`.
    pub results: BTreeMap<Cell, RunResult>,
}

/// Totals over a set of requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Requirements counted.
    pub total: usize,
    /// Covered.
    pub covered: usize,
    /// Divergent.
    pub divergent: usize,
    /// Deferred.
    pub deferred: usize,
    /// Applying only to cells the SDK does not have yet.
    pub unserved: usize,
    /// Applying only to cells that were not run on this machine.
    pub not_run: usize,
    /// Neither (a failure or a missing run).
    pub open: usize,
}

impl Totals {
    fn add(&mut self, status: Status) {
        self.total += 1;
        match status {
            Status::Covered => self.covered += 1,
            Status::Divergent => self.divergent += 1,
            Status::Deferred => self.deferred += 1,
            Status::Unserved => self.unserved += 1,
            Status::NotRun => self.not_run += 1,
            Status::Uncovered => self.open += 1,
        }
    }
}

/// The totals of the JSON report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Requirements in the manifest.
    pub total: usize,
    /// Covered requirements.
    pub covered: usize,
    /// Divergent requirements.
    pub divergent: usize,
    /// Deferred requirements.
    pub deferred: usize,
    /// Trials that passed (self-tests included).
    pub runs_passed: usize,
    /// Trials that failed (self-tests included).
    pub runs_failed: usize,
    /// Per version: the requirements that exist in it, by their standing there.
    pub by_version: BTreeMap<SpecVersion, Totals>,
    /// Per cell that ran: trials passed and failed.
    pub runs_by_cell: BTreeMap<Cell, (usize, usize)>,
    /// The cells the SDK has that were not run on this machine, with why and the command
    /// that makes them run. A requirement's standing is over the cells that ran.
    pub cells_not_run: Vec<NotRun>,
}

/// The machine-readable report (`cargo xtask conformance --json PATH`).
#[derive(Debug, Clone, Serialize)]
pub struct JsonReport {
    /// Which manifest: the released one, or the next one.
    pub manifest: String,
    /// The sha256 of the manifest file (`requirements.toml`, `requirements-next.toml`).
    pub manifest_sha256: String,
    /// The era axis, oldest first.
    pub spec_versions: Vec<SpecVersion>,
    /// The transports the SDK has (in at least one version).
    pub transports: Vec<TransportKind>,
    /// The cells the SDK has: the matrix that ran.
    pub cells: Vec<Cell>,
    /// Every requirement, in manifest order.
    pub requirements: Vec<RequirementReport>,
    /// The totals.
    pub summary: Summary,
    /// The requirements neither covered, divergent nor deferred (a failed or missing
    /// run), in manifest order: the next manifest's work list.
    pub not_yet_covered: Vec<String>,
    /// The next manifest's report beside the released one's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Box<JsonReport>>,
}

/// The conformance report: the JSON form, the per-version tables and the contract.
#[derive(Debug)]
pub struct Report {
    json: JsonReport,
    sections: Vec<(String, Vec<usize>)>,
    contract: Contract,
    next: Option<Box<Report>>,
}

impl Report {
    /// Joins the manifest (named `title`), its hash, the harness results and the
    /// contract.
    pub fn build(
        title: &str,
        manifest: &Manifest,
        manifest_sha256: String,
        results: &Results,
        contract: Contract,
    ) -> Self {
        // A test's IDs as this manifest's own (a former ID counts for its successor).
        let ids_of: BTreeMap<&str, Vec<&str>> = results
            .tests
            .iter()
            .map(|t| {
                let own = t
                    .ids
                    .iter()
                    .filter_map(|id| manifest.get(id).map(|r| r.id.as_str()))
                    .collect();
                (t.name.as_str(), own)
            })
            .collect();
        // (requirement, cell) -> outcomes of the runs that named it.
        let mut outcomes: BTreeMap<(&str, Cell), Vec<Outcome>> = BTreeMap::new();
        let mut summary = Summary::default();
        let skipped = |c: Cell| results.not_run.iter().any(|n| n.cell == c);
        for &c in manifest.sdk_cells() {
            if !skipped(c) {
                summary.runs_by_cell.insert(c, (0, 0));
            }
        }
        summary.cells_not_run = results.not_run.clone();
        for run in &results.runs {
            let counts = summary.runs_by_cell.entry(run.cell).or_insert((0, 0));
            match run.outcome {
                Outcome::Pass => counts.0 += 1,
                Outcome::Fail => counts.1 += 1,
            }
            for &id in ids_of.get(run.test.as_str()).into_iter().flatten() {
                outcomes
                    .entry((id, run.cell))
                    .or_default()
                    .push(run.outcome);
            }
        }
        summary.runs_passed = summary.runs_by_cell.values().map(|c| c.0).sum();
        summary.runs_failed = summary.runs_by_cell.values().map(|c| c.1).sum();

        let mut requirements = Vec::new();
        let mut sections: Vec<(String, Vec<usize>)> = Vec::new();
        for r in manifest.requirements() {
            let results: BTreeMap<Cell, RunResult> = r
                .applies_to()
                .iter()
                .map(|&c| {
                    let result = if !r.runs_in().contains(&c) {
                        RunResult::Unserved
                    } else if skipped(c) {
                        RunResult::NotRun
                    } else {
                        match outcomes.get(&(r.id.as_str(), c)) {
                            None => RunResult::Missing,
                            Some(o) if o.contains(&Outcome::Fail) => RunResult::Fail,
                            Some(_) => RunResult::Pass,
                        }
                    };
                    (c, result)
                })
                .collect();
            let status = status_of(r, results.values().copied());
            match status {
                Status::Covered => summary.covered += 1,
                Status::Divergent => summary.divergent += 1,
                Status::Deferred => summary.deferred += 1,
                Status::Unserved | Status::NotRun | Status::Uncovered => {}
            }
            let mut by_version = BTreeMap::new();
            for &v in manifest.spec_versions() {
                let mut in_version = results
                    .iter()
                    .filter(|(c, _)| c.version == v)
                    .map(|(_, &res)| res)
                    .peekable();
                if in_version.peek().is_some() {
                    let s = status_of(r, in_version);
                    summary.by_version.entry(v).or_default().add(s);
                    by_version.insert(v, s);
                }
            }
            match sections.iter_mut().find(|(s, _)| *s == r.section) {
                Some((_, members)) => members.push(requirements.len()),
                None => sections.push((r.section.clone(), vec![requirements.len()])),
            }
            requirements.push(RequirementReport {
                id: r.id.clone(),
                status,
                by_version,
                applies_to: r.applies_to().to_vec(),
                results,
            });
        }
        summary.total = requirements.len();
        let mut transports: Vec<TransportKind> =
            manifest.sdk_cells().iter().map(|c| c.transport).collect();
        transports.dedup();
        let not_yet_covered = requirements
            .iter()
            .filter(|r| matches!(r.status, Status::Uncovered | Status::Unserved))
            .map(|r| r.id.clone())
            .collect();
        Self {
            json: JsonReport {
                manifest: title.to_owned(),
                manifest_sha256,
                spec_versions: manifest.spec_versions().to_vec(),
                transports,
                cells: manifest.sdk_cells().to_vec(),
                requirements,
                summary,
                not_yet_covered,
                next: None,
            },
            sections,
            contract,
            next: None,
        }
    }

    /// Adds the next manifest's report: rendered after this one, in the JSON under
    /// `next`, and its contract violations fail the run (its requirements not yet
    /// covered do not).
    pub fn with_next(mut self, next: Report) -> Self {
        self.json.next = Some(Box::new(next.json.clone()));
        self.next = Some(Box::new(next));
        self
    }

    /// The machine-readable report.
    pub fn json(&self) -> &JsonReport {
        &self.json
    }

    /// The JSON report as pretty-printed text.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(&self.json)
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The contract as checked.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// Whether every run passed and the contract holds (the next manifest's too).
    pub fn passed(&self) -> bool {
        self.json.summary.runs_failed == 0
            && self.contract.passed()
            && self.next.as_ref().is_none_or(|n| n.contract.passed())
    }

    /// One table per version: a row per section with the requirements that exist in
    /// that version by standing, then per transport `pass/fail` where the SDK has the
    /// cell, or `-(N)` where it does not yet (N requirements apply there).
    fn render_version(&self, version: SpecVersion, out: &mut String) {
        let transports: Vec<TransportKind> = TransportKind::ALL
            .into_iter()
            .filter(|&t| {
                self.json
                    .requirements
                    .iter()
                    .any(|r| r.results.contains_key(&Cell::new(t, version)))
            })
            .collect();
        let mut header: Vec<String> = [
            "section",
            "total",
            "covered",
            "divergent",
            "deferred",
            "unserved",
            "not run",
            "open",
        ]
        .map(String::from)
        .to_vec();
        header.extend(transports.iter().map(|k| k.to_string()));
        let mut rows = vec![header];
        let mut row_for = |name: &str, members: &[&RequirementReport]| {
            let mut totals = Totals::default();
            for r in members {
                if let Some(&s) = r.by_version.get(&version) {
                    totals.add(s);
                }
            }
            if totals.total == 0 {
                return;
            }
            let mut row = vec![
                name.to_owned(),
                totals.total.to_string(),
                totals.covered.to_string(),
                totals.divergent.to_string(),
                totals.deferred.to_string(),
                totals.unserved.to_string(),
                totals.not_run.to_string(),
                totals.open.to_string(),
            ];
            for &t in &transports {
                let cell = Cell::new(t, version);
                let with = |res: RunResult| {
                    members
                        .iter()
                        .filter(|r| r.results.get(&cell) == Some(&res))
                        .count()
                };
                if self
                    .json
                    .summary
                    .cells_not_run
                    .iter()
                    .any(|n| n.cell == cell)
                {
                    row.push("not run".to_owned());
                } else if self.json.cells.contains(&cell) {
                    row.push(format!(
                        "{}/{}",
                        with(RunResult::Pass),
                        with(RunResult::Fail)
                    ));
                } else {
                    row.push(format!("-({})", with(RunResult::Unserved)));
                }
            }
            rows.push(row);
        };
        for (section, members) in &self.sections {
            let members: Vec<_> = members
                .iter()
                .map(|&i| &self.json.requirements[i])
                .collect();
            row_for(section, &members);
        }
        let all: Vec<_> = self.json.requirements.iter().collect();
        row_for("TOTAL", &all);

        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let served: Vec<String> = self
            .json
            .cells
            .iter()
            .filter(|c| c.version == version)
            .map(|c| c.transport.to_string())
            .collect();
        let _ = writeln!(
            out,
            "spec {version}: SDK cells {}  (transport columns: requirements passed/failed \
             there; -(N): the SDK lacks the cell, N requirements apply)\n",
            if served.is_empty() {
                "none yet".to_owned()
            } else {
                served.join(", ")
            }
        );
        let last = rows.len() - 1;
        for (i, row) in rows.iter().enumerate() {
            if i == last {
                let _ = writeln!(
                    out,
                    "{}",
                    "-".repeat(widths.iter().sum::<usize>() + 2 * widths.len())
                );
            }
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(c, (cell, &w))| {
                    if c == 0 {
                        format!("{cell:<w$}")
                    } else {
                        format!("{cell:>w$}")
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        out.push('\n');
    }

    /// The human-readable report: a table per version, the totals, the contract; then
    /// the next manifest's, when there is one.
    pub fn render(&self) -> String {
        let mut out = format!(
            "conformance report: {}: manifest sha256 {}\n\n",
            self.json.manifest, self.json.manifest_sha256
        );
        for &v in &self.json.spec_versions {
            self.render_version(v, &mut out);
        }
        let s = &self.json.summary;
        let _ = writeln!(
            out,
            "requirements: {} in all; {} covered, {} divergent, {} deferred \
             (covered = passed in every cell that ran)",
            s.total, s.covered, s.divergent, s.deferred
        );
        let ran: Vec<String> = s.runs_by_cell.keys().map(Cell::to_string).collect();
        let _ = writeln!(
            out,
            "cells run: {} of {}: {}",
            ran.len(),
            self.json.cells.len(),
            ran.join(", ")
        );
        for n in &s.cells_not_run {
            let _ = writeln!(
                out,
                "cell NOT RUN: {}: {}; to run it: {}",
                n.cell, n.reason, n.enable
            );
        }
        let per: Vec<String> = s
            .runs_by_cell
            .iter()
            .map(|(c, (p, f))| format!("{c}: {p} passed, {f} failed"))
            .collect();
        let _ = writeln!(out, "runs by cell: {}", per.join("; "));
        let _ = writeln!(
            out,
            "runs: {} passed, {} failed",
            s.runs_passed, s.runs_failed
        );
        self.contract.render("contract", &mut out);
        if let Some(next) = &self.next {
            next.render_next(&mut out);
        }
        let verdict = if self.passed() { "PASSED" } else { "FAILED" };
        match s.cells_not_run.len() {
            0 => {
                let _ = writeln!(out, "\nconformance: {verdict}");
            }
            n => {
                let _ = writeln!(
                    out,
                    "\nconformance: {verdict} in the {} cells that ran ({n} not run: see above)",
                    ran.len()
                );
            }
        }
        out
    }

    /// The next manifest's part: its tables, totals, what is not yet covered (listed by
    /// section) and its contract. The runs are the released report's: the same trials.
    fn render_next(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n== next manifest: {}: sha256 {}\n",
            self.json.manifest, self.json.manifest_sha256
        );
        for &v in &self.json.spec_versions {
            self.render_version(v, out);
        }
        let s = &self.json.summary;
        let open = &self.json.not_yet_covered;
        let _ = writeln!(
            out,
            "next requirements: {} in all; {} covered, {} divergent, {} deferred, {} not yet \
             covered (reported, not failing, until the next manifest is released)",
            s.total,
            s.covered,
            s.divergent,
            s.deferred,
            open.len()
        );
        if !open.is_empty() {
            let _ = writeln!(out, "not yet covered ({}), by section:", open.len());
            for (section, members) in &self.sections {
                let ids: Vec<&str> = members
                    .iter()
                    .map(|&i| &self.json.requirements[i])
                    .filter(|r| open.contains(&r.id))
                    .map(|r| r.id.as_str())
                    .collect();
                if !ids.is_empty() {
                    let _ = writeln!(out, "  {section} ({}): {}", ids.len(), ids.join(", "));
                }
            }
        }
        self.contract.render("contract (next)", out);
    }
}

impl Contract {
    fn render(&self, title: &str, out: &mut String) {
        let _ = writeln!(out, "\n{title}:");
        for check in &self.checks {
            let verdict = if check.passed() { "ok" } else { "FAILED" };
            let _ = writeln!(out, "  {:<36} {verdict}", check.name);
            for note in &check.notes {
                let _ = writeln!(out, "      note: {note}");
            }
            const SHOWN: usize = 20;
            for p in check.problems.iter().take(SHOWN) {
                let _ = writeln!(out, "      - {p}");
            }
            if check.problems.len() > SHOWN {
                let _ = writeln!(out, "      ... and {} more", check.problems.len() - SHOWN);
            }
        }
    }
}

fn status_of(r: &Requirement, results: impl Iterator<Item = RunResult>) -> Status {
    if r.is_deferred() {
        return Status::Deferred;
    }
    if r.is_divergent() {
        return Status::Divergent;
    }
    let mut not_run = false;
    let served: Vec<RunResult> = results
        .filter(|&x| {
            not_run |= x == RunResult::NotRun;
            !matches!(x, RunResult::Unserved | RunResult::NotRun)
        })
        .collect();
    if served.is_empty() {
        if not_run {
            Status::NotRun
        } else {
            Status::Unserved
        }
    } else if served.iter().all(|&x| x == RunResult::Pass) {
        Status::Covered
    } else {
        Status::Uncovered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Check;

    const MANIFEST: &str = r#"
spec_versions = ["2025-11-25", "2026-07-28"]
[sdk_cells]
in-memory = ["2025-11-25"]
stdio = ["2025-11-25"]

[[requirement]]
id = "a:one"
section = "Alpha"
source = "sdk"
transports = ["stdio"]
behavior = "x"

[[requirement]]
id = "a:two"
section = "Alpha"
source = "sdk"
transports = ["stdio"]
removed_in = "2026-07-28"
behavior = "x"

[[requirement]]
id = "b:http"
section = "Beta"
source = "sdk"
transports = ["streamable-http"]
behavior = "x"
deferred = "no HTTP yet"
"#;

    /// Both tests run in stdio@2025-11-25; `a::two` fails there.
    fn results() -> Results {
        let lines = [
            r#"{"kind":"test","name":"a::one","ids":["a:one"],"cells":["stdio@2025-11-25"]}"#,
            r#"{"kind":"test","name":"a::two","ids":["a:two"],"cells":["stdio@2025-11-25"]}"#,
            r#"{"kind":"run","test":"a::one","cell":"stdio@2025-11-25","outcome":"pass"}"#,
            r#"{"kind":"run","test":"a::two","cell":"stdio@2025-11-25","outcome":"fail"}"#,
        ];
        Results::parse(&lines.join("\n")).unwrap()
    }

    #[test]
    fn the_json_report_has_the_agreed_shape() {
        let m = Manifest::parse(MANIFEST).unwrap();
        let contract = Contract { checks: Vec::new() };
        let report = Report::build("test", &m, "abc".into(), &results(), contract);
        let json: serde_json::Value = serde_json::from_str(&report.to_json_string()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "manifest": "test",
                "manifest_sha256": "abc",
                "spec_versions": ["2025-11-25", "2026-07-28"],
                "transports": ["in-memory", "stdio"],
                "cells": ["in-memory@2025-11-25", "stdio@2025-11-25"],
                "requirements": [
                    {"id": "a:one", "status": "covered",
                     "by_version": {"2025-11-25": "covered", "2026-07-28": "unserved"},
                     "applies_to": ["stdio@2025-11-25", "stdio@2026-07-28"],
                     "results": {"stdio@2025-11-25": "pass", "stdio@2026-07-28": "unserved"}},
                    {"id": "a:two", "status": "uncovered",
                     "by_version": {"2025-11-25": "uncovered"},
                     "applies_to": ["stdio@2025-11-25"],
                     "results": {"stdio@2025-11-25": "fail"}},
                    {"id": "b:http", "status": "deferred",
                     "by_version": {"2025-11-25": "deferred", "2026-07-28": "deferred"},
                     "applies_to": ["streamable-http@2025-11-25", "streamable-http@2026-07-28",
                                    "streamable-http-shared@2025-11-25",
                                    "streamable-http-nginx@2025-11-25",
                                    "streamable-http-nginx@2026-07-28",
                                    "streamable-http-haproxy@2025-11-25",
                                    "streamable-http-haproxy@2026-07-28"],
                     "results": {"streamable-http@2025-11-25": "unserved",
                                 "streamable-http@2026-07-28": "unserved",
                                 "streamable-http-shared@2025-11-25": "unserved",
                                 "streamable-http-nginx@2025-11-25": "unserved",
                                 "streamable-http-nginx@2026-07-28": "unserved",
                                 "streamable-http-haproxy@2025-11-25": "unserved",
                                 "streamable-http-haproxy@2026-07-28": "unserved"}},
                ],
                "summary": {
                    "total": 3, "covered": 1, "divergent": 0, "deferred": 1,
                    "runs_passed": 1, "runs_failed": 1,
                    "by_version": {
                        "2025-11-25": {"total": 3, "covered": 1, "divergent": 0, "deferred": 1,
                                       "unserved": 0, "not_run": 0, "open": 1},
                        "2026-07-28": {"total": 2, "covered": 0, "divergent": 0, "deferred": 1,
                                       "unserved": 1, "not_run": 0, "open": 0},
                    },
                    "runs_by_cell": {"in-memory@2025-11-25": [0, 0], "stdio@2025-11-25": [1, 1]},
                    "cells_not_run": [],
                },
                "not_yet_covered": ["a:two"],
            })
        );
        assert!(!report.passed());
    }

    #[test]
    fn there_is_a_table_per_version_with_a_row_per_section_and_the_contract() {
        let m = Manifest::parse(MANIFEST).unwrap();
        let contract = Contract {
            checks: vec![Check {
                name: "lock_matches_manifest",
                problems: vec!["stale".into()],
                notes: Vec::new(),
            }],
        };
        let text = Report::build("test", &m, "abc".into(), &results(), contract).render();
        for expected in [
            "spec 2025-11-25: SDK cells in-memory, stdio",
            "spec 2026-07-28: SDK cells none yet",
            "Alpha",
            "Beta",
            "-(1)",
            "runs: 1 passed, 1 failed",
            "lock_matches_manifest",
            "- stale",
            "conformance: FAILED",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }

    #[test]
    fn a_cell_not_run_is_shown_as_such_and_counted_neither_passed_nor_failed() {
        let m = Manifest::parse(MANIFEST).unwrap();
        let lines = [
            r#"{"kind":"test","name":"a::one","ids":["a:one"],"cells":["stdio@2025-11-25"]}"#,
            r#"{"kind":"not_run","cell":"stdio@2025-11-25","reason":"no stdio here","enable":"get one"}"#,
        ];
        let results = Results::parse(&lines.join("\n")).unwrap();
        let report = Report::build(
            "test",
            &m,
            "abc".into(),
            &results,
            Contract { checks: Vec::new() },
        );
        let json = report.json();
        let one = &json.requirements[0];
        assert_eq!(one.status, Status::NotRun);
        assert_eq!(
            one.results.get(&Cell::parse("stdio@2025-11-25").unwrap()),
            Some(&RunResult::NotRun)
        );
        assert_eq!(json.summary.covered, 0);
        assert_eq!(json.summary.runs_failed, 0);
        assert_eq!(
            json.summary.by_version[&SpecVersion::V2025_11_25].not_run,
            2
        );
        assert!(!json.summary.runs_by_cell.contains_key(&one.applies_to[0]));
        assert!(report.passed());
        let text = report.render();
        for expected in [
            "not run",
            "cells run: 1 of 2: in-memory@2025-11-25",
            "cell NOT RUN: stdio@2025-11-25: no stdio here; to run it: get one",
            "conformance: PASSED in the 1 cells that ran (1 not run: see above)",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }

    #[test]
    fn a_bad_results_line_is_reported() {
        assert!(Results::parse("{\"kind\":\"nope\"}").is_err());
    }
}
