//! Progress tokens and callbacks, and the `_meta` a request carries.

use super::*;

// ---------------------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn progress_tokens_are_unique_and_route_to_their_own_callback_in_order() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let (opts_a, mut rx_a) = progress_options();
    let (opts_b, mut rx_b) = progress_options();
    let a = start_req(&h.peer, "work/a", json!({ "x": 1 }), opts_a);
    let b = start_req(&h.peer, "work/b", Value::Null, opts_b);
    let call_a = tokio::spawn(a);
    let call_b = tokio::spawn(b);

    let mut reqs = vec![h.mock.next_message().await, h.mock.next_message().await];
    reqs.sort_by_key(|m| m.method().map(str::to_owned));
    let [JsonRpcMessage::Request(ra), JsonRpcMessage::Request(rb)] = &reqs[..] else {
        panic!("expected two requests, got {reqs:?}");
    };
    assert_eq!((&*ra.method, &*rb.method), ("work/a", "work/b"));
    let pa = params_of(ra.params.as_deref());
    let pb = params_of(rb.params.as_deref());
    // The token is injected next to the caller's params (and creates params when none).
    assert_eq!(pa["x"], 1);
    let token_a = pa["_meta"]["progressToken"].clone();
    let token_b = pb["_meta"]["progressToken"].clone();
    assert!(!token_a.is_null() && !token_b.is_null(), "{pa} {pb}");
    assert_ne!(token_a, token_b);

    // Interleaved updates, then A's response right behind its last update.
    for (token, value) in [
        (&token_a, 1.0),
        (&token_b, 10.0),
        (&token_a, 2.0),
        (&token_b, 20.0),
        (&token_a, 3.0),
    ] {
        h.mock
            .notify("notifications/progress", progress_note(token, value))
            .await;
    }
    h.mock.respond(ra.id.clone(), json!({ "done": "a" })).await;
    let result = call_a.await.unwrap().unwrap();
    assert_eq!(params_of(Some(&result)), json!({ "done": "a" }));
    assert_eq!(
        drain(&mut rx_a),
        [1.0, 2.0, 3.0],
        "every update sent before the response"
    );

    h.mock
        .notify("notifications/progress", progress_note(&token_b, 30.0))
        .await;
    h.mock.respond(rb.id.clone(), json!({ "done": "b" })).await;
    call_b.await.unwrap().unwrap();
    assert_eq!(drain(&mut rx_b), [10.0, 20.0, 30.0]);

    // Routed progress never reached the service as a notification.
    h.ping_sync(1).await;
    let mut leaked = Vec::new();
    while let Ok(event) = h.events.try_recv() {
        leaked.push(event);
    }
    assert!(leaked.is_empty(), "{leaked:?}");
}

#[tokio::test]
async fn progress_after_the_response_is_not_delivered() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let (opts, mut rx) = progress_options();
    let mut call = start_req(&h.peer, "work", Value::Null, opts);
    assert!((&mut call).now_or_never().is_none());
    let req = h.mock.expect_request("work").await;
    let token = params_of(req.params.as_deref())["_meta"]["progressToken"].clone();

    h.mock
        .notify("notifications/progress", progress_note(&token, 1.0))
        .await;
    h.mock.respond(req.id, json!({})).await;
    h.mock
        .notify("notifications/progress", progress_note(&token, 2.0))
        .await;
    // The late update is not routed: it reaches the service as an ordinary notification.
    let late = h.notified("notifications/progress").await;
    assert_eq!(late["progress"], 2.0);
    call.await.unwrap();
    assert_eq!(drain(&mut rx), [1.0]);
}

#[tokio::test]
async fn a_handler_reports_progress_only_with_a_token_and_only_increasing() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.mock
        .request(
            1,
            "progress",
            json!({ "values": [1, 2, 2, 1.5, 3], "_meta": { "progressToken": "tok" } }),
        )
        .await;
    for expected in [1.0, 2.0, 3.0] {
        let message = h.mock.next().await.expect("a message");
        assert_eq!(
            message.related_request,
            Some(RequestId::from(1)),
            "progress travels with its request"
        );
        let JsonRpcMessage::Notification(n) = message.message else {
            panic!("expected progress, got {:?}", message.message);
        };
        assert_eq!(n.method, "notifications/progress");
        let p = params_of(n.params.as_deref());
        assert_eq!(p["progressToken"], "tok");
        assert_eq!(p["progress"].as_f64(), Some(expected));
        assert_eq!(p["total"].as_f64(), Some(3.0));
    }
    assert_eq!(
        h.mock.expect_result(1).await,
        json!({ "reports": ["ok", "ok", "refused", "refused", "ok"] })
    );

    // Without a token: every report succeeds and nothing is sent but the result.
    assert_eq!(
        h.answer(2, "progress", json!({ "values": [1, 2] })).await,
        json!({ "reports": ["ok", "ok"] })
    );
}

/// A server session in the stateless era over [`EraTransport`], whose transport found
/// `meta` on every request.
fn era_harness(meta: FoundMeta) -> Harness {
    let (inner, mock) = MockPeer::pair();
    Harness::over(
        EraTransport { inner, meta },
        mock,
        SessionConfig::server().unstable_stateless_era(true),
    )
}

/// The in-memory transport of a session of the stateless era, handing each request
/// down with the `_meta` it found (as streamable HTTP does, in `TransportMessage::era`).
struct EraTransport {
    inner: MemoryTransport,
    meta: FoundMeta,
}

impl Transport for EraTransport {
    type Sink = MemorySink;
    type Stream = EraStream;

    fn split(self) -> (MemorySink, EraStream) {
        let (sink, inner) = self.inner.split();
        let meta = self.meta;
        (sink, EraStream { inner, meta })
    }

    fn info(&self) -> modelctx_transport::TransportInfo {
        modelctx_transport::TransportInfo::new("memory").with_stateless_era(true)
    }
}

/// [`EraTransport`]'s receiving half (no direct delivery: every request passes here).
struct EraStream {
    inner: MemoryStream,
    meta: FoundMeta,
}

impl MessageStream for EraStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            let mut next = self.inner.recv().await?;
            if let Ok(message) = &mut next
                && matches!(message.message, JsonRpcMessage::Request(_))
            {
                message.era = Some(Box::new(EraRead {
                    mirrored: Vec::new(),
                    meta: Some(self.meta.clone()),
                }));
            }
            Some(next)
        })
    }
}

#[tokio::test]
async fn the_request_context_keeps_the_meta_its_transport_found() {
    // The transport vouches for the text it found; here it differs from what the params
    // spell, to show which one the context keeps.
    let text: Arc<str> = Arc::from(r#"{"vendor/k":1}"#);
    let found = |plain: bool| FoundMeta {
        text: text.clone(),
        plain,
        shared: true,
        at: None,
    };
    let params = json!({ "_meta": { "vendor/k": 2, "progressToken": 9 } });

    // The request it was found for: the found text, the same `Arc`, and (plain) no
    // progress token.
    let mut h = era_harness(found(true));
    assert_eq!(
        h.answer(1, "found", params.clone()).await,
        json!({ "text": &*text, "shared": address(&text), "progressToken": null })
    );

    // Found as not plain: the progress token is read from that text.
    let text_with_token: Arc<str> = Arc::from(r#"{"progressToken":5}"#);
    let mut h = era_harness(FoundMeta {
        text: text_with_token.clone(),
        ..found(false)
    });
    assert_eq!(
        h.answer(1, "found", params.clone()).await,
        json!({ "text": &*text_with_token, "shared": address(&text_with_token), "progressToken": 5 })
    );
}

#[tokio::test]
async fn typed_params_are_handed_the_meta_the_context_read() {
    // Read by the context from the params: the typed params get that text, not a copy.
    let mut h = Harness::new(SessionConfig::server().pre_initialized());
    let meta = json!({ "progressToken": 3, "vendor/k": [1, "}"] });
    assert_eq!(
        h.answer(1, "handed", json!({ "name": "t", "_meta": meta }))
            .await,
        json!({ "name": "t", "meta": meta, "shared": true })
    );
    // Params that do not decode without their `_meta` get the decoder's refusal, as
    // when decoded whole.
    let error = h.error_answer(2, "handed", json!({ "_meta": meta })).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.contains("missing field `name`"),
        "{}",
        error.message
    );
    // Without the method's slot the params are decoded whole: the same `_meta`, copied.
    assert_eq!(
        h.answer(3, "decoded whole", json!({ "name": "t", "_meta": meta }))
            .await,
        json!({ "name": "t", "meta": meta, "shared": false })
    );

    // Found by the transport, with its place: handed over as well.
    // (As the mock writes it: keys in order.)
    let params = r#"{"_meta":{"vendor/k":1},"name":"t"}"#;
    let text: Arc<str> = Arc::from(r#"{"vendor/k":1}"#);
    let place = modelctx_transport::MetaPlace {
        offset: params.find("{\"vendor").unwrap(),
        params_len: params.len(),
    };
    let found = |at| FoundMeta {
        text: text.clone(),
        plain: true,
        shared: true,
        at,
    };
    // A place that does not hold the text: decoded whole.
    let moved = modelctx_transport::MetaPlace {
        offset: place.offset + 1,
        ..place
    };
    for (at, shared) in [(place, true), (moved, false)] {
        let mut h = era_harness(found(Some(at)));
        h.mock
            .request(1, "handed", serde_json::from_str(params).unwrap())
            .await;
        assert_eq!(
            h.mock.expect_result(1).await,
            json!({ "name": "t", "meta": { "vendor/k": 1 }, "shared": shared })
        );
    }
}

#[tokio::test]
async fn meta_passes_through_in_both_directions() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    // Inbound: the handler sees `_meta` as sent, and the progress token in it.
    let meta = json!({ "progressToken": 7, "vendor/trace": { "span": "abc" } });
    assert_eq!(
        h.answer(1, "meta", json!({ "x": 1, "_meta": meta })).await,
        json!({ "meta": meta, "progressToken": 7 })
    );
    assert_eq!(
        h.answer(2, "meta", json!({ "x": 1 })).await,
        json!({ "meta": null, "progressToken": null })
    );

    // Outbound: caller `_meta` is attached; the result's `_meta` comes back untouched.
    let mut extra = Meta::new();
    extra.insert("vendor/trace", json!({ "span": "def" }));
    let call = tokio::spawn(start_req(
        &h.peer,
        "sampling/createMessage",
        json!({ "maxTokens": 1, "_meta": { "existing": true } }),
        RequestOptions::new().meta(extra),
    ));
    let req = h.mock.expect_request("sampling/createMessage").await;
    assert_eq!(
        params_of(req.params.as_deref()),
        json!({
            "maxTokens": 1,
            "_meta": { "existing": true, "vendor/trace": { "span": "def" } }
        })
    );
    let result = json!({ "content": "hi", "_meta": { "vendor/usage": { "tokens": 3 } } });
    h.mock.respond(req.id, result.clone()).await;
    let got = call.await.unwrap().unwrap();
    assert_eq!(params_of(Some(&got)), result);
}
