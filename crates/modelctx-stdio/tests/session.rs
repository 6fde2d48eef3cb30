//! A server session over the stdio transport survives bad lines (SECURITY.md cases 1
//! and 13): a line that is not JSON and a line that is not UTF-8 are both skipped,
//! unanswered and reported, and the next request is served.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx_server::Server;
use modelctx_stdio::framing::LineDecoder;
use modelctx_stdio::{Diagnostic, StdioOptions, StdioTransport};
use modelctx_types::JsonRpcMessage;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

const WAIT: Duration = Duration::from_secs(5);

/// The next message the server wrote.
async fn next(from: &mut DuplexStream, decoder: &mut LineDecoder) -> JsonRpcMessage {
    let read = async {
        loop {
            if let Some(line) = decoder.next_line() {
                return JsonRpcMessage::from_slice(&line.unwrap()).unwrap();
            }
            let mut buf = [0; 4096];
            let n = from.read(&mut buf).await.unwrap();
            assert!(n > 0, "the server closed its output");
            decoder.extend(&buf[..n]);
        }
    };
    tokio::time::timeout(WAIT, read)
        .await
        .expect("an answer from the server")
}

/// Sends a `ping` with `id` over `client`.
async fn ping(client: &mut DuplexStream, id: i64) {
    let ping = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
    client.write_all(ping.as_bytes()).await.unwrap();
}

/// Asserts that what the server writes next over `client` answers `id`.
async fn next_answers(client: &mut DuplexStream, decoder: &mut LineDecoder, id: i64) {
    let answer = next(client, decoder).await;
    assert!(
        matches!(&answer, JsonRpcMessage::Response(r) if r.id == id.into()),
        "{answer:?}"
    );
}

/// Initialises the session as a client over `client`: `initialize` (answered, id 1),
/// then `notifications/initialized`; the decoder of what the server writes next.
async fn initialize(client: &mut DuplexStream) -> LineDecoder {
    client
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n",
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut decoder = LineDecoder::new(1 << 20);
    next_answers(client, &mut decoder, 1).await;
    decoder
}

#[tokio::test]
async fn a_session_skips_a_line_that_is_not_utf8_and_serves_the_next_request() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = StdioOptions::new().on_diagnostic(move |d| log.lock().unwrap().push(d.clone()));
    let (mut client, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let server = Server::builder("utf8", "1.0.0").build();
    let session = server.serve(StdioTransport::with_options(read, write, options));

    let mut decoder = initialize(&mut client).await;

    // A request whose method holds a byte that is not UTF-8, a stray log line, a ping.
    client
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"p\xffng\"}\n")
        .await
        .unwrap();
    client.write_all(b"INFO not a message\n").await.unwrap();
    ping(&mut client, 3).await;
    // The first answer is the ping's: neither bad line was answered.
    next_answers(&mut client, &mut decoder, 3).await;
    let skipped: Vec<Diagnostic> = seen.lock().unwrap().clone();
    assert!(
        matches!(
            &skipped[..],
            [Diagnostic::SkippedLine { reason, len: 40 }, Diagnostic::SkippedLine { len: 18, .. }]
                if reason.contains("UTF-8")
        ),
        "{skipped:?}"
    );

    // The session still serves.
    ping(&mut client, 4).await;
    next_answers(&mut client, &mut decoder, 4).await;
    drop(client);
    tokio::time::timeout(WAIT, session.closed())
        .await
        .expect("the session ends with its input");
}

/// Slow peers: a peer that sends requests but never reads its answers fills
/// the pipe; the first write that waits longer than the write timeout gives up on it,
/// and the session ends (reported as `OutputStalled`) instead of holding its answers
/// and handlers forever. Paused time: the timeout passes as soon as nothing else can
/// happen.
#[tokio::test(start_paused = true)]
async fn a_peer_that_never_reads_is_dropped_after_the_write_timeout() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let timeout = Duration::from_secs(30);
    let options = StdioOptions::new()
        .write_timeout(Some(timeout))
        .on_diagnostic(move |d| log.lock().unwrap().push(d.clone()));
    let (mut client, server_end) = tokio::io::duplex(4096);
    let (read, write) = tokio::io::split(server_end);
    let server = Server::builder("never-read", "1.0.0").build();
    let session = server.serve(StdioTransport::with_options(read, write, options));

    // More pings than the 4 KiB pipe, the writer's queue (1,024 lines) and the capped
    // answers waiting for room hold: the server keeps reading (the answers beyond are
    // dropped), and its writer waits on the full pipe.
    let started = tokio::time::Instant::now();
    for id in 1..=2_000 {
        ping(&mut client, id).await;
    }
    tokio::time::timeout(timeout + WAIT, session.closed())
        .await
        .expect("the session ends");
    assert!(started.elapsed() >= timeout, "not before the write timeout");
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|d| matches!(d, Diagnostic::OutputStalled { after } if *after == timeout)),
        "{:?}",
        seen.lock().unwrap()
    );
}

/// Found by the property tests (issue 25): a response that cannot be read (here an
/// error object without `message`) was answered with `-32600` and the server's own call
/// waited for its timeout. Now the call fails at once, the application's peer-error
/// callback hears of it, nothing is written back, and the session goes on.
#[tokio::test]
async fn a_response_that_cannot_be_read_fails_the_servers_call_and_is_never_answered() {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    let (mut client, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let server = Server::builder("bad-response", "1.0.0")
        .on_error(move |e, _| log.lock().unwrap().push(e))
        .build();
    let session = server.serve(StdioTransport::new(read, write));
    let mut decoder = initialize(&mut client).await;

    // The server pings; the client answers with an error object that lacks `message`.
    let answer_badly = async {
        let JsonRpcMessage::Request(ping) = next(&mut client, &mut decoder).await else {
            panic!("expected the server's ping");
        };
        let id = serde_json::to_string(&ping.id).unwrap();
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000}}}}"#);
        client.write_all(line.as_bytes()).await.unwrap();
        client.write_all(b"\n").await.unwrap();
        ping.id
    };
    let (result, ping_id) =
        tokio::time::timeout(WAIT, async { tokio::join!(session.ping(), answer_badly) })
            .await
            .expect("the ping fails at once, not at its timeout");
    let err = result.unwrap_err();
    assert!(err.is_invalid_response(), "{err}");
    assert!(err.to_string().contains("`message`"), "{err}");

    // Nothing answered the response: the first answer is the client's ping's.
    ping(&mut client, 2).await;
    next_answers(&mut client, &mut decoder, 2).await;
    // The peer-error callback ran before that ping was read (in arrival order).
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0].code, modelctx_types::ErrorCode::INTERNAL_ERROR);
    assert!(
        heard[0].message.contains(&format!("to request {ping_id}")),
        "{heard:?}"
    );

    // The server's next call is answered as usual.
    let answer_well = async {
        let JsonRpcMessage::Request(ping) = next(&mut client, &mut decoder).await else {
            panic!("expected the server's ping");
        };
        let id = serde_json::to_string(&ping.id).unwrap();
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n");
        client.write_all(line.as_bytes()).await.unwrap();
    };
    let (result, ()) = tokio::join!(session.ping(), answer_well);
    result.unwrap();
}
