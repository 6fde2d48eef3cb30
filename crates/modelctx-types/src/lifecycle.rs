//! Lifecycle: `initialize`, `notifications/initialized`, `ping`, and the descriptions
//! of implementations (names, titles, icons).

use crate::base::{EmptyResult, NotificationParams, RequestParams};
use crate::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::version::ProtocolVersion;

crate::envelope::requests! {
    /// The first request of a session: the client offers a revision and capabilities.
    InitializeRequest = Initialize("initialize", required InitializeRequestParams) -> InitializeResult;
    /// A liveness check either side may send; answered with `{}`.
    PingRequest = Ping("ping", optional RequestParams) -> EmptyResult;
}

crate::envelope::notifications! {
    /// Sent by the client once initialization has finished.
    InitializedNotification = Initialized("notifications/initialized", optional NotificationParams);
}

crate::open_enum::open_enum! {
    /// The background an icon is designed for.
    pub enum IconTheme {
        /// A light background.
        Light = "light",
        /// A dark background.
        Dark = "dark",
    }
}

crate::setters::wire_struct! {
    /// An icon a user interface can display.
    ///
    /// Consumers must treat `src` as untrusted: accept only `https:` and `data:` URIs and
    /// fetch without credentials.
    pub struct Icon {
        /// An `https:` URL or a `data:` URI.
        pub src: String,
        /// A MIME type override.
        mime_type?: String => with_mime_type,
        /// Sizes such as `"48x48"` or `"any"`.
        sizes?: Vec<String> => with_sizes,
        /// The theme the icon is designed for.
        theme?: IconTheme => with_theme,
    }
    /// An icon at `src`.
    new(src: impl Into<String>);
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

crate::setters::wire_struct! {
    /// A programmatic name and an optional display title (the schema's `BaseMetadata`).
    pub struct BaseMetadata {
        /// The programmatic name.
        pub name: String,
        /// A human-readable title.
        title?: String => with_title,
    }
    /// Metadata with a name.
    new(name: impl Into<String>);

    /// What to display: the title, else the name.
    pub fn display_name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

crate::setters::wire_struct! {
    /// Describes an MCP client or server implementation.
    pub struct Implementation {
        /// The programmatic name.
        pub name: String,
        /// A human-readable title.
        title?: String => with_title,
        /// The version.
        pub version: String,
        /// What this implementation does.
        description?: String => with_description,
        /// Icons.
        icons?: Vec<Icon> => with_icons,
        /// The implementation's website.
        website_url?: String => with_website_url,
    }
    /// An implementation with a name and a version.
    new(name: impl Into<String>, version: impl Into<String>);
}

crate::setters::wire_struct! {
    /// Parameters of `initialize`.
    pub struct InitializeRequestParams {
        meta => with_meta,
        /// The latest revision the client speaks.
        pub protocol_version: ProtocolVersion,
        /// What the client supports.
        pub capabilities: ClientCapabilities,
        /// The client.
        pub client_info: Implementation,
    }
    /// Parameters offering `protocol_version` with these capabilities.
    new(
        protocol_version: impl Into<ProtocolVersion>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    );
}

crate::setters::wire_struct! {
    /// The server's answer to `initialize`.
    pub struct InitializeResult {
        meta => with_meta,
        /// The revision the server wants to use.
        pub protocol_version: ProtocolVersion,
        /// What the server supports.
        pub capabilities: ServerCapabilities,
        /// The server.
        pub server_info: Implementation,
        /// How to use the server (a hint for the model).
        instructions?: String => with_instructions,
    }
    /// A result choosing `protocol_version`.
    new(
        protocol_version: impl Into<ProtocolVersion>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    );
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
