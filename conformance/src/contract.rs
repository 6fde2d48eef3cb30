//! The two-way coverage contract between the manifest and the registered tests, and the
//! manifest pin. Pure data in, checks out: the harness runs it as `contract::*` trials and
//! `cargo xtask conformance` recomputes it for the report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::kind::Cell;
use crate::manifest::Manifest;
use crate::next::Next;
use crate::pin::{self, Paths, ReferenceCheck};

/// The harness self-tests: the only tests that name no requirement. Listed here, by
/// name, so the contract can tell a self-test from a test that forgot its IDs.
pub const SELF_TESTS: &[&str] = &[
    "self_test::connector_delivers_in_order_and_close_ends_stream",
    "self_test::recording_records_both_directions_in_order",
];

/// A registered test as the contract and the report see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    /// `<area>::<function>`, the trial name without the `[<transport>@<version>]` suffix.
    pub name: String,
    /// The requirement IDs it covers.
    pub ids: Vec<String>,
    /// The cells it runs in.
    pub cells: Vec<Cell>,
}

/// One rule of the contract and what it found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Check {
    /// The rule, as a trial name (`contract::<name>`).
    pub name: &'static str,
    /// Violations; the rule holds when there are none.
    pub problems: Vec<String>,
    /// Remarks that are not violations (e.g. the reference was absent).
    pub notes: Vec<String>,
}

impl Check {
    fn new(name: &'static str, problems: Vec<String>) -> Self {
        Self {
            name,
            problems,
            notes: Vec::new(),
        }
    }

    /// Whether the rule holds.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Every rule of the contract.
#[derive(Debug, Clone)]
pub struct Contract {
    /// The rules, in a fixed order.
    pub checks: Vec<Check>,
}

impl Contract {
    /// Checks the whole contract: coverage both ways and the pin. A test's IDs that only
    /// the next manifest knows are its business ([`Contract::check_next`]): left out here,
    /// and a test naming only such IDs with them.
    pub fn check(
        manifest: &Manifest,
        tests: &[Registered],
        paths: &Paths,
        ci: bool,
        next: Option<&Manifest>,
    ) -> Self {
        let only_next = |id: &str| !manifest.contains(id) && next.is_some_and(|n| n.contains(id));
        let ours: Vec<Registered> = tests
            .iter()
            .filter(|t| t.ids.is_empty() || t.ids.iter().any(|id| !only_next(id)))
            .map(|t| Registered {
                ids: t.ids.iter().filter(|id| !only_next(id)).cloned().collect(),
                ..t.clone()
            })
            .collect();
        let mut checks = coverage(manifest, &ours);
        checks.extend(pin_checks(manifest, paths, ci));
        Self { checks }
    }

    /// Checks the next manifest's contract. Its requirements not yet tested in every
    /// cell are listed as a note, not a violation, until the next reference ships;
    /// everything else holds as for the released one, plus: a test names only stated
    /// requirements, and every released ID it lacks has a fate (successor or reason).
    /// The names of tests are checked once, against both manifests, by the released
    /// contract's run and the harness.
    pub fn check_next(
        next: &Next,
        released: &Manifest,
        tests: &[Registered],
        paths: &Paths,
        ci: bool,
    ) -> Self {
        let manifest = next.manifest();
        let known: Vec<Registered> = tests
            .iter()
            .map(|t| Registered {
                ids: t
                    .ids
                    .iter()
                    .filter(|id| manifest.contains(id))
                    .cloned()
                    .collect(),
                ..t.clone()
            })
            .filter(|t| !t.ids.is_empty())
            .collect();
        let mut checks = Vec::new();
        for mut check in coverage(manifest, &known) {
            match check.name {
                "every_test_names_a_requirement" => continue,
                "every_requirement_is_tested" if !check.problems.is_empty() => {
                    check.notes.push(format!(
                        "{} requirement-cell(s) not yet covered (the next manifest's own \
                         report lists the requirements)",
                        check.problems.len()
                    ));
                    check.problems.clear();
                }
                _ => {}
            }
            checks.push(check);
        }
        let unstated: Vec<String> = known
            .iter()
            .flat_map(|t| {
                t.ids.iter().filter_map(|id| {
                    let r = manifest.get(id)?;
                    (!r.is_stated()).then(|| {
                        format!(
                            "{}: {} names {id}, which requirements-next.toml does not state \
                             yet: state it in our own words first",
                            r.id, t.name
                        )
                    })
                })
            })
            .collect();
        checks.push(Check::new("tested_requirements_are_stated", unstated));
        checks.push(Check::new(
            "gone_ids_are_mapped",
            next.mapping_problems(released),
        ));
        checks.extend(pin_checks(manifest, paths, ci));
        for note in next.notes() {
            if let Some(c) = checks.iter_mut().find(|c| c.name == "ids_match_reference") {
                c.notes.push(note.clone());
            }
        }
        Self { checks }
    }

    /// Whether every rule holds.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(Check::passed)
    }
}

/// The coverage rules, both ways.
pub fn coverage(manifest: &Manifest, tests: &[Registered]) -> Vec<Check> {
    // Keyed by the requirement's own ID: a former ID counts for the one it resolves to.
    let mut testing: BTreeMap<&str, Vec<&Registered>> = BTreeMap::new();
    for t in tests {
        for id in &t.ids {
            let own = manifest.get(id).map_or(id.as_str(), |r| r.id.as_str());
            testing.entry(own).or_default().push(t);
        }
    }
    let tested_in = |id: &str, cell: Cell| {
        testing
            .get(id)
            .is_some_and(|ts| ts.iter().any(|t| t.cells.contains(&cell)))
    };
    let untested = |id: &str, runs_in: &[Cell], applies_to: &[Cell]| {
        if runs_in.is_empty() {
            let names: Vec<String> = applies_to.iter().map(Cell::to_string).collect();
            return vec![format!(
                "{id}: applies only to {}, which the SDK lacks: defer it until one lands",
                names.join(", ")
            )];
        }
        runs_in
            .iter()
            .filter(|&&c| !tested_in(id, c))
            .map(|c| format!("{id}: no test runs in {c}"))
            .collect::<Vec<_>>()
    };

    let mut every_tested = Vec::new();
    let mut deferred_tested = Vec::new();
    let mut divergent_tested = Vec::new();
    for r in manifest.requirements() {
        if let Some(reason) = &r.deferred {
            for t in testing.get(r.id.as_str()).into_iter().flatten() {
                deferred_tested.push(format!(
                    "{}: deferred ({reason}) but {} tests it: delete the deferral",
                    r.id, t.name
                ));
            }
            continue;
        }
        let problems = untested(&r.id, r.runs_in(), r.applies_to());
        if r.is_divergent() {
            divergent_tested.extend(
                problems
                    .iter()
                    .map(|p| format!("{p} (a divergence must be pinned by a test)")),
            );
        }
        every_tested.extend(problems);
    }

    let mut names_requirement = Vec::new();
    let mut seen = BTreeMap::new();
    for t in tests {
        if seen.insert(t.name.as_str(), ()).is_some() {
            names_requirement.push(format!("{}: registered twice", t.name));
        }
        let is_self_test = SELF_TESTS.contains(&t.name.as_str());
        if t.ids.is_empty() && !is_self_test {
            names_requirement.push(format!(
                "{}: names no requirement (only the self-tests in SELF_TESTS may)",
                t.name
            ));
        }
        for id in t.ids.iter().filter(|id| !manifest.contains(id)) {
            names_requirement.push(format!("{}: unknown requirement {id:?}", t.name));
        }
        if t.cells.is_empty() {
            names_requirement.push(format!(
                "{}: runs in no cell: its requirements share no cell the SDK has",
                t.name
            ));
        }
    }
    for name in SELF_TESTS {
        if !tests.iter().any(|t| t.name == *name) {
            names_requirement.push(format!("{name}: listed in SELF_TESTS but not registered"));
        }
    }

    vec![
        Check::new("every_requirement_is_tested", every_tested),
        Check::new("no_deferred_requirement_is_tested", deferred_tested),
        Check::new("every_test_names_a_requirement", names_requirement),
        Check::new("divergent_requirements_are_tested", divergent_tested),
    ]
}

/// The pin rules: the lock matches the manifest, and the ID set matches the reference.
pub fn pin_checks(manifest: &Manifest, paths: &Paths, ci: bool) -> Vec<Check> {
    let lock = Check::new(
        "lock_matches_manifest",
        pin::check_lock(paths).err().into_iter().collect(),
    );
    let reference = match pin::check_reference(manifest, &paths.reference, ci) {
        Ok(ReferenceCheck::Matches) => Check::new("ids_match_reference", Vec::new()),
        Ok(ReferenceCheck::Absent(note)) => Check {
            notes: vec![note],
            ..Check::new("ids_match_reference", Vec::new())
        },
        Err(problems) => Check::new("ids_match_reference", problems),
    };
    vec![lock, reference]
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
spec_versions = ["2025-11-25"]
[sdk_cells]
in-memory = ["2025-11-25"]
stdio = ["2025-11-25"]

[[requirement]]
id = "a:tested"
section = "S"
source = "sdk"
behavior = "x"

[[requirement]]
id = "a:deferred"
section = "S"
source = "sdk"
behavior = "x"
deferred = "later"

[[requirement]]
id = "a:divergent"
section = "S"
source = "sdk"
behavior = "x"
divergence = "we do y"

[[requirement]]
id = "a:http-only"
section = "S"
source = "sdk"
transports = ["sse"]
behavior = "x"
"#;

    fn test(name: &str, ids: &[&str]) -> Registered {
        let m = Manifest::parse(MANIFEST).unwrap();
        Registered {
            name: name.into(),
            ids: ids.iter().map(|s| s.to_string()).collect(),
            cells: m.cells_for(ids),
        }
    }

    fn self_tests() -> Vec<Registered> {
        SELF_TESTS.iter().map(|n| test(n, &[])).collect()
    }

    fn problems(tests: &[Registered]) -> BTreeMap<&'static str, Vec<String>> {
        let m = Manifest::parse(MANIFEST).unwrap();
        coverage(&m, tests)
            .into_iter()
            .map(|c| (c.name, c.problems))
            .collect()
    }

    #[test]
    fn a_complete_registry_passes_except_for_what_is_missing() {
        let mut tests = self_tests();
        tests.push(test("a::t", &["a:tested"]));
        tests.push(test("a::d", &["a:divergent"]));
        let p = problems(&tests);
        // Only the requirement on a transport the SDK lacks (legacy SSE) is open.
        assert_eq!(p["every_requirement_is_tested"].len(), 1);
        assert!(p["every_requirement_is_tested"][0].contains("defer it"));
        assert!(p["no_deferred_requirement_is_tested"].is_empty());
        assert!(p["every_test_names_a_requirement"].is_empty());
        assert!(p["divergent_requirements_are_tested"].is_empty());
    }

    #[test]
    fn each_rule_catches_its_violation() {
        let mut tests = self_tests();
        tests.pop();
        tests.push(test("a::stale", &["a:deferred"]));
        tests.push(test("a::no_ids", &[]));
        tests.push(test("a::unknown", &["a:nope"]));
        tests.push(test("a::twice", &["a:tested"]));
        tests.push(test("a::twice", &["a:tested"]));
        let p = problems(&tests);
        let has = |rule: &str, text: &str| p[rule].iter().any(|p| p.contains(text));
        assert!(has(
            "every_requirement_is_tested",
            "a:divergent: no test runs in in-memory@2025-11-25"
        ));
        assert!(has("divergent_requirements_are_tested", "a:divergent"));
        assert!(has("no_deferred_requirement_is_tested", "a::stale"));
        assert!(has(
            "every_test_names_a_requirement",
            "a::no_ids: names no requirement"
        ));
        assert!(has(
            "every_test_names_a_requirement",
            "unknown requirement \"a:nope\""
        ));
        assert!(has(
            "every_test_names_a_requirement",
            "a::twice: registered twice"
        ));
        assert!(has("every_test_names_a_requirement", "not registered"));
    }

    #[test]
    fn a_test_whose_requirements_share_no_cell_runs_nowhere() {
        let p = problems(&[test("a::mixed", &["a:tested", "a:http-only"])]);
        assert!(
            p["every_test_names_a_requirement"]
                .iter()
                .any(|p| p.contains("runs in no cell"))
        );
    }
}
