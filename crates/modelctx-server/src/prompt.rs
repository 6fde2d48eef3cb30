//! Prompts of the high-level server: arguments derived from a typed struct, validated
//! before the function runs.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_core::future::BoxFuture;
#[cfg(feature = "schemars")]
use modelctx_types::PromptArgument;
use modelctx_types::{ErrorData, GetPromptResult, JsonObject, Meta, Prompt, PromptMessage};
#[cfg(feature = "schemars")]
use schemars::JsonSchema;
#[cfg(feature = "schemars")]
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::completion::{CompleteFn, CompletionInput, IntoCompletion, completer};
use crate::error::BoxError;
#[cfg(feature = "schemars")]
use crate::error::into_error_data;
use crate::request::Context;
#[cfg(feature = "schema-validation")]
use crate::schema::Compiled;
#[cfg(feature = "schemars")]
use crate::schema::schema_of;
use crate::schema::{coerce_strings, is_object_schema};

type PromptFn =
    dyn Fn(Value, Context) -> BoxFuture<'static, Result<GetPromptResult, ErrorData>> + Send + Sync;

/// What a prompt function may return: messages, one message, a plain `String` (one
/// user text message), or a whole [`GetPromptResult`].
pub trait IntoPromptResult: Send + 'static {
    /// Converts into the `prompts/get` result.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult::new(self)
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult::new(vec![self])
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult::new(vec![PromptMessage::user_text(self)])
    }
}

/// A prompt to register and the async function that fills it in.
///
/// The prompt's `arguments` are derived from the fields of the argument type `T`
/// (name, doc comment as description, required unless optional). `prompts/get`
/// answers `-32602` — without calling the function — when a required argument is
/// missing or a value does not fit `T` (strings are converted to the numbers and
/// booleans `T` asks for; with feature `schema-validation` the values are checked
/// against `T`'s schema, without it by decoding them into `T`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_server::schemars::JsonSchema;
/// use modelctx_server::{Context, PromptDef, Server};
/// use modelctx_test::TestClient;
///
/// #[derive(serde::Deserialize, JsonSchema)]
/// #[schemars(crate = "modelctx_server::schemars")]
/// struct Review {
///     /// The language of the code.
///     language: String,
/// }
///
/// let review = PromptDef::new("review", |a: Review, _cx: Context| async move {
///     Ok::<_, String>(format!("Review this {} code.", a.language))
/// })
/// .description("Asks for a code review");
/// let server = Server::builder("prompts", "1.0.0").prompt(review)?.build();
/// let client = TestClient::connect(&server).await;
/// let got = client.get_prompt("review", &[("language", "rust")]).await;
/// assert_eq!(got.messages[0].content.as_text(), Some("Review this rust code."));
/// # Ok(()) }
/// ```
pub struct PromptDef {
    pub(crate) prompt: Prompt,
    pub(crate) schema: JsonObject,
    pub(crate) handler: Arc<PromptFn>,
    pub(crate) completions: BTreeMap<String, Arc<CompleteFn>>,
    pub(crate) cache: Option<crate::stateless::CacheHints>,
}

modelctx_types::__debug_shows!(PromptDef, |v| { prompt: &v.prompt, .. });

impl PromptDef {
    /// A prompt named `name`, filled in by `f` from arguments of type `T`. Needs
    /// feature `schemars`.
    #[cfg(feature = "schemars")]
    pub fn new<T, F, Fut, R, E>(name: impl Into<String>, f: F) -> Self
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(T, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoPromptResult,
        E: Into<BoxError>,
    {
        let schema = schema_of::<T>();
        let mut prompt = Prompt::new(name);
        let arguments = arguments_of(&schema);
        prompt.arguments = (!arguments.is_empty()).then_some(arguments);
        let f = Arc::new(f);
        let handler: Arc<PromptFn> = Arc::new(move |args, cx| {
            let f = f.clone();
            Box::pin(async move {
                let args: T = serde_json::from_value(args)
                    .map_err(|e| ErrorData::invalid_params(format!("Invalid arguments: {e}")))?;
                match f(args, cx).await {
                    Ok(result) => Ok(result.into_prompt_result()),
                    Err(e) => Err(into_error_data(e.into(), "The prompt failed")),
                }
            })
        });
        Self {
            prompt,
            schema,
            handler,
            completions: BTreeMap::new(),
            cache: None,
        }
    }

    /// The prompt as `prompts/list` shows it.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    crate::def_setters::entry_setters! {
        prompt, icons;
        /// Sets the caching hints this prompt's entry in `prompts/list` carries in protocol 2026-07-28: how long a client
        /// may keep it (`ttl`, whole milliseconds) and who may share it. Without them the
        /// server's ([`ServerBuilder::cache_hints`](crate::ServerBuilder::cache_hints)) apply.
        /// A list's page is fresh for the shortest `ttl` among its entries and `public` only when every entry of the whole list is.
    }

    /// Sets the prompt's `_meta`.
    #[must_use]
    pub fn meta(mut self, meta: Meta) -> Self {
        self.prompt.meta = Some(meta);
        self
    }

    /// Completes values of argument `argument` with `f` (served by
    /// `completion/complete` with a `ref/prompt` reference).
    #[must_use]
    pub fn complete<F, Fut, V, E>(mut self, argument: impl Into<String>, f: F) -> Self
    where
        F: Fn(CompletionInput, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<V, E>> + Send + 'static,
        V: IntoCompletion,
        E: Into<BoxError>,
    {
        self.completions.insert(argument.into(), completer(f));
        self
    }
}

/// The prompt arguments an object schema describes.
#[cfg(feature = "schemars")]
fn arguments_of(schema: &JsonObject) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut argument = PromptArgument::new(name.clone());
            argument.description = property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            argument.title = property
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned);
            argument.required = Some(required.contains(&name.as_str()));
            argument
        })
        .collect()
}

/// A prompt accepted into a registry.
pub(crate) struct RegisteredPrompt {
    pub(crate) prompt: Prompt,
    schema: JsonObject,
    #[cfg(feature = "schema-validation")]
    compiled: Compiled,
    handler: Arc<PromptFn>,
    pub(crate) completions: BTreeMap<String, Arc<CompleteFn>>,
    /// Its caching hints in `prompts/list`, if it has its own.
    pub(crate) cache: Option<crate::stateless::CacheHints>,
}

impl RegisteredPrompt {
    pub(crate) fn new(def: PromptDef) -> Result<Self, String> {
        if def.prompt.name.is_empty() {
            return Err("a prompt needs a non-empty name".to_owned());
        }
        if !is_object_schema(&def.schema) {
            return Err(format!(
                "the arguments of prompt {:?} must be a struct (an object schema)",
                def.prompt.name
            ));
        }
        #[cfg(feature = "schema-validation")]
        let compiled = Compiled::new(&def.schema)
            .map_err(|e| format!("arguments of prompt {:?}: {e}", def.prompt.name))?;
        let known: Vec<&str> = def
            .prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| a.name.as_str())
            .collect();
        if let Some(unknown) = def
            .completions
            .keys()
            .find(|k| !known.contains(&k.as_str()))
        {
            return Err(format!(
                "completion for {unknown:?}, which is not an argument of prompt {:?}",
                def.prompt.name
            ));
        }
        Ok(Self {
            prompt: def.prompt,
            schema: def.schema,
            #[cfg(feature = "schema-validation")]
            compiled,
            handler: def.handler,
            completions: def.completions,
            cache: def.cache,
        })
    }

    /// Runs a `prompts/get`: required arguments present, values fit, then the function.
    pub(crate) async fn get(
        &self,
        arguments: Option<BTreeMap<String, String>>,
        cx: Context,
    ) -> Result<GetPromptResult, ErrorData> {
        let arguments = arguments.unwrap_or_default();
        let name = &self.prompt.name;
        let missing: Vec<&str> = self
            .prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(ErrorData::invalid_params(format!(
                "Missing required arguments for prompt {name}: {}",
                missing.join(", ")
            )));
        }
        let value = coerce_strings(&self.schema, arguments);
        #[cfg(feature = "schema-validation")]
        if let Err(problems) = self.compiled.check(&value) {
            return Err(ErrorData::invalid_params(format!(
                "Invalid arguments for prompt {name}: {problems}"
            )));
        }
        (self.handler)(value, cx).await
    }
}
