//! Resources of the high-level server: fixed URIs and RFC 6570 URI templates whose
//! variables reach the function as typed arguments.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use modelctx_types::{
    Annotations, BlobResourceContents, ErrorData, JsonObject, Meta, Resource, ResourceTemplate,
    TextOrBlobResourceContents, TextResourceContents,
};
#[cfg(feature = "schemars")]
use schemars::JsonSchema;
#[cfg(feature = "schemars")]
use serde::de::DeserializeOwned;

use crate::completion::{CompleteFn, CompletionInput, IntoCompletion, completer};
use crate::error::{BoxError, into_error_data};
use crate::request::Context;
#[cfg(feature = "schema-validation")]
use crate::schema::Compiled;
use crate::schema::coerce_strings;
#[cfg(feature = "schemars")]
use crate::schema::schema_of;
use crate::uri_template::UriTemplate;

type ReadFn = dyn Fn(String, Context) -> BoxFuture<'static, Result<Vec<TextOrBlobResourceContents>, ErrorData>>
    + Send
    + Sync;
type TemplateFn = dyn Fn(
        serde_json::Value,
        String,
        Context,
    ) -> BoxFuture<'static, Result<Vec<TextOrBlobResourceContents>, ErrorData>>
    + Send
    + Sync;
type ListFn = dyn Fn(Context) -> BoxFuture<'static, Result<Vec<Resource>, ErrorData>> + Send + Sync;

/// Binary resource contents: sent base64-encoded in a `blob`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

/// What a resource function may return: text (`String`, `&'static str`), bytes
/// ([`Blob`]), or the contents spelled out. Text and blobs get the requested URI, and
/// contents without a MIME type get the resource's `mimeType`.
pub trait IntoContents: Send + 'static {
    /// Converts the value into the contents of `uri`.
    fn into_contents(self, uri: &str) -> Vec<TextOrBlobResourceContents>;
}

impl IntoContents for String {
    fn into_contents(self, uri: &str) -> Vec<TextOrBlobResourceContents> {
        vec![TextResourceContents::new(uri, self).into()]
    }
}

impl IntoContents for &'static str {
    fn into_contents(self, uri: &str) -> Vec<TextOrBlobResourceContents> {
        self.to_owned().into_contents(uri)
    }
}

impl IntoContents for Blob {
    fn into_contents(self, uri: &str) -> Vec<TextOrBlobResourceContents> {
        vec![BlobResourceContents::new(uri, crate::base64::encode(&self.0)).into()]
    }
}

impl IntoContents for TextResourceContents {
    fn into_contents(self, _: &str) -> Vec<TextOrBlobResourceContents> {
        vec![self.into()]
    }
}

impl IntoContents for BlobResourceContents {
    fn into_contents(self, _: &str) -> Vec<TextOrBlobResourceContents> {
        vec![self.into()]
    }
}

impl IntoContents for TextOrBlobResourceContents {
    fn into_contents(self, _: &str) -> Vec<TextOrBlobResourceContents> {
        vec![self]
    }
}

impl IntoContents for Vec<TextOrBlobResourceContents> {
    fn into_contents(self, _: &str) -> Vec<TextOrBlobResourceContents> {
        self
    }
}

/// A resource at a fixed URI and the async function that reads it. A failing function
/// (its `Err`) answers `resources/read` with a JSON-RPC error: an [`ErrorData`] is sent
/// as is, anything else as `-32603` with its message.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_server::{Context, ResourceDef, Server};
/// use modelctx_test::TestClient;
///
/// let readme = ResourceDef::new("file:///README.md", "readme", |_cx: Context| async {
///     Ok::<_, String>("# Notes")
/// })
/// .mime_type("text/markdown");
/// let server = Server::builder("files", "1.0.0").resource(readme)?.build();
/// let client = TestClient::connect(&server).await;
/// let read = client.read_resource("file:///README.md").await;
/// assert_eq!(read.contents.len(), 1);
/// # Ok(()) }
/// ```
pub struct ResourceDef {
    pub(crate) resource: Resource,
    pub(crate) handler: Arc<ReadFn>,
    pub(crate) cache: Option<crate::stateless::CacheHints>,
}

modelctx_types::__debug_shows!(ResourceDef, |v| { resource: &v.resource, .. });

impl ResourceDef {
    /// The resource at `uri`, called `name`, read by `f`.
    pub fn new<F, Fut, R, E>(uri: impl Into<String>, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoContents,
        E: Into<BoxError>,
    {
        Self::from_resource(Resource::new(uri, name), f)
    }

    /// A resource described in full (title, annotations, size, ...), read by `f`.
    pub fn from_resource<F, Fut, R, E>(resource: Resource, f: F) -> Self
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoContents,
        E: Into<BoxError>,
    {
        let f = Arc::new(f);
        let handler: Arc<ReadFn> = Arc::new(move |uri, cx| {
            let f = f.clone();
            Box::pin(async move {
                match f(cx).await {
                    Ok(value) => Ok(value.into_contents(&uri)),
                    Err(e) => Err(into_error_data(e.into(), &format!("Reading {uri} failed"))),
                }
            })
        });
        Self {
            resource,
            handler,
            cache: None,
        }
    }

    /// The resource as `resources/list` shows it.
    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    crate::def_setters::entry_setters! {
        resource, icons;
        /// Sets the caching hints this resource carries in protocol 2026-07-28: how long a client
        /// may keep it (`ttl`, whole milliseconds) and who may share it. Without them the
        /// server's ([`ServerBuilder::cache_hints`](crate::ServerBuilder::cache_hints)) apply.
        /// They cover the entry in `resources/list` (a list's page is fresh for the shortest `ttl` among its entries and `public` only when every entry of the whole list is) and every `resources/read` of it.
    }

    /// Sets the resource's `_meta`.
    #[must_use]
    pub fn meta(mut self, meta: Meta) -> Self {
        self.resource.meta = Some(meta);
        self
    }

    /// Sets the MIME type (also given to text and blob contents the function returns
    /// without one).
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.resource.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the annotations (audience, priority, last modified).
    #[must_use]
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.resource.annotations = Some(annotations);
        self
    }

    /// Sets the size in bytes.
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.resource.size = Some(size);
        self
    }
}

/// A URI template and the async function that reads every resource fitting it. The
/// template's variables reach the function as the fields of `T` (strings are converted
/// to the numbers and booleans `T`'s schema asks for); values that do not fit `T`
/// answer `-32602`. So does a `file:` template's variable whose value holds a `..` path
/// segment (`..`, `a/../b`, `%2E%2E%2F` decoded): the function never sees a path that
/// climbs out of the directory the template names.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_server::schemars::JsonSchema;
/// use modelctx_server::{Context, Server, TemplateDef};
/// use modelctx_test::TestClient;
///
/// #[derive(serde::Deserialize, JsonSchema)]
/// #[schemars(crate = "modelctx_server::schemars")]
/// struct User {
///     id: u32,
/// }
///
/// let profile = TemplateDef::new("users://{id}/profile", "profile", |u: User, _cx: Context| async move {
///     Ok::<_, String>(format!("user {}", u.id))
/// });
/// let server = Server::builder("users", "1.0.0").resource_template(profile)?.build();
/// let client = TestClient::connect(&server).await;
/// let read = client.read_resource("users://7/profile").await;
/// assert_eq!(read.contents.len(), 1);
/// # Ok(()) }
/// ```
///
/// A template may also list its instances ([`TemplateDef::list`]): `resources/list`
/// then shows them after the fixed resources.
pub struct TemplateDef {
    pub(crate) template: ResourceTemplate,
    pub(crate) handler: Arc<TemplateFn>,
    pub(crate) schema: JsonObject,
    pub(crate) completions: BTreeMap<String, Arc<CompleteFn>>,
    pub(crate) list: Option<Arc<ListFn>>,
    pub(crate) cache: Option<crate::stateless::CacheHints>,
}

modelctx_types::__debug_shows!(TemplateDef, |v| { template: &v.template, .. });

impl TemplateDef {
    /// The template `uri_template` (RFC 6570), called `name`, read by `f`. Needs
    /// feature `schemars`.
    #[cfg(feature = "schemars")]
    pub fn new<T, F, Fut, R, E>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        f: F,
    ) -> Self
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(T, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoContents,
        E: Into<BoxError>,
    {
        let template = ResourceTemplate::new(uri_template, name);
        let f = Arc::new(f);
        let handler: Arc<TemplateFn> = Arc::new(move |vars, uri, cx| {
            let f = f.clone();
            Box::pin(async move {
                let args: T = serde_json::from_value(vars).map_err(|e| {
                    ErrorData::invalid_params(format!("Invalid variables in {uri}: {e}"))
                })?;
                match f(args, cx).await {
                    Ok(value) => Ok(value.into_contents(&uri)),
                    Err(e) => Err(into_error_data(e.into(), &format!("Reading {uri} failed"))),
                }
            })
        });
        Self {
            template,
            handler,
            schema: schema_of::<T>(),
            completions: BTreeMap::new(),
            list: None,
            cache: None,
        }
    }

    /// The template as `resources/templates/list` shows it.
    pub fn template(&self) -> &ResourceTemplate {
        &self.template
    }

    crate::def_setters::entry_setters! {
        template;
        /// Sets the caching hints this template carries in protocol 2026-07-28: how long a client
        /// may keep it (`ttl`, whole milliseconds) and who may share it. Without them the
        /// server's ([`ServerBuilder::cache_hints`](crate::ServerBuilder::cache_hints)) apply.
        /// They cover the entry in `resources/templates/list` (a list's page is fresh for the shortest `ttl` among its entries and `public` only when every entry of the whole list is) and every `resources/read` it serves.
    }

    /// Sets the template's `_meta`.
    #[must_use]
    pub fn meta(mut self, meta: Meta) -> Self {
        self.template.meta = Some(meta);
        self
    }

    /// Sets the MIME type of the resources it yields.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the annotations.
    #[must_use]
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.template.annotations = Some(annotations);
        self
    }

    /// Completes values of the template variable `variable` with `f` (served by
    /// `completion/complete` with a `ref/resource` reference).
    #[must_use]
    pub fn complete<F, Fut, V, E>(mut self, variable: impl Into<String>, f: F) -> Self
    where
        F: Fn(CompletionInput, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<V, E>> + Send + 'static,
        V: IntoCompletion,
        E: Into<BoxError>,
    {
        self.completions.insert(variable.into(), completer(f));
        self
    }

    /// Lists the resources this template yields with `f`: `resources/list` shows them
    /// after the fixed resources (templates in URI-template order, each template's
    /// resources in the order `f` gives them), paged with the rest. `f` runs on every
    /// `resources/list` request, so a listing follows what exists; a resource without
    /// a MIME type gets the template's. An `Err` fails the `resources/list` request
    /// (an [`ErrorData`] as is, anything else as `-32603` with its message).
    ///
    /// List a template's resources when a client may want to browse them (the files
    /// of a folder, the rows of a small table); leave them out when there are too many
    /// to list or they are only worth reading by name.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use modelctx_server::schemars::JsonSchema;
    /// use modelctx_server::{Context, Server, TemplateDef};
    /// use modelctx_test::TestClient;
    /// use modelctx_types::Resource;
    ///
    /// #[derive(serde::Deserialize, JsonSchema)]
    /// #[schemars(crate = "modelctx_server::schemars")]
    /// struct User {
    ///     id: u32,
    /// }
    ///
    /// let profile = TemplateDef::new("users://{id}/profile", "profile", |u: User, _cx: Context| async move {
    ///     Ok::<_, String>(format!("user {}", u.id))
    /// })
    /// .list(|_cx: Context| async {
    ///     let ids = [1, 2]; // from wherever the users are kept
    ///     let users = ids.map(|id| Resource::new(format!("users://{id}/profile"), format!("user {id}")));
    ///     Ok::<_, String>(users.to_vec())
    /// });
    /// let server = Server::builder("users", "1.0.0").resource_template(profile)?.build();
    /// let client = TestClient::connect(&server).await;
    /// let listed = client.list_resources().await;
    /// assert_eq!(listed[1].uri, "users://2/profile");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn list<F, Fut, E>(mut self, f: F) -> Self
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Resource>, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let f = Arc::new(f);
        let what = format!("Listing the resources of {}", self.template.uri_template);
        self.list = Some(Arc::new(move |cx| {
            let f = f.clone();
            let what = what.clone();
            Box::pin(async move { f(cx).await.map_err(|e| into_error_data(e.into(), &what)) })
        }));
        self
    }
}

/// A template accepted into a registry: parsed and its variables' schema compiled.
pub(crate) struct RegisteredTemplate {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    schema: JsonObject,
    #[cfg(feature = "schema-validation")]
    compiled: Compiled,
    handler: Arc<TemplateFn>,
    pub(crate) completions: BTreeMap<String, Arc<CompleteFn>>,
    list: Option<Arc<ListFn>>,
    /// Its caching hints, if it has its own.
    pub(crate) cache: Option<crate::stateless::CacheHints>,
}

impl RegisteredTemplate {
    pub(crate) fn new(def: TemplateDef) -> Result<Self, String> {
        let parsed = UriTemplate::parse(&def.template.uri_template)?;
        #[cfg(feature = "schema-validation")]
        let compiled = Compiled::new(&def.schema)
            .map_err(|e| format!("variables of {}: {e}", def.template.uri_template))?;
        if let Some(unknown) = def
            .completions
            .keys()
            .find(|k| !parsed.variables().any(|v| v == k.as_str()))
        {
            return Err(format!(
                "completion for {unknown:?}, which is not a variable of {}",
                def.template.uri_template
            ));
        }
        Ok(Self {
            template: def.template,
            parsed,
            schema: def.schema,
            #[cfg(feature = "schema-validation")]
            compiled,
            handler: def.handler,
            completions: def.completions,
            list: def.list,
            cache: def.cache,
        })
    }

    /// The resources the template lists, each with a MIME type (its own, else the
    /// template's); `None` for a template that lists none.
    pub(crate) fn instances(
        &self,
        cx: Context,
    ) -> Option<BoxFuture<'static, Result<Vec<Resource>, ErrorData>>> {
        let listing = (self.list.as_ref()?)(cx);
        let mime = self.template.mime_type.clone();
        Some(Box::pin(async move {
            let mut resources = listing.await?;
            for resource in &mut resources {
                if resource.mime_type.is_none() {
                    resource.mime_type.clone_from(&mime);
                }
            }
            Ok(resources)
        }))
    }

    /// Reads `uri` if it fits the template; `None` if it does not.
    pub(crate) fn read(
        &self,
        uri: &str,
        cx: Context,
    ) -> Option<BoxFuture<'static, Result<Vec<TextOrBlobResourceContents>, ErrorData>>> {
        let vars = self.parsed.match_uri(uri)?;
        if let Some(name) = self.climbing_variable(&vars) {
            let error = ErrorData::invalid_params(format!(
                "Invalid variables in {uri}: {name} holds a `..` path segment"
            ));
            return Some(Box::pin(async move { Err(error) }));
        }
        let value = coerce_strings(&self.schema, vars);
        #[cfg(feature = "schema-validation")]
        if let Err(problems) = self.compiled.check(&value) {
            let error =
                ErrorData::invalid_params(format!("Invalid variables in {uri}: {problems}"));
            return Some(Box::pin(async move { Err(error) }));
        }
        let fut = (self.handler)(value, uri.to_owned(), cx);
        Some(with_mime_type(fut, self.template.mime_type.clone()))
    }
}

impl RegisteredTemplate {
    /// For a `file:` template, the first variable whose value (decoded) holds a `..`
    /// path segment: read as a path, it would climb out of the directory the template
    /// names, so the read is refused before the function runs.
    fn climbing_variable<'a>(&self, vars: &'a BTreeMap<String, String>) -> Option<&'a str> {
        let scheme = self.template.uri_template.split(':').next()?;
        if !scheme.eq_ignore_ascii_case("file") {
            return None;
        }
        vars.iter()
            .find(|(_, value)| value.split(['/', '\\']).any(|segment| segment == ".."))
            .map(|(name, _)| name.as_str())
    }
}

/// A fixed resource accepted into a registry.
pub(crate) struct RegisteredResource {
    pub(crate) resource: Resource,
    handler: Arc<ReadFn>,
    /// Its caching hints, if it has its own.
    pub(crate) cache: Option<crate::stateless::CacheHints>,
}

impl RegisteredResource {
    pub(crate) fn new(def: ResourceDef) -> Result<Self, String> {
        if def.resource.uri.is_empty() {
            return Err("a resource needs a non-empty URI".to_owned());
        }
        Ok(Self {
            resource: def.resource,
            handler: def.handler,
            cache: def.cache,
        })
    }

    pub(crate) fn read(
        &self,
        cx: Context,
    ) -> BoxFuture<'static, Result<Vec<TextOrBlobResourceContents>, ErrorData>> {
        let fut = (self.handler)(self.resource.uri.clone(), cx);
        with_mime_type(fut, self.resource.mime_type.clone())
    }
}

/// Gives contents without a MIME type the one their resource or template declares.
fn with_mime_type(
    fut: BoxFuture<'static, Result<Vec<TextOrBlobResourceContents>, ErrorData>>,
    mime: Option<String>,
) -> BoxFuture<'static, Result<Vec<TextOrBlobResourceContents>, ErrorData>> {
    Box::pin(async move {
        let mut contents = fut.await?;
        for c in &mut contents {
            match c {
                TextOrBlobResourceContents::Text(t) if t.mime_type.is_none() => {
                    t.mime_type.clone_from(&mime);
                }
                TextOrBlobResourceContents::Blob(b) if b.mime_type.is_none() => {
                    b.mime_type.clone_from(&mime);
                }
                _ => {}
            }
        }
        Ok(contents)
    })
}
