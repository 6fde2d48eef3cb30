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
//! - `reset_counter` is visible to the model only: a host refuses it to the page.
//!
//! The tools answer a host that declared the extension with `structuredContent` for
//! the page, and anyone else with text that stands alone.
//!
//! `cargo run -p modelctx-examples --bin apps-server`
//!
//! Offline, or where the host's network cannot reach unpkg: `--sdk PATH` inlines the
//! App SDK from a copy on disk into the page, which then declares no origin at all
//! (the sandbox's restrictive default applies). The file is `app-with-deps.js` of the
//! npm package `@modelcontextprotocol/ext-apps` 2.0.4 (`npm pack
//! @modelcontextprotocol/ext-apps@2.0.4` and unpack it, or any `node_modules`):
//!
//! `cargo run -p modelctx-examples --bin apps-server -- --sdk
//! node_modules/@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js`

use std::sync::atomic::{AtomicI64, Ordering};

use modelctx::apps::{
    Apps, Csp, ServerBuilderAppsExt, ToolUi, UiResource, Visibility, client_supports_ui,
};
use modelctx::macros::tool;
use modelctx::server::{Context, Server};
use modelctx::stdio::StdioOptions;
use modelctx::types::{CallToolResult, Meta};

const VIEW: &str = "ui://counter/view";
/// How the page imports the App SDK when it is not inlined.
const SDK_IMPORT: &str = r#"import { App } from "https://unpkg.com/@modelcontextprotocol/ext-apps@2.0.4/app-with-deps";"#;

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

fn model_only() -> Meta {
    ToolUi::new(VIEW)
        .visibility([Visibility::Model])
        .into_meta()
}

/// Sets the counter back to zero (for the model: the view may not call it).
#[tool(meta = model_only)]
async fn reset_counter(cx: Context) -> CallToolResult {
    COUNT.store(0, Ordering::Relaxed);
    counted(0, None, &cx)
}

/// The page with the SDK module inlined in place of its import: the bundle's code runs
/// in a function of its own (its top-level names stay its own) that returns the
/// bundle's `App` export.
fn inline_sdk(page: &str, sdk: &str) -> Result<String, String> {
    let at = sdk
        .rfind("export{")
        .ok_or("the SDK file has no export list: expected app-with-deps.js")?;
    let list = sdk[at + "export{".len()..]
        .trim_end()
        .trim_end_matches(';')
        .strip_suffix('}')
        .ok_or("the SDK file does not end with its export list")?;
    let app = list
        .split(',')
        .find_map(|entry| match entry.trim().split_once(" as ") {
            Some((local, "App")) => Some(local.trim()),
            None if entry.trim() == "App" => Some("App"),
            _ => None,
        })
        .ok_or("the SDK file does not export App")?;
    if !page.contains(SDK_IMPORT) {
        return Err("the page does not import the SDK as expected".into());
    }
    let body = &sdk[..at];
    let inlined = format!("const {{ App }} = (() => {{\n{body}\nreturn {{ App: {app} }};\n}})();");
    Ok(page.replacen(SDK_IMPORT, &inlined, 1))
}

/// The view: importing the SDK from unpkg, or with `--sdk PATH` inlining it.
fn view() -> Result<UiResource, Box<dyn std::error::Error>> {
    let page = include_str!("../../apps/counter.html");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let resource = match args.as_slice() {
        [] => UiResource::html(VIEW, "Counter", page).csp(Csp::new().resource("https://unpkg.com")),
        [flag, path] if flag == "--sdk" => {
            let sdk = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the App SDK at {path}: {e}"))?;
            UiResource::html(
                VIEW,
                "Counter",
                inline_sdk(page, &sdk).map_err(|e| format!("{path}: {e}"))?,
            )
        }
        _ => return Err("usage: apps-server [--sdk PATH-TO-app-with-deps.js]".into()),
    };
    Ok(resource
        .title("Counter")
        .description("The counter, with a button that adds one")
        .prefers_border(true))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let apps = Apps::new()
        .resource(view()?)?
        .tool(show_counter_tool())?
        .tool(increment_tool())?
        .tool(reset_counter_tool())?;
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
