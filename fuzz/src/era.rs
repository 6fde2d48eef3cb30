//! A 2026-07-28 request's envelope and its headers, checked together.
//!
//! Each input builds one POST of the 2026-07-28 era from choices read off its bytes: the
//! method in the body and in `Mcp-Method`, the tool name in the body and in `Mcp-Name`,
//! the revision in `MCP-Protocol-Version` and in the body's `_meta`, each header written
//! once, twice with the same value, twice with different values, or as a comma-joined
//! list; the rest of the input is the tool's arguments. The oracle:
//!
//! - the service answers with a status in bounded (virtual) time, never 500;
//! - a request whose headers each appear once and agree with its body is served (200)
//!   (`Mcp-Name` is compared with the body only for `tools/call`; on `tools/list` it
//!   is refused only when it is on two lines);
//! - a request where any of them disagrees, or appears more than once, is refused
//!   (4xx) — never served with whichever line a reader happened to take;
//! - a JSON answer is one JSON-RPC message; a refusal of a header that disagrees with
//!   the body carries the header-mismatch error (-32020).

use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use modelctx_http::{StreamableHttpServerConfig, StreamableHttpService};
use modelctx_server::{Server, ToolDef};
use modelctx_types::{CallToolResult, Tool};
use tower::ServiceExt;

const ANSWER_WITHIN: Duration = Duration::from_secs(30);
const REVISION: &str = "2026-07-28";

/// How one header is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Once, agreeing with the body.
    Once,
    /// Left out.
    Absent,
    /// Once, with another value than the body's.
    Other,
    /// Twice with the body's value.
    TwiceSame,
    /// Twice: the body's value, then another.
    TwiceDiffering,
    /// One line: the body's value, a comma, another.
    Listed,
}

impl Written {
    fn from_byte(b: u8) -> Self {
        match b % 8 {
            0..=2 => Written::Once,
            3 => Written::Absent,
            4 => Written::Other,
            5 => Written::TwiceSame,
            6 => Written::TwiceDiffering,
            _ => Written::Listed,
        }
    }

    /// Whether a request with this header written so may be served.
    fn servable(self) -> bool {
        self == Written::Once
    }

    fn lines(self, value: &str, other: &str) -> Vec<String> {
        match self {
            Written::Once => vec![value.to_owned()],
            Written::Absent => Vec::new(),
            Written::Other => vec![other.to_owned()],
            Written::TwiceSame => vec![value.to_owned(), value.to_owned()],
            Written::TwiceDiffering => vec![value.to_owned(), other.to_owned()],
            Written::Listed => vec![format!("{value}, {other}")],
        }
    }
}

fn service() -> StreamableHttpService {
    let schema = serde_json::json!({"type": "object"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let echo = ToolDef::with_schema(Tool::new("echo", schema), |args, _cx| async move {
        Ok::<_, String>(CallToolResult::text(
            serde_json::Value::Object(args).to_string(),
        ))
    });
    let server = Server::builder("fuzz", "1.0.0")
        .tool(echo)
        .expect("the echo tool registers")
        .stateless_era(true)
        .build();
    StreamableHttpService::with_config(
        StreamableHttpServerConfig::default().json_response(),
        move |transport| {
            server.serve(transport);
        },
    )
}

/// Checks one input.
pub fn check(data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let (method_header, name_header, version_header) = (
        Written::from_byte(data[0]),
        Written::from_byte(data[1]),
        Written::from_byte(data[2]),
    );
    // tools/call names a tool; tools/list does not (Mcp-Name then must be absent).
    let call = data[0] & 0x80 == 0;
    let (method, other_method) = if call {
        ("tools/call", "tools/list")
    } else {
        ("tools/list", "tools/call")
    };
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&data[3..]).unwrap_or_default();
    let mut params = serde_json::json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": REVISION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"}
        }
    });
    if call {
        params["name"] = "echo".into();
        params["arguments"] = serde_json::Value::Object(arguments);
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});

    let mut request = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json");
    for line in method_header.lines(method, other_method) {
        request = request.header("mcp-method", line);
    }
    // Mcp-Name belongs to the methods that name something (tools/call here); on
    // tools/list it means nothing and is not read, however it is written.
    for line in name_header.lines("echo", "other") {
        request = request.header("mcp-name", line);
    }
    for line in version_header.lines(REVISION, "2025-11-25") {
        request = request.header("mcp-protocol-version", line);
    }
    let Ok(request) = request.body(Body::from(body.to_string())) else {
        return;
    };
    // On tools/list Mcp-Name is not compared with anything, but a header of one meaning
    // on two lines is refused whatever the method (an intermediary may read either).
    let name_servable = if call {
        name_header.servable()
    } else {
        !matches!(name_header, Written::TwiceSame | Written::TwiceDiffering)
    };
    let servable = method_header.servable() && name_servable && version_header.servable();

    let service = service();
    crate::runtime().block_on(async {
        let answer = tokio::time::timeout(ANSWER_WITHIN, service.router().oneshot(request))
            .await
            .expect("the service did not answer within the time bound");
        let Ok(response) = answer;
        let status = response.status();
        assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR, "the service answered 500");
        let json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let bytes = tokio::time::timeout(ANSWER_WITHIN, response.into_body().collect())
            .await
            .expect("the body did not end within the time bound")
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let message: Option<serde_json::Value> = json
            .then(|| serde_json::from_slice(&bytes).expect("a JSON answer is JSON"));
        if servable {
            assert_eq!(
                status,
                StatusCode::OK,
                "a request whose headers agree with its body was refused: {}",
                String::from_utf8_lossy(&bytes)
            );
        } else {
            assert!(
                status.is_client_error(),
                "a request with a header absent, repeated or disagreeing \
                 (method {method_header:?}, name {name_header:?}, version {version_header:?}) \
                 was answered {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
        if let Some(message) = &message {
            assert_eq!(message["jsonrpc"], "2.0", "not a JSON-RPC message: {message}");
            let differs =
                |w: Written| matches!(w, Written::Other | Written::TwiceDiffering | Written::Listed);
            let disagrees = (differs(method_header) || (call && differs(name_header)))
                && version_header == Written::Once;
            if disagrees && !servable {
                assert_eq!(
                    message["error"]["code"], -32020,
                    "a header that disagrees with the body is a header mismatch: {message}"
                );
            }
        }
        service.close_all_sessions();
        // Time is paused: this returns once every task that can run has run, so no task
        // of this input outlives it.
        tokio::time::sleep(Duration::from_secs(1)).await;
    });
    assert_eq!(service.session_count(), 0, "a session outlived close_all_sessions");
}
