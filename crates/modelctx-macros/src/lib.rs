//! Attribute macros for modelctx servers, used through the facade's `macros` feature
//! (`modelctx::macros::*`, or the `modelctx::prelude`); the expanded code names
//! `::modelctx`, so depend on the facade, not on this crate.
//!
//! | attribute | on | adds | registered with |
//! |---|---|---|---|
//! | `#[tool]` | a function | `NAME_tool() -> ToolDef` | `ServerBuilder::tool` |
//! | `#[prompt]` | a function | `NAME_prompt() -> PromptDef` | `ServerBuilder::prompt` |
//! | `#[resource(uri = "...")]` | a function | `NAME_resource() -> ResourceDef` | `ServerBuilder::resource` |
//! | `#[resource_template(uri_template = "...")]` | a function | `NAME_template() -> TemplateDef` | `ServerBuilder::resource_template` |
//! | `#[tools]` | an `impl` block of `#[tool]` methods | `impl ToolSet` | `ServerBuilder::tools(value)` |
//! | `#[primitives]` | an `impl` block of methods of all four kinds | `impl modelctx::Primitives` | `ServerBuilder::primitives(value)` (`modelctx::RegisterPrimitives`) |
//!
//! `#[tool]` on a function (`async` or not) keeps it as written and adds `NAME_tool()`,
//! which returns its [`ToolDef`]: the name is the function's, the description its doc
//! comment, the input schema that of its parameters, and the output schema that of its
//! return type when it is structured (`Json<T>`).
//!
//! ```
//! use modelctx::macros::tool;
//! use modelctx::server::{Context, Json, Server};
//!
//! /// Adds two numbers.
//! #[tool]
//! async fn add(
//!     /// The first term.
//!     a: i64,
//!     /// The second term.
//!     b: i64,
//! ) -> Json<i64> {
//!     Json(a + b)
//! }
//!
//! let server = Server::builder("calculator", "1.0.0").tool(add_tool())?.build();
//! # assert!(server.capabilities().tools.is_some());
//! # Ok::<(), modelctx::server::RegistrationError>(())
//! ```
//!
//! A tool needs no `Context` and no `Result` when it does not use them, and may be a
//! plain `fn`:
//!
//! ```
//! use modelctx::macros::tool;
//!
//! /// Multiplies two numbers.
//! #[tool]
//! fn times(a: i64, b: i64) -> i64 {
//!     a * b
//! }
//! # let _ = times_tool();
//! ```
//!
//! # Tool options
//!
//! `#[tool(...)]` takes, each optional:
//!
//! - `name = "..."`, `description = "..."`, `title = "..."`: the name defaults to the
//!   function's, the description to its doc comment;
//! - the behaviour hints (`annotations`): `read_only`, `destructive`, `idempotent`,
//!   `open_world`, each a flag (`read_only`) or `read_only = false`;
//! - `icon = "https://..."`, once per icon;
//! - `meta = path::to::function`, a function returning the tool's `_meta`
//!   (`modelctx::types::Meta`), called when the definition is built;
//! - `output_schema = path::to::function`, a function returning the `outputSchema`
//!   (`modelctx::types::JsonObject`) for a tool whose return type does not give one
//!   (a `CallToolResult` with `structuredContent`, say); it replaces the one a
//!   `Json<T>` would give;
//! - `task_support = "optional"`, `"required"` or `"forbidden"`: whether the tool may
//!   run as a task.
//!
//! A parameter marked `#[header]` is mirrored into an `Mcp-Param-*` header by
//! 2026-07-28 clients over streamable HTTP (its schema property gets `x-mcp-header`),
//! so that proxies can route on it: `#[header] region: String` is `Mcp-Param-Region`
//! (the name in `Header-Case`, `_` becoming `-`), `#[header("Zone")]` names it. Only
//! strings, integers and booleans can be mirrored.
//!
//! ```
//! use modelctx::macros::tool;
//! use modelctx::types::{CallToolResult, ContentBlock, JsonObject, Meta};
//!
//! fn audited() -> Meta {
//!     let mut meta = Meta::new();
//!     meta.insert("example.com/audit", true.into());
//!     meta
//! }
//!
//! fn receipt_schema() -> JsonObject {
//!     serde_json::json!({
//!         "type": "object",
//!         "properties": {"deleted": {"type": "integer"}},
//!     })
//!     .as_object()
//!     .cloned()
//!     .unwrap()
//! }
//!
//! /// Deletes the files of a folder.
//! #[tool(
//!     title = "Delete folder",
//!     destructive,
//!     idempotent,
//!     open_world = false,
//!     icon = "https://example.com/trash.svg",
//!     meta = audited,
//!     output_schema = receipt_schema,
//!     task_support = "optional"
//! )]
//! async fn delete_folder(#[header] region: String, folder: String) -> CallToolResult {
//!     CallToolResult::new(vec![ContentBlock::text(format!("emptied {folder} in {region}"))])
//!         .with_structured_content(serde_json::json!({"deleted": 3}))
//! }
//!
//! let def = delete_folder_tool();
//! let tool = def.tool();
//! assert_eq!(tool.annotations.as_ref().unwrap().destructive_hint, Some(true));
//! assert_eq!(tool.input_schema["properties"]["region"]["x-mcp-header"], "Region");
//! assert!(tool.output_schema.is_some());
//! ```
//!
//! # Prompts
//!
//! `#[prompt]` on a function (`async` or not) adds `NAME_prompt()`, its
//! [`PromptDef`]: each parameter is an argument (`Option<T>` ones optional, the
//! others required; a `///` comment describes it; a number or `bool` is parsed from
//! the string the client sends), the doc comment is the description. The function
//! returns text (a user message), a `PromptMessage`, a `Vec<PromptMessage>` or a
//! `GetPromptResult`, or a `Result` of one of them: an `Err` fails `prompts/get`.
//! Options: `name`, `description`, `title`, `icon`, `meta` as for tools, and
//! `complete(argument = function)` to attach completions, the function taking the
//! `CompletionInput` and the `Context` (as for `PromptDef::complete`).
//!
//! ```
//! use modelctx::macros::prompt;
//! use modelctx::server::{CompletionInput, Context, Server};
//! use modelctx::types::PromptMessage;
//!
//! async fn languages(input: CompletionInput, _cx: Context) -> Result<Vec<String>, String> {
//!     Ok(["rust", "ruby"].iter().filter(|l| l.starts_with(&input.value)).map(|l| l.to_string()).collect())
//! }
//!
//! /// Asks for a code review.
//! #[prompt(title = "Code review", complete(language = languages))]
//! fn review(
//!     /// The language of the code.
//!     language: String,
//!     /// What to look at.
//!     focus: Option<String>,
//! ) -> Vec<PromptMessage> {
//!     let focus = focus.unwrap_or_else(|| "anything".into());
//!     vec![PromptMessage::user_text(format!("Review this {language} code; look at {focus}."))]
//! }
//!
//! let server = Server::builder("reviewer", "1.0.0").prompt(review_prompt())?.build();
//! # assert!(server.capabilities().completions.is_some());
//! # Ok::<(), modelctx::server::RegistrationError>(())
//! ```
//!
//! # Resources and resource templates
//!
//! `#[resource(uri = "...")]` on a function adds `NAME_resource()`, its
//! [`ResourceDef`]; it takes no arguments besides the `Context`. The name defaults to
//! the function's, the description to its doc comment; other options: `title`,
//! `mime_type`, `icon`, `meta`.
//!
//! `#[resource_template(uri_template = "...")]` (RFC 6570) adds `NAME_template()`, its
//! [`TemplateDef`]; the function takes one parameter per variable of the template,
//! named like it, of any type that implements `FromStr` (an `Option` for a variable
//! the URI may leave out, `{?lang}`). A value that does not parse answers the read with
//! `-32602`, naming the variable, its value and the type. Options: `name`,
//! `description`, `title`, `mime_type`, `meta`, `complete(variable = function)`, and
//! `list = function` to show the template's resources in `resources/list`, the
//! function taking the `Context` and returning a `Result` of a `Vec<Resource>` (as for
//! `TemplateDef::list`).
//!
//! Both return text (`String`, `&'static str`), bytes (`Blob`), contents spelled out,
//! or a `Result` of one of them: an `Err` fails `resources/read` (an `ErrorData` as
//! is, anything else as `-32603` with its message).
//!
//! ```
//! use modelctx::macros::{resource, resource_template};
//! use modelctx::server::Server;
//!
//! /// The shopping list.
//! #[resource(uri = "file:///notes.txt", mime_type = "text/plain")]
//! async fn notes() -> &'static str {
//!     "buy milk"
//! }
//!
//! /// A user's profile.
//! #[resource_template(uri_template = "users://{id}/profile", mime_type = "application/json")]
//! fn profile(id: u32) -> Result<String, String> {
//!     if id == 0 {
//!         return Err("no user 0".into());
//!     }
//!     Ok(format!(r#"{{"id": {id}}}"#))
//! }
//!
//! let server = Server::builder("users", "1.0.0")
//!     .resource(notes_resource())?
//!     .resource_template(profile_template())?
//!     .build();
//! # assert!(server.capabilities().resources.is_some());
//! # Ok::<(), modelctx::server::RegistrationError>(())
//! ```
//!
//! # `impl` blocks
//!
//! `#[tools]` on an `impl` block does the same for each of its `#[tool]` methods,
//! which see the value as `&self`; the type then implements `ToolSet`, so
//! `ServerBuilder::tools(value)` registers them all at once:
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use modelctx::macros::tools;
//! use modelctx::server::Server;
//!
//! struct Counter {
//!     total: AtomicU64,
//! }
//!
//! #[tools]
//! impl Counter {
//!     /// Adds `n` to the total and returns the new total.
//!     #[tool]
//!     async fn bump(&self, n: u64) -> String {
//!         (self.total.fetch_add(n, Ordering::Relaxed) + n).to_string()
//!     }
//!
//!     /// Resets the total.
//!     #[tool(name = "reset-total")]
//!     async fn reset(&self) -> &'static str {
//!         self.total.store(0, Ordering::Relaxed);
//!         "reset"
//!     }
//! }
//!
//! let counter = Counter { total: AtomicU64::new(0) };
//! let server = Server::builder("counter", "1.0.0").tools(counter)?.build();
//! # Ok::<(), modelctx::server::RegistrationError>(())
//! ```
//!
//! `#[primitives]` collects `#[tool]`, `#[prompt]`, `#[resource]` and
//! `#[resource_template]` methods alike; the type implements `modelctx::Primitives`,
//! registered by `ServerBuilder::primitives(value)` (the `modelctx::RegisterPrimitives`
//! extension, in the prelude):
//!
//! ```
//! use std::sync::Mutex;
//! use modelctx::prelude::*;
//!
//! struct Notebook {
//!     notes: Mutex<Vec<String>>,
//! }
//!
//! #[primitives]
//! impl Notebook {
//!     /// Adds a note.
//!     #[tool]
//!     fn note(&self, text: String) -> String {
//!         let mut notes = self.notes.lock().unwrap();
//!         notes.push(text);
//!         format!("{} notes", notes.len())
//!     }
//!
//!     /// Asks for a summary of the notes.
//!     #[prompt]
//!     fn summarise(&self) -> String {
//!         format!("Summarise: {}", self.notes.lock().unwrap().join("; "))
//!     }
//!
//!     /// Every note, one a line.
//!     #[resource(uri = "notes://all")]
//!     fn all(&self) -> String {
//!         self.notes.lock().unwrap().join("\n")
//!     }
//!
//!     /// One note, by its number.
//!     #[resource_template(uri_template = "notes://{n}")]
//!     fn one(&self, n: usize) -> Result<String, String> {
//!         let notes = self.notes.lock().unwrap();
//!         notes.get(n).cloned().ok_or_else(|| format!("no note {n}"))
//!     }
//! }
//!
//! let notebook = Notebook { notes: Mutex::new(Vec::new()) };
//! let server = Server::builder("notebook", "1.0.0").primitives(notebook)?.build();
//! # Ok::<(), RegistrationError>(())
//! ```
//!
//! # The function
//!
//! - **Arguments.** Each parameter of a tool or prompt is one property of its
//!   arguments: the macro collects them into a struct it derives `Deserialize` and
//!   `JsonSchema` for, so a parameter's type must implement both (an `Option<T>` is
//!   optional, the others required), its `///` comment becomes the property's
//!   description, and `#[serde]` / `#[schemars]` attributes on it go to the field
//!   (`#[schemars(range(min = 1))]`, `#[serde(default)]`, `#[serde(rename =
//!   "camelCase")]`). To describe the arguments with a struct of your own instead,
//!   take it as the only argument, marked `#[args]`: `async fn add(#[args] terms:
//!   Terms)`. A template's parameters are its variables, parsed with `FromStr`.
//! - **Context.** One parameter of type `Context` or `&Context`
//!   (`modelctx::server::Context`, found by its name) gets the request's context:
//!   progress, logging, cancellation, shared state, requests to the client.
//! - **Result.** A tool returns what it means (`IntoToolOutcome`): text (`String`,
//!   `&'static str`), a number or `bool` (as text), `()` (no content), a
//!   `serde_json::Value`, content blocks, a whole `CallToolResult`, or `Json<T>` for
//!   structured output (its schema becomes the `outputSchema`, the value
//!   `structuredContent`). A `Result` of one of them, whose error implements
//!   `Display`, reports its `Err` to the model as a result with `isError: true`; a
//!   `ToolError::Protocol` (or an `ErrorData` with code `-32042`) fails the call with
//!   that JSON-RPC error instead. Prompts and resources return what is said above.
//!   Any other return type is a compile error on the return type, listing these.
//! - **Sync or async.** A plain `fn` runs inside the handler's future, on the
//!   runtime's thread: keep it quick (hand long blocking work to
//!   `tokio::task::spawn_blocking` from an `async fn`).
//! - **Send.** A handler's future runs on a multi-threaded runtime, so it must be
//!   `Send`. One that is not (an `Rc` or a `std::sync::MutexGuard` held across an
//!   `.await`) fails to compile with "future cannot be sent between threads safely",
//!   pointing at the attribute and at the value held across the await.
//! - **The definition.** `NAME_tool()` and the others return a plain definition:
//!   chain its builder methods (`.cache_hints(..)`, `.task_window(..)`, ...) on it.
//!
//! A misuse (an unknown or misspelt option, a value of the wrong kind, a `#[resource]`
//! without `uri`, a template variable without its parameter or a parameter without its
//! variable, `self` by value, ...) is a compile error saying what to write instead.
//!
//! # `#[derive(JsonSchema)]` on your own types
//!
//! schemars' derive names the crate as `schemars::...`, resolved where the type is
//! defined. Either depend on `schemars = "1"` yourself, or bring the facade's
//! re-export into scope once per module — `use modelctx::schemars::{self,
//! JsonSchema};` — and `#[derive(JsonSchema)]` needs no `#[schemars(crate = ...)]`
//! line. The struct the macro generates for loose parameters needs neither.
//!
//! [`ToolDef`]: https://docs.rs/modelctx-server/latest/modelctx_server/struct.ToolDef.html
//! [`PromptDef`]: https://docs.rs/modelctx-server/latest/modelctx_server/struct.PromptDef.html
//! [`ResourceDef`]: https://docs.rs/modelctx-server/latest/modelctx_server/struct.ResourceDef.html
//! [`TemplateDef`]: https://docs.rs/modelctx-server/latest/modelctx_server/struct.TemplateDef.html
//!
//! # How it is built
//!
//! The code this crate emits names `::modelctx::server::...`, so it is reached only through
//! the facade's `macros` feature and depends on no internal crate. The expansion names only
//! `modelctx_server::__private` (doc-hidden: the Send assertions and a `serde` re-export),
//! which may change with the macros. Loose parameters are the default because they make the
//! shortest tool (no struct per tool) and put per-argument docs where they are read; the
//! generated argument struct derives through the server crate's re-exports
//! (`#[serde(crate)]`, `#[schemars(crate)]`), so users need neither crate for it. `ToolSet`
//! is not implemented for `Arc<T>` (the orphan rule: `Arc` is not fundamental); share state
//! through `Arc` fields.
//!
//! The compile-fail cases (`tests/macros_ui.rs` in the facade, trybuild) compare rustc's
//! own wording: a toolchain that words an error differently fails them
//! (`TRYBUILD=overwrite`, then review). trybuild checks the facade's dependency tree in a
//! project of its own, so keep the cases few.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod block;
mod options;
mod params;
mod primitive;
mod prompt;
mod resource;
mod tool;
mod util;

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::ItemFn;
use syn::spanned::Spanned;

use params::Kind;
use primitive::Primitive;

/// Turns a function (`async` or not) into a tool: keeps it and adds `NAME_tool()`, which
/// returns its `ToolDef` (see the crate docs for its options). Inside a `#[tools]` or
/// `#[primitives]` impl block, marks the methods that are tools.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_fn(Kind::Tool, attr, item)
}

/// Turns a function (`async` or not) into a prompt: keeps it and adds `NAME_prompt()`,
/// which returns its `PromptDef`; its parameters are the prompt's arguments (see the
/// crate docs). Inside a `#[primitives]` impl block, marks the methods that are prompts.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_fn(Kind::Prompt, attr, item)
}

/// Turns a function (`async` or not) into the resource at a fixed URI
/// (`#[resource(uri = "...")]`): keeps it and adds `NAME_resource()`, which returns its
/// `ResourceDef` (see the crate docs). Inside a `#[primitives]` impl block, marks the
/// methods that are resources.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_fn(Kind::Resource, attr, item)
}

/// Turns a function (`async` or not) into a resource template
/// (`#[resource_template(uri_template = "users://{id}/profile")]`), one parameter per
/// variable: keeps it and adds `NAME_template()`, which returns its `TemplateDef` (see
/// the crate docs). Inside a `#[primitives]` impl block, marks the methods that are
/// templates.
#[proc_macro_attribute]
pub fn resource_template(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_fn(Kind::Template, attr, item)
}

/// On an `impl` block: registers each of its `#[tool]` methods, which take `&self`,
/// by implementing `ToolSet` for the type, for `ServerBuilder::tools(value)` (see the
/// crate docs).
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    block::expand_tools(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// On an `impl` block: registers each of its `#[tool]`, `#[prompt]`, `#[resource]` and
/// `#[resource_template]` methods, which take `&self`, by implementing
/// `modelctx::Primitives` for the type, for `ServerBuilder::primitives(value)` (see the
/// crate docs).
#[proc_macro_attribute]
pub fn primitives(attr: TokenStream, item: TokenStream) -> TokenStream {
    block::expand_primitives(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand_fn(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    let at = if attr.is_empty() {
        proc_macro2::Span::call_site()
    } else {
        attr.span()
    };
    let mut function: ItemFn = match syn::parse(item) {
        Ok(function) => function,
        Err(error) => return error.into_compile_error().into(),
    };
    let expanded = Primitive::analyse(kind, attr, &mut function.sig, &function.attrs, false, at)
        .map(|primitive| {
            let def = primitive.def(false);
            let def_type = Primitive::def_type(kind);
            let vis = &function.vis;
            let ident = &function.sig.ident;
            let def_fn = format_ident!(
                "{}_{}",
                ident.to_string().trim_start_matches("r#"),
                Primitive::suffix(kind)
            );
            let doc = format!(
                " The {} definition of [`{ident}`], generated by `#[{}]`.",
                kind.noun(),
                kind.attr()
            );
            quote! {
                #function

                #[doc = #doc]
                #vis fn #def_fn() -> #def_type #def
            }
        });
    expanded
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
