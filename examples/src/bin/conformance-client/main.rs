//! The client the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! tests: it does what each client scenario expects, through the client API.
//!
//! The suite runs `conformance-client <server URL>` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO` (and, for some, data in `MCP_CONFORMANCE_CONTEXT`);
//! `cargo xtask interop` drives it. The exit status is non-zero when the flow failed.
//!
//! - `initialize`: connect, list the tools (when the server has any), disconnect;
//! - `tools_call`: also call `add_numbers` with `{a: 5, b: 3}`;
//! - `elicitation-sep1034-client-defaults`: accept the server's form with its defaults
//!   (the client fills them in) while calling `test_client_elicitation_defaults`;
//! - `sse-retry`: call `test_reconnection`, whose SSE stream the server closes
//!   mid-call; the transport reconnects after the `retry` interval with `Last-Event-ID`;
//! - `json-schema-2020-12-preservation`: pass the `inputSchema` this client received for
//!   `json_schema_2020_12_tool` back, as parsed, to `json_schema_echo` — the suite checks
//!   that no JSON Schema 2020-12 keyword was lost on the way through the client types;
//! - `auth/*`: the same flow as below through an OAuth client (`modelctx-oauth`) as
//!   the transport's auth hook: authorization code (a headless "browser" follows the
//!   authorization endpoint's redirect and hands the redirect URL back), pre-registered
//!   credentials, client-ID metadata documents, dynamic registration, client
//!   credentials (`client_secret_basic`, `private_key_jwt`), JWT-bearer grants
//!   (workload identity; an enterprise ID-JAG from the IdP by token exchange) and
//!   DPoP, each as the scenario's `MCP_CONFORMANCE_CONTEXT` says;
//! - anything else: connect, list the tools and call the first one.
//!
//! With `--interop http <URL>` or `--interop stdio <program> [args...]` it drives
//! another SDK's server instead (`xtask/interop/ts-server.mjs` and `py-server.py`
//! in `cargo xtask interop`): tools with progress and logging, a resource, a prompt, completion, and
//! tools that ask this client for sampling and elicitation — asserting on each result.
//! `--interop sse <URL>` drives it over the legacy HTTP+SSE transport (2024-11-05,
//! `SseClientTransport`, the URL of the event stream), and `--interop fallback <URL>`
//! through `FallbackClientTransport` pointed at a server that speaks only the legacy
//! transport: streamable HTTP is refused, and the leg fails unless the transport
//! reports the legacy one active once connected.
//! `--interop --era 2026-07-28 ...` speaks only protocol 2026-07-28 (the stateless era,
//! still behind its unstable switch): the server's input requests come back in rounds;
//! `--interop --era 2025-11-25 ...` only the `initialize` handshake (no
//! `server/discover` probe first, which is the default).
//! `--interop --tasks ...` runs the tasks flow of protocol 2025-11-25 instead: a
//! task-augmented call of the server's `wait_for_gate` tool polled with `tasks/get`
//! from `working` to `completed` (its gate opened by a call of `open_gate`), its result
//! from `tasks/result` (and `notifications/tasks/status` reporting the completion), a
//! second one cancelled, a task of `side_channel_task` whose elicitation travels inside
//! `tasks/result`, and all of them in `tasks/list`.
//! `--interop [--era ERA] --skills DIR (http <URL> | stdio <program> [args...])` checks
//! another SDK's skills server (SEP-2640) instead, expecting the skills below DIR (see
//! `skills.rs`).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use modelctx::client::{Client, ConnectMode, FormAnswer, SamplingSupport, ToolResultExt};
use modelctx::http::StreamableHttpClientTransport;
use modelctx::session::RequestOptions;
use modelctx::sse::{ActiveTransport, FallbackClientTransport, SseClientTransport};
use modelctx::stdio::{ChildProcess, Stderr};
use modelctx::transport::Transport;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CreateMessageResult, ElicitValue,
    ErrorCode, JsonObject, LoggingLevel, LoggingMessageNotification, PromptReference,
    RelatedTaskMetadata, SamplingMessageContentBlock, Task, TaskMetadata, TaskStatus,
    TaskStatusNotification, TaskSupport, TextOrBlobResourceContents,
};
use modelctx_oauth::{
    AuthorizationHandler, AuthorizationResponse, ClientRegistration, IdJagExchange, OAuthClient,
    OAuthError, SigningKey,
};
use serde_json::json;

mod skills;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn arguments(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

/// Reports a tool's result; an `isError` result fails the flow.
fn check(name: &str, result: &CallToolResult) -> Result<(), Error> {
    let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
    eprintln!("{name} -> {}", text.join(" "));
    if result.is_error == Some(true) {
        return Err(format!("{name} failed: {}", text.join(" ")).into());
    }
    Ok(())
}

async fn run(scenario: &str, url: &str) -> Result<(), Error> {
    let oauth = if scenario.starts_with("auth/") {
        Some(oauth_client(scenario, url)?)
    } else {
        None
    };
    let outcome = run_with(scenario, url, oauth.clone()).await;
    if let (Err(_), Some(oauth)) = (&outcome, &oauth)
        && let Some(e) = oauth.last_error()
    {
        eprintln!("OAuth: {e}");
    }
    outcome
}

/// The client-ID metadata document URL the suite expects (`auth/basic-cimd`).
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The scenario's `MCP_CONFORMANCE_CONTEXT` string `name`.
fn context_str(name: &str) -> Option<String> {
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").ok()?;
    let context: serde_json::Value = serde_json::from_str(&context).ok()?;
    context[name].as_str().map(str::to_owned)
}

fn required(name: &str) -> Result<String, Error> {
    context_str(name).ok_or_else(|| format!("MCP_CONFORMANCE_CONTEXT has no {name}").into())
}

/// The OAuth client for an `auth/*` scenario.
fn oauth_client(scenario: &str, url: &str) -> Result<OAuthClient, Error> {
    let builder = OAuthClient::builder(url).client_name("modelctx-conformance-client", None);
    let builder = match scenario {
        "auth/client-credentials-basic" => builder.client_credentials().client(
            ClientRegistration::new(required("client_id")?).with_secret(required("client_secret")?),
        ),
        "auth/client-credentials-jwt" => builder
            .client_credentials()
            .client(
                ClientRegistration::new(required("client_id")?).with_auth_method("private_key_jwt"),
            )
            .client_key(SigningKey::from_pkcs8_pem(&required("private_key_pem")?)?),
        "auth/wif-jwt-bearer" => {
            let jwt = required("valid_jwt")?;
            builder
                .jwt_bearer(move |_request| {
                    let jwt = jwt.clone();
                    async move { Ok(jwt) }
                })
                .client(ClientRegistration::new(required("client_id")?))
        }
        "auth/enterprise-managed-authorization" => builder
            .jwt_bearer(IdJagExchange::new(
                &required("idp_token_endpoint")?,
                ClientRegistration::new(required("idp_client_id")?),
                required("idp_id_token")?,
            )?)
            .client(
                ClientRegistration::new(required("client_id")?)
                    .with_secret(required("client_secret")?),
            ),
        _ => {
            let mut builder = builder
                .authorization_code(HeadlessBrowser::new()?)
                .client_metadata_document(CIMD_URL)
                .dpop(scenario.starts_with("auth/dpop"));
            if let (Some(id), Some(secret), Some(issuer)) = (
                context_str("client_id"),
                context_str("client_secret"),
                context_str("issuer"),
            ) {
                builder =
                    builder.pre_registered(issuer, ClientRegistration::new(id).with_secret(secret));
            }
            builder
        }
    };
    Ok(builder.build()?)
}

/// The user's browser, headless: it opens the authorization URL, and instead of
/// following the authorization server's redirect to the client, hands it back.
#[derive(Debug)]
struct HeadlessBrowser {
    http: reqwest::Client,
}

impl HeadlessBrowser {
    fn new() -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { http })
    }
}

impl AuthorizationHandler for HeadlessBrowser {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:8976/callback".to_owned()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            let fail =
                |e: String| OAuthError::application(format!("the authorization endpoint: {e}"));
            let response = self
                .http
                .get(authorization_url)
                .send()
                .await
                .map_err(|e| fail(e.to_string()))?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| fail(format!("no redirect (HTTP {})", response.status())))?;
            AuthorizationResponse::from_redirect_url(location)
        })
    }
}

async fn run_with(scenario: &str, url: &str, oauth: Option<OAuthClient>) -> Result<(), Error> {
    let mut transport = StreamableHttpClientTransport::builder(url);
    if let Some(oauth) = oauth {
        transport = transport.auth(oauth);
    }
    let transport = transport.build()?;
    // Both eras: `server/discover` first, the handshake when the server does not offer
    // 2026-07-28 (the era is still behind its unstable switch).
    let mut builder = Client::builder("modelctx-conformance-client", "1.0.0")
        .mode(modelctx::client::ConnectMode::Auto);
    if scenario == "sep-2322-client-request-state" {
        // Confirms whatever the server asks to confirm (the scenario's input requests).
        builder = builder
            .form_elicitation(|form, _cx| async move { Ok(FormAnswer::Accept(form.prefilled)) });
    }
    if scenario == "elicitation-sep1034-client-defaults" {
        // Accept with the form's defaults: `prefilled` holds every default the schema
        // gives, which is what the scenario checks arrives.
        builder = builder
            .form_elicitation(|form, _cx| async move { Ok(FormAnswer::Accept(form.prefilled)) });
    }
    let client = builder.connect(transport).await?;
    eprintln!(
        "connected to {} (protocol {})",
        client.server_info().name,
        client.protocol_version()
    );
    // The `initialize` scenario's server advertises no capability at all.
    let tools = if client.server_capabilities().tools.is_some() {
        client.list_all_tools().await?
    } else {
        Vec::new()
    };
    let outcome = match scenario {
        "initialize" => Ok(()),
        "tools_call" => {
            let result = client
                .call_tool("add_numbers", arguments(json!({"a": 5, "b": 3})))
                .await?;
            check("add_numbers", &result)
        }
        "elicitation-sep1034-client-defaults" => {
            let result = client
                .call_tool("test_client_elicitation_defaults", JsonObject::new())
                .await?;
            check("test_client_elicitation_defaults", &result)
        }
        "sse-retry" => {
            let result = client
                .call_tool("test_reconnection", JsonObject::new())
                .await?;
            check("test_reconnection", &result)
        }
        "json-schema-2020-12-preservation" => {
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or("the server lists no json_schema_2020_12_tool")?;
            let schema = serde_json::Value::Object(focal.input_schema.clone());
            let result = client
                .call_tool("json_schema_echo", arguments(json!({ "schema": schema })))
                .await?;
            check("json_schema_echo", &result)
        }
        "sep-2322-client-request-state" => {
            // Every tool of the scenario, in order: input answered in rounds, the state
            // echoed, an unrelated call in between carrying neither.
            for tool in &tools {
                let result = client.call_tool(&tool.name, JsonObject::new()).await?;
                check(&tool.name, &result)?;
            }
            Ok(())
        }
        other if !context_tool_calls().is_empty() => {
            // The scenario says which calls to make (`MCP_CONFORMANCE_CONTEXT`).
            eprintln!("scenario {other:?}: the tool calls its context lists");
            for (name, arguments) in context_tool_calls() {
                let result = client.call_tool(&name, arguments).await?;
                check(&name, &result)?;
            }
            Ok(())
        }
        other => {
            eprintln!("scenario {other:?}: connect, list and call the first tool");
            match tools.first() {
                Some(tool) => {
                    let result = client.call_tool(&tool.name, JsonObject::new()).await?;
                    check(&tool.name, &result)
                }
                None => Ok(()),
            }
        }
    };
    client.close().await;
    outcome
}

/// The `toolCalls` of the scenario's `MCP_CONFORMANCE_CONTEXT`, if it has any.
fn context_tool_calls() -> Vec<(String, JsonObject)> {
    let Some(context) = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok())
    else {
        return Vec::new();
    };
    context["toolCalls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .filter_map(|call| {
                    let name = call["name"].as_str()?.to_owned();
                    let arguments = call["arguments"].as_object().cloned().unwrap_or_default();
                    Some((name, arguments))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Fails the flow with `what` unless `ok`.
fn ensure(ok: bool, what: impl std::fmt::Display) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(what.to_string().into())
    }
}

/// Drives another SDK's interop server (see the module docs) over `transport`;
/// `connected` checks the transport once the client is connected.
async fn interop<T: Transport>(
    transport: T,
    mode: ConnectMode,
    connected: impl FnOnce() -> Result<(), Error>,
) -> Result<(), Error> {
    let (logs_tx, mut logs) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder("modelctx-interop-client", "1.0.0")
        .mode(mode)
        .sampling(SamplingSupport::new(), |params, _cx| async move {
            let question: String = params
                .messages
                .iter()
                .flat_map(|m| m.content.blocks())
                .filter_map(|b| match b {
                    SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            Ok(CreateMessageResult::assistant_text(
                format!("echo: {question}"),
                "modelctx-test-model",
            ))
        })
        .form_elicitation(|form, _cx| async move {
            let mut answer = form.prefilled;
            answer.insert("name".into(), ElicitValue::String("Ada".into()));
            answer.insert("age".into(), ElicitValue::Integer(36));
            Ok(FormAnswer::Accept(answer))
        })
        .notification_handler::<LoggingMessageNotification, _, _>(move |message, _peer| {
            let _ = logs_tx.send(message.data);
            async {}
        })
        .connect(transport)
        .await?;
    // `cargo xtask interop` reads the era each leg negotiated from this line.
    println!("negotiated protocol version: {}", client.protocol_version());
    connected()?;
    let name = client.server_info().name.clone();
    let sdk = match name.as_str() {
        "ts-interop-server" | "ts2-interop-server" => "TypeScript",
        "py-interop-server" => "Python",
        other => return Err(format!("unknown interop server {other:?}").into()),
    };
    client.set_logging_level(LoggingLevel::Info).await?;

    let tools: Vec<String> = client
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    for expected in ["add", "ask_llm", "ask_user"] {
        ensure(
            tools.iter().any(|t| t == expected),
            format!("tool {expected} in {tools:?}"),
        )?;
    }

    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = progress.clone();
    let options = RequestOptions::new().on_progress(move |p| {
        seen.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.progress);
    });
    let params =
        CallToolRequestParams::new("add").with_arguments(arguments(json!({"a": 2, "b": 3})));
    let sum = client
        .request_with::<CallToolRequest>(params, options)
        .await?;
    ensure(sum.text() == "5", format!("add(2, 3) = {:?}", sum.text()))?;
    let progress = progress.lock().unwrap_or_else(|e| e.into_inner()).clone();
    ensure(progress == [1.0, 2.0], format!("progress {progress:?}"))?;
    let log = tokio::time::timeout(Duration::from_secs(5), logs.recv()).await;
    ensure(
        matches!(&log, Ok(Some(data)) if data == "adding 2 and 3"),
        format!("log message {log:?}"),
    )?;

    let about = client.read_resource("info://about").await?;
    let about = match about.contents.first() {
        Some(TextOrBlobResourceContents::Text(t)) => t.text.clone(),
        other => format!("{other:?}"),
    };
    ensure(
        about == format!("A {sdk} SDK server."),
        format!("info://about: {about:?}"),
    )?;

    let prompt = client
        .get_prompt(
            "greet",
            BTreeMap::from([("name".to_owned(), "Ada".to_owned())]),
        )
        .await?;
    let greeting = prompt.messages.first().and_then(|m| m.content.as_text());
    ensure(
        greeting == Some("Hello, Ada!"),
        format!("greet: {greeting:?}"),
    )?;

    let completion = client
        .complete(PromptReference::new("greet"), "name", "Al", BTreeMap::new())
        .await?;
    let values = completion.completion.values;
    ensure(
        values == ["Alan", "Alice"],
        format!("completion {values:?}"),
    )?;

    let llm = client
        .call_tool("ask_llm", arguments(json!({"question": "ping?"})))
        .await?;
    let llm = llm.text();
    ensure(
        llm == "LLM said: echo: ping? (model modelctx-test-model)",
        format!("ask_llm: {llm:?}"),
    )?;

    let user = client
        .call_tool("ask_user", arguments(json!({"message": "Who are you?"})))
        .await?;
    let user = user.text();
    let content = user
        .strip_prefix("accept: ")
        .and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok());
    ensure(
        content == Some(json!({"name": "Ada", "age": 36})),
        format!("ask_user: {user:?}"),
    )?;

    client.close().await;
    eprintln!("interop: every step against {name} passed");
    Ok(())
}

/// How long the tasks flow waits for any one thing the server does.
const TASK_WAIT: Duration = Duration::from_secs(20);

/// `f`, or an error naming `what` when it takes longer than [`TASK_WAIT`].
async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> Result<T, Error> {
    tokio::time::timeout(TASK_WAIT, f)
        .await
        .map_err(|_| format!("{what}: nothing within {TASK_WAIT:?}").into())
}

/// Whether `e` is the JSON-RPC error `-32602`.
fn is_invalid_params(e: &modelctx::session::SessionError) -> bool {
    e.protocol_error()
        .is_some_and(|e| e.code == ErrorCode::INVALID_PARAMS)
}

/// Drives the tasks of another SDK's interop server (protocol 2025-11-25; see the
/// module docs) over `transport`.
async fn interop_tasks<T: Transport>(transport: T) -> Result<(), Error> {
    let (told_tx, mut told) = tokio::sync::mpsc::unbounded_channel();
    // The related task of each elicitation the server sends.
    let (asked_tx, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder("modelctx-interop-client", "1.0.0")
        .form_elicitation(move |form, _cx| {
            let related = form
                .params
                .meta
                .as_ref()
                .and_then(RelatedTaskMetadata::from_meta);
            let _ = asked_tx.send(related.map(|r| r.task_id));
            async move {
                let mut answer = form.prefilled;
                answer.insert("name".into(), ElicitValue::String("Ada".into()));
                Ok(FormAnswer::Accept(answer))
            }
        })
        .notification_handler::<TaskStatusNotification, _, _>(move |params, _peer| {
            let _ = told_tx.send(params.task);
            async {}
        })
        .connect(transport)
        .await?;
    println!("negotiated protocol version: {}", client.protocol_version());
    let name = client.server_info().name.clone();
    ensure(
        name == "ts-interop-server",
        format!("unknown interop server {name:?}"),
    )?;
    let caps = client
        .server_capabilities()
        .tasks
        .clone()
        .unwrap_or_default();
    let tools_call = caps
        .requests
        .as_ref()
        .and_then(|r| r.tools.as_ref())
        .is_some_and(|t| t.call.is_some());
    ensure(
        caps.list.is_some() && caps.cancel.is_some() && tools_call,
        format!("tasks capability {caps:?}"),
    )?;
    let tools = client.list_all_tools().await?;
    let support = tools
        .iter()
        .find(|t| t.name == "wait_for_gate")
        .and_then(|t| t.execution.as_ref())
        .and_then(|e| e.task_support.clone());
    ensure(
        support == Some(TaskSupport::Optional),
        format!("wait_for_gate's taskSupport {support:?}"),
    )?;
    let gate = |name: &str| {
        CallToolRequestParams::new("wait_for_gate").with_arguments(arguments(json!({"gate": name})))
    };
    // Gates are the server process's: names of this run only.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let run = format!("{}-{run}", std::process::id());
    let (first, never) = (format!("first-{run}"), format!("never-{run}"));
    let first_opened = format!("gate {first} opened");

    // A task that completes: created working, still working when polled, completed once
    // its gate opens; `tasks/result`, asked for while it works, waits for the result.
    let handle = client
        .call_tool_as_task(gate(&first), TaskMetadata::new().with_ttl(60_000u64))
        .await?;
    let created = handle.created().clone();
    ensure(
        created.status == TaskStatus::Working
            && created.ttl == Some(60_000)
            && created.poll_interval == Some(100)
            && !created.task_id.is_empty()
            && !created.created_at.is_empty(),
        format!("created task {created:?}"),
    )?;
    let polled = handle.status().await?;
    ensure(
        polled.task_id == created.task_id && polled.status == TaskStatus::Working,
        format!("tasks/get before the gate opens: {polled:?}"),
    )?;
    let waiting = tokio::spawn({
        let handle = handle.clone();
        async move { handle.result().await }
    });
    let opened = client
        .call_tool("open_gate", arguments(json!({"gate": first})))
        .await?;
    ensure(
        opened.text() == format!("opened {first}"),
        format!("open_gate: {:?}", opened.text()),
    )?;
    let mut seen = vec![created.status.clone(), polled.status.clone()];
    let mut statuses = handle.statuses();
    while let Some(task) = within("tasks/get to change", statuses.next()).await? {
        seen.push(task?.status);
    }
    ensure(
        seen.last() == Some(&TaskStatus::Completed)
            && seen[..seen.len() - 1]
                .iter()
                .all(|s| *s == TaskStatus::Working),
        format!("statuses {seen:?}"),
    )?;
    let result = within("tasks/result", waiting).await???;
    ensure(
        result.text() == first_opened && result.is_error != Some(true),
        format!("tasks/result {result:?}"),
    )?;
    let related = result
        .meta
        .as_ref()
        .and_then(RelatedTaskMetadata::from_meta);
    ensure(
        related.as_ref().map(|r| r.task_id.as_str()) == Some(created.task_id.as_str()),
        format!("tasks/result's related-task _meta {:?}", result.meta),
    )?;
    // The server told of the completion too.
    within("notifications/tasks/status: completed", async {
        while let Some(task) = told.recv().await {
            if task.task_id == created.task_id && task.status == TaskStatus::Completed {
                return Ok(());
            }
        }
        Err::<(), Error>("the notification handler went away".into())
    })
    .await??;

    // Asked again once terminal, it answers at once with the same result.
    let again = within("tasks/result again", handle.result()).await??;
    ensure(
        again.text() == first_opened,
        format!("tasks/result again {again:?}"),
    )?;

    // A task cancelled while it works stays cancelled; cancelling it again is -32602.
    let second = client
        .call_tool_as_task(gate(&never), TaskMetadata::new())
        .await?;
    let working = second.status().await?;
    ensure(
        working.status == TaskStatus::Working,
        format!("second task {working:?}"),
    )?;
    let cancelled = second.cancel().await?;
    ensure(
        cancelled.task_id == second.id() && cancelled.status == TaskStatus::Cancelled,
        format!("tasks/cancel {cancelled:?}"),
    )?;
    let after = second.status().await?;
    ensure(
        after.status == TaskStatus::Cancelled,
        format!("tasks/get after tasks/cancel {after:?}"),
    )?;
    let twice = second.cancel().await;
    ensure(
        twice.as_ref().is_err_and(is_invalid_params),
        format!("tasks/cancel of a cancelled task {twice:?}"),
    )?;

    // The side channel: the task asks for input, is `input_required` while its request
    // waits, and `tasks/result` carries the request (tagged with the task) to this
    // client's elicitation callback, then returns the result.
    let ask = CallToolRequestParams::new("side_channel_task")
        .with_arguments(arguments(json!({"message": "Who are you?"})));
    let asking = client.call_tool_as_task(ask, TaskMetadata::new()).await?;
    let mut statuses = asking.statuses();
    let mut seen = Vec::new();
    while let Some(task) = within("tasks/get to change", statuses.next()).await? {
        let status = task?.status;
        seen.push(status.clone());
        if status == TaskStatus::InputRequired || status.is_terminal() {
            break;
        }
    }
    ensure(
        seen.last() == Some(&TaskStatus::InputRequired),
        format!("statuses of side_channel_task {seen:?}"),
    )?;
    let answered = within("tasks/result of side_channel_task", asking.result()).await??;
    ensure(
        answered.text() == r#"accept: {"name":"Ada"}"#,
        format!("side_channel_task {answered:?}"),
    )?;
    let related = asked.try_recv();
    ensure(
        related.as_ref().ok().and_then(Option::as_deref) == Some(asking.id()),
        format!("the elicitation's related task {related:?}"),
    )?;
    let done = asking.status().await?;
    ensure(
        done.status == TaskStatus::Completed,
        format!("side_channel_task after tasks/result {done:?}"),
    )?;

    // All are listed, as they ended.
    let listed = client.list_all_tasks().await?;
    let status_of = |id: &str| {
        listed
            .iter()
            .find(|t| t.task_id == id)
            .map(|t| t.status.clone())
    };
    ensure(
        status_of(&created.task_id) == Some(TaskStatus::Completed)
            && status_of(second.id()) == Some(TaskStatus::Cancelled)
            && status_of(asking.id()) == Some(TaskStatus::Completed),
        format!("tasks/list {listed:?}"),
    )?;

    // An unknown task id is -32602.
    let unknown = Task::new("no-such-task", TaskStatus::Working, "", "", None);
    let unknown = client.task_handle::<CallToolResult>(unknown).status().await;
    ensure(
        unknown.as_ref().is_err_and(is_invalid_params),
        format!("tasks/get of an unknown task {unknown:?}"),
    )?;

    // The same tool called plainly answers with its result.
    let plain = client
        .call_tool("wait_for_gate", arguments(json!({"gate": first})))
        .await?;
    ensure(
        plain.text() == first_opened,
        format!("plain wait_for_gate {plain:?}"),
    )?;

    client.close().await;
    eprintln!("interop: every task step against {name} passed");
    Ok(())
}

async fn interop_main(args: &[String]) -> Result<(), Error> {
    let (mode, args) = match args {
        // Only the stateless era (pinned): the leg fails if the server does not offer it.
        [flag, version, rest @ ..] if flag == "--era" && version == "2026-07-28" => {
            (Some(ConnectMode::Discover), rest)
        }
        // Only the handshake: `server/discover` is never sent.
        [flag, version, rest @ ..] if flag == "--era" && version == "2025-11-25" => {
            (Some(ConnectMode::Handshake), rest)
        }
        _ => (None, args),
    };
    let (tasks, args) = match args {
        [flag, rest @ ..] if flag == "--tasks" && mode.is_none() => (true, rest),
        _ => (false, args),
    };
    // By default `server/discover` first, the handshake when the server does not offer
    // 2026-07-28.
    let mode = mode.unwrap_or(ConnectMode::Auto);
    if let [flag, dir, rest @ ..] = args
        && flag == "--skills"
        && !tasks
    {
        let expect = std::path::Path::new(dir);
        return match rest {
            [kind, url] if kind == "http" => {
                let transport = StreamableHttpClientTransport::new(url)?;
                skills::interop_skills(transport, mode, expect).await
            }
            [kind, program, rest @ ..] if kind == "stdio" => {
                let child = ChildProcess::new(program)
                    .args(rest)
                    .stderr(Stderr::lines(|line| eprintln!("[server] {line}")))
                    .spawn()?;
                skills::interop_skills(child, mode, expect).await
            }
            _ => Err("usage: conformance-client --interop [--era ERA] --skills DIR (http <URL> | stdio <program> [args...])".into()),
        };
    }
    let plain = || Ok::<(), Error>(());
    match args {
        [kind, url] if kind == "http" => {
            let transport = StreamableHttpClientTransport::new(url)?;
            if tasks {
                interop_tasks(transport).await
            } else {
                interop(transport, mode, plain).await
            }
        }
        [kind, url] if kind == "sse" && !tasks => {
            let transport = SseClientTransport::connect(url).await?;
            eprintln!(
                "interop: legacy SSE stream open, POSTing to {}",
                transport.endpoint()
            );
            interop(transport, mode, plain).await
        }
        [kind, url] if kind == "fallback" && !tasks => {
            let transport = FallbackClientTransport::new(url)?;
            let handle = transport.handle();
            interop(transport, mode, move || {
                let active = handle.active();
                // `cargo xtask interop` keeps it in the leg's log.
                println!("active transport: {active:?}");
                ensure(
                    active == Some(ActiveTransport::LegacySse),
                    format!("the fallback to the legacy transport: active {active:?}"),
                )
            })
            .await
        }
        [kind, program, rest @ ..] if kind == "stdio" => {
            let child = ChildProcess::new(program)
                .args(rest)
                .stderr(Stderr::lines(|line| eprintln!("[server] {line}")))
                .spawn()?;
            if tasks {
                interop_tasks(child).await
            } else {
                interop(child, mode, plain).await
            }
        }
        _ => Err(
            "usage: conformance-client --interop [--era 2025-11-25|2026-07-28 | --tasks | --skills DIR] (http <URL> | stdio <program> [args...]) | --interop [--era ERA] (sse | fallback) <URL>".into(),
        ),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--interop") {
        return match interop_main(&args[1..]).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("conformance-client --interop: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client <server URL> (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client ({scenario}): {e}");
            ExitCode::FAILURE
        }
    }
}
