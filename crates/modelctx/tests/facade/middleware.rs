//! Middleware through the public API, in both eras: a layer that sees every method
//! and times it, a per-tool allow-list, a rate limit, a layer that rewrites params,
//! the order of two layers, and a layer on the client.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use modelctx::client::{ConnectMode, RootsList};
use modelctx::prelude::*;
use modelctx::server::{McpRequest, Next};
use modelctx::types::{CallToolRequestParams, Root};
use serde_json::Value;
use tower::layer::layer_fn;
use tower::{ServiceExt, service_fn};

/// Says `text` back.
#[tool]
fn echo(text: String) -> String {
    text
}

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Lists the client's roots.
#[tool]
async fn roots(cx: &Context) -> Result<String, String> {
    let roots = cx.list_roots().await.map_err(|e| e.to_string())?;
    Ok(roots
        .into_iter()
        .map(|r| r.uri)
        .collect::<Vec<_>>()
        .join(","))
}

/// A server with the three tools and these layers, the first outermost.
fn server(layers: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Server {
    let builder = Server::builder("middleware", "1.0.0")
        .tool(echo_tool())
        .and_then(|b| b.tool(add_tool()))
        .and_then(|b| b.tool(roots_tool()))
        .unwrap();
    layers(builder).build()
}

async fn connect(server: &Server, mode: ConnectMode) -> (Client, ServerSession) {
    let (client_side, server_side) = modelctx::memory::pair();
    let session = server.serve(server_side);
    let client = Client::builder("test", "1.0.0")
        .mode(mode)
        .connect(client_side)
        .await
        .unwrap();
    (client, session)
}

/// What the `echo` tool answers `text` with, through every layer.
async fn echoed(client: &Client, text: &str) -> String {
    let said = client
        .call_tool("echo", serde_json::json!({ "text": text }))
        .await
        .unwrap();
    said.text()
}

fn text(result: &CallToolResult) -> String {
    result.text()
}

/// The name of the tool a `tools/call` asks for.
fn tool_name(request: &McpRequest) -> Option<String> {
    (request.method() == "tools/call")
        .then(|| request.params_as::<CallToolRequestParams>().ok())
        .flatten()
        .map(|p| p.name)
}

/// `builder` with a layer that records each method it sees and how long its answer
/// took, and traces it.
fn timing(builder: ServerBuilder, seen: Arc<Mutex<Vec<String>>>) -> ServerBuilder {
    builder.layer(layer_fn(move |next: Next| {
        let seen = seen.clone();
        service_fn(move |request: McpRequest| {
            let next = next.clone();
            let seen = seen.clone();
            async move {
                let method = request.method().to_owned();
                let started = Instant::now();
                let answer = next.oneshot(request).await;
                tracing::info!(%method, elapsed = ?started.elapsed(), ok = answer.is_ok(), "mcp request");
                seen.lock().unwrap().push(method);
                answer
            }
        })
    }))
}

#[tokio::test]
async fn a_layer_sees_and_times_every_request() {
    for mode in [ConnectMode::Auto, ConnectMode::Handshake] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let server = server(|b| timing(b, seen.clone()));
        let (client, _session) = connect(&server, mode.clone()).await;
        assert_eq!(client.list_all_tools().await.unwrap().len(), 3);
        let sum = client
            .call_tool("add", serde_json::json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(text(&sum), "5");
        assert_eq!(
            *seen.lock().unwrap(),
            ["tools/list", "tools/call"],
            "{mode:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn an_allow_list_refuses_other_tools() {
    let allowed = ["echo"];
    let allow_list = layer_fn(move |next: Next| {
        service_fn(move |request: McpRequest| {
            let next = next.clone();
            async move {
                if let Some(name) = tool_name(&request)
                    && !allowed.contains(&name.as_str())
                {
                    return Err(ErrorData::invalid_params(format!(
                        "tool {name:?} is not allowed here"
                    )));
                }
                next.oneshot(request).await
            }
        })
    });
    let server = server(|b| b.layer(allow_list));
    for mode in [ConnectMode::Auto, ConnectMode::Handshake] {
        let (client, _session) = connect(&server, mode.clone()).await;
        assert_eq!(echoed(&client, "hi").await, "hi");
        let refused = client
            .call_tool("add", serde_json::json!({"a": 1, "b": 1}))
            .await
            .unwrap_err()
            .to_error_data();
        assert_eq!(refused.code, ErrorData::invalid_params("").code, "{mode:?}");
        assert!(
            refused.message.contains("\"add\" is not allowed"),
            "{refused:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn a_rate_limit_refuses_the_call_past_its_budget() {
    for mode in [ConnectMode::Auto, ConnectMode::Handshake] {
        let calls = Arc::new(AtomicUsize::new(0));
        let budget = layer_fn(move |next: Next| {
            let calls = calls.clone();
            service_fn(move |request: McpRequest| {
                let next = next.clone();
                let over =
                    request.method() == "tools/call" && calls.fetch_add(1, Ordering::SeqCst) >= 2;
                async move {
                    if over {
                        return Err(ErrorData::internal_error("rate limit: 2 calls"));
                    }
                    next.oneshot(request).await
                }
            })
        });
        let server = server(|b| b.layer(budget));
        let (client, _session) = connect(&server, mode.clone()).await;
        let args = serde_json::json!({"text": "x"});
        client.call_tool("echo", &args).await.unwrap();
        client.call_tool("echo", &args).await.unwrap();
        let third = client.call_tool("echo", &args).await.unwrap_err();
        assert!(
            third.to_error_data().message.contains("rate limit"),
            "{mode:?}: {third}"
        );
        // Listings are not counted.
        client.list_all_tools().await.unwrap();
        client.close().await;
    }
}

#[tokio::test]
async fn a_layer_rewrites_params() {
    let shout = layer_fn(|next: Next| {
        service_fn(move |mut request: McpRequest| {
            let next = next.clone();
            async move {
                if tool_name(&request).as_deref() == Some("echo") {
                    let mut params: Value = request.params_as()?;
                    let text = params["arguments"]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_uppercase();
                    params["arguments"]["text"] = Value::from(text);
                    request.set_params(&params)?;
                }
                next.oneshot(request).await
            }
        })
    });
    let server = server(|b| b.layer(shout));
    for mode in [ConnectMode::Auto, ConnectMode::Handshake] {
        let (client, _session) = connect(&server, mode.clone()).await;
        assert_eq!(echoed(&client, "quiet").await, "QUIET", "{mode:?}");
        client.close().await;
    }
}

/// `builder` with a layer that writes `name` down on the way in and on the way out.
fn marking(
    builder: ServerBuilder,
    name: &'static str,
    log: &Arc<Mutex<Vec<String>>>,
) -> ServerBuilder {
    let log = log.clone();
    builder.layer(layer_fn(move |next: Next| {
        let log = log.clone();
        service_fn(move |request: McpRequest| {
            let next = next.clone();
            let log = log.clone();
            async move {
                log.lock().unwrap().push(format!("{name} in"));
                let answer = next.oneshot(request).await;
                log.lock().unwrap().push(format!("{name} out"));
                answer
            }
        })
    }))
}

#[tokio::test]
async fn the_first_layer_given_sees_a_request_first() {
    for mode in [ConnectMode::Auto, ConnectMode::Handshake] {
        let log = Arc::new(Mutex::new(Vec::new()));
        let server = server(|b| marking(marking(b, "outer", &log), "inner", &log));
        let (client, _session) = connect(&server, mode.clone()).await;
        client.list_all_tools().await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["outer in", "inner in", "inner out", "outer out"],
            "{mode:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn a_client_layer_sees_and_refuses_the_servers_requests() {
    let server = server(|b| b);
    for mode in [ConnectMode::Auto, ConnectMode::Handshake] {
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = asked.clone();
        let once = layer_fn(move |next: modelctx::client::Next| {
            let counted = counted.clone();
            service_fn(move |request: modelctx::client::McpRequest| {
                let next = next.clone();
                let seen = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    assert_eq!(request.method(), "roots/list");
                    if seen > 0 {
                        return Err(ErrorData::invalid_request("roots are shown once"));
                    }
                    next.oneshot(request).await
                }
            })
        });
        let roots = RootsList::new(vec![Root::new("file:///work")]).unwrap();
        let (client_side, server_side) = modelctx::memory::pair();
        let _session = server.serve(server_side);
        let client = Client::builder("test", "1.0.0")
            .mode(mode.clone())
            .roots(roots, false)
            .layer(once)
            .connect(client_side)
            .await
            .unwrap();
        let first = client
            .call_tool("roots", serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(text(&first), "file:///work", "{mode:?}");
        // The refusal reaches the tool in a session (which reports it as its error);
        // in protocol 2026-07-28 the client answers the input itself, and fails the call.
        let refusal = match client.call_tool("roots", serde_json::json!({})).await {
            Ok(second) => {
                assert_eq!(second.is_error, Some(true), "{mode:?}");
                text(&second)
            }
            Err(error) => error.to_string(),
        };
        assert!(
            refusal.contains("roots are shown once"),
            "{mode:?}: {refusal}"
        );
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        client.close().await;
    }
}

/// Logs `text` to the client, then says it back.
#[tool]
async fn shout(text: String, cx: &Context) -> String {
    cx.info(text.clone()).await.unwrap();
    text
}

#[tokio::test]
async fn notification_layers_see_and_drop_notifications() {
    for mode in [ConnectMode::Auto, ConnectMode::Handshake] {
        // The server's layer hears the client's notifications.
        let heard = Arc::new(Mutex::new(Vec::new()));
        let on_server = heard.clone();
        let server = Server::builder("notified", "1.0.0")
            .logging()
            .tool(shout_tool())
            .unwrap()
            .notification_layer(layer_fn(move |next: modelctx::server::NotificationNext| {
                let heard = on_server.clone();
                service_fn(move |n: modelctx::server::McpNotification| {
                    heard.lock().unwrap().push(n.method().to_owned());
                    next.clone().oneshot(n)
                })
            }))
            .build();
        // The client's layer keeps every log message but the first from its handler.
        let logged = Arc::new(Mutex::new(Vec::new()));
        let on_log = logged.clone();
        let passed = Arc::new(AtomicUsize::new(0));
        let counted = passed.clone();
        let (client_side, server_side) = modelctx::memory::pair();
        let _session = server.serve(server_side);
        let client = Client::builder("test", "1.0.0")
            .mode(mode.clone())
            .on_log(move |message| {
                on_log.lock().unwrap().push(message.data.to_string());
            })
            .notification_layer(layer_fn(move |next: modelctx::client::NotificationNext| {
                let counted = counted.clone();
                service_fn(move |n: modelctx::client::McpNotification| {
                    let next = next.clone();
                    let first_log = n.method() == "notifications/message"
                        && counted.fetch_add(1, Ordering::SeqCst) == 0;
                    async move {
                        if first_log {
                            return Ok(());
                        }
                        next.oneshot(n).await
                    }
                })
            }))
            .connect(client_side)
            .await
            .unwrap();
        client
            .set_logging_level(modelctx::types::LoggingLevel::Info)
            .await
            .unwrap();
        client
            .call_tool("shout", serde_json::json!({"text": "one"}))
            .await
            .unwrap();
        client
            .call_tool("shout", serde_json::json!({"text": "two"}))
            .await
            .unwrap();
        assert_eq!(*logged.lock().unwrap(), ["\"two\""], "{mode:?}");
        assert_eq!(passed.load(Ordering::SeqCst), 2, "{mode:?}");
        if matches!(mode, ConnectMode::Handshake) {
            assert!(
                heard
                    .lock()
                    .unwrap()
                    .contains(&"notifications/initialized".to_owned())
            );
        }
        client.close().await;
    }
}
