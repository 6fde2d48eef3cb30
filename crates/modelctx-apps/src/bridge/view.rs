//! A tool's UI as the host renders it: the resource read through the client and
//! checked, and the sandbox policy built from what it declares.

use modelctx_client::Client;
use modelctx_types::{TextOrBlobResourceContents, Tool};
use serde_json::{Value, json};

use super::types::{BridgeError, BridgeErrorKind};
use crate::meta::{
    Csp, MIME_TYPE, ToolUi, UiPermissions, UiResourceMeta, check_origin, check_ui_uri, to_value,
};

/// The UI resource of a tool, read through a [`Client`] and checked: a `ui://` URI, the
/// MIME type `text/html;profile=mcp-app`, an HTML document as text or base64 `blob`
/// (UTF-8), and its `_meta.ui` (taken from the contents, else from the listing).
#[derive(Debug, Clone)]
pub struct UiView {
    tool: Tool,
    uri: String,
    html: String,
    meta: UiResourceMeta,
}

impl UiView {
    /// Reads the UI resource `tool` links to (`_meta.ui.resourceUri`, or the deprecated
    /// flat key) with `resources/read` on `client`, the connection to the tool's own
    /// server.
    pub async fn load(client: &Client, tool: &Tool) -> Result<Self, BridgeError> {
        let resource = |m: String| BridgeError::new(BridgeErrorKind::Resource, m);
        let uri = ToolUi::of(tool)
            .and_then(|ui| ui.resource_uri)
            .ok_or_else(|| resource(format!("the tool {} has no UI resource", tool.name)))?;
        check_ui_uri(&uri).map_err(|why| resource(format!("{uri}: {why}")))?;
        let read = client
            .read_resource(&uri)
            .await
            .map_err(|e| BridgeError::server(format!("cannot read {uri}"), e))?;
        let contents = read
            .contents
            .into_iter()
            .find(|c| c.uri() == uri)
            .ok_or_else(|| resource(format!("{uri}: the read holds no contents for it")))?;
        if contents.mime_type() != Some(MIME_TYPE) {
            return Err(resource(format!(
                "{uri}: the MIME type is {:?}, not {MIME_TYPE}",
                contents.mime_type().unwrap_or("absent")
            )));
        }
        let (html, meta) = match contents {
            TextOrBlobResourceContents::Text(text) => (text.text, text.meta),
            TextOrBlobResourceContents::Blob(blob) => {
                let bytes = crate::base64::decode(&blob.blob)
                    .ok_or_else(|| resource(format!("{uri}: the blob is not base64")))?;
                let html = String::from_utf8(bytes)
                    .map_err(|_| resource(format!("{uri}: the HTML is not UTF-8")))?;
                (html, blob.meta)
            }
        };
        if html.trim().is_empty() {
            return Err(resource(format!("{uri}: the HTML document is empty")));
        }
        let meta = meta
            .as_ref()
            .and_then(UiResourceMeta::of)
            .unwrap_or_default();
        Ok(Self {
            tool: tool.clone(),
            uri,
            html,
            meta,
        })
    }

    /// The tool that opened the view.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The HTML document.
    pub fn html(&self) -> &str {
        &self.html
    }

    /// The resource's `_meta.ui`, as declared.
    pub fn meta(&self) -> &UiResourceMeta {
        &self.meta
    }

    /// The sandbox policy for the declared metadata, granting `granted` of the asked
    /// permissions.
    pub fn sandbox(&self, granted: UiPermissions) -> SandboxPolicy {
        SandboxPolicy::new(&self.meta, granted)
    }
}

/// How the view's sandbox is set up: the Content Security Policy built from the
/// declared origins (the extension's restrictive default when none are declared, never
/// looser than declared: an origin that is not well formed is left out, and reported
/// in [`ignored`](Self::ignored); a host may leave out more with
/// [`restrict`](Self::restrict)), and the permissions both asked and granted.
///
/// ```
/// use modelctx_apps::bridge::SandboxPolicy;
/// use modelctx_apps::{Csp, UiPermissions, UiResourceMeta};
///
/// let none = SandboxPolicy::new(&UiResourceMeta::new(), UiPermissions::new());
/// assert!(none.csp().contains("connect-src 'none'"));
///
/// let meta = UiResourceMeta::new().csp(Csp::new().connect("https://api.example.com"));
/// let declared = SandboxPolicy::new(&meta, UiPermissions::new());
/// assert!(declared.csp().contains("connect-src 'self' https://api.example.com;"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    csp: String,
    domains: Csp,
    permissions: UiPermissions,
    ignored: Vec<String>,
}

impl SandboxPolicy {
    /// The policy for `meta`, granting the permissions both asked there and in
    /// `granted`.
    pub fn new(meta: &UiResourceMeta, granted: UiPermissions) -> Self {
        let mut ignored = Vec::new();
        let mut keep = |list: &[String]| -> Vec<String> {
            list.iter()
                .filter(|origin| {
                    let ok = check_origin(origin).is_ok();
                    if !ok {
                        ignored.push((*origin).clone());
                    }
                    ok
                })
                .cloned()
                .collect()
        };
        let declared = meta.csp.clone().unwrap_or_default();
        let domains = Csp {
            connect_domains: keep(&declared.connect_domains),
            resource_domains: keep(&declared.resource_domains),
            frame_domains: keep(&declared.frame_domains),
            base_uri_domains: keep(&declared.base_uri_domains),
        };
        let asked = meta.permissions.unwrap_or_default();
        let permissions = UiPermissions {
            camera: asked.camera && granted.camera,
            microphone: asked.microphone && granted.microphone,
            geolocation: asked.geolocation && granted.geolocation,
            clipboard_write: asked.clipboard_write && granted.clipboard_write,
        };
        Self {
            csp: build_csp(&domains),
            domains,
            permissions,
            ignored,
        }
    }

    /// This policy with only the origins `allowed` accepts (a host's own allow or block
    /// list: the extension lets a host restrict further, never loosen); the others are
    /// left out and reported in [`ignored`](Self::ignored).
    ///
    /// ```
    /// use modelctx_apps::bridge::SandboxPolicy;
    /// use modelctx_apps::{Csp, UiPermissions, UiResourceMeta};
    ///
    /// let meta = UiResourceMeta::new().csp(
    ///     Csp::new().connect("https://api.example.com").connect("https://tracker.example.net"),
    /// );
    /// let policy = SandboxPolicy::new(&meta, UiPermissions::new())
    ///     .restrict(|origin| !origin.ends_with(".example.net"));
    /// assert!(policy.csp().contains("connect-src 'self' https://api.example.com;"));
    /// assert_eq!(policy.ignored(), ["https://tracker.example.net"]);
    /// ```
    #[must_use]
    pub fn restrict(mut self, allowed: impl Fn(&str) -> bool) -> Self {
        for list in [
            &mut self.domains.connect_domains,
            &mut self.domains.resource_domains,
            &mut self.domains.frame_domains,
            &mut self.domains.base_uri_domains,
        ] {
            let (kept, refused): (Vec<String>, Vec<String>) =
                list.drain(..).partition(|origin| allowed(origin));
            *list = kept;
            self.ignored.extend(refused);
        }
        self.csp = build_csp(&self.domains);
        self
    }

    /// The `Content-Security-Policy` value to load the view's document with.
    pub fn csp(&self) -> &str {
        &self.csp
    }

    /// The origins the policy lets in, by directive.
    pub fn domains(&self) -> &Csp {
        &self.domains
    }

    /// The permissions granted (asked by the resource and granted by the host).
    pub fn permissions(&self) -> UiPermissions {
        self.permissions
    }

    /// The value of the view frame's `allow` attribute for the granted permissions.
    pub fn allow(&self) -> String {
        self.permissions.features().join("; ")
    }

    /// Declared origins left out: not well formed, or refused by the host
    /// ([`restrict`](Self::restrict)).
    pub fn ignored(&self) -> &[String] {
        &self.ignored
    }

    /// The `sandbox` member of the host capabilities: what the host applies.
    pub(crate) fn capabilities(&self) -> Value {
        let mut sandbox = json!({ "csp": to_value(&self.domains) });
        if !self.permissions.is_empty() {
            sandbox["permissions"] = to_value(&self.permissions);
        }
        sandbox
    }
}

/// The CSP for the kept origins: the extension's restrictive default for every list
/// left empty, and `object-src 'none'` always.
fn build_csp(domains: &Csp) -> String {
    let with = |base: &str, list: &[String]| {
        let mut out = base.to_owned();
        for origin in list {
            out.push(' ');
            out.push_str(origin);
        }
        out
    };
    let resources = &domains.resource_domains;
    let connect = if domains.connect_domains.is_empty() {
        "'none'".to_owned()
    } else {
        with("'self'", &domains.connect_domains)
    };
    let frame = if domains.frame_domains.is_empty() {
        "'none'".to_owned()
    } else {
        domains.frame_domains.join(" ")
    };
    let base = if domains.base_uri_domains.is_empty() {
        "'self'".to_owned()
    } else {
        domains.base_uri_domains.join(" ")
    };
    [
        "default-src 'none'".to_owned(),
        format!("script-src {}", with("'self' 'unsafe-inline'", resources)),
        format!("style-src {}", with("'self' 'unsafe-inline'", resources)),
        format!("img-src {}", with("'self' data:", resources)),
        format!("font-src {}", with("'self'", resources)),
        format!("media-src {}", with("'self' data:", resources)),
        format!("connect-src {connect}"),
        format!("frame-src {frame}"),
        "object-src 'none'".to_owned(),
        format!("base-uri {base}"),
    ]
    .join("; ")
        + ";"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_extensions_restrictive_one() {
        let policy = SandboxPolicy::new(&UiResourceMeta::new(), UiPermissions::new());
        for directive in [
            "default-src 'none';",
            "script-src 'self' 'unsafe-inline';",
            "style-src 'self' 'unsafe-inline';",
            "img-src 'self' data:;",
            "media-src 'self' data:;",
            "connect-src 'none';",
            "frame-src 'none';",
            "object-src 'none';",
            "base-uri 'self';",
        ] {
            assert!(
                policy.csp().contains(directive),
                "{directive} in {}",
                policy.csp()
            );
        }
        assert_eq!(policy.allow(), "");
    }

    #[test]
    fn declared_origins_go_where_they_belong_and_malformed_ones_nowhere() {
        let meta = UiResourceMeta::new()
            .csp(
                Csp::new()
                    .connect("wss://live.example.com")
                    .connect("https://a.example; script-src *")
                    .resource("https://cdn.example.com")
                    .frame("https://player.example.com")
                    .base_uri("https://base.example.com"),
            )
            .permissions(UiPermissions::new().camera().microphone());
        let policy = SandboxPolicy::new(&meta, UiPermissions::new().camera().geolocation());
        let csp = policy.csp();
        assert!(
            csp.contains("connect-src 'self' wss://live.example.com;"),
            "{csp}"
        );
        assert!(csp.contains("script-src 'self' 'unsafe-inline' https://cdn.example.com;"));
        assert!(csp.contains("img-src 'self' data: https://cdn.example.com;"));
        assert!(csp.contains("frame-src https://player.example.com;"));
        assert!(csp.contains("base-uri https://base.example.com;"));
        assert!(!csp.contains("a.example"), "{csp}");
        assert!(!csp.contains("script-src *"));
        assert_eq!(policy.ignored(), ["https://a.example; script-src *"]);
        // Asked and granted: the camera; the microphone was not granted, geolocation
        // not asked.
        assert_eq!(policy.allow(), "camera");
    }
}
