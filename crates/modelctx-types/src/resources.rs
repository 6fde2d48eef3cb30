//! Resources: `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe`, `resources/unsubscribe` and their notifications.

use serde::{Deserialize, Serialize};

use crate::base::ResultType;
use crate::base::{EmptyResult, NotificationParams, PaginatedRequestParams};
use crate::cache::CacheScope;
use crate::common::Meta;
use crate::content::{Annotations, ResourceLink, TextOrBlobResourceContents};
use crate::lifecycle::Icon;
use crate::mrtr::InputResponses;

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

    crate::setters::setters! {
        with_title(title: impl Into<String>),
        with_description(description: impl Into<String>),
        with_mime_type(mime_type: impl Into<String>),
        with_annotations(annotations: impl Into<Annotations>),
        with_size(size: impl Into<u64>),
        with_icons(icons: impl Into<Vec<Icon>>),
        with_meta(meta: impl Into<Meta>),
    }
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

    crate::setters::setters! {
        with_title(title: impl Into<String>),
        with_description(description: impl Into<String>),
        with_mime_type(mime_type: impl Into<String>),
        with_annotations(annotations: impl Into<Annotations>),
        with_icons(icons: impl Into<Vec<Icon>>),
        with_meta(meta: impl Into<Meta>),
    }
}

crate::envelope::requests! {
    /// Lists the server's resources (paginated).
    ListResourcesRequest = ListResources("resources/list", optional PaginatedRequestParams) -> ListResourcesResult, meta |p| p.as_mut().map(|p| &mut p.meta);
}

crate::cache::list_result!(ListResourcesResult("resources/list") { resources: Resource } "resources");

crate::envelope::requests! {
    /// Lists the server's resource templates (paginated).
    ListResourceTemplatesRequest = ListResourceTemplates("resources/templates/list", optional PaginatedRequestParams) -> ListResourceTemplatesResult, meta |p| p.as_mut().map(|p| &mut p.meta);
}

crate::cache::list_result!(ListResourceTemplatesResult("resources/templates/list") { resource_templates: ResourceTemplate } "templates");

/// Parameters naming one resource (the schema's `ResourceRequestParams`; also
/// `ReadResourceRequestParams`, `SubscribeRequestParams`, `UnsubscribeRequestParams`).
///
/// `input_responses` and `request_state` belong to `resources/read` only (2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The client's answers to the input requests of an earlier `InputRequiredResult`,
    /// by key (2026-07-28, multi round-trip requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque `requestState` of an earlier `InputRequiredResult`, echoed back
    /// (2026-07-28, multi round-trip requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// The resource URI.
    pub uri: String,
}

impl ResourceRequestParams {
    /// Parameters naming `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            meta: None,
            input_responses: None,
            request_state: None,
            uri: uri.into(),
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_input_responses(input_responses: impl Into<InputResponses>) "2026-07-28",
        with_request_state(request_state: impl Into<String>) "2026-07-28",
    }
}

/// Parameters of `resources/read`.
pub type ReadResourceRequestParams = ResourceRequestParams;
/// Parameters of `resources/subscribe`.
pub type SubscribeRequestParams = ResourceRequestParams;
/// Parameters of `resources/unsubscribe`.
pub type UnsubscribeRequestParams = ResourceRequestParams;

crate::envelope::requests! {
    /// Reads a resource.
    ReadResourceRequest = ReadResource("resources/read", required ReadResourceRequestParams) -> ReadResourceResult, meta |p| Some(&mut p.meta);
}

/// The answer to `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result (2026-07-28; absent before, which means complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// How long the client may cache this result, in milliseconds (2026-07-28).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::cache::optional_ttl"
    )]
    pub ttl_ms: Option<u64>,
    /// Who may cache this result: one authorization context or anyone (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// The contents (a resource may have sub-resources).
    pub contents: Vec<TextOrBlobResourceContents>,
}

impl ReadResourceResult {
    /// A result with these contents.
    pub fn new(contents: Vec<TextOrBlobResourceContents>) -> Self {
        Self {
            meta: None,
            result_type: None,
            ttl_ms: None,
            cache_scope: None,
            contents,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_result_type(result_type: impl Into<ResultType>) "2026-07-28",
        with_ttl_ms(ttl_ms: u64) "2026-07-28",
        with_cache_scope(cache_scope: impl Into<CacheScope>) "2026-07-28",
    }
}

crate::envelope::notifications! {
    /// Tells the client the resource list changed.
    ResourceListChangedNotification = ResourceListChanged("notifications/resources/list_changed", optional NotificationParams);
}

crate::envelope::requests! {
    /// Subscribes to updates of a resource.
    SubscribeRequest = Subscribe("resources/subscribe", required SubscribeRequestParams) -> EmptyResult;
}

crate::envelope::requests! {
    /// Ends a subscription.
    UnsubscribeRequest = Unsubscribe("resources/unsubscribe", required UnsubscribeRequestParams) -> EmptyResult;
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

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
    }
}

crate::envelope::notifications! {
    /// Tells a subscribed client a resource changed.
    ResourceUpdatedNotification = ResourceUpdated("notifications/resources/updated", required ResourceUpdatedNotificationParams);
}

/// A link and the resource it names hold the same members.
impl ResourceLink {
    /// The resource this links to, without the tag.
    pub fn into_resource(self) -> Resource {
        let mut r = Resource::new(self.uri, self.name);
        r.title = self.title;
        r.description = self.description;
        r.mime_type = self.mime_type;
        r.annotations = self.annotations;
        r.size = self.size;
        r.icons = self.icons;
        r.meta = self.meta;
        r
    }
}

impl From<Resource> for ResourceLink {
    fn from(r: Resource) -> Self {
        let mut link = ResourceLink::new(r.uri, r.name);
        link.title = r.title;
        link.description = r.description;
        link.mime_type = r.mime_type;
        link.annotations = r.annotations;
        link.size = r.size;
        link.icons = r.icons;
        link.meta = r.meta;
        link
    }
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
