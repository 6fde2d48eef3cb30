//! MCP Apps (SEP-1865, extension `io.modelcontextprotocol/ui`, revision 2026-01-26):
//! interactive user interfaces that servers deliver and hosts render.
//!
//! A server declares *UI resources* — HTML documents at `ui://` URIs, with the MIME
//! type `text/html;profile=mcp-app` and a `_meta.ui` naming the origins the page needs
//! (its sandbox's Content Security Policy), the browser features it asks for, a
//! dedicated domain and a border preference — and links tools to them with
//! `_meta.ui.resourceUri`. When such a tool is called, a host that declared the
//! extension renders the UI in a sandboxed frame and hands it the tool's input and
//! result; the UI talks back to the host in a JSON-RPC dialect (`ui/initialize`,
//! `ui/message`, `tools/call`, ...). A tool's `_meta.ui.visibility` says whether the
//! model, the app, or both may call it.
//!
//! # Server (feature `server`)
//!
//! [`UiResource`]s and linked tools go into [`Apps`], which checks them as they are
//! added (scheme, MIME type, origins, a non-empty UTF-8 document); installing it with
//! [`ServerBuilderAppsExt::apps`] refuses a tool pointing at a UI resource it does not
//! have, declares the extension, and serves tool metadata per client: a client that
//! did not declare the extension sees neither app-only tools nor `_meta.ui`.
//! [`client_supports_ui`] tells a tool whether to answer for a UI or in plain text.
//!
//! ```
//! # #[cfg(feature = "server")] {
//! use modelctx_apps::{Apps, Csp, ServerBuilderAppsExt, ToolUi, UiResource, Visibility};
//! use modelctx_server::{Context, NoArgs, Server, ToolDef};
//!
//! let face = UiResource::html("ui://clock/face", "Clock face", "<!doctype html><p id=t></p>")
//!     .csp(Csp::new().resource("https://unpkg.com"));
//! let time = ToolDef::new("time", |_: NoArgs, _cx: Context| async { Ok::<_, String>("12:00") });
//! let tick = ToolDef::new("tick", |_: NoArgs, _cx: Context| async { Ok::<_, String>("12:01") });
//! let apps = Apps::new()
//!     .resource(face)?
//!     .tool(ToolUi::new("ui://clock/face").link(time))?
//!     .tool(ToolUi::new("ui://clock/face").visibility([Visibility::App]).link(tick))?;
//! let server = Server::builder("clock", "1.0.0").apps(apps)?.build();
//! # let _ = server;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Host bridge (feature `bridge`)
//!
//! [`bridge::AppBridge`] is the host end of one view: [`bridge::UiView::load`] reads a
//! tool's UI resource through a connected `Client` and checks it,
//! [`bridge::SandboxPolicy`] is the Content Security Policy and permissions to render it
//! under (the restrictive default when nothing is declared, never looser than declared),
//! and the bridge speaks the View<->Host dialect over a [`bridge::ViewLink`] — a pair of
//! channels of JSON values the host connects to its webview, WebSocket or
//! `postMessage` relay. It enforces the extension's rules on what the view asks (only
//! tools visible to the app, only on its own server; checked params; no request
//! before `ui/initialize`) and hands the host's decisions to callbacks that deny unless
//! given.
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `server` | [`UiResource`], [`Apps`], [`ServerBuilderAppsExt`], [`client_supports_ui`] |
//! | `bridge` | [`bridge`]: [`AppBridge`](bridge::AppBridge), [`UiView`](bridge::UiView), [`SandboxPolicy`](bridge::SandboxPolicy), [`ViewLink`](bridge::ViewLink) |
#![cfg_attr(docsrs, feature(doc_cfg))]

// The server half encodes, the bridge decodes.
#[cfg_attr(not(all(feature = "server", feature = "bridge")), allow(dead_code))]
mod base64;
mod builder;
mod meta;

#[cfg(feature = "server")]
mod server;

#[cfg(feature = "bridge")]
pub mod bridge;

pub use meta::{
    Csp, EXTENSION_ID, MIME_TYPE, PROTOCOL_VERSION, ToolUi, UI_SCHEME, UiPermissions,
    UiResourceMeta, Visibility, callable_by_app, check_origin, check_ui_uri, client_settings,
    model_tools, supports_ui, visible_to_model,
};

#[cfg(feature = "server")]
pub use server::{
    Apps, AppsError, AppsErrorKind, ServerBuilderAppsExt, UiResource, client_supports_ui,
};
