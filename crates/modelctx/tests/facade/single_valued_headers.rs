//! A header the protocol gives one meaning, sent twice with different values, is
//! refused, never served from its first line: over raw HTTP against a real server, on
//! the streamable HTTP endpoint (both eras) and the legacy HTTP+SSE one. A proxy that
//! routes or authorizes on the last line would otherwise see another request than the
//! one the server runs. And the version and session headers at the boundary of the
//! eras: a 2026-07-28 request naming a 2025 session, a malformed version on
//! `initialize`.

use std::time::Duration;

use modelctx::http::StreamableHttpService;
use modelctx::server::{Context, Server, ToolDef};
use modelctx::sse::SseService;
use modelctx::types::{CallToolResult, JsonObject, Tool};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

/// `weather` (its `region` mirrored in `Mcp-Param-Region`) answers the region it was
/// given; `other` answers "other".
fn server() -> Server {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
    }});
    let schema: JsonObject = schema.as_object().cloned().unwrap_or_default();
    let weather = ToolDef::with_schema(
        Tool::new("weather", schema),
        |args: JsonObject, _cx: Context| async move {
            let region = args.get("region").and_then(Value::as_str).unwrap_or("none");
            Ok::<_, String>(CallToolResult::text(format!("weather in {region}")))
        },
    );
    let other = ToolDef::with_schema(
        Tool::without_arguments("other"),
        |_args: JsonObject, _cx: Context| async move { Ok::<_, String>(CallToolResult::text("other")) },
    );
    Server::builder("single", "1.0.0")
        .tool(weather)
        .unwrap()
        .tool(other)
        .unwrap()
        .build()
}

async fn streamable_url() -> String {
    let server = server();
    let service = StreamableHttpService::new(move |t| {
        server.serve(t);
    });
    let base = spawn_on_loopback(|l| service.serve(l, std::future::pending::<()>())).await;
    format!("{base}/mcp")
}

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    })
}

/// A `tools/call` of the era for `weather` in `region`.
fn call_weather(region: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "weather", "arguments": {"region": region}, "_meta": envelope()}})
}

/// `lines` as a header map, each pair its own line.
fn lines(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert(
        "accept",
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    map.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in pairs {
        map.append(
            HeaderName::from_static(name),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

/// Spawns `serve` on a fresh loopback listener: the listener's `http://` base URL.
async fn spawn_on_loopback<F, R>(serve: impl FnOnce(tokio::net::TcpListener) -> F) -> String
where
    F: std::future::Future<Output = R> + Send + 'static,
    R: Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve(listener));
    base
}

/// POSTs `body` to `url` with `headers`: the answer.
async fn send(url: &str, headers: HeaderMap, body: &Value) -> reqwest::Response {
    tokio::time::timeout(
        WAIT,
        reqwest::Client::new()
            .post(url)
            .headers(headers)
            .body(body.to_string())
            .send(),
    )
    .await
    .expect("answered in time")
    .expect("answered")
}

/// The status and the body as JSON (an SSE body: its one `data:` line).
async fn post(url: &str, headers: HeaderMap, body: &Value) -> (u16, Value) {
    let answer = send(url, headers, body).await;
    let status = answer.status().as_u16();
    let text = tokio::time::timeout(WAIT, answer.text())
        .await
        .expect("read in time")
        .expect("read");
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&text);
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// What a refused request drew: its HTTP status and JSON-RPC error code (`0` for an
/// answer that is no error).
fn outcome((status, body): &(u16, Value)) -> (u16, i64) {
    (*status, body["error"]["code"].as_i64().unwrap_or(0))
}

#[tokio::test]
async fn repeated_headers_of_the_2026_era_are_refused_with_header_mismatch() {
    let url = streamable_url().await;
    let era = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "weather"),
        ("mcp-param-region", "north"),
    ];
    // Sent once each: served.
    let (status, body) = post(&url, lines(&era), &call_weather("north")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "weather in north");

    // Two `Mcp-Method` lines: without the rule, served as the first (the tools list).
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": envelope()}});
    let two_methods = lines(&[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
        ("mcp-method", "tools/call"),
    ]);
    let mut refused = vec![("Mcp-Method", outcome(&post(&url, two_methods, &list).await))];

    // The tool call, each with one header doubled.
    let doubled: [(&str, &[(&str, &str)]); 4] = [
        // Two `Mcp-Name` lines, the first matching the body.
        (
            "Mcp-Name",
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "weather"),
                ("mcp-name", "other"),
                ("mcp-param-region", "north"),
            ],
        ),
        // Two `Mcp-Param-Region` lines, the first matching the body.
        (
            "Mcp-Param-Region",
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "weather"),
                ("mcp-param-region", "north"),
                ("mcp-param-region", "south"),
            ],
        ),
        // Two `MCP-Protocol-Version` lines, the era's first.
        (
            "MCP-Protocol-Version",
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "weather"),
                ("mcp-param-region", "north"),
            ],
        ),
        // ... or as one list.
        (
            "MCP-Protocol-Version as a list",
            &[
                ("mcp-protocol-version", "2026-07-28, 2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "weather"),
                ("mcp-param-region", "north"),
            ],
        ),
    ];
    for (what, headers) in doubled {
        let answer = post(&url, lines(headers), &call_weather("north")).await;
        refused.push((what, outcome(&answer)));
    }
    // Each refused with 400 and `HeaderMismatch`, none served from its first line.
    let want: Vec<_> = refused
        .iter()
        .map(|(what, _)| (*what, (400, -32020)))
        .collect();
    assert_eq!(refused, want);
}

/// A session of the handshake era: its `Mcp-Session-Id`.
async fn initialize(url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = send(url, lines(&[]), &init).await;
    assert_eq!(answer.status(), 200);
    answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn repeated_headers_of_the_handshake_era_are_refused_with_400() {
    let url = streamable_url().await;
    let mine = initialize(&url).await;
    let theirs = initialize(&url).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let version = ("mcp-protocol-version", "2025-11-25");
    let (status, _) = post(&url, lines(&[version, ("mcp-session-id", &mine)]), &list).await;
    assert_eq!(status, 200);

    // Two session ids: without the rule, served in the first one's session.
    let two = lines(&[
        version,
        ("mcp-session-id", &mine),
        ("mcp-session-id", &theirs),
    ]);
    let (status, body) = post(&url, two, &list).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Session-Id"),
        "{body}"
    );

    // Two `MCP-Protocol-Version` lines, both of the handshake era.
    let two = lines(&[
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-protocol-version", "2025-03-26"),
        ("mcp-session-id", &mine),
    ]);
    let (status, body) = post(&url, two, &list).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");

    // Two `Last-Event-ID` lines on the GET stream.
    let get = |ids: &[&str]| {
        let mut headers = HeaderMap::new();
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        headers.insert("mcp-session-id", HeaderValue::from_str(&mine).unwrap());
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        for id in ids {
            headers.append("last-event-id", HeaderValue::from_str(id).unwrap());
        }
        reqwest::Client::new().get(&url).headers(headers).send()
    };
    let answer = tokio::time::timeout(WAIT, get(&["0-1", "0-2"]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer.status(), 400);
    let text = answer.text().await.unwrap();
    assert!(
        text.contains("Last-Event-ID header is sent on more than one line"),
        "{text}"
    );
}

#[tokio::test]
async fn the_legacy_sse_transport_refuses_repeated_session_ids() {
    let server = server();
    let service = SseService::new(move |t| {
        server.serve(t);
    });
    let base = spawn_on_loopback(|l| service.serve(l, std::future::pending::<()>())).await;
    // Open a stream: its `endpoint` event names the message URL.
    let mut stream = tokio::time::timeout(WAIT, reqwest::get(format!("{base}/sse")))
        .await
        .unwrap()
        .unwrap();
    let mut seen = String::new();
    let endpoint = tokio::time::timeout(WAIT, async {
        loop {
            let chunk = stream.chunk().await.unwrap().expect("the endpoint event");
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(line) = seen.lines().find_map(|l| l.strip_prefix("data: ")) {
                return line.to_owned();
            }
        }
    })
    .await
    .unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let (status, _) = post(&format!("{base}{endpoint}"), lines(&[]), &ping).await;
    assert_eq!(status, 202);
    // The session id twice in the query: never read first-wins.
    let twice = format!("{base}{endpoint}&{}", endpoint.split('?').nth(1).unwrap());
    let (status, body) = post(&twice, lines(&[]), &ping).await;
    assert_eq!(status, 400, "{body}");
    // A header of one meaning twice on the message POST.
    let two = lines(&[
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-protocol-version", "2024-11-05"),
    ]);
    let (status, body) = post(&format!("{base}{endpoint}"), two, &ping).await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn a_2026_request_naming_a_live_2025_session_is_served_in_its_era() {
    let url = streamable_url().await;
    let session = initialize(&url).await;
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
        "params": {"_meta": envelope()}});
    let headers = lines(&[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
        ("mcp-session-id", &session),
    ]);
    let answer = send(&url, headers, &list).await;
    // The 2026-07-28 transport: "An `Mcp-Session-Id` header on a request: ignore it,
    // and do not mint or echo session IDs."
    assert_eq!(answer.status(), 200);
    assert!(answer.headers().get("mcp-session-id").is_none());
    let body: Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(body["result"]["tools"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn a_malformed_version_on_initialize_is_refused_for_the_version() {
    let url = streamable_url().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, body) = post(&url, lines(&[("mcp-protocol-version", "garbage")]), &init).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32022, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"garbage\""), "{message}");
    assert!(!message.contains("Mcp-Method"), "{message}");
    assert_eq!(body["error"]["data"]["requested"], "garbage");
    // The data lists what `server/discover` lists; the message names the handshake era too.
    assert_eq!(
        body["error"]["data"]["supported"],
        json!(["2026-07-28"]),
        "{body}"
    );
    assert!(message.contains("2025-11-25"), "{message}");
}
