//! The suite's authorization-server scenarios against the bundled authorization server.

use std::fs::File;
use std::process::{Command, Stdio};

use super::legs::{OAUTH_USER, Peer};
use super::process::{KillOnDrop, free_port, run_logged, start_http, wait_within};
use super::suite::read_results;
use super::{LEG_LIMIT, Paths, Role};

/// The official suite's `authorization` run against the bundled authorization server.
#[derive(Debug)]
pub(super) struct AuthorizationOutcome {
    /// Every scenario the suite ran, and whether it passed.
    pub(super) scenarios: Vec<(String, bool)>,
    pub(super) suite_status_ok: bool,
}

impl AuthorizationOutcome {
    pub(super) fn ok(&self) -> bool {
        self.suite_status_ok
            && !self.scenarios.is_empty()
            && self.scenarios.iter().all(|(_, ok)| *ok)
    }
}

/// Runs `authorization` against `oauth-server`'s authorization server with a client
/// registered for the suite's callback, playing the user (`as-consent.mjs`) when the
/// suite prints the authorization URL.
pub(super) fn authorization_suite(paths: &Paths) -> Result<AuthorizationOutcome, String> {
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
    let status = wait_within(&mut child, "the authorization suite", LEG_LIMIT, &log_path)?;
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
