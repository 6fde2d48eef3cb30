//! The host bridge driven by a fake view over an in-process channel, through a real
//! server (the test kit's clock) and our client, in memory. Each test names the host
//! requirements of the ext-apps conformance catalogue it covers (`area/name`).

use std::collections::VecDeque;

use modelctx_apps::bridge::{
    AppBridge, AppBridgeBuilder, BridgeErrorKind, ContainerDimensions, Decision, DisplayMode,
    HostContext, Theme, UiView, ViewLink,
};
use modelctx_apps::{EXTENSION_ID, MIME_TYPE, UiPermissions, model_tools};
use modelctx_client::{Client, ConnectMode};
use modelctx_server::Server;
use modelctx_test::apps::{
    BLOB_URI, CONNECT_ORIGIN, ClockServer, FACE_HTML, FACE_URI, MODEL_NOTE, PLAIN, RESOURCE_ORIGIN,
    SHOW_TIME, TICK,
};
use modelctx_test::within;
use modelctx_types::{CallToolResult, JsonObject};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{self, ERAS, WAIT, list_tools};

async fn host_client(server: &Server, mode: ConnectMode) -> Client {
    support::host(server, "test-host", mode).await
}

/// The fake view: sends what a page would, keeps the host's notifications apart from
/// the answers it waits for.
struct Page {
    link: ViewLink,
    next_id: i64,
    notifications: VecDeque<Value>,
}

impl Page {
    fn new(link: ViewLink) -> Self {
        Self {
            link,
            next_id: 0,
            notifications: VecDeque::new(),
        }
    }

    async fn send(&self, message: Value) {
        assert!(self.link.send(message).await, "the bridge is listening");
    }

    async fn recv(&mut self) -> Value {
        within(WAIT, "a message from the host", self.link.recv())
            .await
            .expect("the bridge is open")
    }

    /// Sends a request and waits for its answer, keeping notifications that come first.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.answer_to(&json!(id)).await
    }

    async fn answer_to(&mut self, id: &Value) -> Value {
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            self.notifications.push_back(message);
        }
    }

    async fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next notification (or host request) from the host.
    async fn notification(&mut self) -> Value {
        match self.notifications.pop_front() {
            Some(message) => message,
            None => self.recv().await,
        }
    }

    async fn initialize(&mut self, capabilities: Value) -> Value {
        let answer = self
            .request(
                "ui/initialize",
                json!({
                    "protocolVersion": "2026-01-26",
                    "appInfo": {"name": "fake view", "version": "1.0.0"},
                    "appCapabilities": capabilities,
                }),
            )
            .await;
        self.notify("ui/notifications/initialized", json!({})).await;
        answer
    }
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error answer: {answer}"))
}

/// A bridge for `tool` of the clock, as `build` sets it up, and its fake view.
async fn open(
    clock: &ClockServer,
    mode: ConnectMode,
    tool: &str,
    build: impl FnOnce(AppBridgeBuilder) -> AppBridgeBuilder,
) -> (AppBridge, Page, Client) {
    let client = host_client(&clock.server(), mode).await;
    let tool = list_tools(&client)
        .await
        .into_iter()
        .find(|t| t.name == tool)
        .unwrap();
    let view = within(WAIT, "the UI resource", UiView::load(&client, &tool))
        .await
        .unwrap();
    let (host_end, page_end) = ViewLink::pair(64);
    let bridge = build(AppBridge::builder(client.clone(), view)).start(host_end);
    (bridge, Page::new(page_end), client)
}

/// [`open`]s `SHOW_TIME` with the handshake, `register` setting up a host callback with
/// the sender of the receiver returned (see [`forward`]), and initializes the page.
async fn open_hearing<T: Send + 'static>(
    clock: &ClockServer,
    register: impl FnOnce(AppBridgeBuilder, mpsc::UnboundedSender<T>) -> AppBridgeBuilder,
) -> (AppBridge, Page, mpsc::UnboundedReceiver<T>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (bridge, mut page, _client) = open(clock, ConnectMode::Handshake, SHOW_TIME, |b| {
        register(b, tx)
    })
    .await;
    page.initialize(json!({})).await;
    (bridge, page, rx)
}

/// The view's `ui/request-display-mode` for `mode`: the bridge's answer.
async fn request_display_mode(page: &mut Page, mode: &str) -> Value {
    page.request("ui/request-display-mode", json!({ "mode": mode }))
        .await
}

/// The notification the view gets after `ui/notifications/tool-input`, checking that
/// one comes first.
async fn after_tool_input(page: &mut Page) -> Value {
    assert_eq!(
        page.notification().await["method"],
        "ui/notifications/tool-input"
    );
    page.notification().await
}

/// The string `key` of each entry of the JSON array `list`.
fn each<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|entry| entry[key].as_str().unwrap())
        .collect()
}

/// [`open`]s `SHOW_TIME` with the handshake and initializes the page, returning once
/// the bridge says it is initialized.
async fn open_initialized(clock: &ClockServer) -> (AppBridge, Page) {
    let (bridge, mut page, _client) = open(clock, ConnectMode::Handshake, SHOW_TIME, |b| b).await;
    page.initialize(json!({})).await;
    within(WAIT, "initialized", bridge.initialized())
        .await
        .unwrap();
    (bridge, page)
}

/// A host callback that hands what the bridge reports to the test, through `tx`.
fn forward<T: Send + 'static>(tx: mpsc::UnboundedSender<T>) -> impl Fn(T) + Send + Sync + 'static {
    move |event| {
        let _ = tx.send(event);
    }
}

fn args(value: Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

/// `resources/read-referenced`, `capabilities/mimetypes-required`,
/// `security/sandbox-csp-enforced` (the policy: declared domains, `frame-src`,
/// `base-uri`, `object-src 'none'`, restrictive defaults; the browser enforces it),
/// `security/csp-construct-from-domains`, `security/csp-allow-declared`,
/// `security/csp-no-loosening`, `security/csp-default-deny`,
/// `security/permissions-allow-attr`: the UI resource is read through the client that
/// declared `mimeTypes`, checked, and turned into the sandbox policy.
#[tokio::test]
async fn the_view_is_read_through_the_client_and_sandboxed_as_declared() {
    let clock = ClockServer::new();
    let client = host_client(&clock.server(), ConnectMode::Handshake).await;
    let declared = &client.capabilities().extensions.as_ref().unwrap()[EXTENSION_ID];
    assert_eq!(declared["mimeTypes"], json!([MIME_TYPE]));
    let tools = client.list_all_tools().await.unwrap();
    let find = |name: &str| tools.iter().find(|t| t.name == name).unwrap().clone();

    let face = UiView::load(&client, &find(SHOW_TIME)).await.unwrap();
    assert_eq!((face.uri(), face.html()), (FACE_URI, FACE_HTML));
    let policy = face.sandbox(UiPermissions::new().clipboard_write().camera());
    let csp = policy.csp();
    assert!(
        csp.contains(&format!("connect-src 'self' {CONNECT_ORIGIN};")),
        "{csp}"
    );
    assert!(csp.contains(&format!(
        "script-src 'self' 'unsafe-inline' {RESOURCE_ORIGIN};"
    )));
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    assert!(csp.contains("frame-src 'none';") && csp.contains("object-src 'none';"));
    assert!(csp.contains("base-uri 'self';"), "{csp}");
    // Asked for and granted: the clipboard; granted but not asked: the camera.
    assert_eq!(policy.allow(), "clipboard-write");
    assert!(face.sandbox(UiPermissions::new()).allow().is_empty());

    // A blob document with no `_meta.ui`: the restrictive default.
    let note = UiView::load(&client, &find(MODEL_NOTE)).await.unwrap();
    assert_eq!((note.uri(), note.html()), (BLOB_URI, FACE_HTML));
    assert!(
        note.sandbox(UiPermissions::new())
            .csp()
            .contains("connect-src 'none';")
    );

    // A tool without a UI has no view.
    let error = UiView::load(&client, &find(PLAIN)).await.unwrap_err();
    assert_eq!(error.kind(), BridgeErrorKind::Resource);
}

/// `lifecycle/initialize-capabilities`, `context/initialize-hostcontext`,
/// `lifecycle/tool-input`, `lifecycle/tool-input-partial`,
/// `lifecycle/tool-input-partial-stop`, `lifecycle/tool-result`, and the sandbox rule
/// that the host sends nothing before `initialized`.
#[tokio::test]
async fn the_view_initializes_then_gets_the_tool_input_and_result() {
    for (mode, era) in ERAS {
        let clock = ClockServer::new();
        let (bridge, mut page, _client) = open(&clock, mode, SHOW_TIME, |b| {
            b.host_info("test-host", "2.0.0").host_context(
                HostContext::new()
                    .theme(Theme::Dark)
                    .locale("en-GB")
                    .container_dimensions(ContainerDimensions::default()),
            )
        })
        .await;
        // Streamed and final input, sent before the view is up: held back.
        bridge
            .send_tool_input_partial(args(json!({"zone": "Eu"})))
            .unwrap();
        bridge
            .send_tool_input(args(json!({"zone": "Europe/Paris"})))
            .unwrap();
        let refused = bridge.send_tool_input_partial(args(json!({}))).unwrap_err();
        assert_eq!(refused.kind(), BridgeErrorKind::Order, "{era}");
        assert_eq!(
            bridge.send_tool_input(args(json!({}))).unwrap_err().kind(),
            BridgeErrorKind::Order
        );

        let answer = page
            .request(
                "ui/initialize",
                json!({"protocolVersion": "2026-01-26", "appInfo": {"name": "v", "version": "1"},
                       "appCapabilities": {"availableDisplayModes": ["inline"]}}),
            )
            .await;
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], "2026-01-26", "{era}");
        assert_eq!(
            result["hostInfo"],
            json!({"name": "test-host", "version": "2.0.0"})
        );
        let caps = &result["hostCapabilities"];
        assert_eq!(caps["serverTools"], json!({}), "{era}");
        assert_eq!(caps["serverResources"], json!({}));
        assert_eq!(caps["logging"], json!({}));
        assert!(
            caps.get("openLinks").is_none(),
            "no callback, no links: {caps}"
        );
        assert_eq!(
            caps["sandbox"]["csp"]["connectDomains"],
            json!([CONNECT_ORIGIN])
        );
        let context = &result["hostContext"];
        assert_eq!(context["theme"], "dark");
        assert_eq!(context["locale"], "en-GB");
        assert_eq!(context["displayMode"], "inline");
        assert_eq!(context["toolInfo"]["tool"]["name"], SHOW_TIME);
        // Before `initialized` the host sends nothing: a ping's answer is next.
        let pong = page.request("ping", json!({})).await;
        assert_eq!(pong["result"], json!({}));
        assert!(
            page.notifications.is_empty(),
            "{era}: {:?}",
            page.notifications
        );

        page.notify("ui/notifications/initialized", json!({})).await;
        within(WAIT, "initialized", bridge.initialized())
            .await
            .unwrap();
        let partial = page.notification().await;
        assert_eq!(partial["method"], "ui/notifications/tool-input-partial");
        assert_eq!(partial["params"]["arguments"], json!({"zone": "Eu"}));
        let input = page.notification().await;
        assert_eq!(input["method"], "ui/notifications/tool-input");
        assert_eq!(
            input["params"]["arguments"],
            json!({"zone": "Europe/Paris"})
        );

        let result = CallToolResult::text("12:00");
        bridge.send_tool_result(&result).unwrap();
        let sent = page.notification().await;
        assert_eq!(sent["method"], "ui/notifications/tool-result", "{era}");
        assert_eq!(sent["params"]["content"][0]["text"], "12:00");
        assert_eq!(
            bridge.send_tool_cancelled("late").unwrap_err().kind(),
            BridgeErrorKind::Order
        );
    }
}

/// `lifecycle/tool-result` through [`AppBridge::call_tool`] (the server's result reaches
/// the view), `lifecycle/tool-cancelled` (a failed call tells the view why), and a result
/// never goes before its input.
#[tokio::test]
async fn a_run_tool_call_ends_in_a_result_or_a_cancellation() {
    let clock = ClockServer::new();
    let (bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, |b| b).await;
    assert_eq!(
        bridge
            .send_tool_result(&CallToolResult::text("early"))
            .unwrap_err()
            .kind(),
        BridgeErrorKind::Order
    );
    page.initialize(json!({})).await;
    let result = within(
        WAIT,
        "the tool",
        bridge.call_tool(args(json!({"zone": "UTC"}))),
    )
    .await
    .unwrap();
    assert_eq!(result.structured_content.as_ref().unwrap()["time"], "12:00");
    let sent = after_tool_input(&mut page).await;
    assert_eq!(sent["method"], "ui/notifications/tool-result");
    assert_eq!(
        sent["params"]["structuredContent"]["arguments"],
        json!({"zone": "UTC"})
    );
    assert_eq!(clock.calls(), [SHOW_TIME]);

    // A call the server refuses (the tool went away after the view opened): the view
    // is told it was cancelled, and why.
    let server = clock.server();
    let client = host_client(&server, ConnectMode::Handshake).await;
    let tool = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == SHOW_TIME)
        .unwrap();
    let view = UiView::load(&client, &tool).await.unwrap();
    assert!(server.remove_tool(SHOW_TIME));
    let (host_end, page_end) = ViewLink::pair(16);
    let bridge = AppBridge::builder(client, view).start(host_end);
    let mut page = Page::new(page_end);
    page.initialize(json!({})).await;
    let error = within(WAIT, "the tool", bridge.call_tool(JsonObject::new()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), BridgeErrorKind::Server);
    assert_eq!(
        error
            .session_error()
            .unwrap()
            .protocol_error()
            .unwrap()
            .code
            .0,
        -32602
    );
    let cancelled = after_tool_input(&mut page).await;
    assert_eq!(cancelled["method"], "ui/notifications/tool-cancelled");
    assert!(
        cancelled["params"]["reason"]
            .as_str()
            .unwrap()
            .contains("Unknown tool"),
        "{cancelled}"
    );
    assert_eq!(
        bridge
            .send_tool_result(&CallToolResult::text("late"))
            .unwrap_err()
            .kind(),
        BridgeErrorKind::Order
    );
}

/// `tools/proxy-call`, `visibility/app-tool-call-guard`, `visibility/app-tool-hidden`:
/// the view may call the app-only tool (it reaches the server), not the model-only one
/// nor a tool this server does not have (neither reaches the server); the model's list
/// leaves the app-only tool out, the view's list the model-only one.
#[tokio::test]
async fn the_view_calls_only_tools_visible_to_apps_on_its_own_server() {
    for (mode, era) in ERAS {
        let clock = ClockServer::new();
        let (_bridge, mut page, client) = open(&clock, mode, SHOW_TIME, |b| b).await;
        page.initialize(json!({})).await;

        let tick = page
            .request("tools/call", json!({"name": TICK, "arguments": {"n": 2}}))
            .await;
        assert_eq!(
            tick["result"]["structuredContent"]["time"], "12:01",
            "{era}: {tick}"
        );
        let both = page.request("tools/call", json!({"name": SHOW_TIME})).await;
        assert!(both.get("result").is_some(), "{era}: {both}");
        assert_eq!(clock.calls(), [TICK, SHOW_TIME], "{era}");

        let model_only = page
            .request("tools/call", json!({"name": MODEL_NOTE}))
            .await;
        assert_eq!(error_code(&model_only), -32602, "{era}");
        assert!(
            model_only["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not visible to apps")
        );
        let elsewhere = page
            .request("tools/call", json!({"name": "other_server_tool"}))
            .await;
        assert_eq!(error_code(&elsewhere), -32602);
        let bad_args = page
            .request("tools/call", json!({"name": TICK, "arguments": [1]}))
            .await;
        assert_eq!(error_code(&bad_args), -32602);
        let no_name = page.request("tools/call", json!({"arguments": {}})).await;
        assert_eq!(error_code(&no_name), -32602);
        assert_eq!(
            clock.calls(),
            [TICK, SHOW_TIME],
            "{era}: nothing refused ran"
        );

        let listed = page.request("tools/list", json!({})).await;
        let names = each(&listed["result"]["tools"], "name");
        assert_eq!(names, [PLAIN, SHOW_TIME, TICK], "{era}");
        let model: Vec<String> = model_tools(client.list_all_tools().await.unwrap())
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(model, [MODEL_NOTE, PLAIN, SHOW_TIME], "{era}");
    }
}

/// `capabilities/server-passthrough`: resources pass through to the server; logging
/// reaches the host.
#[tokio::test]
async fn resources_and_logging_pass_through() {
    let clock = ClockServer::new();
    let (_bridge, mut page, mut logs) = open_hearing(&clock, |b, tx| b.on_log(forward(tx))).await;
    let listed = page.request("resources/list", json!({})).await;
    let uris = each(&listed["result"]["resources"], "uri");
    assert_eq!(uris, [BLOB_URI, FACE_URI]);
    let read = page
        .request("resources/read", json!({"uri": FACE_URI}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], FACE_HTML);
    let missing = page
        .request("resources/read", json!({"uri": "ui://clock/none"}))
        .await;
    assert!(missing.get("error").is_some(), "{missing}");
    let templates = page.request("resources/templates/list", json!({})).await;
    assert_eq!(templates["result"]["resourceTemplates"], json!([]));
    let bad_cursor = page.request("resources/list", json!({"cursor": 7})).await;
    assert_eq!(error_code(&bad_cursor), -32602);

    page.notify(
        "notifications/message",
        json!({"level": "info", "logger": "face", "data": "drawn"}),
    )
    .await;
    let log = within(WAIT, "the log", logs.recv()).await.unwrap();
    assert_eq!(
        (log.level.as_str(), log.logger.as_deref()),
        ("info", Some("face"))
    );
    assert_eq!(log.data, json!("drawn"));
}

/// `links/open-external`, `messages/add-to-conversation`, `messages/consent`,
/// `model-context/provide-future-turns`, `model-context/last-wins`,
/// `model-context/overwrite-defer-dedupe-display` (each update overwrites the last; when
/// to send it, and whether to show it, is the host's): the host's decisions
/// deny unless given; given, they see exactly what the view asked, checked first.
#[tokio::test]
async fn host_decisions_deny_by_default_and_see_checked_requests() {
    let clock = ClockServer::new();
    let (_bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, |b| b).await;
    let caps = page.initialize(json!({})).await["result"]["hostCapabilities"].clone();
    assert!(
        caps.get("openLinks").is_none() && caps.get("message").is_none(),
        "{caps}"
    );
    let link = page
        .request("ui/open-link", json!({"url": "https://example.com"}))
        .await;
    assert_eq!(error_code(&link), -32000);
    let message = page
        .request(
            "ui/message",
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(error_code(&message), -32000);

    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let links = seen_tx.clone();
    let (bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, move |b| {
        b.on_open_link(move |url| {
            let _ = links.send(url);
            async { Decision::Allow }
        })
        .on_message(move |message| {
            let _ = seen_tx.send(message.content[0]["text"].as_str().unwrap().to_owned());
            async { Decision::deny("the user said no") }
        })
    })
    .await;
    let caps = page.initialize(json!({})).await["result"]["hostCapabilities"].clone();
    assert_eq!(caps["openLinks"], json!({}));
    assert_eq!(caps["message"], json!({"text": {}}));
    let opened = page
        .request("ui/open-link", json!({"url": "https://example.com/a"}))
        .await;
    assert_eq!(opened["result"], json!({}));
    assert_eq!(
        within(WAIT, "the link", seen.recv()).await.unwrap(),
        "https://example.com/a"
    );
    for bad in [
        json!({"url": "javascript:alert(1)"}),
        json!({"url": 3}),
        json!({}),
    ] {
        assert_eq!(error_code(&page.request("ui/open-link", bad).await), -32602);
    }
    // The single-block form is read too; the host refused it, with its reason.
    let asked = page
        .request(
            "ui/message",
            json!({"role": "user", "content": {"type": "text", "text": "hello"}}),
        )
        .await;
    assert_eq!(error_code(&asked), -32000);
    assert_eq!(asked["error"]["message"], "the user said no");
    assert_eq!(
        within(WAIT, "the message", seen.recv()).await.unwrap(),
        "hello"
    );
    for bad in [
        json!({"role": "assistant", "content": [{"type": "text", "text": "x"}]}),
        json!({"role": "user", "content": [{"text": "no type"}]}),
        json!({"role": "user"}),
    ] {
        assert_eq!(error_code(&page.request("ui/message", bad).await), -32602);
    }
    assert!(
        seen.try_recv().is_err(),
        "no refused request reached the host"
    );

    // Model context: kept by default, each update replacing the one before.
    for n in [1, 2] {
        let update = page
            .request(
                "ui/update-model-context",
                json!({"content": [{"type": "text", "text": format!("code {n}")}], "structuredContent": {"n": n}}),
            )
            .await;
        assert_eq!(update["result"], json!({}));
    }
    let kept = bridge.model_context().unwrap();
    assert_eq!(kept.structured_content.unwrap()["n"], 2);
    assert_eq!(kept.content.unwrap()[0]["text"], "code 2");
    let bad = page
        .request("ui/update-model-context", json!({"structuredContent": [1]}))
        .await;
    assert_eq!(error_code(&bad), -32602);
}

/// `display/no-undeclared-mode`, `display/return-resulting-mode`,
/// `display/unavailable-returns-current`, `display/decline-undeclared`,
/// `context/context-changed`.
#[tokio::test]
async fn display_modes_change_only_where_host_and_view_agree() {
    let clock = ClockServer::new();
    let (asked_tx, mut asked) = mpsc::unbounded_channel();
    let (bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, move |b| {
        b.host_context(HostContext::new().available_display_modes([
            DisplayMode::Inline,
            DisplayMode::Fullscreen,
            DisplayMode::Pip,
        ]))
        .on_display_mode(move |mode| {
            let _ = asked_tx.send(mode);
            async { Decision::Allow }
        })
    })
    .await;
    page.initialize(json!({"availableDisplayModes": ["inline", "fullscreen"]}))
        .await;
    // Declared by the view and offered: switched, and the view is told.
    let full = request_display_mode(&mut page, "fullscreen").await;
    assert_eq!(full["result"], json!({"mode": "fullscreen"}));
    assert_eq!(
        within(WAIT, "the decision", asked.recv()).await.unwrap(),
        DisplayMode::Fullscreen
    );
    let changed = page.notification().await;
    assert_eq!(changed["method"], "ui/notifications/host-context-changed");
    assert_eq!(changed["params"], json!({"displayMode": "fullscreen"}));
    assert_eq!(bridge.display_mode(), DisplayMode::Fullscreen);
    // Offered but not declared by the view: the current mode, without asking the host.
    let pip = request_display_mode(&mut page, "pip").await;
    assert_eq!(pip["result"], json!({"mode": "fullscreen"}));
    let unknown = request_display_mode(&mut page, "cinema").await;
    assert_eq!(error_code(&unknown), -32602);
    assert!(asked.try_recv().is_err());
    // The host cannot switch the view to a mode it did not declare either.
    let refused = bridge
        .update_host_context(HostContext::new().display_mode(DisplayMode::Pip))
        .unwrap_err();
    assert_eq!(refused.kind(), BridgeErrorKind::Order);
    bridge
        .update_host_context(HostContext::new().theme(Theme::Light))
        .unwrap();
    let changed = page.notification().await;
    assert_eq!(changed["params"], json!({"theme": "light"}));
    assert_eq!(bridge.host_context().theme, Some(Theme::Light));

    // Without a decision callback the mode never changes.
    let (_bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, |b| {
        b.host_context(
            HostContext::new()
                .available_display_modes([DisplayMode::Inline, DisplayMode::Fullscreen]),
        )
    })
    .await;
    page.initialize(json!({"availableDisplayModes": ["inline", "fullscreen"]}))
        .await;
    let kept = request_display_mode(&mut page, "fullscreen").await;
    assert_eq!(kept["result"], json!({"mode": "inline"}));
}

/// `dimensions/listen-size-changed`.
#[tokio::test]
async fn the_host_hears_the_views_size() {
    let clock = ClockServer::new();
    let (bridge, page, mut sizes) =
        open_hearing(&clock, |b, tx| b.on_size_changed(forward(tx))).await;
    page.notify(
        "ui/notifications/size-changed",
        json!({"width": -5, "height": 1}),
    )
    .await;
    page.notify(
        "ui/notifications/size-changed",
        json!({"width": 320, "height": 240.5}),
    )
    .await;
    let size = within(WAIT, "the size", sizes.recv()).await.unwrap();
    assert_eq!((size.width, size.height), (320.0, 240.5));
    assert_eq!(bridge.view_size(), Some(size));
}

/// `lifecycle/teardown-notify`, `lifecycle/teardown-await`.
#[tokio::test]
async fn teardown_is_announced_and_awaited() {
    let clock = ClockServer::new();
    let (bridge, mut page) = open_initialized(&clock).await;
    let page_task = tokio::spawn(async move {
        let request = page.notification().await;
        assert_eq!(request["method"], "ui/resource-teardown");
        assert_eq!(request["params"]["reason"], "closed by the user");
        page.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
            .await;
        page
    });
    within(WAIT, "the teardown", bridge.teardown("closed by the user"))
        .await
        .unwrap();
    assert!(bridge.is_closed());
    let mut page = page_task.await.unwrap();
    assert!(
        within(WAIT, "the channel to close", page.link.recv())
            .await
            .is_none()
    );
    assert_eq!(
        bridge
            .send_tool_input(JsonObject::new())
            .unwrap_err()
            .kind(),
        BridgeErrorKind::Closed
    );

    // A view that answers the teardown with an error: reported, and torn down anyway.
    let (bridge, mut page) = open_initialized(&clock).await;
    let page_task = tokio::spawn(async move {
        let request = page.notification().await;
        page.send(json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": "unsaved"}}))
            .await;
    });
    let error = within(WAIT, "the teardown", bridge.teardown("replaced"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), BridgeErrorKind::View);
    assert!(bridge.is_closed());
    page_task.await.unwrap();
}

/// A request the view cancels (`notifications/cancelled`) is cancelled at the server
/// too.
#[tokio::test]
async fn a_request_the_view_cancels_is_cancelled_at_the_server() {
    use modelctx_apps::{Apps, ServerBuilderAppsExt, ToolUi, UiResource};
    use modelctx_server::{Context, NoArgs, ToolDef};

    /// Tells when the handler is dropped: the server may stop a cancelled handler by
    /// dropping it rather than by its token.
    struct Dropped(mpsc::UnboundedSender<&'static str>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.send("stopped");
        }
    }

    let (events_tx, mut events) = mpsc::unbounded_channel();
    let slow = ToolDef::new("slow", move |_: NoArgs, cx: Context| {
        let events = events_tx.clone();
        async move {
            let _ = events.send("started");
            let _dropped = Dropped(events.clone());
            cx.cancellation().cancelled().await;
            let _ = events.send("stopped");
            Ok::<_, String>("never seen")
        }
    });
    let apps = Apps::new()
        .resource(UiResource::html(
            "ui://slow/view",
            "Slow",
            "<!doctype html>",
        ))
        .unwrap()
        .tool(ToolUi::new("ui://slow/view").link(slow))
        .unwrap();
    let server = Server::builder("slow", "1.0.0").apps(apps).unwrap().build();
    let client = host_client(&server, ConnectMode::Handshake).await;
    let tool = client.list_all_tools().await.unwrap().remove(0);
    let view = UiView::load(&client, &tool).await.unwrap();
    let (host_end, page_end) = ViewLink::pair(16);
    let _bridge = AppBridge::builder(client, view).start(host_end);
    let mut page = Page::new(page_end);
    page.initialize(json!({})).await;
    page.send(json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": {"name": "slow"}}))
        .await;
    assert_eq!(
        within(WAIT, "the call to start", events.recv()).await,
        Some("started")
    );
    page.notify("notifications/cancelled", json!({"requestId": "slow-1"}))
        .await;
    assert_eq!(
        within(WAIT, "the server to stop it", events.recv()).await,
        Some("stopped")
    );
}

/// `security/global-allowlist`: the host's own list leaves declared origins out of the
/// sandbox, and the view is told what the host applies.
#[tokio::test]
async fn the_hosts_allow_list_narrows_the_sandbox() {
    let clock = ClockServer::new();
    let (bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, |b| {
        b.restrict_origins(|origin| origin != CONNECT_ORIGIN)
    })
    .await;
    let csp = bridge.sandbox().csp();
    assert!(csp.contains("connect-src 'none';"), "{csp}");
    assert!(csp.contains(RESOURCE_ORIGIN), "{csp}");
    assert_eq!(bridge.sandbox().ignored(), [CONNECT_ORIGIN]);
    let caps = page.initialize(json!({})).await["result"]["hostCapabilities"].clone();
    assert_eq!(
        caps["sandbox"]["csp"],
        json!({"resourceDomains": [RESOURCE_ORIGIN]})
    );
}

/// `security/sandbox-resource-ready`: a web host's sandbox proxy that says it is ready
/// gets the HTML with the policy to load it under.
#[tokio::test]
async fn a_ready_sandbox_proxy_gets_the_document() {
    let clock = ClockServer::new();
    let (_bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, |b| {
        b.grant(UiPermissions::new().clipboard_write())
    })
    .await;
    page.notify("ui/notifications/sandbox-proxy-ready", json!({}))
        .await;
    let ready = page.notification().await;
    assert_eq!(ready["method"], "ui/notifications/sandbox-resource-ready");
    assert_eq!(ready["params"]["html"], FACE_HTML);
    assert_eq!(
        ready["params"]["csp"]["resourceDomains"],
        json!([RESOURCE_ORIGIN])
    );
    assert_eq!(
        ready["params"]["permissions"],
        json!({"clipboardWrite": {}})
    );
}

/// What a misbehaving view sends gets a JSON-RPC error (or is dropped when there is no
/// one to answer), never a request to the server.
#[tokio::test]
async fn a_misbehaving_view_gets_errors() {
    let clock = ClockServer::new();
    let (_bridge, mut page, _client) = open(&clock, ConnectMode::Handshake, SHOW_TIME, |b| b).await;
    // Before ui/initialize: nothing but ping.
    let early = page.request("tools/call", json!({"name": TICK})).await;
    assert_eq!(error_code(&early), -32600);
    page.initialize(json!({})).await;
    let again = page.request("ui/initialize", json!({})).await;
    assert_eq!(error_code(&again), -32600);

    page.send(json!([1, 2])).await;
    let answer = page.recv().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (Value::Null, -32600)
    );
    page.send(json!({"jsonrpc": "1.0", "id": 9, "method": "ping"}))
        .await;
    let answer = page.answer_to(&json!(9)).await;
    assert_eq!(error_code(&answer), -32600);
    page.send(json!({"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"}))
        .await;
    let answer = page.recv().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (Value::Null, -32600)
    );
    page.send(json!({"jsonrpc": "2.0", "id": 10, "method": 5}))
        .await;
    assert_eq!(error_code(&page.answer_to(&json!(10)).await), -32600);
    page.send(json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": [TICK]}))
        .await;
    assert_eq!(error_code(&page.answer_to(&json!(11)).await), -32602);
    for unknown in ["ui/download-file", "sampling/createMessage", "prompts/list"] {
        assert_eq!(
            error_code(&page.request(unknown, json!({})).await),
            -32601,
            "{unknown}"
        );
    }
    // Notifications it has no business sending are dropped, and the bridge goes on.
    page.notify("ui/notifications/tool-result", json!({"content": []}))
        .await;
    page.send(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": 3}))
        .await;
    assert_eq!(page.request("ping", json!({})).await["result"], json!({}));
    assert!(clock.calls().is_empty());
}
