//! What the bridge does with each message from the view: every one checked, requests
//! answered (from the host, or from the server through the client with the
//! extension's rules), notifications taken in, answers to the host's requests routed.

use std::sync::Arc;

use modelctx_session::RequestOptions;
use modelctx_types::{
    CallToolRequestParams, Cursor, ErrorCode, ErrorData, JsonObject, ListResourceTemplatesRequest,
    ListResourcesRequest, PaginatedRequestParams,
};
use serde_json::{Map, Value, json};

use super::types::{Decision, DisplayMode, ModelContext, UiMessage, ViewLog, ViewSize};
use super::{Phase, Shared, notification};
use crate::meta::{PROTOCOL_VERSION, callable_by_app, to_value};

/// The code of a refusal the dialect leaves to the implementation.
const REFUSED: ErrorCode = ErrorCode(-32000);
/// Too many of the view's requests in flight.
const TOO_MANY: ErrorCode = ErrorCode(-32005);

/// Takes one message from the view.
pub(super) fn handle(shared: &Arc<Shared>, message: Value) {
    let Value::Object(message) = message else {
        return reply(
            shared,
            Value::Null,
            Err(ErrorData::invalid_request("a message is a JSON object")),
        );
    };
    let id = message.get("id").cloned();
    let id_ok = id
        .as_ref()
        .is_some_and(|id| id.is_string() || id.is_i64() || id.is_u64());
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let id = if id_ok {
            id.unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        return reply(
            shared,
            id,
            Err(ErrorData::invalid_request("jsonrpc must be \"2.0\"")),
        );
    }
    let method = message.get("method").map(|m| m.as_str().map(str::to_owned));
    let params = message.get("params").cloned();
    match (id, method) {
        (Some(_), Some(_)) if !id_ok => reply(
            shared,
            Value::Null,
            Err(ErrorData::invalid_request(
                "an id is a string or an integer",
            )),
        ),
        (Some(id), Some(Some(method))) => request(shared, id, &method, params),
        (id, Some(None)) => {
            let id = if id_ok {
                id.unwrap_or(Value::Null)
            } else {
                Value::Null
            };
            reply(
                shared,
                id,
                Err(ErrorData::invalid_request("method must be a string")),
            );
        }
        (None, Some(Some(method))) => notified(shared, &method, params),
        (Some(id), None) => answered(shared, &id, &message),
        // Neither a request, a notification nor an answer, and nothing to answer to.
        (None, None) => {}
    }
}

fn reply(shared: &Shared, id: Value, outcome: Result<Value, ErrorData>) {
    let message = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": to_value(&error)}),
    };
    shared.send(message);
}

/// The params as an object (absent params are an empty one).
fn object(params: Option<Value>) -> Result<Map<String, Value>, ErrorData> {
    match params {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(ErrorData::invalid_params("params must be an object")),
    }
}

fn string(params: &Map<String, Value>, key: &str) -> Result<String, ErrorData> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ErrorData::invalid_params(format!("{key} must be a string")))
}

fn request(shared: &Arc<Shared>, id: Value, method: &str, params: Option<Value>) {
    let params = match object(params) {
        Ok(params) => params,
        Err(error) => return reply(shared, id, Err(error)),
    };
    if method == "ping" {
        return reply(shared, id, Ok(json!({})));
    }
    if method == "ui/initialize" {
        return reply(shared, id, initialize(shared, &params));
    }
    if !shared.state().answered {
        return reply(
            shared,
            id,
            Err(ErrorData::invalid_request(
                "the view has not sent ui/initialize",
            )),
        );
    }
    let Ok(permit) = shared.requests.clone().try_acquire_owned() else {
        return reply(
            shared,
            id,
            Err(ErrorData::new(TOO_MANY, "too many requests in flight")),
        );
    };
    let key = id.to_string();
    let task_shared = shared.clone();
    let method = method.to_owned();
    // Registered under the lock the task takes to unregister, so that it cannot finish
    // before it is known.
    let mut state = shared.state();
    let task = tokio::spawn(async move {
        let outcome = answer(&task_shared, &method, params).await;
        drop(permit);
        task_shared.state().in_flight.remove(&id.to_string());
        reply(&task_shared, id, outcome);
    });
    state.in_flight.insert(key, task.abort_handle());
}

async fn answer(
    shared: &Shared,
    method: &str,
    params: Map<String, Value>,
) -> Result<Value, ErrorData> {
    let server = shared.client.server_capabilities();
    match method {
        "tools/call" if server.tools.is_some() => call_tool(shared, params).await,
        "tools/list" if server.tools.is_some() => {
            let tools = shared.client.list_all_tools().await.map_err(upstream)?;
            let callable: Vec<_> = tools.into_iter().filter(callable_by_app).collect();
            Ok(json!({ "tools": to_value(&callable) }))
        }
        "resources/read" if server.resources.is_some() => {
            let uri = string(&params, "uri")?;
            let read = shared.client.read_resource(uri).await.map_err(upstream)?;
            Ok(to_value(&read))
        }
        "resources/list" if server.resources.is_some() => {
            let page = shared
                .client
                .request::<ListResourcesRequest>(page_params(&params)?)
                .await
                .map_err(upstream)?;
            Ok(to_value(&page))
        }
        "resources/templates/list" if server.resources.is_some() => {
            let page = shared
                .client
                .request::<ListResourceTemplatesRequest>(page_params(&params)?)
                .await
                .map_err(upstream)?;
            Ok(to_value(&page))
        }
        "ui/open-link" => open_link(shared, &params).await,
        "ui/message" => message(shared, &params).await,
        "ui/request-display-mode" => display_mode(shared, &params).await,
        "ui/update-model-context" => model_context(shared, &params).await,
        other => Err(ErrorData::method_not_found(other)),
    }
}

/// The server's error as the server sent it, else an internal error naming the cause.
fn upstream(error: modelctx_session::SessionError) -> ErrorData {
    match error.protocol_error() {
        Some(data) => data.clone(),
        None => ErrorData::internal_error(format!("the server did not answer: {error}")),
    }
}

fn page_params(params: &Map<String, Value>) -> Result<Option<PaginatedRequestParams>, ErrorData> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => {
            Ok(Some(PaginatedRequestParams::after(Cursor(cursor.clone()))))
        }
        Some(_) => Err(ErrorData::invalid_params("cursor must be a string")),
    }
}

/// The view's own server is the only one this bridge reaches; a tool of any other is
/// unknown here, and one not visible to the app is refused before any request.
async fn call_tool(shared: &Shared, params: Map<String, Value>) -> Result<Value, ErrorData> {
    let name = string(&params, "name")?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(arguments)) => Some(arguments.clone()),
        Some(_) => return Err(ErrorData::invalid_params("arguments must be an object")),
    };
    let tools = shared.client.list_all_tools().await.map_err(upstream)?;
    let Some(tool) = tools.iter().find(|t| t.name == name) else {
        return Err(ErrorData::invalid_params(format!("Unknown tool: {name}")));
    };
    if !callable_by_app(tool) {
        return Err(ErrorData::invalid_params(format!(
            "the tool {name} is not visible to apps"
        )));
    }
    let mut call = CallToolRequestParams::new(name);
    if let Some(arguments) = arguments {
        call = call.with_arguments(arguments);
    }
    let result = shared
        .client
        .call_tool_with(call, RequestOptions::default())
        .await
        .map_err(upstream)?;
    Ok(to_value(&result))
}

fn initialize(shared: &Shared, params: &Map<String, Value>) -> Result<Value, ErrorData> {
    for key in ["appCapabilities", "appInfo"] {
        if params.get(key).is_some_and(|v| !v.is_object()) {
            return Err(ErrorData::invalid_params(format!(
                "{key} must be an object"
            )));
        }
    }
    if params
        .get("protocolVersion")
        .is_some_and(|v| !v.is_string())
    {
        return Err(ErrorData::invalid_params(
            "protocolVersion must be a string",
        ));
    }
    let declared = params
        .get("appCapabilities")
        .and_then(|c| c.get("availableDisplayModes"));
    let app_modes = match declared {
        None => None,
        Some(Value::Array(modes)) => Some(
            modes
                .iter()
                .filter_map(|m| serde_json::from_value::<DisplayMode>(m.clone()).ok())
                .collect::<Vec<_>>(),
        ),
        Some(_) => {
            return Err(ErrorData::invalid_params(
                "availableDisplayModes must be an array",
            ));
        }
    };
    let mut state = shared.state();
    if state.answered {
        return Err(ErrorData::invalid_request(
            "the view is already initialized",
        ));
    }
    state.answered = true;
    state.app_modes = app_modes;
    let mut context = state.context.clone();
    context.display_mode.get_or_insert(DisplayMode::Inline);
    context
        .available_display_modes
        .get_or_insert_with(|| vec![DisplayMode::Inline]);
    let mut tool_info = JsonObject::new();
    tool_info.insert("tool".into(), to_value(shared.view.tool()));
    context.tool_info.get_or_insert(tool_info);
    Ok(json!({
        "protocolVersion": PROTOCOL_VERSION,
        "hostInfo": to_value(&shared.info),
        "hostCapabilities": host_capabilities(shared),
        "hostContext": to_value(&context),
    }))
}

fn host_capabilities(shared: &Shared) -> Value {
    let server = shared.client.server_capabilities();
    let mut caps = json!({
        "logging": {},
        "updateModelContext": {"text": {}, "structuredContent": {}},
        "sandbox": shared.policy.capabilities(),
    });
    if shared.handlers.open_link.is_some() {
        caps["openLinks"] = json!({});
    }
    if shared.handlers.message.is_some() {
        caps["message"] = json!({"text": {}});
    }
    if server.tools.is_some() {
        caps["serverTools"] = json!({});
    }
    if server.resources.is_some() {
        caps["serverResources"] = json!({});
    }
    caps
}

fn refused(reason: String) -> ErrorData {
    ErrorData::new(REFUSED, reason)
}

/// An absolute `http` or `https` URL with a host and no whitespace or control
/// characters: what a host may hand to a browser.
fn check_link(url: &str) -> Result<(), String> {
    if url.len() > 8192 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("Invalid URL".into());
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("only http and https links are opened")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') {
        return Err("Invalid URL: no host".into());
    }
    Ok(())
}

async fn open_link(shared: &Shared, params: &Map<String, Value>) -> Result<Value, ErrorData> {
    let url = string(params, "url")?;
    check_link(&url).map_err(ErrorData::invalid_params)?;
    let Some(decide) = shared.handlers.open_link.clone() else {
        return Err(refused("Link opening denied".into()));
    };
    match decide(url).await {
        Decision::Allow => Ok(json!({})),
        Decision::Deny(reason) => Err(refused(reason)),
    }
}

/// Content blocks: objects with a string `type`.
fn blocks(value: &Value, key: &str) -> Result<Vec<Value>, ErrorData> {
    let list = match value {
        Value::Array(list) => list.clone(),
        Value::Object(_) => vec![value.clone()],
        _ => {
            return Err(ErrorData::invalid_params(format!(
                "{key} must be content blocks"
            )));
        }
    };
    if list
        .iter()
        .all(|b| b.get("type").is_some_and(Value::is_string))
    {
        Ok(list)
    } else {
        Err(ErrorData::invalid_params(format!(
            "every block of {key} needs a string type"
        )))
    }
}

async fn message(shared: &Shared, params: &Map<String, Value>) -> Result<Value, ErrorData> {
    let role = string(params, "role")?;
    if role != "user" {
        return Err(ErrorData::invalid_params(
            "a ui/message is in the user role",
        ));
    }
    let content = blocks(params.get("content").unwrap_or(&Value::Null), "content")?;
    let Some(decide) = shared.handlers.message.clone() else {
        return Err(refused("Message sending denied".into()));
    };
    match decide(UiMessage { role, content }).await {
        Decision::Allow => Ok(json!({})),
        Decision::Deny(reason) => Err(refused(reason)),
    }
}

/// Switches only to a mode the host offers and the view declared (if it declared any),
/// and only when the host agrees; answers the resulting mode either way.
async fn display_mode(shared: &Shared, params: &Map<String, Value>) -> Result<Value, ErrorData> {
    let requested: DisplayMode = params
        .get("mode")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .ok_or_else(|| ErrorData::invalid_params("mode must be inline, fullscreen or pip"))?;
    let (current, possible) = {
        let state = shared.state();
        let current = state.context.display_mode.unwrap_or(DisplayMode::Inline);
        let offered = state
            .context
            .available_display_modes
            .as_ref()
            .is_some_and(|m| m.contains(&requested));
        let declared = state
            .app_modes
            .as_ref()
            .is_none_or(|m| m.contains(&requested));
        (current, offered && declared && requested != current)
    };
    let Some(decide) = shared.handlers.display_mode.clone().filter(|_| possible) else {
        return Ok(json!({"mode": current}));
    };
    if decide(requested).await != Decision::Allow {
        return Ok(json!({"mode": current}));
    }
    let mut state = shared.state();
    state.context.display_mode = Some(requested);
    let change = notification(
        "ui/notifications/host-context-changed",
        json!({"displayMode": requested}),
    );
    // The view is initialized (it sent this request after ui/initialize); if it closed
    // meanwhile, nothing is told.
    let _ = shared.send_after_initialized(&mut state, change);
    Ok(json!({"mode": requested}))
}

async fn model_context(shared: &Shared, params: &Map<String, Value>) -> Result<Value, ErrorData> {
    let content = match params.get("content") {
        None | Some(Value::Null) => None,
        Some(value @ Value::Array(_)) => Some(blocks(value, "content")?),
        Some(_) => return Err(ErrorData::invalid_params("content must be an array")),
    };
    let structured_content = match params.get("structuredContent") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(_) => {
            return Err(ErrorData::invalid_params(
                "structuredContent must be an object",
            ));
        }
    };
    let update = ModelContext {
        content,
        structured_content,
    };
    if let Some(decide) = shared.handlers.model_context.clone()
        && let Decision::Deny(reason) = decide(update.clone()).await
    {
        return Err(refused(reason));
    }
    // Each update replaces the one before.
    shared.state().model_context = Some(update);
    Ok(json!({}))
}

fn notified(shared: &Arc<Shared>, method: &str, params: Option<Value>) {
    let Ok(params) = object(params) else {
        return;
    };
    match method {
        "ui/notifications/initialized" => {
            let mut state = shared.state();
            if state.answered && shared.phase() == Phase::Starting {
                shared.phase.send_replace(Phase::Ready);
                for held in std::mem::take(&mut state.held) {
                    shared.send(held);
                }
            }
        }
        "ui/notifications/size-changed" => {
            let dimension = |key| {
                params
                    .get(key)
                    .and_then(Value::as_f64)
                    .filter(|v| v.is_finite() && *v >= 0.0)
            };
            if let (Some(width), Some(height)) = (dimension("width"), dimension("height")) {
                let size = ViewSize { width, height };
                shared.state().size = Some(size);
                if let Some(see) = &shared.handlers.size {
                    see(size);
                }
            }
        }
        "notifications/message" => {
            let Some(level) = params.get("level").and_then(Value::as_str) else {
                return;
            };
            if let Some(see) = &shared.handlers.log {
                see(ViewLog {
                    level: level.to_owned(),
                    logger: params
                        .get("logger")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    data: params.get("data").cloned().unwrap_or(Value::Null),
                });
            }
        }
        // The view gave up on a request: stop answering it. Dropping the request to the
        // server cancels it there too.
        "notifications/cancelled" => {
            let Some(id) = params.get("requestId") else {
                return;
            };
            let task = shared.state().in_flight.remove(&id.to_string());
            if let Some(task) = task {
                task.abort();
            }
        }
        // A web host's sandbox proxy is ready for the document: hand it the HTML with
        // the policy to load it under.
        "ui/notifications/sandbox-proxy-ready" => {
            let policy = &shared.policy;
            let mut ready = json!({
                "html": shared.view.html(),
                "csp": to_value(policy.domains()),
            });
            if !policy.permissions().is_empty() {
                ready["permissions"] = to_value(&policy.permissions());
            }
            shared.send(notification(
                "ui/notifications/sandbox-resource-ready",
                ready,
            ));
        }
        _ => {}
    }
}

/// The view's answer to a host request (teardown).
fn answered(shared: &Shared, id: &Value, message: &Map<String, Value>) {
    let Some(id) = id.as_str() else {
        return;
    };
    let Some(waiting) = shared.state().pending.remove(id) else {
        return;
    };
    let outcome = match (message.get("result"), message.get("error")) {
        (Some(result), None) => Ok(result.clone()),
        (_, Some(error)) => Err(error.clone()),
        (None, None) => Err(json!({"message": "an answer with neither result nor error"})),
    };
    let _ = waiting.send(outcome);
}

#[cfg(test)]
mod tests {
    use super::check_link;

    #[test]
    fn links() {
        for good in [
            "https://example.com",
            "http://localhost:8080/a?b#c",
            "https://u@h/",
        ] {
            assert!(check_link(good).is_ok(), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https://",
            "https:///path",
            "https://a b",
            "data:text/html,hi",
            "HTTPS://shout.example",
        ] {
            assert!(check_link(bad).is_err(), "{bad}");
        }
    }
}
