//! The built `modelctx` binary against real servers: this test binary run again as a
//! stdio server (`serve-stdio`), and a streamable HTTP server on loopback in the test's
//! own runtime. Every run of the binary is bounded; stdout is parsed (`--json`) or
//! snapshot (human output), and the exit codes are asserted.
//!
//! The harness is libtest-mimic (`harness = false`) so that `main` can be the stdio
//! server: libtest would write its banner on stdout, the child's protocol stream.

use std::process::Stdio;
use std::time::Duration;

use modelctx::http::StreamableHttpService;
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Json, PromptDef, ResourceDef, Server, ToolDef};
use modelctx::session::Progress;
use modelctx_test::trials::{self, trial};
use serde_json::{Value, json};

mod secured;

#[cfg(not(feature = "rustls"))]
use secured::https_needs_the_rustls_feature;
#[cfg(feature = "rustls")]
use secured::https_with_a_ca_given_by_flag_or_env;
use secured::logs_in_when_the_server_asks;

const BIN: &str = env!("CARGO_BIN_EXE_modelctx");
const WAIT: Duration = Duration::from_secs(30);

#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Echo {
    /// What to say back.
    text: String,
}

#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Countdown {
    from: u32,
}

#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Greet {
    name: String,
}

#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct NoArgs {}

fn server(name: &str) -> Server {
    let echo = ToolDef::new("echo", |a: Echo, _cx: Context| async move {
        Ok::<_, String>(a.text)
    })
    .description("Says the text back.");
    let add = ToolDef::new("add", |a: Add, _cx: Context| async move {
        Ok::<_, String>(Json(a.a + a.b))
    })
    .description("Adds two integers.");
    let fail = ToolDef::new("fail", |_: NoArgs, _cx: Context| async move {
        Err::<String, _>("the tool failed on purpose".to_owned())
    });
    let countdown = ToolDef::new("countdown", |a: Countdown, cx: Context| async move {
        for step in 1..=a.from {
            let progress = Progress::new(f64::from(step)).with_total(f64::from(a.from));
            cx.report_progress(progress)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok::<_, String>("liftoff")
    })
    .description("Counts down, with progress.");
    let greeting = ResourceDef::new("mem://greeting", "greeting", |_cx| async {
        Ok::<_, String>("hello from a resource")
    });
    let greet = PromptDef::new("greet", |a: Greet, _cx: Context| async move {
        Ok::<_, String>(format!("Hello, {}!", a.name))
    });
    Server::builder(name, "1.0.0")
        .tool(echo)
        .and_then(|b| b.tool(add))
        .and_then(|b| b.tool(fail))
        .and_then(|b| b.tool(countdown))
        .and_then(|b| b.resource(greeting))
        .and_then(|b| b.prompt(greet))
        .expect("the test server registers")
        .build()
}

/// A server with skills (SEP-2640): one with a supporting file, one unlisted.
fn with_skills(name: &str) -> Server {
    use modelctx::skills::{ServerBuilderSkillsExt, Skill, Skills};
    let skills = Skills::new()
        .skill(
            Skill::new("acme/refunds")
                .file(
                    "SKILL.md",
                    "---\nname: refunds\ndescription: Process refund requests\n---\nSee examples/email.md.\n",
                )
                .file("examples/email.md", "Dear customer,\n"),
        )
        .and_then(|s| {
            s.skill(
                Skill::new("internal")
                    .file("SKILL.md", "---\nname: internal\ndescription: Unlisted\n---\n")
                    .unlisted(),
            )
        })
        .expect("the skills register");
    Server::builder(name, "1.0.0")
        .skills(skills)
        .expect("the skills install")
        .build()
}

fn serve_stdio() {
    modelctx_test::trials::serve_on_runtime(async {
        let name = std::env::var("CLI_TEST_NAME").unwrap_or_else(|_| "cli-test-stdio".into());
        // An interpreter importing its packages: nothing is read or written meanwhile.
        if let Some(ms) = std::env::var("CLI_TEST_STARTUP_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
        {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if std::env::var_os("CLI_TEST_MODERN_ONLY").is_some() {
            serve_refusing(server(&name), modern_only).await;
            return;
        }
        if std::env::var_os("CLI_TEST_BEHIND_PROXY").is_some() {
            serve_refusing(server(&name), behind_a_proxy).await;
            return;
        }
        let server = if std::env::var_os("CLI_TEST_SKILLS").is_some() {
            with_skills(&name)
        } else {
            server(&name)
        };
        let session = server.serve(modelctx::stdio::stdio());
        session.closed().await;
        session.close().await;
    });
}

/// How a server of protocol 2026-07-28 only answers `initialize`: `-32022` naming the
/// revision it speaks.
fn modern_only(method: &str) -> Option<modelctx::types::ErrorData> {
    use modelctx::types::{ErrorCode, ErrorData};
    (method == "initialize").then(|| {
        ErrorData::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({"supported": ["2026-07-28"]}))
    })
}

/// What a client sees through a proxy that opened its own session with a server of the
/// handshake era on the probe: the probe is an unknown method there, and the client's
/// own `initialize` a second one.
fn behind_a_proxy(method: &str) -> Option<modelctx::types::ErrorData> {
    use modelctx::types::ErrorData;
    match method {
        "server/discover" => Some(ErrorData::method_not_found(method)),
        "initialize" => Some(ErrorData::invalid_request(
            "initialize may be sent only once per session",
        )),
        _ => None,
    }
}

/// Serves `server` on stdio, answering the requests `refuse` refuses with its error.
async fn serve_refusing(server: Server, refuse: fn(&str) -> Option<modelctx::types::ErrorData>) {
    use modelctx::transport::{MessageSink, MessageStream, Transport, TransportMessage};
    use modelctx::types::{JsonRpcErrorResponse, JsonRpcMessage};

    // The real server behind an in-process pipe; this loop stands between it and stdio.
    let (server_end, relay_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let session = server.serve(modelctx::stdio::StdioTransport::new(read, write));
    let (read, write) = tokio::io::split(relay_end);
    let (to_server, mut from_server) = modelctx::stdio::StdioTransport::new(read, write).split();
    let (to_client, mut from_client) = modelctx::stdio::stdio().split();
    loop {
        tokio::select! {
            message = from_client.recv() => {
                // The client closed stdin: the server's cue to exit.
                let Some(message) = message else { break };
                let Ok(message) = message else { continue };
                let message = match message.message {
                    JsonRpcMessage::Request(request) => match refuse(&request.method) {
                        Some(refusal) => {
                            let refusal = JsonRpcErrorResponse::new(Some(request.id), refusal);
                            let _ = to_client.send(TransportMessage::new(refusal.into())).await;
                            continue;
                        }
                        None => TransportMessage::new(JsonRpcMessage::Request(request)),
                    },
                    other => TransportMessage::new(other),
                };
                let _ = to_server.send(message).await;
            }
            Some(Ok(message)) = from_server.recv() => {
                let _ = to_client.send(TransportMessage::new(message.message)).await;
            }
            else => break,
        }
    }
    session.close().await;
}

/// A listener on a free port of 127.0.0.1, and the URL of `/mcp` there for `scheme`.
async fn mcp_listener(scheme: &str) -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("{scheme}://{}/mcp", listener.local_addr().expect("addr"));
    (listener, url)
}

/// A streamable HTTP server on 127.0.0.1, served until the sender is dropped.
async fn serve_http() -> (String, tokio::sync::oneshot::Sender<()>) {
    let (listener, url) = mcp_listener("http").await;
    let server = server("cli-test-http");
    let service = StreamableHttpService::new(move |transport| {
        server.serve(transport);
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(service.serve(listener, async move {
        let _ = stopped.await;
    }));
    (url, stop)
}

/// The arguments that make this binary a stdio server.
fn stdio_target() -> Vec<String> {
    let exe = std::env::current_exe().expect("test exe");
    vec![
        "--".into(),
        exe.to_string_lossy().into_owned(),
        "serve-stdio".into(),
    ]
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts that the run succeeded and printed exactly `stdout`.
    fn assert_printed(&self, stdout: &str) {
        assert_eq!(
            (self.code, self.stdout.as_str()),
            (0, stdout),
            "{}",
            self.stderr
        );
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs `modelctx ARGS`, bounded.
async fn modelctx(args: &[&str], extra: &[String]) -> Run {
    modelctx_with_env(args, extra, &[]).await
}

/// Runs `modelctx ARGS` with `env` set (and no `MODELCTX_*` variable of ours), bounded.
async fn modelctx_with_env(args: &[&str], extra: &[String], env: &[(&str, &str)]) -> Run {
    let mut command = tokio::process::Command::new(BIN);
    command
        .args(args)
        .args(extra)
        .env_remove("MODELCTX_CONFIG")
        .env_remove("MODELCTX_CA_CERT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("modelctx {args:?} did not finish within {WAIT:?}"))
        .expect("modelctx runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    let mut names: Vec<String> = list[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .filter_map(|item| item[field].as_str().map(str::to_owned))
        .collect();
    names.sort_unstable();
    names
}

async fn list_json_over_stdio() {
    let run = modelctx(&["list", "--json"], &stdio_target()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let list = run.json();
    assert_eq!(
        names(&list, "tools", "name"),
        ["add", "countdown", "echo", "fail"]
    );
    assert_eq!(names(&list, "resources", "uri"), ["mem://greeting"]);
    assert_eq!(names(&list, "prompts", "name"), ["greet"]);
    assert_eq!(list["resourceTemplates"], json!([]));
    assert_eq!(list["serverInfo"]["name"], "cli-test-stdio");
    // Auto mode: the server offers 2026-07-28.
    assert_eq!(list["protocolVersion"], "2026-07-28");

    let run = modelctx(&["list", "tools", "--json"], &stdio_target()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let list = run.json();
    assert!(list.get("tools").is_some() && list.get("prompts").is_none());
}

async fn list_human_output() {
    let run = modelctx(&["list", "--mode", "handshake"], &stdio_target()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("list_human", run.stdout);
}

async fn call_over_http_in_both_eras() {
    let (url, _stop) = serve_http().await;
    for (mode, era) in [
        ("auto", "2026-07-28"),
        ("handshake", "2025-11-25"),
        ("2026", "2026-07-28"),
    ] {
        let run = modelctx(&["list", "--json", "--mode", mode, &url], &[]).await;
        assert_eq!(run.code, 0, "{mode}: {}", run.stderr);
        assert_eq!(run.json()["protocolVersion"], era, "{mode}");

        let run = modelctx(
            &[
                "call", "add", "a=2", "b:=40", "--json", "--mode", mode, &url,
            ],
            &[],
        )
        .await;
        assert_eq!(run.code, 0, "{mode}: {}", run.stderr);
        let result = run.json();
        assert_eq!(
            result["structuredContent"]["result"], 42,
            "{mode}: {result}"
        );
        assert!(
            !result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        );

        let run = modelctx(&["call", "add", "a=2", "b:=40", "--mode", mode, &url], &[]).await;
        assert_eq!(run.code, 0, "{mode}: {}", run.stderr);
        assert_eq!(run.stdout, "{\"result\":42}\n", "{mode}");
    }
}

async fn a_string_property_keeps_what_looks_like_json() {
    let run = modelctx(&["call", "echo", "text=42", "--json"], &stdio_target()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["content"][0]["text"], "42");
    let run = modelctx(&["call", "echo", "text=two words"], &stdio_target()).await;
    run.assert_printed("two words\n");
}

async fn a_tool_error_exits_1() {
    let run = modelctx(&["call", "fail"], &stdio_target()).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.contains("the tool failed on purpose"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("reported an error"), "{}", run.stderr);

    let run = modelctx(&["call", "fail", "--json"], &stdio_target()).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.json()["isError"], true);
}

async fn progress_goes_to_stderr() {
    let (url, _stop) = serve_http().await;
    let run = modelctx(&["call", "countdown", "from=3", &url], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "liftoff\n");
    let lines: Vec<_> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress"))
        .collect();
    assert_eq!(
        lines,
        ["progress 1/3", "progress 2/3", "progress 3/3"],
        "{}",
        run.stderr
    );

    let run = modelctx(&["call", "countdown", "from=3", "--quiet", &url], &[]).await;
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
}

async fn read_and_prompt() {
    let (url, _stop) = serve_http().await;
    let run = modelctx(&["read", "mem://greeting", &url], &[]).await;
    run.assert_printed("hello from a resource\n");
    let run = modelctx(&["read", "mem://greeting", "--json", &url], &[]).await;
    assert_eq!(run.json()["contents"][0]["uri"], "mem://greeting");

    let run = modelctx(&["prompt", "greet", "name=Ada"], &stdio_target()).await;
    run.assert_printed("user: Hello, Ada!\n");
    let run = modelctx(&["prompt", "greet", "name=Ada", "--json"], &stdio_target()).await;
    assert_eq!(run.json()["messages"][0]["content"]["text"], "Hello, Ada!");
}

/// Runs `modelctx skills <args> --mode <mode>` against this binary serving skills.
async fn skills(args: &[&str], mode: &str) -> Run {
    let args: Vec<&str> = ["skills"]
        .into_iter()
        .chain(args.iter().copied())
        .chain(["--mode", mode])
        .collect();
    modelctx_with_env(&args, &stdio_target(), &[("CLI_TEST_SKILLS", "1")]).await
}

async fn skills_list_get_and_pull() {
    for mode in ["handshake", "auto"] {
        let run = skills(&["list", "--json"], mode).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let listed = run.json();
        assert_eq!(
            names(&listed, "skills", "uri"),
            ["skill://acme/refunds/SKILL.md"],
            "{mode}"
        );
        let run = skills(&["list"], mode).await;
        assert!(
            run.stdout
                .contains("refunds  skill://acme/refunds/SKILL.md  (2 files)"),
            "{}",
            run.stdout
        );

        let run = skills(&["get", "skill://internal/SKILL.md", "--json"], mode).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.json()["frontmatter"]["name"], "internal");
        let run = skills(&["get", "skill://nope/SKILL.md"], mode).await;
        assert_eq!(run.code, 3, "{}", run.stderr);
        assert!(run.stderr.contains("-32602"), "{}", run.stderr);

        let dir =
            std::env::temp_dir().join(format!("modelctx-cli-pull-{}-{mode}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let to = dir.to_string_lossy().into_owned();
        let run = skills(
            &["pull", "skill://acme/refunds/SKILL.md", "--to", &to],
            mode,
        )
        .await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        // The server's label (the stdio program's name) is part of the path.
        let exe = std::env::current_exe().unwrap();
        let label = exe.file_name().unwrap().to_string_lossy().into_owned();
        let root = dir
            .join(label.replace('.', "%2E"))
            .join("skill/acme/refunds");
        assert!(
            run.stdout.contains("pulled refunds (2 files, verified)"),
            "{}",
            run.stdout
        );
        assert_eq!(
            std::fs::read_to_string(root.join("examples/email.md")).unwrap(),
            "Dear customer,\n"
        );
        assert!(
            std::fs::read_to_string(root.join("SKILL.md"))
                .unwrap()
                .contains("name: refunds")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    // A server without skills: refused before anything is sent.
    let run = modelctx(&["skills", "list"], &stdio_target()).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("did not declare"), "{}", run.stderr);
}

async fn a_server_from_a_config_file() {
    let (url, _stop) = serve_http().await;
    let exe = std::env::current_exe().expect("test exe");
    let dir = std::env::temp_dir().join(format!("modelctx-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("mcp.json");
    let config = json!({"mcpServers": {
        "local": {"command": exe, "args": ["serve-stdio"], "env": {"CLI_TEST_NAME": "from-config"}},
        "web": {"type": "http", "url": url},
        "broken": {"type": "telepathy"}
    }});
    std::fs::write(&path, config.to_string()).expect("write config");
    let file = path.to_string_lossy().into_owned();

    let run = modelctx(
        &["list", "--json", "--server", "local", "--config", &file],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["serverInfo"]["name"], "from-config");
    let run = modelctx(
        &["call", "echo", "text=hi", "--server=web", "--config", &file],
        &[],
    )
    .await;
    run.assert_printed("hi\n");

    let run = modelctx(&["list", "--server", "nope", "--config", &file], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("no server `nope`") && run.stderr.contains("broken, local, web"),
        "{}",
        run.stderr
    );
    let run = modelctx(&["list", "--server", "broken", "--config", &file], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("telepathy"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn usage_and_failure_exit_codes() {
    let run = modelctx(&["list"], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no server given"), "{}", run.stderr);
    let run = modelctx(&["call", "add", "a:={", "http://127.0.0.1:9/mcp"], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = modelctx(&["--help"], &[]).await;
    assert!(run.code == 0 && run.stdout.contains("Exit status"));

    // Nothing listens on a port we bound and released.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = modelctx(&["list", "--no-login", &url], &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("cannot connect"), "{}", run.stderr);
    let run = modelctx(
        &["list"],
        &["--".into(), "/nonexistent/modelctx-no-such-server".into()],
    )
    .await;
    assert_eq!(run.code, 3, "{}", run.stderr);

    // An error answer from the server (an unknown tool) is a protocol failure.
    let (url, _stop) = serve_http().await;
    let run = modelctx(&["call", "no_such_tool", &url], &[]).await;
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("no_such_tool"), "{}", run.stderr);
}

/// The reported failure: `modelctx call` in auto mode against a server of 2026-07-28
/// only that imports for longer than the probe wait (scaled down: 1.5 s against a
/// 300 ms wait). It answers the probe and refuses `initialize` with `-32022`, both
/// late, and the call goes through.
async fn call_a_slow_starting_stdio_server_in_auto_mode() {
    let slow = [
        ("CLI_TEST_STARTUP_MS", "1500"),
        ("CLI_TEST_MODERN_ONLY", "1"),
        ("CLI_TEST_NAME", "slow-py"),
    ];
    let run = modelctx_with_env(
        &[
            "call",
            "echo",
            "text=hi",
            "--json",
            "--probe-timeout",
            "300ms",
        ],
        &stdio_target(),
        &slow,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["content"][0]["text"], "hi");
    let run = modelctx_with_env(
        &["list", "tools", "--json", "--probe-timeout=0.3"],
        &stdio_target(),
        &slow,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["protocolVersion"], "2026-07-28");
    assert_eq!(run.json()["serverInfo"]["name"], "slow-py");
}

/// `--mode` takes a revision to pin (no probe: the first message is the request), and
/// a refused connection names what was tried and how to pin the era.
async fn the_mode_pins_a_revision_and_failures_say_what_was_tried() {
    let run = modelctx(&["list", "--json", "--mode", "2026-07-28"], &stdio_target()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let list = run.json();
    assert_eq!(list["protocolVersion"], "2026-07-28");
    assert_eq!(
        names(&list, "tools", "name"),
        ["add", "countdown", "echo", "fail"]
    );
    let run = modelctx(&["list", "--json", "--mode", "2025-06-18"], &stdio_target()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["protocolVersion"], "2025-06-18");

    // A server of 2026-07-28 only refuses the handshake: handshake mode says so.
    let run = modelctx_with_env(
        &["list", "--mode", "handshake"],
        &stdio_target(),
        &[("CLI_TEST_MODERN_ONLY", "1")],
    )
    .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot connect: no protocol era settled with the server: sent initialize (2025-11-25): error -32022")
            && run.stderr.contains("connect in auto or discover mode"),
        "{}",
        run.stderr
    );

    // Behind a proxy that took the probe for the start of its own session: what was
    // tried, and the flag that pins the era.
    let run = modelctx_with_env(
        &["list"],
        &stdio_target(),
        &[("CLI_TEST_BEHIND_PROXY", "1")],
    )
    .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("sent server/discover (2026-07-28): error -32601")
            && run
                .stderr
                .contains("then initialize (2025-11-25): error -32600")
            && run.stderr.contains("pin the era")
            && run
                .stderr
                .contains("--mode handshake, or --mode 2026-07-28"),
        "{}",
        run.stderr
    );
}

fn main() {
    // Each test, named after its function, within four times the usual wait.
    macro_rules! trial {
        ($test:ident) => {
            trial(stringify!($test), 4 * WAIT, $test)
        };
    }
    let trials = vec![
        trial!(list_json_over_stdio),
        trial!(list_human_output),
        trial!(call_over_http_in_both_eras),
        trial!(a_string_property_keeps_what_looks_like_json),
        trial!(a_tool_error_exits_1),
        trial!(progress_goes_to_stderr),
        trial!(read_and_prompt),
        trial!(a_server_from_a_config_file),
        trial!(skills_list_get_and_pull),
        trial!(usage_and_failure_exit_codes),
        trial!(call_a_slow_starting_stdio_server_in_auto_mode),
        trial!(the_mode_pins_a_revision_and_failures_say_what_was_tried),
        trial!(logs_in_when_the_server_asks),
        #[cfg(feature = "rustls")]
        trial!(https_with_a_ca_given_by_flag_or_env),
        #[cfg(not(feature = "rustls"))]
        trial!(https_needs_the_rustls_feature),
    ];
    trials::main(serve_stdio, trials);
}
