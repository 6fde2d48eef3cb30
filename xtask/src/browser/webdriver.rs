//! A W3C WebDriver session of headless Chromium, spoken over `std::net` (JSON over
//! HTTP on loopback): no dependency.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Failure, flow};

/// How long one WebDriver command may take.
pub(super) const COMMAND_LIMIT: Duration = Duration::from_secs(60);
/// How often a wait asks the browser again.
const POLL: Duration = Duration::from_millis(50);

/// A W3C WebDriver session of headless Chromium.
pub(super) struct WebDriver {
    port: u16,
    session: String,
}

/// The key under which WebDriver returns an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl WebDriver {
    pub(super) fn start(port: u16) -> Result<Self, Failure> {
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

    pub(super) fn command(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Failure> {
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

    pub(super) fn element(&self, css: &str) -> Result<String, Failure> {
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

    /// Types `text` into the element `css`.
    pub(super) fn type_into(&self, css: &str, text: &str) -> Result<(), Failure> {
        let element = self.element(css)?;
        self.command(
            "POST",
            &format!("/element/{element}/value"),
            Some(&json!({"text": text})),
        )?;
        Ok(())
    }

    /// Opens `url` in the current window.
    pub(super) fn open(&self, url: &str) -> Result<(), Failure> {
        self.command("POST", "/url", Some(&json!({"url": url})))
            .map(drop)
    }

    /// The first element matching `css` in the current frame, once there is one, within
    /// `deadline`.
    pub(super) fn wait_element(&self, css: &str, deadline: Instant) -> Result<String, Failure> {
        loop {
            let path = format!("/session/{}/element", self.session);
            let found = http(
                self.port,
                "POST",
                &path,
                Some(&json!({"using": "css selector", "value": css})),
            )
            .map_err(flow)?;
            if let Some(element) = found["value"][ELEMENT].as_str() {
                return Ok(element.to_owned());
            }
            if found["value"]["error"] != "no such element" {
                return Err(flow(format!("finding {css}: {}", found["value"])));
            }
            if Instant::now() >= deadline {
                return Err(flow(format!("no {css} appeared in time")));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The rendered text of the first element matching `css`, once `wanted` accepts
    /// it, within `deadline`; the error says what the text was.
    pub(super) fn wait_text(
        &self,
        css: &str,
        what: &str,
        wanted: impl Fn(&str) -> bool,
        deadline: Instant,
    ) -> Result<String, Failure> {
        let mut last = String::new();
        loop {
            let element = self.wait_element(css, deadline)?;
            let path = format!("/session/{}/element/{element}/text", self.session);
            let text = http(self.port, "GET", &path, None).map_err(flow)?;
            // An element replaced while we read it is read again.
            if let Some(text) = text["value"].as_str() {
                if wanted(text) {
                    return Ok(text.to_owned());
                }
                text.clone_into(&mut last);
            }
            if Instant::now() >= deadline {
                return Err(flow(format!(
                    "{css} never showed {what}; it showed {last:?}"
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The attribute `name` of the first element matching `css` (null when absent).
    pub(super) fn attribute(
        &self,
        css: &str,
        name: &str,
        deadline: Instant,
    ) -> Result<Value, Failure> {
        let element = self.wait_element(css, deadline)?;
        self.command("GET", &format!("/element/{element}/attribute/{name}"), None)
    }

    /// Clicks the first element matching `css`.
    pub(super) fn click(&self, css: &str, deadline: Instant) -> Result<(), Failure> {
        let element = self.wait_element(css, deadline)?;
        self.command(
            "POST",
            &format!("/element/{element}/click"),
            Some(&json!({})),
        )
        .map(drop)
    }

    /// Makes the frame element matching `css` the current browsing context.
    pub(super) fn enter_frame(&self, css: &str, deadline: Instant) -> Result<(), Failure> {
        let element = self.wait_element(css, deadline)?;
        self.command("POST", "/frame", Some(&json!({"id": {ELEMENT: element}})))
            .map(drop)
    }

    /// Goes back to the top-level document.
    pub(super) fn leave_frames(&self) -> Result<(), Failure> {
        self.command("POST", "/frame", Some(&json!({"id": null})))
            .map(drop)
    }

    /// Runs `script` in the current frame as an asynchronous function (its last
    /// argument is the callback to call with the answer) and returns the answer.
    pub(super) fn execute_async(&self, script: &str, args: &[Value]) -> Result<Value, Failure> {
        self.command(
            "POST",
            "/execute/async",
            Some(&json!({"script": script, "args": args})),
        )
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
