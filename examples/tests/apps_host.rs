//! The `apps-host` example without a browser: the requests its page and its sandbox
//! proxy make, made here (`cargo xtask browser` runs the pages themselves in Chromium).
//! It hosts `apps-server`.

use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt as _;
use modelctx_test::within;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const WITHIN: Duration = Duration::from_secs(30);

struct Host {
    _child: Child,
    base: String,
    http: reqwest::Client,
}

async fn start(bundle: &std::path::Path) -> Host {
    let (child, addr) = modelctx_test::start_listening(WITHIN, |addr| {
        let port = addr.rsplit(':').next().expect("host:port");
        let mut command = Command::new(env!("CARGO_BIN_EXE_apps-host"));
        command
            .args(["--port", port, "--app-bridge"])
            .arg(bundle)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_apps-server"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        command
    })
    .await;
    Host {
        _child: child,
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
    }
}

/// Starts `apps-host` with a stand-in bridge bundle in a fresh temporary directory
/// named after `test`: the directory (for the test to remove) and the host.
async fn start_with_a_bundle(test: &str) -> (std::path::PathBuf, Host) {
    let dir = std::env::temp_dir().join(format!("apps-host-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("app-bridge.js");
    std::fs::write(&bundle, "export const AppBridge = class {};\n").unwrap();
    let host = start(&bundle).await;
    (dir, host)
}

impl Host {
    /// The address of `path` on the host.
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends `request`, bounded.
    async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        within(WITHIN, "an answer", request.send())
            .await
            .expect("apps-host answers")
    }

    async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.send(self.http.post(self.url(path)).body(body.to_string()))
            .await
    }

    async fn post_json(&self, path: &str, body: &Value) -> Value {
        let response = self.post(path, body).await;
        assert!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        let text = response.text().await.expect("a body");
        serde_json::from_str(&text).expect("JSON")
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.send(self.http.get(self.url(path))).await
    }
}

/// A server-sent event stream, event by event: (event name, data).
struct Events {
    stream: futures::stream::BoxStream<'static, reqwest::Result<axum::body::Bytes>>,
    buffer: String,
}

impl Events {
    async fn next(&mut self) -> (Option<String>, String) {
        within(WITHIN, "the next event", async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let (mut name, mut data) = (None, Vec::new());
                    for line in block.lines() {
                        if let Some(value) = line.strip_prefix("event:") {
                            name = Some(value.trim().to_owned());
                        } else if let Some(value) = line.strip_prefix("data:") {
                            data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
                        }
                    }
                    if data.is_empty() {
                        continue; // a keep-alive comment
                    }
                    return (name, data.join("\n"));
                }
                let chunk = self.stream.next().await.expect("the stream goes on");
                self.buffer
                    .push_str(&String::from_utf8_lossy(&chunk.expect("a chunk")));
            }
        })
        .await
    }

    /// The next message for the view, skipping the host's log lines (returned apart).
    async fn for_view(&mut self, logs: &mut Vec<String>) -> Value {
        loop {
            match self.next().await {
                (Some(name), line) if name == "log" => logs.push(line),
                (_, data) => return serde_json::from_str(&data).expect("a JSON message"),
            }
        }
    }
}

#[tokio::test]
async fn the_rust_bridge_is_reached_through_the_page_requests() {
    let (dir, host) = start_with_a_bundle("rust").await;

    let opened = host
        .post_json(
            "/views",
            &json!({"tool": "show_counter", "arguments": {"label": "visits"}}),
        )
        .await;
    let id = opened["id"].as_u64().unwrap();
    let csp = opened["csp"].as_str().unwrap();
    assert!(
        csp.contains("script-src 'self' 'unsafe-inline' https://unpkg.com;"),
        "{csp}"
    );
    assert!(csp.contains("connect-src 'none';"), "{csp}");

    // The sandbox proxy is served on an origin of its own.
    let sandbox = opened["sandbox"].as_str().unwrap();
    assert!(sandbox.starts_with("http://127.0.0.1:") && !sandbox.starts_with(&host.base));
    let proxy = within(WITHIN, "the proxy page", host.http.get(sandbox).send())
        .await
        .unwrap();
    assert!(
        proxy
            .text()
            .await
            .unwrap()
            .contains("ui/notifications/sandbox-")
    );

    let response = host.get(&format!("/views/{id}/events")).await;
    assert_eq!(response.status(), 200);
    let mut events = Events {
        stream: response.bytes_stream().boxed(),
        buffer: String::new(),
    };
    // One stream per view.
    assert_eq!(host.get(&format!("/views/{id}/events")).await.status(), 409);

    let mut logs = Vec::new();
    let messages = format!("/views/{id}/messages");
    // The proxy announces itself and gets the view's HTML and declared origins.
    host.post(
        &messages,
        &json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}),
    )
    .await;
    let ready = events.for_view(&mut logs).await;
    assert_eq!(ready["method"], "ui/notifications/sandbox-resource-ready");
    assert!(
        ready["params"]["html"]
            .as_str()
            .unwrap()
            .contains("<title>Counter</title>")
    );
    assert_eq!(
        ready["params"]["csp"]["resourceDomains"],
        json!(["https://unpkg.com"])
    );
    let sent = host
        .post(
            &messages,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
                "protocolVersion": "2026-01-26", "appInfo": {"name": "t", "version": "1"},
                "appCapabilities": {}}}),
        )
        .await;
    assert_eq!(sent.status(), 204);
    let answer = events.for_view(&mut logs).await;
    assert_eq!(answer["result"]["hostInfo"]["name"], "modelctx apps-host");
    host.post(
        &messages,
        &json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}),
    )
    .await;
    let input = events.for_view(&mut logs).await;
    assert_eq!(input["method"], "ui/notifications/tool-input");
    assert_eq!(input["params"]["arguments"]["label"], "visits");
    let result = events.for_view(&mut logs).await;
    assert_eq!(result["method"], "ui/notifications/tool-result");
    let count = result["params"]["structuredContent"]["count"]
        .as_i64()
        .unwrap();

    // The view calls a tool of the server through the host.
    let call = |id: u64, tool: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {}}})
    };
    host.post(&messages, &call(2, "increment")).await;
    let clicked = events.for_view(&mut logs).await;
    assert_eq!(clicked["result"]["structuredContent"]["count"], count + 1);
    host.post(&messages, &call(3, "reset_counter")).await;
    let refused = events.for_view(&mut logs).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // The host's log says the view initialized (on its own schedule: read on until it
    // does, each read bounded).
    while !logs.iter().any(|l| l == "view initialized") {
        let (name, line) = events.next().await;
        assert_eq!(
            name.as_deref(),
            Some("log"),
            "only log lines are left: {line}"
        );
        logs.push(line);
    }

    // Bad requests are told apart.
    assert_eq!(host.post("/views", &json!("x")).await.status(), 400);
    assert_eq!(
        host.post("/views", &json!({"tool": "nope"})).await.status(),
        404
    );
    assert_eq!(host.get("/views/999/events").await.status(), 404);
    let not_json = host
        .send(host.http.post(host.url(&messages)).body("{"))
        .await;
    assert_eq!(not_json.status(), 400);
    // Another site's page, or another name for this address, is refused.
    let from_elsewhere = host
        .http
        .post(host.url("/views"))
        .header("origin", "http://attacker.example")
        .body(json!({"tool": "show_counter"}).to_string());
    let elsewhere = host.send(from_elsewhere).await;
    assert_eq!(elsewhere.status(), 403);
    let rebound = host
        .http
        .get(host.url("/"))
        .header("host", "rebound.example");
    let renamed = host.send(rebound).await;
    assert_eq!(renamed.status(), 403);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_official_bridge_page_calls_through_the_host_with_the_same_rule() {
    let (dir, host) = start_with_a_bundle("official").await;

    let page = host.get("/official").await;
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("/official/app-bridge.js")
    );
    let served = host.get("/official/app-bridge.js").await;
    assert_eq!(
        served.text().await.unwrap(),
        "export const AppBridge = class {};\n"
    );

    let opened = host
        .post_json(
            "/views",
            &json!({"tool": "show_counter", "arguments": {"label": "x"}, "bridge": "official"}),
        )
        .await;
    let id = opened["id"].as_u64().unwrap();
    // What the page's bridge sends the proxy.
    assert!(
        opened["html"]
            .as_str()
            .unwrap()
            .contains("<title>Counter</title>")
    );
    assert_eq!(
        opened["domains"]["resourceDomains"],
        json!(["https://unpkg.com"])
    );
    // No Rust bridge behind this view.
    assert_eq!(host.get(&format!("/views/{id}/events")).await.status(), 404);

    let run = host
        .post_json(&format!("/views/{id}/run"), &json!({}))
        .await;
    let count = run["result"]["structuredContent"]["count"]
        .as_i64()
        .unwrap();
    let call = format!("/views/{id}/call");
    let clicked = host
        .post_json(&call, &json!({"name": "increment", "arguments": {}}))
        .await;
    assert_eq!(clicked["result"]["structuredContent"]["count"], count + 1);
    let refused = host
        .post_json(&call, &json!({"name": "reset_counter"}))
        .await;
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(
        refused["error"]["message"],
        "the tool reset_counter is not visible to apps"
    );
    let unknown = host.post_json(&call, &json!({"name": "other"})).await;
    assert_eq!(unknown["error"]["message"], "Unknown tool: other");
    let malformed = host
        .post_json(&call, &json!({"name": "increment", "arguments": [1]}))
        .await;
    assert_eq!(malformed["error"]["code"], -32602);
    assert_eq!(
        host.post(
            "/views",
            &json!({"tool": "show_counter", "bridge": "other"})
        )
        .await
        .status(),
        400
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
