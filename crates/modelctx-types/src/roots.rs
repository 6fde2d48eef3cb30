//! Roots: `roots/list` and `notifications/roots/list_changed`.

use serde::{Deserialize, Serialize};

use crate::base::{NotificationParams, RequestParams};
use crate::common::Meta;
use crate::jsonrpc::RequestId;
use crate::method::{NotificationMethod, RequestMethod};
use crate::tag::{JsonRpcTag, NotificationTag, RequestTag};

/// A directory or file the server may operate on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Root {
    /// The URI (`file://` for now).
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Root {
    /// A root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: None,
            meta: None,
        }
    }

    /// Sets `name`.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }
}

/// Asks the client for its roots.
///
/// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
/// are absent only in the bare `{method, params}` form of earlier revisions'
/// schemas, which is read and written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    /// The request id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::de_some_id"
    )]
    pub id: Option<RequestId>,
    method: RequestTag<ListRootsRequest>,
    /// The parameters, which may be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<RequestParams>,
}

impl ListRootsRequest {
    /// The method name, `"roots/list"`.
    pub const METHOD: &'static str = <Self as crate::RequestMethod>::METHOD;

    /// A request with an id and no parameters.
    pub fn new(id: impl Into<RequestId>) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            id: Some(id.into()),
            method: RequestTag::new(),
            params: None,
        }
    }

    /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
    /// schemas).
    pub fn without_id() -> Self {
        Self {
            jsonrpc: None,
            id: None,
            method: RequestTag::new(),
            params: None,
        }
    }

    /// Sets the parameters.
    #[must_use]
    pub fn with_params(mut self, params: RequestParams) -> Self {
        self.params = Some(params);
        self
    }
}

impl RequestMethod for ListRootsRequest {
    const METHOD: &'static str = "roots/list";
    type Params = Option<RequestParams>;
    type Result = ListRootsResult;
}

/// The answer to `roots/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListRootsResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The roots.
    pub roots: Vec<Root>,
}

impl ListRootsResult {
    /// A result with these roots.
    pub fn new(roots: Vec<Root>) -> Self {
        Self { meta: None, roots }
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }
}

/// Tells the server the client's roots changed.
///
/// `"jsonrpc": "2.0"` is written by the constructors; it is absent only in the
/// bare `{method, params}` form of earlier revisions' schemas, which is read and
/// written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RootsListChangedNotification {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    method: NotificationTag<RootsListChangedNotification>,
    /// The parameters, which may be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<NotificationParams>,
}

impl RootsListChangedNotification {
    /// The method name, `"notifications/roots/list_changed"`.
    pub const METHOD: &'static str = <Self as crate::NotificationMethod>::METHOD;

    /// A notification without parameters.
    pub fn new() -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            method: NotificationTag::new(),
            params: None,
        }
    }

    /// Sets the parameters.
    #[must_use]
    pub fn with_params(mut self, params: NotificationParams) -> Self {
        self.params = Some(params);
        self
    }
}

impl Default for RootsListChangedNotification {
    fn default() -> Self {
        Self::new()
    }
}

impl NotificationMethod for RootsListChangedNotification {
    const METHOD: &'static str = "notifications/roots/list_changed";
    type Params = Option<NotificationParams>;
}
