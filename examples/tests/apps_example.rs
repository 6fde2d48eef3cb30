//! The MCP Apps example run as a host would: started as a stdio child, in both eras, by
//! a client that declared the extension (the view, the linked tool, the app-only tool)
//! and by one that did not (plain tools only).

use std::time::Duration;

use modelctx::apps::bridge::{UiView, ViewLink};
use modelctx::apps::{EXTENSION_ID, MIME_TYPE, UiResourceMeta, client_settings, model_tools};
use modelctx::client::{Client, ClientBuilder, ClientExtension, ConnectMode};
use modelctx::stdio::{ChildProcess, Stderr};
use modelctx::types::{TextOrBlobResourceContents, TextResourceContents};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

async fn start(builder: ClientBuilder) -> Client {
    start_with(builder, &[]).await
}

async fn start_with(builder: ClientBuilder, args: &[&str]) -> Client {
    let child = ChildProcess::new(env!("CARGO_BIN_EXE_apps-server"))
        .args(args)
        .stderr(Stderr::lines(|line| eprintln!("[server] {line}")))
        .spawn()
        .expect("the example starts");
    tokio::time::timeout(WAIT, builder.connect(child))
        .await
        .expect("connects in time")
        .expect("connects")
}

fn host(mode: ConnectMode) -> ClientBuilder {
    Client::builder("host", "1.0.0")
        .mode(mode)
        .extension(ClientExtension::new(EXTENSION_ID).settings(client_settings()))
}

/// The counter's view resource, read as the text it must be.
async fn counter_page(client: &Client) -> TextResourceContents {
    let read = tokio::time::timeout(WAIT, client.read_resource("ui://counter/view"))
        .await
        .unwrap()
        .unwrap();
    let Some(TextOrBlobResourceContents::Text(view)) = read.contents.into_iter().next() else {
        panic!("the view is text");
    };
    view
}

/// The view of `show_counter`, as a host loads it before opening the bridge.
async fn counter_view(client: &Client) -> UiView {
    let tools = tokio::time::timeout(WAIT, client.list_all_tools())
        .await
        .unwrap()
        .unwrap();
    let show = tools.iter().find(|t| t.name == "show_counter").unwrap();
    UiView::load(client, show).await.unwrap()
}

/// The view's `ui/initialize`, as the counter page sends it.
fn ui_initialize() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
    "protocolVersion": "2026-01-26", "appInfo": {"name": "counter", "version": "1"},
    "appCapabilities": {}}})
}

/// The next message the bridge sends the page.
async fn next(page: &mut ViewLink) -> serde_json::Value {
    tokio::time::timeout(WAIT, page.recv())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn the_apps_example_serves_its_view_and_tools_in_both_eras() {
    for (mode, version) in [
        (ConnectMode::Handshake, "2025-11-25"),
        (ConnectMode::Auto, "2026-07-28"),
    ] {
        let client = start(host(mode)).await;
        assert_eq!(client.protocol_version().as_str(), version);
        let tools = tokio::time::timeout(WAIT, client.list_all_tools())
            .await
            .unwrap()
            .unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["increment", "reset_counter", "show_counter"],
            "{version}"
        );
        let model: Vec<String> = model_tools(tools).into_iter().map(|t| t.name).collect();
        assert_eq!(model, ["reset_counter", "show_counter"], "{version}");

        let view = counter_page(&client).await;
        assert_eq!(view.mime_type.as_deref(), Some(MIME_TYPE));
        assert!(
            view.text.contains("@modelcontextprotocol/ext-apps@2.0.4"),
            "{version}"
        );
        let meta = UiResourceMeta::of(view.meta.as_ref().unwrap()).unwrap();
        assert_eq!(meta.csp.unwrap().resource_domains, ["https://unpkg.com"]);

        let shown = client
            .call_tool("show_counter", json!({"label": "visits"}))
            .await
            .unwrap();
        let before = shown.structured_content.unwrap()["count"].as_i64().unwrap();
        let after = client.call_tool("increment", json!({})).await.unwrap();
        assert_eq!(
            after.structured_content.unwrap()["count"],
            before + 1,
            "{version}"
        );
    }
}

#[tokio::test]
async fn a_client_without_the_extension_sees_the_counter_as_text() {
    let client = start(Client::builder("plain", "1.0.0").mode(ConnectMode::Handshake)).await;
    let tools = tokio::time::timeout(WAIT, client.list_all_tools())
        .await
        .unwrap()
        .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["reset_counter", "show_counter"]);
    assert!(tools.iter().all(|t| t.meta.is_none()));
    let shown = client.call_tool("show_counter", json!({})).await.unwrap();
    assert!(shown.structured_content.is_none());
    let refused = client.call_tool("increment", json!({})).await.unwrap_err();
    assert_eq!(refused.protocol_error().unwrap().code.0, -32602);
}

/// The example's view driven through our host bridge: the page (a stand-in here)
/// initializes, gets the counter from the tool's result, and its "+1" button calls the
/// app-only `increment` through the bridge, which reaches the server.
#[tokio::test]
async fn the_counter_view_runs_behind_the_host_bridge() {
    use modelctx::apps::bridge::AppBridge;

    let client = start(host(ConnectMode::Handshake)).await;
    let view = counter_view(&client).await;
    assert!(view.html().contains("callServerTool"));
    let (host_end, mut page) = ViewLink::pair(16);
    let bridge = AppBridge::builder(client.clone(), view).start(host_end);
    assert!(
        bridge
            .sandbox()
            .csp()
            .contains("script-src 'self' 'unsafe-inline' https://unpkg.com;")
    );

    page.send(ui_initialize()).await;
    assert_eq!(
        next(&mut page).await["result"]["hostCapabilities"]["serverTools"],
        json!({})
    );
    page.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}))
        .await;
    bridge.initialized().await.unwrap();

    let arguments = json!({"label": "visits"}).as_object().unwrap().clone();
    let shown = tokio::time::timeout(WAIT, bridge.call_tool(arguments))
        .await
        .unwrap()
        .unwrap();
    let count = shown.structured_content.unwrap()["count"].as_i64().unwrap();
    assert_eq!(
        next(&mut page).await["params"]["arguments"]["label"],
        "visits"
    );
    assert_eq!(
        next(&mut page).await["params"]["structuredContent"]["count"],
        count
    );

    page.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "increment", "arguments": {}}}))
        .await;
    let clicked = next(&mut page).await;
    assert_eq!(
        clicked["result"]["structuredContent"]["count"],
        count + 1,
        "{clicked}"
    );
}

/// The view refuses the model-only tool too (checked by the bridge, before the server).
#[tokio::test]
async fn the_model_only_tool_is_refused_to_the_view() {
    use modelctx::apps::bridge::AppBridge;

    let client = start(host(ConnectMode::Handshake)).await;
    let view = counter_view(&client).await;
    let (host_end, mut page) = ViewLink::pair(16);
    let _bridge = AppBridge::builder(client.clone(), view).start(host_end);
    page.send(ui_initialize()).await;
    next(&mut page).await;
    page.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "reset_counter", "arguments": {}}}))
        .await;
    let refused = next(&mut page).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "the tool reset_counter is not visible to apps"
    );
    // The model may call it.
    let reset = client.call_tool("reset_counter", json!({})).await.unwrap();
    assert_eq!(reset.structured_content.unwrap()["count"], 0);
}

/// `--sdk PATH`: the SDK's code replaces the page's import (its `App` export taken
/// from the bundle's export list), and the page declares no origin.
#[tokio::test]
async fn the_sdk_can_be_inlined_from_a_file() {
    let dir = std::env::temp_dir().join(format!("apps-sdk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sdk = dir.join("app-with-deps.js");
    std::fs::write(
        &sdk,
        "class Qx { marker() {} }\nvar zz = 1;\nexport{zz as other,Qx as App};\n",
    )
    .unwrap();
    let client = start_with(
        host(ConnectMode::Handshake),
        &["--sdk", sdk.to_str().unwrap()],
    )
    .await;
    let view = counter_page(&client).await;
    assert!(!view.text.contains("unpkg.com"), "the import is replaced");
    assert!(view.text.contains("class Qx { marker() {} }"));
    assert!(view.text.contains("return { App: Qx };"));
    assert!(!view.text.contains("export{"));
    let meta = UiResourceMeta::of(view.meta.as_ref().unwrap()).unwrap();
    assert!(meta.csp.is_none_or(|csp| csp.resource_domains.is_empty()));

    // A file that is not the SDK bundle stops the server with the reason.
    std::fs::write(&sdk, "console.log('not a module')").unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_apps-server"))
        .arg("--sdk")
        .arg(&sdk)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no export list"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
