//! Resources: `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe`, `resources/unsubscribe` and their notifications.

use crate::base::{EmptyResult, NotificationParams, PaginatedRequestParams};
use crate::content::{ResourceLink, TextOrBlobResourceContents};

crate::envelope::requests! {
    /// Lists the server's resources (paginated).
    ListResourcesRequest = ListResources("resources/list", optional PaginatedRequestParams) -> ListResourcesResult, meta |p| p.as_mut().map(|p| &mut p.meta);
    /// Lists the server's resource templates (paginated).
    ListResourceTemplatesRequest = ListResourceTemplates("resources/templates/list", optional PaginatedRequestParams) -> ListResourceTemplatesResult, meta |p| p.as_mut().map(|p| &mut p.meta);
    /// Reads a resource.
    ReadResourceRequest = ReadResource("resources/read", required ReadResourceRequestParams) -> ReadResourceResult, meta |p| Some(&mut p.meta);
    /// Subscribes to updates of a resource.
    SubscribeRequest = Subscribe("resources/subscribe", required SubscribeRequestParams) -> EmptyResult;
    /// Ends a subscription.
    UnsubscribeRequest = Unsubscribe("resources/unsubscribe", required UnsubscribeRequestParams) -> EmptyResult;
}

crate::envelope::notifications! {
    /// Tells the client the resource list changed.
    ResourceListChangedNotification = ResourceListChanged("notifications/resources/list_changed", optional NotificationParams);
    /// Tells a subscribed client a resource changed.
    ResourceUpdatedNotification = ResourceUpdated("notifications/resources/updated", required ResourceUpdatedNotificationParams);
}

crate::content::resource! {
    /// A resource the server can read.
    pub struct Resource {
        /// The URI.
        uri,
        description: "What the resource represents.",
        mime_type: "The MIME type, if known.",
        size,
    }
    /// A resource at `uri` named `name`.
    new;
}

crate::content::resource! {
    /// A template (RFC 6570) for resources the server can read.
    pub struct ResourceTemplate {
        /// The URI template.
        uri_template,
        description: "What the template is for.",
        mime_type: "The MIME type of every matching resource, if they share one.",
    }
    /// A template with a URI template and a name.
    new;
}

crate::cache::list_result!(ListResourcesResult("resources/list") { resources: Resource } "resources");

crate::cache::list_result!(ListResourceTemplatesResult("resources/templates/list") { resource_templates: ResourceTemplate } "templates");

crate::mrtr::retryable_params! {
    /// Parameters naming one resource (the schema's `ResourceRequestParams`; also
    /// `ReadResourceRequestParams`, `SubscribeRequestParams`, `UnsubscribeRequestParams`).
    ///
    /// `input_responses` and `request_state` belong to `resources/read` only (2026-07-28).
    pub struct ResourceRequestParams {
        /// The resource URI.
        pub uri: String,
    }
    /// Parameters naming `uri`.
    new(uri: impl Into<String>);
}

/// Parameters of `resources/read`.
pub type ReadResourceRequestParams = ResourceRequestParams;
/// Parameters of `resources/subscribe`.
pub type SubscribeRequestParams = ResourceRequestParams;
/// Parameters of `resources/unsubscribe`.
pub type UnsubscribeRequestParams = ResourceRequestParams;

crate::cache::cacheable_result! {
    ReadResourceResult("resources/read") {}
    /// The contents (a resource may have sub-resources).
    contents: Vec<TextOrBlobResourceContents>,
    /// A result with these contents.
    new;
}

crate::setters::wire_struct! {
    /// Parameters of `notifications/resources/updated`.
    pub struct ResourceUpdatedNotificationParams {
        meta => with_meta,
        /// The URI of the updated (sub-)resource.
        pub uri: String,
    }
    /// Parameters naming `uri`.
    new(uri: impl Into<String>);
}

/// A link and the resource it names hold the same members: `$to` (built from the
/// address and name) takes the others from `$from`.
macro_rules! same_members {
    ($from:ident => $to:expr) => {{
        let mut to = $to;
        to.title = $from.title;
        to.description = $from.description;
        to.mime_type = $from.mime_type;
        to.annotations = $from.annotations;
        to.size = $from.size;
        to.icons = $from.icons;
        to.meta = $from.meta;
        to
    }};
}

impl ResourceLink {
    /// The resource this links to, without the tag.
    pub fn into_resource(self) -> Resource {
        same_members!(self => Resource::new(self.uri, self.name))
    }
}

impl From<Resource> for ResourceLink {
    fn from(r: Resource) -> Self {
        same_members!(r => ResourceLink::new(r.uri, r.name))
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
