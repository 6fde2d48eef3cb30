//! The cross-SDK legs: which peer drives which side over which wire, and running them.
//!
//! Trap: the TypeScript client can drop a progress notification that arrives in the same
//! read as its response, so cross-SDK checks must not demand the last one over stdio. The
//! `tasks` legs end a task when `open_gate` opens the gate `wait_for_gate` waits on, so
//! each side decides when a task completes and no step depends on timing.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Instant;

/// Another SDK taking part in a leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Peer {
    /// `@modelcontextprotocol/sdk` 1.32.2: `ts-client.mjs` / `ts-server.mjs`.
    TypeScriptV1,
    /// `@modelcontextprotocol/client` / `server` 2.4.0: `ts2-client.mjs` / `ts2-server.mjs`.
    TypeScriptV2,
    /// `mcp` 2.3.0 (PyPI): `py-client.py` / `py-server.py`.
    Python,
    /// rmcp 3.11.0 (crates.io, its `skills-fs` feature): `rmcp-skills-peer client` /
    /// `server` (the skills legs) and `rmcp-divider-client` (the README's row (3)),
    /// bins of `modelctx-bench` built in the interop step.
    Rmcp,
}

impl Peer {
    pub(super) fn name(self) -> &'static str {
        match self {
            Peer::TypeScriptV1 => "typescript-v1",
            Peer::TypeScriptV2 => "typescript-v2",
            Peer::Python => "python",
            Peer::Rmcp => "rmcp",
        }
    }

    pub(super) fn release(self) -> &'static str {
        match self {
            Peer::TypeScriptV1 => "@modelcontextprotocol/sdk 1.32.2",
            Peer::TypeScriptV2 => "@modelcontextprotocol/client+server 2.4.0",
            Peer::Python => "mcp 2.3.0",
            Peer::Rmcp => "rmcp 3.11.0",
        }
    }

    /// The script of the usual flow (for rmcp, which takes part in the skills legs
    /// and the README's row only: the peer program's mode).
    pub(super) fn script(self, role: Role) -> &'static str {
        match (self, role) {
            (Peer::TypeScriptV1, Role::Client) => "ts-client.mjs",
            (Peer::TypeScriptV1, Role::Server) => "ts-server.mjs",
            (Peer::TypeScriptV2, Role::Client) => "ts2-client.mjs",
            (Peer::TypeScriptV2, Role::Server) => "ts2-server.mjs",
            (Peer::Python, Role::Client) => "py-client.py",
            (Peer::Python, Role::Server) => "py-server.py",
            (Peer::Rmcp, role) => role.name(),
        }
    }

    /// The client that authorizes with OAuth against the `oauth-server` example.
    pub(super) fn oauth_script(self) -> Option<&'static str> {
        match self {
            Peer::TypeScriptV1 => Some("ts-oauth-client.mjs"),
            Peer::TypeScriptV2 => Some("ts2-oauth-client.mjs"),
            Peer::Python => Some("py-oauth-client.py"),
            Peer::Rmcp => None,
        }
    }

    /// The interpreter and the script, copied next to `node_modules` for Node so its
    /// imports resolve.
    pub(super) fn command(self, paths: &Paths, role: Role) -> Result<Command, String> {
        self.command_for(paths, self.script(role))
    }

    /// For rmcp, `script` is the mode of the `rmcp-skills-peer` program.
    pub(super) fn command_for(self, paths: &Paths, script: &str) -> Result<Command, String> {
        let source = paths.root.join("xtask/interop").join(script);
        Ok(match self {
            Peer::Rmcp => {
                let mut c = Command::new(paths.bin.join(RMCP_PEER));
                c.arg(script);
                c
            }
            Peer::Python => {
                let mut c = Command::new(&paths.python);
                // No `__pycache__` in the source tree.
                c.env("PYTHONDONTWRITEBYTECODE", "1").arg(source);
                c
            }
            Peer::TypeScriptV1 | Peer::TypeScriptV2 => {
                let copy = copy_script(&paths.root, &paths.tools, script)?;
                let mut c = Command::new(&paths.node);
                c.arg(copy);
                c
            }
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
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
    pub(super) fn name(self) -> &'static str {
        match self {
            Wire::Http => "http",
            Wire::Stdio => "stdio",
            Wire::OAuthHttp => "http+oauth",
            Wire::Sse => "sse",
            Wire::SseFallback => "sse-fallback",
        }
    }
}

/// What a leg runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// The usual flow of the peer's script against `conformance-server`, or of
    /// `conformance-client --interop` against the peer's server.
    Usual,
    /// Both sides run their tasks flow (`--tasks`), in the peer's default era.
    Tasks,
    /// The skills flow (SEP-2640, `skills.rs`): the peer's skills client against the
    /// `skills-server` example, or `conformance-client --interop --skills` against
    /// the peer's skills server.
    Skills,
    /// The README's line-count row (3) as the peer writes it (`rmcp-divider-client`)
    /// against the `divider-server` example: typed arguments, structured output.
    Readme,
}

/// One cross-SDK leg: who is the client, over which transport, the era the peer
/// client is told to use (`None`: its default mode), and the flow it runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Leg {
    pub(super) peer: Peer,
    /// The peer's role: `Client` drives `conformance-server`, `Server` is driven by
    /// `conformance-client --interop`.
    pub(super) peer_role: Role,
    pub(super) wire: Wire,
    pub(super) era: Option<&'static str>,
    pub(super) flow: Flow,
}

impl Leg {
    pub(super) const fn new(
        peer: Peer,
        peer_role: Role,
        wire: Wire,
        era: Option<&'static str>,
    ) -> Self {
        Self {
            peer,
            peer_role,
            wire,
            era,
            flow: Flow::Usual,
        }
    }

    /// A leg running the tasks flow (protocol 2025-11-25).
    pub(super) const fn tasks(peer: Peer, peer_role: Role, wire: Wire) -> Self {
        Self {
            flow: Flow::Tasks,
            ..Self::new(peer, peer_role, wire, None)
        }
    }

    /// This leg, running the skills flow.
    pub(super) const fn skills(self) -> Self {
        Self {
            flow: Flow::Skills,
            ..self
        }
    }

    /// A leg running the README's row (3) against the `divider-server` example.
    pub(super) const fn readme(peer: Peer) -> Self {
        Self {
            flow: Flow::Readme,
            ..Self::new(peer, Role::Client, Wire::Stdio, None)
        }
    }

    /// `python-client -> modelctx-server (http)`, with `@<era>` when the era is forced
    /// and `, tasks`, `, skills` or `, readme (3)` for those flows.
    pub(super) fn id(&self) -> String {
        let era = self.era.map(|e| format!("@{e}")).unwrap_or_default();
        let flow = self.flow.suffix();
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

impl Flow {
    fn suffix(self) -> &'static str {
        match self {
            Flow::Usual => "",
            Flow::Tasks => ", tasks",
            Flow::Skills => ", skills",
            Flow::Readme => ", readme (3)",
        }
    }
}

use Peer::{Python, Rmcp, TypeScriptV1, TypeScriptV2};
use Wire::{Http, OAuthHttp, Sse, SseFallback, Stdio as StdioWire};

use super::process::{KillOnDrop, free_port, run_logged, start_both_eras_server, start_http};
use super::skills::{RMCP_DIVIDER_CLIENT, RMCP_PEER, run_skills_leg};
use super::suite::Expected;
use super::{ERA_LINE, LEG_LIMIT, Paths, Role};

/// Every cross-SDK leg, in the order they run.
pub(super) const LEGS: &[Leg] = &[
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
    Leg::new(TypeScriptV2, Role::Client, StdioWire, None).skills(),
    Leg::new(TypeScriptV2, Role::Client, StdioWire, Some("2026-07-28")).skills(),
    Leg::new(TypeScriptV2, Role::Server, StdioWire, None).skills(),
    Leg::new(TypeScriptV2, Role::Server, Http, None).skills(),
    Leg::new(TypeScriptV2, Role::Server, Http, Some("2025-11-25")).skills(),
    Leg::new(Rmcp, Role::Client, StdioWire, None).skills(),
    Leg::new(Rmcp, Role::Client, StdioWire, Some("2025-11-25")).skills(),
    Leg::new(Rmcp, Role::Server, StdioWire, None).skills(),
    Leg::new(Rmcp, Role::Server, StdioWire, Some("2025-11-25")).skills(),
    Leg::readme(Rmcp),
];

/// The user the OAuth legs log in as at the consent page, and the password the
/// `oauth-server` example takes (`OAUTH_DEMO_PASSWORD`).
pub(super) const OAUTH_USER: (&str, &str) = ("interop-user", "interop-password");

#[derive(Debug)]
pub(super) struct LegOutcome {
    pub(super) id: String,
    pub(super) peer: Peer,
    pub(super) passed: bool,
    /// The protocol version the client side reported, if it got that far.
    pub(super) era: Option<String>,
    pub(super) expected_failure: Option<Option<u32>>,
    pub(super) seconds: f64,
}

impl LegOutcome {
    pub(super) fn ok(&self) -> bool {
        self.passed != self.expected_failure.is_some()
    }
}

/// Runs every leg whose id contains `only` (all of them when `None`).
pub(super) fn cross_sdk(
    paths: &Paths,
    expected: &Expected,
    only: Option<&str>,
) -> Result<Vec<LegOutcome>, String> {
    let ids: Vec<String> = LEGS.iter().map(Leg::id).collect();
    if let Some((unknown, _)) = expected.legs.iter().find(|(l, _)| !ids.contains(l)) {
        return Err(format!(
            "expected-failures/cross-sdk.yml lists {unknown:?}, which is no leg; legs: {ids:?}"
        ));
    }
    let mut outcomes = Vec::new();
    for (leg, id) in LEGS.iter().zip(ids) {
        if only.is_some_and(|pattern| !id.contains(pattern)) {
            continue;
        }
        eprintln!("== interop: {id}");
        let log_name = format!(
            "leg-{}-{}{}-{}{}.log",
            leg.peer.name(),
            leg.peer_role.name(),
            leg.era.map(|e| format!("-{e}")).unwrap_or_default(),
            leg.wire.name(),
            match leg.flow {
                Flow::Usual => "",
                Flow::Tasks => "-tasks",
                Flow::Skills => "-skills",
                Flow::Readme => "-readme",
            }
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

pub(super) fn run_leg(
    paths: &Paths,
    leg: &Leg,
    log_name: &str,
) -> Result<(ExitStatus, String), String> {
    match leg.flow {
        Flow::Skills => return run_skills_leg(paths, leg, log_name),
        Flow::Readme => return run_readme_leg(paths, leg, log_name),
        Flow::Usual | Flow::Tasks => {}
    }
    let server_bin = paths.bin.join("conformance-server");
    let client_bin = paths.bin.join("conformance-client");
    match leg.peer_role {
        Role::Client if leg.wire == OAuthHttp => {
            let script = leg
                .peer
                .oauth_script()
                .ok_or_else(|| format!("{}: no OAuth client for this peer", leg.id()))?;
            let mut client = leg.peer.command_for(paths, script)?;
            let mut server = Command::new(paths.bin.join("oauth-server"));
            server.env("OAUTH_DEMO_PASSWORD", OAUTH_USER.1).args([
                "--as-port",
                &free_port()?.to_string(),
                "--mcp-port",
            ]);
            let (server, url) = start_http(paths, server, &server_log(log_name))?;
            client.args([url.as_str(), OAUTH_USER.0, OAUTH_USER.1]);
            run_while_serving(paths, server, &mut client, log_name)
        }
        Role::Client => {
            let mut client = leg.peer.command(paths, Role::Client)?;
            era_and_flow(&mut client, leg);
            // One endpoint serving both eras: the peer's mode picks its era.
            match leg.wire {
                Http => {
                    let (server, url) = start_both_eras_server(paths, &server_log(log_name))?;
                    client.args(["http", &url]);
                    run_while_serving(paths, server, &mut client, log_name)
                }
                OAuthHttp => Err("an OAuth leg runs against oauth-server (above)".into()),
                Sse => {
                    let mut server = Command::new(&server_bin);
                    server.args(["--sse", "--port"]);
                    let (server, url) = start_http(paths, server, &server_log(log_name))?;
                    client.args(["sse", &sse_url(&url)]);
                    run_while_serving(paths, server, &mut client, log_name)
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
            era_and_flow(&mut ours, leg);
            match leg.wire {
                Http => {
                    let mut server = leg.peer.command(paths, Role::Server)?;
                    server.arg("http");
                    let (server, url) = start_http(paths, server, &server_log(log_name))?;
                    ours.args(["http", &url]);
                    run_while_serving(paths, server, &mut ours, log_name)
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
                    let (server, url) = start_http(paths, server, &server_log(log_name))?;
                    let kind = if leg.wire == Sse { "sse" } else { "fallback" };
                    ours.args([kind, &sse_url(&url)]);
                    run_while_serving(paths, server, &mut ours, log_name)
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
/// What `divider-client` and its rmcp twin print for `divide(17, 5)`.
const DIVISION_LINE: &str = "17 / 5 = 3 remainder 2";

/// The peer's row (3) program against the `divider-server` example: it must exit 0
/// having printed the division read from the structured output.
fn run_readme_leg(
    paths: &Paths,
    leg: &Leg,
    log_name: &str,
) -> Result<(ExitStatus, String), String> {
    if leg.peer != Rmcp {
        return Err(format!(
            "{}: only rmcp's row (3) is a program here",
            leg.id()
        ));
    }
    let mut client = Command::new(paths.bin.join(RMCP_DIVIDER_CLIENT));
    client.arg(paths.bin.join("divider-server"));
    let (status, output) = run_logged(paths, &mut client, log_name, LEG_LIMIT)?;
    if status.success() && !output.contains(DIVISION_LINE) {
        return Err(format!(
            "{}: exited 0 without printing {DIVISION_LINE:?}",
            leg.id()
        ));
    }
    Ok((status, output))
}

/// The options that give a conformance client (modelctx's or a peer's) the leg's era and
/// flow.
fn era_and_flow(client: &mut Command, leg: &Leg) {
    if let Some(era) = leg.era {
        client.args(["--era", era]);
    }
    if leg.flow == Flow::Tasks {
        client.arg("--tasks");
    }
}

/// Runs `client` (see [`run_logged`]) while `server` serves it, then stops the server.
fn run_while_serving(
    paths: &Paths,
    server: KillOnDrop,
    client: &mut Command,
    log_name: &str,
) -> Result<(ExitStatus, String), String> {
    let outcome = run_logged(paths, client, log_name, LEG_LIMIT);
    drop(server);
    outcome
}

/// The log of the server a leg's client runs against.
fn server_log(log_name: &str) -> String {
    format!("server-for-{log_name}")
}

pub(super) fn sse_url(mcp_url: &str) -> String {
    format!("{}/sse", mcp_url.trim_end_matches("/mcp"))
}

// ---------------------------------------------------------------------------------------
// The authorization-server scenarios
// ---------------------------------------------------------------------------------------

/// The modules the Node scripts of `xtask/interop` import from one another.
const NODE_MODULES: [&str; 6] = [
    "ts-http.mjs",
    "ts2-http.mjs",
    "bench-echo.mjs",
    "conformance-steps.mjs",
    "server-fixtures.mjs",
    "oauth-flow.mjs",
];

/// Copies the script `script` of `xtask/interop` (and the modules the Node scripts share)
/// into `tools`, next to the installed `node_modules`, so that its imports resolve;
/// returns the copy's path.
pub(crate) fn copy_script(root: &Path, tools: &Path, script: &str) -> Result<PathBuf, String> {
    for file in NODE_MODULES.iter().chain([&script]) {
        std::fs::copy(root.join("xtask/interop").join(file), tools.join(file))
            .map_err(|e| format!("cannot copy {file}: {e}"))?;
    }
    Ok(tools.join(script))
}
