//! The rmcp side of every scenario: the same echo tool, written against rmcp's
//! `ServerHandler`, plus an in-process transport over bounded tokio channels (the same
//! layout as `modelctx::memory::pair`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequest,
    InputRequests, InputRequiredResult, PaginatedRequestParams, RequestStateCodec, SealOptions,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{ASK_KEY, ASK_TOOL, HttpMode, TOOL};

/// What the confirming tool binds its sealed `requestState` to.
const STATE_BINDING: &[u8] = b"tools/call confirm";

/// The process's key for sealing `requestState` (HMAC-SHA256, as modelctx seals its
/// own), drawn from the system's random source at first use.
fn codec() -> Result<&'static RequestStateCodec, ErrorData> {
    static CODEC: OnceLock<Result<RequestStateCodec, String>> = OnceLock::new();
    CODEC
        .get_or_init(|| {
            use std::io::Read;
            let mut key = [0u8; 32];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| f.read_exact(&mut key))
                .map_err(|e| format!("no random key: {e}"))?;
            RequestStateCodec::try_new(key.to_vec()).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ErrorData::internal_error(e.clone(), None))
}

/// The confirming tool, written as rmcp asks: the first call returns an
/// `InputRequiredResult` by hand (a form elicitation and the sealed text), the retry
/// opens the state and reads the user's answer.
fn confirm(request: &CallToolRequestParams) -> Result<CallToolResponse, ErrorData> {
    let codec = codec()?;
    let Some(responses) = &request.input_responses else {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("`text` must be a string", None))?;
        let ask: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Echo it?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"]
                }
            }
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let options = SealOptions::new()
            .associated_data(STATE_BINDING)
            .ttl(Duration::from_secs(300));
        let state = codec
            .seal_json_with(&text, &options)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let requests: InputRequests = [(ASK_KEY.to_owned(), ask)].into_iter().collect();
        return Ok(InputRequiredResult::new(Some(requests), Some(state)).into());
    };
    let state = request
        .request_state
        .as_deref()
        .ok_or_else(|| ErrorData::invalid_params("missing requestState", None))?;
    let text: String = codec
        .open_json_with(state, STATE_BINDING)
        .map_err(|e| ErrorData::invalid_params(format!("bad requestState: {e}"), None))?;
    let confirmed = responses
        .get(ASK_KEY)
        .is_some_and(|r| r["action"] == "accept" && r["content"]["confirm"] == true);
    if !confirmed {
        return Err(ErrorData::invalid_params("not confirmed", None));
    }
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

/// What the bench servers offer: tools, nothing else.
fn tools_only() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
}

/// The echo server: `echo` returns its `text` argument as one text block.
#[derive(Debug, Clone, Copy, Default)]
pub struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        tools_only()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        });
        let tool = Tool::new(
            TOOL,
            "returns its text argument",
            schema.as_object().cloned().unwrap_or_default(),
        );
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == ASK_TOOL {
            return confirm(&request);
        }
        if request.name != TOOL {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("`text` must be a string", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// The parameters of one echo call.
pub fn call_params() -> CallToolRequestParams {
    CallToolRequestParams::new(TOOL).with_arguments(crate::echo_arguments())
}

/// Checks that a result echoes [`TEXT`](crate::TEXT).
pub fn check(result: &CallToolResult) -> Result<(), String> {
    crate::check_echo("rmcp", result)
}

/// One end of an in-process rmcp connection: messages move as Rust values through
/// bounded tokio channels, never serialised.
#[derive(Debug)]
pub struct MemoryTransport<R: rmcp::service::ServiceRole> {
    tx: mpsc::Sender<TxJsonRpcMessage<R>>,
    rx: mpsc::Receiver<RxJsonRpcMessage<R>>,
}

/// The peer's end of a [`MemoryTransport`] is gone.
#[derive(Debug)]
pub struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("in-process peer closed")
    }
}

impl std::error::Error for Closed {}

impl<R: rmcp::service::ServiceRole> Transport<R> for MemoryTransport<R> {
    type Error = Closed;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<R>,
    ) -> impl Future<Output = Result<(), Closed>> + Send + 'static {
        let tx = self.tx.clone();
        async move { tx.send(item).await.map_err(|_| Closed) }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<R>>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Closed> {
        self.rx.close();
        Ok(())
    }
}

/// Two connected in-process transports with `capacity` messages of buffer each way.
pub fn pair(capacity: usize) -> (MemoryTransport<RoleClient>, MemoryTransport<RoleServer>) {
    let (c2s_tx, c2s_rx) = mpsc::channel(capacity);
    let (s2c_tx, s2c_rx) = mpsc::channel(capacity);
    (
        MemoryTransport {
            tx: c2s_tx,
            rx: s2c_rx,
        },
        MemoryTransport {
            tx: s2c_tx,
            rx: c2s_rx,
        },
    )
}

/// Serves the echo tool on this process's stdin/stdout until stdin closes.
pub async fn serve_stdio() -> Result<(), String> {
    let running = Echo
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| e.to_string())?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// Serves the echo tool over streamable HTTP on `listener` (until the process ends).
pub async fn serve_http(listener: tokio::net::TcpListener, mode: HttpMode) -> Result<(), String> {
    serve_handler(listener, mode, || Echo).await
}

/// The shop server of the public benchmark's workload: its three tools, each running
/// [`Shop::call`](crate::shop::Shop::call) and answering its JSON as one text block.
/// Its tool list is built once, as modelctx's registry and rmcp's tool router keep theirs.
#[derive(Debug, Clone)]
pub struct ShopServer {
    shop: Arc<crate::shop::Shop>,
    tools: Arc<[Tool]>,
}

impl ShopServer {
    /// The shop server over `shop`.
    pub fn new(shop: Arc<crate::shop::Shop>) -> Self {
        let tools = crate::shop::tools()
            .into_iter()
            .map(|(name, description, schema)| Tool::new(name, description, schema))
            .collect();
        Self { shop, tools }
    }
}

impl ServerHandler for ShopServer {
    fn get_info(&self) -> ServerConfig {
        tools_only()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(
            self.tools.to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        Ok(match self.shop.call(&request.name, &args).await {
            Ok(answer) => CallToolResult::success(vec![ContentBlock::text(answer.to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        }
        .into())
    }
}

/// Serves the shop server over session-less streamable HTTP with JSON answers (as the
/// public benchmark's servers are set up) on `listener`, until the process ends.
pub async fn serve_shop(
    listener: tokio::net::TcpListener,
    shop: Arc<crate::shop::Shop>,
) -> Result<(), String> {
    let server = ShopServer::new(shop);
    serve_handler(listener, HttpMode::Json, move || server.clone()).await
}

/// Serves the handlers `make` makes over streamable HTTP in `mode` on `listener`.
async fn serve_handler<H: ServerHandler>(
    listener: tokio::net::TcpListener,
    mode: HttpMode,
    make: impl Fn() -> H + Send + Sync + 'static,
) -> Result<(), String> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(mode.stateful())
        .with_json_response(mode.json());
    let service = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    // TCP_NODELAY on every connection, as modelctx's server and the baseline set it.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .await
        .map_err(|e| e.to_string())
}
