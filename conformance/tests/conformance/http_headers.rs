//! Streamable HTTP in the 2026-07-28 era: how the server checks the headers that mirror
//! the body (standard headers, `Mcp-Param-*`), in any name casing, and how it marks an
//! answer that became a stream. Raw POSTs against a hosted `Server`; the client side of
//! the same rules is in `http_modern.rs`.

use std::sync::Arc;

use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::session::Progress;
use modelctx::types::ErrorCode;
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::http_modern::{
    both_eras, echo_server, envelope, modern_call, post_modern, raw_both_eras, regional_server,
};
use crate::http_support::{ACCEPT_BOTH, Raw, RawResponse, send};
use crate::support::server_with_tool;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_standard_header_that_contradicts_the_body_is_400,
            ["hosting:http:modern:std-header-mismatch-400"]
        ),
        conformance_test!(
            a_missing_standard_header_is_400,
            ["hosting:http:modern:missing-standard-header-rejected"]
        ),
        conformance_test!(
            a_request_without_the_version_header_is_400,
            ["hosting:http:modern:missing-protocol-version-header-rejected"]
        ),
        conformance_test!(
            a_version_header_contradicting_the_envelope_is_400,
            ["hosting:http:modern:protocol-version-meta-mismatch-400"]
        ),
        conformance_test!(
            a_base64_name_is_decoded_before_it_is_compared,
            ["hosting:http:modern:sentinel-decoded-before-validation"]
        ),
        conformance_test!(
            a_param_header_contradicting_its_argument_is_400,
            ["hosting:http:modern:mcp-param-mismatch-400"]
        ),
        conformance_test!(
            null_or_absent_arguments_need_no_param_header,
            ["hosting:http:modern:mcp-param-null-absent-not-required"]
        ),
        conformance_test!(
            a_param_header_with_bytes_outside_visible_ascii_is_400,
            ["hosting:http:modern:invalid-header-chars-rejected"]
        ),
        conformance_test!(
            integer_params_compare_as_numbers,
            ["hosting:http:modern:numeric-header-comparison"]
        ),
        conformance_test!(
            header_names_match_in_any_case,
            ["hosting:http:modern:header-name-case-insensitive"]
        ),
        conformance_test!(
            a_streamed_answer_tells_proxies_not_to_buffer,
            ["hosting:http:sse-x-accel-buffering"]
        ),
        conformance_test!(
            discover_carries_caching_hints,
            ["caching:hints:server-discover"]
        ),
        conformance_test!(
            json_response_mode_sends_the_answer_alone,
            ["hosting:http:modern:json-response-mode"]
        ),
        conformance_test!(
            a_request_header_reaches_the_handler_in_both_eras,
            ["hosting:http:request-headers-in-handler"]
        ),
    ]
}

/// A tool that reports progress, then answers: something to stream, or to drop.
fn progressing() -> Server {
    let tool = ToolDef::new("progressing", |_: NoArgs, cx: Context| async move {
        cx.report_progress(Progress::new(1.0))
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>("done")
    });
    server_with_tool("progressing", tool)
}

async fn json_response_mode_sends_the_answer_alone(_: Connector) {
    let config = modelctx::http::StreamableHttpServerConfig::default().json_response();
    let hosted = crate::http_support::host(progressing(), config).await;
    let raw = Raw::new(&hosted.url);
    let mut body = modern_call(
        1,
        "tools/call",
        json!({"name": "progressing", "arguments": {}}),
    );
    body["params"]["_meta"]["progressToken"] = json!("p");
    let r = post_modern(&raw, &body, Some("progressing")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "{r:?}"
    );
    // The terminal response only: the progress notification was dropped.
    let answer = r.only_message();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
}

async fn a_request_header_reaches_the_handler_in_both_eras(connector: Connector) {
    let tenant = ToolDef::new("tenant", |_: NoArgs, cx: Context| async move {
        let headers = cx.extensions().get::<http::HeaderMap>().cloned();
        Ok::<_, String>(
            headers
                .and_then(|h| {
                    h.get("x-tenant")
                        .and_then(|v| v.to_str().ok().map(str::to_owned))
                })
                .unwrap_or_else(|| "none".to_owned()),
        )
    });
    let server = server_with_tool("tenants", tenant);
    let hosted = crate::http_support::host_on(
        &connector,
        server,
        modelctx::http::StreamableHttpServerConfig::default(),
    )
    .await;
    let raw = Raw::new(&hosted.url);
    let call = |id: i64| {
        crate::http_support::call(id, "tools/call", json!({"name": "tenant", "arguments": {}}))
    };
    // The handshake era: a session, then a call carrying the header.
    let session = raw.init().await;
    let r = send(
        raw.post(Some(&session), &call(2))
            .header("x-tenant", "acme"),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    let answer = r
        .messages()
        .into_iter()
        .find(|m| m["id"] == 2)
        .expect("the call's answer");
    assert_eq!(answer["result"]["content"][0]["text"], "acme", "{answer}");
    // The 2026-07-28 era: one exchange, no session.
    let body = modern_call(3, "tools/call", json!({"name": "tenant", "arguments": {}}));
    let rb = raw
        .request(http::Method::POST)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "tenant")
        .header("x-tenant", "globex");
    let r = send(rb.body(body.to_string())).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.only_message()["result"]["content"][0]["text"], "globex");
}

async fn discover_carries_caching_hints(_: Connector) {
    let server = Server::builder("cached", "1.0.0")
        .cache_hints(
            std::time::Duration::from_millis(30_000),
            modelctx::types::CacheScope::Public,
        )
        .build();
    let (_hosted, raw) = raw_both_eras(server).await;
    let r = post_modern(&raw, &modern_call(1, "server/discover", json!({})), None).await;
    assert_eq!(r.status, 200, "{r:?}");
    let result = r.only_message()["result"].clone();
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["ttlMs"], 30_000, "{result}");
    assert_eq!(result["cacheScope"], "public", "{result}");
    // Without hints of its own, a server still stamps them: 0, private.
    let (_hosted, raw) = raw_both_eras(echo_server()).await;
    let r = post_modern(&raw, &modern_call(2, "server/discover", json!({})), None).await;
    let result = r.only_message()["result"].clone();
    assert_eq!(result["ttlMs"], 0, "{result}");
    assert_eq!(result["cacheScope"], "private", "{result}");
}

/// `400` with a JSON-RPC `-32020` (`HeaderMismatch`) answering request `id`.
fn assert_header_mismatch(r: &RawResponse, id: i64) {
    assert_eq!(r.status, 400, "{r:?}");
    r.assert_error_answer(id, ErrorCode::HEADER_MISMATCH);
}

/// A POST of `body` with exactly the headers `headers` (besides the content ones).
async fn post_with(raw: &Raw, body: &Value, headers: &[(&str, &[u8])]) -> RawResponse {
    let mut rb = raw
        .request(http::Method::POST)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH);
    for (name, value) in headers {
        let value = http::HeaderValue::from_bytes(value).expect("a header value");
        rb = rb.header(*name, value);
    }
    send(rb.body(body.to_string())).await
}

/// A `tools/call` of `hello` (request 1) with exactly the headers `headers`, to a server
/// of both eras.
async fn hello_posted_with(headers: &[(&str, &[u8])]) -> RawResponse {
    let hosted = both_eras(echo_server()).await;
    post_with(&Raw::new(&hosted.url), &hello_call(1), headers).await
}

/// Asserts that `r` is the `hello` tool's answer, served.
fn assert_said_hi(r: &RawResponse) {
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.only_message()["result"]["content"][0]["text"], "hi");
}

fn hello_call(id: i64) -> Value {
    modern_call(id, "tools/call", json!({"name": "hello", "arguments": {}}))
}

async fn a_standard_header_that_contradicts_the_body_is_400(_: Connector) {
    let (_hosted, raw) = raw_both_eras(echo_server()).await;
    let version: &[u8] = b"2026-07-28";
    let contradicting: [(i64, &[u8], &[u8]); 2] = [
        // Mcp-Method names another method than the body.
        (1, b"tools/list", b"hello"),
        // Mcp-Name names another tool than the body.
        (2, b"tools/call", b"goodbye"),
    ];
    for (id, method, name) in contradicting {
        let headers = [
            ("mcp-protocol-version", version),
            ("mcp-method", method),
            ("mcp-name", name),
        ];
        let r = post_with(&raw, &hello_call(id), &headers).await;
        assert_header_mismatch(&r, id);
    }
    // The same request with agreeing headers is served.
    let r = post_modern(&raw, &hello_call(3), Some("hello")).await;
    assert_said_hi(&r);
}

async fn a_missing_standard_header_is_400(_: Connector) {
    let (_hosted, raw) = raw_both_eras(echo_server()).await;
    let version: &[u8] = b"2026-07-28";
    // No Mcp-Method, on a request of any method.
    let discover = modern_call(1, "server/discover", json!({}));
    let r = post_with(&raw, &discover, &[("mcp-protocol-version", version)]).await;
    assert_header_mismatch(&r, 1);
    // No Mcp-Name on a method that names its target.
    let r = post_with(
        &raw,
        &hello_call(2),
        &[
            ("mcp-protocol-version", version),
            ("mcp-method", b"tools/call"),
        ],
    )
    .await;
    assert_header_mismatch(&r, 2);
}

async fn a_request_without_the_version_header_is_400(_: Connector) {
    // A 2026-07-28 envelope in the body, every other header right, no version header:
    // this server serves no client older than the header, so it refuses.
    let r = hello_posted_with(&[("mcp-method", b"tools/call"), ("mcp-name", b"hello")]).await;
    assert_header_mismatch(&r, 1);
}

async fn a_version_header_contradicting_the_envelope_is_400(_: Connector) {
    // Both values are revisions the server serves; they disagree. The mismatch is what
    // is refused, before any check of the version itself.
    let r = hello_posted_with(&[
        ("mcp-protocol-version", b"2025-11-25"),
        ("mcp-method", b"tools/call"),
        ("mcp-name", b"hello"),
    ])
    .await;
    assert_header_mismatch(&r, 1);
    let message = r.only_message()["error"]["message"].to_string();
    assert!(message.contains("MCP-Protocol-Version"), "{message}");
}

async fn a_base64_name_is_decoded_before_it_is_compared(_: Connector) {
    let (_hosted, raw) = raw_both_eras(echo_server()).await;
    // "hello" in the spec's Base64 sentinel: the same name once decoded.
    let r = post_modern(&raw, &hello_call(1), Some("=?base64?aGVsbG8=?=")).await;
    assert_said_hi(&r);
    // Decoding to another name is a mismatch.
    let r = post_modern(&raw, &hello_call(2), Some("=?base64?aGVsbA==?=")).await;
    assert_header_mismatch(&r, 2);
}

/// A `tools/call` of the `regional` tool with `arguments`, its headers the standard
/// ones plus `params`.
async fn regional(raw: &Raw, id: i64, arguments: Value, params: &[(&str, &[u8])]) -> RawResponse {
    let body = modern_call(
        id,
        "tools/call",
        json!({"name": "regional", "arguments": arguments}),
    );
    let mut headers: Vec<(&str, &[u8])> = vec![
        ("mcp-protocol-version", b"2026-07-28"),
        ("mcp-method", b"tools/call"),
        ("mcp-name", b"regional"),
    ];
    headers.extend_from_slice(params);
    post_with(raw, &body, &headers).await
}

/// The `Mcp-Param-Region` header, with `value`.
fn region(value: &[u8]) -> [(&'static str, &[u8]); 1] {
    [("mcp-param-region", value)]
}

fn ran_in(r: &RawResponse) -> Value {
    assert_eq!(r.status, 200, "{r:?}");
    r.only_message()["result"]["content"][0]["text"].clone()
}

async fn a_param_header_contradicting_its_argument_is_400(_: Connector) {
    let (_hosted, raw) = raw_both_eras(regional_server()).await;
    let r = regional(&raw, 1, json!({"region": "eu-west1"}), &region(b"us-east1")).await;
    assert_header_mismatch(&r, 1);
    // The value in the body without its header: refused as well.
    let r = regional(&raw, 2, json!({"region": "eu-west1"}), &[]).await;
    assert_header_mismatch(&r, 2);
    let r = regional(&raw, 3, json!({"region": "eu-west1"}), &region(b"eu-west1")).await;
    assert_eq!(ran_in(&r), "ran in eu-west1");
}

async fn null_or_absent_arguments_need_no_param_header(_: Connector) {
    let (_hosted, raw) = raw_both_eras(regional_server()).await;
    // Absent: served.
    let r = regional(&raw, 1, json!({}), &[]).await;
    assert_eq!(ran_in(&r), "ran in ?");
    // Null: past the header check (a result, not a `-32020`); the tool's schema then
    // refuses a null string in its own terms, as a tool error.
    let r = regional(&raw, 2, json!({"region": null, "shards": null}), &[]).await;
    assert_eq!(r.status, 200, "{r:?}");
    let answer = r.only_message();
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
}

async fn a_param_header_with_bytes_outside_visible_ascii_is_400(_: Connector) {
    let (_hosted, raw) = raw_both_eras(regional_server()).await;
    // "café" as raw Latin-1 bytes: a value must be visible ASCII or the Base64 sentinel.
    let r = regional(&raw, 1, json!({"region": "café"}), &region(b"caf\xe9")).await;
    assert_header_mismatch(&r, 1);
}

async fn integer_params_compare_as_numbers(_: Connector) {
    let (_hosted, raw) = raw_both_eras(regional_server()).await;
    for (id, header) in [(1, &b"42"[..]), (2, b"42.0")] {
        let r = regional(
            &raw,
            id,
            json!({"region": "eu", "shards": 42}),
            &[("mcp-param-region", b"eu"), ("mcp-param-shards", header)],
        )
        .await;
        assert_eq!(ran_in(&r), "ran in eu", "Mcp-Param-Shards {header:?}");
    }
    let r = regional(
        &raw,
        3,
        json!({"region": "eu", "shards": 42}),
        &[("mcp-param-region", b"eu"), ("mcp-param-shards", b"43")],
    )
    .await;
    assert_header_mismatch(&r, 3);
}

async fn header_names_match_in_any_case(_: Connector) {
    let hosted = both_eras(echo_server()).await;
    // Written byte for byte: an HTTP client library would normalise the names' case.
    let url: url::Url = hosted.url.parse().expect("the endpoint's URL");
    let address = format!(
        "{}:{}",
        url.host_str().expect("a host"),
        url.port_or_known_default().expect("a port")
    );
    let body = hello_call(1).to_string();
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nMCP-PROTOCOL-VERSION: 2026-07-28\r\nmcp-METHOD: tools/call\r\n\
         McP-NaMe: hello\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        url.path(),
        body.len()
    );
    let text = within("a raw HTTP exchange", async {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"text\":\"hi\""), "{text}");
}

async fn a_streamed_answer_tells_proxies_not_to_buffer(_: Connector) {
    // The tool reports progress, then waits for the test: its answer cannot be one JSON
    // body, so it becomes a stream.
    let go = Arc::new(tokio::sync::Notify::new());
    let release = go.clone();
    let slow = ToolDef::new("slow", move |_: NoArgs, cx: Context| {
        let go = release.clone();
        async move {
            cx.report_progress(Progress::new(1.0))
                .await
                .map_err(|e| e.to_string())?;
            go.notified().await;
            Ok::<_, String>("done")
        }
    });
    let server = Server::builder("slow", "1.0.0").tool(slow).unwrap().build();
    let hosted = both_eras(server).await;
    let mut meta = envelope();
    meta["progressToken"] = json!("p");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "slow", "arguments": {}, "_meta": meta}});
    let response = within("the head of the answer", async {
        reqwest::Client::new()
            .post(&hosted.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "slow")
            .body(body.to_string())
            .send()
            .await
            .expect("the server answers")
    })
    .await;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("content-type").as_deref(), Some("text/event-stream"));
    assert_eq!(header("x-accel-buffering").as_deref(), Some("no"));
    go.notify_one();
    let text = within("the rest of the stream", response.text())
        .await
        .unwrap();
    assert!(text.contains("notifications/progress"), "{text}");
    assert!(text.contains("\"done\""), "{text}");
}
