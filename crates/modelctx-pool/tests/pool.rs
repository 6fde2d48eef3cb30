//! `ClientPool` against real servers: a stdio child (this test binary, run again with
//! `serve-stdio`), a streamable HTTP server on loopback, and entries that cannot work.
//!
//! The harness is libtest-mimic (`harness = false`) so that `main` can be the child
//! server: libtest would write its banner on stdout, the child's protocol stream.

use std::time::Duration;

use modelctx::client::{Client, ConnectMode};
use modelctx::http::StreamableHttpService;
use modelctx::server::{Server, ToolDef};
use modelctx::transport::{ConnectionState, ReconnectPolicy};
use modelctx::types::{CallToolResult, JsonObject, Tool};
use modelctx_pool::{ClientPool, Health, McpServers};
use modelctx_test::trials::{self, trial};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// `echo` answers "<who>: <text>", `only_<who>` exists on one server only.
fn server(who: &str) -> Server {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let schema = schema.as_object().cloned().unwrap_or_default();
    let me = who.to_owned();
    let echo = ToolDef::with_schema(
        Tool::new("echo", schema.clone()),
        move |args: JsonObject, _cx| {
            let me = me.clone();
            async move {
                let text = args.get("text").and_then(Value::as_str).unwrap_or("");
                Ok::<_, String>(CallToolResult::text(format!("{me}: {text}")))
            }
        },
    );
    let only = ToolDef::with_schema(
        Tool::new(format!("only_{who}"), schema),
        |_args: JsonObject, _cx| async { Ok::<_, String>("only") },
    );
    Server::builder(format!("pool-test-{who}"), "1.0.0")
        .tool(echo)
        .and_then(|b| b.tool(only))
        .expect("tools register")
        .build()
}

fn serve_stdio() {
    modelctx_test::trials::serve_on_runtime(async {
        let who = std::env::var("POOL_TEST_WHO").unwrap_or_else(|_| "nobody".into());
        // While this file exists, the server fails at start.
        if let Ok(block) = std::env::var("POOL_TEST_BLOCK")
            && std::path::Path::new(&block).exists()
        {
            std::process::exit(2);
        }
        let session = server(&who).serve(modelctx::stdio::stdio());
        session.closed().await;
        session.close().await;
    });
}

/// A listener on a loopback port, and the `http://` URL of its address.
async fn loopback() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    (listener, base)
}

/// The streamable HTTP service of `server("web")`.
fn web_service() -> StreamableHttpService {
    let web = server("web");
    StreamableHttpService::new(move |transport| {
        web.serve(transport);
    })
}

/// Serves `server("web")` on 127.0.0.1 until the returned sender is dropped.
async fn serve_http() -> (String, tokio::sync::oneshot::Sender<()>) {
    let (listener, base) = loopback().await;
    let url = format!("{base}/mcp");
    let service = web_service();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(service.serve(listener, async move {
        let _ = stopped.await;
    }));
    (url, stop)
}

fn config(url: &str) -> McpServers {
    let exe = std::env::current_exe().expect("test exe");
    let doc = json!({"mcpServers": {
        "local": {"command": exe, "args": ["serve-stdio"], "env": {"POOL_TEST_WHO": "local"}},
        "web": {"type": "streamable-http", "url": url},
        "broken": {"command": "/nonexistent/modelctx-no-such-server"},
        "bad": {"type": "carrier-pigeon"},
        "a__b": {"command": exe, "args": ["serve-stdio"]},
        "off": {"command": exe, "disabled": true}
    }});
    servers(&doc)
}

/// The servers of the configuration `doc` (the `mcpServers` file format).
fn servers(doc: &Value) -> McpServers {
    McpServers::from_json(&doc.to_string()).expect("config parses")
}

/// The arguments of `echo`: `{"text": text}`.
fn echo_args(text: &str) -> JsonObject {
    json!({"text": text})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).expect("content")[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn connects_lists_routes_and_reports_health() {
    let (url, _stop) = serve_http().await;
    let pool = ClientPool::builder()
        .stderr(|server, line| eprintln!("[{server}] {line}"))
        .connect(&config(&url))
        .await;

    let health = pool.health();
    let names: Vec<_> = health.keys().map(String::as_str).collect();
    assert_eq!(names, ["a__b", "bad", "broken", "local", "web"]);
    assert!(health["local"].is_connected(), "{}", health["local"]);
    assert!(health["web"].is_connected(), "{}", health["web"]);
    let Health::Failed(broken) = &health["broken"] else {
        panic!("broken is {}", health["broken"]);
    };
    assert!(broken.is_spawn(), "{broken}");
    let Health::Failed(bad) = &health["bad"] else {
        panic!("bad is {}", health["bad"]);
    };
    assert!(
        bad.is_config() && bad.to_string().contains("carrier-pigeon"),
        "{bad}"
    );
    let Health::Failed(sep) = &health["a__b"] else {
        panic!("a__b is {}", health["a__b"]);
    };
    assert_eq!(
        sep.to_string(),
        "server name `a__b` contains the tool separator `__`"
    );

    let listing = pool.list_tools().await;
    assert!(listing.failures.is_empty());
    let mut names: Vec<_> = listing.tools.iter().map(|t| t.tool.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "local__echo",
            "local__only_local",
            "web__echo",
            "web__only_web"
        ]
    );
    let web_echo = listing
        .tools
        .iter()
        .find(|t| t.tool.name == "web__echo")
        .expect("listed");
    assert_eq!(
        (web_echo.server.as_str(), web_echo.original_name.as_str()),
        ("web", "echo")
    );

    let (local, web) = tokio::join!(
        pool.call_tool("local__echo", echo_args("hi")),
        pool.call_tool("web__echo", echo_args("there"))
    );
    assert_eq!(text(&local.expect("local call")), "local: hi");
    assert_eq!(text(&web.expect("web call")), "web: there");

    let unknown = pool
        .call_tool("nowhere__echo", echo_args("x"))
        .await
        .unwrap_err();
    assert!(unknown.is_refused(), "{unknown}");
    let no_sep = pool.call_tool("echo", echo_args("x")).await.unwrap_err();
    assert!(no_sep.is_refused(), "{no_sep}");
    let down = pool
        .call_tool("broken__echo", echo_args("x"))
        .await
        .unwrap_err();
    assert!(
        down.is_refused() && down.to_string().contains("not connected"),
        "{down}"
    );
    // A tool the server does not have is the server's answer, not the pool's.
    let missing = pool.call_tool("web__nope", echo_args("x")).await;
    assert!(
        missing
            .as_ref()
            .map(CallToolResult::is_error)
            .unwrap_or(true),
        "{missing:?}"
    );

    pool.close().await;
    for (name, health) in pool.health() {
        assert!(
            !health.is_connected(),
            "{name} is still connected after close"
        );
    }
    assert!(matches!(pool.health()["local"], Health::Closed));
    assert!(matches!(pool.health()["web"], Health::Closed));
}

async fn a_child_that_exits_is_reported_closed_and_the_rest_keep_working() {
    let (url, _stop) = serve_http().await;
    let pool = ClientPool::builder().connect(&config(&url)).await;
    let local = pool.connection("local").expect("local connected");
    let exited = local
        .child()
        .expect("a stdio child")
        .shutdown()
        .await
        .expect("shutdown");
    assert!(exited.status().code().is_some() || !exited.status().success());
    local.client().closed().await;
    assert!(matches!(pool.health()["local"], Health::Closed));
    assert!(pool.health()["web"].is_connected());

    let listing = pool.list_tools().await;
    let names: Vec<_> = listing.tools.iter().map(|t| t.tool.name.as_str()).collect();
    assert_eq!(names, ["web__echo", "web__only_web"]);
    let args = echo_args("still");
    let web = pool
        .call_tool("web__echo", args.clone())
        .await
        .expect("web");
    assert_eq!(text(&web), "web: still");
    let gone = pool.call_tool("local__echo", args).await.unwrap_err();
    assert!(gone.is_closed(), "{gone}");
    pool.close().await;
}

async fn a_custom_separator_namespaces_and_routes() {
    let (url, _stop) = serve_http().await;
    let doc = json!({"mcpServers": {"web": {"url": url}, "a__b": {"url": url}}});
    let config = servers(&doc);
    let pool = ClientPool::builder().separator(".").connect(&config).await;
    assert!(pool.health().values().all(Health::is_connected));
    assert_eq!(pool.route("a__b.echo"), Some(("a__b", "echo")));
    let args = echo_args("dot");
    let result = pool.call_tool("a__b.echo", args).await.expect("call");
    assert_eq!(text(&result), "web: dot");
    pool.close().await;
}

/// A legacy HTTP+SSE server (`/sse`, `/messages`) and nothing else: an entry typed
/// `sse` reaches it directly, an untyped URL through the fallback (its POST to `/sse`
/// is refused with 405).
async fn legacy_sse_directly_and_through_the_fallback() {
    let (listener, base) = loopback().await;
    let old = server("old");
    let sse = modelctx::sse::SseService::new(move |transport| {
        old.serve(transport);
    });
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(modelctx::http::hosting::serve_router(
        listener,
        sse.router(),
        Duration::from_secs(5),
        async move {
            let _ = stopped.await;
        },
    ));
    let doc = json!({"mcpServers": {
        "direct": {"type": "sse", "url": format!("{base}/sse")},
        "fallback": {"url": format!("{base}/sse")}
    }});
    let config = servers(&doc);
    let pool = ClientPool::builder().connect(&config).await;
    for (name, health) in pool.health() {
        assert!(health.is_connected(), "{name}: {health}");
    }
    let args = echo_args("legacy");
    for tool in ["direct__echo", "fallback__echo"] {
        let result = pool.call_tool(tool, args.clone()).await.expect(tool);
        assert_eq!(text(&result), "old: legacy", "{tool}");
    }
    pool.close().await;
}

/// A stdio child killed under the pool's reconnect policy is started again; while it
/// cannot be, its health says it is reconnecting; then calls go on.
async fn a_failed_child_comes_back_under_the_reconnect_policy() {
    let exe = std::env::current_exe().expect("test exe");
    let block = std::env::temp_dir().join(format!("modelctx-pool-block-{}", std::process::id()));
    let doc = json!({"mcpServers": {
        "local": {"command": exe, "args": ["serve-stdio"],
                  "env": {"POOL_TEST_WHO": "local", "POOL_TEST_BLOCK": block}},
    }});
    let config = servers(&doc);
    let policy = ReconnectPolicy::new()
        .initial_delay(Duration::from_millis(10))
        .max_delay(Duration::from_millis(50))
        .max_attempts(10_000);
    let pool = ClientPool::builder()
        .client(|_| Client::builder("pool-test", "1.0.0").mode(ConnectMode::Handshake))
        .reconnect(policy)
        .connect(&config)
        .await;
    assert!(
        pool.health()["local"].is_connected(),
        "{}",
        pool.health()["local"]
    );
    let local = pool.connection("local").expect("local connected");
    let pid = local.child().and_then(|c| c.id()).expect("a running child");
    let mut state = local
        .restarts()
        .expect("restarted by policy")
        .connection_state();

    std::fs::write(&block, b"blocked").expect("block file");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    // A start failed since (the block): the child is not back, and health says so.
    state
        .wait_for(|s| matches!(s, ConnectionState::Reconnecting { attempt } if *attempt >= 2))
        .await
        .expect("state");
    let health = pool.health();
    assert!(
        matches!(health["local"], Health::Reconnecting { .. }),
        "{}",
        health["local"]
    );
    assert!(health["local"].to_string().starts_with("reconnecting"));

    std::fs::remove_file(&block).expect("unblock");
    state
        .wait_for(|s| *s == ConnectionState::Connected)
        .await
        .expect("state");
    assert!(pool.health()["local"].is_connected());
    let args = echo_args("again");
    let result = pool.call_tool("local__echo", args).await.expect("call");
    assert_eq!(text(&result), "local: again");
    assert_ne!(local.child().and_then(|c| c.id()), Some(pid));
    assert_eq!(local.restarts().map(|r| r.restarts()), Some(1));
    pool.close().await;
}

/// An entry's `mode` wins over the client builder's (auto by default, which a server
/// of both eras answers in 2026-07-28), for a stdio child and an HTTP server alike.
async fn an_entrys_mode_reaches_the_client() {
    let (url, _stop) = serve_http().await;
    let exe = std::env::current_exe().expect("test exe");
    let doc = json!({"mcpServers": {
        "local": {"command": exe, "args": ["serve-stdio"], "mode": "handshake", "probeTimeout": 30},
        "web": {"url": url, "mode": "2025-06-18"},
        "modern": {"url": url}
    }});
    let config = servers(&doc);
    let pool = ClientPool::builder().connect(&config).await;
    let version = |name: &str| {
        pool.client(name)
            .unwrap_or_else(|| panic!("{name}: {}", pool.health()[name]))
            .protocol_version()
            .as_str()
            .to_owned()
    };
    assert_eq!(version("local"), "2025-11-25");
    assert_eq!(version("web"), "2025-06-18");
    assert_eq!(version("modern"), "2026-07-28");
    pool.close().await;
}

/// A streamable HTTP server that accepts its first connections late (its listener is
/// bound, its service starts after a while): the probe is awaited, not given up on,
/// whatever the probe wait, so the client lands in the era the server offers.
async fn an_http_server_slow_to_accept_is_connected_in_its_era() {
    let (listener, base) = loopback().await;
    let url = format!("{base}/mcp");
    let service = web_service();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        // The server is busy starting: connections wait in the listen backlog.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        service
            .serve(listener, async move {
                let _ = stopped.await;
            })
            .await
    });
    let entry = modelctx_pool::ServerConfig::Http(
        modelctx_pool::HttpServer::new(&url).with_probe_timeout(Duration::from_millis(100)),
    );
    let connection = entry
        .connect(
            Client::builder("c", "1"),
            &modelctx_pool::ConnectOptions::new(),
        )
        .await
        .expect("connects");
    assert_eq!(
        connection.client().protocol_version().as_str(),
        "2026-07-28"
    );
    assert_eq!(connection.client().server_info().name, "pool-test-web");
    connection.close().await;
    drop(stop);
}

fn main() {
    let trials = vec![
        trial(
            "connects_lists_routes_and_reports_health",
            WAIT,
            connects_lists_routes_and_reports_health,
        ),
        trial(
            "a_child_that_exits_is_reported_closed_and_the_rest_keep_working",
            WAIT,
            a_child_that_exits_is_reported_closed_and_the_rest_keep_working,
        ),
        trial(
            "a_custom_separator_namespaces_and_routes",
            WAIT,
            a_custom_separator_namespaces_and_routes,
        ),
        trial(
            "a_failed_child_comes_back_under_the_reconnect_policy",
            WAIT,
            a_failed_child_comes_back_under_the_reconnect_policy,
        ),
        trial(
            "legacy_sse_directly_and_through_the_fallback",
            WAIT,
            legacy_sse_directly_and_through_the_fallback,
        ),
        trial(
            "an_entrys_mode_reaches_the_client",
            WAIT,
            an_entrys_mode_reaches_the_client,
        ),
        trial(
            "an_http_server_slow_to_accept_is_connected_in_its_era",
            WAIT,
            an_http_server_slow_to_accept_is_connected_in_its_era,
        ),
    ];
    trials::main(serve_stdio, trials);
}
