//! The summary: tier scores as the suite counts them, the human report and `--json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::authorization::AuthorizationOutcome;
use super::legs::LegOutcome;
use super::suite::SetOutcome;
use super::{Role, SUITE_PACKAGE, SUITE_VERSION};

/// What the id of a skills leg contains (`Leg::id`).
const SKILLS_FLOW: &str = ", skills)";

/// `(passed, total)` over every frozen set for one role: the tier score.
pub(super) fn tier(sets: &[SetOutcome], role: Role) -> (usize, usize) {
    sets.iter()
        .filter(|s| s.role == role)
        .fold((0, 0), |(p, t), s| {
            (p + s.scored_passed.len(), t + s.scored.len())
        })
}

/// `(passed, total)` of unscored runs with `reason == "extension"` (or any other).
pub(super) fn unscored(sets: &[SetOutcome], extension: bool) -> (usize, usize) {
    sets.iter()
        .flat_map(|s| &s.not_scored)
        .filter(|(_, reason, _)| (reason == "extension") == extension)
        .fold((0, 0), |(p, t), (_, _, passed)| {
            (p + usize::from(*passed), t + 1)
        })
}

/// `(passed, total)` of the legs whose name contains `flow` (`", skills"`).
pub(super) fn legs_of(legs: &[LegOutcome], flow: &str) -> (usize, usize) {
    legs.iter()
        .filter(|l| l.id.contains(flow))
        .fold((0, 0), |(p, t), l| (p + usize::from(l.passed), t + 1))
}

/// The authorization scenarios were run, or only some legs (`--legs`).
pub(super) fn report_json(
    sets: &[SetOutcome],
    legs: &[LegOutcome],
    auth: Option<&AuthorizationOutcome>,
    elapsed: Duration,
) -> Value {
    let (sp, st) = tier(sets, Role::Server);
    let (cp, ct) = tier(sets, Role::Client);
    let (ep, et) = unscored(sets, true);
    let (op, ot) = unscored(sets, false);
    let ok = sets.iter().all(SetOutcome::ok)
        && legs.iter().all(LegOutcome::ok)
        && auth.is_none_or(AuthorizationOutcome::ok);
    let (skills_passed, skills_total) = legs_of(legs, SKILLS_FLOW);
    json!({
        "suite": { "package": SUITE_PACKAGE, "version": SUITE_VERSION },
        "tier": {
            "server": { "passed": sp, "total": st },
            "client": { "passed": cp, "total": ct },
        },
        "not_scored": {
            "extension": { "passed": ep, "total": et },
            "other": { "passed": op, "total": ot },
        },
        "sets": sets.iter().map(SetOutcome::to_json).collect::<Vec<_>>(),
        "cross_sdk": legs.iter().map(|l| json!({
            "leg": l.id,
            "peer": l.peer.release(),
            "era": l.era,
            "passed": l.passed,
            "expected_failure": l.expected_failure.map(|issue| json!({ "issue": issue })),
            "seconds": (l.seconds * 10.0).round() / 10.0,
            "ok": l.ok(),
        })).collect::<Vec<_>>(),
        "skills_legs": { "passed": skills_passed, "total": skills_total },
        "authorization_server": auth.map(|auth| json!({
            "scenarios": auth.scenarios.iter().map(|(name, passed)| json!({
                "scenario": name, "passed": passed,
            })).collect::<Vec<_>>(),
            "ok": auth.ok(),
        })),
        "seconds": elapsed.as_secs(),
        "ok": ok,
    })
}

pub(super) fn human_report(
    sets: &[SetOutcome],
    legs: &[LegOutcome],
    auth: Option<&AuthorizationOutcome>,
    elapsed: Duration,
) -> String {
    let mut out = String::new();
    if auth.is_none() {
        let _ = writeln!(
            out,
            "\ninterop: --legs: the official suite and the authorization scenarios were not run"
        );
    } else {
        let _ = writeln!(
            out,
            "\ninterop: official suite {SUITE_PACKAGE}@{SUITE_VERSION}, frozen requirement sets"
        );
    }
    for s in sets {
        let listed = s.expected.len();
        let _ = writeln!(
            out,
            "  {:<6} {}: {:>2}/{:<2} scored scenarios pass{}{}",
            s.role.name(),
            s.revision,
            s.scored_passed.len(),
            s.scored.len(),
            if listed > 0 {
                format!(
                    "; {listed} listed as expected failures ({})",
                    issues_of(&s.expected)
                )
            } else {
                String::new()
            },
            if s.ok() { "" } else { "  <-- FAILED" },
        );
        for finding in s.findings() {
            let _ = writeln!(out, "      {finding}");
        }
        if let Some(first) = &s.first_run {
            let _ = writeln!(
                out,
                "      the first run failed and this is the second: {}",
                first.join("; ")
            );
        }
        let unscored: Vec<String> = s
            .not_scored
            .iter()
            .map(|(n, reason, passed)| {
                format!("{} {n} ({reason})", if *passed { "✓" } else { "✗" })
            })
            .collect();
        if !unscored.is_empty() {
            let _ = writeln!(out, "      not scored: {}", unscored.join(", "));
        }
    }
    let (sp, st) = tier(sets, Role::Server);
    let (cp, ct) = tier(sets, Role::Client);
    let (ep, et) = unscored(sets, true);
    let (op, ot) = unscored(sets, false);
    if !sets.is_empty() {
        let _ = writeln!(
            out,
            "  tier score: server {sp}/{st}, client {cp}/{ct}; extension scenarios (not scored) {ep}/{et} pass; other unscored {op}/{ot}"
        );
    }
    let _ = writeln!(out, "interop: cross-SDK legs");
    for l in legs {
        let _ = writeln!(
            out,
            "  {:<58} {:<5} era {:<10} {:>5.1}s{}{}",
            l.id,
            if l.passed { "pass" } else { "FAIL" },
            l.era.as_deref().unwrap_or("-"),
            l.seconds,
            match l.expected_failure {
                Some(Some(issue)) => format!("  (expected failure, issue {issue})"),
                Some(None) => "  (expected failure)".to_owned(),
                None => String::new(),
            },
            if l.ok() {
                ""
            } else if l.passed {
                "  <-- passes: remove it from expected-failures/cross-sdk.yml"
            } else {
                "  <-- FAILED"
            },
        );
    }
    let passed = legs.iter().filter(|l| l.passed).count();
    let expected = legs
        .iter()
        .filter(|l| !l.passed && l.expected_failure.is_some())
        .count();
    let unexpected = legs.len() - passed - expected;
    let mut rest = String::new();
    if expected > 0 {
        rest.push_str(&format!("; {expected} listed expected failures"));
    }
    if unexpected > 0 {
        rest.push_str(&format!("; {unexpected} FAILED unexpectedly"));
    }
    let (skills_passed, skills_total) = legs_of(legs, SKILLS_FLOW);
    let _ = writeln!(
        out,
        "  {passed}/{} legs pass{rest} (skills legs: {skills_passed}/{skills_total})",
        legs.len()
    );
    if let Some(auth) = auth {
        let _ = writeln!(
            out,
            "interop: official suite `authorization` against the bundled authorization server"
        );
        for (name, ok) in &auth.scenarios {
            let _ = writeln!(out, "  {name:<58} {}", if *ok { "pass" } else { "FAIL" });
        }
        let auth_passed = auth.scenarios.iter().filter(|(_, ok)| *ok).count();
        let _ = writeln!(
            out,
            "  {auth_passed}/{} scenarios pass{}{}",
            auth.scenarios.len(),
            if auth.suite_status_ok {
                ""
            } else {
                "; the suite itself failed (see its log)"
            },
            if auth.ok() { "" } else { "  <-- FAILED" },
        );
    }
    let _ = writeln!(out, "interop: took {elapsed:.0?}");
    out
}

/// `issue 19 (32)`, `issue 20 (6), issue 21 (25)`.
pub(super) fn issues_of(entries: &[(String, Option<u32>)]) -> String {
    let mut by_issue: BTreeMap<Option<u32>, usize> = BTreeMap::new();
    for (_, issue) in entries {
        *by_issue.entry(*issue).or_default() += 1;
    }
    by_issue
        .iter()
        .map(|(issue, n)| match issue {
            Some(i) => format!("issue {i}: {n}"),
            None => format!("no issue: {n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------
