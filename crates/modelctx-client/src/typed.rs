//! Typed calls: arguments from any `Serialize`, results read as text or as a type, a
//! tool handle that names its argument and output types, completion helpers, and the
//! log callback.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use modelctx_session::{Progress, RequestOptions, SessionError};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, LoggingMessageNotification,
    LoggingMessageNotificationParams, PromptReference, ResourceTemplateReference,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Client, ClientBuilder};

/// Turns call arguments into the JSON object the wire carries: any `Serialize` that
/// becomes an object, or nothing (`()`, `None`, `null`). Anything else is refused
/// ([`SessionError::is_refused`]), before a request is sent.
///
/// ```
/// use modelctx_client::tool_arguments;
/// use serde_json::json;
///
/// assert_eq!(tool_arguments(json!({"n": 7})).unwrap().unwrap()["n"], 7);
/// assert!(tool_arguments(()).unwrap().is_none());
/// assert!(tool_arguments([1, 2]).unwrap_err().is_refused());
/// ```
pub fn tool_arguments(arguments: impl Serialize) -> Result<Option<JsonObject>, SessionError> {
    match serde_json::to_value(arguments) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(Value::Null) => Ok(None),
        Ok(other) => Err(SessionError::refused(format!(
            "arguments must serialize to a JSON object, not {}",
            kind_of(&other)
        ))),
        Err(e) => Err(SessionError::refused(format!(
            "the arguments cannot be serialized: {e}"
        ))),
    }
}

/// Prompt arguments are strings on the wire: strings stay as they are, every other value
/// is written as JSON (`5`, `true`, `["a"]`), and `null` members are left out.
pub(crate) fn string_arguments(
    arguments: impl Serialize,
) -> Result<BTreeMap<String, String>, SessionError> {
    let Some(map) = tool_arguments(arguments)? else {
        return Ok(BTreeMap::new());
    };
    Ok(map
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| match v {
            Value::String(s) => (k, s),
            other => (k, other.to_string()),
        })
        .collect())
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reading a tool's result: its text, or its structured content as a type.
///
/// In the prelude of the facade, so `result.text()` and `result.structured::<T>()` read
/// a [`CallToolResult`] (whose associated functions of the same names build one).
///
/// ```
/// use modelctx_client::ToolResultExt;
/// use modelctx_types::CallToolResult;
/// use serde_json::json;
///
/// let result = CallToolResult::text("49");
/// assert_eq!(result.text(), "49");
///
/// let result = CallToolResult::structured(json!({"n": 49}).as_object().cloned().unwrap());
/// #[derive(serde::Deserialize)]
/// struct Out { n: i64 }
/// assert_eq!(result.structured::<Out>().unwrap().n, 49);
/// ```
pub trait ToolResultExt {
    /// The text of every text block, in order, joined by newlines (empty when there is
    /// none).
    fn text(&self) -> String;

    /// The structured content read as `T`. When the result has none, a result whose
    /// only content is one text block of JSON is read from that text (servers of older
    /// revisions send structured output that way).
    fn structured<T: DeserializeOwned>(&self) -> Result<T, StructuredError>;
}

impl ToolResultExt for CallToolResult {
    fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        texts.join("\n")
    }

    fn structured<T: DeserializeOwned>(&self) -> Result<T, StructuredError> {
        if let Some(value) = &self.structured_content {
            return T::deserialize(value).map_err(|e| StructuredError::Mismatch(e.to_string()));
        }
        let [block] = self.content.as_slice() else {
            return Err(StructuredError::Missing);
        };
        let Some(Ok(value)) = block.as_text().map(serde_json::from_str::<Value>) else {
            return Err(StructuredError::Missing);
        };
        T::deserialize(&value).map_err(|e| StructuredError::Mismatch(e.to_string()))
    }
}

/// Why a result could not be read as a type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StructuredError {
    /// The result carries no structured content (nor a single text block of JSON).
    Missing,
    /// The structured content does not have the type's shape.
    Mismatch(String),
}

impl fmt::Display for StructuredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StructuredError::Missing => f.write_str("the tool result has no structured content"),
            StructuredError::Mismatch(why) => {
                write!(f, "the structured content does not fit the type: {why}")
            }
        }
    }
}

impl std::error::Error for StructuredError {}

/// Why a typed tool call did not give its output.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolCallError {
    /// The call failed: transport, protocol error, timeout, refusal.
    Session(SessionError),
    /// The tool ran and reported an error (`isError`); its result is kept.
    Tool(CallToolResult),
    /// The tool answered, but its output is not of the expected type.
    Output(StructuredError),
}

impl ToolCallError {
    /// The error text the tool reported, when it reported one.
    pub fn tool_message(&self) -> Option<String> {
        match self {
            ToolCallError::Tool(result) => Some(result.text()),
            _ => None,
        }
    }
}

impl fmt::Display for ToolCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolCallError::Session(e) => write!(f, "{e}"),
            ToolCallError::Tool(result) => {
                write!(f, "the tool reported an error: {}", result.text())
            }
            ToolCallError::Output(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ToolCallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolCallError::Session(e) => Some(e),
            ToolCallError::Output(e) => Some(e),
            ToolCallError::Tool(_) => None,
        }
    }
}

impl From<SessionError> for ToolCallError {
    fn from(e: SessionError) -> Self {
        ToolCallError::Session(e)
    }
}

/// A tool of the server with its argument and output types: made by [`Client::tool`].
///
/// The output is read from the result's structured content (checked against the tool's
/// `outputSchema` by the client, as every call is); a result flagged `isError` is
/// [`ToolCallError::Tool`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use modelctx_client::Client;
/// use modelctx_server::schemars::JsonSchema;
/// use modelctx_server::{Json, Server, ToolDef};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// #[schemars(crate = "modelctx_server::schemars")]
/// struct Square { n: i64 }
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// #[schemars(crate = "modelctx_server::schemars")]
/// struct Squared { square: i64 }
///
/// let tool = ToolDef::from_fn("square", |a: Square| async move { Json(Squared { square: a.n * a.n }) });
/// let server = Server::builder("math", "1.0.0").tool(tool).unwrap().build();
/// let (client_side, server_side) = modelctx_memory::pair();
/// let _session = server.serve(server_side);
/// let client = Client::builder("me", "1.0.0").connect(client_side).await.unwrap();
///
/// let square = client.tool::<Square, Squared>("square");
/// assert_eq!(square.call(&Square { n: 7 }).await.unwrap().square, 49);
/// # }
/// ```
pub struct TypedTool<'c, A, O> {
    client: &'c Client,
    name: String,
    options: RequestOptions,
    types: PhantomData<fn(&A) -> O>,
}

impl<A, O> fmt::Debug for TypedTool<'_, A, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<A: Serialize, O: DeserializeOwned> TypedTool<'_, A, O> {
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Hears the call's progress notifications (the client asks for them by sending
    /// a progress token with each call).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::{Arc, Mutex};
    ///
    /// use modelctx_client::Client;
    /// use modelctx_server::{Context, Json, Server, ToolDef};
    /// use modelctx_session::{Progress, SessionError};
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, modelctx_server::schemars::JsonSchema)]
    /// #[schemars(crate = "modelctx_server::schemars")]
    /// struct Steps {
    ///     steps: u32,
    /// }
    ///
    /// let count = ToolDef::new("count", |a: Steps, cx: Context| async move {
    ///     for step in 1..=a.steps {
    ///         let progress = Progress::new(step.into()).with_total(a.steps.into());
    ///         cx.report_progress(progress).await?;
    ///     }
    ///     Ok::<_, SessionError>(Json(a)) // the steps taken, as structured output
    /// });
    /// let server = Server::builder("counter", "1.0.0").tool(count)?.build();
    /// let (client_side, server_side) = modelctx_memory::pair();
    /// let _session = server.serve(server_side);
    /// let client = Client::builder("me", "1.0.0").connect(client_side).await?;
    ///
    /// let heard = Arc::new(Mutex::new(Vec::new()));
    /// let seen = heard.clone();
    /// let count = client
    ///     .tool::<Steps, Steps>("count")
    ///     .on_progress(move |p| seen.lock().unwrap().push(p.progress));
    /// assert_eq!(count.call(&Steps { steps: 3 }).await?.steps, 3);
    /// assert_eq!(*heard.lock().unwrap(), [1.0, 2.0, 3.0]);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.options = self.options.on_progress(callback);
        self
    }

    /// Gives each call at most `timeout` (instead of the client's default).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// Calls the tool with `arguments` and reads its output.
    pub async fn call(&self, arguments: &A) -> Result<O, ToolCallError> {
        let mut params = CallToolRequestParams::new(self.name.clone());
        if let Some(map) = tool_arguments(arguments)? {
            params = params.with_arguments(map);
        }
        let result = self
            .client
            .call_tool_with(params, self.options.clone())
            .await?;
        if result.is_error() {
            return Err(ToolCallError::Tool(result));
        }
        result.structured::<O>().map_err(ToolCallError::Output)
    }
}

impl Client {
    /// A handle on tool `name` that takes `A` and gives `O`; see [`TypedTool`].
    pub fn tool<A, O>(&self, name: impl Into<String>) -> TypedTool<'_, A, O> {
        TypedTool {
            client: self,
            name: name.into(),
            options: RequestOptions::default(),
            types: PhantomData,
        }
    }

    /// The completions of argument `argument` of prompt `prompt` for the partial
    /// `value` (the values only; [`Client::complete`] gives the whole result).
    pub async fn complete_prompt_argument(
        &self,
        prompt: impl Into<String>,
        argument: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Vec<String>, SessionError> {
        let reference = PromptReference::new(prompt);
        let result = self
            .complete(reference, argument, value, BTreeMap::new())
            .await?;
        Ok(result.completion.values)
    }

    /// The completions of variable `variable` of the resource template `uri_template`
    /// for the partial `value`.
    pub async fn complete_template_variable(
        &self,
        uri_template: impl Into<String>,
        variable: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Vec<String>, SessionError> {
        let reference = ResourceTemplateReference::new(uri_template);
        let result = self
            .complete(reference, variable, value, BTreeMap::new())
            .await?;
        Ok(result.completion.values)
    }
}

impl ClientBuilder {
    /// Hears the server's log messages (`notifications/message`), in order. A call's
    /// answer is handed back only after this has seen every log message that arrived
    /// before it.
    #[must_use]
    pub fn on_log(
        self,
        callback: impl Fn(LoggingMessageNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.notification_handler::<LoggingMessageNotification, _, _>(move |params, _peer| {
            callback(params);
            std::future::ready(())
        })
    }
}
