//! Attribute macros for modelctx servers, used through the facade's `macros` feature
//! (`modelctx::macros::{tool, tools}`); the expanded code names `::modelctx`, so
//! depend on the facade, not on this crate.
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
//! # The function
//!
//! - **Arguments.** Each parameter is one property of the tool's arguments: the macro
//!   collects them into a struct it derives `Deserialize` and `JsonSchema` for, so a
//!   parameter's type must implement both (an `Option<T>` is optional, the others
//!   required), its `///` comment becomes the property's description, and `#[serde]` /
//!   `#[schemars]` attributes on it go to the field (`#[schemars(range(min = 1))]`,
//!   `#[serde(default)]`, `#[serde(rename = "camelCase")]`). To describe the arguments
//!   with a struct of your own instead, take it as the only argument, marked `#[args]`:
//!   `async fn add(#[args] terms: Terms)`.
//! - **Context.** One parameter of type `Context` or `&Context`
//!   (`modelctx::server::Context`, found by its name) gets the request's context:
//!   progress, logging, cancellation, shared state, requests to the client.
//! - **Result.** What it means (`IntoToolOutcome`): text (`String`, `&'static str`), a
//!   number or `bool` (as text), `()` (no content), a `serde_json::Value`, content
//!   blocks, a whole `CallToolResult`, or `Json<T>` for structured output (its schema
//!   becomes the `outputSchema`, the value `structuredContent`). A `Result` of one of
//!   them, whose error implements `Display`, reports its `Err` to the model as a result
//!   with `isError: true`; a `ToolError::Protocol` (or an `ErrorData` with code
//!   `-32042`) fails the call with that JSON-RPC error instead. Any other return type
//!   is a compile error on the return type, listing these.
//! - **Sync or async.** A plain `fn` runs inside the tool's future, on the runtime's
//!   thread: keep it quick (hand long blocking work to `tokio::task::spawn_blocking`
//!   from an `async fn`).
//! - **Send.** A tool's future runs on a multi-threaded runtime, so it must be `Send`.
//!   One that is not (an `Rc` or a `std::sync::MutexGuard` held across an `.await`)
//!   fails to compile with "the future of this `#[tool]` function is not `Send`",
//!   pointing at the `#[tool]` line and at the value held across the await.
//! - **Options.** `#[tool(name = "...", description = "...", title = "...")]`, each
//!   optional: the name defaults to the function's, the description to its doc
//!   comment. `NAME_tool()` returns a plain `ToolDef`: chain `.annotations(..)`,
//!   `.task_support(..)` and the rest on it.
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
