//! The results file the harness writes and the report built from it.
//!
//! With `MODELCTX_CONFORMANCE_RESULTS=<path>` set, the harness writes one JSON object
//! per line: first every registered test (`{"kind":"test","name","ids","transports"}`),
//! then one line per finished trial (`{"kind":"run","test","transport","outcome"}`).
//! [`Report::build`] joins that with the manifest and the contract.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::contract::{Contract, Registered};
use crate::kind::TransportKind;
use crate::manifest::{Manifest, Requirement};

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
    /// The transport it ran on.
    pub transport: TransportKind,
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
}

/// A parsed results file.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// Every registered test.
    pub tests: Vec<Registered>,
    /// Every finished trial.
    pub runs: Vec<Run>,
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
                Err(e) => return Err(format!("results line {}: {e}", n + 1)),
            }
        }
        Ok(results)
    }
}

/// A requirement's standing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every transport it applies to has a passing run.
    Covered,
    /// Its tests pin what the SDK does instead (see its `divergence`).
    Divergent,
    /// Not tested yet (see its `deferred`).
    Deferred,
    /// Neither: a run failed, or a transport it applies to has no run (yet).
    Uncovered,
}

/// A requirement's result on one transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunResult {
    /// At least one run, all passed.
    Pass,
    /// At least one run failed.
    Fail,
    /// No run.
    Missing,
}

/// One requirement in the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct RequirementReport {
    /// Its ID.
    pub id: String,
    /// Its standing.
    pub status: Status,
    /// The transports it applies to.
    pub applies_to: Vec<TransportKind>,
    /// Its result per transport it applies to.
    pub results: BTreeMap<TransportKind, RunResult>,
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
}

/// The machine-readable report (`cargo xtask conformance --json PATH`).
#[derive(Debug, Clone, Serialize)]
pub struct JsonReport {
    /// The sha256 of `requirements.toml`.
    pub manifest_sha256: String,
    /// The spec revision the manifest describes.
    pub spec_revision: String,
    /// The transports the SDK has (the matrix).
    pub transports: Vec<TransportKind>,
    /// Every requirement, in manifest order.
    pub requirements: Vec<RequirementReport>,
    /// The totals.
    pub summary: Summary,
}

/// The conformance report: the JSON form, the per-section table and the contract.
#[derive(Debug)]
pub struct Report {
    json: JsonReport,
    sections: Vec<(String, Vec<usize>)>,
    runs_by_transport: BTreeMap<TransportKind, (usize, usize)>,
    contract: Contract,
}

impl Report {
    /// Joins the manifest, its hash, the harness results and the contract.
    pub fn build(
        manifest: &Manifest,
        manifest_sha256: String,
        results: &Results,
        contract: Contract,
    ) -> Self {
        let ids_of: BTreeMap<&str, &[String]> = results
            .tests
            .iter()
            .map(|t| (t.name.as_str(), t.ids.as_slice()))
            .collect();
        // (requirement, transport) -> outcomes of the runs that named it.
        let mut outcomes: BTreeMap<(&str, TransportKind), Vec<Outcome>> = BTreeMap::new();
        let mut runs_by_transport = BTreeMap::new();
        for &k in TransportKind::SDK {
            runs_by_transport.insert(k, (0, 0));
        }
        let mut summary = Summary::default();
        for run in &results.runs {
            let counts = runs_by_transport.entry(run.transport).or_insert((0, 0));
            match run.outcome {
                Outcome::Pass => {
                    summary.runs_passed += 1;
                    counts.0 += 1;
                }
                Outcome::Fail => {
                    summary.runs_failed += 1;
                    counts.1 += 1;
                }
            }
            for id in ids_of.get(run.test.as_str()).copied().unwrap_or_default() {
                outcomes
                    .entry((id.as_str(), run.transport))
                    .or_default()
                    .push(run.outcome);
            }
        }

        let mut requirements = Vec::new();
        let mut sections: Vec<(String, Vec<usize>)> = Vec::new();
        for r in manifest.requirements() {
            let applies_to = r.applies_to();
            let results: BTreeMap<_, _> = applies_to
                .iter()
                .map(|&k| {
                    let result = match outcomes.get(&(r.id.as_str(), k)) {
                        None => RunResult::Missing,
                        Some(o) if o.contains(&Outcome::Fail) => RunResult::Fail,
                        Some(_) => RunResult::Pass,
                    };
                    (k, result)
                })
                .collect();
            let status = status_of(r, &results);
            match status {
                Status::Covered => summary.covered += 1,
                Status::Divergent => summary.divergent += 1,
                Status::Deferred => summary.deferred += 1,
                Status::Uncovered => {}
            }
            match sections.iter_mut().find(|(s, _)| *s == r.section) {
                Some((_, members)) => members.push(requirements.len()),
                None => sections.push((r.section.clone(), vec![requirements.len()])),
            }
            requirements.push(RequirementReport {
                id: r.id.clone(),
                status,
                applies_to,
                results,
            });
        }
        summary.total = requirements.len();
        Self {
            json: JsonReport {
                manifest_sha256,
                spec_revision: manifest.spec_revision().to_owned(),
                transports: TransportKind::SDK.to_vec(),
                requirements,
                summary,
            },
            sections,
            runs_by_transport,
            contract,
        }
    }

    /// The machine-readable form.
    pub fn json(&self) -> &JsonReport {
        &self.json
    }

    /// The machine-readable form as pretty JSON.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(&self.json).unwrap_or_default() + "\n"
    }

    /// The contract it was built with.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// Whether every run passed and the contract holds.
    pub fn passed(&self) -> bool {
        self.json.summary.runs_failed == 0 && self.contract.passed()
    }

    /// The human-readable report: a table per section, the run totals, the contract.
    pub fn render(&self) -> String {
        let transports = &self.json.transports;
        let mut header: Vec<String> = [
            "section",
            "total",
            "covered",
            "divergent",
            "deferred",
            "open",
        ]
        .map(String::from)
        .to_vec();
        header.extend(transports.iter().map(|k| format!("{k} pass/fail")));
        let mut rows = vec![header];
        let mut row_for = |name: &str, members: &[&RequirementReport]| {
            let count = |s: Status| members.iter().filter(|r| r.status == s).count();
            let mut row = vec![
                name.to_owned(),
                members.len().to_string(),
                count(Status::Covered).to_string(),
                count(Status::Divergent).to_string(),
                count(Status::Deferred).to_string(),
                count(Status::Uncovered).to_string(),
            ];
            for k in transports {
                let with = |res: RunResult| {
                    members
                        .iter()
                        .filter(|r| r.results.get(k) == Some(&res))
                        .count()
                };
                row.push(format!(
                    "{}/{}",
                    with(RunResult::Pass),
                    with(RunResult::Fail)
                ));
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
        let mut out = format!(
            "conformance report: spec {}, manifest sha256 {}\n\n",
            self.json.spec_revision, self.json.manifest_sha256
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
        let s = &self.json.summary;
        let per: Vec<String> = self
            .runs_by_transport
            .iter()
            .map(|(k, (p, f))| format!("{k}: {p} passed, {f} failed"))
            .collect();
        let _ = writeln!(out, "\nruns by transport: {}", per.join("; "));
        let _ = writeln!(
            out,
            "runs: {} passed, {} failed",
            s.runs_passed, s.runs_failed
        );
        let _ = writeln!(out, "\ncontract:");
        for check in &self.contract.checks {
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
        let verdict = if self.passed() { "PASSED" } else { "FAILED" };
        let _ = writeln!(out, "\nconformance: {verdict}");
        out
    }
}

fn status_of(r: &Requirement, results: &BTreeMap<TransportKind, RunResult>) -> Status {
    if r.is_deferred() {
        Status::Deferred
    } else if r.is_divergent() {
        Status::Divergent
    } else if !results.is_empty() && results.values().all(|&x| x == RunResult::Pass) {
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
[[requirement]]
id = "a:one"
section = "Alpha"
source = "sdk"
behavior = "x"

[[requirement]]
id = "a:two"
section = "Alpha"
source = "sdk"
behavior = "x"

[[requirement]]
id = "b:http"
section = "Beta"
source = "sdk"
transports = ["streamable-http"]
behavior = "x"
deferred = "no HTTP yet"
"#;

    /// Both tests run on every SDK transport; `a::two` fails on in-memory only.
    fn results() -> Results {
        let sdk: Vec<&str> = TransportKind::SDK.iter().map(|k| k.name()).collect();
        let mut lines = vec![
            format!(r#"{{"kind":"test","name":"a::one","ids":["a:one"],"transports":{sdk:?}}}"#),
            format!(r#"{{"kind":"test","name":"a::two","ids":["a:two"],"transports":{sdk:?}}}"#),
        ];
        for k in &sdk {
            let two = if *k == "in-memory" { "fail" } else { "pass" };
            lines.push(format!(
                r#"{{"kind":"run","test":"a::one","transport":"{k}","outcome":"pass"}}"#
            ));
            lines.push(format!(
                r#"{{"kind":"run","test":"a::two","transport":"{k}","outcome":"{two}"}}"#
            ));
        }
        Results::parse(&lines.join("\n")).unwrap()
    }

    #[test]
    fn the_json_report_has_the_agreed_shape() {
        let m = Manifest::parse(MANIFEST).unwrap();
        let contract = Contract { checks: Vec::new() };
        let report = Report::build(&m, "abc".into(), &results(), contract);
        let json: serde_json::Value = serde_json::from_str(&report.to_json_string()).unwrap();
        let sdk: Vec<&str> = TransportKind::SDK.iter().map(|k| k.name()).collect();
        let one: serde_json::Map<_, _> =
            sdk.iter().map(|k| (k.to_string(), "pass".into())).collect();
        let mut two = one.clone();
        two.insert("in-memory".into(), "fail".into());
        assert_eq!(
            json,
            serde_json::json!({
                "manifest_sha256": "abc",
                "spec_revision": "2025-11-25",
                "transports": sdk,
                "requirements": [
                    {"id": "a:one", "status": "covered", "applies_to": sdk, "results": one},
                    {"id": "a:two", "status": "uncovered", "applies_to": sdk, "results": two},
                    {"id": "b:http", "status": "deferred", "applies_to": ["streamable-http"],
                     "results": {"streamable-http": "missing"}},
                ],
                "summary": {"total": 3, "covered": 1, "divergent": 0, "deferred": 1,
                            "runs_passed": 2 * sdk.len() - 1, "runs_failed": 1},
            })
        );
        assert!(!report.passed());
    }

    #[test]
    fn the_table_has_a_row_per_section_and_the_contract() {
        let m = Manifest::parse(MANIFEST).unwrap();
        let contract = Contract {
            checks: vec![Check {
                name: "lock_matches_manifest",
                problems: vec!["stale".into()],
                notes: Vec::new(),
            }],
        };
        let text = Report::build(&m, "abc".into(), &results(), contract).render();
        assert!(text.contains("Alpha"), "{text}");
        assert!(text.contains("Beta"), "{text}");
        assert!(text.contains("in-memory pass/fail"), "{text}");
        let passed = 2 * TransportKind::SDK.len() - 1;
        assert!(
            text.contains(&format!("runs: {passed} passed, 1 failed")),
            "{text}"
        );
        assert!(text.contains("lock_matches_manifest"), "{text}");
        assert!(text.contains("- stale"), "{text}");
        assert!(text.contains("conformance: FAILED"), "{text}");
    }

    #[test]
    fn a_bad_results_line_is_reported() {
        assert!(Results::parse("{\"kind\":\"nope\"}").is_err());
    }
}
