//! Shared pieces of the conformance tests: connecting a server and a client over a
//! connector, and test-only request methods whose behaviour each test decides.

use crate::{Connector, Recording, record, within};
use modelctx::client::{Client, ClientBuilder, ConnectMode};
use modelctx::server::{Context, NoArgs, ResourceDef, Server, ServerSession, ToolDef};
use modelctx::session::RequestOptions;
use modelctx::session::{SessionConfig, SessionError};
use modelctx::transport::{BoxTransport, MessageSink, MessageStream, Transport, TransportMessage};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, JsonObject, Meta, ProtocolVersion, Tool,
};
use modelctx::types::{
    JsonRpcMessage, JsonRpcResultResponse, RequestMethod, ServerNotification, to_raw,
};
use serde_json::{Value, json};

/// A listener on a free port of 127.0.0.1, and the `http` URL of `path` (empty, or
/// starting with `/`) there.
pub async fn loopback(path: &str) -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!(
        "http://{}{path}",
        listener.local_addr().expect("local addr")
    );
    (listener, url)
}

/// A connected pair, with the client side's wire recorded.
#[allow(missing_debug_implementations)] // a test fixture, never printed
pub struct Pair {
    /// The client.
    pub client: Client,
    server: Option<ServerSession>,
    /// What crossed the client's transport.
    pub wire: Recording,
}

impl Pair {
    /// The server's session.
    ///
    /// # Panics
    ///
    /// On the session-less HTTP leg, where each POST has a session of its own, and on the
    /// shared leg, where each service serves its own copy of the session: a test that
    /// needs the server's session belongs to a requirement that excludes that leg
    /// (`requires-session` or `server-initiated-request`).
    pub fn server(&self) -> &ServerSession {
        self.server.as_ref().expect(
            "no single server session on the session-less HTTP leg (one per POST) nor on the \
             shared leg (one per service): the requirement must exclude the cell",
        )
    }
}

/// The params of every `method` request the server put to the client, in order: sent
/// over the session (handshake era) or embedded in its `input_required` answers
/// (2026-07-28), so one test reads the conversation of either era.
pub fn asked_of(pair: &Pair, method: &str) -> Vec<Value> {
    let mut asked = Vec::new();
    for message in pair.wire.received() {
        let message = serde_json::to_value(&message).expect("a message serialises");
        if message["method"] == method {
            asked.push(message["params"].clone());
        } else if message["result"]["resultType"] == "input_required"
            && let Some(requests) = message["result"]["inputRequests"].as_object()
        {
            asked.extend(
                requests
                    .values()
                    .filter(|r| r["method"] == method)
                    .map(|r| r["params"].clone()),
            );
        }
    }
    asked
}

/// The client's answers to what the server asked, in order: the results of its
/// responses (handshake era) or the answers its retries carry in `inputResponses`
/// (2026-07-28).
pub fn answers_of(pair: &Pair) -> Vec<Value> {
    let mut answers = Vec::new();
    for message in pair.wire.sent() {
        let message = serde_json::to_value(&message).expect("a message serialises");
        if message.get("method").is_none() && message.get("result").is_some() {
            answers.push(message["result"].clone());
        } else if let Some(responses) = message["params"]["inputResponses"].as_object() {
            answers.extend(responses.values().cloned());
        }
    }
    answers
}

/// Awaits `next`, the next change on a subscription or watch, and returns it; `what`
/// names it should it not come, end the stream or fail.
pub async fn next_change(
    what: &str,
    next: impl std::future::Future<Output = Option<Result<ServerNotification, SessionError>>>,
) -> ServerNotification {
    within(what, next)
        .await
        .unwrap_or_else(|| panic!("{what}: the stream ended"))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Awaits the next change on a subscription or watch ([`support::next_change`]), asserts
/// that it matches the pattern (with an optional `if` guard), and returns it: the
/// expression `$next` is the stream's `next()` future, `$what` names the wait.
///
/// [`support::next_change`]: crate::support::next_change
#[macro_export]
macro_rules! assert_next_change {
    ($what:expr, $next:expr, $pattern:pat $(if $guard:expr)?) => {{
        let change = $crate::support::next_change($what, $next).await;
        assert!(
            matches!(&change, $pattern $(if $guard)?),
            "{}: {change:?}",
            $what
        );
        change
    }};
}

/// Awaits `waiting`, a spawned call its caller cancelled, and asserts that it failed as
/// cancelled.
pub async fn cancelled_call<T: std::fmt::Debug>(
    waiting: tokio::task::JoinHandle<Result<T, SessionError>>,
) {
    let err = within("the call to fail", waiting)
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.is_cancelled(), "{err}");
}

/// Sends a `ping` (id 1) on `sink`, and returns the first message `stream` brings next
/// (`what` names the wait).
pub async fn ping_then_first<S, R>(sink: &S, stream: &mut R, what: &str) -> JsonRpcMessage
where
    S: MessageSink + ?Sized,
    R: MessageStream + ?Sized,
{
    let params = to_raw(&json!({})).unwrap();
    let ping = modelctx::types::JsonRpcRequest::new(
        modelctx::types::RequestId::Number(1),
        "ping",
        Some(params),
    );
    sink.send(TransportMessage::new(ping.into()))
        .await
        .expect("the transport carries the ping");
    within(what, stream.recv())
        .await
        .expect("the stream is open")
        .expect("a valid message")
        .message
}

/// Sends `notifications/cancelled` (reason `stray`) for each of `ids`, as the client of
/// `pair`, naming no request of its own that is pending.
pub async fn cancel_strays(pair: &Pair, ids: impl IntoIterator<Item = Value>) {
    for id in ids {
        let params = to_raw(&json!({"requestId": id, "reason": "stray"})).unwrap();
        pair.client
            .peer()
            .notify_raw("notifications/cancelled".into(), Some(params))
            .await
            .unwrap();
    }
}

/// Awaits `call`, which the client of `pair` must refuse on its own: its error, once
/// checked to be a refusal with nothing sent.
pub async fn refused_unsent<T>(
    pair: &Pair,
    call: impl std::future::Future<Output = Result<T, SessionError>>,
) -> SessionError {
    let before = pair.wire.messages().len();
    let Err(err) = call.await else {
        panic!("the client did not refuse");
    };
    assert!(err.is_refused(), "{err}");
    assert_eq!(pair.wire.messages().len(), before, "nothing was sent");
    err
}

/// Serves `server` on the connector's server side and connects `client` to it. On the
/// session-less HTTP leg the server serves each POST on a session of its own.
pub async fn connect(connect: &Connector, server: &Server, client: ClientBuilder) -> Pair {
    try_connect(connect, server, client)
        .await
        .expect("the client connects")
}

/// [`connect`], with the client's failure to connect (a handshake cut off by the
/// client's own default timeout, say) as the outcome.
pub async fn try_connect(
    connect: &Connector,
    server: &Server,
    client: ClientBuilder,
) -> Result<Pair, SessionError> {
    if connect.cell().shares_sessions() {
        // Each service serves its own copy of the session; a copy made from the shared
        // record starts past `initialize` (operational once the record says the
        // client's `notifications/initialized` arrived). The first is the session opened up front on the
        // first service, which the client's `initialize` (its first connection) reaches:
        // the test's server session.
        let shared = server.clone();
        let first: std::sync::Arc<std::sync::Mutex<Option<ServerSession>>> = Default::default();
        let slot = first.clone();
        let client_side = connect
            .serve_shared_http(move |transport| {
                let session = shared.serve(transport);
                let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                if slot.is_none() {
                    *slot = Some(session);
                }
            })
            .await;
        let session = first
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("the factory ran for the opened session");
        let crate::SharedHttp {
            transport,
            mut get_stream,
            ..
        } = client_side;
        let (transport, wire) = record(transport);
        let client = within("the client to connect", client.connect(transport)).await?;
        // Before that, a message for the GET stream (a request of the server's own, a
        // list change) would be lost on this leg: see `Connector::serve_shared_http`.
        within("the client's GET stream to open", get_stream.opened()).await;
        return Ok(Pair {
            client,
            server: Some(session),
            wire,
        });
    }
    if !connect.cell().has_transport_pair() {
        let per_post = server.clone();
        let era_2026 = connect.version() == crate::SpecVersion::V2026_07_28;
        let client_side = connect
            .serve_stateless_http(move |transport| {
                // The 2026-07-28 cell serves the test's server in that era whether or
                // not the test built it for it; `serve_with` adds the transport's own
                // facts (a stateless POST starts initialised, sends no requests).
                if era_2026 {
                    let era = SessionConfig::server().unstable_stateless_era(true);
                    per_post.serve_with(transport, era);
                } else {
                    per_post.serve(transport);
                }
            })
            .await;
        let (client_side, wire) = record(client_side);
        let client = if era_2026 {
            client.mode(modelctx::client::ConnectMode::Discover)
        } else {
            client
        };
        let client = within("the client to connect", client.connect(client_side)).await?;
        return Ok(Pair {
            client,
            server: None,
            wire,
        });
    }
    let (client_side, server_side) = connect.transport_pair().await;
    let (client_side, wire) = record(client_side);
    let stateless_era = connect.version() == crate::SpecVersion::V2026_07_28;
    let (session, client) = if stateless_era {
        let config = SessionConfig::server().unstable_stateless_era(true);
        (
            server.serve_with(server_side, config),
            client.mode(modelctx::client::ConnectMode::Discover),
        )
    } else {
        (server.serve(server_side), client)
    };
    let client = within("the client to connect", client.connect(client_side)).await?;
    if !stateless_era {
        within(
            "the server to see notifications/initialized",
            session.initialized(),
        )
        .await;
    }
    Ok(Pair {
        client,
        server: Some(session),
        wire,
    })
}

/// A server played by hand: it answers every request with `answer(method)` as the
/// result and ignores everything else. For tests that need a server no `Server` is (one
/// that answers `initialize` with an older version, say). On the session-less HTTP leg it
/// plays each POST's session the same way. Returns the client's side.
pub async fn scripted_server<A>(connector: &Connector, answer: A) -> BoxTransport
where
    A: Fn(&str) -> Value + Send + Sync + 'static,
{
    scripted(connector, move |method| Some(Ok(answer(method)))).await
}

/// [`scripted_server`] whose script may also answer with an error.
pub async fn scripted_server_with_errors<A>(connector: &Connector, answer: A) -> BoxTransport
where
    A: Fn(&str) -> Result<Value, modelctx::types::ErrorData> + Send + Sync + 'static,
{
    scripted(connector, move |method| Some(answer(method))).await
}

/// [`scripted_server`] whose script may leave a request unanswered (`None`).
pub async fn scripted_server_with_silence<A>(connector: &Connector, answer: A) -> BoxTransport
where
    A: Fn(&str) -> Option<Value> + Send + Sync + 'static,
{
    scripted(connector, move |method| answer(method).map(Ok)).await
}

/// The scripted servers above: each request answered (or not) by its method alone.
async fn scripted<A>(connector: &Connector, answer: A) -> BoxTransport
where
    A: Fn(&str) -> Option<Result<Value, modelctx::types::ErrorData>> + Send + Sync + 'static,
{
    let script: Script = std::sync::Arc::new(move |request: modelctx::types::JsonRpcRequest| {
        let reply = answer(&request.method).map(|answer| -> JsonRpcMessage {
            match answer {
                Ok(result) => {
                    let result = to_raw(&result).expect("a JSON value serialises");
                    JsonRpcResultResponse::new(request.id, result).into()
                }
                Err(error) => {
                    modelctx::types::JsonRpcErrorResponse::new(Some(request.id), error).into()
                }
            }
        });
        Box::pin(async move { (reply.into_iter().collect(), None) })
            as futures::future::BoxFuture<'static, _>
    });
    raw_server(connector, script).await
}

/// Whether `client` negotiated the stateless era (2026-07-28), where some behaviours
/// the manifest names differ by the spec's own rules (an error code, a removed
/// notification); tests branch on what the client negotiated, never on the cell.
pub fn stateless_era(client: &Client) -> bool {
    client.protocol_version() == &ProtocolVersion::V2026_07_28
}

/// Request options for sending through [`Client::peer`] what the typed API would refuse
/// to send: in the stateless era they carry the envelope the client stamps on its own
/// requests, so the server judges the request itself, not a missing envelope.
pub fn raw_options(client: &Client) -> RequestOptions {
    if !stateless_era(client) {
        return RequestOptions::new();
    }
    let mut meta = Meta::new();
    meta.insert(Meta::PROTOCOL_VERSION, json!(client.protocol_version()));
    meta.insert(
        Meta::CLIENT_CAPABILITIES,
        serde_json::to_value(client.capabilities()).expect("capabilities serialise"),
    );
    meta.insert(
        Meta::CLIENT_INFO,
        serde_json::to_value(client.info()).expect("client info serialises"),
    );
    RequestOptions::new().meta(meta)
}

/// A client of the handshake era (`ConnectMode::Handshake`: `initialize` is its first
/// message, as the 2025-11-25 cells' wires expect); [`connect`] makes it speak
/// 2026-07-28 in those cells, and tests of the other modes choose theirs.
pub fn client() -> ClientBuilder {
    Client::builder("conformance-client", "1.0.0").mode(modelctx::client::ConnectMode::Handshake)
}

/// A [`client`] that reports each list change of `kind` on the returned channel.
pub fn signalling_client(
    kind: modelctx::client::ListKind,
) -> (
    ClientBuilder,
    tokio::sync::mpsc::UnboundedReceiver<modelctx::client::ListKind>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let builder = client().on_list_changed(kind, move |k| {
        let _ = tx.send(k);
    });
    (builder, rx)
}

/// A [`signalling_client`] for list changes of `kind`, connected to `server`.
pub async fn watching(
    connector: &Connector,
    server: &Server,
    kind: modelctx::client::ListKind,
) -> (
    Pair,
    tokio::sync::mpsc::UnboundedReceiver<modelctx::client::ListKind>,
) {
    let (builder, rx) = signalling_client(kind);
    (connect(connector, server, builder).await, rx)
}

/// Waits for the next list change a [`signalling_client`] reports, which must be of
/// `kind`; `what` names the change.
pub async fn announced(
    changes: &mut tokio::sync::mpsc::UnboundedReceiver<modelctx::client::ListKind>,
    kind: modelctx::client::ListKind,
    what: &str,
) {
    assert_eq!(within(what, changes.recv()).await, Some(kind), "{what}");
}

/// Connects [`client`] over `transport` in the 2026-07-28 way (`server/discover`).
pub async fn connect_modern<T: Transport>(transport: T) -> Client {
    client()
        .mode(modelctx::client::ConnectMode::Discover)
        .connect(transport)
        .await
        .unwrap()
}

/// Calls the tool `name` without arguments by a plain `tools/call` request, bounded by
/// [`within`]: the result, or the error the call failed with.
pub async fn call_tool_request(
    client: &Client,
    name: &str,
) -> Result<CallToolResult, SessionError> {
    let params = CallToolRequestParams::new(name);
    within("the call", client.request::<CallToolRequest>(params)).await
}

/// The names of every tool `client` lists, in the order listed.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name).collect()
}

/// A resource at `uri` named `name` whose content is the text `text`.
pub fn text_resource(uri: &str, name: &str, text: &'static str) -> ResourceDef {
    ResourceDef::new(uri, name, move |_cx: Context| async move {
        Ok::<_, String>(text)
    })
}

/// A tool taking no arguments that answers with the text `answer`.
pub fn text_tool(name: &str, answer: &'static str) -> ToolDef {
    ToolDef::new(name, move |_: NoArgs, _cx: Context| async move {
        Ok::<_, String>(answer)
    })
}

/// A server named `name` whose one offer is `tool`.
pub fn server_with_tool(name: &str, tool: ToolDef) -> Server {
    Server::builder(name, "1.0.0").tool(tool).unwrap().build()
}

/// How a client of `version` connects: by `server/discover` in 2026-07-28, by the
/// `initialize` handshake before it.
pub fn connect_mode(version: crate::SpecVersion) -> ConnectMode {
    if version == crate::SpecVersion::V2026_07_28 {
        ConnectMode::Discover
    } else {
        ConnectMode::Handshake
    }
}

/// Sends `value` as an `M` request (one whose handler answers with its params) and
/// asserts the answer is `value` again: the session still serves requests.
pub async fn assert_echoes<M>(client: &Client, value: Value)
where
    M: RequestMethod<Params = Value, Result = Value>,
{
    let answer = client.request::<M>(value.clone()).await.unwrap();
    assert_eq!(payload(answer), value);
}

/// A test payload without what the protocol adds around it: `_meta` (2026-07-28 stamps
/// its envelope on every request and the server's identity on every result) and a
/// result's `resultType`.
pub fn payload(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.remove("_meta");
        object.remove("resultType");
    }
    value
}

/// A builder of a low-level server named `name` whose `tools/list` answers `tools` as
/// given (a `Server`'s own registry would refuse bad definitions).
pub fn listing_as_given(name: &str, tools: Vec<Tool>) -> modelctx::server::ServerBuilder {
    Server::builder(name, "1.0.0").request_handler::<modelctx::types::ListToolsRequest, _, _>(
        move |_, _| {
            let tools = tools.clone();
            async move { Ok(modelctx::types::ListToolsResult::new(tools)) }
        },
    )
}

/// A server named `name` whose `test/echo` answers with its params.
pub fn echo_server(name: &str) -> Server {
    Server::builder(name, "1.0.0")
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(params) })
        .build()
}

/// A tool that never answers: it sends on `started` once called, and on `stopped` once
/// its call is dropped (cancelled, or its session gone).
pub fn pending_tool(
    name: &str,
    stopped: tokio::sync::mpsc::UnboundedSender<()>,
    started: tokio::sync::mpsc::UnboundedSender<()>,
) -> ToolDef {
    ToolDef::new(name, move |_: NoArgs, _cx: Context| {
        let stopped = DropSignal::new(stopped.clone(), ());
        let started = started.clone();
        async move {
            let _stopped = stopped;
            let _ = started.send(());
            std::future::pending::<()>().await;
            Ok::<_, String>("unreachable")
        }
    })
}

/// A server named `name` with a [`pending_tool`] named `tool` and a `test/echo` that
/// answers with its params: the server, then the tool's `stopped` and `started` ends.
pub fn pending_tool_server(
    name: &str,
    tool: &str,
) -> (
    Server,
    tokio::sync::mpsc::UnboundedReceiver<()>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let (stopped_tx, stopped) = tokio::sync::mpsc::unbounded_channel();
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel();
    let server = Server::builder(name, "1.0.0")
        .tool(pending_tool(tool, stopped_tx, started_tx))
        .unwrap()
        .request_handler::<Echo, _, _>(|params, _| async move { Ok(params) })
        .build();
    (server, stopped, started)
}

/// A server whose `test/echo` answers with the `_meta` its request carried.
pub fn meta_echo_server() -> Server {
    Server::builder("meta", "1.0.0")
        .request_handler::<Echo, _, _>(|_, cx| async move {
            Ok(serde_json::to_value(cx.meta()).unwrap())
        })
        .build()
}

/// What [`request_method!`](crate::request_method) and
/// [`notification_method!`](crate::notification_method) expand to, reachable from any test
/// crate.
#[doc(hidden)]
pub mod __method {
    pub use modelctx::types::{NotificationMethod, RequestMethod};
    pub use serde_json::Value;
}

/// Declares a request method for a test, a unit struct naming `method`:
/// `request_method!(Echo = "test/echo")` takes and returns any JSON (params must be an
/// object to carry the 2026-07-28 envelope in `_meta`, and a result an object to carry
/// `resultType`; [`payload`] strips both off again);
/// `request_method!(Measure = "com.example/measure", Dimensions => Area)` is typed both
/// ways. Attributes and a visibility go before the name.
#[macro_export]
macro_rules! request_method {
    ($(#[$attr:meta])* $vis:vis $name:ident = $method:literal) => {
        $crate::request_method!(
            $(#[$attr])* $vis $name = $method,
            $crate::support::__method::Value => $crate::support::__method::Value
        );
    };
    ($(#[$attr:meta])* $vis:vis $name:ident = $method:literal, $params:ty => $result:ty) => {
        $(#[$attr])*
        $vis struct $name;
        impl $crate::support::__method::RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    };
}

/// Declares a notification method for a test, as [`request_method!`](crate::request_method)
/// does a request: with params of any JSON, or of the type given after the method.
#[macro_export]
macro_rules! notification_method {
    ($(#[$attr:meta])* $vis:vis $name:ident = $method:literal) => {
        $crate::notification_method!(
            $(#[$attr])* $vis $name = $method, $crate::support::__method::Value
        );
    };
    ($(#[$attr:meta])* $vis:vis $name:ident = $method:literal, $params:ty) => {
        $(#[$attr])*
        $vis struct $name;
        impl $crate::support::__method::NotificationMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
        }
    };
}

crate::request_method!(
    /// The test-only request `test/echo`.
    #[derive(Debug)]
    pub Echo = "test/echo"
);
crate::request_method!(
    /// The test-only request `test/block`.
    #[derive(Debug)]
    pub Block = "test/block"
);
crate::request_method!(
    /// The test-only request `test/work`.
    #[derive(Debug)]
    pub Work = "test/work"
);

/// Sends `value` on `tx` when dropped: proves a handler future was stopped, since a
/// cancelled handler is dropped rather than resumed.
#[derive(Debug)]
pub struct DropSignal<T> {
    tx: tokio::sync::mpsc::UnboundedSender<T>,
    value: Option<T>,
}

impl<T> DropSignal<T> {
    /// Sends `value` on `tx` once dropped.
    pub fn new(tx: tokio::sync::mpsc::UnboundedSender<T>, value: T) -> Self {
        Self {
            tx,
            value: Some(value),
        }
    }
}

impl<T> Drop for DropSignal<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            let _ = self.tx.send(value);
        }
    }
}

/// A tool named `name` that takes any JSON object and answers with what `work` makes
/// of it as its structured content. A handler that asks the client for input
/// (sampling, elicitation, roots) runs in a tool: 2026-07-28 carries input requests
/// only on the results of `tools/call`, `prompts/get` and `resources/read`.
pub fn work_tool<F, Fut>(name: &str, work: F) -> ToolDef
where
    F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Value> + Send + 'static,
{
    let schema = json!({"type": "object"});
    let Value::Object(schema) = schema else {
        unreachable!("an object literal")
    };
    let work = std::sync::Arc::new(work);
    ToolDef::with_schema(
        Tool::new(name, schema),
        move |arguments: JsonObject, cx: Context| {
            let work = work.clone();
            async move {
                match work(Value::Object(arguments), cx).await {
                    Value::Object(outcome) => Ok(CallToolResult::structured(outcome)),
                    other => Err(format!("a work tool answers an object, not {other}")),
                }
            }
        },
    )
}

/// Calls the [`work_tool`] `name` with `arguments` (the bare request: `call_tool`
/// would list the tools first, which tests of the wire would see) and returns its
/// structured content.
pub async fn call_work(pair: &Pair, name: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("work arguments are an object")
    };
    let params = CallToolRequestParams::new(name).with_arguments(arguments);
    let result = pair
        .client
        .request::<CallToolRequest>(params)
        .await
        .expect("the work tool answers");
    result
        .structured_content
        .expect("a work tool answers with structured content")
}

/// A 2026-07-28 server played by hand whose first `tools/call` answer asks the client
/// for one input, `method` with `params` as given (what a `Server` would refuse to
/// send) under the key `ask`, and whose later ones complete; its `server/discover`
/// offers tools. Returns the client connected to
/// it with `client`, and its recorded wire.
pub async fn input_asking_server(
    connector: &Connector,
    client: ClientBuilder,
    method: &'static str,
    params: Value,
) -> (Client, Recording) {
    let first = json!({
        "resultType": "input_required",
        "inputRequests": {"ask": {"method": method, "params": params}}
    });
    input_required_server(connector, client, first).await
}

/// A 2026-07-28 server played by hand whose first `tools/call` answer is `first` (an
/// `input_required` result written out), and whose later ones complete; its
/// `server/discover` offers tools. Returns the client connected to it with `client`,
/// and its recorded wire.
pub async fn input_required_server(
    connector: &Connector,
    client: ClientBuilder,
    first: Value,
) -> (Client, Recording) {
    // The first call asks; a retry (carrying the answer) completes.
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let answer = move |asked: &str| match asked {
        "server/discover" => discovered("asker", json!({"tools": {}})),
        "tools/call" if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 => {
            first.clone()
        }
        "tools/call" => json!({"resultType": "complete", "content": []}),
        other => json!({"resultType": "complete", "unexpected": other}),
    };
    let transport = scripted_server(connector, answer).await;
    connect_discovering(transport, client).await
}

/// What a 2026-07-28 server played by hand answers `server/discover` with: that
/// revision alone, uncached, its `capabilities`, and `name` 1.0.0 as its info.
pub fn discovered(name: &str, capabilities: Value) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "ttlMs": 0,
        "cacheScope": "private",
        "capabilities": capabilities,
        "_meta": {Meta::SERVER_INFO: {"name": name, "version": "1.0.0"}}
    })
}

/// Connects `client` in the 2026-07-28 way (`server/discover`) over `transport`, a
/// server played by hand, recording its wire.
pub async fn connect_discovering(
    transport: BoxTransport,
    client: ClientBuilder,
) -> (Client, Recording) {
    connect_recorded(transport, client.mode(ConnectMode::Discover)).await
}

/// Connects `client`, in the mode it was built with, over `transport`, recording its
/// wire.
pub async fn connect_recorded(
    transport: BoxTransport,
    client: ClientBuilder,
) -> (Client, Recording) {
    let (transport, wire) = record(transport);
    let client = within("the client to connect", client.connect(transport))
        .await
        .expect("the client connects");
    (client, wire)
}

/// The first piece of 2026-07-28 wire vocabulary in `text` (a frame or a header name),
/// if any: what a session of an earlier revision must never carry.
pub fn modern_vocabulary(text: &str) -> Option<&'static str> {
    const MODERN: [&str; 9] = [
        "\"resultType\"",
        "\"ttlMs\"",
        "\"cacheScope\"",
        "io.modelcontextprotocol/",
        "2026-07-28",
        "server/discover",
        "mcp-method",
        "mcp-name",
        "mcp-param-",
    ];
    let lower = text.to_ascii_lowercase();
    MODERN
        .into_iter()
        .find(|word| lower.contains(&word.to_ascii_lowercase()))
}

/// A client-side transport to `server` (built to speak both eras) in this cell, with
/// no client behaviour chosen yet: over a transport pair where the cell has one,
/// else (streamable HTTP in 2026-07-28) an endpoint serving both eras, returned too so
/// the caller can look at what it saw.
pub async fn both_eras(
    connector: &Connector,
    server: &Server,
) -> (BoxTransport, Option<crate::http_support::Hosted>) {
    if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        server.serve(server_side);
        return (client_side, None);
    }
    let config = modelctx::http::StreamableHttpServerConfig::default();
    let hosted = crate::http_support::host(server.clone(), config).await;
    let (transport, _) = hosted.transport();
    (modelctx::transport::boxed(transport), Some(hosted))
}

/// How a hand-played server answers one request: the messages to send back, in order
/// and related to the request, then, if given, a future after which it closes (the
/// connection, or over session-less HTTP the request's own stream) instead of going on.
pub type Script = std::sync::Arc<
    dyn Fn(
            modelctx::types::JsonRpcRequest,
        ) -> futures::future::BoxFuture<'static, (Vec<JsonRpcMessage>, Option<Close>)>
        + Send
        + Sync,
>;

/// What a [`Script`] waits for before it closes.
pub type Close = futures::future::BoxFuture<'static, ()>;

/// A server played by hand, answering each request on a task of its own with `script`.
/// Returns the client's side.
pub async fn raw_server(connector: &Connector, script: Script) -> BoxTransport {
    fn serve((sink, mut stream): BoxTransport, script: Script) {
        let sink: std::sync::Arc<dyn MessageSink> = std::sync::Arc::from(sink);
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.recv().await {
                let JsonRpcMessage::Request(request) = m.message else {
                    continue;
                };
                let (sink, script) = (sink.clone(), script.clone());
                tokio::spawn(async move {
                    let id = request.id.clone();
                    let (messages, close) = script(request).await;
                    for message in messages {
                        let message = TransportMessage::new(message).related_to(Some(id.clone()));
                        if sink.send(message).await.is_err() {
                            return;
                        }
                    }
                    if let Some(close) = close {
                        close.await;
                        sink.close().await;
                    }
                });
            }
        });
    }
    if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        serve(server_side, script);
        return client_side;
    }
    if connector.cell().shares_sessions() {
        return connector
            .serve_shared_http(move |transport| {
                let (sink, stream) = transport.split();
                serve((Box::new(sink), Box::new(stream)), script.clone());
            })
            .await
            .transport;
    }
    connector
        .serve_stateless_http(move |transport| {
            let (sink, stream) = transport.split();
            serve((Box::new(sink), Box::new(stream)), script.clone());
        })
        .await
}

/// Serves `servers` at `endpoint`'s `/mcp` (the next of them for each instance) behind
/// a stand-in for an authentication layer: the `x-user` header names the caller
/// ([`modelctx_test::task_isolation::as_user`]). Returns the endpoint's URL.
pub async fn serve_as_users(endpoint: &mut crate::HttpEndpoint, servers: Vec<Server>) -> String {
    use modelctx::http::{StreamableHttpServerConfig, StreamableHttpService};
    let url = format!("{}/mcp", endpoint.origin());
    let next = std::sync::atomic::AtomicUsize::new(0);
    endpoint
        .serve(StreamableHttpServerConfig::default(), move |config| {
            let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let server = servers[at % servers.len()].clone();
            let service = StreamableHttpService::with_config(config, move |transport| {
                server.serve(transport);
            });
            let router = service.router().layer(axum::middleware::from_fn(
                modelctx_test::task_isolation::as_user,
            ));
            axum::Router::new().nest_service("/mcp", router)
        })
        .await;
    url
}

/// Connects `client` to `url` (served by [`serve_as_users`]) as `user`.
pub async fn connect_as(url: &str, user: &'static str, client: ClientBuilder) -> Client {
    let transport = modelctx::http::StreamableHttpClientTransport::builder(url)
        .header(
            axum::http::HeaderName::from_static("x-user"),
            axum::http::HeaderValue::from_static(user),
        )
        .build()
        .unwrap();
    within("connecting", client.connect(transport))
        .await
        .unwrap()
}
