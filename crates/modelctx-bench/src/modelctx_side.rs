//! The modelctx side of every scenario: the echo server and its transports.

use modelctx::http::{StreamableHttpServerConfig, StreamableHttpService};
use modelctx::server::Server;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ErrorData, ListToolsRequest,
    ListToolsResult, RequestedSchema, Tool,
};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::{ASK_TOOL, HttpMode, TOOL};

/// The echo server: `echo` returns its `text` argument as one text block; `confirm`
/// asks the user to confirm (a form elicitation) before it does the same — the same
/// handler in both eras, one multi round-trip request in protocol 2026-07-28.
pub fn server() -> Server {
    let form: Arc<RequestedSchema> = serde_json::from_value(json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"]
    }))
    .unwrap_or_else(|e| panic!("the confirmation form is a valid schema: {e}"));
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    });
    let tool = Tool::new(TOOL, schema.as_object().cloned().unwrap_or_default());
    Server::builder("bench-modelctx", env!("CARGO_PKG_VERSION"))
        .request_handler::<ListToolsRequest, _, _>(move |_, _| {
            let tool = tool.clone();
            async move { Ok(ListToolsResult::new(vec![tool])) }
        })
        .request_handler::<CallToolRequest, _, _>(move |params, cx| {
            // Shared, and copied only for the call that asks: the echo allocates no more
            // than rmcp's does.
            let form = Arc::clone(&form);
            async move {
                if params.name == ASK_TOOL {
                    let answer = cx
                        .elicit_form_schema("Echo it?", RequestedSchema::clone(&form))
                        .await
                        .map_err(|e| ErrorData::internal_error(e.to_string()))?;
                    let confirmed = answer
                        .accepted()
                        .and_then(|values| values.get("confirm").cloned())
                        .is_some_and(|v| serde_json::to_value(v).ok() == Some(Value::Bool(true)));
                    if !confirmed {
                        return Err(ErrorData::invalid_params("not confirmed"));
                    }
                } else if params.name != TOOL {
                    return Err(ErrorData::invalid_params("unknown tool"));
                }
                let text = params
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| ErrorData::invalid_params("`text` must be a string"))?;
                Ok(CallToolResult::text(text))
            }
        })
        .build()
}

/// The parameters of one echo call.
pub fn call_params() -> CallToolRequestParams {
    CallToolRequestParams::new(TOOL).with_arguments(crate::echo_arguments())
}

/// Checks that a result echoes [`TEXT`](crate::TEXT).
pub fn check(result: &CallToolResult) -> Result<(), String> {
    crate::check_echo("modelctx", result)
}

/// Serves the echo tool on this process's stdin/stdout until stdin closes.
pub async fn serve_stdio() {
    let session = server().serve(modelctx::stdio::stdio());
    session.closed().await;
    session.close().await;
}

/// Serves the echo tool over streamable HTTP on `listener` (until the process ends).
pub async fn serve_http(listener: tokio::net::TcpListener, mode: HttpMode) -> Result<(), String> {
    let mut config = StreamableHttpServerConfig::default();
    // The 2026-07-28 scenarios run on the default endpoint, which serves both eras.
    if matches!(mode, HttpMode::Json | HttpMode::Stateless) {
        config = config.sessionless();
    }
    if mode.json() {
        config = config.json_response();
    }
    serve_with(listener, config, server()).await
}

/// Serves the echo tool over stateful streamable HTTP on `listener` for the soak
/// (`bench-soak`): up to `max_sessions` sessions at once, the defaults otherwise (idle
/// expiry included), until the process ends.
pub async fn serve_soak(
    listener: tokio::net::TcpListener,
    max_sessions: usize,
) -> Result<(), String> {
    let config = StreamableHttpServerConfig::default().max_sessions(max_sessions);
    serve_with(listener, config, server()).await
}

/// Serves `server` over streamable HTTP configured by `config` on `listener` (until the
/// process ends).
async fn serve_with(
    listener: tokio::net::TcpListener,
    config: StreamableHttpServerConfig,
    server: Server,
) -> Result<(), String> {
    let service = StreamableHttpService::with_config(config, move |transport| {
        server.serve(transport);
    });
    service
        .serve(listener, std::future::pending::<()>())
        .await
        .map_err(|e| e.to_string())
}

/// Where a scale-out server keeps its resumable events and tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stores {
    /// The in-memory defaults (one process).
    Memory,
    /// `redis::EventStore` and `redis::TaskStore` on the Redis at this URL.
    Redis(String),
}

/// The `requestState` key every scale-out instance shares (a retry may reach any).
const SHARED_STATE_KEY: [u8; 32] = [42; 32];

/// The scale-out echo server: the `echo` tool as a registry tool that may run as a task
/// (protocol 2025-11-25), tasks in `tasks` (the in-memory store when `None`).
pub fn scale_server(
    tasks: Option<std::sync::Arc<dyn modelctx::session::tasks::TaskStore>>,
) -> Result<Server, String> {
    use modelctx::server::{Context, TaskConfig, ToolDef};
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    });
    let tool = Tool::new(TOOL, schema.as_object().cloned().unwrap_or_default());
    let echo = ToolDef::with_schema(tool, |args, _cx: Context| async move {
        match args.get("text").and_then(Value::as_str) {
            Some(text) => Ok(CallToolResult::text(text)),
            None => Err("`text` must be a string"),
        }
    })
    .task_support(modelctx::types::TaskSupport::Optional);
    let mut builder = Server::builder("bench-modelctx-scale", env!("CARGO_PKG_VERSION"))
        .request_state_key(SHARED_STATE_KEY)
        .tasks(TaskConfig::new().poll_interval(std::time::Duration::from_millis(5)))
        .tool(echo)
        .map_err(|e| e.to_string())?;
    if let Some(tasks) = tasks {
        builder = builder.task_store(tasks);
    }
    Ok(builder.build())
}

/// Serves the scale-out echo server over streamable HTTP (stateful sessions and SSE
/// answers for the handshake era, JSON answers for 2026-07-28 clients) with `stores`.
pub async fn serve_scale(listener: tokio::net::TcpListener, stores: Stores) -> Result<(), String> {
    use modelctx::redis;
    let mut config = StreamableHttpServerConfig::default();
    let server = match stores {
        Stores::Memory => scale_server(None)?,
        Stores::Redis(url) => {
            let events = redis::EventStore::connect(&url, redis::EventStoreConfig::default())
                .await
                .map_err(|e| format!("cannot connect the event store to {url}: {e}"))?;
            let tasks = redis::TaskStore::connect(&url, redis::TaskStoreConfig::default())
                .await
                .map_err(|e| format!("cannot connect the task store to {url}: {e}"))?;
            config = config.event_store(std::sync::Arc::new(events));
            scale_server(Some(std::sync::Arc::new(tasks)))?
        }
    };
    serve_with(listener, config, server).await
}

/// The shop server of the public benchmark's workload: its three tools, each running
/// [`Shop::call`](crate::shop::Shop::call) and answering its JSON as one text block.
pub fn shop_server(shop: std::sync::Arc<crate::shop::Shop>) -> Result<Server, String> {
    use modelctx::server::{Context, ToolDef};
    let mut builder = Server::builder("bench-modelctx-shop", env!("CARGO_PKG_VERSION"));
    for (name, description, schema) in crate::shop::tools() {
        let shop = shop.clone();
        let tool = Tool::new(name, schema).with_description(description);
        let def = ToolDef::with_schema(tool, move |args, _cx: Context| {
            let shop = shop.clone();
            async move {
                let answer = shop.call(name, &args).await?;
                Ok::<_, String>(CallToolResult::text(answer.to_string()))
            }
        });
        builder = builder.tool(def).map_err(|e| e.to_string())?;
    }
    Ok(builder.build())
}

/// Serves the shop server over session-less streamable HTTP with JSON answers (as the
/// public benchmark's servers are set up) on `listener`, until the process ends.
pub async fn serve_shop(
    listener: tokio::net::TcpListener,
    shop: std::sync::Arc<crate::shop::Shop>,
) -> Result<(), String> {
    let config = StreamableHttpServerConfig::default()
        .sessionless()
        .json_response();
    serve_with(listener, config, shop_server(shop)?).await
}
