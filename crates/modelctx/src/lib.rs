//! modelctx: a Rust SDK for the Model Context Protocol (MCP).
//!
//! This facade re-exports the modelctx crates, one module per crate and one cargo
//! feature per crate, so an application depends on one crate and turns on what it needs.
//! Libraries that only need, say, the wire types depend on `modelctx-types` directly.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx::client::Client;
//! use modelctx::server::Server;
//!
//! let (client_side, server_side) = modelctx::memory::pair();
//! let _session = Server::builder("hello", "1.0.0")
//!     .instructions("A server with nothing to offer yet.")
//!     .build()
//!     .serve(server_side);
//! let client = Client::builder("me", "1.0.0").connect(client_side).await.unwrap();
//! assert_eq!(client.instructions(), Some("A server with nothing to offer yet."));
//! # }
//! ```
//!
//! Most programs start with `use modelctx::prelude::*;` ([`prelude`]): the server and
//! client builders, `#[tool]`, and one-call serving — `server.serve_stdio().await?`
//! (`ServeStdio`) or `server.serve_http("127.0.0.1:8080").await?` (`ServeHttp`, feature
//! `http-server`).
//!
//! | feature | module | crate | default |
//! |---|---|---|---|
//! | — | [`types`] | `modelctx-types`: wire types of every revision | always |
//! | — | [`transport`] | `modelctx-transport`: the transport traits, line framing | always |
//! | `session` | `session` | `modelctx-session`: the JSON-RPC peer runtime | with server/client |
//! | `server` | `server` | `modelctx-server`: the server role | yes |
//! | `schemars` | `server` | schemas derived from Rust types for tools, prompts, templates and forms (`ToolDef::new`, `Json`, ...) | yes |
//! | `macros` | `macros`, `schemars` | `modelctx-macros`: `#[tool]`, `#[prompt]`, `#[resource]`, `#[resource_template]` on a function, `#[tools]` and `#[primitives]` on an `impl` block (turns on `server` and `schemars`) | yes |
//! | `schema-validation` | `server` | JSON Schema validation of tool arguments and results, prompt arguments and template variables (jsonschema) | yes |
//! | `tasks` | `server` | tasks on the server: `ServerBuilder::tasks`, `TaskConfig`, `TaskStore` (task-augmented `tools/call` of 2025-11-25, the tasks extension of 2026-07-28); without it a server declares no tasks (turns on `server`) | yes |
//! | `client` | `client` | `modelctx-client`: the client role | yes |
//! | `memory` | `memory` | `modelctx-memory`: the in-process transport | yes |
//! | `http-server` | `http` | `modelctx-http`: the streamable HTTP server (axum/tower); `server.serve_http(addr)`, `server.http_router()` (`ServeHttp`) | no |
//! | `http-client` | `http` | `modelctx-http`: the streamable HTTP client transport (reqwest) | no |
//! | `sse-server` | `sse` | `modelctx-sse`: the legacy HTTP+SSE server (axum) | no |
//! | `sse-client` | `sse` | `modelctx-sse`: the legacy HTTP+SSE client and the streamable client's fallback to it (reqwest) | no |
//! | `sse` | `sse` | both of the above | no |
//! | `stdio` | `stdio` | `modelctx-stdio`: stdin/stdout for servers (`server.serve_stdio()`, [`ServeStdio`]), child processes for clients (with `client`: `builder.connect_stdio(program)`, [`ConnectStdio`]) | yes |
//! | `redis` | `redis` | `modelctx-redis`: the event store, task store and announcement bus in Redis, shared by several server processes | no |
//! | `pool` | `pool` | `modelctx-pool`: many servers from one `mcpServers` configuration, namespaced tools (turns on `client`, `stdio`, `http-client`, `sse-client`) | no |
//! | `skills` | `skills` | `modelctx-skills`: Skills over MCP (SEP-2640), the server half with `server`, the client half with `client` | no |
//! | `apps` | `apps` | `modelctx-apps`: MCP Apps (SEP-1865), UI resources and tools linked to them with `server`, the host bridge `AppBridge` with `client` | no |
//! | `rustls` | `http::tls` | HTTPS for the HTTP and SSE halves that are on, and the pool's HTTP servers: the clients trust the web-PKI roots (and `add_root_certificate`), the servers get `serve_tls`; rustls with the ring provider | no |
//! | `rustls-native-roots` | — | `rustls`, and the clients trust the system's certificate store too | no |
//!
//! New here? The [`guide`] has a page per MCP feature, each with a complete example.
//!
//! A minimal server (`default-features = false, features = ["server", "stdio"]`) builds
//! neither schemars nor jsonschema, nor the code that serves tasks: its tools are described by hand
//! (`ToolDef::with_schema`) or answered by typed request handlers. See the
//! `modelctx-server` feature table for exactly what is and is not checked without
//! `schema-validation`.
//!
//! # How it is built
//!
//! One module and one feature per crate; this is the only crate that picks defaults.
//! `modelctx::schemars` (features `server` and `schemars`) is the path users'
//! `#[derive(JsonSchema)]` should name. The [`guide`] is one Markdown page per feature,
//! each an empty module with `#[doc = include_str!(..)]`, so its examples are doctests that
//! cannot drift from the API; a page is compiled only with the features its examples use,
//! so `cargo test -p modelctx` on the default features skips the transport, auth and
//! scale-out pages, which the workspace build has.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use modelctx_types as types;

#[doc(inline)]
pub use modelctx_transport as transport;

#[doc(inline)]
pub use modelctx_store as store;

#[cfg(feature = "session")]
#[doc(inline)]
pub use modelctx_session as session;

#[cfg(feature = "server")]
#[doc(inline)]
pub use modelctx_server as server;

/// schemars (1.x), for `#[derive(JsonSchema)]` on tool arguments and results. Its
/// derive names the crate as `schemars::...`, resolved where the type is defined: bring
/// this re-export into scope once per module (`use modelctx::schemars::{self,
/// JsonSchema};`), or depend on `schemars = "1"` directly, and no
/// `#[schemars(crate = ...)]` line is needed.
#[cfg(all(feature = "server", feature = "schemars"))]
pub use modelctx_server::schemars;

/// `#[tool]`, `#[prompt]`, `#[resource]` and `#[resource_template]`: a function becomes
/// a registered tool, prompt, resource or template; `#[tools]` and `#[primitives]` do
/// the same for the methods of an `impl` block (feature `macros`).
#[cfg(feature = "macros")]
#[doc(inline)]
pub use modelctx_macros as macros;

#[cfg(feature = "client")]
#[doc(inline)]
pub use modelctx_client as client;

#[cfg(feature = "memory")]
#[doc(inline)]
pub use modelctx_memory as memory;

#[cfg(any(feature = "http-server", feature = "http-client"))]
#[doc(inline)]
pub use modelctx_http as http;

#[cfg(any(feature = "sse-server", feature = "sse-client"))]
#[doc(inline)]
pub use modelctx_sse as sse;

#[cfg(feature = "stdio")]
#[doc(inline)]
pub use modelctx_stdio as stdio;

#[cfg(feature = "redis")]
#[doc(inline)]
pub use modelctx_redis as redis;

#[cfg(feature = "pool")]
#[doc(inline)]
pub use modelctx_pool as pool;

#[cfg(feature = "skills")]
#[doc(inline)]
pub use modelctx_skills as skills;

#[cfg(feature = "apps")]
#[doc(inline)]
pub use modelctx_apps as apps;

pub mod guide;

#[cfg(feature = "server")]
mod primitives;
#[cfg(feature = "server")]
pub use primitives::{Primitives, RegisterPrimitives};

/// What the macros of `modelctx-macros` expand to. Not a public API: its items may
/// change in any release.
#[cfg(feature = "macros")]
#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __macros;

pub mod prelude;

#[cfg(all(feature = "server", any(feature = "stdio", feature = "http-server")))]
mod serving;
#[cfg(all(feature = "server", feature = "http-server"))]
pub use serving::ServeHttp;
#[cfg(all(feature = "server", feature = "stdio"))]
pub use serving::ServeStdio;

#[cfg(all(feature = "client", feature = "stdio"))]
mod spawning;
#[cfg(all(feature = "client", feature = "stdio"))]
pub use spawning::ConnectStdio;

/// The README's code blocks, compiled and run as doc tests so the quickstart stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
