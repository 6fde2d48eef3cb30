//! Resources: `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe`, `resources/unsubscribe` and their notifications.

use serde::{Deserialize, Serialize};

use crate::base::{EmptyResult, NotificationParams, PaginatedRequestParams};
use crate::common::{Cursor, Meta};
use crate::content::{Annotations, TextOrBlobResourceContents};
use crate::lifecycle::Icon;

/// A resource the server can read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The URI.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource represents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The size in bytes of the raw content, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Resource {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            size: None,
            icons: None,
            meta: None,
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_mime_type => mime_type: String,
        with_annotations => annotations: Annotations,
        with_size => size: u64,
        with_icons => icons: Vec<Icon>,
        with_meta => meta: Meta,
    );
}

/// A template (RFC 6570) for resources the server can read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the template is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every matching resource, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ResourceTemplate {
    /// A template with a URI template and a name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_mime_type => mime_type: String,
        with_annotations => annotations: Annotations,
        with_icons => icons: Vec<Icon>,
        with_meta => meta: Meta,
    );
}

request! {
    /// Lists the server's resources (paginated).
    ListResourcesRequest, ListResourcesMethod = "resources/list",
    optional params: PaginatedRequestParams, result: ListResourcesResult
}

/// The answer to `resources/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourcesResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Present when there may be more resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// The resources.
    pub resources: Vec<Resource>,
}

impl ListResourcesResult {
    /// A page of resources.
    pub fn new(resources: Vec<Resource>) -> Self {
        Self {
            meta: None,
            next_cursor: None,
            resources,
        }
    }

    with!(with_meta => meta: Meta, with_next_cursor => next_cursor: Cursor);
}

request! {
    /// Lists the server's resource templates (paginated).
    ListResourceTemplatesRequest, ListResourceTemplatesMethod = "resources/templates/list",
    optional params: PaginatedRequestParams, result: ListResourceTemplatesResult
}

/// The answer to `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourceTemplatesResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Present when there may be more templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// The templates.
    pub resource_templates: Vec<ResourceTemplate>,
}

impl ListResourceTemplatesResult {
    /// A page of templates.
    pub fn new(resource_templates: Vec<ResourceTemplate>) -> Self {
        Self {
            meta: None,
            next_cursor: None,
            resource_templates,
        }
    }

    with!(with_meta => meta: Meta, with_next_cursor => next_cursor: Cursor);
}

/// Parameters naming one resource (the schema's `ResourceRequestParams`; also
/// `ReadResourceRequestParams`, `SubscribeRequestParams`, `UnsubscribeRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The resource URI.
    pub uri: String,
}

impl ResourceRequestParams {
    /// Parameters naming `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            meta: None,
            uri: uri.into(),
        }
    }

    with!(with_meta => meta: Meta);
}

/// Parameters of `resources/read`.
pub type ReadResourceRequestParams = ResourceRequestParams;
/// Parameters of `resources/subscribe`.
pub type SubscribeRequestParams = ResourceRequestParams;
/// Parameters of `resources/unsubscribe`.
pub type UnsubscribeRequestParams = ResourceRequestParams;

request! {
    /// Reads a resource.
    ReadResourceRequest, ReadResourceMethod = "resources/read",
    params: ReadResourceRequestParams, result: ReadResourceResult
}

/// The answer to `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The contents (a resource may have sub-resources).
    pub contents: Vec<TextOrBlobResourceContents>,
}

impl ReadResourceResult {
    /// A result with these contents.
    pub fn new(contents: Vec<TextOrBlobResourceContents>) -> Self {
        Self {
            meta: None,
            contents,
        }
    }

    with!(with_meta => meta: Meta);
}

notification! {
    /// Tells the client the resource list changed.
    ResourceListChangedNotification, ResourceListChangedMethod = "notifications/resources/list_changed",
    optional params: NotificationParams
}

request! {
    /// Subscribes to updates of a resource.
    SubscribeRequest, SubscribeMethod = "resources/subscribe",
    params: SubscribeRequestParams, result: EmptyResult
}

request! {
    /// Ends a subscription.
    UnsubscribeRequest, UnsubscribeMethod = "resources/unsubscribe",
    params: UnsubscribeRequestParams, result: EmptyResult
}

/// Parameters of `notifications/resources/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceUpdatedNotificationParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The URI of the updated (sub-)resource.
    pub uri: String,
}

impl ResourceUpdatedNotificationParams {
    /// Parameters naming `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            meta: None,
            uri: uri.into(),
        }
    }

    with!(with_meta => meta: Meta);
}

notification! {
    /// Tells a subscribed client a resource changed.
    ResourceUpdatedNotification, ResourceUpdatedMethod = "notifications/resources/updated",
    params: ResourceUpdatedNotificationParams
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TextResourceContents;
    use serde_json::json;

    #[test]
    fn read_result_round_trip() {
        let r = ReadResourceResult::new(vec![
            TextResourceContents::new("file:///a", "hello")
                .with_mime_type("text/plain")
                .into(),
        ]);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            json!({"contents": [{"uri": "file:///a", "mimeType": "text/plain", "text": "hello"}]})
        );
        assert_eq!(serde_json::from_value::<ReadResourceResult>(v).unwrap(), r);
    }

    #[test]
    fn list_request_params_optional() {
        let r: ListResourcesRequest =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list"}))
                .unwrap();
        assert!(r.params.is_none());
        let r = ListResourcesRequest::new(2).with_params(PaginatedRequestParams::after("c"));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list", "params": {"cursor": "c"}})
        );
    }
}
