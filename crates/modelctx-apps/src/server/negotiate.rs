//! The layer that serves UI metadata per what the client declared: a client without
//! the extension gets no app-only tool in `tools/list` (nor may call one) and no
//! `_meta.ui` on the others. It reads the answers of every tool, however registered.

use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use modelctx_server::{McpRequest, Next};
use modelctx_types::{ErrorData, RawValue, to_raw};
use serde::Deserialize;
use serde_json::Value;
use tower::{Layer, Service, ServiceExt};

use crate::meta::{FLAT_RESOURCE_URI_KEY, supports_ui, visible_to_model};

/// Wraps the server's answering in [`Negotiate`].
#[derive(Debug, Clone, Default)]
pub(super) struct NegotiateLayer;

impl Layer<Next> for NegotiateLayer {
    type Service = Negotiate;

    fn layer(&self, next: Next) -> Negotiate {
        Negotiate { next }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Negotiate {
    next: Next,
}

#[derive(Deserialize)]
struct CallName {
    name: String,
}

impl Service<McpRequest> for Negotiate {
    type Response = Box<RawValue>;
    type Error = ErrorData;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: McpRequest) -> Self::Future {
        let next = self.next.clone();
        let ui = supports_ui(request.context().client_capabilities());
        match request.method() {
            "tools/list" => Box::pin(async move {
                let raw = next.oneshot(request).await?;
                reshape_list(raw, ui)
            }),
            "tools/call" if !ui => {
                // The tool's own definition decides, however it was registered (through
                // `Apps`, on the builder, or while the server runs).
                let server = request.context().server();
                let hidden = request.params_as::<CallName>().ok().filter(|p| {
                    server
                        .tool(&p.name)
                        .is_some_and(|tool| !visible_to_model(&tool))
                });
                match hidden {
                    // Answered as for a tool that does not exist: to this client it
                    // does not.
                    Some(p) => Box::pin(async move {
                        Err(ErrorData::invalid_params(format!(
                            "Unknown tool: {}",
                            p.name
                        )))
                    }),
                    None => Box::pin(next.oneshot(request)),
                }
            }
            _ => Box::pin(next.oneshot(request)),
        }
    }
}

/// Whether a tool's `_meta` links it to a UI (either form).
fn linked(tool: &Value) -> bool {
    tool.get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key("ui") || m.contains_key(FLAT_RESOURCE_URI_KEY))
}

/// Whether a listed tool is visible to the model.
fn for_model(tool: &Value) -> bool {
    match tool
        .pointer("/_meta/ui/visibility")
        .and_then(Value::as_array)
    {
        Some(list) => list.iter().any(|v| v.as_str() == Some("model")),
        None => true,
    }
}

/// A `tools/list` page as this client may see it. A page with no linked tool is passed
/// on untouched; one with linked tools differs by client, so a 2026-07-28 answer is
/// marked `private` for caches.
fn reshape_list(raw: Box<RawValue>, ui: bool) -> Result<Box<RawValue>, ErrorData> {
    let Ok(Value::Object(mut page)) = serde_json::from_str::<Value>(raw.get()) else {
        return Ok(raw);
    };
    let Some(Value::Array(tools)) = page.get_mut("tools") else {
        return Ok(raw);
    };
    if !tools.iter().any(linked) {
        return Ok(raw);
    }
    if !ui {
        tools.retain(for_model);
        for tool in tools.iter_mut() {
            strip_ui(tool);
        }
    }
    if page.contains_key("cacheScope") {
        page.insert("cacheScope".into(), Value::from("private"));
    }
    to_raw(&page).map_err(|e| ErrorData::internal_error(format!("cannot encode the page: {e}")))
}

/// Removes a tool's `_meta.ui` (and the flat key), and a `_meta` left empty.
fn strip_ui(tool: &mut Value) {
    let Some(object) = tool.as_object_mut() else {
        return;
    };
    let emptied = match object.get_mut("_meta").and_then(Value::as_object_mut) {
        Some(meta) => {
            meta.remove("ui");
            meta.remove(FLAT_RESOURCE_URI_KEY);
            meta.is_empty()
        }
        None => false,
    };
    if emptied {
        object.remove("_meta");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(value: Value) -> Box<RawValue> {
        to_raw(&value).unwrap()
    }

    fn read(raw: &RawValue) -> Value {
        serde_json::from_str(raw.get()).unwrap()
    }

    #[test]
    fn plain_clients_lose_app_only_tools_and_ui_meta() {
        let listed = json!({"tools": [
            {"name": "show", "inputSchema": {}, "_meta": {"ui": {"resourceUri": "ui://a"}, "other": 1}},
            {"name": "refresh", "inputSchema": {}, "_meta": {"ui": {"resourceUri": "ui://a", "visibility": ["app"]}}},
            {"name": "old", "inputSchema": {}, "_meta": {"ui/resourceUri": "ui://a"}},
            {"name": "plain", "inputSchema": {}}
        ], "ttlMs": 0, "cacheScope": "public"});
        let out = read(&reshape_list(page(listed.clone()), false).unwrap());
        assert_eq!(
            out,
            json!({"tools": [
                {"name": "show", "inputSchema": {}, "_meta": {"other": 1}},
                {"name": "old", "inputSchema": {}},
                {"name": "plain", "inputSchema": {}}
            ], "ttlMs": 0, "cacheScope": "private"})
        );
        let mut expected = listed;
        expected["cacheScope"] = json!("private");
        assert_eq!(
            read(&reshape_list(page(expected.clone()), true).unwrap()),
            expected
        );
    }

    #[test]
    fn pages_without_linked_tools_pass_untouched() {
        let text = r#"{"tools":[{"name":"plain","inputSchema":{}}],"cacheScope":"public"}"#;
        let raw = RawValue::from_string(text.to_owned()).unwrap();
        assert_eq!(reshape_list(raw, false).unwrap().get(), text);
    }

    #[test]
    fn visibility_reads_for_the_model() {
        assert!(for_model(
            &json!({"_meta": {"ui": {"visibility": ["model", "app"]}}})
        ));
        assert!(!for_model(
            &json!({"_meta": {"ui": {"visibility": ["app"]}}})
        ));
        assert!(for_model(&json!({"_meta": {"ui": {}}})));
    }
}
