//! The stdio transport on real child processes: the `stdio-fixture` binary of this
//! package (see `src/bin/stdio-fixture.rs`) is the server, spawned through
//! `modelctx::stdio::ChildProcess`. These requirements apply to stdio only, so the
//! harness runs them on the stdio leg alone; they spawn their own child instead of
//! using the connector's in-process pipes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::Client;
use modelctx::session::{Progress, RequestOptions};
use modelctx::stdio::{ChildHandle, ChildProcess, Diagnostic, ShutdownStep, Stderr, StdioOptions};
use modelctx::transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, JsonRpcMessage, JsonRpcNotification, ListToolsRequest,
    RawValue,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::support::client;
use modelctx_test::text_of;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_client_drives_a_server_process_over_its_pipes,
            ["transport:stdio"]
        ),
        conformance_test!(
            a_dying_server_fails_pending_requests_at_once,
            ["transport:stdio"]
        ),
        conformance_test!(
            closing_the_client_lets_the_server_exit_normally,
            ["transport:stdio:clean-shutdown"]
        ),
        conformance_test!(
            both_directions_carry_nothing_but_messages,
            ["transport:stdio:stream-purity"]
        ),
        conformance_test!(
            the_server_writes_one_line_per_message,
            ["transport:stdio:no-embedded-newlines"]
        ),
        conformance_test!(
            the_client_writes_one_line_per_message,
            ["transport:stdio:no-embedded-newlines"]
        ),
        conformance_test!(
            a_server_ignoring_stdin_close_is_terminated_then_killed,
            ["transport:stdio:shutdown-escalation"]
        ),
        conformance_test!(
            the_servers_stderr_reaches_the_client_side,
            ["transport:stdio:stderr-passthrough"]
        ),
    ]
}

const FIXTURE: &str = env!("CARGO_BIN_EXE_stdio-fixture");

/// A short escalation step, so the escalation tests take well under a second.
const STEP: Duration = Duration::from_millis(200);

/// The fixture, its stderr lines delivered to a channel.
fn fixture(args: &[&str]) -> (ChildProcess, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let child = ChildProcess::new(FIXTURE)
        .args(args)
        .stderr(Stderr::lines(move |line| {
            let _ = tx.send(line.to_owned());
        }));
    (child, rx)
}

/// Waits for the stderr line `want`, skipping others; returns the lines seen before it.
async fn stderr_line(rx: &mut mpsc::UnboundedReceiver<String>, want: &str) -> Vec<String> {
    let mut before = Vec::new();
    within(want, async {
        while let Some(line) = rx.recv().await {
            if line == want {
                return;
            }
            before.push(line);
        }
        panic!("stderr ended before {want:?}; saw {before:?}");
    })
    .await;
    before
}

/// Diagnostics a transport reports, collected.
fn diagnostics() -> (StdioOptions, Arc<Mutex<Vec<Diagnostic>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = StdioOptions::new().on_diagnostic(move |d| log.lock().unwrap().push(d.clone()));
    (options, seen)
}

async fn connect(child: ChildProcess) -> (Client, ChildHandle) {
    let spawned = child.spawn().expect("the fixture spawns");
    let handle = spawned.handle();
    let client = within("the client to connect", client().connect(spawned))
        .await
        .expect("the client connects");
    (client, handle)
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap_or_default())
}

async fn a_client_drives_a_server_process_over_its_pipes(_connect: Connector) {
    let (child, _stderr) = fixture(&[]);
    let (client, handle) = connect(child).await;
    assert_eq!(client.server_info().name, "stdio-fixture");

    let tools = within("tools/list", client.request::<ListToolsRequest>(None))
        .await
        .unwrap();
    assert!(tools.tools.iter().any(|t| t.name == "countdown"));

    let progress: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = progress.clone();
    let options = RequestOptions::new().on_progress(move |p| sink.lock().unwrap().push(p));
    let result = within(
        "tools/call countdown",
        client.request_with::<CallToolRequest>(call("countdown", json!({"from": 3})), options),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&result), "liftoff");
    let steps: Vec<f64> = progress
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.progress)
        .collect();
    assert_eq!(steps, [1.0, 2.0, 3.0]);

    client.close().await;
    let outcome = within("shutdown", handle.shutdown()).await.unwrap();
    assert_eq!(outcome.step(), ShutdownStep::Exited);
    assert!(outcome.status().success());
}

async fn a_dying_server_fails_pending_requests_at_once(_connect: Connector) {
    let (child, _stderr) = fixture(&[]);
    let (client, handle) = connect(child).await;
    let err = within(
        "the pending call to fail",
        client.request::<CallToolRequest>(call("crash", json!({}))),
    )
    .await
    .unwrap_err();
    assert!(err.is_closed(), "{err}");
    let status = within("the exit status", handle.wait()).await.unwrap();
    assert_eq!(status.code(), Some(3));
}

async fn closing_the_client_lets_the_server_exit_normally(_connect: Connector) {
    let (child, mut stderr) = fixture(&[]);
    let (client, handle) = connect(child).await;
    client.close().await;
    // Closing the client closed the child's stdin: the server ends its session and
    // exits on its own, with no signal.
    stderr_line(&mut stderr, "stdio-fixture: stdin closed").await;
    let status = within("the server to exit", handle.wait()).await.unwrap();
    assert!(status.success(), "{status}");
    let outcome = within("shutdown", handle.shutdown()).await.unwrap();
    assert_eq!(outcome.step(), ShutdownStep::Exited);
}

async fn both_directions_carry_nothing_but_messages(_connect: Connector) {
    let (options, seen) = diagnostics();
    let (child, mut stderr) = fixture(&[]);
    let (client, handle) = connect(child.options(options)).await;
    within("tools/list", client.request::<ListToolsRequest>(None))
        .await
        .unwrap();
    for (name, args) in [
        ("greet", json!({"name": "line\nbreak"})),
        ("countdown", json!({"from": 2})),
    ] {
        let options = RequestOptions::new().on_progress(|_| {});
        within(
            "tools/call",
            client.request_with::<CallToolRequest>(call(name, args), options),
        )
        .await
        .unwrap();
    }
    client.close().await;
    // Everything the server wrote on stdout parsed as a message (the client reports any
    // other line), and everything the client wrote parsed on the server's side (the
    // fixture reports any other line on stderr before it says stdin closed).
    let before = stderr_line(&mut stderr, "stdio-fixture: stdin closed").await;
    assert!(
        before.iter().all(|l| !l.contains("impure input")),
        "{before:?}"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "{:?}",
        seen.lock().unwrap()
    );
    within("shutdown", handle.shutdown()).await.unwrap();
}

async fn the_server_writes_one_line_per_message(_connect: Connector) {
    // Raw pipes, no SDK client: read exactly the bytes the server writes.
    let mut child = tokio::process::Command::new(FIXTURE)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "greet", "arguments": {"name": "multi\nline"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "countdown", "arguments": {"from": 2}, "_meta": {"progressToken": "t"}}}),
    ];
    let mut bytes = Vec::new();
    // The initialize request alone; the rest once its result is in (as a client must).
    for (messages, lines) in [(&input[..1], 1), (&input[1..], 5)] {
        for message in messages {
            let mut line = serde_json::to_vec(message).unwrap();
            line.push(b'\n');
            stdin.write_all(&line).await.unwrap();
        }
        within("the server's messages", async {
            let mut chunk = [0u8; 4096];
            while bytes.iter().filter(|&&b| b == b'\n').count() < lines {
                let n = stdout.read(&mut chunk).await.unwrap();
                assert!(
                    n > 0,
                    "stdout ended early: {}",
                    String::from_utf8_lossy(&bytes)
                );
                bytes.extend_from_slice(&chunk[..n]);
            }
        })
        .await;
    }
    // Then close stdin and read to the end.
    drop(stdin);
    within("stdout to end", stdout.read_to_end(&mut bytes))
        .await
        .unwrap();
    within("the server to exit", child.wait()).await.unwrap();

    assert_eq!(bytes.last(), Some(&b'\n'));
    assert!(!bytes.contains(&b'\r'));
    let messages: Vec<JsonRpcMessage> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|line| {
            JsonRpcMessage::from_slice(line).unwrap_or_else(|e| {
                panic!("{e}: {}", String::from_utf8_lossy(line));
            })
        })
        .collect();
    // The initialize result, two progress notifications, two tool results.
    assert_eq!(messages.len(), 5, "{}", String::from_utf8_lossy(&bytes));
    let greeting = messages
        .iter()
        .find_map(|m| match m {
            JsonRpcMessage::Response(r) if r.id == 2.into() => Some(r.result.get().to_owned()),
            _ => None,
        })
        .expect("the greet result");
    let value: Value = serde_json::from_str(&greeting).unwrap();
    assert!(
        value["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("multi\nline!\n"),
        "{value}"
    );
}

async fn the_client_writes_one_line_per_message(_connect: Connector) {
    // The fixture's echo mode sends the client's own lines back: a message the client
    // split over lines would come back as fragments the client reports as skipped.
    let (options, seen) = diagnostics();
    let spawned = ChildProcess::new(FIXTURE)
        .arg("echo")
        .options(options)
        .spawn()
        .unwrap();
    let handle = spawned.handle();
    let (sink, mut stream) = spawned.split();
    let pretty = "{\n  \"text\": \"two\\nlines\",\r\n  \"n\": [\n    1,\n    2\n  ]\n}";
    let params = RawValue::from_string(pretty.to_owned()).unwrap();
    let note = JsonRpcNotification::new("test/pretty", Some(params));
    for _ in 0..3 {
        sink.send(TransportMessage::new(note.clone().into()))
            .await
            .unwrap();
    }
    for _ in 0..3 {
        let got = within("the echo", stream.recv()).await.unwrap().unwrap();
        let JsonRpcMessage::Notification(n) = got.message else {
            panic!("not a notification: {:?}", got.message);
        };
        let params: Value = serde_json::from_str(n.params.unwrap().get()).unwrap();
        assert_eq!(params, json!({"text": "two\nlines", "n": [1, 2]}));
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "{:?}",
        seen.lock().unwrap()
    );
    let outcome = within("shutdown", handle.shutdown()).await.unwrap();
    assert_eq!(outcome.step(), ShutdownStep::Exited);
}

async fn a_server_ignoring_stdin_close_is_terminated_then_killed(_connect: Connector) {
    // Lingers after stdin closes, but SIGTERM ends it.
    let (child, mut stderr) = fixture(&["--linger"]);
    let spawned = child
        .grace_period(STEP)
        .term_timeout(Duration::from_secs(5))
        .spawn()
        .unwrap();
    stderr_line(&mut stderr, "stdio-fixture: ready").await;
    let outcome = within("shutdown", spawned.handle().shutdown())
        .await
        .unwrap();
    stderr_line(&mut stderr, "stdio-fixture: stdin closed").await;
    assert_eq!(outcome.step(), ShutdownStep::Terminated);
    assert!(!outcome.status().success());
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(outcome.status().signal(), Some(15));
    }

    // Also ignores SIGTERM: killed.
    let (child, mut stderr) = fixture(&["--stubborn"]);
    let spawned = child.grace_period(STEP).term_timeout(STEP).spawn().unwrap();
    stderr_line(&mut stderr, "stdio-fixture: ready").await;
    let outcome = within("shutdown", spawned.handle().shutdown())
        .await
        .unwrap();
    assert_eq!(outcome.step(), ShutdownStep::Killed);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(outcome.status().signal(), Some(9));
    }
}

/// Calls the fixture's `shout` tool with `text` (it writes the text on its stderr).
async fn shout(client: &Client, text: &str) {
    within(
        "tools/call shout",
        client.request::<CallToolRequest>(call("shout", json!({ "text": text }))),
    )
    .await
    .unwrap();
}

async fn the_servers_stderr_reaches_the_client_side(connect_in: Connector) {
    // Line by line to a callback, while the protocol runs.
    let (child, mut stderr) = fixture(&[]);
    let (client, handle) = connect(child).await;
    shout(&client, "over here").await;
    stderr_line(&mut stderr, "stdio-fixture: over here").await;
    client.close().await;
    within("shutdown", handle.shutdown()).await.unwrap();

    // Straight to a file.
    // One file per cell: the cells of this test run at the same time.
    let path = std::env::temp_dir().join(format!(
        "modelctx-conformance-stderr-{}-{}.log",
        std::process::id(),
        connect_in.cell().to_string().replace('@', "-")
    ));
    let file = std::fs::File::create(&path).unwrap();
    let child = ChildProcess::new(FIXTURE).stderr(Stderr::file(file));
    let (client, handle) = connect(child).await;
    shout(&client, "in the file").await;
    client.close().await;
    within("shutdown", handle.shutdown()).await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        text.lines().any(|l| l == "stdio-fixture: in the file"),
        "{text}"
    );
}
