//! For tests of MCP Apps: a clock server with a UI resource and tools linked to it (one
//! for both model and app, one for the app only, one for the model only), which records
//! every call it answers, and a client builder that declares the extension.
//!
//! ```
//! use modelctx_test::apps::{ClockServer, FACE_URI};
//!
//! let clock = ClockServer::new();
//! let server = clock.server();
//! # let _ = server;
//! assert!(clock.calls().is_empty());
//! # let _ = FACE_URI;
//! ```

use std::sync::{Arc, Mutex};

use modelctx_apps::{
    Apps, Csp, EXTENSION_ID, ServerBuilderAppsExt, ToolUi, UiPermissions, UiResource, Visibility,
    client_settings, client_supports_ui,
};
use modelctx_client::{ClientBuilder, ClientExtension};
use modelctx_server::{Context, Server, ToolDef};
use modelctx_types::{CallToolResult, JsonObject, Tool};
use serde_json::json;

/// The clock face: text HTML, with CSP origins, a permission and a border preference.
pub const FACE_URI: &str = "ui://clock/face";
/// The same page served as a base64 `blob`, with no `_meta.ui` (the host's defaults).
pub const BLOB_URI: &str = "ui://clock/blob";
/// The face's `connectDomains` origin.
pub const CONNECT_ORIGIN: &str = "https://api.clock.example";
/// The face's `resourceDomains` origin.
pub const RESOURCE_ORIGIN: &str = "https://cdn.clock.example";
/// The face's HTML.
pub const FACE_HTML: &str =
    "<!doctype html><html><body><p id=\"time\">--:--</p><button>tick</button></body></html>";
/// Linked to the face, visible to the model and the app.
pub const SHOW_TIME: &str = "show_time";
/// Linked to the face, visible to the app only.
pub const TICK: &str = "tick";
/// Linked to the blob page, visible to the model only.
pub const MODEL_NOTE: &str = "model_note";
/// Not linked to any UI.
pub const PLAIN: &str = "plain";

/// The clock server's definition and the calls its tools answered.
#[derive(Debug, Clone, Default)]
pub struct ClockServer {
    calls: Arc<Mutex<Vec<String>>>,
}

impl ClockServer {
    /// A clock that has answered nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The names of the tools called so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The UI resources and linked tools.
    pub fn apps(&self) -> Apps {
        let face = UiResource::html(FACE_URI, "Clock face", FACE_HTML)
            .title("Clock")
            .description("Shows the time and ticks it")
            .csp(Csp::new().connect(CONNECT_ORIGIN).resource(RESOURCE_ORIGIN))
            .permissions(UiPermissions::new().clipboard_write())
            .prefers_border(true);
        let blob = UiResource::html_blob(BLOB_URI, "Clock note", FACE_HTML.as_bytes());
        Apps::new()
            .resource(face)
            .and_then(|a| a.resource(blob))
            .and_then(|a| a.tool(ToolUi::new(FACE_URI).link(self.tool(SHOW_TIME, "12:00"))))
            .and_then(|a| {
                a.tool(
                    ToolUi::new(FACE_URI)
                        .visibility([Visibility::App])
                        .link(self.tool(TICK, "12:01")),
                )
            })
            .and_then(|a| {
                a.tool(
                    ToolUi::new(BLOB_URI)
                        .visibility([Visibility::Model])
                        .link(self.tool(MODEL_NOTE, "noted")),
                )
            })
            .expect("the clock's apps are valid")
    }

    /// The server: the apps and a plain tool.
    pub fn server(&self) -> Server {
        Server::builder("clock", "1.0.0")
            .apps(self.apps())
            .expect("the clock's apps install")
            .tool(self.tool(PLAIN, "plain"))
            .expect("the plain tool registers")
            .build()
    }

    /// A tool that records its call and answers `time`: structured for a client with
    /// the extension, text alone for any other.
    fn tool(&self, name: &'static str, time: &'static str) -> ToolDef {
        let calls = self.calls.clone();
        let mut schema = JsonObject::new();
        schema.insert("type".into(), "object".into());
        let mut tool = Tool::new(name, schema);
        tool.description = Some(format!("The {name} tool of the clock"));
        ToolDef::with_schema(tool, move |args: JsonObject, cx: Context| {
            calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(name.to_owned());
            let ui = client_supports_ui(&cx);
            async move {
                let mut result = CallToolResult::text(format!("The time is {time}"));
                if ui {
                    result.structured_content = Some(json!({"time": time, "arguments": args}));
                }
                result
            }
        })
    }
}

/// `builder` declaring the extension with `text/html;profile=mcp-app`.
pub fn with_ui(builder: ClientBuilder) -> ClientBuilder {
    builder.extension(ClientExtension::new(EXTENSION_ID).settings(client_settings()))
}
