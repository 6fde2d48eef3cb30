//! Oversized bodies and lines (case 4), and slow peers (case 24): a request head or body
//! trickled byte by byte, and an event stream nobody reads, are dropped within bounded time
//! and memory. The trickle is paced by an interval (one byte per tick, the peer's behaviour,
//! not a synchronisation); every assertion waits on an event under `within`. Also case 17
//! on streamable HTTP and legacy SSE.

use super::*;

/// Case 24: a request body that stalls is cut off after the body timeout with 408, on
/// streamable HTTP and legacy SSE, and the session goes on. (Slow headers:
/// `modelctx-http` `tests/integration/limits.rs`; a stalled SSE reader: `server::session` tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_24_a_stalled_request_body_is_cut_off() {
    let timeout = std::time::Duration::from_millis(200);
    let (server, _, _) = fault_server();
    let config = StreamableHttpServerConfig::default().body_timeout(timeout);
    let hosted = host(server.clone(), config).await;
    let raw = Raw::new(&hosted.url);
    let session = raw.init().await;
    let headers = [
        ("mcp-session-id".to_owned(), session.clone()),
        ("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()),
    ];
    let status = raw_post(&hosted.url, &headers, 100, b"{\"jsonrpc\"".to_vec(), false).await;
    assert!(
        status.starts_with("HTTP/1.1 408"),
        "streamable-http: {status}"
    );
    let ping = json!({"jsonrpc": "2.0", "id": 24, "method": "ping"});
    let r = send(raw.post(Some(&session), &ping)).await;
    assert_eq!(r.status, 200, "the session goes on: {r:?}");

    let config = modelctx::sse::SseServerConfig::default().body_timeout(timeout);
    let mut wire = Wire::sse_with(&server, config).await;
    let (url, headers) = post_target(&wire);
    let status = raw_post(&url, &headers, 100, b"{\"jsonrpc\"".to_vec(), false).await;
    assert!(status.starts_with("HTTP/1.1 408"), "legacy-sse: {status}");
    let reply = wire
        .send(br#"{"jsonrpc":"2.0","id":24,"method":"ping"}"#, 24)
        .await;
    assert_eq!(reply.status, Some(202), "the session goes on: {reply:?}");
    assert_eq!(reply.messages[0]["id"], json!(24), "{reply:?}");
}

/// Case 24, slow writers: a request head that stalls after a few lines, or comes one byte
/// per tick, is dropped after the header timeout (the connection closed, nothing
/// answered); a POST body trickled one byte per tick is answered 408 at the body
/// timeout, however long the trickle could go on. On streamable HTTP and legacy SSE.
/// Memory stays bounded: the head's and the body's caps hold whatever the pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_24_slow_heads_and_trickled_bodies_are_cut_off() {
    let (http, sse) = slow_peer_endpoints(std::time::Duration::from_millis(300)).await;
    // A live legacy session to post to (its stream read up to the endpoint event).
    let (_events, _, endpoint) = open_sse(&sse).await;
    let endpoint = endpoint.data;
    for (kind, origin, path) in [
        ("streamable-http", http.trim_end_matches("/mcp"), "/mcp"),
        ("legacy-sse", sse.as_str(), endpoint.as_str()),
    ] {
        let authority = origin.trim_start_matches("http://");
        let partial = format!("POST {path} HTTP/1.1\r\nhost: {authority}\r\n");
        // Stalled: part of the head, then nothing.
        let answer = trickle(authority, partial.as_bytes(), b"").await;
        assert!(
            answer.is_empty(),
            "{kind}: a stalled head is not answered: {answer}"
        );
        // Trickled: the head goes on one header byte per tick, never ending.
        let answer = trickle(authority, partial.as_bytes(), b"x-slow: aaaaaaaa\r\n").await;
        assert!(
            answer.is_empty(),
            "{kind}: a trickled head is not answered: {answer}"
        );
        // A trickled body: 408 at the body timeout.
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: 100000\r\n\r\n"
        );
        let answer = trickle(authority, head.as_bytes(), b" ").await;
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "{kind}: a trickled body draws 408: {answer}"
        );
    }
}

/// Case 24, slow reader on legacy SSE: a client that opens its event stream and then
/// reads nothing while its requests' answers pile up. The stream's queue is bounded
/// and a send that waits on it longer than the send timeout ends the session (there is
/// no `Last-Event-ID` on this transport to resume from), so later POSTs draw 404 and the
/// session's memory is released. (Streamable HTTP disconnects such a reader and keeps
/// the session for a resumption: `modelctx-http` `server::session` tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_24_an_event_stream_nobody_reads_ends_its_legacy_sse_session() {
    let (server, _, _) = fault_server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let config = modelctx::sse::SseServerConfig::default()
        .stream_queue(8, std::time::Duration::from_millis(300));
    let service = modelctx::sse::SseService::with_config(config, move |t| {
        server.serve(t);
    });
    tokio::spawn(service.clone().serve(listener, std::future::pending()));

    // The event stream on a raw socket with a small receive buffer, read up to the
    // endpoint event, then never again.
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small buffer");
    let mut stream = socket.connect(addr).await.expect("the server accepts");
    stream
        .write_all(
            format!("GET /sse HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("the GET goes out");
    let mut reader = BufReader::new(stream);
    let endpoint = within("the endpoint event", async {
        let mut line = String::new();
        loop {
            line.clear();
            reader.read_line(&mut line).await.expect("the stream reads");
            if let Some(path) = line.trim().strip_prefix("data:") {
                return path.trim().to_owned();
            }
        }
    })
    .await;
    let url = format!("http://{addr}{endpoint}");
    let client = reqwest::Client::new();
    let post = |body: String| {
        client
            .post(url.as_str())
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let init = post(String::from_utf8(INITIALIZE.to_vec()).expect("UTF-8"));
    assert_eq!(within("initialize", init).await.expect("202").status(), 202);
    let initialized = post(String::from_utf8(INITIALIZED.to_vec()).expect("UTF-8"));
    assert_eq!(
        within("initialized", initialized)
            .await
            .expect("202")
            .status(),
        202
    );
    assert_eq!(service.session_count(), 1);

    // Requests whose answers (16 KiB each) fill the queue and the socket buffers.
    let pad = "x".repeat(16 * 1024);
    let ended = within("the session to end", async {
        for id in 1..=20_000 {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"test/echo","params":{{"pad":"{pad}"}}}}"#
            );
            let status = post(body).await.expect("the server answers").status();
            match status.as_u16() {
                202 => {}
                404 => return id,
                other => panic!("a POST drew {other}"),
            }
        }
        panic!("the session still took requests after 20,000 unread answers")
    })
    .await;
    assert!(ended > 1, "the session served requests first");
    assert_eq!(service.session_count(), 0, "the session is forgotten");
    drop(reader);
}

/// Case 17 on a streamable HTTP session and a legacy SSE session: as on stdio, a second
/// request reusing an id in flight is refused (streamable HTTP: 400 with -32600 from the
/// transport; legacy SSE: -32600 for that id on the stream) and the first one keeps its
/// answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_17_duplicate_in_flight_id_is_refused_on_http_and_sse() {
    let first = br#"{"jsonrpc":"2.0","id":7,"method":"test/wait","params":{"first":true}}"#;
    let second = br#"{"jsonrpc":"2.0","id":7,"method":"test/echo","params":{"second":true}}"#;

    let (server, controls, mut started) = fault_server();
    let Wire::Http { raw, session, .. } = Wire::http(&server).await else {
        unreachable!("a streamable HTTP wire")
    };
    let post = |body: &[u8]| {
        let body: Value = serde_json::from_slice(body).expect("JSON");
        send(raw.post(Some(&session), &body))
    };
    let waiting = post(first);
    let duplicate = async {
        within("the first handler to start", started.recv()).await;
        let r = post(second).await;
        controls.release.notify_one();
        r
    };
    let (answer, refusal) = within("both POSTs", async { tokio::join!(waiting, duplicate) }).await;
    // The transport refuses it before the session sees it: 400 with -32600.
    assert_eq!(refusal.status, 400, "{refusal:?}");
    let messages = refusal.messages();
    assert_eq!(messages.len(), 1, "{refusal:?}");
    assert_eq!(messages[0]["error"]["code"], json!(-32600), "{refusal:?}");
    let messages = answer.messages();
    assert_eq!(messages.len(), 1, "{answer:?}");
    assert_eq!(messages[0]["result"]["first"], json!(true), "{answer:?}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the duplicate never ran"
    );

    let (server, controls, mut started) = fault_server();
    let mut wire = Wire::sse(&server).await;
    assert_eq!(wire.post_sse(first.to_vec()).await.0, 202);
    within("the first handler to start", started.recv()).await;
    assert_eq!(wire.post_sse(second.to_vec()).await.0, 202);
    let refusal = wire.next_message().await;
    assert_eq!(refusal["id"], json!(7), "{refusal}");
    assert_eq!(refusal["error"]["code"], json!(-32600), "{refusal}");
    controls.release.notify_one();
    let answer = wire.next_message().await;
    assert_eq!(answer["result"]["first"], json!(true), "{answer}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the duplicate never ran"
    );
}
