//! A stdio server child restarted by policy (`ChildProcess::spawn_restarting`), with a
//! client session over it in both eras: a killed child is started again and calls go on;
//! a call in flight when the child dies fails as interrupted and is not sent again; a
//! child that cannot be started again ends the session with an error that says so.
//!
//! The child is this test binary run again with `serve-stdio` (libtest-mimic, so that
//! `main` can be the child: libtest would write its banner on stdout, the child's
//! protocol stream).

use std::time::Duration;

use modelctx_client::{Client, ConnectMode};
use modelctx_server::{Context, ResourceDef, Server, ToolDef};
use modelctx_stdio::{ChildProcess, RestartHandle, RestartPolicy};
use modelctx_test::trials::{self, trial};
use modelctx_transport::{ConnectionState, ReconnectPolicy};
use modelctx_types::{CallToolResult, JsonObject, ListToolsRequest, ListToolsResult, Tool};

const WAIT: Duration = Duration::from_secs(20);

/// `pid` answers the child's process id; `crash` ends the process before answering.
fn serve_stdio() {
    // `--once FILE`: only the first child serves; later ones exit at once, failing.
    let args: Vec<String> = std::env::args().collect();
    if let Some(file) = args
        .iter()
        .position(|a| a == "--once")
        .map(|i| &args[i + 1])
    {
        if std::path::Path::new(file).exists() {
            std::process::exit(2);
        }
        std::fs::write(file, b"started").expect("marker file");
    }
    let pid = ToolDef::with_schema(
        Tool::without_arguments("pid"),
        |_args: JsonObject, _cx: Context| async {
            Ok::<_, String>(CallToolResult::text(std::process::id().to_string()))
        },
    );
    let crash = ToolDef::with_schema(
        Tool::without_arguments("crash"),
        |_args: JsonObject, _cx: Context| async {
            if true {
                std::process::exit(3);
            }
            Ok::<_, String>(CallToolResult::text(""))
        },
    );
    // How many sessions are subscribed to `test://watched` (and are told it changed).
    let updated = ToolDef::with_schema(
        Tool::without_arguments("updated"),
        |_args: JsonObject, cx: Context| async move {
            let told = cx.server().notify_resource_updated("test://watched").await;
            Ok::<_, String>(CallToolResult::text(told.to_string()))
        },
    );
    let watched = ResourceDef::new("test://watched", "watched", |_cx: Context| async {
        Ok::<_, String>("contents")
    });
    // `--die-on-first-list FILE`: the first child to get `tools/list` dies of it.
    let die_on_list = args
        .iter()
        .position(|a| a == "--die-on-first-list")
        .map(|i| args[i + 1].clone());
    let mut server = Server::builder("restartable", "1.0.0");
    if let Some(marker) = die_on_list {
        server = server.request_handler::<ListToolsRequest, _, _>(move |_params, _cx| {
            if !std::path::Path::new(&marker).exists() {
                std::fs::write(&marker, b"listed").expect("marker file");
                std::process::exit(3);
            }
            async {
                Ok(ListToolsResult::new(vec![Tool::without_arguments(
                    "listed",
                )]))
            }
        });
    }
    let server = server
        .tool(pid)
        .and_then(|b| b.tool(crash))
        .and_then(|b| b.tool(updated))
        .and_then(|b| b.resource(watched))
        .expect("tools register")
        .build();
    trials::serve_on_runtime(async {
        let session = server.serve(modelctx_stdio::stdio());
        session.closed().await;
        session.close().await;
    });
}

fn policy(attempts: u32) -> RestartPolicy {
    RestartPolicy::OnFailure(
        ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(10))
            .max_delay(Duration::from_millis(100))
            .max_attempts(attempts),
    )
}

fn child() -> ChildProcess {
    ChildProcess::new(std::env::current_exe().expect("test binary")).arg("serve-stdio")
}

async fn connect(
    child: ChildProcess,
    policy: RestartPolicy,
    mode: ConnectMode,
) -> (Client, RestartHandle) {
    let transport = child.spawn_restarting(policy).expect("spawn");
    let handle = transport.handle();
    let client = Client::builder("survivor", "1.0.0")
        .mode(mode)
        .connect(transport)
        .await
        .expect("connect");
    (client, handle)
}

async fn text(client: &Client, tool: &str) -> String {
    let result = client.call_tool(tool, JsonObject::new()).await.expect(tool);
    result.content[0].as_text().unwrap_or_default().to_owned()
}

async fn pid(client: &Client) -> u32 {
    let result = client
        .call_tool("pid", JsonObject::new())
        .await
        .expect("pid");
    result.content[0]
        .as_text()
        .and_then(|t| t.parse().ok())
        .expect("a pid")
}

fn kill(pid: u32) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    kill(
        Pid::from_raw(i32::try_from(pid).expect("pid")),
        Signal::SIGKILL,
    )
    .expect("kill");
}

/// Waits until the handle counts `n` restarts and the new child is in place.
async fn restarted(handle: &RestartHandle, n: u32) {
    let mut state = handle.connection_state();
    state
        .wait_for(|s| *s == ConnectionState::Connected && handle.restarts() >= n)
        .await
        .expect("the handle lives");
}

fn eras() -> [(ConnectMode, &'static str); 2] {
    [
        (ConnectMode::Handshake, "2025"),
        (ConnectMode::Auto, "2026"),
    ]
}

async fn a_killed_child_is_started_again_and_calls_go_on() {
    for (mode, era) in eras() {
        let (client, handle) = connect(child(), policy(5), mode).await;
        client.list_all_tools().await.expect("list");
        let first = pid(&client).await;
        assert_eq!(handle.current().and_then(|c| c.id()), Some(first), "{era}");
        if era == "2025" {
            client
                .subscribe_resource("test://watched")
                .await
                .expect("subscribe");
            assert_eq!(text(&client, "updated").await, "1");
        }

        kill(first);
        restarted(&handle, 1).await;
        let second = pid(&client).await;
        assert_ne!(first, second, "{era}");
        if era == "2025" {
            // The new child got the session's subscription with its initialize.
            assert_eq!(text(&client, "updated").await, "1");
        }
        assert_eq!(handle.restarts(), 1, "{era}");
        // Lists (idempotent) and calls alike.
        assert_eq!(
            client.list_all_tools().await.expect("list").len(),
            3,
            "{era}"
        );
        client.close().await;
        let _ = handle.shutdown().await;
    }
}

async fn a_call_in_flight_when_the_child_dies_fails_as_interrupted_and_is_not_sent_again() {
    for (mode, era) in eras() {
        let (client, handle) = connect(child(), policy(5), mode).await;
        client.list_all_tools().await.expect("list");
        let first = pid(&client).await;

        let error = client
            .call_tool("crash", JsonObject::new())
            .await
            .expect_err("the child died before answering");
        assert!(error.is_interrupted(), "{era}: {error}");
        assert!(
            error.to_string().contains("may or may not have run"),
            "{era}: {error}"
        );

        restarted(&handle, 1).await;
        assert_ne!(pid(&client).await, first, "{era}");
        // Sent again, the call would have ended the new child as well.
        assert_eq!(handle.restarts(), 1, "{era}");
        client.close().await;
        let _ = handle.shutdown().await;
    }
}

async fn a_child_that_cannot_be_started_again_ends_the_session_with_a_clear_error() {
    for (mode, era) in eras() {
        let marker = marker("once", era);
        let once = child().arg("--once").arg(&marker);
        let (client, handle) = connect(once, policy(3), mode).await;
        client.list_all_tools().await.expect("list");
        let mut state = handle.connection_state();
        kill(pid(&client).await);

        // A list sent now reaches no server that lives: it fails with the reason.
        let error = client
            .list_all_tools()
            .await
            .expect_err("no server any more");
        assert!(
            error.to_string().contains("gave up after 3 restarts"),
            "{era}: {error}"
        );
        let failed = state
            .wait_for(|s| matches!(s, ConnectionState::Failed(_)))
            .await
            .expect("the handle lives")
            .clone();
        let ConnectionState::Failed(reason) = failed else {
            unreachable!()
        };
        assert!(
            reason.contains("gave up after 3 restarts"),
            "{era}: {reason}"
        );
        assert!(reason.contains("exited"), "{era}: {reason}");
        client.closed().await;
        let _ = std::fs::remove_file(&marker);
    }
}

fn marker(what: &str, era: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "modelctx-restart-{what}-{}-{era}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ))
}

async fn a_list_in_flight_when_the_child_dies_is_sent_again_and_answered_once() {
    for (mode, era) in eras() {
        let marker = marker("list", era);
        let dies = child().arg("--die-on-first-list").arg(&marker);
        let (client, handle) = connect(dies, policy(5), mode).await;
        let page = client
            .list_tools(None)
            .await
            .unwrap_or_else(|e| panic!("{era}: {e}"));
        let names: Vec<_> = page.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["listed"], "{era}");
        assert_eq!(handle.restarts(), 1, "{era}");
        client.close().await;
        let _ = handle.shutdown().await;
        let _ = std::fs::remove_file(&marker);
    }
}

fn main() {
    let trials = vec![
        trial(
            "a_killed_child_is_started_again_and_calls_go_on",
            WAIT,
            a_killed_child_is_started_again_and_calls_go_on,
        ),
        trial(
            "a_call_in_flight_when_the_child_dies_fails_as_interrupted_and_is_not_sent_again",
            WAIT,
            a_call_in_flight_when_the_child_dies_fails_as_interrupted_and_is_not_sent_again,
        ),
        trial(
            "a_list_in_flight_when_the_child_dies_is_sent_again_and_answered_once",
            WAIT,
            a_list_in_flight_when_the_child_dies_is_sent_again_and_answered_once,
        ),
        trial(
            "a_child_that_cannot_be_started_again_ends_the_session_with_a_clear_error",
            WAIT,
            a_child_that_cannot_be_started_again_ends_the_session_with_a_clear_error,
        ),
    ];
    trials::main(serve_stdio, trials);
}
