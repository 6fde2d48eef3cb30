//! What the host and the bridge exchange: the host context, display modes, the view's
//! requests handed to the host's callbacks, its decisions, and the bridge's errors.

use std::fmt;

use modelctx_session::SessionError;
use modelctx_types::JsonObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a view is displayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum DisplayMode {
    /// Embedded in the host's content flow (the default).
    Inline,
    /// Taking the whole window or screen.
    Fullscreen,
    /// A floating picture-in-picture overlay.
    Pip,
}

impl DisplayMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Fullscreen => "fullscreen",
            Self::Pip => "pip",
        }
    }
}

/// The color theme the host shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Theme {
    /// Light.
    Light,
    /// Dark.
    Dark,
}

/// The kind of device the host runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Platform {
    /// A web page.
    Web,
    /// A desktop application.
    Desktop,
    /// A phone or tablet.
    Mobile,
}

/// The space the view's container gives it: a fixed `height`/`width`, or the view's
/// own size up to `max_height`/`max_width`, or unbounded when neither is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ContainerDimensions {
    /// A fixed height in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
    /// The largest height the view may grow to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_height: Option<f64>,
    /// A fixed width in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    /// The largest width the view may grow to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_width: Option<f64>,
}

/// What the host tells the view about where it is shown, in `ui/initialize`'s answer
/// and, changed fields only, in `ui/notifications/host-context-changed`. The bridge
/// fills in `toolInfo`, `displayMode` and `availableDisplayModes` itself.
///
/// ```
/// use modelctx_apps::bridge::{HostContext, Platform, Theme};
///
/// let context = HostContext::new()
///     .theme(Theme::Dark)
///     .locale("en-GB")
///     .platform(Platform::Desktop);
/// let json = serde_json::to_value(&context).unwrap();
/// assert_eq!(json["theme"], "dark");
/// assert_eq!(json["locale"], "en-GB");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HostContext {
    /// The color theme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<Theme>,
    /// Theming: CSS variables (`variables`) and font CSS (`css.fonts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub styles: Option<JsonObject>,
    /// How the view is displayed now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_mode: Option<DisplayMode>,
    /// The display modes the host offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_display_modes: Option<Vec<DisplayMode>>,
    /// The container's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_dimensions: Option<ContainerDimensions>,
    /// The user's language and region (BCP 47).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// The user's time zone (IANA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// The host application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// The kind of device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// Touch and hover support (`touch`, `hover`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_capabilities: Option<JsonObject>,
    /// Safe area insets in pixels (`top`, `right`, `bottom`, `left`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_area_insets: Option<JsonObject>,
    /// The tool call that opened the view (`id`, `tool`); set by the bridge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_info: Option<JsonObject>,
}

impl HostContext {
    /// Nothing said.
    pub fn new() -> Self {
        Self::default()
    }

    crate::builder::builder_methods! {
        /// Sets the theme.
        theme(theme: Theme);

        /// Sets the styles (`variables`, `css`).
        styles(styles: JsonObject);

        /// Sets the display mode.
        display_mode(mode: DisplayMode);

        /// Sets the display modes the host offers.
        available_display_modes(modes: impl IntoIterator<Item = DisplayMode>) collect;

        /// Sets the container's size.
        container_dimensions(dimensions: ContainerDimensions);

        /// Sets the locale.
        locale(locale: impl Into<String>);

        /// Sets the time zone.
        time_zone(zone: impl Into<String>);

        /// Sets the host application's identifier.
        user_agent(agent: impl Into<String>);

        /// Sets the platform.
        platform(platform: Platform);
    }

    /// Takes every field `change` sets.
    pub(crate) fn merge(&mut self, change: &HostContext) {
        macro_rules! take {
            ($($field:ident),*) => {$(
                if change.$field.is_some() {
                    self.$field = change.$field.clone();
                }
            )*};
        }
        take!(
            theme,
            styles,
            display_mode,
            available_display_modes,
            container_dimensions,
            locale,
            time_zone,
            user_agent,
            platform,
            device_capabilities,
            safe_area_insets,
            tool_info
        );
    }
}

/// A `ui/message` from the view: content for the conversation, in the user's role.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UiMessage {
    /// The role (the dialect allows `user`).
    pub role: String,
    /// The content blocks, as sent.
    pub content: Vec<Value>,
}

/// A `ui/update-model-context` from the view: what the model should know in later turns
/// (each update replaces the previous one).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelContext {
    /// Content blocks, as sent.
    pub content: Option<Vec<Value>>,
    /// Structured data, as sent.
    pub structured_content: Option<JsonObject>,
}

/// A view's reported content size (`ui/notifications/size-changed`), in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ViewSize {
    /// The width.
    pub width: f64,
    /// The height.
    pub height: f64,
}

/// A log message from the view (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ViewLog {
    /// The level, as sent (`info`, `error`, ...).
    pub level: String,
    /// The logger's name, if given.
    pub logger: Option<String>,
    /// The data.
    pub data: Value,
}

/// The host's answer to a view's request: allow it, or deny it with a reason the view
/// is told.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Do it.
    Allow,
    /// Refuse, saying why.
    Deny(String),
}

impl Decision {
    /// Refuses with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny(reason.into())
    }
}

/// Why a bridge operation failed.
#[derive(Debug)]
pub struct BridgeError {
    kind: BridgeErrorKind,
    message: String,
    /// Boxed: a session error is large, and this error is the `Err` of every call.
    source: Option<Box<SessionError>>,
}

/// What kind of failure a [`BridgeError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BridgeErrorKind {
    /// The tool has no UI, or its resource is missing, malformed or not an MCP App.
    Resource,
    /// The request to the server failed.
    Server,
    /// The host asked for something out of the dialect's order (a tool result before
    /// its input, a second input, ...).
    Order,
    /// The view's channel closed.
    Closed,
    /// The view did not answer in time.
    Timeout,
    /// The view answered with an error.
    View,
}

impl BridgeError {
    pub(crate) fn new(kind: BridgeErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn server(message: impl Into<String>, error: SessionError) -> Self {
        Self {
            kind: BridgeErrorKind::Server,
            message: message.into(),
            source: Some(Box::new(error)),
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> BridgeErrorKind {
        self.kind
    }

    /// The server's error, for [`BridgeErrorKind::Server`].
    pub fn session_error(&self) -> Option<&SessionError> {
        self.source.as_deref()
    }
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for BridgeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
