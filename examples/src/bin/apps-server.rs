//! A stdio MCP server with an MCP App (SEP-1865, `io.modelcontextprotocol/ui`): a counter
//! whose tool result a host renders in an interactive page.
//!
//! - `ui://counter/view` is the page (`examples/apps/counter.html`, plain HTML that loads
//!   the official App SDK from unpkg; no build step). Its CSP declares that origin under
//!   `resourceDomains`, so a host's sandbox lets the script in and nothing else.
//! - `show_counter` (visible to the model and the app) is linked to the page: a host
//!   calls it, renders the page, and hands it the tool's input and result.
//! - `increment` is visible to the app only: the page's "+1" button calls it through
//!   the host; the model never sees it, and a client without the extension can neither
//!   list nor call it.
//!
//! Both tools answer a host that declared the extension with `structuredContent` for
//! the page, and anyone else with text that stands alone.
//!
//! `cargo run -p modelctx-examples --bin apps-server`

use std::sync::atomic::{AtomicI64, Ordering};

use modelctx::apps::{
    Apps, Csp, ServerBuilderAppsExt, ToolUi, UiResource, Visibility, client_supports_ui,
};
use modelctx::macros::tool;
use modelctx::server::{Context, Server};
use modelctx::stdio::StdioOptions;
use modelctx::types::{CallToolResult, Meta};

const VIEW: &str = "ui://counter/view";

static COUNT: AtomicI64 = AtomicI64::new(0);

/// The answer for a count: structured for a UI, text for everyone.
fn counted(count: i64, label: Option<&str>, cx: &Context) -> CallToolResult {
    let name = label.map_or_else(String::new, |l| format!(" ({l})"));
    let result = CallToolResult::text(format!("The counter{name} is at {count}."));
    if client_supports_ui(cx) {
        result.with_structured_content(serde_json::json!({ "count": count }))
    } else {
        result
    }
}

fn counter_view() -> Meta {
    ToolUi::new(VIEW).into_meta()
}

fn app_only() -> Meta {
    ToolUi::new(VIEW).visibility([Visibility::App]).into_meta()
}

/// Shows the counter (in an interactive view where the host renders MCP Apps).
#[tool(meta = counter_view, read_only)]
async fn show_counter(
    /// A label shown above the count.
    label: Option<String>,
    cx: Context,
) -> CallToolResult {
    counted(COUNT.load(Ordering::Relaxed), label.as_deref(), &cx)
}

/// Adds one to the counter (the view's button).
#[tool(meta = app_only)]
async fn increment(cx: Context) -> CallToolResult {
    counted(COUNT.fetch_add(1, Ordering::Relaxed) + 1, None, &cx)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let view = UiResource::html(VIEW, "Counter", include_str!("../../apps/counter.html"))
        .title("Counter")
        .description("The counter, with a button that adds one")
        .csp(Csp::new().resource("https://unpkg.com"))
        .prefers_border(true);
    let apps = Apps::new()
        .resource(view)?
        .tool(show_counter_tool())?
        .tool(increment_tool())?;
    let server = Server::builder("modelctx-apps-example", env!("CARGO_PKG_VERSION"))
        .instructions("show_counter renders an interactive counter where MCP Apps are supported.")
        .apps(apps)?
        .build();
    let options = StdioOptions::new().on_diagnostic(|d| eprintln!("apps-server: {d}"));
    let session = server.serve(modelctx::stdio::stdio_with(options));
    session.closed().await;
    session.close().await;
    Ok(())
}
