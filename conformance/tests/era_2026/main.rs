//! The 2026-07-28 era end to end with modelctx on both sides (both behind their unstable
//! switches until the era is complete): the client finds the era with `server/discover`
//! and serves the server's input requests from the same callbacks it uses in a session.
//! These tests join the manifest's 2026-07-28 cells when the SDK declares them.

use std::time::Duration;

use modelctx::client::{Client, FormAnswer};
use modelctx::server::{Context, Server, ToolDef};
use modelctx::types::{CallToolResult, ElicitValue, RequestedSchema, Tool};
use modelctx_conformance::assert_next_change;
use modelctx_test::{ask_for_name, within};
use serde_json::json;

mod per_post;

use modelctx_conformance::support::server_with_tool;
use per_post::{answer_of, era_post};

/// A server whose tool asks for a name; `stateless`: it also serves 2026-07-28.
fn greeter(stateless: bool) -> Server {
    let tool = Tool::new(
        "greet",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let greet = ToolDef::with_schema(tool, |_args, cx: Context| async move {
        let name = ask_for_name(&cx).await?;
        Ok::<_, String>(CallToolResult::text(format!("Hello, {name}!")))
    });
    Server::builder("greeter", "1.0.0")
        .tool(greet)
        .unwrap()
        .stateless_era(stateless)
        .build()
}

fn era_client(pinned: bool) -> modelctx::client::ClientBuilder {
    Client::builder("era-client", "1.0.0")
        .form_elicitation(|form, _cx| async move {
            let mut answer = form.prefilled;
            answer.insert("name".to_owned(), ElicitValue::String("Ada".to_owned()));
            Ok(FormAnswer::Accept(answer))
        })
        .mode(if pinned {
            modelctx::client::ConnectMode::Discover
        } else {
            modelctx::client::ConnectMode::Auto
        })
}

/// Bounds every wait of these tests.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// Serves `server` on an in-memory pair and connects `client` to it; the session lives
/// as long as the returned handle.
async fn connect_in_memory(
    server: &Server,
    client: modelctx::client::ClientBuilder,
) -> (Client, modelctx::server::ServerSession) {
    let (client_side, server_side) = modelctx::memory::pair();
    let session = server.serve(server_side);
    let client = waited("connect", client.connect(client_side))
        .await
        .unwrap();
    (client, session)
}

/// Connects `client` to the endpoint at `url` over streamable HTTP.
async fn connect_http(url: &str, client: modelctx::client::ClientBuilder) -> Client {
    let transport = modelctx::http::StreamableHttpClientTransport::new(url).unwrap();
    waited("connect", client.connect(transport)).await.unwrap()
}

/// Awaits `future` for at most [`WAIT`]; `what` names it should it not finish in time.
async fn waited<F: std::future::Future>(what: &str, future: F) -> F::Output {
    within(WAIT, what, future).await
}

/// Calls `greet` and checks the greeting the server answers with.
async fn greets(client: &Client) {
    let result = waited(
        "tools/call",
        client.call_tool("greet", serde_json::Map::new()),
    )
    .await
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("Hello, Ada!"));
}

#[tokio::test]
async fn a_client_that_speaks_both_eras_finds_the_stateless_one_and_answers_input_requests() {
    let (client, _session) = connect_in_memory(&greeter(true), era_client(false)).await;
    assert_eq!(client.protocol_version().as_str(), "2026-07-28");
    assert_eq!(client.server_info().name, "greeter");
    let tools = waited("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(tools[0].name, "greet");
    greets(&client).await;
    waited("ping", client.ping()).await.unwrap();
}

#[tokio::test]
async fn against_a_handshake_only_server_it_falls_back_unless_pinned() {
    let (client, _session) = connect_in_memory(&greeter(false), era_client(false)).await;
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    greets(&client).await;

    let (client_side, server_side) = modelctx::memory::pair();
    let _session = greeter(false).serve(server_side);
    assert!(
        waited("connect", era_client(true).connect(client_side))
            .await
            .is_err()
    );
}

/// One endpoint serving both eras with `server`, on a loopback port.
async fn http_endpoint(server: Server) -> String {
    use modelctx::http::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default();
    let service = StreamableHttpService::with_config(config, move |transport| {
        server.serve_with(transport, modelctx::session::SessionConfig::server());
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending()));
    url
}

#[tokio::test]
async fn over_http_the_stateless_era_needs_no_session_and_input_comes_in_rounds() {
    let url = http_endpoint(greeter(true)).await;
    let client = connect_http(&url, era_client(true)).await;
    assert_eq!(client.protocol_version().as_str(), "2026-07-28");
    greets(&client).await;
    // A refusal sent with an HTTP error status (400 here) comes back as the JSON-RPC
    // error in its body.
    let error = waited(
        "an unknown tool",
        client.call_tool("nope", serde_json::Map::new()),
    )
    .await
    .unwrap_err();
    let error = error.protocol_error().expect("the server's JSON-RPC error");
    assert_eq!(error.code, modelctx::types::ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("nope"), "{}", error.message);

    // The same endpoint still serves a handshake client.
    let transport = modelctx::http::StreamableHttpClientTransport::new(&url).unwrap();
    let old = waited(
        "connect (2025)",
        Client::builder("old", "1.0.0")
            .mode(modelctx::client::ConnectMode::Handshake)
            .form_elicitation(|form, _cx| async move { Ok(FormAnswer::Accept(form.prefilled)) })
            .connect(transport),
    )
    .await
    .unwrap();
    assert_eq!(old.protocol_version().as_str(), "2025-11-25");
}

/// Sends on its channel when dropped.
struct OnDrop(Option<tokio::sync::mpsc::UnboundedSender<()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// A server whose tool `wait` runs until cancelled: `started` hears when it starts,
/// `stopped` when its handler is dropped (a cancelled handler is stopped, not resumed).
fn waiting_server() -> (
    Server,
    tokio::sync::mpsc::UnboundedReceiver<()>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel();
    let (stopped_tx, stopped) = tokio::sync::mpsc::unbounded_channel();
    let tool = Tool::new(
        "wait",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let wait = ToolDef::with_schema(tool, move |_args, cx: Context| {
        let started = started_tx.clone();
        let stopped = stopped_tx.clone();
        async move {
            let _signal = OnDrop(Some(stopped));
            let _ = started.send(());
            cx.cancellation().cancelled().await;
            Ok::<_, String>(CallToolResult::text("cancelled"))
        }
    });
    let server = server_with_tool("waiter", wait);
    (server, started, stopped)
}

#[tokio::test]
async fn abandoning_a_call_cancels_its_handler_in_the_stateless_era() {
    let (server, mut started, mut stopped) = waiting_server();
    let (client, _session) = connect_in_memory(&server, era_client(true)).await;
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("wait", serde_json::Map::new()).await })
    };
    waited("the handler to start", started.recv())
        .await
        .unwrap();
    // The caller gives up: its request is dropped, which sends notifications/cancelled.
    call.abort();
    waited("the handler to see the cancellation", stopped.recv())
        .await
        .unwrap();
}

#[tokio::test]
async fn closing_the_response_stream_cancels_the_request_over_http() {
    let (server, mut started, mut stopped) = waiting_server();
    let url = http_endpoint(server).await;

    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "wait", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let response = waited(
        "the response head",
        reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "wait")
            .body(body.to_string())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    waited("the handler to start", started.recv())
        .await
        .unwrap();
    drop(response);
    waited("the handler to be stopped", stopped.recv())
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_server_that_ignores_the_probe_gets_the_handshake_after_a_bounded_wait() {
    use modelctx::transport::{MessageSink, MessageStream, Transport, TransportMessage};
    use modelctx::types::{JsonRpcMessage, JsonRpcResultResponse, to_raw};
    let (client_side, server_side) = modelctx::memory::pair();
    // A server of the handshake era that says nothing to requests before `initialize`.
    tokio::spawn(async move {
        let (sink, mut stream) = server_side.split();
        while let Some(Ok(m)) = stream.recv().await {
            if let JsonRpcMessage::Request(r) = m.message
                && r.method == "initialize"
            {
                let result = to_raw(&json!({
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "quiet", "version": "1"}}))
                .unwrap();
                let reply = JsonRpcResultResponse::new(r.id, result);
                let _ = sink.send(TransportMessage::new(reply.into())).await;
            }
        }
    });
    // Paused time: the probe's bounded wait passes as soon as everything is idle.
    let client = era_client(false).connect(client_side).await.unwrap();
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    assert_eq!(client.server_info().name, "quiet");
}

/// A server whose tool list changes while a subscription listens.
fn listed_server() -> Server {
    Server::builder("lists", "1.0.0")
        .enable_tools()
        .enable_prompts()
        .build()
}

fn extra_tool(name: &str) -> ToolDef {
    let tool = Tool::new(name, json!({"type": "object"}).as_object().unwrap().clone());
    ToolDef::with_schema(tool, |_args, _cx: Context| async move {
        Ok::<_, String>(CallToolResult::text("extra"))
    })
}

async fn listen_for_tool_changes(client: &Client, server: &Server) {
    use modelctx::types::{ServerNotification, SubscriptionFilter};
    let tools = SubscriptionFilter::new().with_tools_list_changed(true);
    let prompts = SubscriptionFilter::new().with_prompts_list_changed(true);
    let (tools, prompts) = waited(
        "the acknowledgements",
        futures::future::join(client.subscribe(tools), client.subscribe(prompts)),
    )
    .await;
    let (mut tools, mut prompts) = (tools.unwrap(), prompts.unwrap());
    assert_eq!(tools.honored().tools_list_changed, Some(true));
    assert_eq!(prompts.honored().prompts_list_changed, Some(true));
    server.add_tool(extra_tool("extra")).unwrap();
    assert_next_change!(
        "the change",
        tools.next(),
        ServerNotification::ToolListChanged(_)
    );
    // The prompt subscription hears nothing of tools: a prompt change is next for it.
    server
        .add_prompt(modelctx::server::PromptDef::new(
            "extra_prompt",
            |_: modelctx::server::NoArgs, _cx| async {
                Ok::<_, String>(modelctx::types::PromptMessage::user_text("hi"))
            },
        ))
        .unwrap();
    assert_next_change!(
        "the prompt change",
        prompts.next(),
        ServerNotification::PromptListChanged(_)
    );
    tools.close();
    prompts.close();
}

#[tokio::test]
async fn subscriptions_deliver_the_changes_they_asked_for() {
    let server = listed_server();
    let (client, _session) = connect_in_memory(&server, era_client(true)).await;
    listen_for_tool_changes(&client, &server).await;
}

#[tokio::test]
async fn subscriptions_deliver_the_changes_they_asked_for_over_http() {
    let server = listed_server();
    let url = http_endpoint(server.clone()).await;
    let client = connect_http(&url, era_client(true)).await;
    listen_for_tool_changes(&client, &server).await;
}

#[tokio::test(start_paused = true)]
async fn a_list_is_served_from_the_cache_until_its_ttl_runs_out() {
    use modelctx::types::{ListToolsRequest, ListToolsResult};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let asked = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let server = Server::builder("cached", "1.0.0")
        .request_handler::<ListToolsRequest, _, _>(move |_params, _cx: Context| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                let mut result = ListToolsResult::new(vec![Tool::new(
                    "t",
                    json!({"type": "object"}).as_object().unwrap().clone(),
                )]);
                result.ttl_ms = Some(60_000);
                Ok(result)
            }
        })
        .build();
    let (client_side, server_side) = modelctx::memory::pair();
    let _session = server.serve(server_side);
    let client = era_client(true).connect(client_side).await.unwrap();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 1);
    assert_eq!(client.list_all_tools().await.unwrap().len(), 1);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the second listing is cached"
    );
    tokio::time::advance(std::time::Duration::from_secs(61)).await;
    client.list_all_tools().await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 2, "stale after ttlMs");
    client.unstable_clear_cache();
    client.list_all_tools().await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 3, "the cache can be bypassed");
}

#[tokio::test]
async fn a_caller_can_answer_input_requests_itself_round_by_round() {
    use modelctx::client::Round;
    use modelctx::types::{
        CallToolRequest, CallToolRequestParams, ElicitResult, InputRequest, InputResponse,
    };
    // Declares form elicitation, but answers it by hand rather than from a callback.
    let (client, _session) = connect_in_memory(&greeter(true), era_client(true)).await;
    let mut params = CallToolRequestParams::new("greet");
    let asked = match waited(
        "the first round",
        client.request_round::<CallToolRequest>(params.clone(), Default::default()),
    )
    .await
    .unwrap()
    {
        Round::InputRequired(asked) => asked,
        other => panic!("expected a request for input, got {other:?}"),
    };
    let requests = asked.input_requests.clone().unwrap();
    let (key, request) = requests.iter().next().unwrap();
    assert!(matches!(request, InputRequest::Elicit(_)), "{request:?}");
    // The answer, with the state echoed: the same call completes.
    let mut content = std::collections::BTreeMap::new();
    content.insert("name".to_owned(), ElicitValue::String("Grace".to_owned()));
    let answer = InputResponse::from(ElicitResult::accept(content));
    params.input_responses = Some([(key.clone(), answer)].into_iter().collect());
    params.request_state = asked.request_state.clone();
    let done = waited(
        "the second round",
        client.request_round::<CallToolRequest>(params, Default::default()),
    )
    .await
    .unwrap();
    match done {
        Round::Complete(result) => assert_eq!(result.content[0].as_text(), Some("Hello, Grace!")),
        other => panic!("{other:?}"),
    }
}

/// A server whose `long` tool becomes a task (it outlasts its window) and asks for a
/// name from inside it, then answers after a gate opens.
fn task_server(gate: tokio::sync::watch::Receiver<bool>) -> Server {
    let long = ToolDef::new("long", move |_: modelctx::server::NoArgs, cx: Context| {
        let mut gate = gate.clone();
        async move {
            let schema: RequestedSchema = serde_json::from_value(json!({
                "type": "object", "properties": {"name": {"type": "string"}}
            }))
            .unwrap();
            let answer = cx
                .elicit_form_schema("Who is asking?", schema)
                .await
                .map_err(|e| e.to_string())?;
            let _ = gate.wait_for(|open| *open).await;
            let name = answer
                .accepted()
                .and_then(|form| form.get("name").cloned())
                .map(|v| serde_json::to_value(v).unwrap());
            Ok::<_, String>(format!("done for {}", name.unwrap_or_default()))
        }
    })
    .task_support(modelctx::types::TaskSupport::Optional)
    .task_window(Duration::ZERO);
    Server::builder("tasks", "1.0.0")
        .tasks(modelctx::server::TaskConfig::new().poll_interval(Duration::from_millis(10)))
        .tool(long)
        .unwrap()
        .build()
}

#[tokio::test]
async fn a_call_the_server_makes_a_task_of_is_followed_to_its_result() {
    let (open, gate) = tokio::sync::watch::channel(false);
    let (client_side, server_side) = modelctx::memory::pair();
    let _session = task_server(gate).serve(server_side);
    let client = era_client(true)
        .tasks(modelctx::server::TaskConfig::new())
        .connect(client_side)
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_str(), "2026-07-28");
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("long", serde_json::Map::new()).await }
    });
    // The task asked for the name through its inputRequests, the client's form
    // callback answered through tasks/update; the result comes once the gate opens.
    open.send_replace(true);
    let result: CallToolResult = waited("the task's result", call).await.unwrap().unwrap();
    assert_eq!(result.content[0].as_text(), Some("done for \"Ada\""));
    // Asking for a task is the 2025 way, refused in this era.
    let refused = client
        .call_tool_as_task(
            modelctx::types::CallToolRequestParams::new("long"),
            modelctx::types::TaskMetadata::new(),
        )
        .await
        .unwrap_err();
    assert!(refused.is_refused());
}

#[tokio::test]
async fn without_the_extension_the_same_call_runs_plainly() {
    let (open, gate) = tokio::sync::watch::channel(true);
    let (client_side, server_side) = modelctx::memory::pair();
    let _session = task_server(gate).serve(server_side);
    let client = era_client(true).connect(client_side).await.unwrap();
    let result = waited("the call", client.call_tool("long", serde_json::Map::new()))
        .await
        .unwrap();
    assert!(!result.is_error(), "{result:?}");
    drop(open);
}

/// `Client::watch` in either era: the same filter, the same stream of changes — a
/// `subscriptions/listen` stream in 2026-07-28, the server's own announcements and
/// `resources/subscribe` in the handshake era.
async fn watch_in(legacy: bool) {
    use modelctx::server::ResourceDef;
    use modelctx::types::{ServerNotification, SubscriptionFilter};
    let server = Server::builder("watched", "1.0.0")
        .enable_tools()
        .resource(ResourceDef::new("file:///a.txt", "a", |_cx| async {
            Ok::<_, String>("a")
        }))
        .unwrap()
        .build();
    let client = era_client(true).mode(if legacy {
        modelctx::client::ConnectMode::Handshake
    } else {
        modelctx::client::ConnectMode::Discover
    });
    let (client, _session) = connect_in_memory(&server, client).await;
    let filter = SubscriptionFilter::new()
        .with_tools_list_changed(true)
        .with_resource_subscriptions(vec!["file:///a.txt".to_owned()]);
    let mut watch = waited("the watch", client.watch(filter)).await.unwrap();
    assert_eq!(watch.honored().tools_list_changed, Some(true));
    assert_eq!(
        watch.honored().resource_subscriptions.as_deref(),
        Some(&["file:///a.txt".to_owned()][..])
    );
    server.notify_resource_updated("file:///a.txt").await;
    assert_next_change!("the update", watch.next(), ServerNotification::ResourceUpdated(n) if n.params.uri == "file:///a.txt");
    server.add_tool(extra_tool("late")).unwrap();
    assert_next_change!(
        "the list change",
        watch.next(),
        ServerNotification::ToolListChanged(_)
    );
}

#[tokio::test]
async fn a_watch_is_the_same_in_the_handshake_era() {
    watch_in(true).await;
}

#[tokio::test]
async fn a_watch_is_the_same_in_the_stateless_era() {
    watch_in(false).await;
}

/// A server whose `tools/call` handler (typed, low level) answers with the name and the
/// `_meta` its params arrived with, as JSON text.
fn meta_echo_server() -> Server {
    use modelctx::types::CallToolRequest;
    Server::builder("meta-echo", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|params, _cx: Context| async move {
            let meta = serde_json::to_value(&params.meta).unwrap();
            let echoed = json!({"name": params.name, "meta": meta, "arguments": params.arguments});
            Ok(CallToolResult::text(echoed.to_string()))
        })
        .stateless_era(true)
        .build()
}

/// POSTs `body` as a 2026-07-28 `tools/call` of `echo` (headers as the era wants them):
/// the answer's status and JSON body.
async fn post_call(http: &reqwest::Client, url: &str, body: String) -> (u16, serde_json::Value) {
    answer_of(era_post(http, url, ("tools/call", "echo"), body)).await
}

#[tokio::test]
async fn a_typed_handler_gets_the_meta_its_request_carries_wherever_it_stands() {
    let url = http_endpoint(meta_echo_server()).await;
    let http = reqwest::Client::new();
    let envelope = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}"#;
    let with_token = r#"{"progressToken":"p-1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let layouts = [
        format!(r#"{{"name":"echo","arguments":{{"a":1}},"_meta":{envelope}}}"#),
        format!(r#"{{"_meta":{envelope},"name":"echo","arguments":{{"a":1}}}}"#),
        format!(r#"{{"name":"echo", "_meta" : {envelope} ,"arguments":{{"a":1}}}}"#),
        format!(r#"{{"name":"echo","arguments":{{"a":1}},"_meta":{with_token}}}"#),
        format!(r#"{{"name":"echo","_meta":{with_token}}}"#),
    ];
    // Each layout twice: the second time the endpoint knows the `_meta` text already.
    for (n, params) in layouts.iter().chain(layouts.iter()).enumerate() {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{params}}}"#);
        let (status, answer) = post_call(&http, &url, body).await;
        assert_eq!(status, 200, "{params}: {answer}");
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text for {params}: {answer}"));
        let echoed: serde_json::Value = serde_json::from_str(text).unwrap();
        let sent: serde_json::Value = serde_json::from_str(params).unwrap();
        assert_eq!(echoed["name"], "echo", "{params}");
        assert_eq!(echoed["arguments"], sent["arguments"], "{params}");
        assert_eq!(echoed["meta"], sent["_meta"], "{params}");
    }
    // A body that is not JSON around a `_meta` the endpoint has read before is refused
    // as any other.
    for params in [
        format!(r#"{{"name":"echo","_meta":{envelope},}}}}"#),
        format!(r#"{{"name":"echo","_meta":{envelope}}}"#),
        format!(r#"{{"name":echo,"_meta":{envelope}}}}}"#),
    ] {
        let broken =
            format!(r#"{{"jsonrpc":"2.0","id":98,"method":"tools/call","params":{params}"#);
        let (status, answer) = post_call(&http, &url, broken.clone()).await;
        assert_eq!(status, 400, "{broken}");
        assert_eq!(answer["error"]["code"], -32700, "{broken}: {answer}");
    }
    // Params that do not decode get the decoder's refusal, as without a `_meta`.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{{"arguments":{{}},"_meta":{envelope}}}}}"#
    );
    let (_, answer) = post_call(&http, &url, body).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing field `name`")),
        "{answer}"
    );
}
