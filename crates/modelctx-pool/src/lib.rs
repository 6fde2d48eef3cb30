//! Many MCP servers behind one client: what an agent host builds on.
//!
//! [`McpServers`] reads the `mcpServers` JSON configuration that Claude Desktop,
//! Cursor, VS Code and most hosts share (stdio commands with arguments, environment and
//! working directory; HTTP URLs with headers); [`ClientPool`] connects to every server
//! at once, names each tool `server__tool`, routes calls to the right server and reports
//! each server's [`Health`]. One server that fails does not fail the pool.
//! [`ServerConfig::connect`] connects to one entry, for a tool that needs a single
//! server (the `modelctx` command-line client does).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use modelctx_pool::{ClientPool, McpServers};
//! use serde_json::json;
//!
//! let config = McpServers::from_json(r#"{"mcpServers": {
//!     "files": {"command": "mcp-files", "args": ["--root", "."]},
//!     "search": {"url": "http://127.0.0.1:8000/mcp", "headers": {"X-Api-Key": "k"}}
//! }}"#)?;
//! let pool = ClientPool::builder()
//!     .stderr(|server, line| eprintln!("[{server}] {line}"))
//!     .connect(&config)
//!     .await;
//! for (server, health) in pool.health() {
//!     println!("{server}: {health}");
//! }
//! let tools = pool.list_tools().await;
//! let args = json!({"query": "rust"}).as_object().cloned().unwrap_or_default();
//! let result = pool.call_tool("search__find", args).await?;
//! pool.close().await;
//! # let _ = (tools, result); Ok(()) }
//! ```
//!
//! Where it sits: above the client role and the client transports (stdio children,
//! streamable HTTP, legacy SSE and the fallback between them), because a pool spawns
//! processes and opens HTTP connections the client role knows nothing of. OAuth is the
//! caller's to plug in ([`ClientPoolBuilder::auth`] takes any
//! `modelctx_http::AuthHook`, such as `modelctx-oauth`'s `OAuthClient`), so a pool
//! without logins builds no OAuth code.
//!
//! | feature | what |
//! |---|---|
//! | — | the client side of every transport: stdio children, streamable HTTP, legacy SSE |
//! | `rustls` | `https://` servers (modelctx-http's and modelctx-sse's `rustls`: rustls with the ring provider, web-PKI roots), and `add_root_certificate` on [`ConnectOptions`] and [`ClientPoolBuilder`] for a private CA |
//! | `rustls-native-roots` | `rustls`, and the system's certificate store trusted too |
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;
mod connect;
mod mode;
mod pool;

pub use config::{ConfigError, HttpServer, HttpTransport, McpServers, ServerConfig, StdioServer};
pub use connect::{ConnectError, ConnectErrorKind, ConnectOptions, Connection};
pub use mode::{ProtocolMode, parse_probe_timeout};
pub use pool::{
    ClientPool, ClientPoolBuilder, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SEPARATOR, Health, PoolTool,
    PoolTools,
};
