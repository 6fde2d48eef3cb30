//! An in-process client for a server under test: [`TestClient`] connects to a
//! `modelctx_server::Server` over the in-memory transport, offers typed calls that
//! fail the test with what went wrong, and records the conversation for a
//! [`Transcript`].

use std::collections::BTreeMap;
use std::time::Duration;

use modelctx_client::{Client, ClientBuilder};
use modelctx_server::{Context, Server, ServerSession, ToolDef};
use modelctx_session::SessionError;
use modelctx_transport::boxed;
use modelctx_types::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource, Tool,
};
use serde_json::Value;

use crate::record::{Recording, record};
use crate::transcript::Transcript;
use crate::wait::{WAIT, within};

/// A client of a server in the same process, for tests.
///
/// Every call is bounded (five seconds unless [`limit`](Self::limit) says otherwise)
/// and fails the test, naming the call, when it errs or does not answer; the `try_`
/// forms hand back the error instead.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use modelctx_server::{Context, Server, ToolDef};
/// use modelctx_test::{TestClient, text_of};
/// use modelctx_types::{JsonObject, Tool};
/// use serde_json::json;
///
/// let hello = ToolDef::with_schema(
///     Tool::without_arguments("hello"),
///     |_: JsonObject, _: Context| async { Ok::<_, String>("hello, world") },
/// );
/// let server = Server::builder("greeter", "1.0.0").tool(hello).unwrap().build();
///
/// let client = TestClient::connect(&server).await;
/// let tools = client.list_tools().await;
/// assert_eq!(tools[0].name, "hello");
/// let result = client.call_tool("hello", json!({})).await;
/// assert_eq!(text_of(&result), "hello, world");
///
/// // What went over the wire, one block a message, to snapshot:
/// // insta::assert_snapshot!(client.transcript());
/// assert!(client.transcript().to_string().contains("--> request tools/call #"));
/// # }
/// ```
#[derive(Debug)]
pub struct TestClient {
    client: Client,
    recording: Recording,
    limit: Duration,
    _session: ServerSession,
}

impl TestClient {
    /// Connects a client named `test-client` 1.0.0 (with its default settings) to
    /// `server`.
    ///
    /// # Panics
    ///
    /// When the connection fails or takes longer than the bound.
    pub async fn connect(server: &Server) -> Self {
        Self::connect_with(server, Client::builder("test-client", "1.0.0")).await
    }

    /// Connects the client `builder` makes (its handlers, capabilities, mode) to
    /// `server`.
    ///
    /// # Panics
    ///
    /// When the connection fails or takes longer than the bound.
    pub async fn connect_with(server: &Server, builder: ClientBuilder) -> Self {
        let (client_side, server_side) = modelctx_memory::pair();
        let session = server.serve(server_side);
        let (transport, recording) = record(boxed(client_side));
        let client = within(WAIT, "the connection", builder.connect(transport))
            .await
            .unwrap_or_else(|e| panic!("the client could not connect: {e}"));
        Self {
            client,
            recording,
            limit: WAIT,
            _session: session,
        }
    }

    /// Bounds each later call by `limit`.
    #[must_use]
    pub fn limit(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// The client itself, for what the typed helpers do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What went over the wire so far, as the client saw it.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// The conversation so far, to snapshot.
    pub fn transcript(&self) -> Transcript {
        Transcript::new(&self.recording.messages())
    }

    /// Every tool, following pages to the end.
    ///
    /// # Panics
    ///
    /// When the listing fails or does not answer in time.
    pub async fn list_tools(&self) -> Vec<Tool> {
        self.answer("tools/list", self.client.list_all_tools())
            .await
    }

    /// Calls tool `name` with `arguments` (a JSON object); its result, which may be a
    /// tool error (`isError`).
    ///
    /// # Panics
    ///
    /// When the call fails (a JSON-RPC error, a broken output schema) or does not answer
    /// in time, or `arguments` is not an object.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> CallToolResult {
        let what = format!("tools/call {name}");
        self.answer(&what, self.try_call_tool(name, arguments))
            .await
    }

    /// Calls tool `name` with `arguments` (a JSON object), handing back a failure.
    ///
    /// # Panics
    ///
    /// When the call does not answer in time, or `arguments` is not an object.
    pub async fn try_call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, SessionError> {
        let arguments = object(name, arguments);
        let what = format!("tools/call {name}");
        within(self.limit, &what, self.client.call_tool(name, arguments)).await
    }

    /// Every resource, following pages to the end.
    ///
    /// # Panics
    ///
    /// When the listing fails or does not answer in time.
    pub async fn list_resources(&self) -> Vec<Resource> {
        self.answer("resources/list", self.client.list_all_resources())
            .await
    }

    /// Reads resource `uri`.
    ///
    /// # Panics
    ///
    /// When the read fails or does not answer in time.
    pub async fn read_resource(&self, uri: &str) -> ReadResourceResult {
        let what = format!("resources/read {uri}");
        self.answer(&what, self.client.read_resource(uri)).await
    }

    /// Every prompt, following pages to the end.
    ///
    /// # Panics
    ///
    /// When the listing fails or does not answer in time.
    pub async fn list_prompts(&self) -> Vec<Prompt> {
        self.answer("prompts/list", self.client.list_all_prompts())
            .await
    }

    /// Gets prompt `name` filled in with `arguments` (names and string values).
    ///
    /// # Panics
    ///
    /// When the request fails or does not answer in time.
    pub async fn get_prompt(&self, name: &str, arguments: &[(&str, &str)]) -> GetPromptResult {
        let arguments: BTreeMap<String, String> = arguments
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let what = format!("prompts/get {name}");
        self.answer(&what, self.client.get_prompt(name, arguments))
            .await
    }

    /// Awaits a request of the client, bounded, failing the test on an error.
    async fn answer<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, SessionError>>,
    ) -> T {
        within(self.limit, what, request)
            .await
            .unwrap_or_else(|e| panic!("{what} failed: {e}"))
    }
}

/// `arguments` as the object a tool call carries.
fn object(tool: &str, arguments: Value) -> JsonObject {
    match arguments {
        Value::Object(map) => map,
        Value::Null => JsonObject::new(),
        other => panic!("the arguments of {tool} must be a JSON object, not {other}"),
    }
}

/// A server named `name` with one tool of no arguments, `tool`, that answers `text`.
pub fn one_tool_server(name: &str, tool: &str, text: &'static str) -> Server {
    let tool = ToolDef::with_schema(
        Tool::without_arguments(tool),
        move |_args: JsonObject, _cx: Context| async move { Ok::<_, String>(text.to_owned()) },
    );
    Server::builder(name, "1.0.0").tool(tool).unwrap().build()
}
