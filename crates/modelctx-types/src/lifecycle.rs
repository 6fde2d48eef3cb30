//! Lifecycle: `initialize`, `notifications/initialized`, `ping`, and the descriptions
//! of implementations (names, titles, icons).

use serde::{Deserialize, Serialize};

use crate::base::{EmptyResult, NotificationParams, RequestParams};
use crate::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::common::Meta;
use crate::version::ProtocolVersion;

crate::open_enum::open_enum! {
    /// The background an icon is designed for.
    pub enum IconTheme {
        /// A light background.
        Light = "light",
        /// A dark background.
        Dark = "dark",
    }
}

/// An icon a user interface can display.
///
/// Consumers must treat `src` as untrusted: accept only `https:` and `data:` URIs and
/// fetch without credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// An `https:` URL or a `data:` URI.
    pub src: String,
    /// A MIME type override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The theme the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// An icon at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            mime_type: None,
            sizes: None,
            theme: None,
        }
    }

    crate::setters::setters! {
        with_mime_type(mime_type: impl Into<String>),
        with_sizes(sizes: impl Into<Vec<String>>),
        with_theme(theme: impl Into<IconTheme>),
    }
}

crate::setters::optional_members! {
    /// The `icons` member shared by implementations, tools, prompts and resources (the
    /// schema's `Icons` base).
    pub struct Icons {
        /// Icons, in order of preference.
        with_icons(icons: impl Into<Vec<Icon>>),
    }
    /// No icons.
    new;
}

/// A programmatic name and an optional display title (the schema's `BaseMetadata`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BaseMetadata {
    /// The programmatic name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl BaseMetadata {
    /// Metadata with a name.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
        }
    }

    crate::setters::setters! {
        with_title(title: impl Into<String>),
    }

    /// What to display: the title, else the name.
    pub fn display_name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// Describes an MCP client or server implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// The programmatic name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The version.
    pub version: String,
    /// What this implementation does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// The implementation's website.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            version: version.into(),
            description: None,
            icons: None,
            website_url: None,
        }
    }

    crate::setters::setters! {
        with_title(title: impl Into<String>),
        with_description(description: impl Into<String>),
        with_icons(icons: impl Into<Vec<Icon>>),
        with_website_url(website_url: impl Into<String>),
    }
}

/// Parameters of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The latest revision the client speaks.
    pub protocol_version: ProtocolVersion,
    /// What the client supports.
    pub capabilities: ClientCapabilities,
    /// The client.
    pub client_info: Implementation,
}

impl InitializeRequestParams {
    /// Parameters offering `protocol_version` with these capabilities.
    pub fn new(
        protocol_version: impl Into<ProtocolVersion>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        Self {
            meta: None,
            protocol_version: protocol_version.into(),
            capabilities,
            client_info,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
    }
}

crate::envelope::requests! {
    /// The first request of a session: the client offers a revision and capabilities.
    InitializeRequest = Initialize("initialize", required InitializeRequestParams) -> InitializeResult;
}

/// The server's answer to `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The revision the server wants to use.
    pub protocol_version: ProtocolVersion,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// The server.
    pub server_info: Implementation,
    /// How to use the server (a hint for the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl InitializeResult {
    /// A result choosing `protocol_version`.
    pub fn new(
        protocol_version: impl Into<ProtocolVersion>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        Self {
            meta: None,
            protocol_version: protocol_version.into(),
            capabilities,
            server_info,
            instructions: None,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_instructions(instructions: impl Into<String>),
    }
}

crate::envelope::notifications! {
    /// Sent by the client once initialization has finished.
    InitializedNotification = Initialized("notifications/initialized", optional NotificationParams);
}

crate::envelope::requests! {
    /// A liveness check either side may send; answered with `{}`.
    PingRequest = Ping("ping", optional RequestParams) -> EmptyResult;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestMethod;
    use serde_json::json;

    #[test]
    fn initialize_round_trip_and_method_check() {
        let req = InitializeRequest::new(
            1,
            InitializeRequestParams::new(
                ProtocolVersion::V2025_11_25,
                ClientCapabilities::new(),
                Implementation::new("c", "1.0"),
            ),
        );
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1.0"}}})
        );
        assert_eq!(
            serde_json::from_value::<InitializeRequest>(v.clone()).unwrap(),
            req
        );
        let mut wrong = v;
        wrong["method"] = json!("ping");
        assert!(serde_json::from_value::<InitializeRequest>(wrong).is_err());
        assert_eq!(<InitializeRequest as RequestMethod>::METHOD, "initialize");
    }

    #[test]
    fn ping_params_optional_and_jsonrpc_checked() {
        let p: PingRequest =
            serde_json::from_value(json!({"jsonrpc":"2.0","id":"x","method":"ping"})).unwrap();
        assert!(p.params.is_none());
        assert!(
            serde_json::from_value::<PingRequest>(json!({"jsonrpc":"1.0","id":1,"method":"ping"}))
                .is_err()
        );
        let n: InitializedNotification =
            serde_json::from_value(json!({"method": "notifications/initialized"})).unwrap();
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            json!({"method": "notifications/initialized"})
        );
        assert_eq!(
            serde_json::to_value(InitializedNotification::new()).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
    }
}
