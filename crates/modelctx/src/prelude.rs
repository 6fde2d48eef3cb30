//! What a server or client program needs, in one import: `use modelctx::prelude::*;`.
//!
//! Each item is here when the feature that provides it is on: the server's builders,
//! definitions and `Context` (`server`), `Json` and `JsonSchema` (`schemars`; the
//! `schemars` name too, so `#[derive(JsonSchema)]` needs no other import), `#[tool]`,
//! `#[prompt]`, `#[resource]`, `#[resource_template]`, `#[tools]` and `#[primitives]`
//! (`macros`), `Primitives` and `RegisterPrimitives` (`server`: `builder.primitives(value)`
//! for a `#[primitives]` value), the client and its builder (`client`), one-call serving
//! (`ServeStdio` with `stdio`, `ServeHttp` with `http-server`), the child process a
//! client runs a server in and one-call connecting to it (`ChildProcess`,
//! `ConnectStdio`: `client` and `stdio`), reading a tool's result as text or a
//! type (`ToolResultExt`), `json!`, and the wire types a handler returns or a client
//! reads (content, results, errors).
//! Anything else is in its crate's module (`modelctx::server`, `modelctx::types`, ...).
//!
//! ```
//! use modelctx::prelude::*;
//!
//! /// Adds two numbers.
//! #[tool]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder("adder", "1.0.0").tool(add_tool())?.build();
//! let (client_side, server_side) = modelctx::memory::pair();
//! let _session = server.serve(server_side);
//! let client = Client::builder("me", "1.0.0").connect(client_side).await?;
//! let result = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
//! assert_eq!(result.text(), "5");
//! # Ok(()) }
//! ```

pub use serde_json::json;

pub use crate::types::{
    AudioContent, CallToolResult, ContentBlock, EmbeddedResource, ErrorCode, ErrorData,
    GetPromptResult, Icon, ImageContent, Implementation, JsonObject, LoggingLevel, PromptMessage,
    ReadResourceResult, ResourceContents, ResourceLink, TaskSupport, TextContent, Tool,
    ToolAnnotations,
};

#[cfg(feature = "session")]
pub use crate::session::{Progress, RequestOptions, SessionError};

#[cfg(feature = "server")]
pub use crate::server::{
    Blob, BoxError, ClientRequestError, CompletionInput, Context, Elicited, IntoToolOutcome,
    IntoToolResult, PromptDef, RegistrationError, ResourceDef, Server, ServerBuilder,
    ServerSession, TemplateDef, ToolDef, ToolError, ToolSet,
};

#[cfg(all(feature = "server", feature = "schemars"))]
pub use crate::server::{
    Json, NoArgs,
    schemars::{self, JsonSchema},
};

#[cfg(feature = "macros")]
pub use crate::macros::{primitives, prompt, resource, resource_template, tool, tools};

#[cfg(feature = "server")]
pub use crate::primitives::{Primitives, RegisterPrimitives};

#[cfg(feature = "client")]
pub use crate::client::{Client, ClientBuilder, StructuredError, ToolCallError, ToolResultExt};

#[cfg(all(feature = "client", feature = "stdio"))]
pub use crate::{spawning::ConnectStdio, stdio::ChildProcess};

#[cfg(all(feature = "server", feature = "stdio"))]
pub use crate::serving::ServeStdio;

#[cfg(all(feature = "server", feature = "http-server"))]
pub use crate::serving::ServeHttp;

#[cfg(feature = "http-server")]
pub use crate::http::StreamableHttpServerConfig;

#[cfg(feature = "http-client")]
pub use crate::http::StreamableHttpClientTransport;
