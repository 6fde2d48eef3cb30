//! The headers of the stateless era (protocol 2026-07-28): what a request mirrors from
//! its body, and which tool arguments go into `Mcp-Param-*` headers.
//!
//! A request is of the era when the protocol version in its `_meta` says so: it gets its
//! own POST without session, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (core methods
//! by name, any other from the message's `name_param`) and `Mcp-Param-*` (from the
//! `x-mcp-header` arguments of the tools the last `tools/list` named; values that cannot
//! travel plain in the `=?base64?…?=` form). A refusal with an HTTP error status is read as
//! the JSON-RPC error it carries. Each such POST runs on a task whose abort handle the
//! transport keeps: the session's `notifications/cancelled` for it aborts the task (closing
//! the response stream, the era's cancellation over HTTP) instead of being POSTed; a
//! cancellation naming no open POST is dropped.

use modelctx_types::{JsonRpcRequest, mirror};

use super::ClientInner;
use crate::headers::MCP_PROTOCOL_VERSION;

/// The headers a request of the stateless era mirrors from its body:
/// `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for the methods that name a
/// tool, prompt, resource or (the tasks extension) task (Base64 in the `=?base64?…?=` form when the value is not a
/// plain header value). Any other method names the params key its `Mcp-Name` mirrors
/// through the message's routing metadata (`name_param`, from its request type's
/// `RequestMethod::NAME_PARAM`): the transport needs no list of vendor methods.
pub(super) fn era_headers(
    request: &JsonRpcRequest,
    version: &str,
    name_param: Option<&'static str>,
) -> Vec<(String, String)> {
    let mut headers = vec![
        (MCP_PROTOCOL_VERSION.to_owned(), version.to_owned()),
        ("mcp-method".to_owned(), request.method.to_string()),
    ];
    let field = match request.method.as_ref() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        // The tasks extension: the task routes its requests.
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => match name_param {
            Some(field) => field,
            None => return headers,
        },
    };
    let value = request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
        .and_then(|p| p.get(field).and_then(|v| v.as_str()).map(str::to_owned));
    if let Some(value) = value {
        headers.push(("mcp-name".to_owned(), mirror::header_value(&value)));
    }
    headers
}

/// The `Mcp-Param-{Name}` headers of a `tools/call`: each argument the tool's schema
/// marks with `x-mcp-header` (as learned from `tools/list`) that has a value — a
/// string as is (or Base64 when it cannot travel plain), an integer in decimal, a
/// boolean as `true`/`false`; no header for a missing or null value.
pub(super) fn param_headers(
    inner: &ClientInner,
    request: &JsonRpcRequest,
) -> Vec<(String, String)> {
    let Some(params) = request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
    else {
        return Vec::new();
    };
    let Some(name) = params.get("name").and_then(|n| n.as_str()) else {
        return Vec::new();
    };
    let marked = inner
        .state()
        .param_headers
        .get(name)
        .cloned()
        .unwrap_or_default();
    marked
        .into_iter()
        .filter_map(|m| {
            let text = mirror::argument_text(params.get("arguments"), &m.path)?;
            Some((
                format!("mcp-param-{}", m.header),
                mirror::header_value(&text),
            ))
        })
        .collect()
}

/// Remembers, from a `tools/list` answer of the stateless era, which arguments each
/// tool mirrors into headers.
pub(super) fn learn_param_headers(inner: &ClientInner, result: &modelctx_types::RawValue) {
    #[derive(serde::Deserialize)]
    struct Listed {
        tools: Vec<serde_json::Value>,
    }
    let Ok(listed) = serde_json::from_str::<Listed>(result.get()) else {
        return;
    };
    let mut st = inner.state();
    for tool in listed.tools {
        let (Some(name), Some(schema)) = (
            tool.get("name").and_then(|n| n.as_str()),
            tool.get("inputSchema"),
        ) else {
            continue;
        };
        st.param_headers
            .insert(name.to_owned(), mirror::mirrored_params(schema));
    }
}
