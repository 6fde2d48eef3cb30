//! Framing over real pipes, and child processes (unix: driven through `sh`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::{JsonRpcMessage, JsonRpcNotification, RawValue, RequestId};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use crate::{Diagnostic, StdioOptions, StdioSink, StdioStream, StdioTransport};
use modelctx_test::within;

const WAIT: Duration = Duration::from_secs(5);

/// A stream reading what the test writes to the returned pipe end, with diagnostics
/// collected.
fn reader(options: StdioOptions) -> (DuplexStream, StdioStream, Arc<Mutex<Vec<Diagnostic>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = options.on_diagnostic(move |d| log.lock().unwrap().push(d.clone()));
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(theirs);
    let (_sink, stream) = StdioTransport::with_options(read, write, options).split();
    (ours, stream, seen)
}

/// Writes `bytes` to the pipe end the stream reads.
async fn write(pipe: &mut DuplexStream, bytes: &[u8]) {
    pipe.write_all(bytes).await.unwrap();
}

fn note(method: &str) -> TransportMessage {
    TransportMessage::new(JsonRpcNotification::new(method.to_owned(), None).into())
}

async fn next_method(stream: &mut StdioStream) -> String {
    let msg = within(WAIT, "a message", stream.recv())
        .await
        .unwrap()
        .unwrap();
    msg.message.method().unwrap().to_owned()
}

#[tokio::test]
async fn partial_lines_and_crlf_are_reassembled() {
    let (mut pipe, mut stream, seen) = reader(StdioOptions::new());
    write(&mut pipe, br#"{"jsonrpc":"2.0","#).await;
    write(&mut pipe, b"\"method\":\"a\"}\r\n\r\n\n").await;
    write(&mut pipe, br#"{"jsonrpc":"2.0","method":"b"}"#).await;
    assert_eq!(next_method(&mut stream).await, "a");
    write(&mut pipe, b"\n").await;
    assert_eq!(next_method(&mut stream).await, "b");
    drop(pipe);
    assert!(within(WAIT, "the end", stream.recv()).await.is_none());
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_non_json_line_is_skipped_and_reading_goes_on() {
    let (mut pipe, mut stream, seen) = reader(StdioOptions::new());
    write(
        &mut pipe,
        b"INFO starting up\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n",
    )
    .await;
    assert_eq!(next_method(&mut stream).await, "a");
    let seen = seen.lock().unwrap().clone();
    assert!(
        matches!(&seen[..], [Diagnostic::SkippedLine { len: 16, .. }]),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_json_line_that_is_not_a_message_is_reported_with_its_id() {
    let (mut pipe, mut stream, seen) = reader(StdioOptions::new());
    write(&mut pipe, b"{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"x\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n").await;
    let err = within(WAIT, "an error", stream.recv())
        .await
        .unwrap()
        .unwrap_err();
    let invalid = err.invalid_message().expect("an invalid message");
    assert_eq!(invalid.id, Some(RequestId::Number(7)));
    assert!(!invalid.is_parse_error());
    assert_eq!(next_method(&mut stream).await, "a");
    assert!(matches!(
        &seen.lock().unwrap()[..],
        [Diagnostic::InvalidMessage { .. }]
    ));
}

#[tokio::test]
async fn a_line_over_the_cap_ends_the_stream_with_an_error() {
    let (mut pipe, mut stream, seen) = reader(StdioOptions::new().max_line(64));
    write(&mut pipe, br#"{"jsonrpc":"2.0","method":"a"}"#).await;
    write(&mut pipe, b"\n").await;
    write(&mut pipe, &[b'x'; 100]).await;
    assert_eq!(next_method(&mut stream).await, "a");
    let err = within(WAIT, "the error", stream.recv())
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("64 bytes"), "{err}");
    assert!(within(WAIT, "the end", stream.recv()).await.is_none());
    assert!(matches!(
        &seen.lock().unwrap()[..],
        [Diagnostic::Fatal { .. }]
    ));
}

/// SECURITY.md case 13: a line that is not UTF-8 is skipped and reported
/// like any line that is not JSON; it used to end the stream.
#[tokio::test]
async fn invalid_utf8_is_skipped_and_reading_goes_on() {
    let (mut pipe, mut stream, seen) = reader(StdioOptions::new());
    pipe.write_all(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n",
    )
    .await
    .unwrap();
    assert_eq!(next_method(&mut stream).await, "a");
    let seen = seen.lock().unwrap().clone();
    assert!(
        matches!(&seen[..], [Diagnostic::SkippedLine { len: 30, reason }] if reason.contains("UTF-8")),
        "{seen:?}"
    );
    drop(pipe);
    assert!(within(WAIT, "the end", stream.recv()).await.is_none());
}

#[tokio::test]
async fn eof_inside_a_line_drops_it_and_ends_the_stream() {
    let (mut pipe, mut stream, seen) = reader(StdioOptions::new());
    write(&mut pipe, br#"{"jsonrpc":"2.0","method":"a"}"#).await;
    drop(pipe);
    assert!(within(WAIT, "the end", stream.recv()).await.is_none());
    assert!(matches!(
        &seen.lock().unwrap()[..],
        [Diagnostic::PartialLineAtEof { len: 30 }]
    ));
}

/// A sink writing into a pipe whose other end the test reads.
fn writer(options: StdioOptions) -> (StdioSink, DuplexStream) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(theirs);
    let (sink, _stream) = StdioTransport::with_options(read, write, options).split();
    (sink, ours)
}

#[tokio::test]
async fn every_message_is_one_line_even_when_its_payload_was_pretty_printed() {
    let (sink, mut pipe) = writer(StdioOptions::new());
    let pretty = RawValue::from_string("{\r\n  \"text\": \"a\\nb\"\n}".to_owned()).unwrap();
    let msg = JsonRpcNotification::new("pretty", Some(pretty));
    for _ in 0..100 {
        sink.send(TransportMessage::new(msg.clone().into()))
            .await
            .unwrap();
    }
    sink.close().await;
    let mut bytes = Vec::new();
    within(WAIT, "the output", pipe.read_to_end(&mut bytes))
        .await
        .unwrap();
    assert!(!bytes.contains(&b'\r'));
    let lines: Vec<_> = bytes.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(lines.len(), 100);
    for line in lines {
        assert_eq!(line.last(), Some(&b'\n'));
        let parsed = JsonRpcMessage::from_slice(&line[..line.len() - 1]).unwrap();
        assert_eq!(parsed.method(), Some("pretty"));
    }
}

#[tokio::test]
async fn sending_after_close_fails_closed() {
    let (sink, _pipe) = writer(StdioOptions::new());
    sink.send(note("a")).await.unwrap();
    sink.close().await;
    assert!(sink.send(note("b")).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn close_does_not_wait_forever_on_a_peer_that_stopped_reading() {
    let (ours, theirs) = tokio::io::duplex(64);
    let (read, write) = tokio::io::split(theirs);
    let options = StdioOptions::new().close_timeout(Duration::from_millis(100));
    let (sink, _stream) = StdioTransport::with_options(read, write, options).split();
    for _ in 0..10 {
        sink.send(note("a message longer than the pipe buffer"))
            .await
            .unwrap();
    }
    within(WAIT, "close", sink.close()).await;
    assert!(sink.send(note("late")).await.unwrap_err().is_closed());
    drop(ours);
}

#[tokio::test]
async fn a_second_close_waits_until_the_first_has_written_everything() {
    let (ours, theirs) = tokio::io::duplex(64);
    let (read, write) = tokio::io::split(theirs);
    let (sink, _stream) = StdioTransport::new(read, write).split();
    for _ in 0..10 {
        sink.send(note("queued behind a full pipe")).await.unwrap();
    }
    // The first close drains a queue nobody reads yet; the second must not return early.
    let mut first = sink.close();
    assert!(futures::poll!(&mut first).is_pending());
    let mut second = sink.close();
    assert!(futures::poll!(&mut second).is_pending());
    let reading = tokio::spawn(async move {
        let mut ours = ours;
        let mut bytes = Vec::new();
        ours.read_to_end(&mut bytes).await.map(|_| bytes)
    });
    within(WAIT, "both closes", async { tokio::join!(first, second) }).await;
    let bytes = within(WAIT, "the output", reading).await.unwrap().unwrap();
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 10);
}

#[tokio::test]
async fn the_write_side_ends_when_the_reader_is_gone() {
    let (sink, pipe) = writer(StdioOptions::new());
    drop(pipe);
    // A send is queued before the writer meets the broken pipe; once it has, the writer
    // is gone and sends fail closed.
    let err = within(WAIT, "a send to fail", async {
        loop {
            match sink.send(note("x")).await {
                Ok(()) => tokio::task::yield_now().await,
                Err(e) => break e,
            }
        }
    })
    .await;
    assert!(err.is_closed());
}

#[cfg(all(unix, feature = "child"))]
mod child {
    use std::os::unix::process::ExitStatusExt;

    use tokio::sync::mpsc;

    use super::*;
    use crate::{ChildProcess, Shutdown, ShutdownStep, Stderr};

    fn sh(script: &str) -> ChildProcess {
        ChildProcess::new("sh").arg("-c").arg(script)
    }

    /// Stderr lines as a channel.
    fn stderr_lines() -> (Stderr, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let stderr = Stderr::lines(move |line| {
            let _ = tx.send(line.to_owned());
        });
        (stderr, rx)
    }

    async fn expect_line(rx: &mut mpsc::UnboundedReceiver<String>, want: &str) {
        let got = within(WAIT, want, rx.recv()).await;
        assert_eq!(got.as_deref(), Some(want));
    }

    #[tokio::test]
    async fn messages_round_trip_through_a_child_and_closing_stdin_ends_it() {
        let client = ChildProcess::new("cat").spawn().unwrap();
        let handle = client.handle();
        assert!(handle.id().is_some());
        let (sink, mut stream) = client.split();
        sink.send(note("echo")).await.unwrap();
        assert_eq!(next_method(&mut stream).await, "echo");
        let outcome = within(WAIT, "shutdown", handle.shutdown()).await.unwrap();
        assert_eq!(outcome.step(), ShutdownStep::Exited);
        assert!(outcome.status().success());
        assert!(within(WAIT, "the end", stream.recv()).await.is_none());
        assert_eq!(handle.try_status(), Some(outcome.status()));
    }

    /// Spawns `child`, which says `ready` on stderr once set up and then never exits by
    /// itself, with a grace period of 100 ms after stdin closes; once it is ready, shuts
    /// it down: the outcome.
    async fn shut_down_when_ready(child: ChildProcess) -> Shutdown {
        let (stderr, mut lines) = stderr_lines();
        let client = child
            .stderr(stderr)
            .grace_period(Duration::from_millis(100))
            .spawn()
            .unwrap();
        expect_line(&mut lines, "ready").await;
        within(WAIT, "shutdown", client.handle().shutdown())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_child_ignoring_stdin_close_gets_sigterm() {
        let child = sh("echo ready >&2; while :; do sleep 1; done");
        let outcome = shut_down_when_ready(child).await;
        assert_eq!(outcome.step(), ShutdownStep::Terminated);
        assert_eq!(outcome.status().signal(), Some(15));
    }

    #[tokio::test]
    async fn a_child_ignoring_sigterm_is_killed() {
        let child = sh("trap '' TERM; echo ready >&2; while :; do sleep 1; done")
            .term_timeout(Duration::from_millis(100));
        let outcome = shut_down_when_ready(child).await;
        assert_eq!(outcome.step(), ShutdownStep::Killed);
        assert_eq!(outcome.status().signal(), Some(9));
    }

    #[tokio::test]
    async fn a_dying_child_ends_the_stream_and_reports_its_status() {
        let client = sh("read line; exit 3").spawn().unwrap();
        let handle = client.handle();
        let (sink, mut stream) = client.split();
        sink.send(note("go")).await.unwrap();
        assert!(within(WAIT, "the end", stream.recv()).await.is_none());
        let status = within(WAIT, "the exit", handle.wait()).await.unwrap();
        assert_eq!(status.code(), Some(3));
    }

    #[tokio::test]
    async fn junk_on_the_childs_stdout_is_skipped() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let options =
            StdioOptions::new().on_diagnostic(move |d| log.lock().unwrap().push(d.clone()));
        let client =
            sh(r#"echo 'starting...'; echo '{"jsonrpc":"2.0","method":"hi"}'; cat >/dev/null"#)
                .options(options)
                .spawn()
                .unwrap();
        let handle = client.handle();
        let (_sink, mut stream) = client.split();
        assert_eq!(next_method(&mut stream).await, "hi");
        assert!(matches!(
            &seen.lock().unwrap()[..],
            [Diagnostic::SkippedLine { len: 11, .. }]
        ));
        let outcome = within(WAIT, "shutdown", handle.shutdown()).await.unwrap();
        assert_eq!(outcome.step(), ShutdownStep::Exited);
    }

    #[tokio::test]
    async fn stderr_goes_to_a_callback_line_by_line() {
        let (stderr, mut lines) = stderr_lines();
        let client = sh("printf 'one\\r\\ntwo\\nthree' >&2")
            .stderr(stderr)
            .spawn()
            .unwrap();
        expect_line(&mut lines, "one").await;
        expect_line(&mut lines, "two").await;
        expect_line(&mut lines, "three").await;
        let status = within(WAIT, "the exit", client.handle().wait())
            .await
            .unwrap();
        assert!(status.success());
    }

    #[tokio::test]
    async fn stderr_goes_to_a_file() {
        let path =
            std::env::temp_dir().join(format!("modelctx-stdio-stderr-{}.log", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let client = sh("echo to-the-file >&2")
            .stderr(Stderr::file(file))
            .spawn()
            .unwrap();
        let status = within(WAIT, "the exit", client.handle().wait())
            .await
            .unwrap();
        assert!(status.success());
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text, "to-the-file\n");
    }

    #[tokio::test]
    async fn args_env_and_working_directory_reach_the_child() {
        let dir = std::env::temp_dir();
        let (stderr, mut lines) = stderr_lines();
        let client = ChildProcess::new("sh")
            .args(["-c", "echo \"$1 $GREETING $(pwd)\" >&2", "sh", "first"])
            .env("GREETING", "hello")
            .current_dir(&dir)
            .stderr(stderr)
            .spawn()
            .unwrap();
        let want = format!("first hello {}", dir.canonicalize().unwrap().display());
        expect_line(&mut lines, &want).await;
        within(WAIT, "the exit", client.handle().wait())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn dropping_the_client_and_its_handle_shuts_the_child_down() {
        // The stderr callback is dropped when the child's stderr closes, i.e. when the
        // child has exited: the guard in it reports that.
        struct Gone(Option<tokio::sync::oneshot::Sender<()>>);
        impl Drop for Gone {
            fn drop(&mut self) {
                if let Some(tx) = self.0.take() {
                    let _ = tx.send(());
                }
            }
        }
        let (tx, gone) = tokio::sync::oneshot::channel();
        let guard = Gone(Some(tx));
        let client = ChildProcess::new("cat")
            .stderr(Stderr::lines(move |_| {
                let _ = &guard;
            }))
            .spawn()
            .unwrap();
        let (sink, stream) = client.split();
        sink.send(note("hello")).await.unwrap();
        drop((sink, stream));
        within(WAIT, "the child to exit", gone).await.unwrap();
    }

    #[tokio::test]
    async fn a_missing_program_fails_to_spawn() {
        let err = ChildProcess::new("/nonexistent/modelctx-no-such-server")
            .spawn()
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
