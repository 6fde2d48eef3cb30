//! The server role of modelctx.
//!
//! A typed tool server in a few lines — arguments are a struct whose JSON Schema is
//! generated, the result is structured output with a generated `outputSchema`:
//!
//! ```
//! use modelctx_server::{Context, Json, Server, ToolDef};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     /// The first term.
//!     a: i64,
//!     /// The second term.
//!     b: i64,
//! }
//!
//! let add = ToolDef::new("add", |args: Add, _cx: Context| async move {
//!     Ok::<_, String>(Json(args.a + args.b))
//! });
//! let server = Server::builder("calculator", "1.0.0")
//!     .tool(add.description("Adds two numbers"))?
//!     .build();
//! # assert!(server.capabilities().tools.is_some());
//! # Ok::<(), modelctx_server::RegistrationError>(())
//! ```
//!
//! A [`Server`] is built once and serves any number of sessions, each over its own
//! transport ([`Server::serve`]). It answers `initialize` itself (version negotiation,
//! capabilities derived from what you registered) and every other request from either
//! layer:
//!
//! - **High level** — registries of tools ([`ToolDef`]), resources ([`ResourceDef`]),
//!   URI templates ([`TemplateDef`]), prompts ([`PromptDef`]) and their completion
//!   sources, built without macros. Arguments are validated against generated JSON
//!   Schemas before your function runs; lists are paged with opaque cursors; the
//!   registries can change while clients are connected ([`Server::add_tool`], ...) and
//!   every connected session then gets one debounced `notifications/*/list_changed` per
//!   kind; resource subscriptions are kept per session ([`Server::notify_resource_updated`]);
//!   `logging/setLevel` is honoured per session. A request whose extensions carry
//!   [`modelctx_types::Permissions`] (an OAuth resource server set to list only
//!   what the caller may use puts one there) is shown only the tools, resources,
//!   templates and prompts they allow.
//! - **Low level** — a typed handler per method ([`ServerBuilder::request_handler`]),
//!   which takes precedence over the registries for that method.
//!
//! Every handler gets a [`Context`]: request id, `_meta`, client info and capabilities,
//! the session, the application state ([`ServerBuilder::state`]), progress, logging
//! helpers per level, and reading the server's own resources.
//!
//! # Capabilities
//!
//! | key | advertised when |
//! |---|---|
//! | `tools` | a tool is registered, [`ServerBuilder::enable_tools`], or a `tools/*` handler |
//! | `resources` | a resource or template is registered, [`ServerBuilder::enable_resources`], or a `resources/*` handler |
//! | `resources.subscribe` | high-level resources (unless [`ServerBuilder::resource_subscriptions`]`(false)`), or a `resources/subscribe` handler |
//! | `prompts` | a prompt is registered, [`ServerBuilder::enable_prompts`], or a `prompts/*` handler |
//! | `*.listChanged` | for kinds served from registries, unless [`ServerBuilder::list_changed`]`(false)`; for every declared kind with `list_changed(true)` |
//! | `completions` | a completion source exists, [`ServerBuilder::enable_completions`], or a `completion/complete` handler |
//! | `logging` | anything high-level is registered, [`ServerBuilder::logging`], or a `logging/setLevel` handler |
//!
//! Capabilities are fixed when the server is built: enable a kind up front when its
//! registry starts empty and fills later.
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `schemars` | yes | schemas derived from Rust types with schemars (2020-12): `ToolDef::new`, `Json` output, `PromptDef::new`, `TemplateDef::new`, `form_schema`, `Context::elicit_form`, `NoArgs`, and the `schemars` re-export |
//! | `schema-validation` | yes | JSON Schema validation with jsonschema (never fetches a remote or file `$ref`): tool arguments against `inputSchema`, `structuredContent` against `outputSchema`, prompt arguments and template variables against their generated schemas; schemas must compile to register |
//! | `tasks` | yes | tasks: `ServerBuilder::tasks` and `ServerBuilder::task_store` run task-augmented `tools/call` (2025-11-25) and the tasks extension (2026-07-28); without it the server declares no tasks and the code that serves them is not built into the program |
//!
//! Without `schema-validation` (e.g. `default-features = false`), the server still
//! checks what does not need a JSON Schema engine: tool names, that tool schemas have
//! `"type": "object"`, required prompt arguments, that a tool with an `outputSchema`
//! returns `structuredContent`, and elicitation form answers (checked exactly by
//! [`RequestedSchema::check_answer`](modelctx_types::RequestedSchema::check_answer),
//! which needs no JSON Schema engine). Typed arguments (`ToolDef::new`, prompts,
//! templates) are still checked by decoding them into their Rust type (a failure is an
//! `isError` result for tools, `-32602` otherwise), and typed results are shaped by their
//! types. What it no longer checks: arguments of a [`ToolDef::with_schema`] tool reach
//! the function as sent, and `structuredContent` is not checked against the
//! `outputSchema`; constraints a decode does not see (`minimum`, `pattern`, `format`,
//! ... from `#[schemars(...)]` attributes) are not enforced.
//!
//! The two features exist for build cost: jsonschema and its regex tree are most of a
//! minimal server's clean build. Without `schemars`, `PromptDef` and `TemplateDef` have no
//! constructor (use low-level handlers); the crate's doctests need the default features.
//!
//! # How it works
//!
//! The server answers `initialize` itself: it negotiates the version (echoes a supported
//! one, else offers the latest), records the client's info and capabilities per session,
//! and advertises the capabilities derived from its handlers and registries. The stateless
//! era (2026-07-28) is served beside the handshake era by default
//! (`ServerBuilder::stateless_era(false)` turns it off), from the same handlers; see the
//! `stateless` and `mrtr` modules. Each module's doc holds its own rules.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod base64;
mod builder;
mod built_raw;
mod completion;
mod context;
mod context_client;
mod def_setters;
mod dispatch;
mod error;
mod handle;
mod inner;
mod legacy_output;
mod middleware;
mod mrtr;
mod prompt;
mod registry;
mod request;
mod rerun;
mod resource;
mod schema;
mod server;
mod service;
mod session;
mod stateless;
mod tasks;
mod tool;
mod tool_content;
mod tool_output;
mod tool_set;
mod uri_template;

pub use builder::ServerBuilder;
pub use completion::{CompletionInput, IntoCompletion, MAX_COMPLETION_VALUES};
#[cfg(feature = "schemars")]
pub use context_client::form_schema;
pub use context_client::{ClientRequestError, ClientRequestErrorKind, Elicited, FormValues};
pub use error::BoxError;
pub use handle::{PromptHandle, ResourceHandle, TemplateHandle, ToolHandle};
pub use inner::{Server, WeakServer};
pub use middleware::{McpNotification, McpRequest, Next, NotificationNext};
pub use modelctx_session::Extensions;
#[cfg(feature = "tasks")]
#[cfg_attr(docsrs, doc(cfg(feature = "tasks")))]
pub use modelctx_session::tasks::{InMemoryTaskStore, TaskConfig, TaskStore};
pub use prompt::{IntoPromptResult, PromptDef};
pub use registry::{RegistrationError, RegistrationErrorKind};
pub use request::Context;
pub use resource::{Blob, IntoContents, ResourceDef, TemplateDef};
#[cfg(feature = "schemars")]
pub use schema::NoArgs;
pub use session::ServerSession;
pub use tool::ToolDef;
pub use tool_content::IntoToolResult;
#[cfg(feature = "schemars")]
pub use tool_content::Json;
pub use tool_output::{IntoToolOutcome, ToolError};
#[doc(hidden)]
pub use tool_set::__private;
pub use tool_set::ToolSet;
pub use uri_template::{MAX_MATCHED_URI, UriTemplate};

/// schemars, re-exported for `#[derive(JsonSchema)]` on argument types. Its derive
/// names the crate as `schemars::...`, resolved where the type is defined: bring this
/// re-export into scope in that module (`use modelctx_server::schemars::{self,
/// JsonSchema};`), or depend on `schemars = "1"` directly; no `#[schemars(crate = ...)]`
/// line is needed either way.
#[cfg(feature = "schemars")]
pub use schemars;
