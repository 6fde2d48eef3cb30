//! The guide: one page per feature of MCP, each with a complete example that `cargo
//! test` compiles and, unless it needs a Redis server or a terminal, runs.
//!
//! Every page is a module with no items; read them in any order.
//!
//! | page | what |
//! |---|---|
//! | [`tools`] | typed tools with `#[tool]` or `ToolDef::new`, structured output, errors the model sees |
//! | [`resources`] | static resources, URI templates, subscriptions |
//! | [`prompts`] | prompt templates with typed arguments |
//! | [`completion`] | suggestions for prompt arguments and template variables |
//! | [`elicitation`] | a tool that asks the user a question mid-call |
//! | [`sampling`] | a tool that asks the client's language model |
//! | [`roots`] | the directories a client lets a server see |
//! | [`tasks`] | long calls that run as tasks, polled or followed to their result |
//! | [`auth`] | OAuth: a protected server, the bundled authorization server, a client |
//! | [`transports`] | in-memory, stdio, streamable HTTP, legacy HTTP+SSE, HTTPS |
//! | [`scale_out`] | several server processes sharing sessions, events, tasks and grants in Redis, behind a load balancer |
//! | [`skills`] | Agent Skills served from a watched directory, read and verified by a client, materialised |
//! | [`apps`] | MCP Apps: a tool with an interactive page, and a Rust host embedding it with `AppBridge` |
//! | [`pool`] | many servers from an `mcpServers` config, reconnecting clients, the `modelctx` command |
//! | [`tracing`] | spans and events; one OpenTelemetry trace from the caller to the handler, and the MCP metrics |
//! | [`from_rmcp`] | where rmcp's handler traits, macros and transports are in modelctx |
//! | [`middleware`] | tower layers around the requests a server or client answers: timing, allow-lists, rate limits, rewriting; extension capabilities |
//!
//! # Two eras, one code
//!
//! MCP has two kinds of revision. Up to 2025-11-25 a session starts with the
//! `initialize` handshake and lives as long as the connection (the *handshake era*);
//! 2026-07-28 has no handshake: every request carries its protocol version and the
//! client's capabilities, and a server may ask for input by answering "input
//! required", to be retried with the answer (the *stateless era*). modelctx serves both
//! from the same handlers: a server built once answers both kinds of client, and a
//! `Client` picks the era when it connects ([`ConnectMode`](crate::client::ConnectMode):
//! `Auto`, the default, asks for 2026-07-28 and falls back to the handshake; `Handshake`
//! does the handshake only). Most examples connect twice, once per era, with the same
//! client code.
//!
//! # Features
//!
//! The examples use the facade's default features (`server`, `client`, `memory`,
//! `schemars`, `schema-validation`, `tasks`) plus `macros`; the transport pages need `stdio`,
//! `http-server`, `http-client`, `sse` (and `rustls` for HTTPS), the scale-out page
//! `redis`, the skills page `skills`, the apps page `apps`, the tracing page `otel`. A page whose features are off is left out of
//! these docs; docs.rs shows them all. The runnable programs of `examples/` (`cargo run -p modelctx-examples --bin
//! NAME`) are listed in the README.

// The table above links every page; with some features off, some pages are missing.
#![cfg_attr(
    not(all(
        feature = "macros",
        feature = "client",
        feature = "memory",
        feature = "stdio",
        feature = "http-server",
        feature = "http-client",
        feature = "sse",
        feature = "redis",
        feature = "pool",
        feature = "skills",
        feature = "apps",
        feature = "otel",
        feature = "tasks"
    )),
    allow(rustdoc::broken_intra_doc_links)
)]

#[doc = include_str!("tools.md")]
#[cfg(all(feature = "macros", feature = "client", feature = "memory"))]
pub mod tools {}

#[doc = include_str!("resources.md")]
#[cfg(all(
    feature = "server",
    feature = "schemars",
    feature = "client",
    feature = "memory"
))]
pub mod resources {}

#[doc = include_str!("prompts.md")]
#[cfg(all(
    feature = "server",
    feature = "schemars",
    feature = "client",
    feature = "memory"
))]
pub mod prompts {}

#[doc = include_str!("completion.md")]
#[cfg(all(
    feature = "server",
    feature = "schemars",
    feature = "client",
    feature = "memory"
))]
pub mod completion {}

#[doc = include_str!("elicitation.md")]
#[cfg(all(
    feature = "server",
    feature = "schemars",
    feature = "client",
    feature = "memory"
))]
pub mod elicitation {}

#[doc = include_str!("sampling.md")]
#[cfg(all(
    feature = "server",
    feature = "schemars",
    feature = "client",
    feature = "memory"
))]
pub mod sampling {}

#[doc = include_str!("roots.md")]
#[cfg(all(
    feature = "server",
    feature = "schemars",
    feature = "client",
    feature = "memory"
))]
pub mod roots {}

#[doc = include_str!("tasks.md")]
#[cfg(all(
    feature = "tasks",
    feature = "schemars",
    feature = "client",
    feature = "memory"
))]
pub mod tasks {}

#[doc = include_str!("auth.md")]
#[cfg(all(
    feature = "server",
    feature = "client",
    feature = "http-server",
    feature = "http-client"
))]
pub mod auth {}

#[doc = include_str!("transports.md")]
#[cfg(all(
    feature = "server",
    feature = "schemars",
    feature = "client",
    feature = "memory",
    feature = "stdio",
    feature = "http-server",
    feature = "http-client",
    feature = "sse"
))]
pub mod transports {}

#[doc = include_str!("scale_out.md")]
#[cfg(all(feature = "redis", feature = "tasks", feature = "client"))]
pub mod scale_out {}

#[doc = include_str!("skills.md")]
#[cfg(all(
    feature = "skills",
    feature = "server",
    feature = "client",
    feature = "memory"
))]
pub mod skills {}

#[doc = include_str!("apps.md")]
#[cfg(all(
    feature = "apps",
    feature = "server",
    feature = "client",
    feature = "memory",
    feature = "macros"
))]
pub mod apps {}

#[doc = include_str!("pool.md")]
#[cfg(feature = "pool")]
pub mod pool {}

#[doc = include_str!("tracing.md")]
#[cfg(all(
    feature = "otel",
    feature = "macros",
    feature = "client",
    feature = "memory"
))]
pub mod tracing {}

#[doc = include_str!("from_rmcp.md")]
#[cfg(all(feature = "macros", feature = "client", feature = "memory"))]
pub mod from_rmcp {}

#[doc = include_str!("middleware.md")]
#[cfg(all(feature = "macros", feature = "client", feature = "memory"))]
pub mod middleware {}
