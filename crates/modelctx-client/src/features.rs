//! Typed calls for the server features (tools, resources, prompts, completion,
//! logging), paging helpers that treat cursors as opaque, and the client-side check of
//! `structuredContent` against a tool's `outputSchema`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use modelctx_session::{RequestOptions, SessionError};
use modelctx_types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CompleteArgument, CompleteContext,
    CompleteRequest, CompleteRequestParams, CompleteResult, CompletionReference, Cursor,
    GetPromptRequest, GetPromptRequestParams, GetPromptResult, ListPromptsRequest,
    ListPromptsResult, ListResourceTemplatesRequest, ListResourceTemplatesResult,
    ListResourcesRequest, ListResourcesResult, ListToolsRequest, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, Prompt, ReadResourceRequest, ReadResourceResult, RequestMethod,
    Resource, ResourceRequestParams, ResourceTemplate, SetLevelRequest, SetLevelRequestParams,
    SubscribeRequest, Tool, UnsubscribeRequest,
};
use serde::Serialize;

use crate::Client;
use crate::ordering::LogOrder;
use crate::validation::OutputSchemas;

/// A list method that pages with `cursor` / `nextCursor`.
pub trait PagedMethod: RequestMethod<Params = Option<PaginatedRequestParams>> {
    /// What one page lists.
    type Item: Send + 'static;

    /// The page's `nextCursor`.
    fn next_cursor(result: &Self::Result) -> Option<&Cursor>;

    /// The page's items.
    fn into_items(result: Self::Result) -> Vec<Self::Item>;
}

/// `PagedMethod` for list request `$method`, whose result `$result` lists `$item`s in
/// its field `$items`.
macro_rules! paged {
    ($($method:ty => $result:ty, $item:ty, $items:ident;)*) => {$(
        impl PagedMethod for $method {
            type Item = $item;
            fn next_cursor(result: &$result) -> Option<&Cursor> {
                result.next_cursor.as_ref()
            }
            fn into_items(result: $result) -> Vec<$item> {
                result.$items
            }
        }
    )*};
}

paged! {
    ListToolsRequest => ListToolsResult, Tool, tools;
    ListResourcesRequest => ListResourcesResult, Resource, resources;
    ListResourceTemplatesRequest => ListResourceTemplatesResult, ResourceTemplate, resource_templates;
    ListPromptsRequest => ListPromptsResult, Prompt, prompts;
    modelctx_types::ListTasksRequest => modelctx_types::ListTasksResult, modelctx_types::Task, tasks;
}

/// Walks a paged list one page at a time: the first request carries no cursor, each
/// next one the previous page's `nextCursor` exactly as received; the walk ends after
/// the first page without one. Cursors are never parsed, changed or kept beyond the
/// walk, and no page size is assumed.
pub struct Pages<M: PagedMethod> {
    client: Client,
    next: Option<Option<Cursor>>,
    _method: std::marker::PhantomData<fn() -> M>,
}

impl<M: PagedMethod> fmt::Debug for Pages<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages")
            .field("method", &M::METHOD)
            .field("done", &self.next.is_none())
            .finish()
    }
}

impl<M: PagedMethod> Pages<M> {
    fn new(client: Client) -> Self {
        Self {
            client,
            next: Some(None),
            _method: std::marker::PhantomData,
        }
    }

    /// The next page, or `None` once the last page was returned. After an error the
    /// walk ends.
    pub async fn next_page(&mut self) -> Option<Result<M::Result, SessionError>> {
        let cursor = self.next.take()?;
        let params = cursor.map(PaginatedRequestParams::after);
        match self.client.request::<M>(params).await {
            Ok(page) => {
                self.next = M::next_cursor(&page).cloned().map(Some);
                Some(Ok(page))
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// Every remaining item, page after page.
    pub async fn collect_all(mut self) -> Result<Vec<M::Item>, SessionError> {
        let mut items = Vec::new();
        while let Some(page) = self.next_page().await {
            items.extend(M::into_items(page?));
        }
        Ok(items)
    }
}

/// What the client remembers between calls: the output schemas of the tools it listed,
/// and the count of log messages received and handled.
#[derive(Default)]
pub(crate) struct FeatureState {
    pub(crate) output_schemas: OutputSchemas,
    listed: Mutex<bool>,
    pub(crate) log_order: Arc<LogOrder>,
}

impl fmt::Debug for FeatureState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FeatureState").finish_non_exhaustive()
    }
}

impl Client {
    /// Walks a list method page by page.
    pub fn pages<M: PagedMethod>(&self) -> Pages<M> {
        Pages::new(self.clone())
    }

    /// One page of `tools/list` (`cursor`: a previous page's `nextCursor`). The tools'
    /// output schemas are remembered for [`Client::call_tool`].
    pub async fn list_tools(
        &self,
        cursor: Option<Cursor>,
    ) -> Result<ListToolsResult, SessionError> {
        let page = self
            .request::<ListToolsRequest>(cursor.map(PaginatedRequestParams::after))
            .await?;
        self.inner.features.output_schemas.remember(&page.tools);
        Ok(page)
    }

    /// Every tool, following `nextCursor` to the end.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, SessionError> {
        let tools = self.pages::<ListToolsRequest>().collect_all().await?;
        self.inner.features.output_schemas.replace(&tools);
        *self
            .inner
            .features
            .listed
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = true;
        Ok(tools)
    }

    /// The names of every tool, in the server's order (a whole [`list_all_tools`]).
    ///
    /// [`list_all_tools`]: Client::list_all_tools
    pub async fn tool_names(&self) -> Result<Vec<String>, SessionError> {
        let tools = self.list_all_tools().await?;
        Ok(tools.into_iter().map(|t| t.name).collect())
    }

    /// Calls tool `name` with `arguments`: anything that serializes to a JSON object (a
    /// struct, a map, `json!({..})`), or `()` for none. A successful result is checked against the
    /// tool's `outputSchema` (the tool list is fetched once if the client has not listed
    /// tools yet; if that fails, results go unchecked): a result without
    /// `structuredContent`, or with one that breaks the schema, fails the call with a
    /// refusal, and so does any result of a tool whose schema the client cannot use (a
    /// `$schema` dialect other than 2020-12, 2019-09 and draft-07/06/04, or a `$ref` it
    /// would have to fetch). Results flagged `isError` are returned as they are.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use modelctx_client::Client;
    /// use modelctx_server::schemars::JsonSchema;
    /// use modelctx_server::{Context, Json, Server, ToolDef};
    /// use serde_json::json;
    ///
    /// #[derive(serde::Deserialize, JsonSchema)]
    /// #[schemars(crate = "modelctx_server::schemars")]
    /// struct Square { n: i64 }
    ///
    /// let square = ToolDef::new("square", |a: Square, _cx: Context| async move {
    ///     Ok::<_, String>(Json(a.n * a.n))
    /// });
    /// let server = Server::builder("math", "1.0.0").tool(square).unwrap().build();
    /// let (client_side, server_side) = modelctx_memory::pair();
    /// let _session = server.serve(server_side);
    /// let client = Client::builder("me", "1.0.0").connect(client_side).await.unwrap();
    ///
    /// let result = client.call_tool("square", json!({"n": 7})).await.unwrap();
    /// assert_eq!(result.structured_content.unwrap()["result"], 49);
    /// // Arguments that break the input schema come back as a tool error.
    /// let bad = client.call_tool("square", json!({"n": "seven"})).await.unwrap();
    /// assert!(bad.is_error());
    /// # }
    /// ```
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, SessionError> {
        let mut params = CallToolRequestParams::new(name);
        if let Some(map) = crate::typed::tool_arguments(arguments)? {
            params = params.with_arguments(map);
        }
        self.call_tool_with(params, RequestOptions::default()).await
    }

    /// Calls a tool with full parameters and options (progress callback, timeout,
    /// `_meta`), checking the result as [`Client::call_tool`] does. The reply is handed
    /// back only after the client's log handler has seen every `notifications/message`
    /// that arrived before it (and progress callbacks always run before it).
    pub async fn call_tool_with(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult, SessionError> {
        let name = params.name.clone();
        let result = self.request_with::<CallToolRequest>(params, options).await;
        self.inner.features.log_order.caught_up(self.peer()).await;
        let result = result?;
        if result.is_error() {
            return Ok(result);
        }
        let listed = *self
            .inner
            .features
            .listed
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !self.inner.features.output_schemas.knows(&name)
            && !listed
            && self.list_all_tools().await.is_err()
        {
            // No listing to learn the schema from: the result goes unchecked, and the
            // listing is not retried on every call.
            *self
                .inner
                .features
                .listed
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = true;
        }
        self.inner
            .features
            .output_schemas
            .check(&name, &result)
            .map_err(SessionError::refused)?;
        Ok(result)
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<Cursor>,
    ) -> Result<ListResourcesResult, SessionError> {
        self.request::<ListResourcesRequest>(cursor.map(PaginatedRequestParams::after))
            .await
    }

    /// Every resource, following `nextCursor` to the end.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, SessionError> {
        self.pages::<ListResourcesRequest>().collect_all().await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<Cursor>,
    ) -> Result<ListResourceTemplatesResult, SessionError> {
        self.request::<ListResourceTemplatesRequest>(cursor.map(PaginatedRequestParams::after))
            .await
    }

    /// Every resource template, following `nextCursor` to the end.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, SessionError> {
        self.pages::<ListResourceTemplatesRequest>()
            .collect_all()
            .await
    }

    /// Reads the resource at `uri`.
    pub async fn read_resource(
        &self,
        uri: impl Into<String>,
    ) -> Result<ReadResourceResult, SessionError> {
        self.request::<ReadResourceRequest>(ResourceRequestParams::new(uri))
            .await
    }

    /// Subscribes to updates of the resource at `uri` (needs `resources.subscribe`).
    pub async fn subscribe_resource(&self, uri: impl Into<String>) -> Result<(), SessionError> {
        self.request::<SubscribeRequest>(ResourceRequestParams::new(uri))
            .await
            .map(drop)
    }

    /// Ends the subscription to `uri`.
    pub async fn unsubscribe_resource(&self, uri: impl Into<String>) -> Result<(), SessionError> {
        self.request::<UnsubscribeRequest>(ResourceRequestParams::new(uri))
            .await
            .map(drop)
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(
        &self,
        cursor: Option<Cursor>,
    ) -> Result<ListPromptsResult, SessionError> {
        self.request::<ListPromptsRequest>(cursor.map(PaginatedRequestParams::after))
            .await
    }

    /// Every prompt, following `nextCursor` to the end.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, SessionError> {
        self.pages::<ListPromptsRequest>().collect_all().await
    }

    /// Gets prompt `name` filled in with `arguments`: anything that serializes to a
    /// JSON object (a struct, a map, `json!({..})`), or `()` for none. Prompt arguments
    /// are strings on the wire: other values are sent as their JSON text.
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, SessionError> {
        let arguments = crate::typed::string_arguments(arguments)?;
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        self.request::<GetPromptRequest>(params).await
    }

    /// Asks for completions of `argument` (partial `value`) of a prompt or resource
    /// template, with the values of already resolved arguments in `context`.
    pub async fn complete(
        &self,
        reference: impl Into<CompletionReference>,
        argument: impl Into<String>,
        value: impl Into<String>,
        context: BTreeMap<String, String>,
    ) -> Result<CompleteResult, SessionError> {
        let mut params =
            CompleteRequestParams::new(reference, CompleteArgument::new(argument, value));
        if !context.is_empty() {
            params = params.with_context(CompleteContext::new().with_arguments(context));
        }
        self.request::<CompleteRequest>(params).await
    }

    /// Asks the server to send only log messages at `level` or above. In protocol
    /// 2026-07-28 there is no `logging/setLevel`: the level then travels with every
    /// later request (`io.modelcontextprotocol/logLevel`), and without it the server
    /// sends no log messages at all.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), SessionError> {
        if self.inner.stateless.is_some() {
            *self
                .inner
                .log_level
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(level);
            return Ok(());
        }
        self.request::<SetLevelRequest>(SetLevelRequestParams::new(level))
            .await
            .map(drop)
    }
}
