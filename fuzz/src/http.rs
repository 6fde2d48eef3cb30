//! The streamable HTTP service as a `tower::Service`, fed sequences of requests.
//!
//! Input, as text (so the seed corpus reads like HTTP):
//!
//! ```text
//! config: stateless json legacy      <- optional first line: the service's settings
//! POST /mcp                          <- a method and an optional path
//! accept: application/json, text/event-stream
//! mcp-session-id: $session           <- `$session`: the last Mcp-Session-Id answered
//!
//! {"jsonrpc":"2.0","id":1,"method":"initialize","params":{...}}
//! ===                                <- the next request
//! GET
//! ...
//! ```
//!
//! Each request goes to a fresh service (one per input; a real `Server` with one tool
//! behind it) through `ServiceExt::oneshot`. The service must answer every request with
//! a status within a bounded (virtual) time, never 500; a JSON body must be JSON-RPC,
//! and every SSE event carrying data must hold one JSON-RPC message. Streams that stay
//! open (GET) are read until they go quiet. At the end every session is closed and the
//! runtime drained, so no task outlives its input.

use std::time::Duration;

use axum::body::Body;
use http::{HeaderName, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use modelctx_http::{StreamableHttpServerConfig, StreamableHttpService};
use modelctx_server::{Server, ToolDef};
use modelctx_http::sse::SseParser;
use modelctx_types::{CallToolResult, JsonRpcMessageV2025_03_26, Tool};
use tower::ServiceExt;

/// How long (virtual time) the service may take to answer a request.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// How long (virtual time) a response stream may stay quiet before we stop reading.
const QUIET: Duration = Duration::from_secs(5);
/// At most this many body frames are read per response.
const MAX_FRAMES: usize = 64;
/// At most this many requests per input.
const MAX_REQUESTS: usize = 16;

fn server(stateless_era: bool) -> Server {
    let tool = Tool::new(
        "echo",
        serde_json::json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let echo = ToolDef::with_schema(tool, |args, _cx| async move {
        Ok::<_, String>(CallToolResult::text(
            serde_json::Value::Object(args).to_string(),
        ))
    });
    Server::builder("fuzz", "1.0.0")
        .tool(echo)
        .expect("the echo tool registers")
        .stateless_era(stateless_era)
        .build()
}


/// One request as written in the input.
struct Written<'a> {
    method: &'a str,
    path: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    body: &'a str,
}

fn parse_request(text: &str) -> Option<Written<'_>> {
    let (head, body) = match text.split_once("\n\n") {
        Some((head, body)) => (head, body),
        None => (text, ""),
    };
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?;
    let path = first.next().unwrap_or("/mcp");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim(), v.trim()))
        .collect();
    Some(Written {
        method,
        path,
        headers,
        body,
    })
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (settings, requests) = match text.strip_prefix("config:") {
        Some(rest) => rest.split_once('\n').unwrap_or((rest, "")),
        None => ("", text),
    };
    let words: Vec<&str> = settings.split_whitespace().collect();
    let mut config = StreamableHttpServerConfig::default();
    if words.contains(&"stateless") {
        config = config.sessionless();
    }
    if words.contains(&"json") {
        config = config.json_response();
    }
    let server = server(!words.contains(&"legacy"));
    let service = StreamableHttpService::with_config(config, move |transport| {
        server.serve(transport);
    });
    let requests: Vec<Written<'_>> = requests
        .split("\n===\n")
        .filter_map(parse_request)
        .take(MAX_REQUESTS)
        .collect();

    crate::runtime().block_on(async {
        let mut session: Option<HeaderValue> = None;
        for written in &requests {
            let Some(request) = build(written, session.as_ref()) else {
                continue;
            };
            let answer = tokio::time::timeout(ANSWER_WITHIN, service.router().oneshot(request))
                .await
                .expect("the service did not answer within the time bound");
            let Ok(response) = answer;
            if let Some(id) = response.headers().get("mcp-session-id") {
                session = Some(id.clone());
            }
            let status = response.status();
            let body = check_response(response).await;
            if trace() {
                eprintln!(
                    "{} {} -> {status}\n{}",
                    written.method,
                    written.path,
                    String::from_utf8_lossy(&body)
                );
            }
        }
        service.close_all_sessions();
        // Time is paused: this returns once every task that can run has run.
        tokio::time::sleep(Duration::from_secs(1)).await;
    });
    assert_eq!(
        service.session_count(),
        0,
        "a session outlived close_all_sessions"
    );
}

fn build(written: &Written<'_>, session: Option<&HeaderValue>) -> Option<Request<Body>> {
    let method = Method::from_bytes(written.method.as_bytes()).ok()?;
    let mut request = Request::builder().method(method).uri(written.path);
    for (name, value) in &written.headers {
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
            continue;
        };
        let value = match (*value, session) {
            ("$session", Some(id)) => id.clone(),
            _ => match HeaderValue::from_str(value) {
                Ok(v) => v,
                Err(_) => continue,
            },
        };
        request = request.header(name, value);
    }
    request.body(Body::from(written.body.to_owned())).ok()
}

/// `MODELCTX_FUZZ_TRACE=1`: print each answer (to see how deep a seed gets).
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("MODELCTX_FUZZ_TRACE").is_some())
}

/// Checks one answer; returns the body bytes read.
async fn check_response(response: http::Response<Body>) -> Vec<u8> {
    let status = response.status();
    assert_ne!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "the service answered 500"
    );
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    let mut ended = false;
    for _ in 0..MAX_FRAMES {
        match tokio::time::timeout(QUIET, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    bytes.extend_from_slice(data);
                }
            }
            Ok(Some(Err(_))) | Ok(None) => {
                ended = true;
                break;
            }
            // Quiet: an open stream (GET, or a request still running).
            Err(_) => break,
        }
    }
    if content_type.starts_with("text/event-stream") {
        let mut parser = SseParser::new(usize::MAX);
        let events = parser.push(&bytes).expect("no cap");
        for event in events {
            if event.data.is_empty() {
                continue;
            }
            JsonRpcMessageV2025_03_26::from_slice(event.data.as_bytes()).unwrap_or_else(|e| {
                panic!(
                    "an SSE event is not a JSON-RPC message ({e}): {:?}",
                    event.data
                )
            });
        }
    } else if content_type.starts_with("application/json") && ended && !bytes.is_empty() {
        JsonRpcMessageV2025_03_26::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "a JSON body ({status}) is not JSON-RPC ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
    }
    bytes
}
