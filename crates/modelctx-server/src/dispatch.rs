//! The high-level server's answers to the feature methods, served from its registries
//! when no low-level handler was registered for the method.
//!
//! Cursors are opaque (base64 of `list#offset`); a cursor this server did not issue for
//! that list is `-32602`.
//!
//! Per-entry caching hints (`cache_hints` on `ToolDef`, `PromptDef`, `ResourceDef`,
//! `TemplateDef`) are set here on the built-in answers, in the stateless era only: a list
//! page is fresh for the shortest `ttl` among its entries (an entry without hints has the
//! server's), and its scope is computed over the *whole* list (`public` only when every
//! entry is), because the spec wants one scope on every page of a list; a read carries its
//! resource's or template's hints. The era's finishing then fills in the server's hints
//! only where none were set.

use std::future::Future;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use modelctx_session::encode_result;
use modelctx_types::{
    CacheScope, CallToolRequest, CallToolRequestParams, CompleteRequest, CompleteRequestParams,
    CompleteResult, Completion, CompletionReference, EmptyResult, ErrorData, GetPromptRequest,
    GetPromptRequestParams, ListPromptsRequest, ListPromptsResult, ListResourceTemplatesRequest,
    ListResourceTemplatesResult, ListResourcesRequest, ListResourcesResult, ListToolsRequest,
    ListToolsResult, PaginatedRequestParams, RawValue, ReadResourceRequest,
    ReadResourceRequestParams, ReadResourceResult, RequestMethod, ResourceRequestParams,
    SubscribeRequest, UnsubscribeRequest,
};
use modelctx_types::{Offering, Permissions};
use serde::Serialize;

use crate::completion::CompletionInput;
use crate::inner::Inner;
use crate::registry::{lookup, page, snapshot};
use crate::request::Context;
use crate::resource::{RegisteredResource, RegisteredTemplate};
use crate::stateless::CacheHints;

/// The items of a listing the caller may see: those its [`Permissions`] (put in the
/// request's extensions by a layer in front, such as an OAuth resource server) allow,
/// or all of them when there are none. Filtered before paging, so a cursor's offset is
/// into what this caller sees.
fn permitted<T>(cx: &Context, items: Vec<T>, offering: impl Fn(&T) -> Offering<'_>) -> Vec<T> {
    match cx.extensions().get::<Permissions>() {
        Some(permissions) => items
            .into_iter()
            .filter(|item| permissions.allows(offering(item)))
            .collect(),
        None => items,
    }
}

type Answer = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

/// The built-in answer to `method`, if the server serves it from its registries.
pub(crate) fn builtin(
    server: &Arc<Inner>,
    method: &str,
    params: Option<Box<RawValue>>,
    cx: Context,
) -> Option<Answer> {
    let caps = &server.capabilities;
    let server = server.clone();
    let subscribe = caps
        .resources
        .as_ref()
        .is_some_and(|r| r.subscribe == Some(true));
    Some(match method {
        "tools/list" if caps.tools.is_some() => {
            answer::<ListToolsRequest, _, _, _>(params, cx, move |p, cx| list_tools(server, p, cx))
        }
        "tools/call" if caps.tools.is_some() => {
            answer::<CallToolRequest, _, _, _>(params, cx, move |p, cx| call_tool(server, p, cx))
        }
        "resources/list" if caps.resources.is_some() => {
            answer::<ListResourcesRequest, _, _, _>(params, cx, move |p, cx| {
                list_resources(server, p, cx)
            })
        }
        "resources/templates/list" if caps.resources.is_some() => {
            answer::<ListResourceTemplatesRequest, _, _, _>(params, cx, move |p, cx| {
                list_templates(server, p, cx)
            })
        }
        "resources/read" if caps.resources.is_some() => answer::<ReadResourceRequest, _, _, _>(
            params,
            cx,
            move |p: ReadResourceRequestParams, cx| async move {
                read_resource(server, cx, &p.uri).await
            },
        ),
        "resources/subscribe" if subscribe => {
            answer::<SubscribeRequest, _, _, _>(params, cx, move |p, cx| {
                subscribe_resource(server, p, cx)
            })
        }
        "resources/unsubscribe" if subscribe => {
            answer::<UnsubscribeRequest, _, _, _>(params, cx, unsubscribe_resource)
        }
        "prompts/list" if caps.prompts.is_some() => {
            answer::<ListPromptsRequest, _, _, _>(params, cx, move |p, cx| {
                list_prompts(server, p, cx)
            })
        }
        "prompts/get" if caps.prompts.is_some() => {
            answer::<GetPromptRequest, _, _, _>(params, cx, move |p, cx| get_prompt(server, p, cx))
        }
        "completion/complete" if caps.completions.is_some() => {
            answer::<CompleteRequest, _, _, _>(params, cx, move |p, cx| complete(server, p, cx))
        }
        _ => return None,
    })
}

/// The answer of `f` to a request of method `M`: its params decoded (handed the `_meta`
/// the request context has read already), its result encoded.
fn answer<M, R, F, Fut>(params: Option<Box<RawValue>>, cx: Context, f: F) -> Answer
where
    M: RequestMethod,
    R: Serialize,
    F: FnOnce(M::Params, Context) -> Fut + Send + 'static,
    Fut: Future<Output = Result<R, ErrorData>> + Send + 'static,
{
    let params = match cx
        .request
        .unstable_parse_params::<M::Params>(params.as_deref(), M::UNSTABLE_META_SLOT)
    {
        Ok(params) => params,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    let answering = f(params, cx);
    Box::pin(async move { encode_result(&answering.await?) })
}

/// A page of a list as a request asks for it (see [`list_page`]): its entries and the
/// members a list result carries beside them.
struct Page<E> {
    entries: Vec<E>,
    next_cursor: Option<modelctx_types::Cursor>,
    ttl_ms: Option<u64>,
    cache_scope: Option<CacheScope>,
}

/// The list result `$result` holding `page`: its entries, and the members a list result
/// carries beside them.
macro_rules! page_result {
    ($result:ident, $page:expr) => {{
        let page: Page<_> = $page;
        let mut result = $result::new(page.entries);
        (result.next_cursor, result.ttl_ms, result.cache_scope) =
            (page.next_cursor, page.ttl_ms, page.cache_scope);
        result
    }};
}

/// The page of `method`'s list `all` the request asks for: the items the caller may
/// see (`offering`, see [`permitted`]) cut at the request's cursor, each listed by
/// `entry`. In protocol 2026-07-28 the page carries caching hints: fresh for the
/// shortest `ttl` among its items (`hints`, see [`CacheHints::page_ttl`]), scoped over
/// the whole list (see [`CacheHints::list_scope`]) and `private` whatever the hints say
/// when the list was filtered by the caller's [`Permissions`].
#[allow(clippy::too_many_arguments)]
fn list_page<T, E>(
    server: &Inner,
    cx: &Context,
    params: Option<PaginatedRequestParams>,
    method: &str,
    all: Vec<T>,
    offering: impl Fn(&T) -> Offering<'_>,
    hints: impl Fn(&T) -> Option<&CacheHints>,
    entry: impl Fn(&T) -> E,
) -> Result<Page<E>, ErrorData> {
    let all = permitted(cx, all, offering);
    let scope = cx.envelope.as_ref().map(|_| {
        if cx.extensions().get::<Permissions>().is_some() {
            // Shaped by the caller's permissions: never for a shared cache.
            CacheScope::Private
        } else {
            server.cache_hints.list_scope(all.iter().map(&hints))
        }
    });
    let cursor = params.as_ref().and_then(|p| p.cursor.as_ref());
    let (items, next) = page(all, cursor, server.page_size, method)?;
    Ok(Page {
        ttl_ms: scope
            .as_ref()
            .map(|_| server.cache_hints.page_ttl(items.iter().map(&hints))),
        cache_scope: scope,
        entries: items.iter().map(entry).collect(),
        next_cursor: next,
    })
}

async fn list_tools(
    server: Arc<Inner>,
    params: Option<PaginatedRequestParams>,
    cx: Context,
) -> Result<ListToolsResult, ErrorData> {
    let legacy = crate::tool::is_legacy(&cx);
    let page = list_page(
        &server,
        &cx,
        params,
        "tools/list",
        snapshot(&server.registry.tools),
        |t| Offering::Tool(&t.tool.name),
        |t| t.cache.as_ref(),
        |t| t.listed(legacy),
    )?;
    Ok(page_result!(ListToolsResult, page))
}

async fn call_tool(
    server: Arc<Inner>,
    params: CallToolRequestParams,
    cx: Context,
) -> Result<modelctx_types::CallToolResult, ErrorData> {
    let Some(tool) = lookup(&server.registry.tools, &params.name) else {
        return Err(ErrorData::invalid_params(format!(
            "Unknown tool: {}",
            params.name
        )));
    };
    tool.call(params, cx).await
}

/// An entry of `resources/list`: a fixed resource, or a resource a template lists
/// (under the template's caching hints).
enum Listed {
    Fixed(Arc<RegisteredResource>),
    Instance(Box<modelctx_types::Resource>, Arc<RegisteredTemplate>),
}

impl Listed {
    fn resource(&self) -> &modelctx_types::Resource {
        match self {
            Self::Fixed(r) => &r.resource,
            Self::Instance(r, _) => r,
        }
    }

    fn cache(&self) -> Option<&CacheHints> {
        match self {
            Self::Fixed(r) => r.cache.as_ref(),
            Self::Instance(_, t) => t.cache.as_ref(),
        }
    }
}

/// The fixed resources, then the resources each template lists (in template order).
async fn listed_resources(server: &Inner, cx: &Context) -> Result<Vec<Listed>, ErrorData> {
    let mut all: Vec<Listed> = snapshot(&server.registry.resources)
        .into_iter()
        .map(Listed::Fixed)
        .collect();
    for template in snapshot(&server.registry.templates) {
        if let Some(listing) = template.instances(cx.clone()) {
            let resources = listing.await?;
            all.extend(
                resources
                    .into_iter()
                    .map(|r| Listed::Instance(Box::new(r), template.clone())),
            );
        }
    }
    Ok(all)
}

async fn list_resources(
    server: Arc<Inner>,
    params: Option<PaginatedRequestParams>,
    cx: Context,
) -> Result<ListResourcesResult, ErrorData> {
    let all = listed_resources(&server, &cx).await?;
    let page = list_page(
        &server,
        &cx,
        params,
        "resources/list",
        all,
        |r| Offering::Resource(&r.resource().uri),
        Listed::cache,
        |r| r.resource().clone(),
    )?;
    Ok(page_result!(ListResourcesResult, page))
}

async fn list_templates(
    server: Arc<Inner>,
    params: Option<PaginatedRequestParams>,
    cx: Context,
) -> Result<ListResourceTemplatesResult, ErrorData> {
    let page = list_page(
        &server,
        &cx,
        params,
        "resources/templates/list",
        snapshot(&server.registry.templates),
        |t| Offering::ResourceTemplate(&t.template.uri_template),
        |t| t.cache.as_ref(),
        |t| t.template.clone(),
    )?;
    Ok(page_result!(ListResourceTemplatesResult, page))
}

/// Reads `uri`: a fixed resource first, then the first template (in template order)
/// the URI fits; neither is `-32002`.
pub(crate) async fn read_resource(
    server: Arc<Inner>,
    cx: Context,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let era = cx.envelope.is_some();
    // Behind a layer that checks the caller's permissions, what a read returns is for
    // that caller: never for a shared cache, whatever the resource's own hints say.
    let shaped = cx.extensions().get::<Permissions>().is_some();
    if let Some(resource) = lookup(&server.registry.resources, uri) {
        let contents = resource.read(cx).await?;
        return Ok(read_result(contents, era, shaped, resource.cache.as_ref()));
    }
    for template in snapshot(&server.registry.templates) {
        if let Some(read) = template.read(uri, cx.clone()) {
            let contents = read.await?;
            return Ok(read_result(contents, era, shaped, template.cache.as_ref()));
        }
    }
    Err(ErrorData::resource_not_found(uri))
}

/// The answer to `resources/read`, carrying in protocol 2026-07-28 (`era`) the caching
/// hints of the resource or template that served it, `own`, if it has its own (the
/// server's are added later otherwise); `private` whatever the hints say when the read
/// was checked against the caller's permissions (`shaped`).
fn read_result(
    contents: Vec<modelctx_types::TextOrBlobResourceContents>,
    era: bool,
    shaped: bool,
    own: Option<&CacheHints>,
) -> ReadResourceResult {
    let mut result = ReadResourceResult::new(contents);
    if !era {
        return result;
    }
    if let Some(own) = own {
        result.ttl_ms = Some(own.ttl_ms);
        result.cache_scope = Some(own.scope.clone());
    }
    if shaped {
        result.cache_scope = Some(CacheScope::Private);
    }
    result
}

/// Whether `uri` names a resource this server can read.
fn resource_exists(server: &Inner, uri: &str) -> bool {
    lookup(&server.registry.resources, uri).is_some()
        || snapshot(&server.registry.templates)
            .iter()
            .any(|t| t.parsed.match_uri(uri).is_some())
}

async fn subscribe_resource(
    server: Arc<Inner>,
    params: ResourceRequestParams,
    cx: Context,
) -> Result<EmptyResult, ErrorData> {
    if !resource_exists(&server, &params.uri) {
        return Err(ErrorData::resource_not_found(&params.uri));
    }
    cx.session.subscribe(&params.uri);
    if let Some(saving) = cx.session.save() {
        saving.await?;
    }
    Ok(EmptyResult::new())
}

async fn unsubscribe_resource(
    params: ResourceRequestParams,
    cx: Context,
) -> Result<EmptyResult, ErrorData> {
    if cx.session.unsubscribe(&params.uri)
        && let Some(saving) = cx.session.save()
    {
        saving.await?;
    }
    Ok(EmptyResult::new())
}

async fn list_prompts(
    server: Arc<Inner>,
    params: Option<PaginatedRequestParams>,
    cx: Context,
) -> Result<ListPromptsResult, ErrorData> {
    let page = list_page(
        &server,
        &cx,
        params,
        "prompts/list",
        snapshot(&server.registry.prompts),
        |p| Offering::Prompt(&p.prompt.name),
        |p| p.cache.as_ref(),
        |p| p.prompt.clone(),
    )?;
    Ok(page_result!(ListPromptsResult, page))
}

async fn get_prompt(
    server: Arc<Inner>,
    params: GetPromptRequestParams,
    cx: Context,
) -> Result<modelctx_types::GetPromptResult, ErrorData> {
    let Some(prompt) = lookup(&server.registry.prompts, &params.name) else {
        return Err(ErrorData::invalid_params(format!(
            "Unknown prompt: {}",
            params.name
        )));
    };
    prompt.get(params.arguments, cx).await
}

async fn complete(
    server: Arc<Inner>,
    params: CompleteRequestParams,
    cx: Context,
) -> Result<CompleteResult, ErrorData> {
    let argument = params.argument.name.clone();
    let source = match &params.reference {
        CompletionReference::Prompt(reference) => {
            let Some(prompt) = lookup(&server.registry.prompts, &reference.name) else {
                return Err(ErrorData::invalid_params(format!(
                    "Unknown prompt: {}",
                    reference.name
                )));
            };
            let known = prompt
                .prompt
                .arguments
                .iter()
                .flatten()
                .any(|a| a.name == argument);
            if !known {
                return Err(ErrorData::invalid_params(format!(
                    "Prompt {} has no argument {argument}",
                    reference.name
                )));
            }
            prompt.completions.get(&argument).cloned()
        }
        CompletionReference::Resource(reference) => {
            let templates = snapshot(&server.registry.templates);
            let template = templates
                .iter()
                .find(|t| t.template.uri_template == reference.uri)
                .or_else(|| {
                    templates
                        .iter()
                        .find(|t| t.parsed.match_uri(&reference.uri).is_some())
                });
            let Some(template) = template else {
                return Err(ErrorData::invalid_params(format!(
                    "No resource template matches {}",
                    reference.uri
                )));
            };
            if !template.parsed.variables().any(|v| v == argument) {
                return Err(ErrorData::invalid_params(format!(
                    "Template {} has no variable {argument}",
                    template.template.uri_template
                )));
            }
            template.completions.get(&argument).cloned()
        }
    };
    let Some(source) = source else {
        return Ok(CompleteResult::new(Completion::new(Vec::new())));
    };
    let mut input = CompletionInput::new(argument, params.argument.value);
    input.arguments = params.context.and_then(|c| c.arguments).unwrap_or_default();
    source(input, cx).await.map(CompleteResult::new)
}
