//! The server half: UI resources checked when added, tools linked to them, and the
//! installation into a [`ServerBuilder`] (resources, tools, the extension's
//! declaration and the layer that serves UI metadata per the client's declaration).

mod negotiate;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt;

use modelctx_server::{Context, ResourceDef, ServerBuilder, ToolDef, ToolSet};
use modelctx_types::{
    BlobResourceContents, JsonObject, Meta, TextOrBlobResourceContents, TextResourceContents,
};
use serde_json::Value;

use crate::meta::{
    Csp, EXTENSION_ID, MIME_TYPE, ToolUi, UiPermissions, UiResourceMeta, check_ui_uri, supports_ui,
    to_value,
};

/// Why a UI resource or a linked tool was refused: what it is about (a URI or a tool
/// name) and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppsError {
    subject: String,
    message: String,
    kind: AppsErrorKind,
}

/// What kind of rule an [`AppsError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppsErrorKind {
    /// The resource or tool breaks a rule of the extension (URI scheme, origins, ...).
    Invalid,
    /// Another UI resource (or resource, or tool) already has this URI or name.
    Duplicate,
    /// A tool points at a UI resource the server does not have.
    UnknownResource,
}

impl AppsError {
    fn new(kind: AppsErrorKind, subject: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            message: message.into(),
            kind,
        }
    }

    /// The URI or tool name the error is about.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The rule broken.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What kind of rule it is.
    pub fn kind(&self) -> AppsErrorKind {
        self.kind
    }
}

impl fmt::Display for AppsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.message)
    }
}

impl std::error::Error for AppsError {}

#[derive(Debug, Clone)]
enum Html {
    Text(String),
    Blob(Vec<u8>),
}

/// A UI resource: a `ui://` URI, a name, its HTML (served as text, or base64 in a
/// `blob`) with the MIME type `text/html;profile=mcp-app`, and its `_meta.ui` (CSP
/// origins, permissions, dedicated domain, border preference), sent both in
/// `resources/list` and with the contents of `resources/read`. Checked when added to
/// [`Apps`].
///
/// ```
/// use modelctx_apps::{Apps, Csp, UiResource};
///
/// let face = UiResource::html("ui://clock/face", "Clock face", "<!doctype html><p>12:00</p>")
///     .description("Shows the time")
///     .csp(Csp::new().resource("https://unpkg.com"))
///     .prefers_border(true);
/// let apps = Apps::new().resource(face)?;
/// assert_eq!(apps.resources().count(), 1);
///
/// let bad = UiResource::html("https://clock/face", "Clock face", "<p>12:00</p>");
/// assert!(Apps::new().resource(bad).is_err());
/// # Ok::<(), modelctx_apps::AppsError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct UiResource {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    html: Html,
    meta: UiResourceMeta,
}

impl UiResource {
    /// The UI at `uri`, called `name`, whose HTML document is `html` (served as text).
    pub fn html(uri: impl Into<String>, name: impl Into<String>, html: impl Into<String>) -> Self {
        Self::of(uri, name, Html::Text(html.into()))
    }

    /// The UI at `uri` whose HTML document is these bytes (UTF-8), served base64-encoded
    /// in a `blob`.
    pub fn html_blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        html: impl Into<Vec<u8>>,
    ) -> Self {
        Self::of(uri, name, Html::Blob(html.into()))
    }

    fn of(uri: impl Into<String>, name: impl Into<String>, html: Html) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            html,
            meta: UiResourceMeta::default(),
        }
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Its `_meta.ui`.
    pub fn meta(&self) -> &UiResourceMeta {
        &self.meta
    }

    /// Sets the title shown to people.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Declares the origins the UI needs (the host's restrictive default otherwise).
    pub fn csp(mut self, csp: Csp) -> Self {
        self.meta.csp = Some(csp);
        self
    }

    /// Asks for browser features.
    pub fn permissions(mut self, permissions: UiPermissions) -> Self {
        self.meta.permissions = Some(permissions);
        self
    }

    /// Asks for a dedicated sandbox domain, in the format the host documents.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.meta.domain = Some(domain.into());
        self
    }

    /// States whether the host should draw a border and background.
    pub fn prefers_border(mut self, prefers: bool) -> Self {
        self.meta.prefers_border = Some(prefers);
        self
    }

    /// Checks the URI, the HTML and the metadata.
    fn check(&self) -> Result<(), AppsError> {
        let invalid = |m: String| AppsError::new(AppsErrorKind::Invalid, &self.uri, m);
        check_ui_uri(&self.uri).map_err(invalid)?;
        if self.name.trim().is_empty() {
            return Err(invalid("a UI resource needs a name".into()));
        }
        let text = match &self.html {
            Html::Text(text) => text.as_str(),
            Html::Blob(bytes) => {
                std::str::from_utf8(bytes).map_err(|_| invalid("the HTML is not UTF-8".into()))?
            }
        };
        if text.trim().is_empty() {
            return Err(invalid("the HTML document is empty".into()));
        }
        self.meta.check().map_err(invalid)
    }

    /// The `_meta` of the listing and of the contents: `ui` when anything is declared.
    fn wire_meta(&self) -> Option<Meta> {
        (self.meta != UiResourceMeta::default()).then(|| self.meta.clone().into_meta())
    }

    /// The resource definition serving it.
    fn def(&self) -> ResourceDef {
        let meta = self.wire_meta();
        let contents: TextOrBlobResourceContents = match &self.html {
            Html::Text(text) => {
                let mut c = TextResourceContents::new(&self.uri, text.clone());
                c.mime_type = Some(MIME_TYPE.to_owned());
                c.meta = meta.clone();
                c.into()
            }
            Html::Blob(bytes) => {
                let mut c = BlobResourceContents::new(&self.uri, crate::base64::encode(bytes));
                c.mime_type = Some(MIME_TYPE.to_owned());
                c.meta = meta.clone();
                c.into()
            }
        };
        let mut def = ResourceDef::new(&self.uri, &self.name, move |_cx: Context| {
            let contents = vec![contents.clone()];
            async move { Ok::<_, Infallible>(contents) }
        })
        .mime_type(MIME_TYPE);
        if let Some(title) = &self.title {
            def = def.title(title);
        }
        if let Some(description) = &self.description {
            def = def.description(description);
        }
        if let Some(meta) = meta {
            def = def.meta(meta);
        }
        def
    }
}

impl ToolUi {
    /// `def` with this as its `_meta.ui` (other `_meta` keys kept).
    ///
    /// ```
    /// use modelctx_apps::{ToolUi, Visibility};
    /// use modelctx_server::{Context, NoArgs, ToolDef};
    ///
    /// let refresh = ToolDef::new("refresh", |_: NoArgs, _cx: Context| async {
    ///     Ok::<_, String>("refreshed")
    /// });
    /// let refresh = ToolUi::new("ui://clock/face").visibility([Visibility::App]).link(refresh);
    /// assert!(!modelctx_apps::visible_to_model(refresh.tool()));
    /// ```
    #[must_use]
    pub fn link(self, def: ToolDef) -> ToolDef {
        let mut meta = def.tool().meta.clone().unwrap_or_default();
        meta.insert("ui", to_value(&self));
        def.meta(meta)
    }
}

/// The UI resources of a server and the tools linked to them, installed together with
/// [`ServerBuilderAppsExt::apps`], which refuses a tool that points at a UI resource
/// missing here.
///
/// A tool is linked by its `_meta.ui` ([`ToolUi`]): set with [`ToolUi::link`], or by a
/// `#[tool(meta = function)]` whose function returns [`ToolUi::into_meta`].
///
/// ```
/// use modelctx_apps::{Apps, ServerBuilderAppsExt, ToolUi, UiResource};
/// use modelctx_server::{Context, NoArgs, Server, ToolDef};
///
/// let time = ToolDef::new("time", |_: NoArgs, _cx: Context| async {
///     Ok::<_, String>("12:00")
/// });
/// let apps = Apps::new()
///     .resource(UiResource::html("ui://clock/face", "Clock face", "<!doctype html><p></p>"))?
///     .tool(ToolUi::new("ui://clock/face").link(time))?;
/// let server = Server::builder("clock", "1.0.0").apps(apps)?.build();
/// let extensions = server.capabilities().extensions.as_ref().unwrap();
/// assert!(extensions.contains_key(modelctx_apps::EXTENSION_ID));
///
/// // A tool pointing at a UI the server does not have is refused.
/// let lost = ToolUi::new("ui://clock/missing").link(ToolDef::new("lost", |_: NoArgs, _cx: Context| async {
///     Ok::<_, String>("?")
/// }));
/// assert!(Server::builder("clock", "1.0.0").apps(Apps::new().tool(lost)?).is_err());
/// # Ok::<(), modelctx_apps::AppsError>(())
/// ```
#[derive(Debug, Default)]
#[must_use]
pub struct Apps {
    resources: BTreeMap<String, UiResource>,
    tools: Vec<ToolDef>,
}

impl Apps {
    /// No UI resources, no tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a UI resource, checked: a `ui://` URI, a name, a non-empty UTF-8 HTML
    /// document, well-formed origins; a URI already added is a duplicate.
    pub fn resource(mut self, resource: UiResource) -> Result<Self, AppsError> {
        resource.check()?;
        if self.resources.contains_key(&resource.uri) {
            return Err(AppsError::new(
                AppsErrorKind::Duplicate,
                &resource.uri,
                "a UI resource with this URI is already added",
            ));
        }
        self.resources.insert(resource.uri.clone(), resource);
        Ok(self)
    }

    /// Adds a tool linked to a UI (or visible to the app only): it must carry a
    /// `_meta.ui`, whose `resourceUri`, if any, is a `ui://` URI. Whether that resource
    /// exists is checked when the apps are installed.
    pub fn tool(mut self, def: ToolDef) -> Result<Self, AppsError> {
        let name = def.tool().name.clone();
        let invalid = |m: String| AppsError::new(AppsErrorKind::Invalid, &name, m);
        let Some(ui) = ToolUi::of(def.tool()) else {
            return Err(invalid(
                "the tool has no _meta.ui (link it with ToolUi::link)".into(),
            ));
        };
        if let Some(uri) = &ui.resource_uri {
            check_ui_uri(uri).map_err(|why| invalid(format!("resourceUri {uri:?}: {why}")))?;
        }
        if ui.visibility.as_ref().is_some_and(Vec::is_empty) {
            return Err(invalid(
                "an empty visibility leaves the tool callable by no one".into(),
            ));
        }
        self.tools.push(def);
        Ok(self)
    }

    /// Adds several tools (a `Vec`, an array, or a `#[tools]` type), each as
    /// [`tool`](Self::tool) does.
    pub fn tools(self, tools: impl ToolSet) -> Result<Self, AppsError> {
        tools
            .into_tool_defs()
            .into_iter()
            .try_fold(self, Self::tool)
    }

    /// The UI resources, in URI order.
    pub fn resources(&self) -> impl Iterator<Item = &UiResource> {
        self.resources.values()
    }

    /// The first tool whose resource is not here: its name and the URI.
    fn unlinked(&self) -> Option<(String, String)> {
        self.tools.iter().find_map(|def| {
            let uri = ToolUi::of(def.tool())?.resource_uri?;
            (!self.resources.contains_key(&uri)).then(|| (def.tool().name.clone(), uri))
        })
    }
}

/// Installs [`Apps`] into a [`ServerBuilder`].
pub trait ServerBuilderAppsExt: Sized {
    /// Registers every UI resource and linked tool of `apps`, declares the extension
    /// (`extensions["io.modelcontextprotocol/ui"]` with the MIME types served), and
    /// serves tool metadata per what each client declared: a client that declared the
    /// extension with `text/html;profile=mcp-app` sees every tool with its `_meta.ui`; any
    /// other client sees no tool that is visible to the app only (and calling one is
    /// "Unknown tool"), and no `_meta.ui` on the others. The same in both eras.
    ///
    /// Refused: a tool pointing at a UI resource not in `apps`, and a URI or tool name
    /// already registered on the builder.
    fn apps(self, apps: Apps) -> Result<Self, AppsError>;
}

impl ServerBuilderAppsExt for ServerBuilder {
    fn apps(self, apps: Apps) -> Result<Self, AppsError> {
        if let Some((tool, uri)) = apps.unlinked() {
            return Err(AppsError::new(
                AppsErrorKind::UnknownResource,
                tool,
                format!("points at the UI resource {uri}, which these apps do not have"),
            ));
        }
        let mut builder = self;
        for resource in apps.resources.values() {
            builder = builder
                .resource(resource.def())
                .map_err(|e| registration(&resource.uri, &e))?;
        }
        for def in apps.tools {
            let name = def.tool().name.clone();
            builder = builder.tool(def).map_err(|e| registration(&name, &e))?;
        }
        let mut settings = JsonObject::new();
        settings.insert("mimeTypes".into(), Value::from(vec![MIME_TYPE]));
        Ok(builder
            .extension(EXTENSION_ID, settings)
            .layer(negotiate::NegotiateLayer))
    }
}

fn registration(subject: &str, error: &modelctx_server::RegistrationError) -> AppsError {
    let kind = match error.kind() {
        modelctx_server::RegistrationErrorKind::Duplicate => AppsErrorKind::Duplicate,
        _ => AppsErrorKind::Invalid,
    };
    AppsError::new(kind, subject, error.to_string())
}

/// Whether the client of this request declared the extension with
/// `text/html;profile=mcp-app` (in the handshake, or on the request in protocol
/// 2026-07-28): a tool may answer it with a result meant for a UI, and should answer any
/// other client with text that stands alone.
pub fn client_supports_ui(cx: &Context) -> bool {
    supports_ui(cx.client_capabilities())
}
