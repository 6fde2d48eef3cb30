//! `cargo xtask browser`: two flows end to end in headless Chromium.
//!
//! 1. Installs Debian's `chromium` and `chromium-driver` (`xtask/system/chromium.sh`,
//!    which does nothing when they are installed), and builds the examples it runs.
//! 2. Starts `chromedriver` and drives headless Chromium over WebDriver (W3C, plain
//!    JSON over HTTP on loopback, spoken here with `std::net` — no dependency:
//!    `webdriver.rs`).
//! 3. OAuth: starts the `oauth-server` example (resource server + bundled
//!    authorization server) on free loopback ports, and runs the `oauth-client` example
//!    against it: it prints the authorization URL (its "login") and waits on its
//!    loopback redirect listener. For each authorization URL the client prints, the
//!    browser opens it, fills the consent page's user name and password, presses
//!    "Allow", and waits until it lands on the client's `/callback`. The client asks
//!    twice: once to connect and call `whoami`, once more (step-up) when `admin`
//!    answers 403 `insufficient_scope`. The client must exit 0 having printed `whoami`
//!    for the user and the `admin` result, both calls made with the tokens the
//!    browser's consent produced.
//! 4. MCP Apps (`apps.rs`): the `apps-host` example renders tool UIs in sandboxed
//!    frames, with the Rust `AppBridge`, for the `apps-server` example and two official
//!    example servers from npm, and with the official TypeScript `AppBridge` for
//!    `apps-server`; the browser checks what each view shows and does.
//!
//! When Chromium cannot be installed or started (or npm is missing, for the MCP Apps
//! part), the run fails if `CI=true`; elsewhere it says so loudly and ends without
//! failing (a developer machine without root). Logs: `.tools/browser/`.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::interop::{KillOnDrop, start_listening};
use webdriver::{COMMAND_LIMIT, WebDriver};

mod apps;
mod webdriver;

pub(crate) const USAGE: &str = "cargo xtask browser: in headless Chromium (WebDriver), the OAuth authorization-code flow through the consent page, then MCP Apps views behind the Rust and the official AppBridge";

/// The user the browser logs in as, and the password `oauth-server` takes.
const USER: (&str, &str) = ("browser-user", "browser-password");
/// How long the whole flow may take once everything is started.
const FLOW_LIMIT: Duration = Duration::from_secs(120);
/// What `LoopbackRedirect` prints before the URL.
const URL_LINE: &str = "Open this URL in a browser to authorize: ";

pub(crate) fn main(root: &Path) -> ExitCode {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let started = Instant::now();
    match run(root) {
        Ok(times) => {
            println!(
                "browser: ok — OAuth: consent in headless Chromium, then whoami and admin (step-up) with the tokens, in {:.1} s",
                times.oauth.as_secs_f64()
            );
            println!(
                "browser: ok — MCP Apps: {} views rendered and driven ({}), in {:.1} s",
                times.apps.len(),
                times.apps.join("; "),
                times.apps_time.as_secs_f64()
            );
            println!(
                "browser: ok — in {:.1} s in all",
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(Failure::NoBrowser(why)) if !ci => {
            eprintln!(
                "browser: NOT RUN — {why}\nbrowser: (set CI=true to make this an error; install with xtask/system/chromium.sh as root)"
            );
            ExitCode::SUCCESS
        }
        Err(Failure::NoBrowser(why) | Failure::Flow(why)) => {
            eprintln!("browser: FAILED — {why}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    /// Chromium, its driver or npm could not be installed or started.
    NoBrowser(String),
    /// The flow itself went wrong.
    Flow(String),
}

fn flow(why: impl Into<String>) -> Failure {
    Failure::Flow(why.into())
}

/// What each part took, and the MCP Apps views checked.
struct Times {
    oauth: Duration,
    apps: Vec<String>,
    apps_time: Duration,
}

/// Where a run finds things.
struct Paths {
    root: PathBuf,
    logs: PathBuf,
    bin: PathBuf,
}

fn run(root: &Path) -> Result<Times, Failure> {
    let logs = root.join(".tools/browser");
    std::fs::create_dir_all(&logs)
        .map_err(|e| flow(format!("cannot create the log folder: {e}")))?;
    let phase = Instant::now();
    let status = Command::new("sh")
        .arg(root.join("xtask/system/chromium.sh"))
        .status()
        .map_err(|e| Failure::NoBrowser(format!("cannot run chromium.sh: {e}")))?;
    if !status.success() {
        return Err(Failure::NoBrowser(format!("chromium.sh failed ({status})")));
    }
    eprintln!(
        "== browser: chromium ready ({:.1} s)",
        phase.elapsed().as_secs_f64()
    );

    let phase = Instant::now();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "-p", "modelctx-examples"])
        .args(["--bin", "oauth-server", "--bin", "oauth-client"])
        .args(["--bin", "apps-server", "--bin", "apps-host"])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| flow(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(flow(format!("building the examples failed ({status})")));
    }
    eprintln!(
        "== browser: examples built ({:.1} s)",
        phase.elapsed().as_secs_f64()
    );
    let paths = Paths {
        root: root.to_owned(),
        bin: std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map_or_else(|| root.join("target"), |t| root.join(t))
            .join("debug"),
        logs,
    };

    // The browser's driver, for both parts.
    let (_driver, [driver_port]) = start_listening(
        |[port]| {
            Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(log_file(&paths.logs, "chromedriver.log")?)
                .stderr(log_file(&paths.logs, "chromedriver.err.log")?)
                .spawn()
                .map(KillOnDrop)
                .map_err(|e| Failure::NoBrowser(format!("cannot start chromedriver: {e}")))
        },
        |e| Failure::NoBrowser(format!("chromedriver: {e}")),
    )?;
    let webdriver = WebDriver::start(driver_port)?;

    let phase = Instant::now();
    oauth(&paths, &webdriver)?;
    let oauth_time = phase.elapsed();
    eprintln!(
        "== browser: OAuth flow done ({:.1} s)",
        oauth_time.as_secs_f64()
    );

    let phase = Instant::now();
    let apps = apps::run(&paths, &webdriver)?;
    Ok(Times {
        oauth: oauth_time,
        apps,
        apps_time: phase.elapsed(),
    })
}

/// The OAuth flow: `oauth-client` against `oauth-server`, each consent given in the
/// browser.
fn oauth(paths: &Paths, webdriver: &WebDriver) -> Result<(), Failure> {
    let (bin, logs) = (&paths.bin, &paths.logs);
    // The server: MCP endpoint and authorization server.
    let (_server, [_, mcp_port]) = start_listening(
        |[as_port, mcp_port]| {
            Command::new(bin.join("oauth-server"))
                .env("OAUTH_DEMO_PASSWORD", USER.1)
                .args(["--as-port", &as_port.to_string()])
                .args(["--mcp-port", &mcp_port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file(logs, "oauth-server.log")?)
                .spawn()
                .map(KillOnDrop)
                .map_err(|e| flow(format!("cannot start oauth-server: {e}")))
        },
        flow,
    )?;

    // The client: its login is the authorization URL on stderr.
    let mcp = format!("http://127.0.0.1:{mcp_port}/mcp");
    let mut client = KillOnDrop(
        Command::new(bin.join("oauth-client"))
            .arg(&mcp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| flow(format!("cannot start oauth-client: {e}")))?,
    );
    let (urls, logins) = mpsc::channel();
    let stderr = client
        .0
        .stderr
        .take()
        .ok_or_else(|| flow("no client stderr"))?;
    let mut client_log = log_file(logs, "oauth-client.log")?;
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = writeln!(client_log, "{line}");
            if let Some(url) = line.strip_prefix(URL_LINE) {
                let _ = urls.send(url.trim().to_owned());
            }
        }
    });
    let mut stdout = client
        .0
        .stdout
        .take()
        .ok_or_else(|| flow("no client stdout"))?;
    let printer = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });

    let deadline = Instant::now() + FLOW_LIMIT;
    let mut consents = 0;
    let status = loop {
        if let Some(status) = client.0.try_wait().map_err(|e| flow(e.to_string()))? {
            break status;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(flow(format!(
                "the client did not finish within {FLOW_LIMIT:?} ({consents} consents given)"
            )));
        }
        match logins.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(url) => {
                consents += 1;
                webdriver.consent(&url, consents)?;
                eprintln!("== browser: consent {consents} given in Chromium");
            }
            Err(mpsc::RecvTimeoutError::Timeout | mpsc::RecvTimeoutError::Disconnected) => {}
        }
    };
    let _ = reader.join();
    let out = printer.join().unwrap_or_default();
    std::fs::write(logs.join("oauth-client.out"), &out)
        .map_err(|e| flow(format!("cannot write the client's output: {e}")))?;
    if !status.success() {
        return Err(flow(format!(
            "oauth-client exited with {status}; see .tools/browser/oauth-client.log"
        )));
    }
    let line = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or("")
            .to_owned()
    };
    let whoami = line("whoami: ");
    if !whoami.contains(&format!("{} (client ", USER.0)) {
        return Err(flow(format!("whoami did not see the user: {whoami:?}")));
    }
    let admin = line("admin: ");
    if !admin.contains("admin action done") {
        return Err(flow(format!(
            "admin did not go through after the step-up: {:?}",
            out.lines().find(|l| l.starts_with("admin"))
        )));
    }
    if consents != 2 {
        return Err(flow(format!(
            "expected two consents (login, step-up), gave {consents}"
        )));
    }
    Ok(())
}

fn log_file(logs: &Path, name: &str) -> Result<File, Failure> {
    File::create(logs.join(name)).map_err(|e| flow(format!("cannot create {name}: {e}")))
}

impl WebDriver {
    /// Opens the authorization URL, logs in, presses "Allow", and waits for the
    /// redirect to the client's callback.
    fn consent(&self, url: &str, n: usize) -> Result<(), Failure> {
        let redirect = url::redirect_uri(url)
            .ok_or_else(|| flow(format!("the authorization URL has no redirect_uri: {url}")))?;
        self.command("POST", "/url", Some(&json!({"url": url})))?;
        let title = self.command("GET", "/title", None)?;
        self.type_into("input[name=username]", USER.0)?;
        self.type_into("input[name=password]", USER.1)?;
        let allow = self.element("#approve")?;
        self.command("POST", &format!("/element/{allow}/click"), Some(&json!({})))?;
        // The click returns once the navigation it started has loaded; check where the
        // browser is, within a bound in case the driver returned early.
        let deadline = Instant::now() + COMMAND_LIMIT;
        loop {
            let at = self.command("GET", "/url", None)?;
            let at = at.as_str().unwrap_or("");
            if at.starts_with(&redirect) {
                let text = self.command("GET", "/source", None)?;
                if !text
                    .as_str()
                    .unwrap_or("")
                    .contains("Authorization complete")
                {
                    return Err(flow(format!(
                        "consent {n}: the client's callback did not report success: {text}"
                    )));
                }
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(flow(format!(
                    "consent {n} (page {title}): the browser stayed at {at}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Just enough URL reading for the authorization URL.
mod url {
    /// The decoded `redirect_uri` query parameter of `url`.
    pub(super) fn redirect_uri(url: &str) -> Option<String> {
        let query = url.split_once('?')?.1;
        let value = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("redirect_uri="))?;
        decode(value)
    }

    /// Percent-decoding (and `+` as a space) of a query value.
    fn decode(value: &str) -> Option<String> {
        let bytes = value.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'%' => {
                    let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                    out.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                }
                b'+' => {
                    out.push(b' ');
                    i += 1;
                }
                b => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8(out).ok()
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn the_redirect_uri_is_read_and_decoded() {
            let url = "http://127.0.0.1:1/authorize?response_type=code&redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&state=x";
            assert_eq!(
                super::redirect_uri(url).as_deref(),
                Some("http://127.0.0.1:5/callback")
            );
            assert_eq!(super::redirect_uri("http://a/b?state=x"), None);
            assert_eq!(super::redirect_uri("http://a/b?redirect_uri=%zz"), None);
        }
    }
}
