//! Resources: `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe`, `resources/unsubscribe` and their notifications.

use serde::{Deserialize, Serialize};

use crate::base::ResultType;
use crate::base::{EmptyResult, NotificationParams, PaginatedRequestParams};
use crate::cache::CacheScope;
use crate::common::{Cursor, Meta};
use crate::content::{Annotations, TextOrBlobResourceContents};
use crate::jsonrpc::RequestId;
use crate::lifecycle::Icon;
use crate::method::{NotificationMethod, RequestMethod};
use crate::mrtr::InputResponses;
use crate::tag::{JsonRpcTag, NotificationTag, RequestTag};

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

    /// Sets `title`.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `mime_type`.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets `annotations`.
    #[must_use]
    pub fn with_annotations(mut self, annotations: impl Into<Annotations>) -> Self {
        self.annotations = Some(annotations.into());
        self
    }

    /// Sets `size`.
    #[must_use]
    pub fn with_size(mut self, size: impl Into<u64>) -> Self {
        self.size = Some(size.into());
        self
    }

    /// Sets `icons`.
    #[must_use]
    pub fn with_icons(mut self, icons: impl Into<Vec<Icon>>) -> Self {
        self.icons = Some(icons.into());
        self
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
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

    /// Sets `title`.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `mime_type`.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets `annotations`.
    #[must_use]
    pub fn with_annotations(mut self, annotations: impl Into<Annotations>) -> Self {
        self.annotations = Some(annotations.into());
        self
    }

    /// Sets `icons`.
    #[must_use]
    pub fn with_icons(mut self, icons: impl Into<Vec<Icon>>) -> Self {
        self.icons = Some(icons.into());
        self
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }
}

/// Lists the server's resources (paginated).
///
/// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
/// are absent only in the bare `{method, params}` form of earlier revisions'
/// schemas, which is read and written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListResourcesRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    /// The request id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::de_some_id"
    )]
    pub id: Option<RequestId>,
    method: RequestTag<ListResourcesRequest>,
    /// The parameters, which may be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<PaginatedRequestParams>,
}

impl ListResourcesRequest {
    /// The method name, `"resources/list"`.
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
    pub fn with_params(mut self, params: PaginatedRequestParams) -> Self {
        self.params = Some(params);
        self
    }
}

impl RequestMethod for ListResourcesRequest {
    const METHOD: &'static str = "resources/list";
    type Params = Option<PaginatedRequestParams>;
    type Result = ListResourcesResult;

    const UNSTABLE_META_SLOT: Option<crate::method::MetaSlot<Self::Params>> =
        Some(|p| p.as_mut().map(|p| &mut p.meta));
}

/// The answer to `resources/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourcesResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result (2026-07-28; absent before, which means complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// How long the client may cache this result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache this result: one authorization context or anyone (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
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
            result_type: None,
            ttl_ms: None,
            cache_scope: None,
            next_cursor: None,
            resources,
        }
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }

    /// Sets `next_cursor`.
    #[must_use]
    pub fn with_next_cursor(mut self, next_cursor: impl Into<Cursor>) -> Self {
        self.next_cursor = Some(next_cursor.into());
        self
    }

    /// Sets `result_type` (2026-07-28).
    #[must_use]
    pub fn with_result_type(mut self, result_type: impl Into<ResultType>) -> Self {
        self.result_type = Some(result_type.into());
        self
    }

    /// Sets `ttl_ms` (2026-07-28).
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Sets `cache_scope` (2026-07-28).
    #[must_use]
    pub fn with_cache_scope(mut self, cache_scope: impl Into<CacheScope>) -> Self {
        self.cache_scope = Some(cache_scope.into());
        self
    }
}

/// Lists the server's resource templates (paginated).
///
/// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
/// are absent only in the bare `{method, params}` form of earlier revisions'
/// schemas, which is read and written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListResourceTemplatesRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    /// The request id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::de_some_id"
    )]
    pub id: Option<RequestId>,
    method: RequestTag<ListResourceTemplatesRequest>,
    /// The parameters, which may be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<PaginatedRequestParams>,
}

impl ListResourceTemplatesRequest {
    /// The method name, `"resources/templates/list"`.
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
    pub fn with_params(mut self, params: PaginatedRequestParams) -> Self {
        self.params = Some(params);
        self
    }
}

impl RequestMethod for ListResourceTemplatesRequest {
    const METHOD: &'static str = "resources/templates/list";
    type Params = Option<PaginatedRequestParams>;
    type Result = ListResourceTemplatesResult;

    const UNSTABLE_META_SLOT: Option<crate::method::MetaSlot<Self::Params>> =
        Some(|p| p.as_mut().map(|p| &mut p.meta));
}

/// The answer to `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourceTemplatesResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result (2026-07-28; absent before, which means complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// How long the client may cache this result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache this result: one authorization context or anyone (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
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
            result_type: None,
            ttl_ms: None,
            cache_scope: None,
            next_cursor: None,
            resource_templates,
        }
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }

    /// Sets `next_cursor`.
    #[must_use]
    pub fn with_next_cursor(mut self, next_cursor: impl Into<Cursor>) -> Self {
        self.next_cursor = Some(next_cursor.into());
        self
    }

    /// Sets `result_type` (2026-07-28).
    #[must_use]
    pub fn with_result_type(mut self, result_type: impl Into<ResultType>) -> Self {
        self.result_type = Some(result_type.into());
        self
    }

    /// Sets `ttl_ms` (2026-07-28).
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Sets `cache_scope` (2026-07-28).
    #[must_use]
    pub fn with_cache_scope(mut self, cache_scope: impl Into<CacheScope>) -> Self {
        self.cache_scope = Some(cache_scope.into());
        self
    }
}

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

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }

    /// Sets `input_responses` (2026-07-28).
    #[must_use]
    pub fn with_input_responses(mut self, input_responses: impl Into<InputResponses>) -> Self {
        self.input_responses = Some(input_responses.into());
        self
    }

    /// Sets `request_state` (2026-07-28).
    #[must_use]
    pub fn with_request_state(mut self, request_state: impl Into<String>) -> Self {
        self.request_state = Some(request_state.into());
        self
    }
}

/// Parameters of `resources/read`.
pub type ReadResourceRequestParams = ResourceRequestParams;
/// Parameters of `resources/subscribe`.
pub type SubscribeRequestParams = ResourceRequestParams;
/// Parameters of `resources/unsubscribe`.
pub type UnsubscribeRequestParams = ResourceRequestParams;

/// Reads a resource.
///
/// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
/// are absent only in the bare `{method, params}` form of earlier revisions'
/// schemas, which is read and written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReadResourceRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    /// The request id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::de_some_id"
    )]
    pub id: Option<RequestId>,
    method: RequestTag<ReadResourceRequest>,
    /// The parameters.
    pub params: ReadResourceRequestParams,
}

impl ReadResourceRequest {
    /// The method name, `"resources/read"`.
    pub const METHOD: &'static str = <Self as crate::RequestMethod>::METHOD;

    /// A request with an id and parameters.
    pub fn new(id: impl Into<RequestId>, params: ReadResourceRequestParams) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            id: Some(id.into()),
            method: RequestTag::new(),
            params,
        }
    }

    /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
    /// schemas).
    pub fn without_id(params: ReadResourceRequestParams) -> Self {
        Self {
            jsonrpc: None,
            id: None,
            method: RequestTag::new(),
            params,
        }
    }
}

impl RequestMethod for ReadResourceRequest {
    const METHOD: &'static str = "resources/read";
    type Params = ReadResourceRequestParams;
    type Result = ReadResourceResult;

    const UNSTABLE_META_SLOT: Option<crate::method::MetaSlot<Self::Params>> =
        Some(|p| Some(&mut p.meta));
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }

    /// Sets `result_type` (2026-07-28).
    #[must_use]
    pub fn with_result_type(mut self, result_type: impl Into<ResultType>) -> Self {
        self.result_type = Some(result_type.into());
        self
    }

    /// Sets `ttl_ms` (2026-07-28).
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Sets `cache_scope` (2026-07-28).
    #[must_use]
    pub fn with_cache_scope(mut self, cache_scope: impl Into<CacheScope>) -> Self {
        self.cache_scope = Some(cache_scope.into());
        self
    }
}

/// Tells the client the resource list changed.
///
/// `"jsonrpc": "2.0"` is written by the constructors; it is absent only in the
/// bare `{method, params}` form of earlier revisions' schemas, which is read and
/// written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceListChangedNotification {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    method: NotificationTag<ResourceListChangedNotification>,
    /// The parameters, which may be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<NotificationParams>,
}

impl ResourceListChangedNotification {
    /// The method name, `"notifications/resources/list_changed"`.
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

impl Default for ResourceListChangedNotification {
    fn default() -> Self {
        Self::new()
    }
}

impl NotificationMethod for ResourceListChangedNotification {
    const METHOD: &'static str = "notifications/resources/list_changed";
    type Params = Option<NotificationParams>;
}

/// Subscribes to updates of a resource.
///
/// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
/// are absent only in the bare `{method, params}` form of earlier revisions'
/// schemas, which is read and written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscribeRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    /// The request id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::de_some_id"
    )]
    pub id: Option<RequestId>,
    method: RequestTag<SubscribeRequest>,
    /// The parameters.
    pub params: SubscribeRequestParams,
}

impl SubscribeRequest {
    /// The method name, `"resources/subscribe"`.
    pub const METHOD: &'static str = <Self as crate::RequestMethod>::METHOD;

    /// A request with an id and parameters.
    pub fn new(id: impl Into<RequestId>, params: SubscribeRequestParams) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            id: Some(id.into()),
            method: RequestTag::new(),
            params,
        }
    }

    /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
    /// schemas).
    pub fn without_id(params: SubscribeRequestParams) -> Self {
        Self {
            jsonrpc: None,
            id: None,
            method: RequestTag::new(),
            params,
        }
    }
}

impl RequestMethod for SubscribeRequest {
    const METHOD: &'static str = "resources/subscribe";
    type Params = SubscribeRequestParams;
    type Result = EmptyResult;
}

/// Ends a subscription.
///
/// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
/// are absent only in the bare `{method, params}` form of earlier revisions'
/// schemas, which is read and written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UnsubscribeRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    /// The request id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::de_some_id"
    )]
    pub id: Option<RequestId>,
    method: RequestTag<UnsubscribeRequest>,
    /// The parameters.
    pub params: UnsubscribeRequestParams,
}

impl UnsubscribeRequest {
    /// The method name, `"resources/unsubscribe"`.
    pub const METHOD: &'static str = <Self as crate::RequestMethod>::METHOD;

    /// A request with an id and parameters.
    pub fn new(id: impl Into<RequestId>, params: UnsubscribeRequestParams) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            id: Some(id.into()),
            method: RequestTag::new(),
            params,
        }
    }

    /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
    /// schemas).
    pub fn without_id(params: UnsubscribeRequestParams) -> Self {
        Self {
            jsonrpc: None,
            id: None,
            method: RequestTag::new(),
            params,
        }
    }
}

impl RequestMethod for UnsubscribeRequest {
    const METHOD: &'static str = "resources/unsubscribe";
    type Params = UnsubscribeRequestParams;
    type Result = EmptyResult;
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

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: impl Into<Meta>) -> Self {
        self.meta = Some(meta.into());
        self
    }
}

/// Tells a subscribed client a resource changed.
///
/// `"jsonrpc": "2.0"` is written by the constructors; it is absent only in the
/// bare `{method, params}` form of earlier revisions' schemas, which is read and
/// written back as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceUpdatedNotification {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    method: NotificationTag<ResourceUpdatedNotification>,
    /// The parameters.
    pub params: ResourceUpdatedNotificationParams,
}

impl ResourceUpdatedNotification {
    /// The method name, `"notifications/resources/updated"`.
    pub const METHOD: &'static str = <Self as crate::NotificationMethod>::METHOD;

    /// A notification with these parameters.
    pub fn new(params: ResourceUpdatedNotificationParams) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            method: NotificationTag::new(),
            params,
        }
    }
}

impl NotificationMethod for ResourceUpdatedNotification {
    const METHOD: &'static str = "notifications/resources/updated";
    type Params = ResourceUpdatedNotificationParams;
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
