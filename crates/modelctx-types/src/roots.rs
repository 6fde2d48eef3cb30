//! Roots: `roots/list` and `notifications/roots/list_changed`.

use serde::{Deserialize, Serialize};

use crate::base::{NotificationParams, RequestParams};
use crate::common::Meta;

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

    crate::setters::setters! {
        with_name(name: impl Into<String>),
        with_meta(meta: impl Into<Meta>),
    }
}

crate::envelope::requests! {
    /// Asks the client for its roots.
    ListRootsRequest = ListRoots("roots/list", optional RequestParams) -> ListRootsResult;
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

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
    }
}

crate::envelope::notifications! {
    /// Tells the server the client's roots changed.
    RootsListChangedNotification = RootsListChanged("notifications/roots/list_changed", optional NotificationParams);
}
