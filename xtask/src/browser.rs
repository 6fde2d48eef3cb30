//! `cargo xtask browser`: the OAuth authorization-code flow end to end in a real browser.
//!
//! 1. Installs Debian's `chromium` and `chromium-driver` (`xtask/system/chromium.sh`,
//!    which does nothing when they are installed).
//! 2. Builds and starts the `oauth-server` example (resource server + bundled
//!    authorization server) on free loopback ports, and runs the `oauth-client` example
//!    against it: it prints the authorization URL (its "login") and waits on its
//!    loopback redirect listener.
//! 3. Starts `chromedriver` and drives headless Chromium over WebDriver (W3C, plain
//!    JSON over HTTP on loopback, spoken here with `std::net` — no dependency): for
//!    each authorization URL the client prints, open it, fill the consent page's user
//!    name and password, press "Allow", and wait until the browser lands on the
//!    client's `/callback`. The client asks twice: once to connect and call `whoami`,
//!    once more (step-up) when `admin` answers 403 `insufficient_scope`.
//! 4. The client must exit 0 having printed `whoami` for the user and the `admin`
//!    result, both calls made with the tokens the browser's consent produced.
//!
//! When Chromium cannot be installed or started, the run fails if `CI=true`; elsewhere
//! it says so loudly and ends without failing (a developer machine without root).
//! Logs: `.tools/browser/`.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::interop::{KillOnDrop, free_port, wait_listening};

pub(crate) const USAGE: &str = "cargo xtask browser: the OAuth authorization-code flow through the consent page in headless Chromium (WebDriver)";

/// The user the browser logs in as, and the password `oauth-server` takes.
const USER: (&str, &str) = ("browser-user", "browser-password");
/// How long the whole flow may take once everything is started.
const FLOW_LIMIT: Duration = Duration::from_secs(120);
/// How long one WebDriver command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(60);
/// What `LoopbackRedirect` prints before the URL.
const URL_LINE: &str = "Open this URL in a browser to authorize: ";

pub(crate) fn main(root: &Path) -> ExitCode {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let started = Instant::now();
    match run(root) {
        Ok(()) => {
            println!(
                "browser: ok — consent in headless Chromium, then whoami and admin (step-up) with the tokens, in {:.1} s",
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
    /// Chromium or its driver could not be installed or started.
    NoBrowser(String),
    /// The flow itself went wrong.
    Flow(String),
}

fn flow(why: impl Into<String>) -> Failure {
    Failure::Flow(why.into())
}

fn run(root: &Path) -> Result<(), Failure> {
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
    let bin = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map_or_else(|| root.join("target"), |t| root.join(t))
        .join("debug");

    // The server: MCP endpoint and authorization server.
    let (as_port, mcp_port) = (free_port().map_err(flow)?, free_port().map_err(flow)?);
    let mut server = KillOnDrop(
        Command::new(bin.join("oauth-server"))
            .env("OAUTH_DEMO_PASSWORD", USER.1)
            .args(["--as-port", &as_port.to_string()])
            .args(["--mcp-port", &mcp_port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&logs, "oauth-server.log")?)
            .spawn()
            .map_err(|e| flow(format!("cannot start oauth-server: {e}")))?,
    );
    wait_listening(&mut server.0, mcp_port).map_err(flow)?;
    wait_listening(&mut server.0, as_port).map_err(flow)?;

    // The browser's driver.
    let driver_port = free_port().map_err(flow)?;
    let mut driver = KillOnDrop(
        Command::new("chromedriver")
            .arg(format!("--port={driver_port}"))
            .stdin(Stdio::null())
            .stdout(log_file(&logs, "chromedriver.log")?)
            .stderr(log_file(&logs, "chromedriver.err.log")?)
            .spawn()
            .map_err(|e| Failure::NoBrowser(format!("cannot start chromedriver: {e}")))?,
    );
    wait_listening(&mut driver.0, driver_port)
        .map_err(|e| Failure::NoBrowser(format!("chromedriver: {e}")))?;
    let webdriver = WebDriver::start(driver_port)?;

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
    let mut client_log = log_file(&logs, "oauth-client.log")?;
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
    drop(webdriver);
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

/// A W3C WebDriver session of headless Chromium.
struct WebDriver {
    port: u16,
    session: String,
}

/// The key under which WebDriver returns an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl WebDriver {
    fn start(port: u16) -> Result<Self, Failure> {
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                // --no-sandbox: CI containers run as root, where Chromium's sandbox
                // cannot start; the pages opened are our own loopback servers.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                    "--disable-dev-shm-usage", "--no-first-run"],
            },
        }}});
        let answer = http(port, "POST", "/session", Some(&capabilities))
            .map_err(|e| Failure::NoBrowser(format!("chromedriver: {e}")))?;
        let session = answer["value"]["sessionId"]
            .as_str()
            .ok_or_else(|| {
                Failure::NoBrowser(format!("Chromium did not start: {}", answer["value"]))
            })?
            .to_owned();
        Ok(Self { port, session })
    }

    fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
        let path = format!("/session/{}{path}", self.session);
        let answer = http(self.port, method, &path, body).map_err(flow)?;
        if answer["value"].get("error").is_some() {
            return Err(flow(format!(
                "WebDriver {method} {path}: {}",
                answer["value"]
            )));
        }
        Ok(answer["value"].clone())
    }

    fn element(&self, css: &str) -> Result<String, Failure> {
        let found = self.command(
            "POST",
            "/element",
            Some(&json!({"using": "css selector", "value": css})),
        )?;
        found[ELEMENT]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| flow(format!("no {css} on the page")))
    }

    /// Opens the authorization URL, logs in, presses "Allow", and waits for the
    /// redirect to the client's callback.
    fn consent(&self, url: &str, n: usize) -> Result<(), Failure> {
        let redirect = url::redirect_uri(url)
            .ok_or_else(|| flow(format!("the authorization URL has no redirect_uri: {url}")))?;
        self.command("POST", "/url", Some(&json!({"url": url})))?;
        let title = self.command("GET", "/title", None)?;
        let user = self.element("input[name=username]")?;
        self.command(
            "POST",
            &format!("/element/{user}/value"),
            Some(&json!({"text": USER.0})),
        )?;
        let password = self.element("input[name=password]")?;
        self.command(
            "POST",
            &format!("/element/{password}/value"),
            Some(&json!({"text": USER.1})),
        )?;
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

impl Drop for WebDriver {
    /// Ends the session, which closes the browser (stopping chromedriver alone leaves
    /// Chromium running).
    fn drop(&mut self) {
        let _ = http(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
    }
}

/// One request to the driver on loopback and its JSON answer. HTTP/1.1 (chromedriver
/// answers HTTP/1.0 requests with nothing) with `Connection: close`; the body is read
/// by its `Content-Length`.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let what = format!("{method} {path}");
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| format!("{what}: cannot reach the driver: {e}"))?;
    stream
        .set_read_timeout(Some(COMMAND_LIMIT))
        .and_then(|()| stream.set_write_timeout(Some(COMMAND_LIMIT)))
        .map_err(|e| e.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("{what}: {e}"))?;
    let mut reader = BufReader::new(stream);
    let mut length = None;
    let mut status = String::new();
    reader
        .read_line(&mut status)
        .map_err(|e| format!("{what}: {e}"))?;
    if !status.starts_with("HTTP/1.") {
        return Err(format!("{what}: no HTTP answer"));
    }
    loop {
        let mut line = String::new();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| format!("{what}: {e}"))?;
        let line = line.trim_end();
        if n == 0 || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut json = Vec::new();
    match length {
        Some(n) => {
            json.resize(n, 0);
            reader
                .read_exact(&mut json)
                .map_err(|e| format!("{what}: {e}"))?;
        }
        None => {
            reader
                .read_to_end(&mut json)
                .map_err(|e| format!("{what}: {e}"))?;
        }
    }
    serde_json::from_slice(&json)
        .map_err(|e| format!("{what}: not JSON ({e}): {}", String::from_utf8_lossy(&json)))
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
