//! Bad bytes on stdio, streamable HTTP and legacy SSE, each answered or skipped as its case
//! says, the session going on after each (cases 1, 2, 5–9, 12, 13, 16, 26).

use super::*;

/// Case 1: a line that is not JSON (a stray log line) on stdio is skipped without an
/// answer and reading goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_01_non_json_line_on_stdio_is_skipped() {
    let (server, _, _) = fault_server();
    let mut wire = Wire::stdio(&server).await;
    for (i, line) in [&b"INFO starting up"[..], b"{not json", b"   ]"]
        .into_iter()
        .enumerate()
    {
        let reply = wire.send(line, i as u32).await;
        reply.assert_silent("stdio");
    }
}

/// Case 2: a POST body that is not JSON draws 400 and a -32700 with id null, on
/// streamable HTTP and legacy SSE alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_02_non_json_post_is_400_parse_error_with_id_null() {
    let (server, _, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in [
        ("streamable-http", Wire::http(&server).await),
        ("legacy-sse", Wire::sse(&server).await),
    ] {
        for body in [&b"INFO starting up"[..], b"{not json"] {
            probe += 1;
            let reply = wire.send(body, probe).await;
            assert_eq!(reply.status, Some(400), "{name}: {reply:?}");
            reply.assert_error(name, -32700, Value::Null);
        }
    }
}

/// Case 5: 10,000 levels of nesting (arrays, objects) never overflow the stack (the test
/// process would abort): the envelope is read without building the params, and
/// decoding them stops at serde_json's recursion limit (128), so the request is refused
/// for its id and its handler never runs; the session goes on.
///
/// SECURITY.md's table says "parse error"; the answer is -32602 (Invalid params: the
/// input is valid JSON and its envelope a valid request; its params are what cannot be
/// read), with the recursion limit named in the message. SECURITY.md records the reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_05_deep_nesting_stops_at_the_recursion_limit() {
    let depth = 10_000;
    let mut arrays = br#"{"jsonrpc":"2.0","id":5,"method":"test/echo","params":{"deep":"#.to_vec();
    arrays.extend(std::iter::repeat_n(b'[', depth));
    arrays.extend(std::iter::repeat_n(b']', depth));
    arrays.extend(b"}}");
    let mut objects = br#"{"jsonrpc":"2.0","id":5,"method":"test/echo","params":"#.to_vec();
    for _ in 0..depth {
        objects.extend(br#"{"a":"#);
    }
    objects.extend(b"1");
    objects.extend(std::iter::repeat_n(b'}', depth + 1));
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in Wire::all(&server).await {
        for input in [&arrays, &objects] {
            probe += 1;
            let reply = wire.send(input, probe).await;
            let ok = match name {
                "stdio" => None,
                "legacy-sse" => Some(202),
                _ => Some(200),
            };
            assert_eq!(reply.status, ok, "{name}: {reply:?}");
            reply.assert_error(name, -32602, json!(5));
            let message = reply.messages[0]["error"]["message"].to_string();
            assert!(message.contains("recursion limit"), "{name}: {message}");
        }
    }
    assert_eq!(controls.echoes.load(Ordering::SeqCst), 0, "no handler ran");
}

/// Case 6: JSON that is not a JSON-RPC message (not an object, the wrong `jsonrpc`, no
/// `method`/`result`/`error`) is answered -32600, with the id when it can be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_06_json_that_is_not_a_message_is_invalid_request() {
    let inputs: [(&[u8], Value); 6] = [
        (br#""text""#, Value::Null),
        (b"42", Value::Null),
        (b"null", Value::Null),
        (br#"{"jsonrpc":"1.0","id":6,"method":"ping"}"#, json!(6)),
        (br#"{"id":6,"method":"ping"}"#, json!(6)),
        (br#"{"jsonrpc":"2.0","id":6}"#, json!(6)),
    ];
    let bodies: Vec<&[u8]> = inputs.iter().map(|(b, _)| *b).collect();
    on_every_wire(&bodies, |name, input, reply| {
        let id = &inputs
            .iter()
            .find(|(b, _)| *b == input)
            .expect("an input")
            .1;
        assert_eq!(reply.status, rejected(name), "{name}: {reply:?}");
        let answer = reply.messages.first().cloned().unwrap_or_default();
        assert_eq!(reply.messages.len(), 1, "{name}: {reply:?}");
        assert_eq!(answer["error"]["code"], json!(-32600), "{name}: {reply:?}");
        assert!(
            answer["id"] == *id || answer["id"].is_null(),
            "{name}: the id or null: {reply:?}"
        );
    })
    .await;
}

/// Case 7: an id that is null, a float, a boolean or an object is -32600 (id null:
/// such an id cannot be echoed), and the request never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_07_bad_ids_are_invalid_request() {
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in Wire::all(&server).await {
        for id in ["null", "1.5", "true", r#"{"a":1}"#, "[1]"] {
            probe += 1;
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"test/echo","params":{{}}}}"#);
            let reply = wire.send(body.as_bytes(), probe).await;
            assert_eq!(reply.status, rejected(name), "{name} id {id}: {reply:?}");
            reply.assert_error(name, -32600, Value::Null);
        }
    }
    assert_eq!(controls.echoes.load(Ordering::SeqCst), 0, "no request ran");
}

/// Case 8: a batch (an array, `[]` included) on a 2025-11-25 session is refused whole
/// and nothing in it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_08_batches_are_refused_whole() {
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    let batch = br#"[{"jsonrpc":"2.0","id":"b1","method":"test/echo","params":{}},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    for (name, mut wire) in Wire::all(&server).await {
        for input in [&b"[]"[..], batch] {
            probe += 1;
            let reply = wire.send(input, probe).await;
            assert_eq!(reply.status, rejected(name), "{name}: {reply:?}");
            assert!(
                reply.messages.iter().all(|m| m["id"] != json!("b1")),
                "{name}: nothing in the batch is answered: {reply:?}"
            );
            if name != "legacy-sse" {
                reply.assert_error(name, -32600, Value::Null);
            }
        }
    }
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "nothing in a batch ran"
    );
}

/// Case 9: an unknown method is -32601 with its id; an unknown notification is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_09_unknown_method_is_method_not_found_unknown_notification_ignored() {
    let request: &[u8] = br#"{"jsonrpc":"2.0","id":9,"method":"no/such-method","params":{}}"#;
    let notification: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/no-such"}"#;
    on_every_wire(&[request, notification], |name, input, reply| {
        if input == request {
            let ok = if name == "legacy-sse" { 202 } else { 200 };
            assert_eq!(reply.status, (name != "stdio").then_some(ok), "{name}");
            reply.assert_error(name, -32601, json!(9));
        } else {
            let ok = (name != "stdio").then_some(202);
            assert_eq!(reply.status, ok, "{name}: {reply:?}");
            reply.assert_silent(name);
        }
    })
    .await;
}

/// Case 12: duplicate keys in the envelope are refused (-32600); a key that differs in
/// case or by a NUL suffix is an unknown member, never an alias of the real one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_12_duplicate_and_look_alike_keys_never_alias() {
    let duplicates: [&[u8]; 3] = [
        br#"{"jsonrpc":"2.0","id":12,"method":"test/echo","method":"ping","params":{}}"#,
        br#"{"jsonrpc":"2.0","id":12,"id":13,"method":"ping"}"#,
        br#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":12,"method":"ping"}"#,
    ];
    let look_alikes: [&[u8]; 3] = [
        br#"{"jsonrpc":"2.0","id":12,"Method":"test/echo","method":"ping"}"#,
        br#"{"jsonrpc":"2.0","id":12,"method\u0000":"test/echo","method":"ping"}"#,
        br#"{"jsonrpc":"2.0","ID":99,"id":12,"METHOD":"test/echo","method":"ping"}"#,
    ];
    let no_method: &[u8] = br#"{"jsonrpc":"2.0","id":12,"Method":"ping"}"#;
    let mut inputs: Vec<&[u8]> = duplicates.to_vec();
    inputs.extend(look_alikes);
    inputs.push(no_method);
    let (server, controls, _) = fault_server();
    let mut probe = 0;
    for (name, mut wire) in Wire::all(&server).await {
        for input in &inputs {
            probe += 1;
            let reply = wire.send(input, probe).await;
            let text = String::from_utf8_lossy(input);
            if look_alikes.contains(input) {
                // Answered as the ping the exact key names.
                let ok = match name {
                    "stdio" => None,
                    "legacy-sse" => Some(202),
                    _ => Some(200),
                };
                assert_eq!(reply.status, ok, "{name} {text}: {reply:?}");
                assert_eq!(reply.messages.len(), 1, "{name} {text}: {reply:?}");
                assert_eq!(
                    reply.messages[0]["id"],
                    json!(12),
                    "{name} {text}: {reply:?}"
                );
                assert_eq!(
                    reply.messages[0]["result"],
                    json!({}),
                    "{name} {text}: {reply:?}"
                );
            } else {
                assert_eq!(reply.status, rejected(name), "{name} {text}: {reply:?}");
                assert_eq!(reply.messages.len(), 1, "{name} {text}: {reply:?}");
                let answer = &reply.messages[0];
                assert_eq!(
                    answer["error"]["code"],
                    json!(-32600),
                    "{name} {text}: {reply:?}"
                );
            }
        }
    }
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "no alias ever ran"
    );
}

/// Case 13: bytes that are not UTF-8: skipped like any unparseable line on stdio (the
/// session goes on), -32700 with id null and 400 on the HTTP transports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_13_invalid_utf8_is_a_parse_error_or_a_skipped_line() {
    let in_a_string: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"test/echo\",\"params\":{\"s\":\"\xff\xfe\"}}";
    let in_an_unknown_member: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\",\"x\":\"\xc3\x28\"}";
    let bare: &[u8] = b"\xff\xfe\xfd";
    on_every_wire(
        &[in_a_string, in_an_unknown_member, bare],
        |name, _, reply| {
            assert_eq!(reply.status, rejected(name), "{name}: {reply:?}");
            if name == "stdio" {
                reply.assert_silent(name);
            } else {
                reply.assert_error(name, -32700, Value::Null);
            }
        },
    )
    .await;
}

/// Case 16: a response for an id the server never used (a result, an error, twice) is
/// ignored: no answer, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_responses_for_unknown_ids_are_ignored() {
    let result: &[u8] = br#"{"jsonrpc":"2.0","id":916,"result":{}}"#;
    let error: &[u8] = br#"{"jsonrpc":"2.0","id":917,"error":{"code":-32603,"message":"x"}}"#;
    // A posted response is accepted (202) and goes nowhere.
    on_every_wire(&[result, result, error], ignored).await;
}

/// Case 16, a response that cannot be read (found by the property tests): an error
/// object without `message` or with a `code` that is not an integer, both `result` and
/// `error`, for an id the server never used. (An id with none of `method`, `result` and
/// `error` is no response: case 6 answers it.) It was answered with
/// `-32600`; a response is never answered, and the session goes on. (A response that
/// answers one of the server's own calls fails that call at once: `modelctx-session`
/// `tests/integration/runtime/`, `modelctx-stdio` `tests/session.rs`, and the two tests below for
/// streamable HTTP and legacy SSE, which refuse such a POST with 400 and hand it to the
/// session.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_a_response_that_cannot_be_read_is_never_answered() {
    let (server, _, _) = fault_server();
    let mut wire = Wire::stdio(&server).await;
    for (i, line) in [
        &br#"{"jsonrpc":"2.0","id":916,"error":{"code":-32000}}"#[..],
        br#"{"jsonrpc":"2.0","id":917,"error":{"code":"x","message":"m"}}"#,
        br#"{"jsonrpc":"2.0","id":918,"result":{},"error":{"code":1,"message":"m"}}"#,
        br#"{"jsonrpc":"2.0","error":{"message":"no code"}}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let reply = wire.send(line, i as u32).await;
        reply.assert_silent("stdio");
    }
}

/// Case 16 (note i) on streamable HTTP, 2025-11-25: a handler's elicitation waits for the
/// client's answer; the client POSTs one that cannot be read. The POST is refused with
/// 400 (`-32600`, no id) and the elicitation fails at once as an invalid response (it
/// used to wait for its 60 s timeout), so the call that asked returns; a second call's
/// elicitation, pending meanwhile, is untouched and answered normally afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_an_unreadable_answer_fails_the_servers_call_on_streamable_http() {
    let hosted = host(asking_server(), StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    let session = raw.init_with(&initialize_eliciting(), "2025-11-25").await;

    // Two calls, each waiting for its elicitation's answer on its own POST's stream.
    let mut calls = Vec::new();
    for id in [1, 2] {
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": "test/ask", "params": {}});
        let mut stream = within("the call's POST", raw.post(Some(&session), &ask).send())
            .await
            .expect("the server answers");
        assert_eq!(stream.status(), 200);
        let elicit = messages_until(&mut stream, |m| m.get("method").is_some())
            .await
            .into_iter()
            .find(|m| m["method"] == json!("elicitation/create"))
            .expect("the elicitation on the call's stream");
        calls.push((stream, elicit["id"].clone()));
    }
    let (mut second, second_elicit) = calls.pop().expect("two calls");
    let (mut first, first_elicit) = calls.pop().expect("two calls");

    let refused = send(raw.post(Some(&session), &unreadable_answer(&first_elicit))).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    let body = refused.json();
    assert_eq!(body["error"]["code"], json!(-32600), "{body}");
    assert!(body.get("id").is_none_or(Value::is_null), "no id: {body}");
    let answer = answer_to(&mut first, 1).await;
    assert_eq!(
        answer["result"]["invalid_response"],
        json!(true),
        "{answer}"
    );

    // The other elicitation still waits for its own answer, and takes it.
    let accepted = send(raw.post(Some(&session), &declined(&second_elicit))).await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let answer = answer_to(&mut second, 2).await;
    assert_eq!(answer["result"]["accepted"], json!(false), "{answer}");
}

/// Case 16 (note i) in a batch, protocol 2025-03-26 (the one revision with batches):
/// a handler's `roots/list` waits; the client answers it inside a batch with a response
/// that cannot be read. The batch is refused whole (400, `-32600`) and the call it
/// answers fails at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_an_unreadable_answer_in_a_batch_fails_the_servers_call() {
    let version = "2025-03-26";
    let hosted = host(asking_server(), StreamableHttpServerConfig::default()).await;
    let raw = Raw::new(&hosted.url);
    let initialize = json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    });
    let session = raw.init_with(&initialize, version).await;

    let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "test/ask-roots", "params": {}});
    let mut stream = within(
        "the call's POST",
        raw.post_as(Some(&session), Some(version), &ask).send(),
    )
    .await
    .expect("the server answers");
    let request = messages_until(&mut stream, |m| m.get("method").is_some())
        .await
        .into_iter()
        .find(|m| m["method"] == json!("roots/list"))
        .expect("roots/list on the call's stream");

    let batch = json!([unreadable_answer(&request["id"])]);
    let refused = send(raw.post_as(Some(&session), Some(version), &batch)).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    assert_eq!(
        refused.json()["error"]["code"],
        json!(-32600),
        "{refused:?}"
    );
    let answer = answer_to(&mut stream, 1).await;
    assert_eq!(
        answer["result"]["invalid_response"],
        json!(true),
        "{answer}"
    );
}

/// Case 16 (note i) on legacy HTTP+SSE: the same as on streamable HTTP, the answers on
/// the session's one event stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_16_an_unreadable_answer_fails_the_servers_call_on_legacy_sse() {
    let config = modelctx::sse::SseServerConfig::default();
    let origin = serve_sse(&asking_server(), config).await;
    let (stream, parser, endpoint) = open_sse(&origin).await;
    let mut wire = Wire::Sse {
        stream,
        parser,
        url: format!("{origin}{}", endpoint.data),
    };
    let post = |body: Value| body.to_string().into_bytes();
    assert_eq!(wire.post_sse(post(initialize_eliciting())).await.0, 202);
    assert_eq!(wire.next_message().await["id"], json!("init"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(wire.post_sse(post(initialized)).await.0, 202);

    let mut elicitations = Vec::new();
    for id in [1, 2] {
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": "test/ask", "params": {}});
        assert_eq!(wire.post_sse(post(ask)).await.0, 202);
        let elicit = wire.next_message().await;
        assert_eq!(elicit["method"], json!("elicitation/create"), "{elicit}");
        elicitations.push(elicit["id"].clone());
    }

    let (status, body) = wire
        .post_sse(post(unreadable_answer(&elicitations[0])))
        .await;
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(&body).expect("a JSON-RPC error body");
    assert_eq!(body["error"]["code"], json!(-32600), "{body}");
    assert!(body.get("id").is_none_or(Value::is_null), "no id: {body}");
    let answer = wire.next_message().await;
    assert_eq!(
        answer["id"],
        json!(1),
        "the first call ends first: {answer}"
    );
    assert_eq!(
        answer["result"]["invalid_response"],
        json!(true),
        "{answer}"
    );

    assert_eq!(wire.post_sse(post(declined(&elicitations[1]))).await.0, 202);
    let answer = wire.next_message().await;
    assert_eq!(answer["id"], json!(2), "{answer}");
    assert_eq!(answer["result"]["accepted"], json!(false), "{answer}");
}

/// Case 26: a cancellation naming an id that is unknown, already answered, or the
/// `initialize` request is ignored: no answer, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_26_cancelling_unknown_finished_or_initialize_ids_is_ignored() {
    let unknown: &[u8] =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":926}}"#;
    let finished: &[u8] =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"probe-1"}}"#;
    let initialize: &[u8] =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"init"}}"#;
    on_every_wire(&[unknown, finished, initialize], ignored).await;
}

/// Case 4: an oversized message. Streamable HTTP and legacy SSE answer 413 before
/// parsing (default cap 4 MiB) and the session goes on; on stdio a line over the cap is
/// an error that ends the session: the server closes its side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_04_oversized_body_is_413_and_an_oversized_line_ends_stdio() {
    let (server, controls, _) = fault_server();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"test/echo","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let mut probe = 0;
    for (name, mut wire) in [
        ("streamable-http", Wire::http(&server).await),
        ("legacy-sse", Wire::sse(&server).await),
    ] {
        let (url, headers) = post_target(&wire);
        let status = raw_post(&url, &headers, big.len(), big.clone().into_bytes(), false).await;
        assert!(status.starts_with("HTTP/1.1 413"), "{name}: {status}");
        // The session goes on, and the refused request was never answered.
        probe += 1;
        let reply = wire.ping_after(probe).await;
        assert!(
            reply.messages.iter().all(|m| m["id"] != json!(4)),
            "{name}: never answered as a request: {reply:?}"
        );
        assert_eq!(
            reply.messages.last().map(|m| &m["id"]),
            Some(&json!("after")),
            "{name}: {reply:?}"
        );
    }
    let options = modelctx::stdio::StdioOptions::new().max_line(64 * 1024);
    let mut wire = Wire::stdio_with(&server, options).await;
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"test/echo","params":{{"pad":"{}"}}}}"#,
        "x".repeat(128 * 1024)
    );
    let Wire::Stdio { write, lines } = &mut wire else {
        unreachable!("a stdio wire")
    };
    // The server may stop reading (and close its end) before the whole line is written:
    // a broken pipe here is the behaviour under test, not a failure.
    let written = within("the oversized line", async {
        write.write_all(line.as_bytes()).await?;
        write.write_all(b"\n").await?;
        write.flush().await
    })
    .await;
    assert!(
        written.is_ok()
            || written
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe),
        "{written:?}"
    );
    let end = within("the server to close its side", lines.next_line()).await;
    assert!(
        matches!(end, Ok(None)),
        "the session ends without answering: {end:?}"
    );
    assert_eq!(controls.echoes.load(Ordering::SeqCst), 0, "no handler ran");
}
