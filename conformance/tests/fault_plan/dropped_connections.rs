//! An HTTP client facing a server that drops connections mid-stream at random, and
//! truncated messages (case 3).

use super::*;

/// The dropping server: streamable HTTP calls whose streams the connection
/// drops at random points. Every call ends within its timeout, either with its own
/// answer (the client resumed the stream with `Last-Event-ID`) or with a clear error;
/// none hangs, none gets another call's answer, and no call runs twice on the server
/// (a call is never silently re-sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_mid_stream_end_every_call_once() {
    request_method!(Chatty = "test/chatty");
    let runs: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>> = Arc::default();
    let counted = runs.clone();
    let server = Server::builder("chatty", "1.0.0")
        .request_handler::<Chatty, _, _>(move |params: Value, cx: Context| {
            let key = params["call"].to_string();
            *counted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(key)
                .or_default() += 1;
            async move {
                // Related messages on the request's stream, for the cuts to land among.
                for i in 0..3 {
                    let note = json!({"i": i, "pad": "n".repeat(60)});
                    let _ = cx.notify::<http_support::Note>(note).await;
                }
                Ok(params)
            }
        })
        .build();
    let config =
        StreamableHttpServerConfig::default().retry_interval(std::time::Duration::from_millis(5));
    let hosted = host(server, config).await;
    let upstream = hosted
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a socket address");
    let chaos = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (url, cuts) = dropping_proxy(upstream, "/mcp", chaos.clone()).await;
    let transport = modelctx::http::StreamableHttpClientTransport::builder(&url)
        .standalone_stream(false)
        .reconnect(std::time::Duration::from_millis(5), 3)
        .build()
        .expect("a valid URL");
    let client = within("the client to connect", client().connect(transport))
        .await
        .expect("the client connects before the chaos starts");
    chaos.store(true, Ordering::SeqCst);

    let timeout = std::time::Duration::from_secs(5);
    let calls = (0..24).map(|call| {
        let client = &client;
        async move {
            let params = json!({"call": call});
            let options = modelctx::session::RequestOptions::new().timeout(timeout);
            let outcome = client.request_with::<Chatty>(params, options).await;
            (call, outcome)
        }
    });
    let outcomes = within("every call to end", futures::future::join_all(calls)).await;
    let mut answered = 0;
    for (call, outcome) in outcomes {
        match outcome {
            Ok(result) => {
                assert_eq!(payload(result)["call"], json!(call), "its own answer");
                answered += 1;
            }
            Err(e) => assert!(!e.to_string().is_empty(), "call {call}: a clear error"),
        }
    }
    let runs = runs.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        runs.values().all(|&n| n == 1),
        "no call ran twice on the server: {runs:?}"
    );
    let resumed = hosted
        .seen()
        .iter()
        .filter(|s| s.method == http::Method::GET && s.header("last-event-id").is_some())
        .count();
    assert!(cuts.load(Ordering::SeqCst) > 0, "the proxy cut connections");
    assert!(answered > 0, "some calls came through");
    assert!(resumed > 0, "some streams were resumed with Last-Event-ID");
}

/// Case 3: a message cut short by its sender. On stdio a partial line followed by the
/// end of input is dropped and the session ends (the server closes its side); on
/// streamable HTTP and legacy SSE a POST whose body ends early is refused (400) without
/// reaching the session, which goes on. Either way the cut request never runs. (Pending
/// requests failing when the peer goes: `cancellation::closing_fails_every_pending_request`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_03_a_truncated_message_is_dropped() {
    let (server, controls, _) = fault_server();
    let cut = br#"{"jsonrpc":"2.0","id":3,"method":"test/echo","params":{"cut":"#;
    let mut probe = 0;
    for (name, mut wire) in [
        ("streamable-http", Wire::http(&server).await),
        ("legacy-sse", Wire::sse(&server).await),
    ] {
        let (url, headers) = post_target(&wire);
        let status = raw_post(&url, &headers, cut.len() + 50, cut.to_vec(), true).await;
        assert!(status.starts_with("HTTP/1.1 400"), "{name}: {status}");
        probe += 1;
        let reply = wire.ping_after(probe).await;
        assert_eq!(
            reply.messages.len(),
            1,
            "{name}: only the ping's answer: {reply:?}"
        );
    }
    let mut wire = Wire::stdio(&server).await;
    let Wire::Stdio { write, lines } = &mut wire else {
        unreachable!("a stdio wire")
    };
    within("the partial line and the end of input", async {
        write.write_all(cut).await?;
        write.shutdown().await
    })
    .await
    .expect("the pipe takes it");
    let end = within("the server to close its side", lines.next_line()).await;
    assert!(matches!(end, Ok(None)), "no answer, then the end: {end:?}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the cut request never ran"
    );
}
