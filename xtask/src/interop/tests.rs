//! Unit tests of the parsers and the verdict.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::legs::{Flow, LEGS, Leg};
use super::suite::{
    ScenarioResult, judge, parse_expected, parse_requirements, read, scenario_name, scenario_result,
};

use super::*;

const SET: &str = "# comment\n\nserver:\n  - tools-list\n  - caching\n\nclient:\n  - tools_call\n\nnot_scored:\n  - scenario: tasks-lifecycle\n    leg: server\n    reason: extension\n    note: >-\n      io.modelcontextprotocol/tasks; pending\n  - scenario: auth/dpop\n    leg: client\n    reason: extension\n";

#[test]
fn a_frozen_set_parses_into_scored_and_unscored_scenarios() {
    let req = parse_requirements(SET).unwrap();
    assert_eq!(req.server, ["tools-list", "caching"]);
    assert_eq!(req.client, ["tools_call"]);
    assert_eq!(
        req.not_scored,
        [
            (
                "tasks-lifecycle".to_owned(),
                Role::Server,
                "extension".to_owned()
            ),
            ("auth/dpop".to_owned(), Role::Client, "extension".to_owned()),
        ]
    );
    assert!(parse_requirements("authorization:\n  - x\n").is_err());
}

#[test]
fn scenario_folders_map_to_scenario_names() {
    assert_eq!(
        scenario_name("server-tools-list-2026-11-25T07-45-14-827Z", Role::Server),
        "tools-list"
    );
    assert_eq!(
        scenario_name(
            "server-sep-2164-resource-not-found-2026-11-25T07-45-14-827Z",
            Role::Server
        ),
        "sep-2164-resource-not-found"
    );
    assert_eq!(
        scenario_name(
            "auth/metadata-default-2026-11-25T07-45-32-263Z",
            Role::Client
        ),
        "auth/metadata-default"
    );
}

fn result(passed: bool) -> ScenarioResult {
    ScenarioResult {
        passed,
        failing: !passed,
        wire_valid: Some(true),
        failed_checks: if passed { vec![] } else { vec!["x".into()] },
    }
}

#[test]
fn judging_scores_the_set_and_enforces_the_expected_failures_both_ways() {
    let req = parse_requirements(SET).unwrap();
    let expected =
        parse_expected("server:\n  - caching  # issue 19\n  - tools-list  # issue 19\n").unwrap();
    let mut results = BTreeMap::new();
    results.insert("tools-list".to_owned(), result(true));
    results.insert("tasks-lifecycle".to_owned(), result(true));
    // `caching` wrote no results: a failure, and a listed one.
    let outcome = judge("2026-07-28", Role::Server, &req, &expected, &results, true);
    assert_eq!(outcome.scored_passed, ["tools-list"]);
    assert_eq!(outcome.stale, ["tools-list"]);
    assert!(outcome.unexpected.is_empty());
    assert_eq!(
        outcome.not_scored,
        [("tasks-lifecycle".to_owned(), "extension".to_owned(), true)]
    );
    assert!(!outcome.ok());

    let none = parse_expected("server: []\n").unwrap();
    let outcome = judge("2026-07-28", Role::Server, &req, &none, &results, true);
    assert_eq!(outcome.unexpected, ["caching (no results)"]);

    results.insert(
        "tools-list".to_owned(),
        ScenarioResult {
            wire_valid: Some(false),
            ..result(true)
        },
    );
    let outcome = judge("2026-07-28", Role::Server, &req, &none, &results, false);
    assert_eq!(outcome.wire_violations, ["tools-list"]);
    // What a failing run's digest and its rerun notice say, one line per finding.
    assert_eq!(
        outcome.findings(),
        [
            "unexpected failure: caching (no results)",
            "wire-schema-valid failed: tools-list",
            "the suite's own baseline check failed (see its log)",
        ]
    );
}

#[test]
fn a_scenario_passes_with_no_failed_check_and_at_least_one_success() {
    let r = scenario_result(&json!([
        {"id": "tools-list", "status": "SUCCESS"},
        {"id": "wire-schema-valid", "status": "SUCCESS"},
    ]));
    assert!(r.passed && !r.failing && r.wire_valid == Some(true));
    let r = scenario_result(&json!([{"id": "a", "status": "INFO"}]));
    assert!(!r.passed && !r.failing && r.wire_valid.is_none());
    let r = scenario_result(&json!([
        {"id": "a", "status": "SUCCESS"},
        {"id": "b", "status": "WARNING"},
    ]));
    assert!(r.passed && r.failing);
    assert_eq!(r.failed_checks, ["b"]);
}

/// Every committed expected-failures entry names the issue that will fix it, and
/// every leg the cross-SDK file lists exists.
#[test]
fn every_expected_failure_names_its_issue() {
    let root = crate::tidy::workspace_root();
    let paths = Paths::new(&root);
    for name in REVISIONS.iter().copied().chain(["cross-sdk"]) {
        let file = paths.expected(name);
        let expected = parse_expected(&read(&file).unwrap()).unwrap();
        let entries = expected.entries.values().flatten().chain(&expected.legs);
        for (scenario, issue) in entries {
            assert!(
                issue.is_some(),
                "{}: {scenario} names no issue",
                file.display()
            );
        }
        let ids: Vec<String> = LEGS.iter().map(Leg::id).collect();
        for (leg, _) in &expected.legs {
            assert!(ids.contains(leg), "{}: no leg {leg:?}", file.display());
        }
    }
}

#[test]
fn leg_ids_are_unique() {
    let ids: BTreeSet<String> = LEGS.iter().map(Leg::id).collect();
    assert_eq!(ids.len(), LEGS.len());
}

/// Each skills peer runs both ways, and every skills leg is one `run_skills_leg`
/// knows (the rest of the table is unchanged by the skills flow).
#[test]
fn the_skills_legs_run_both_ways_with_each_skills_peer() {
    use super::legs::{Peer, Wire};
    let skills: Vec<&Leg> = LEGS.iter().filter(|l| l.flow == Flow::Skills).collect();
    for peer in [Peer::TypeScriptV2, Peer::Rmcp] {
        for role in Role::ALL {
            assert!(
                skills.iter().any(|l| l.peer == peer && l.peer_role == role),
                "{} as {}",
                peer.name(),
                role.name()
            );
        }
    }
    for leg in &skills {
        assert!(leg.id().ends_with(", skills)"), "{}", leg.id());
        // The skills-server example and rmcp's peer are served over stdio only.
        assert!(
            leg.wire == Wire::Stdio
                || (leg.peer == Peer::TypeScriptV2 && leg.peer_role == Role::Server),
            "{}",
            leg.id()
        );
    }
    // rmcp takes part in the skills legs and runs the README's row (3) program.
    assert!(
        LEGS.iter()
            .filter(|l| l.peer == Peer::Rmcp)
            .all(|l| matches!(l.flow, Flow::Skills | Flow::Readme))
    );
}

#[test]
fn the_report_counts_the_skills_legs_beside_the_others() {
    use super::legs::{LegOutcome, Peer};
    let outcome = |id: &str, passed| LegOutcome {
        id: id.to_owned(),
        peer: Peer::Rmcp,
        passed,
        era: None,
        expected_failure: None,
        seconds: 0.1,
    };
    let legs = [
        outcome("rmcp-client -> modelctx-server (stdio, skills)", true),
        outcome("modelctx-client -> rmcp-server (stdio, skills)", false),
        outcome("python-client -> modelctx-server (http)", true),
    ];
    assert_eq!(report::legs_of(&legs, ", skills)"), (1, 2));
    let json = report::report_json(&[], &legs, None, Duration::from_secs(1));
    assert_eq!(json["skills_legs"], json!({"passed": 1, "total": 2}));
    assert_eq!(json["cross_sdk"].as_array().unwrap().len(), 3);
    assert!(json["authorization_server"].is_null());
    assert_eq!(json["ok"], false);
    let human = report::human_report(&[], &legs, None, Duration::from_secs(1));
    assert!(human.contains("2/3 legs pass"), "{human}");
    assert!(human.contains("(skills legs: 1/2)"), "{human}");
    assert!(human.contains("were not run"), "{human}");
}
