//! The extension's wire metadata, shared by both halves: a UI resource's `_meta.ui`
//! (CSP domains, permissions, dedicated domain, border preference), a tool's
//! `_meta.ui` (its UI resource and who may call it), the client's capability, and the
//! checks every origin and `ui://` URI passes.

use modelctx_types::{ClientCapabilities, JsonObject, Meta, Tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension's identifier, under `extensions` in the capabilities of both sides.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an HTML UI resource (the only one the 2026-01-26 revision defines).
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The scheme every UI resource's URI starts with.
pub const UI_SCHEME: &str = "ui://";

/// The revision of the View<->Host dialect spoken in `ui/initialize`.
pub const PROTOCOL_VERSION: &str = "2026-01-26";

/// The deprecated flat key a tool's UI resource was once named under; read, never
/// written.
pub(crate) const FLAT_RESOURCE_URI_KEY: &str = "ui/resourceUri";

/// The origins a UI resource declares for its sandbox's Content Security Policy. Each
/// list empty (the default) means none: the host's restrictive default applies.
///
/// Every origin is `scheme://host[:port]` with scheme `http`, `https`, `ws` or `wss`, the
/// host optionally starting with a `*.` wildcard, and nothing after the port; anything
/// else is refused where the resource is registered, so no origin can smuggle another
/// CSP directive in.
///
/// ```
/// use modelctx_apps::Csp;
///
/// let csp = Csp::new()
///     .connect("https://api.example.com")
///     .resource("https://*.jsdelivr.net");
/// assert!(csp.check().is_ok());
/// assert!(Csp::new().connect("https://a.example; script-src *").check().is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Csp {
    /// Origins for `fetch`, XHR and WebSockets (`connect-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins for nested frames (`frame-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Origins allowed as the document's base URI (`base-uri`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

impl Csp {
    /// No origins.
    pub fn new() -> Self {
        Self::default()
    }

    crate::builder::builder_methods! {
        /// Adds an origin for network requests.
        connect(origin: impl Into<String>) push connect_domains;

        /// Adds an origin for static resources.
        resource(origin: impl Into<String>) push resource_domains;

        /// Adds an origin for nested frames.
        frame(origin: impl Into<String>) push frame_domains;

        /// Adds an origin allowed as the base URI.
        base_uri(origin: impl Into<String>) push base_uri_domains;
    }

    /// Whether no origin is declared at all.
    pub fn is_empty(&self) -> bool {
        self.lists().iter().all(|(_, list)| list.is_empty())
    }

    /// Checks every origin; the error names the list and the origin.
    pub fn check(&self) -> Result<(), String> {
        for (name, list) in self.lists() {
            for origin in list {
                check_origin(origin).map_err(|why| format!("{name} {origin:?}: {why}"))?;
            }
        }
        Ok(())
    }

    pub(crate) fn lists(&self) -> [(&'static str, &Vec<String>); 4] {
        [
            ("connectDomains", &self.connect_domains),
            ("resourceDomains", &self.resource_domains),
            ("frameDomains", &self.frame_domains),
            ("baseUriDomains", &self.base_uri_domains),
        ]
    }
}

/// The browser features a UI asks its sandbox for (each sent as an empty object when
/// asked). A host may grant them; a UI must not assume it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UiPermissions {
    /// The `camera` feature.
    pub camera: bool,
    /// The `microphone` feature.
    pub microphone: bool,
    /// The `geolocation` feature.
    pub geolocation: bool,
    /// The `clipboard-write` feature.
    pub clipboard_write: bool,
}

impl UiPermissions {
    /// None asked.
    pub fn new() -> Self {
        Self::default()
    }

    crate::builder::builder_methods! {
        /// Asks for the camera.
        flag camera;

        /// Asks for the microphone.
        flag microphone;

        /// Asks for geolocation.
        flag geolocation;

        /// Asks to write to the clipboard.
        flag clipboard_write;
    }

    /// Whether nothing is asked.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The Permissions Policy features asked, as an iframe's `allow` attribute lists
    /// them.
    pub fn features(&self) -> Vec<&'static str> {
        [
            (self.camera, "camera"),
            (self.microphone, "microphone"),
            (self.geolocation, "geolocation"),
            (self.clipboard_write, "clipboard-write"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PermissionsWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    camera: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    microphone: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    geolocation: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    clipboard_write: Option<JsonObject>,
}

impl Serialize for UiPermissions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let asked = |on: bool| on.then(JsonObject::new);
        PermissionsWire {
            camera: asked(self.camera),
            microphone: asked(self.microphone),
            geolocation: asked(self.geolocation),
            clipboard_write: asked(self.clipboard_write),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for UiPermissions {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = PermissionsWire::deserialize(d)?;
        Ok(Self {
            camera: wire.camera.is_some(),
            microphone: wire.microphone.is_some(),
            geolocation: wire.geolocation.is_some(),
            clipboard_write: wire.clipboard_write.is_some(),
        })
    }
}

/// A UI resource's `_meta.ui`: how its sandbox is set up and drawn.
///
/// ```
/// use modelctx_apps::{Csp, UiResourceMeta};
///
/// let meta = UiResourceMeta::new()
///     .csp(Csp::new().connect("https://api.example.com"))
///     .prefers_border(true);
/// let json = serde_json::to_value(&meta).unwrap();
/// assert_eq!(json["csp"]["connectDomains"][0], "https://api.example.com");
/// assert_eq!(json["prefersBorder"], true);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiResourceMeta {
    /// The origins the UI needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<Csp>,
    /// The browser features the UI asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiPermissions>,
    /// A dedicated origin for the UI's sandbox, in the format the host documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host should draw a border and background around the UI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

impl UiResourceMeta {
    /// Nothing declared.
    pub fn new() -> Self {
        Self::default()
    }

    crate::builder::builder_methods! {
        /// Sets the CSP origins.
        csp(csp: Csp);

        /// Sets the permissions asked.
        permissions(permissions: UiPermissions);

        /// Sets the dedicated sandbox domain.
        domain(domain: impl Into<String>);

        /// Sets the border preference.
        prefers_border(prefers: bool);
    }

    /// Checks the CSP origins and the domain.
    pub fn check(&self) -> Result<(), String> {
        if let Some(csp) = &self.csp {
            csp.check()?;
        }
        if let Some(domain) = &self.domain {
            check_domain(domain).map_err(|why| format!("domain {domain:?}: {why}"))?;
        }
        Ok(())
    }

    /// The `_meta.ui` of `meta`, if it has one that reads as this type.
    pub fn of(meta: &Meta) -> Option<Self> {
        serde_json::from_value(meta.get("ui")?.clone()).ok()
    }

    /// A `_meta` holding this as `ui`.
    pub fn into_meta(self) -> Meta {
        let mut meta = Meta::new();
        meta.insert("ui", to_value(&self));
        meta
    }
}

/// Who may see and call a tool linked to a UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Visibility {
    /// The model (agent): the tool is in its tool list and it may call it.
    Model,
    /// The app (the UI), on the same server connection only.
    App,
}

/// A tool's `_meta.ui`: the UI resource that renders its results, and who may call it
/// (by default both the model and the app).
///
/// ```
/// use modelctx_apps::{ToolUi, Visibility};
///
/// let ui = ToolUi::new("ui://clock/face").visibility([Visibility::App]);
/// assert!(!ui.visible_to_model());
/// assert!(ui.callable_by_app());
/// let meta = ui.into_meta();
/// assert_eq!(meta.get("ui").unwrap()["resourceUri"], "ui://clock/face");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolUi {
    /// The `ui://` resource that renders the tool's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may call the tool; absent means both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<Visibility>>,
}

impl ToolUi {
    /// Linked to the UI resource at `resource_uri`, visible to both model and app.
    pub fn new(resource_uri: impl Into<String>) -> Self {
        Self {
            resource_uri: Some(resource_uri.into()),
            visibility: None,
        }
    }

    crate::builder::builder_methods! {
        /// Sets who may call the tool.
        visibility(visibility: impl IntoIterator<Item = Visibility>) collect;
    }

    /// Whether the model may see and call the tool.
    pub fn visible_to_model(&self) -> bool {
        self.allows(Visibility::Model)
    }

    /// Whether an app of the same server may call the tool.
    pub fn callable_by_app(&self) -> bool {
        self.allows(Visibility::App)
    }

    fn allows(&self, who: Visibility) -> bool {
        self.visibility.as_ref().is_none_or(|v| v.contains(&who))
    }

    /// The tool's `_meta.ui`, read leniently: the nested form, else the deprecated flat
    /// `ui/resourceUri` key; `None` when the tool has neither. A `visibility` with an
    /// unknown entry keeps the entries it knows.
    pub fn of(tool: &Tool) -> Option<Self> {
        let meta = tool.meta.as_ref()?;
        let flat = meta
            .get(FLAT_RESOURCE_URI_KEY)
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(ui) = meta.get("ui").and_then(Value::as_object) else {
            return flat.map(Self::new);
        };
        let resource_uri = ui
            .get("resourceUri")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(flat);
        let visibility = ui.get("visibility").and_then(Value::as_array).map(|list| {
            list.iter()
                .filter_map(|v| serde_json::from_value(v.clone()).ok())
                .collect()
        });
        Some(Self {
            resource_uri,
            visibility,
        })
    }

    /// A `_meta` holding this as `ui`.
    pub fn into_meta(self) -> Meta {
        let mut meta = Meta::new();
        meta.insert("ui", to_value(&self));
        meta
    }
}

/// Whether the model may see and call `tool`: true unless its `_meta.ui.visibility`
/// leaves the model out.
pub fn visible_to_model(tool: &Tool) -> bool {
    ToolUi::of(tool).is_none_or(|ui| ui.visible_to_model())
}

/// Whether an app may call `tool`: true unless its `_meta.ui.visibility` leaves the app
/// out.
pub fn callable_by_app(tool: &Tool) -> bool {
    ToolUi::of(tool).is_none_or(|ui| ui.callable_by_app())
}

/// The tools a model is shown: `tools` without those visible to the app only.
pub fn model_tools(tools: impl IntoIterator<Item = Tool>) -> Vec<Tool> {
    tools.into_iter().filter(visible_to_model).collect()
}

/// The extension's settings as a client (host) declares them: the MIME types it
/// renders, [`MIME_TYPE`].
pub fn client_settings() -> JsonObject {
    let mut settings = JsonObject::new();
    settings.insert("mimeTypes".into(), Value::from(vec![MIME_TYPE]));
    settings
}

/// Whether `capabilities` declare the extension with [`MIME_TYPE`] among its
/// `mimeTypes` (which the extension requires).
///
/// ```
/// use modelctx_apps::{EXTENSION_ID, client_settings, supports_ui};
/// use modelctx_types::ClientCapabilities;
///
/// let plain = ClientCapabilities::new();
/// assert!(!supports_ui(Some(&plain)));
/// let host = ClientCapabilities::new().with_extension(EXTENSION_ID, client_settings());
/// assert!(supports_ui(Some(&host)));
/// ```
pub fn supports_ui(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.extensions.as_ref())
        .and_then(|e| e.get(EXTENSION_ID))
        .and_then(|settings| settings.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// Checks a UI resource URI: `ui://` and something after it, without whitespace or
/// control characters.
pub fn check_ui_uri(uri: &str) -> Result<(), String> {
    let Some(rest) = uri.strip_prefix(UI_SCHEME) else {
        return Err(format!("a UI resource URI starts with {UI_SCHEME}"));
    };
    if rest.is_empty() {
        return Err(format!("nothing after {UI_SCHEME}"));
    }
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("whitespace or a control character in the URI".into());
    }
    Ok(())
}

/// Checks one CSP origin: `scheme://host[:port]`, scheme `http`, `https`, `ws` or `wss`,
/// the host a DNS name (optionally `*.`-prefixed), an IPv4 address or a bracketed IPv6
/// address, the port 1 to 65535, and nothing else.
pub fn check_origin(origin: &str) -> Result<(), String> {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return Err("not scheme://host".into());
    };
    if !matches!(
        scheme.to_ascii_lowercase().as_str(),
        "http" | "https" | "ws" | "wss"
    ) {
        return Err(format!("scheme {scheme:?} is not http, https, ws or wss"));
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let Some((inside, after)) = v6.split_once(']') else {
            return Err("an unclosed IPv6 address".into());
        };
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err("a malformed IPv6 address".into());
        }
        match after {
            "" => (None, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (None, Some(port)),
                None => return Err("something after the address".into()),
            },
        }
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(rest), None),
        }
    };
    if let Some(port) = port {
        let valid = !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p));
        if !valid {
            return Err(format!("port {port:?} is not 1 to 65535"));
        }
    }
    if let Some(host) = host {
        check_host(host.strip_prefix("*.").unwrap_or(host))?;
    }
    Ok(())
}

/// A DNS name or IPv4 address: labels of letters, digits and inner hyphens.
fn check_host(host: &str) -> Result<(), String> {
    if host.is_empty() || host.len() > 253 {
        return Err("the host is empty or longer than 253 characters".into());
    }
    for label in host.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!("host label {label:?} is not a DNS label"));
        }
    }
    Ok(())
}

/// A dedicated sandbox domain: a host name, or an origin of the forms
/// [`check_origin`] takes (hosts document their own formats).
fn check_domain(domain: &str) -> Result<(), String> {
    if domain.contains("://") {
        return check_origin(domain);
    }
    check_host(domain)
}

/// `value` as JSON; the types encoded here are plain data and cannot fail.
pub(crate) fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        for good in [
            "https://api.example.com",
            "wss://realtime.example.com:8443",
            "https://*.cloudflare.com",
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8080",
            "HTTPS://Example.COM",
        ] {
            assert!(check_origin(good).is_ok(), "{good}");
        }
        for bad in [
            "api.example.com",
            "ftp://example.com",
            "https://",
            "https://example.com/path",
            "https://example.com; script-src *",
            "https://exa mple.com",
            "https://example.com:0",
            "https://example.com:99999",
            "https://example.com:",
            "https://*",
            "https://a.*.example.com",
            "https://-bad.example.com",
            "https://[::1",
            "https://[zz]",
            "'self'",
            "*",
            "https://example.com,https://other.com",
            "https://user@example.com",
        ] {
            assert!(check_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ui_uris() {
        assert!(check_ui_uri("ui://clock/face").is_ok());
        assert!(check_ui_uri("https://clock/face").is_err());
        assert!(check_ui_uri("ui://").is_err());
        assert!(check_ui_uri("ui://a b").is_err());
    }

    #[test]
    fn permissions_on_the_wire() {
        let p = UiPermissions::new().camera().clipboard_write();
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"camera": {}, "clipboardWrite": {}})
        );
        let back: UiPermissions = serde_json::from_value(json).unwrap();
        assert_eq!(back, p);
        assert_eq!(p.features(), ["camera", "clipboard-write"]);
    }

    #[test]
    fn tool_ui_reads_both_forms() {
        let mut tool = Tool::new("t", JsonObject::new());
        assert!(ToolUi::of(&tool).is_none());
        let mut flat = Meta::new();
        flat.insert(FLAT_RESOURCE_URI_KEY, "ui://x".into());
        tool.meta = Some(flat);
        assert_eq!(
            ToolUi::of(&tool).unwrap().resource_uri.as_deref(),
            Some("ui://x")
        );
        tool.meta = Some(
            ToolUi::new("ui://y")
                .visibility([Visibility::App])
                .into_meta(),
        );
        let ui = ToolUi::of(&tool).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://y"));
        assert!(!visible_to_model(&tool));
        assert!(callable_by_app(&tool));
        let mut odd = Meta::new();
        odd.insert(
            "ui",
            serde_json::json!({"visibility": ["model", "elsewhere"]}),
        );
        tool.meta = Some(odd);
        assert!(visible_to_model(&tool));
        assert!(!callable_by_app(&tool));
    }

    #[test]
    fn negotiation_needs_the_mime_type() {
        let mut settings = JsonObject::new();
        settings.insert("mimeTypes".into(), serde_json::json!(["text/html"]));
        let other = ClientCapabilities::new().with_extension(EXTENSION_ID, settings);
        assert!(!supports_ui(Some(&other)));
        let empty = ClientCapabilities::new().with_extension(EXTENSION_ID, JsonObject::new());
        assert!(!supports_ui(Some(&empty)));
        assert!(!supports_ui(None));
    }
}
