//! Lifecycle & version negotiation.

use modelctx::http::StreamableHttpServerConfig;
use modelctx::server::Server;
use modelctx::session::RequestOptions;
use modelctx::transport::{MessageSink, MessageStream, TransportMessage};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, EmptyResult, ErrorCode, JsonObject,
    JsonRpcMessage, JsonRpcRequest, JsonRpcResultResponse, ListRootsRequest, ListRootsResult,
    ListToolsRequest, ListToolsResult, LoggingLevel, LoggingMessageNotification,
    LoggingMessageNotificationParams, Meta, PingRequest, ProtocolVersion, RequestId,
    RootsListChangedNotification, to_raw,
};
use modelctx_conformance::{
    Connector, Direction, SpecVersion, Test, TransportKind, conformance_test, record, within,
};
use serde_json::{Value, json};

use crate::http_support::{
    Event, Raw, RawResponse, call, host, host_on, initialize as initialize_request,
    read_events_until, send,
};
use crate::support::{
    Echo, Pair, client, connect, meta_echo_server, modern_vocabulary, pending_tool_server,
    refused_unsent, scripted_server, server_with_tool, stateless_era, text_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            initialize_exchanges_versions_capabilities_and_info,
            ["lifecycle:initialize:basic"]
        ),
        conformance_test!(
            initialize_result_names_the_server,
            ["lifecycle:initialize:server-info"]
        ),
        conformance_test!(
            client_exposes_the_server_instructions,
            ["lifecycle:initialize:instructions"]
        ),
        conformance_test!(
            capabilities_follow_the_registered_handlers,
            ["lifecycle:initialize:capabilities:from-handlers"]
        ),
        conformance_test!(
            a_server_without_handlers_advertises_nothing,
            ["lifecycle:initialize:capabilities:minimal"]
        ),
        conformance_test!(
            handlers_see_the_client_info,
            ["lifecycle:initialize:client-info"]
        ),
        conformance_test!(
            client_capabilities_follow_its_callbacks,
            ["lifecycle:initialize:client-capabilities"]
        ),
        conformance_test!(
            initialized_is_sent_once_before_any_other_request,
            ["lifecycle:initialized-notification"]
        ),
        conformance_test!(
            the_client_pings_the_server,
            ["lifecycle:ping", "ping:client-to-server"]
        ),
        conformance_test!(
            the_server_pings_the_client,
            ["lifecycle:ping", "ping:server-to-client"]
        ),
        conformance_test!(
            the_client_follows_an_older_version,
            ["lifecycle:version:downgrade"]
        ),
        conformance_test!(
            requests_before_initialization_are_rejected,
            ["lifecycle:requests-before-initialized"]
        ),
        conformance_test!(
            nothing_but_ping_and_logging_flows_before_initialized,
            ["lifecycle:pre-initialization-ordering"]
        ),
        conformance_test!(a_supported_version_is_echoed, ["lifecycle:version:match"]),
        conformance_test!(
            an_unknown_version_is_answered_with_the_latest,
            ["lifecycle:version:server-fallback-latest"]
        ),
        conformance_test!(
            a_client_refuses_a_version_it_cannot_speak,
            ["lifecycle:version:reject-unsupported"]
        ),
        conformance_test!(
            client_refuses_methods_the_server_did_not_advertise,
            ["lifecycle:capability:server-not-advertised"]
        ),
        conformance_test!(
            client_refuses_notifications_it_did_not_declare,
            ["lifecycle:capability:client-not-declared"]
        ),
        conformance_test!(
            an_earlier_revision_carries_no_modern_vocabulary,
            ["lifecycle:stateless:unpinned-legacy-wire"]
        ),
        conformance_test!(
            every_request_says_who_is_asking,
            [
                "lifecycle:stateless:request-envelope",
                "lifecycle:envelope:stamped-on-every-request"
            ]
        ),
        conformance_test!(
            the_callers_meta_survives_the_envelope,
            ["lifecycle:stateless:caller-meta-preserved"]
        ),
    ]
}

fn list_tools_server() -> Server {
    Server::builder("lister", "1.0.0")
        .request_handler::<ListToolsRequest, _, _>(|_, _| async {
            Ok(ListToolsResult::new(vec![]))
        })
        .build()
}

async fn connect_to(connector: &Connector, server: &Server) -> Pair {
    connect(connector, server, client()).await
}

/// Sends `initialize` from a raw client side and returns the result's JSON.
async fn raw_initialize(
    sink: &dyn MessageSink,
    stream: &mut dyn MessageStream,
    version: &str,
) -> Value {
    let params = json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}
    });
    send_request(sink, 1, "initialize", params).await;
    match next(stream).await {
        JsonRpcMessage::Response(r) => serde_json::from_str(r.result.get()).unwrap(),
        other => panic!("expected the initialize result, got {other:?}"),
    }
}

async fn send_request(sink: &dyn MessageSink, id: i64, method: &'static str, params: Value) {
    let request = JsonRpcRequest::new(
        RequestId::Number(id),
        method,
        Some(to_raw(&params).unwrap()),
    );
    sink.send(TransportMessage::new(request.into()))
        .await
        .unwrap();
}

async fn next(stream: &mut dyn MessageStream) -> JsonRpcMessage {
    within("the next message", stream.recv())
        .await
        .expect("the stream is open")
        .expect("a valid message")
        .message
}

async fn initialize_exchanges_versions_capabilities_and_info(connector: Connector) {
    let server = Server::builder("srv", "2.0.0").build();
    let pair = connect_to(&connector, &server).await;

    let sent = pair.wire.sent();
    let JsonRpcMessage::Request(init) = &sent[0] else {
        panic!("the first message is not a request: {:?}", sent[0]);
    };
    assert_eq!(init.method, "initialize");
    let params: Value = serde_json::from_str(init.params.as_ref().unwrap().get()).unwrap();
    assert_eq!(
        params["protocolVersion"],
        ProtocolVersion::LATEST_HANDSHAKE.as_str()
    );
    assert!(params["capabilities"].is_object());
    assert_eq!(params["clientInfo"]["name"], "conformance-client");
    assert_eq!(params["clientInfo"]["version"], "1.0.0");

    assert_eq!(
        pair.client.protocol_version(),
        &ProtocolVersion::LATEST_HANDSHAKE
    );
    assert_eq!(pair.client.server_info().name, "srv");
    assert!(pair.client.peer().is_initialized());
    pair.client.ping().await.unwrap();
}

async fn initialize_result_names_the_server(connector: Connector) {
    let titled = Server::builder("named", "3.1.4")
        .title("A Named Server")
        .build();
    let pair = connect_to(&connector, &titled).await;
    let info = pair.client.server_info();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("named", "3.1.4")
    );
    assert_eq!(info.title.as_deref(), Some("A Named Server"));

    let untitled = Server::builder("plain", "0.1.0").build();
    let pair = connect_to(&connector, &untitled).await;
    assert_eq!(pair.client.server_info().title, None);
}

async fn client_exposes_the_server_instructions(connector: Connector) {
    let server = Server::builder("guide", "1.0.0")
        .instructions("Call the tools in alphabetical order.")
        .build();
    let pair = connect_to(&connector, &server).await;
    assert_eq!(
        pair.client.instructions(),
        Some("Call the tools in alphabetical order.")
    );
    let bare = connect_to(&connector, &Server::builder("bare", "1.0.0").build()).await;
    assert_eq!(bare.client.instructions(), None);
}

async fn capabilities_follow_the_registered_handlers(connector: Connector) {
    let pair = connect_to(&connector, &list_tools_server()).await;
    let caps = pair.client.server_capabilities();
    assert!(caps.tools.is_some(), "tools handler registered: {caps:?}");
    assert!(
        caps.prompts.is_none() && caps.resources.is_none(),
        "{caps:?}"
    );
    assert!(
        caps.completions.is_none() && caps.logging.is_none(),
        "{caps:?}"
    );
}

async fn a_server_without_handlers_advertises_nothing(connector: Connector) {
    let pair = connect_to(&connector, &Server::builder("empty", "1.0.0").build()).await;
    let caps = serde_json::to_value(pair.client.server_capabilities()).unwrap();
    assert_eq!(caps, json!({}));
}

async fn handlers_see_the_client_info(connector: Connector) {
    let server = Server::builder("who", "1.0.0")
        .request_handler::<Echo, _, _>(|_, cx| async move {
            let info = cx.client_info().expect("known after initialize");
            Ok(json!({"name": info.name, "version": info.version, "title": info.title}))
        })
        .build();
    let pair = connect(&connector, &server, client().title("The Tester")).await;
    let seen = pair.client.request::<Echo>(json!({})).await.unwrap();
    assert_eq!(
        seen,
        json!({"name": "conformance-client", "version": "1.0.0", "title": "The Tester"})
    );
    assert_eq!(
        pair.server().client_info().unwrap().name,
        "conformance-client"
    );
}

async fn client_capabilities_follow_its_callbacks(connector: Connector) {
    let server = Server::builder("caps", "1.0.0").build();
    let with_roots = client().request_handler::<ListRootsRequest, _, _>(|_, _| async {
        Ok(ListRootsResult::new(vec![]))
    });
    let pair = connect(&connector, &server, with_roots).await;
    let caps = pair.server().client_capabilities().unwrap();
    assert!(caps.roots.is_some(), "{caps:?}");
    assert!(
        caps.sampling.is_none() && caps.elicitation.is_none(),
        "{caps:?}"
    );

    let plain = connect(&connector, &server, client()).await;
    let caps = serde_json::to_value(plain.server().client_capabilities().unwrap()).unwrap();
    assert_eq!(caps, json!({}));
}

async fn initialized_is_sent_once_before_any_other_request(connector: Connector) {
    let pair = connect_to(&connector, &list_tools_server()).await;
    pair.client.request::<ListToolsRequest>(None).await.unwrap();
    let sent = pair.wire.sent();
    let methods = pair.wire.sent_methods();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/list"],
        "{sent:?}"
    );
}

async fn the_client_pings_the_server(connector: Connector) {
    let pair = connect_to(&connector, &Server::builder("pong", "1.0.0").build()).await;
    let empty: EmptyResult = pair.client.request::<PingRequest>(None).await.unwrap();
    assert_eq!(serde_json::to_value(empty).unwrap(), json!({}));
}

async fn the_server_pings_the_client(connector: Connector) {
    let pair = connect_to(&connector, &Server::builder("pong", "1.0.0").build()).await;
    pair.server().ping().await.unwrap();
    // The client answered the server's ping with an empty object.
    let is_answer = |r: &modelctx_conformance::Recorded| {
        r.direction == Direction::Sent && matches!(r.message.message, JsonRpcMessage::Response(_))
    };
    let log = pair.wire.wait_for(|log| log.iter().any(is_answer)).await;
    let answer = log.iter().find(|r| is_answer(r)).unwrap();
    let JsonRpcMessage::Response(answer) = &answer.message.message else {
        unreachable!()
    };
    assert_eq!(answer.result.get(), "{}");
}

async fn requests_before_initialization_are_rejected(connector: Connector) {
    if connector.cell().shares_sessions() {
        return requests_before_initialization_are_rejected_on_every_instance(connector).await;
    }
    let (client_side, server_side) = connector.transport_pair().await;
    let _session = list_tools_server().serve(server_side);
    let (sink, mut stream) = client_side;

    send_request(sink.as_ref(), 7, "tools/list", json!({})).await;
    match next(stream.as_mut()).await {
        JsonRpcMessage::Error(e) => {
            assert_eq!(e.id, Some(RequestId::Number(7)));
            assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    // Ping is allowed before initialization.
    send_request(sink.as_ref(), 8, "ping", json!({})).await;
    match next(stream.as_mut()).await {
        JsonRpcMessage::Response(r) => assert_eq!(r.id, RequestId::Number(8)),
        other => panic!("expected the ping result, got {other:?}"),
    }
}

async fn nothing_but_ping_and_logging_flows_before_initialized(connector: Connector) {
    if connector.cell().shares_sessions() {
        the_server_sends_nothing_but_ping_and_logging_on_every_instance(&connector).await;
    } else {
        the_server_sends_nothing_but_ping_and_logging(&connector).await;
    }

    // Our own client negotiates before anything else: initialize then
    // notifications/initialized, or (2026-07-28, which has no initialization) the
    // server/discover probe; only then the caller's request.
    let pair = connect_to(&connector, &list_tools_server()).await;
    within("tools/list", pair.client.request::<ListToolsRequest>(None))
        .await
        .unwrap();
    let messages = pair.wire.sent();
    let sent: Vec<_> = messages.iter().map(|m| m.method()).collect();
    let negotiation: &[&str] = if stateless_era(&pair.client) {
        &["server/discover", "tools/list"]
    } else {
        &["initialize", "notifications/initialized", "tools/list"]
    };
    let expected: Vec<_> = negotiation.iter().map(|m| Some(*m)).collect();
    assert_eq!(sent, expected);
}

/// The server half over a raw transport pair: before `notifications/initialized` the
/// server's own request is refused locally, while logging and ping flow.
async fn the_server_sends_nothing_but_ping_and_logging(connector: &Connector) {
    let (client_side, server_side) = connector.transport_pair().await;
    let session = Server::builder("eager", "1.0.0").build().serve(server_side);
    let (sink, mut stream) = client_side;
    raw_initialize(sink.as_ref(), stream.as_mut(), "2025-11-25").await;

    // No notifications/initialized yet: a server request is refused locally, while
    // logging and ping may flow.
    let refused = within("the refusal", session.request::<ListRootsRequest>(None))
        .await
        .unwrap_err();
    assert!(refused.is_refused(), "{refused}");
    let log = LoggingMessageNotificationParams::new(LoggingLevel::Info, json!("starting"));
    within("the log", session.notify::<LoggingMessageNotification>(log))
        .await
        .unwrap();
    assert_eq!(
        next(stream.as_mut()).await.method(),
        Some("notifications/message")
    );
    let ping = tokio::spawn({
        let session = session.clone();
        async move { session.ping().await }
    });
    let JsonRpcMessage::Request(ping_request) = next(stream.as_mut()).await else {
        panic!("expected the server's ping");
    };
    assert_eq!(ping_request.method, "ping");
    let pong = JsonRpcResultResponse::new(ping_request.id, to_raw(&json!({})).unwrap());
    sink.send(TransportMessage::new(pong.into())).await.unwrap();
    within("the server's ping", ping).await.unwrap().unwrap();
}

async fn a_supported_version_is_echoed(connector: Connector) {
    let server = Server::builder("old-friend", "1.0.0").build();
    for version in ProtocolVersion::HANDSHAKE {
        let offered = client().protocol_version(version.clone());
        let pair = connect(&connector, &server, offered).await;
        assert_eq!(pair.client.protocol_version(), &version);
        // The server's initialize result carried the offered version back.
        let answered = |r: &modelctx_conformance::Recorded| match &r.message.message {
            JsonRpcMessage::Response(res) if r.direction == Direction::Received => {
                serde_json::from_str::<Value>(res.result.get())
                    .is_ok_and(|v| v["protocolVersion"] == version.as_str())
            }
            _ => false,
        };
        pair.wire.wait_for(|log| log.iter().any(answered)).await;
        pair.client.ping().await.unwrap();
    }
}

async fn an_unknown_version_is_answered_with_the_latest(connector: Connector) {
    if connector.cell().shares_sessions() {
        return an_unknown_version_is_answered_with_the_latest_on_every_instance(connector).await;
    }
    let (client_side, server_side) = connector.transport_pair().await;
    let _session = Server::builder("modern", "1.0.0")
        .build()
        .serve(server_side);
    let (sink, mut stream) = client_side;
    let result = raw_initialize(sink.as_ref(), stream.as_mut(), "1999-12-31").await;
    assert_eq!(
        result["protocolVersion"],
        ProtocolVersion::LATEST_HANDSHAKE.as_str()
    );
}

// The shared leg (`streamable-http-shared`): a `Server` hosted by two services sharing
// sessions through Redis, every POST going to the next service (`Raw` through the
// round-robin proxy): `initialize` reaches the first instance (A), the next POST the
// other (B), and so on in turn. Whichever instance a message of the session reaches
// serves it from the session's shared record.

/// The session id a 200 answer to `initialize` names.
fn session_of(answer: &RawResponse) -> String {
    assert_eq!(answer.status, 200, "{answer:?}");
    answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned()
}

/// The client's `notifications/initialized`, as JSON.
fn initialized_note() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// A POST of the shared session's next message, to the next instance.
async fn post(raw: &Raw, session: &str, body: &Value) -> RawResponse {
    send(raw.post(Some(session), body)).await
}

/// A session's requests other than `ping`, before the client's
/// `notifications/initialized`: refused on each instance that continues the session from
/// its record and on the one that ran the handshake, each with the answer one service
/// gives; `ping` answered on every instance; after the note (on one instance), served on
/// every instance.
async fn requests_before_initialization_are_rejected_on_every_instance(connector: Connector) {
    let config = StreamableHttpServerConfig::default;
    // What one service answers a request sent before the note, to compare with.
    let alone = host(list_tools_server(), config()).await;
    let one = Raw::new(&alone.url);
    let one_session = session_of(&send(one.post(None, &initialize_request(1, "2025-11-25"))).await);
    let one_answer = post(&one, &one_session, &call(7, "tools/list", json!({}))).await;

    let hosted = host_on(&connector, list_tools_server(), config()).await;
    let raw = Raw::new(&hosted.url);
    let session = session_of(&send(raw.post(None, &initialize_request(1, "2025-11-25"))).await);
    let instances = hosted.copies_per_instance().len();
    let mut copies = vec![0; instances];
    copies[0] = 1;
    assert_eq!(hosted.copies_per_instance(), copies, "A ran the handshake");

    // B (and C, with three instances): each continues the session from its record, and
    // refuses (B as one service does). Then A, the instance that ran the handshake, refuses
    // too (nothing stands in for the note the client never sent).
    let mut id = 7;
    for instance in (1..instances).chain([0]) {
        let answer = post(&raw, &session, &call(id, "tools/list", json!({}))).await;
        copies[instance] = 1;
        assert_eq!(hosted.copies_per_instance(), copies, "a copy on {instance}");
        answer.assert_error_answer(id, ErrorCode::INVALID_REQUEST);
        if id == 7 {
            assert_same_answer(&answer, &one_answer);
        }
        id += 1;
    }

    // `ping` is answered on every instance.
    for _ in 0..instances {
        let pong = post(&raw, &session, &call(id, "ping", json!({}))).await;
        assert_eq!(pong.status, 200, "{pong:?}");
        assert_eq!(
            pong.only_message(),
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        );
        id += 1;
    }

    // The note reaches one instance; then a request is served on every instance.
    let noted = post(&raw, &session, &initialized_note()).await;
    assert_eq!(noted.status, 202, "{noted:?}");
    for _ in 0..instances {
        let listed = post(&raw, &session, &call(id, "tools/list", json!({}))).await;
        assert_eq!(listed.status, 200, "{listed:?}");
        assert_eq!(
            listed.only_message(),
            json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}})
        );
        id += 1;
    }
    assert_eq!(
        hosted.copies_per_instance(),
        vec![1; instances],
        "one session, a copy on each"
    );
}

/// The same HTTP status, content type and JSON-RPC messages.
fn assert_same_answer(shared: &RawResponse, one: &RawResponse) {
    assert_eq!(shared.status, one.status);
    assert_eq!(
        shared.header("content-type"),
        one.header("content-type"),
        "shared: {shared:?}; one service: {one:?}"
    );
    assert_eq!(shared.messages(), one.messages());
}

/// The server half on the shared leg: before the client's `notifications/initialized`,
/// the copy that answered `initialize` (A) and the copy the other instance continues
/// from the record (B) each refuse to send a request of their own, while their logging
/// reaches the client's GET stream and A's ping is answered (the answer posted to B).
async fn the_server_sends_nothing_but_ping_and_logging_on_every_instance(connector: &Connector) {
    let mut hosted = host_on(
        connector,
        Server::builder("eager", "1.0.0").build(),
        StreamableHttpServerConfig::default(),
    )
    .await;
    let raw = Raw::new(&hosted.url);
    let session = session_of(&send(raw.post(None, &initialize_request(1, "2025-11-25"))).await);
    let a = hosted.session().await.session;
    // A ping reaches B, which starts its copy of the session.
    let pong = post(&raw, &session, &call(2, "ping", json!({}))).await;
    assert_eq!(pong.status, 200, "{pong:?}");
    let b = hosted.next_copy().await.session;

    for (copy, name) in [(&a, "A"), (&b, "B")] {
        let refused = within("the refusal", copy.request::<ListRootsRequest>(None))
            .await
            .unwrap_err();
        assert!(refused.is_refused(), "{name}: {refused}");
        let log = LoggingMessageNotificationParams::new(LoggingLevel::Info, json!(name));
        within("the log", copy.notify::<LoggingMessageNotification>(log))
            .await
            .unwrap();
    }
    // The GET stream (on A) carries both logs: kept in Redis until it opened, or
    // relayed to it.
    let mut get = within("the GET stream", raw.get(&session).send())
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let logged = |events: &[Event]| {
        let mut data: Vec<Value> = events
            .iter()
            .filter_map(Event::json)
            .filter(|m| m["method"] == "notifications/message")
            .map(|m| m["params"]["data"].clone())
            .collect();
        data.sort_by_key(Value::to_string);
        data
    };
    let events = read_events_until(&mut get, |e| logged(e).len() >= 2).await;
    assert_eq!(logged(&events), [json!("A"), json!("B")]);

    // A's ping reaches the client there; its answer, posted to B, reaches A.
    let ping = tokio::spawn({
        let a = a.clone();
        async move { a.ping().await }
    });
    let events = read_events_until(&mut get, |e| {
        e.iter()
            .filter_map(Event::json)
            .any(|m| m["method"] == "ping")
    })
    .await;
    let request = events
        .iter()
        .filter_map(Event::json)
        .find(|m| m["method"] == "ping")
        .unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {}});
    let answered = post(&raw, &session, &answer).await;
    assert_eq!(answered.status, 202, "{answered:?}");
    within("the server's ping", ping).await.unwrap().unwrap();
}

/// On the shared leg: `initialize` naming an unknown version, answered (by A) with the
/// latest; the copy B continues from the record speaks it too.
async fn an_unknown_version_is_answered_with_the_latest_on_every_instance(connector: Connector) {
    let mut hosted = host_on(
        &connector,
        Server::builder("modern", "1.0.0").build(),
        StreamableHttpServerConfig::default(),
    )
    .await;
    let raw = Raw::new(&hosted.url);
    let answer = send(raw.post(None, &initialize_request(1, "1999-12-31"))).await;
    let session = session_of(&answer);
    assert_eq!(
        answer.only_message()["result"]["protocolVersion"],
        ProtocolVersion::LATEST_HANDSHAKE.as_str()
    );
    let a = hosted.session().await.session;
    let noted = post(&raw, &session, &initialized_note()).await;
    assert_eq!(noted.status, 202, "{noted:?}");
    let b = hosted.next_copy().await.session;
    for copy in [&a, &b] {
        assert_eq!(
            copy.protocol_version(),
            Some(&ProtocolVersion::LATEST_HANDSHAKE)
        );
    }
}

/// A scripted server that speaks only 2025-03-26 (no `Server` can be told to).
async fn the_client_follows_an_older_version(connector: Connector) {
    let old = scripted_server(&connector, |method| match method {
        "initialize" => json!({"protocolVersion": "2025-03-26", "capabilities": {},
                               "serverInfo": {"name": "old", "version": "1"}}),
        _ => json!({}),
    })
    .await;
    let client = within("the client to connect", client().connect(old))
        .await
        .expect("the client accepts the older version");
    assert_eq!(client.protocol_version().as_str(), "2025-03-26");
    within("a ping at that version", client.ping())
        .await
        .unwrap();
}

async fn a_client_refuses_a_version_it_cannot_speak(connector: Connector) {
    let (client_side, server_side) = connector.transport_pair().await;
    let (sink, mut stream) = server_side;
    let connecting = tokio::spawn(client().connect(client_side));

    let JsonRpcMessage::Request(init) = next(stream.as_mut()).await else {
        panic!("expected initialize");
    };
    let result = json!({
        "protocolVersion": "2099-01-01",
        "capabilities": {},
        "serverInfo": {"name": "future", "version": "9"}
    });
    let answer = JsonRpcResultResponse::new(init.id, to_raw(&result).unwrap());
    sink.send(TransportMessage::new(answer.into()))
        .await
        .unwrap();

    let err = within("the connect to fail", connecting)
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("2099-01-01"), "{err}");
    // No notifications/initialized follows: the client closed the connection instead.
    assert!(within("the client to close", stream.recv()).await.is_none());
}

async fn client_refuses_methods_the_server_did_not_advertise(connector: Connector) {
    let pair = connect_to(&connector, &Server::builder("toolless", "1.0.0").build()).await;
    let err = refused_unsent(&pair, pair.client.request::<ListToolsRequest>(None)).await;
    assert!(err.to_string().contains("tools"), "{err}");

    let pair = connect_to(&connector, &list_tools_server()).await;
    pair.client.request::<ListToolsRequest>(None).await.unwrap();
}

async fn client_refuses_notifications_it_did_not_declare(connector: Connector) {
    let server = Server::builder("roots-watcher", "1.0.0").build();
    let pair = connect_to(&connector, &server).await;
    let roots_changed = pair.client.notify::<RootsListChangedNotification>(None);
    refused_unsent(&pair, roots_changed).await;

    // Declared, it goes out, in an era that has it: 2026-07-28 has no client
    // notifications outside a request, and refuses this one whatever is declared.
    let declared = client().capabilities(ClientCapabilities::new().with_roots(true));
    let pair = connect(&connector, &server, declared).await;
    let before = pair.wire.messages().len();
    let sent = pair
        .client
        .notify::<RootsListChangedNotification>(None)
        .await;
    if stateless_era(&pair.client) {
        let err = sent.unwrap_err();
        assert!(err.to_string().contains("2026-07-28"), "{err}");
        assert_eq!(pair.wire.messages().len(), before, "nothing was sent");
        return;
    }
    sent.unwrap();
    let last = pair
        .wire
        .sent()
        .last()
        .and_then(|m| m.method().map(str::to_owned));
    assert_eq!(last.as_deref(), Some("notifications/roots/list_changed"));
}

/// A client left to negotiate (not pinned to 2026-07-28) with a server that speaks
/// every revision: they agree on 2025-11-25, and no frame either way carries 2026-07-28
/// vocabulary — not the server's result stamps, not the client's envelope.
async fn an_earlier_revision_carries_no_modern_vocabulary(connector: Connector) {
    let tool = text_tool("hello", "hi");
    let server = server_with_tool("both-eras", tool);
    let client = if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        server.serve(server_side);
        let (client_side, wire) = record(client_side);
        let client = within("the client to connect", client().connect(client_side))
            .await
            .unwrap();
        (client, wire)
    } else if connector.kind().serves(TransportKind::StreamableHttp)
        && connector.version() == SpecVersion::V2026_07_28
    {
        // 2026-07-28 over HTTP, stateless: an endpoint that serves both eras (once per
        // instance of the cell).
        let config = StreamableHttpServerConfig::default();
        let hosted = host_on(&connector, server, config).await;
        let (transport, _) = hosted.transport();
        let (client_side, wire) = record(modelctx::transport::boxed(transport));
        let client = within("the client to connect", client().connect(client_side))
            .await
            .unwrap();
        (client, wire)
    } else {
        let pair = connect(&connector, &server, client()).await;
        (pair.client, pair.wire)
    };
    let (client, wire) = client;
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    client.list_all_tools().await.unwrap();
    client.call_tool("hello", JsonObject::new()).await.unwrap();
    let messages = wire.messages();
    assert!(messages.len() >= 6, "{messages:?}");
    for m in messages {
        let frame = serde_json::to_string(&m.message.message).unwrap();
        assert_eq!(modern_vocabulary(&frame), None, "{frame}");
    }
}

/// 2026-07-28: no initialize; every request carries the envelope in `_meta`
/// (protocolVersion, clientCapabilities and clientInfo), notifications do not.
async fn every_request_says_who_is_asking(connector: Connector) {
    let (server, mut cancelled_rx, mut started_rx) = pending_tool_server("envelope", "waits");
    let declared = ClientCapabilities::new().with_roots(true);
    let pair = connect(&connector, &server, client().capabilities(declared)).await;
    pair.client.list_all_tools().await.unwrap();
    pair.client.request::<Echo>(json!({"k": 1})).await.unwrap();
    // A call given up on: its cancellation is a notification, without the envelope.
    let call = pair
        .client
        .start_request::<CallToolRequest>(
            CallToolRequestParams::new("waits"),
            RequestOptions::new(),
        )
        .unwrap();
    let canceller = call.canceller();
    let waiting = tokio::spawn(call);
    within("the handler to start", started_rx.recv()).await;
    canceller.cancel("enough").await;
    within("the handler to stop", cancelled_rx.recv()).await;
    let _ = waiting.await;

    assert_eq!(pair.wire.sent_count("initialize"), 0);
    let sent = pair.wire.sent();
    let requests: Vec<Value> = sent
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Request(_)))
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert!(requests.len() >= 4, "{requests:?}");
    for request in &requests {
        let meta = &request["params"]["_meta"];
        assert_eq!(meta[Meta::PROTOCOL_VERSION], "2026-07-28", "{request}");
        assert_eq!(
            meta[Meta::CLIENT_CAPABILITIES],
            json!({"roots": {"listChanged": true}})
        );
        assert_eq!(
            meta[Meta::CLIENT_INFO]["name"],
            "conformance-client",
            "{request}"
        );
    }
    let notifications: Vec<Value> = sent
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Notification(_)))
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert!(!notifications.is_empty(), "the cancellation was sent");
    for notification in &notifications {
        let text = notification.to_string();
        assert!(!text.contains(Meta::PROTOCOL_VERSION), "{text}");
        assert!(!text.contains(Meta::CLIENT_CAPABILITIES), "{text}");
    }
}

/// The caller's own `_meta` keys reach the handler; the envelope's keys are the
/// client's to state, whatever the caller put there.
async fn the_callers_meta_survives_the_envelope(connector: Connector) {
    let pair = connect(&connector, &meta_echo_server(), client()).await;
    let mut meta = Meta::new();
    meta.insert("example.com/trace", json!("abc"));
    meta.insert(Meta::PROTOCOL_VERSION, json!("1999-01-01"));
    let seen = pair
        .client
        .request_with::<Echo>(json!({}), RequestOptions::new().meta(meta))
        .await
        .unwrap();
    assert_eq!(seen["example.com/trace"], "abc");
    assert_eq!(seen[Meta::PROTOCOL_VERSION], "2026-07-28");
}
