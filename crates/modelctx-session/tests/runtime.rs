//! Runtime tests: one session (server or client role) against the scripted [`MockPeer`],
//! asserting the exact wire messages. Each test reads in the order of the conversation.
//!
//! Synchronisation is by events only: the mock's bounded expectations, the test service's
//! event channel, and "send a ping, see the ping answer" to prove the receive loop has
//! processed everything the mock sent before it. Timeout tests run on paused time.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use modelctx_memory::{MemorySink, MemoryStream, MemoryTransport, MockPeer};
use modelctx_session::{
    CancellationToken, Peer, Progress, RequestContext, RequestHandle, RequestOptions, Role,
    Service, SessionConfig, parse_params, start,
};
use modelctx_transport::{
    EraRead, FoundMeta, MessageStream, Transport, TransportError, TransportMessage,
};
use modelctx_types::{
    CallToolRequest, CallToolRequestParams, ErrorCode, ErrorData, JsonRpcMessage,
    JsonRpcNotification, JsonRpcRequest, Meta, RawValue, RequestId, RequestMethod, to_raw,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

// ---------------------------------------------------------------------------------------
// The test service and harness
// ---------------------------------------------------------------------------------------

/// What the test service reports to the test.
#[derive(Debug)]
enum Event {
    /// A handler started (after the concurrency bound let it run).
    Started {
        id: RequestId,
        method: String,
        token: CancellationToken,
    },
    /// A notification reached the service.
    Notification(JsonRpcNotification),
    /// An error without id reached the service.
    PeerError(ErrorData),
}

/// Answers a few methods:
/// - `initialize`: a fixed result, or `-32603` when the params say `{"fail": true}`;
/// - `echo`: its params (or `{}`);
/// - `slow`: waits for `release` (one permit per `notify_one`), then `{"released": true}`;
/// - `panic`: panics;
/// - `typed`: decodes `{"count": u32}` with `parse_params`;
/// - `meta`: returns the `_meta` and progress token it saw;
/// - `found`: returns the `_meta` text it saw, the address of the transport's shared
///   text when it got that one, and its progress token;
/// - `progress`: reports each of `values` and says which reports were accepted;
/// - anything else: `-32601`.
struct TestService {
    events: mpsc::UnboundedSender<Event>,
    release: Arc<Notify>,
}

#[derive(Deserialize)]
struct TypedParams {
    count: u32,
}

#[derive(Deserialize)]
struct ProgressValues {
    values: Vec<f64>,
}

impl Service for TestService {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        Box::pin(async move {
            let method = request.method.to_string();
            let _ = self.events.send(Event::Started {
                id: request.id.clone(),
                method: method.clone(),
                token: cx.cancellation().clone(),
            });
            match method.as_str() {
                "initialize" => {
                    let params: Value = parse_params(request.params.as_deref())?;
                    if params["fail"] == json!(true) {
                        return Err(ErrorData::internal_error("initialize failed on purpose"));
                    }
                    Ok(raw(json!({
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "serverInfo": { "name": "test", "version": "0" }
                    })))
                }
                "echo" => Ok(request.params.unwrap_or_else(|| raw(json!({})))),
                "slow" => {
                    self.release.notified().await;
                    Ok(raw(json!({ "released": true })))
                }
                "panic" => panic!("secret panic text: the database password is hunter2"),
                "typed" => {
                    let p: TypedParams = parse_params(request.params.as_deref())?;
                    Ok(raw(json!({ "count": p.count })))
                }
                "meta" => Ok(raw(json!({
                    "meta": cx.meta(),
                    "progressToken": cx.progress_token(),
                }))),
                "handed" | "decoded whole" => {
                    let slot = match request.method.as_ref() {
                        "handed" => CallToolRequest::UNSTABLE_META_SLOT,
                        _ => None,
                    };
                    let p: CallToolRequestParams =
                        cx.unstable_parse_params(request.params.as_deref(), slot)?;
                    // Handed over: the params' `_meta` is the context's own text, not a copy.
                    let text = p.meta.as_ref().and_then(Meta::unstable_text);
                    let shared = text.map(str::as_ptr).is_some()
                        && text.map(str::as_ptr) == cx.unstable_meta_text().map(str::as_ptr);
                    Ok(raw(
                        json!({ "name": p.name, "meta": p.meta, "shared": shared }),
                    ))
                }
                "found" => Ok(raw(json!({
                    "text": cx.unstable_meta_text(),
                    "shared": cx.unstable_shared_meta().map(address),
                    "progressToken": cx.progress_token(),
                }))),
                "progress" => {
                    let p: ProgressValues = parse_params(request.params.as_deref())?;
                    let mut reports = Vec::new();
                    for v in p.values {
                        let outcome = cx.report_progress(Progress::new(v).with_total(3.0)).await;
                        reports.push(match outcome {
                            Ok(()) => "ok",
                            Err(e) if e.is_refused() => "refused",
                            Err(_) => "error",
                        });
                    }
                    Ok(raw(json!({ "reports": reports })))
                }
                other => Err(ErrorData::method_not_found(other)),
            }
        })
    }

    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        _peer: Peer,
    ) -> BoxFuture<'static, ()> {
        if notification.method == "notifications/slow" {
            // Reported only once released, like the `slow` request.
            return Box::pin(async move {
                self.release.notified().await;
                let _ = self.events.send(Event::Notification(notification));
            });
        }
        // Reported from the handler's future (its part that runs in order), not from
        // the call (which happens at arrival).
        Box::pin(async move {
            let _ = self.events.send(Event::Notification(notification));
        })
    }

    fn handle_error(self: Arc<Self>, error: ErrorData, _peer: Peer) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = self.events.send(Event::PeerError(error));
        })
    }
}

/// One session under test, the mock at the other end, and the service's events.
struct Harness {
    peer: Peer,
    mock: MockPeer,
    events: mpsc::UnboundedReceiver<Event>,
    release: Arc<Notify>,
}

impl Harness {
    fn new(config: SessionConfig) -> Self {
        let (transport, mock) = MockPeer::pair();
        Self::over(transport, mock, config)
    }

    /// A session over `transport`, whose other end `mock` plays.
    fn over(transport: impl Transport, mock: MockPeer, config: SessionConfig) -> Self {
        let (tx, events) = mpsc::unbounded_channel();
        let release = Arc::new(Notify::new());
        let service = Arc::new(TestService {
            events: tx,
            release: release.clone(),
        });
        let peer = start(transport, service, config);
        Self {
            peer,
            mock,
            events,
            release,
        }
    }

    async fn next_event(&mut self) -> Event {
        tokio::time::timeout(Duration::from_secs(5), self.events.recv())
            .await
            .expect("no service event within 5 s")
            .expect("the service is gone")
    }

    /// Waits until a handler for `method` has started; its id and cancellation token.
    async fn started(&mut self, method: &str) -> (RequestId, CancellationToken) {
        loop {
            if let Event::Started {
                id,
                method: m,
                token,
            } = self.next_event().await
                && m == method
            {
                return (id, token);
            }
        }
    }

    /// Waits until the service received a notification for `method`; its params.
    async fn notified(&mut self, method: &str) -> Value {
        loop {
            if let Event::Notification(n) = self.next_event().await
                && n.method == method
            {
                return params_of(n.params.as_deref());
            }
        }
    }

    /// The methods of the handlers that started and are already reported, without waiting.
    fn started_so_far(&mut self) -> Vec<String> {
        let mut methods = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            if let Event::Started { method, .. } = event {
                methods.push(method);
            }
        }
        methods
    }

    /// Sends a ping from the mock and expects its answer as the very next message: proves
    /// that the session processed everything sent before and sent nothing in between.
    async fn ping_sync(&mut self, id: i64) {
        self.mock.request(id, "ping", Value::Null).await;
        assert_eq!(self.mock.expect_result(id).await, json!({}));
    }

    /// Sends a request from the mock and expects it refused as an invalid request
    /// (`-32600`).
    async fn expect_invalid_request(
        &mut self,
        id: i64,
        method: &'static str,
        params: Value,
    ) -> ErrorData {
        self.mock.request(id, method, params).await;
        let err = self.mock.expect_error(Some(RequestId::from(id))).await;
        assert_eq!(err.code, ErrorCode::INVALID_REQUEST, "{method}");
        err
    }

    /// Server role: the client's side of the handshake.
    async fn serve_handshake(&mut self) {
        self.mock.request("init", "initialize", init_params()).await;
        let result = self.mock.expect_result("init").await;
        assert_eq!(result["protocolVersion"], "2025-06-18");
        self.mock
            .notify("notifications/initialized", Value::Null)
            .await;
    }

    /// Client role: the session sends initialize, the mock answers, the session confirms.
    async fn client_handshake(&mut self) {
        let init = tokio::spawn(request(&self.peer, "initialize", init_params()));
        let req = self.mock.expect_request("initialize").await;
        self.mock.respond(req.id, server_init_result()).await;
        assert_eq!(init.await.unwrap().unwrap(), server_init_result());
        self.peer
            .notify_raw(Cow::Borrowed("notifications/initialized"), None)
            .await
            .unwrap();
        self.mock
            .expect_notification("notifications/initialized")
            .await;
        assert!(self.peer.is_initialized());
    }
}

fn raw(value: Value) -> Box<RawValue> {
    to_raw(&value).unwrap()
}

fn params_of(raw: Option<&RawValue>) -> Value {
    raw.map_or(Value::Null, |r| serde_json::from_str(r.get()).unwrap())
}

fn init_params() -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": { "name": "mock", "version": "0" }
    })
}

fn server_init_result() -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "serverInfo": { "name": "mock", "version": "0" }
    })
}

/// Starts an outbound request with raw params (`null` = none).
fn start_req(
    peer: &Peer,
    method: &'static str,
    params: Value,
    options: RequestOptions,
) -> RequestHandle<Box<RawValue>> {
    let params = (!params.is_null()).then(|| raw(params));
    peer.start_raw(Cow::Borrowed(method), params, options)
}

/// An outbound request with default options, its result decoded.
fn request(
    peer: &Peer,
    method: &'static str,
    params: Value,
) -> BoxFuture<'static, Result<Value, modelctx_session::SessionError>> {
    let handle = start_req(peer, method, params, RequestOptions::new());
    Box::pin(async move { handle.await.map(|r| params_of(Some(&r))) })
}

fn id_num(id: &RequestId) -> i64 {
    match id {
        RequestId::Number(n) => *n,
        other => panic!("expected a numeric id, got {other:?}"),
    }
}

/// The `notifications/cancelled` params the session sent for `id`.
fn cancelled_params(n: &JsonRpcNotification) -> (i64, String) {
    let p = params_of(n.params.as_deref());
    (
        p["requestId"].as_i64().expect("requestId is an integer"),
        p["reason"].as_str().unwrap_or_default().to_owned(),
    )
}

fn progress_note(token: &Value, progress: f64) -> Value {
    json!({ "progressToken": token, "progress": progress })
}

// ---------------------------------------------------------------------------------------
// Ping
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn server_answers_ping_in_every_phase_and_pings_out() {
    let mut h = Harness::new(SessionConfig::server());

    // New: ping is answered with an empty object.
    h.mock.request(1, "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result(1).await, json!({}));

    // The server's own ping goes out before initialize and resolves only on the answer.
    let mut ping = Box::pin(h.peer.ping());
    assert!(ping.as_mut().now_or_never().is_none());
    let req = h.mock.expect_request("ping").await;
    assert!(req.params.is_none());
    assert!(
        ping.as_mut().now_or_never().is_none(),
        "ping resolved before the answer"
    );
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap();

    // Initializing (initialize answered, notifications/initialized not yet received).
    h.mock.request(2, "initialize", init_params()).await;
    h.mock.expect_result(2).await;
    h.mock.request(3, "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result(3).await, json!({}));
    assert!(!h.peer.is_initialized());

    // Operational.
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    h.mock.request(4, "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result(4).await, json!({}));
    assert!(h.peer.is_initialized());
    // A string id is echoed as a string.
    h.mock.request("p", "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result("p").await, json!({}));

    let ping = tokio::spawn({
        let peer = h.peer.clone();
        async move { peer.ping().await }
    });
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap().unwrap();
}

#[tokio::test]
async fn client_answers_ping_in_every_phase_and_pings_out() {
    let mut h = Harness::new(SessionConfig::client());
    assert_eq!(h.peer.role(), Role::Client);

    // New.
    h.mock.request(1, "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result(1).await, json!({}));
    let mut ping = Box::pin(h.peer.ping());
    assert!(ping.as_mut().now_or_never().is_none());
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap();

    // Initializing: initialize sent and answered, notifications/initialized not sent.
    let init = tokio::spawn(request(&h.peer, "initialize", init_params()));
    let req = h.mock.expect_request("initialize").await;
    h.mock.request(2, "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result(2).await, json!({}));
    h.mock.respond(req.id, server_init_result()).await;
    init.await.unwrap().unwrap();
    h.mock.request(3, "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result(3).await, json!({}));
    let ping = tokio::spawn({
        let peer = h.peer.clone();
        async move { peer.ping().await }
    });
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap().unwrap();

    // Operational.
    h.peer
        .notify_raw(Cow::Borrowed("notifications/initialized"), None)
        .await
        .unwrap();
    h.mock
        .expect_notification("notifications/initialized")
        .await;
    h.mock.request(4, "ping", Value::Null).await;
    assert_eq!(h.mock.expect_result(4).await, json!({}));
}

// ---------------------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn server_rejects_requests_before_initialize() {
    let mut h = Harness::new(SessionConfig::server());

    let err = h.expect_invalid_request(1, "echo", json!({ "x": 1 })).await;
    assert!(err.message.contains("echo"), "{}", err.message);

    // The handshake still works afterwards, and the rejected request never ran.
    h.serve_handshake().await;
    h.mock.request(2, "echo", json!({ "x": 2 })).await;
    assert_eq!(h.mock.expect_result(2).await, json!({ "x": 2 }));
    let started = h.started_so_far();
    assert_eq!(started, ["initialize", "echo"]);
}

#[tokio::test]
async fn a_server_started_past_an_initialize_answered_elsewhere_waits_for_initialized() {
    // What a process continuing a shared session runs when another process answered
    // `initialize` and the client's `notifications/initialized` has not arrived.
    let mut h = Harness::new(SessionConfig::server().initialize_answered());
    assert!(!h.peer.is_initialized());

    // Only ping is served; `initialize` too is refused (it was answered).
    h.expect_invalid_request(1, "echo", json!({ "x": 1 })).await;
    h.expect_invalid_request(2, "initialize", init_params())
        .await;
    h.ping_sync(3).await;
    assert_eq!(h.started_so_far(), Vec::<String>::new());

    // The note makes it operational, as after a handshake of its own.
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    assert_eq!(h.notified("notifications/initialized").await, Value::Null);
    h.mock.request(4, "echo", json!({ "x": 4 })).await;
    assert_eq!(h.mock.expect_result(4).await, json!({ "x": 4 }));
    assert!(h.peer.is_initialized());
}

#[tokio::test]
async fn server_serves_initialize_once_then_waits_for_initialized() {
    let mut h = Harness::new(SessionConfig::server());

    h.mock.request(1, "initialize", init_params()).await;
    let result = h.mock.expect_result(1).await;
    assert_eq!(result["serverInfo"]["name"], "test");
    assert!(!h.peer.is_initialized());

    // A second initialize is refused, and never reaches the service.
    h.expect_invalid_request(2, "initialize", init_params())
        .await;

    // Between the initialize response and notifications/initialized: rejected.
    h.expect_invalid_request(3, "echo", json!({ "x": 3 })).await;
    assert_eq!(h.started_so_far(), ["initialize"]);

    // notifications/initialized makes the session operational and reaches the service.
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    assert_eq!(h.notified("notifications/initialized").await, Value::Null);
    h.mock.request(4, "echo", json!({ "x": 4 })).await;
    assert_eq!(h.mock.expect_result(4).await, json!({ "x": 4 }));
    assert!(h.peer.is_initialized());

    // Still only once, even when operational.
    h.expect_invalid_request(5, "initialize", init_params())
        .await;
    assert_eq!(h.started_so_far(), ["echo"]);
}

#[tokio::test]
async fn a_pipelined_handshake_still_becomes_operational() {
    let mut h = Harness::new(SessionConfig::server());

    // The client sends notifications/initialized without waiting for the answer.
    h.mock.request(1, "initialize", init_params()).await;
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    let result = h.mock.expect_result(1).await;
    assert_eq!(result["serverInfo"]["name"], "test");
    assert_eq!(h.notified("notifications/initialized").await, Value::Null);

    // Once the answer is out, the session is operational: no second notification needed.
    h.mock.request(2, "echo", json!({ "x": 2 })).await;
    assert_eq!(h.mock.expect_result(2).await, json!({ "x": 2 }));
    assert!(h.peer.is_initialized());
}

#[tokio::test]
async fn server_failed_initialize_may_be_retried() {
    let mut h = Harness::new(SessionConfig::server());

    h.mock
        .request(1, "initialize", json!({ "fail": true }))
        .await;
    let err = h.mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
    // Still in the first phase: other requests are rejected.
    h.expect_invalid_request(2, "echo", json!({})).await;

    // The retry is served, and the session then completes its handshake.
    h.serve_handshake().await;
    h.mock.request(3, "echo", json!({ "ok": true })).await;
    assert_eq!(h.mock.expect_result(3).await, json!({ "ok": true }));
}

#[tokio::test]
async fn server_refuses_outbound_requests_until_initialized_but_may_log() {
    let mut h = Harness::new(SessionConfig::server());

    // New: a request is refused locally, a log message goes out.
    let refused = start_req(&h.peer, "roots/list", Value::Null, RequestOptions::new());
    assert!(refused.id().is_none());
    let err = refused.await.unwrap_err();
    assert!(err.is_refused(), "{err}");
    let err = h
        .peer
        .notify_raw(Cow::Borrowed("notifications/tools/list_changed"), None)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    h.peer
        .notify_raw(
            Cow::Borrowed("notifications/message"),
            Some(raw(json!({ "level": "info", "data": "starting" }))),
        )
        .await
        .unwrap();
    // The refused request left nothing on the wire: the log message comes next.
    let log = h.mock.expect_notification("notifications/message").await;
    assert_eq!(
        params_of(log.params.as_deref()),
        json!({ "level": "info", "data": "starting" })
    );

    // Initializing: still refused.
    h.mock.request(1, "initialize", init_params()).await;
    h.mock.expect_result(1).await;
    let err = request(&h.peer, "roots/list", Value::Null)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    h.ping_sync(2).await;

    // Operational: the request goes out.
    h.mock
        .notify("notifications/initialized", Value::Null)
        .await;
    h.ping_sync(3).await;
    let call = tokio::spawn(request(&h.peer, "roots/list", Value::Null));
    let req = h.mock.expect_request("roots/list").await;
    h.mock.respond(req.id, json!({ "roots": [] })).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({ "roots": [] }));
}

#[tokio::test]
async fn client_sends_initialize_once_then_initialized_then_anything() {
    let mut h = Harness::new(SessionConfig::client());

    // Before the handshake: other requests and notifications/initialized are refused.
    let err = request(&h.peer, "tools/list", Value::Null)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    let err = h
        .peer
        .notify_raw(Cow::Borrowed("notifications/initialized"), None)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    // An inbound request other than ping is rejected before the handshake.
    h.expect_invalid_request(1, "roots/list", Value::Null).await;

    // initialize: allowed once; the refused requests left nothing on the wire.
    let init = tokio::spawn(request(&h.peer, "initialize", init_params()));
    let req = h.mock.expect_request("initialize").await;
    assert_eq!(params_of(req.params.as_deref()), init_params());
    h.mock.respond(req.id, server_init_result()).await;
    assert_eq!(init.await.unwrap().unwrap(), server_init_result());
    let err = request(&h.peer, "initialize", init_params())
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    let err = request(&h.peer, "tools/list", Value::Null)
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    assert!(!h.peer.is_initialized());

    // notifications/initialized: operational.
    h.peer
        .notify_raw(Cow::Borrowed("notifications/initialized"), None)
        .await
        .unwrap();
    h.mock
        .expect_notification("notifications/initialized")
        .await;
    assert!(h.peer.is_initialized());
    let call = tokio::spawn(request(&h.peer, "tools/list", Value::Null));
    let req = h.mock.expect_request("tools/list").await;
    h.mock.respond(req.id, json!({ "tools": [] })).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({ "tools": [] }));

    // Inbound requests are now served.
    h.mock.request(2, "echo", json!({ "y": 1 })).await;
    assert_eq!(h.mock.expect_result(2).await, json!({ "y": 1 }));
}

// ---------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_stuck_handler_delays_neither_ping_nor_other_requests() {
    let mut h = Harness::new(SessionConfig::server());
    h.serve_handshake().await;

    h.mock.request(1, "slow", Value::Null).await;
    h.started("slow").await;
    h.mock.request(2, "echo", json!({ "n": 2 })).await;
    assert_eq!(h.mock.expect_result(2).await, json!({ "n": 2 }));
    h.ping_sync(3).await;

    h.release.notify_one();
    assert_eq!(h.mock.expect_result(1).await, json!({ "released": true }));
}

#[tokio::test]
async fn the_concurrency_bound_queues_requests_but_never_ping() {
    let mut h = Harness::new(
        SessionConfig::server()
            .pre_initialized()
            .max_concurrent_requests(1),
    );

    h.mock.request(1, "slow", Value::Null).await;
    h.started("slow").await;
    h.mock.request(2, "echo", json!({ "n": 2 })).await;
    // Ping is answered while the only slot is taken, and the echo has not started.
    h.ping_sync(3).await;
    assert!(h.started_so_far().is_empty());

    h.release.notify_one();
    let mut ids = Vec::new();
    for _ in 0..2 {
        match h.mock.next_message().await {
            JsonRpcMessage::Response(r) => ids.push(r.id),
            other => panic!("expected a response, got {other:?}"),
        }
    }
    ids.sort_by_key(id_num);
    assert_eq!(ids, [RequestId::from(1), RequestId::from(2)]);
    assert_eq!(h.started_so_far(), ["echo"]);
}

#[tokio::test]
async fn beyond_the_in_flight_bound_a_request_is_refused_at_once() {
    let mut h = Harness::new(
        SessionConfig::server()
            .pre_initialized()
            .max_requests_in_flight(2),
    );

    h.mock.request(1, "slow", Value::Null).await;
    h.started("slow").await;
    h.mock.request(2, "slow", Value::Null).await;
    h.started("slow").await;
    // A third is refused without running, with the bound in the error.
    h.mock.request(3, "echo", json!({})).await;
    let err = h.mock.expect_error(Some(RequestId::from(3))).await;
    assert_eq!(err.code, modelctx_session::TOO_MANY_REQUESTS);
    assert!(err.message.contains("at most 2"), "{}", err.message);
    assert_eq!(err.data, Some(json!({"limit": 2})));
    assert!(h.started_so_far().is_empty());
    // Ping is never refused.
    h.ping_sync(4).await;

    h.release.notify_one();
    h.release.notify_one();
    let mut ids = Vec::new();
    for _ in 0..2 {
        match h.mock.next_message().await {
            JsonRpcMessage::Response(r) => ids.push(r.id),
            other => panic!("expected a response, got {other:?}"),
        }
    }
    ids.sort_by_key(id_num);
    assert_eq!(ids, [RequestId::from(1), RequestId::from(2)]);
    // Room again: the refused request, sent again, runs.
    h.mock.request(3, "echo", json!({"again": 3})).await;
    assert_eq!(h.mock.expect_result(3).await, json!({"again": 3}));
}

#[tokio::test]
async fn a_shared_handler_limit_bounds_the_work_of_several_sessions() {
    let limit = modelctx_session::HandlerLimit::new(1);
    let config = || {
        SessionConfig::server()
            .pre_initialized()
            .handler_limit(limit.clone())
    };
    let mut a = Harness::new(config());
    let mut b = Harness::new(config());

    a.mock.request(1, "slow", Value::Null).await;
    a.started("slow").await;
    assert_eq!(limit.available(), 0);
    // The other session's request waits for the shared slot; its pings do not.
    b.mock.request(1, "echo", json!({"b": 1})).await;
    b.ping_sync(2).await;
    assert!(b.started_so_far().is_empty());

    a.release.notify_one();
    assert_eq!(a.mock.expect_result(1).await, json!({"released": true}));
    assert_eq!(b.mock.expect_result(1).await, json!({"b": 1}));
    assert_eq!(b.started_so_far(), ["echo"]);
}

#[tokio::test]
async fn a_duplicate_inbound_id_in_flight_is_rejected() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.mock.request(1, "slow", Value::Null).await;
    h.started("slow").await;
    h.expect_invalid_request(1, "echo", json!({})).await;
    h.release.notify_one();
    assert_eq!(h.mock.expect_result(1).await, json!({ "released": true }));
    // Once answered, the id may be used again.
    h.mock.request(1, "echo", json!({ "again": true })).await;
    assert_eq!(h.mock.expect_result(1).await, json!({ "again": true }));
}

// ---------------------------------------------------------------------------------------
// Inbound cancellation
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn inbound_cancellation_fires_the_token_and_suppresses_the_response() {
    let mut h = Harness::new(SessionConfig::server());
    h.serve_handshake().await;

    h.mock.request(1, "slow", Value::Null).await;
    let (id, token1) = h.started("slow").await;
    assert_eq!(id, RequestId::from(1));
    h.mock
        .notify(
            "notifications/cancelled",
            json!({ "requestId": 1, "reason": "changed my mind" }),
        )
        .await;
    tokio::time::timeout(Duration::from_secs(5), token1.cancelled())
        .await
        .expect("the handler's token fires");
    // No response for it: the ping answer comes next.
    h.ping_sync(3).await;

    // A second slow request, and cancellations for ids not in flight: ignored.
    h.mock.request(2, "slow", Value::Null).await;
    let (_, token2) = h.started("slow").await;
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": 99 }))
        .await;
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": "nope" }))
        .await;
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": 1 }))
        .await;
    h.ping_sync(4).await;
    assert!(!token2.is_cancelled(), "only the cancelled request's token");

    // Release one waiter. Had request 1's handler kept running, it would be first in line
    // and answer id 1; it was dropped, so request 2 answers.
    h.release.notify_one();
    assert_eq!(h.mock.expect_result(2).await, json!({ "released": true }));

    // A cancellation for a request already answered changes nothing.
    h.mock
        .notify("notifications/cancelled", json!({ "requestId": 2 }))
        .await;
    h.mock.request(5, "echo", json!({ "alive": true })).await;
    assert_eq!(h.mock.expect_result(5).await, json!({ "alive": true }));
}

// ---------------------------------------------------------------------------------------
// Outbound requests
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn outbound_ids_are_unique_increasing_and_correlated() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let handles: Vec<_> = (0..3)
        .map(|i| start_req(&h.peer, "work", json!({ "i": i }), RequestOptions::new()))
        .collect();
    let ids: Vec<i64> = handles.iter().map(|h| id_num(&h.id().unwrap())).collect();
    assert!(ids[0] > 0 && ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");
    let calls: Vec<_> = handles.into_iter().map(tokio::spawn).collect();

    let mut wire = Vec::new();
    for _ in 0..3 {
        let req = h.mock.expect_request("work").await;
        wire.push((
            id_num(&req.id),
            params_of(req.params.as_deref())["i"].clone(),
        ));
    }
    wire.sort_by_key(|(id, _)| *id);
    let expected: Vec<_> = ids
        .iter()
        .zip(0..3)
        .map(|(id, i)| (*id, json!(i)))
        .collect();
    assert_eq!(wire, expected, "each wire id carries its own request");

    // Answered out of order, each call gets its own result.
    for (id, i) in wire.iter().rev() {
        h.mock.respond(*id, json!({ "answer": i })).await;
    }
    for (call, i) in calls.into_iter().zip(0..3) {
        let result = call.await.unwrap().unwrap();
        assert_eq!(params_of(Some(&result)), json!({ "answer": i }));
    }

    // Ids are never reused.
    let next = start_req(&h.peer, "work", Value::Null, RequestOptions::new());
    assert!(id_num(&next.id().unwrap()) > ids[2]);
}

#[tokio::test]
async fn a_peer_error_response_fails_the_call_with_it() {
    let mut h = Harness::new(SessionConfig::client());
    h.client_handshake().await;
    let call = tokio::spawn(request(&h.peer, "tools/call", json!({ "name": "x" })));
    let req = h.mock.expect_request("tools/call").await;
    h.mock
        .respond_error(
            req.id,
            ErrorData::invalid_params("unknown tool").with_data(json!({ "name": "x" })),
        )
        .await;
    let err = call.await.unwrap().unwrap_err();
    let data = err.protocol_error().expect("a protocol error");
    assert_eq!(data.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(data.message, "unknown tool");
    assert_eq!(data.data, Some(json!({ "name": "x" })));
}

#[tokio::test]
async fn the_canceller_sends_cancelled_and_fails_the_call() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    let handle = start_req(
        &h.peer,
        "sampling/createMessage",
        json!({ "maxTokens": 10 }),
        RequestOptions::new(),
    );
    let id = handle.id().unwrap();
    let canceller = handle.canceller();
    let call = tokio::spawn(handle);
    let req = h.mock.expect_request("sampling/createMessage").await;
    assert_eq!(req.id, id);

    canceller.cancel("user pressed stop").await;
    let note = h.mock.expect_notification("notifications/cancelled").await;
    assert_eq!(
        params_of(note.params.as_deref()),
        json!({ "requestId": id_num(&id), "reason": "user pressed stop" })
    );
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_cancelled(), "{err}");

    // Cancelling again sends nothing: the next message is the ping sent after it.
    canceller.cancel("again").await;
    let ping = tokio::spawn({
        let peer = h.peer.clone();
        async move { peer.ping().await }
    });
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap().unwrap();
}

#[tokio::test]
async fn late_and_unknown_responses_are_ignored() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    // Request A is cancelled; request B is in flight.
    let a = start_req(&h.peer, "a", Value::Null, RequestOptions::new());
    let a_id = a.id().unwrap();
    let a_cancel = a.canceller();
    let a_call = tokio::spawn(a);
    h.mock.expect_request("a").await;
    a_cancel.cancel("no longer needed").await;
    h.mock.expect_notification("notifications/cancelled").await;
    assert!(a_call.await.unwrap().unwrap_err().is_cancelled());

    let mut b = start_req(&h.peer, "b", Value::Null, RequestOptions::new());
    let b_id = b.id().unwrap();
    assert!((&mut b).now_or_never().is_none());
    h.mock.expect_request("b").await;

    // A late response for A, a response for an id never used, an error for one too.
    h.mock.respond(a_id, json!({ "from": "a" })).await;
    h.mock.respond(12345, json!({ "from": "nobody" })).await;
    h.mock.respond("b", json!({ "from": "string id" })).await;
    h.mock
        .respond_error(777, ErrorData::internal_error("stray"))
        .await;
    h.ping_sync(1).await;
    assert!(
        (&mut b).now_or_never().is_none(),
        "a stray response completed another request"
    );

    h.mock.respond(b_id, json!({ "from": "b" })).await;
    let result = b.await.unwrap();
    assert_eq!(params_of(Some(&result)), json!({ "from": "b" }));
}

#[tokio::test]
async fn dropping_a_request_sends_cancelled() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let mut handle = start_req(&h.peer, "slow/thing", Value::Null, RequestOptions::new());
    let id = id_num(&handle.id().unwrap());
    assert!((&mut handle).now_or_never().is_none());
    h.mock.expect_request("slow/thing").await;
    drop(handle);
    let note = h.mock.expect_notification("notifications/cancelled").await;
    assert_eq!(cancelled_params(&note).0, id);

    // The same when the task awaiting it is aborted.
    let handle = start_req(&h.peer, "slow/other", Value::Null, RequestOptions::new());
    let id = id_num(&handle.id().unwrap());
    let task = tokio::spawn(handle);
    h.mock.expect_request("slow/other").await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let note = h.mock.expect_notification("notifications/cancelled").await;
    assert_eq!(cancelled_params(&note).0, id);
}

#[tokio::test]
async fn initialize_is_never_announced_as_cancelled() {
    let mut h = Harness::new(SessionConfig::client());

    // Dropped: no notifications/cancelled. The next message is the cancellation of the
    // ping dropped after it (both drops spawn their announcement, in order).
    let mut init = start_req(&h.peer, "initialize", init_params(), RequestOptions::new());
    assert!((&mut init).now_or_never().is_none());
    let init_req = h.mock.expect_request("initialize").await;
    drop(init);
    let mut ping = start_req(&h.peer, "ping", Value::Null, RequestOptions::new());
    let ping_id = id_num(&ping.id().unwrap());
    assert!((&mut ping).now_or_never().is_none());
    h.mock.expect_request("ping").await;
    drop(ping);
    let note = h.mock.expect_notification("notifications/cancelled").await;
    assert_eq!(cancelled_params(&note).0, ping_id);
    assert_ne!(ping_id, id_num(&init_req.id));
    h.ping_sync(1).await;
}

#[tokio::test]
async fn a_cancelled_initialize_fails_locally_without_announcement() {
    let mut h = Harness::new(SessionConfig::client());

    let init = start_req(&h.peer, "initialize", init_params(), RequestOptions::new());
    let canceller = init.canceller();
    let call = tokio::spawn(init);
    h.mock.expect_request("initialize").await;
    canceller.cancel("giving up").await;
    assert!(call.await.unwrap().unwrap_err().is_cancelled());
    // Nothing was sent for it: the next message is the ping sent afterwards.
    let ping = tokio::spawn({
        let peer = h.peer.clone();
        async move { peer.ping().await }
    });
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_request_cancelled_before_it_is_polled_never_goes_out() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let handle = start_req(&h.peer, "never/sent", Value::Null, RequestOptions::new());
    handle.canceller().cancel("changed my mind").await;
    let err = handle.await.unwrap_err();
    assert!(err.is_cancelled(), "{err}");

    // Neither the request nor a cancellation for it went out: the ping answer is next.
    h.mock.request(1, "ping", Value::Null).await;
    match h.mock.next_message().await {
        JsonRpcMessage::Response(r) => assert_eq!(r.id, RequestId::from(1)),
        other => panic!("expected the ping answer first, got {other:?}"),
    }
}

#[tokio::test]
async fn a_request_dropped_before_it_is_polled_leaves_no_trace() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    drop(start_req(
        &h.peer,
        "never/sent",
        Value::Null,
        RequestOptions::new(),
    ));
    let next = start_req(&h.peer, "after", Value::Null, RequestOptions::new());
    let waiting = tokio::spawn(next);

    // The dropped request never reached the wire, and nothing announced it.
    let r = h.mock.expect_request("after").await;
    h.mock.respond(r.id.clone(), json!({"ok": true})).await;
    assert_eq!(waiting.await.unwrap().unwrap().get(), r#"{"ok":true}"#);
    h.mock.request(9, "ping", Value::Null).await;
    match h.mock.next_message().await {
        JsonRpcMessage::Response(r) => assert_eq!(r.id, RequestId::from(9)),
        other => panic!("expected the ping answer, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------------------

/// Options whose progress callback forwards each value to the returned channel.
fn progress_options() -> (RequestOptions, mpsc::UnboundedReceiver<f64>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let options = RequestOptions::new().on_progress(move |p: Progress| {
        let _ = tx.send(p.progress);
    });
    (options, rx)
}

fn drain(rx: &mut mpsc::UnboundedReceiver<f64>) -> Vec<f64> {
    let mut values = Vec::new();
    while let Ok(v) = rx.try_recv() {
        values.push(v);
    }
    values
}

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
    h.mock
        .request(2, "progress", json!({ "values": [1, 2] }))
        .await;
    assert_eq!(
        h.mock.expect_result(2).await,
        json!({ "reports": ["ok", "ok"] })
    );
}

/// The address of a shared text, to tell `Arc`s apart in a JSON answer.
fn address(text: &Arc<str>) -> usize {
    Arc::as_ptr(text).cast::<u8>() as usize
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

    fn stateless_era(&self) -> bool {
        true
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
    h.mock.request(1, "found", params.clone()).await;
    assert_eq!(
        h.mock.expect_result(1).await,
        json!({ "text": &*text, "shared": address(&text), "progressToken": null })
    );

    // Found as not plain: the progress token is read from that text.
    let text_with_token: Arc<str> = Arc::from(r#"{"progressToken":5}"#);
    let mut h = era_harness(FoundMeta {
        text: text_with_token.clone(),
        ..found(false)
    });
    h.mock.request(1, "found", params.clone()).await;
    assert_eq!(
        h.mock.expect_result(1).await,
        json!({ "text": &*text_with_token, "shared": address(&text_with_token), "progressToken": 5 })
    );
}

#[tokio::test]
async fn typed_params_are_handed_the_meta_the_context_read() {
    // Read by the context from the params: the typed params get that text, not a copy.
    let mut h = Harness::new(SessionConfig::server().pre_initialized());
    let meta = json!({ "progressToken": 3, "vendor/k": [1, "}"] });
    h.mock
        .request(1, "handed", json!({ "name": "t", "_meta": meta }))
        .await;
    assert_eq!(
        h.mock.expect_result(1).await,
        json!({ "name": "t", "meta": meta, "shared": true })
    );
    // Params that do not decode without their `_meta` get the decoder's refusal, as
    // when decoded whole.
    h.mock.request(2, "handed", json!({ "_meta": meta })).await;
    let error = h.mock.expect_error(Some(RequestId::from(2))).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.contains("missing field `name`"),
        "{}",
        error.message
    );
    // Without the method's slot the params are decoded whole: the same `_meta`, copied.
    h.mock
        .request(3, "decoded whole", json!({ "name": "t", "_meta": meta }))
        .await;
    assert_eq!(
        h.mock.expect_result(3).await,
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
    let mut h = era_harness(found(Some(place)));
    h.mock
        .request(1, "handed", serde_json::from_str(params).unwrap())
        .await;
    assert_eq!(
        h.mock.expect_result(1).await,
        json!({ "name": "t", "meta": { "vendor/k": 1 }, "shared": true })
    );
    // A place that does not hold the text: decoded whole.
    let moved = modelctx_transport::MetaPlace {
        offset: place.offset + 1,
        ..place
    };
    let mut h = era_harness(found(Some(moved)));
    h.mock
        .request(1, "handed", serde_json::from_str(params).unwrap())
        .await;
    assert_eq!(
        h.mock.expect_result(1).await,
        json!({ "name": "t", "meta": { "vendor/k": 1 }, "shared": false })
    );
}

#[tokio::test]
async fn meta_passes_through_in_both_directions() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    // Inbound: the handler sees `_meta` as sent, and the progress token in it.
    let meta = json!({ "progressToken": 7, "vendor/trace": { "span": "abc" } });
    h.mock
        .request(1, "meta", json!({ "x": 1, "_meta": meta }))
        .await;
    assert_eq!(
        h.mock.expect_result(1).await,
        json!({ "meta": meta, "progressToken": 7 })
    );
    h.mock.request(2, "meta", json!({ "x": 1 })).await;
    assert_eq!(
        h.mock.expect_result(2).await,
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

// ---------------------------------------------------------------------------------------
// Timeouts (paused time: the clock only moves when every task waits)
// ---------------------------------------------------------------------------------------

type RawCall = RequestHandle<Box<RawValue>>;

/// Starts `method` and polls it once, so it is on the wire; the mock receives it.
async fn sent(
    h: &mut Harness,
    method: &'static str,
    options: RequestOptions,
) -> (RawCall, JsonRpcRequest) {
    let mut call = start_req(&h.peer, method, Value::Null, options);
    assert!((&mut call).now_or_never().is_none());
    let req = h.mock.expect_request(method).await;
    assert_eq!(Some(&req.id), call.id().as_ref());
    (call, req)
}

/// Runs `fut` while driving `call` (which runs its progress callbacks), failing if the
/// call ends first.
async fn while_pending<T>(call: &mut RawCall, fut: impl Future<Output = T>) -> T {
    tokio::select! {
        biased;
        result = call => panic!("the call ended early: {result:?}"),
        value = fut => value,
    }
}

/// Awaits `call` on this task until it times out, then checks that
/// `notifications/cancelled` for it was already on the wire when it returned (no other
/// task ran in between). Returns how long the call took.
async fn expect_timeout(mock: &mut MockPeer, call: RawCall) -> Duration {
    let id = id_num(&call.id().unwrap());
    let t0 = Instant::now();
    let err = call.await.unwrap_err();
    let elapsed = t0.elapsed();
    assert!(err.is_timeout(), "{err}");
    let queued = mock
        .next()
        .now_or_never()
        .expect("notifications/cancelled is sent before the call returns")
        .expect("a message");
    let JsonRpcMessage::Notification(note) = queued.message else {
        panic!("expected notifications/cancelled, got {:?}", queued.message);
    };
    assert_eq!(note.method, "notifications/cancelled");
    let (cancelled_id, reason) = cancelled_params(&note);
    assert_eq!(cancelled_id, id);
    assert!(!reason.is_empty());
    elapsed
}

fn assert_about(elapsed: Duration, expected: Duration) {
    assert!(
        elapsed >= expected && elapsed < expected + Duration::from_millis(20),
        "took {elapsed:?}, expected {expected:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_session_default_timeout_applies_and_the_session_survives() {
    let mut h = Harness::new(
        SessionConfig::client()
            .pre_initialized()
            .request_timeout(Duration::from_millis(300)),
    );

    let (call, req) = sent(&mut h, "slow", RequestOptions::new()).await;
    let elapsed = expect_timeout(&mut h.mock, call).await;
    assert_about(elapsed, Duration::from_millis(300));

    // A late response is ignored; the session goes on.
    h.mock
        .respond(req.id.clone(), json!({ "late": true }))
        .await;
    let (call, next) = sent(&mut h, "next", RequestOptions::new()).await;
    assert!(id_num(&next.id) > id_num(&req.id));
    h.mock.respond(next.id, json!({ "ok": true })).await;
    assert_eq!(params_of(Some(&call.await.unwrap())), json!({ "ok": true }));
    h.ping_sync(1).await;
}

#[tokio::test(start_paused = true)]
async fn a_per_request_timeout_overrides_the_default() {
    let mut h = Harness::new(
        SessionConfig::client()
            .pre_initialized()
            .request_timeout(Duration::from_millis(100)),
    );

    // Longer than the default: still pending past 100 ms, answered at 400 ms.
    let t0 = Instant::now();
    let options = RequestOptions::new().timeout(Duration::from_millis(500));
    let (mut call, req) = sent(&mut h, "long", options).await;
    while_pending(&mut call, tokio::time::sleep(Duration::from_millis(400))).await;
    h.mock.respond(req.id, json!({ "ok": 1 })).await;
    call.await.unwrap();
    assert_about(t0.elapsed(), Duration::from_millis(400));

    // Shorter than the default.
    let options = RequestOptions::new().timeout(Duration::from_millis(30));
    let (call, _) = sent(&mut h, "short", options).await;
    let elapsed = expect_timeout(&mut h.mock, call).await;
    assert_about(elapsed, Duration::from_millis(30));
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let (opts, mut rx) = progress_options();
    let opts = opts
        .timeout(Duration::from_millis(1000))
        .reset_timeout_on_progress(None);
    let t0 = Instant::now();
    let (mut call, req) = sent(&mut h, "work", opts).await;
    let token = params_of(req.params.as_deref())["_meta"]["progressToken"].clone();

    while_pending(&mut call, tokio::time::sleep(Duration::from_millis(700))).await;
    h.mock
        .notify("notifications/progress", progress_note(&token, 1.0))
        .await;
    assert_eq!(while_pending(&mut call, rx.recv()).await, Some(1.0));
    // Past the first deadline (1000 ms), within the one the update set (1700 ms).
    while_pending(&mut call, tokio::time::sleep(Duration::from_millis(700))).await;
    h.mock.respond(req.id, json!({ "done": true })).await;
    call.await.unwrap();
    assert_about(t0.elapsed(), Duration::from_millis(1400));

    // Without updates, the same options time out after the plain timeout.
    let (opts, _rx) = progress_options();
    let opts = opts
        .timeout(Duration::from_millis(1000))
        .reset_timeout_on_progress(None);
    let (call, _) = sent(&mut h, "work", opts).await;
    assert_about(
        expect_timeout(&mut h.mock, call).await,
        Duration::from_millis(1000),
    );
}

#[tokio::test(start_paused = true)]
async fn the_max_total_timeout_holds_despite_progress() {
    let mut h = Harness::new(SessionConfig::client().pre_initialized());

    let (opts, mut rx) = progress_options();
    let opts = opts
        .timeout(Duration::from_millis(1000))
        .reset_timeout_on_progress(Some(Duration::from_millis(2500)));
    let t0 = Instant::now();
    let (mut call, req) = sent(&mut h, "work", opts).await;
    let token = params_of(req.params.as_deref())["_meta"]["progressToken"].clone();

    for value in [1.0, 2.0, 3.0] {
        while_pending(&mut call, tokio::time::sleep(Duration::from_millis(700))).await;
        h.mock
            .notify("notifications/progress", progress_note(&token, value))
            .await;
        assert_eq!(while_pending(&mut call, rx.recv()).await, Some(value));
    }
    // The last update, at 2100 ms, would extend to 3100 ms; the hard limit is 2500 ms.
    expect_timeout(&mut h.mock, call).await;
    assert_about(t0.elapsed(), Duration::from_millis(2500));

    // The session is usable afterwards.
    let mut ping = Box::pin(h.peer.ping());
    assert!(ping.as_mut().now_or_never().is_none());
    let req = h.mock.expect_request("ping").await;
    h.mock.respond(req.id, json!({})).await;
    ping.await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Handler errors and notifications
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_handler_answers_internal_error_and_the_session_lives_on() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.mock.request(1, "panic", Value::Null).await;
    let err = h.mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
    assert!(!err.message.contains("secret"), "{}", err.message);
    assert!(!err.message.contains("hunter2"), "{}", err.message);
    assert!(err.data.is_none());

    h.mock.request(2, "echo", json!({ "after": "panic" })).await;
    assert_eq!(h.mock.expect_result(2).await, json!({ "after": "panic" }));
}

#[tokio::test]
async fn handler_errors_reach_the_wire_with_their_codes() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.mock.request(1, "no/such/method", Value::Null).await;
    let err = h.mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(err.code, ErrorCode::METHOD_NOT_FOUND);
    assert!(err.message.contains("no/such/method"), "{}", err.message);

    h.mock.request(2, "typed", json!({ "count": "many" })).await;
    let err = h.mock.expect_error(Some(RequestId::from(2))).await;
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    h.mock.request(3, "typed", Value::Null).await;
    let err = h.mock.expect_error(Some(RequestId::from(3))).await;
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);

    h.mock.request(4, "typed", json!({ "count": 3 })).await;
    assert_eq!(h.mock.expect_result(4).await, json!({ "count": 3 }));
}

#[tokio::test]
async fn notifications_are_delivered_in_order_and_never_answered() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.mock
        .notify("notifications/roots/list_changed", json!({ "n": 1 }))
        .await;
    // A notification named like a request method is still never answered.
    h.mock.notify("echo", json!({ "n": 2 })).await;
    h.mock
        .notify("notifications/unknown", json!({ "n": 3 }))
        .await;
    h.ping_sync(1).await;

    let mut seen = Vec::new();
    for _ in 0..3 {
        match h.next_event().await {
            Event::Notification(n) => {
                seen.push((
                    n.method.to_string(),
                    params_of(n.params.as_deref())["n"].clone(),
                ));
            }
            other => panic!("a notification ran a request handler: {other:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            ("notifications/roots/list_changed".to_owned(), json!(1)),
            ("echo".to_owned(), json!(2)),
            ("notifications/unknown".to_owned(), json!(3)),
        ]
    );
}

#[tokio::test]
async fn errors_without_id_reach_the_service_in_order_and_are_never_answered() {
    for role in [SessionConfig::server(), SessionConfig::client()] {
        let mut h = Harness::new(role.pre_initialized());
        // A request of ours in flight: an error without id answers none of them.
        let (call, sent) = sent(&mut h, "echo", RequestOptions::new()).await;

        h.mock.notify("notifications/a", json!({ "n": 1 })).await;
        h.mock
            .send_json(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            )
            .await;
        h.mock
            .send_json(r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"no id at all"}}"#)
            .await;
        h.mock.notify("notifications/b", json!({ "n": 2 })).await;
        // Answered as the very next message: nothing answered the errors.
        h.ping_sync(1).await;

        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(match h.next_event().await {
                Event::Notification(n) => n.method.to_string(),
                Event::PeerError(e) => format!("error {}: {}", e.code, e.message),
                other => panic!("unexpected event {other:?}"),
            });
        }
        assert_eq!(
            seen,
            [
                "notifications/a",
                "error -32700: Parse error",
                "error -32600: no id at all",
                "notifications/b",
            ]
        );
        // The request still waits for its own answer.
        h.mock.respond(sent.id, json!({ "mine": true })).await;
        assert_eq!(
            params_of(Some(&call.await.unwrap())),
            json!({ "mine": true })
        );
    }
}

#[tokio::test]
async fn a_notification_handler_that_waits_holds_back_the_later_ones() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    // The first handler does not finish at once; the two after it wait their turn.
    h.mock.notify("notifications/slow", json!({ "n": 1 })).await;
    h.mock.notify("notifications/a", json!({ "n": 2 })).await;
    h.mock.notify("notifications/b", json!({ "n": 3 })).await;
    h.ping_sync(1).await;
    assert!(
        h.events.try_recv().is_err(),
        "a later notification overtook the waiting handler"
    );

    h.release.notify_one();
    let mut seen = Vec::new();
    for _ in 0..3 {
        match h.next_event().await {
            Event::Notification(n) => seen.push(params_of(n.params.as_deref())["n"].clone()),
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(seen, [json!(1), json!(2), json!(3)]);

    // Later ones still arrive, in order.
    h.mock.notify("notifications/c", json!({ "n": 4 })).await;
    match h.next_event().await {
        Event::Notification(n) => assert_eq!(params_of(n.params.as_deref())["n"], json!(4)),
        other => panic!("unexpected event {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Responses that cannot be read
// ---------------------------------------------------------------------------------------

/// The in-memory transport plus a way in for text as if read off a wire: decoded with
/// `JsonRpcMessage::from_slice`, as stdio and HTTP decode, so text that is no valid
/// message reaches the session as the transport error those transports give.
struct WireTransport {
    inner: MemoryTransport,
    raw: mpsc::UnboundedReceiver<String>,
}

struct WireStream {
    inner: MemoryStream,
    raw: mpsc::UnboundedReceiver<String>,
}

impl Transport for WireTransport {
    type Sink = MemorySink;
    type Stream = WireStream;

    fn split(self) -> (MemorySink, WireStream) {
        let (sink, inner) = self.inner.split();
        (
            sink,
            WireStream {
                inner,
                raw: self.raw,
            },
        )
    }
}

impl MessageStream for WireStream {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                Some(text) = self.raw.recv() => Some(
                    JsonRpcMessage::from_slice(text.as_bytes())
                        .map(TransportMessage::new)
                        .map_err(TransportError::invalid),
                ),
                next = self.inner.recv() => next,
            }
        })
    }
}

/// A harness whose mock can also write raw text.
fn wire_harness(config: SessionConfig) -> (Harness, mpsc::UnboundedSender<String>) {
    let (inner, mock) = MockPeer::pair();
    let (tx, raw) = mpsc::unbounded_channel();
    (
        Harness::over(WireTransport { inner, raw }, mock, config),
        tx,
    )
}

/// Waits for the service to hear of a peer error.
async fn peer_error(h: &mut Harness) -> ErrorData {
    match h.next_event().await {
        Event::PeerError(e) => e,
        other => panic!("expected a peer error, got {other:?}"),
    }
}

/// Found by the property tests: a response whose error object could not be
/// read was taken for an invalid request — the session answered the peer's *response*
/// with `-32600`, and the call waited for its timeout. Now the call fails as soon as the
/// response arrives (with a one-hour timeout, the bounded wait shows it did not time
/// out), the service hears of it, nothing goes back, and the session goes on.
#[tokio::test]
async fn a_response_that_cannot_be_read_fails_its_call_at_once_and_is_never_answered() {
    let cases = [
        (
            r#""error":{"code":-32000}"#,
            "error object cannot be read: missing field `message`",
        ),
        (
            r#""error":{"code":"oops","message":"m"}"#,
            "error object cannot be read",
        ),
        (
            r#""error":{"code":1.5,"message":"m"}"#,
            "error object cannot be read",
        ),
        (
            r#""result":{},"error":{"code":-32000,"message":"m"}"#,
            "both result and error",
        ),
    ];
    for config in [SessionConfig::server(), SessionConfig::client()] {
        let (mut h, raw) = wire_harness(config.pre_initialized());
        let options = || RequestOptions::new().timeout(Duration::from_secs(3600));
        for (n, (members, says)) in cases.into_iter().enumerate() {
            let (call, req) = sent(&mut h, "echo", options()).await;
            let id = serde_json::to_string(&req.id).unwrap();
            raw.send(format!(r#"{{"jsonrpc":"2.0","id":{id},{members}}}"#))
                .unwrap();
            let err = tokio::time::timeout(Duration::from_secs(5), call)
                .await
                .expect("the call fails at once, not at its timeout")
                .unwrap_err();
            assert!(err.is_invalid_response(), "{members}: {err}");
            assert!(!err.is_timeout());
            let text = err.to_string();
            assert!(text.starts_with("invalid response from peer: "), "{text}");
            assert!(text.contains(says), "{members}: {text}");
            assert_eq!(err.to_error_data().code, ErrorCode::INTERNAL_ERROR);
            // The service hears of it, naming the request.
            let heard = peer_error(&mut h).await;
            assert_eq!(heard.code, ErrorCode::INTERNAL_ERROR);
            assert!(
                heard.message.contains(&format!("to request {}", req.id)),
                "{heard:?}"
            );
            // Nothing answered the response: the ping's answer is the next message.
            h.ping_sync(100 + n as i64).await;
            // The next call is answered as usual.
            let (call, req) = sent(&mut h, "echo", options()).await;
            h.mock.respond(req.id, json!({ "n": n })).await;
            assert_eq!(params_of(Some(&call.await.unwrap())), json!({ "n": n }));
        }
    }
}

/// A response that cannot be read and answers none of our requests (an unknown id, or
/// none at all) is reported to the service and dropped: never answered, and a call in
/// flight keeps waiting for its own answer.
#[tokio::test]
async fn a_response_that_cannot_be_read_for_an_unknown_id_is_reported_and_dropped() {
    let (mut h, raw) = wire_harness(SessionConfig::client().pre_initialized());
    let (call, req) = sent(&mut h, "echo", RequestOptions::new()).await;
    for text in [
        r#"{"jsonrpc":"2.0","id":999,"error":{"code":-32000}}"#,
        r#"{"jsonrpc":"2.0","error":{"code":"x","message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
    ] {
        raw.send(text.to_owned()).unwrap();
        let heard = peer_error(&mut h).await;
        assert_eq!(heard.code, ErrorCode::INTERNAL_ERROR, "{text}");
        assert!(
            heard.message.starts_with("invalid response from peer"),
            "{heard:?}"
        );
    }
    h.ping_sync(1).await;
    h.mock.respond(req.id, json!({ "mine": true })).await;
    assert_eq!(
        params_of(Some(&call.await.unwrap())),
        json!({ "mine": true })
    );
    // A request that is not valid is still answered, as before.
    raw.send(r#"{"jsonrpc":"2.0","id":7,"method":3}"#.to_owned())
        .unwrap();
    let error = h.mock.expect_error(Some(RequestId::Number(7))).await;
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
}

// ---------------------------------------------------------------------------------------
// Close
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn closing_fails_pending_requests_and_cancels_handlers() {
    let mut h = Harness::new(SessionConfig::server().pre_initialized());

    h.mock.request(1, "slow", Value::Null).await;
    let (_, token) = h.started("slow").await;
    let first = tokio::spawn(request(&h.peer, "sampling/createMessage", json!({})));
    h.mock.expect_request("sampling/createMessage").await;
    let (opts, _rx) = progress_options();
    let second = tokio::spawn(start_req(&h.peer, "roots/list", Value::Null, opts));
    h.mock.expect_request("roots/list").await;
    assert!(!h.peer.is_closed());

    h.mock.close().await;
    let prompt = Duration::from_secs(1);
    let err = tokio::time::timeout(prompt, first)
        .await
        .expect("fails promptly")
        .unwrap()
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
    let err = tokio::time::timeout(prompt, second)
        .await
        .expect("fails promptly")
        .unwrap()
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
    tokio::time::timeout(prompt, h.peer.closed())
        .await
        .expect("closed() resolves");
    assert!(h.peer.is_closed());
    tokio::time::timeout(prompt, token.cancelled())
        .await
        .expect("the running handler is cancelled");

    // The session closes its end; the cancelled handler never answered.
    h.mock.expect_closed().await;
    // Later calls fail at once.
    assert!(
        request(&h.peer, "roots/list", Value::Null)
            .await
            .unwrap_err()
            .is_closed()
    );
    assert!(
        h.peer
            .notify_raw(Cow::Borrowed("notifications/message"), None)
            .await
            .unwrap_err()
            .is_closed()
    );
    assert!(h.peer.ping().await.unwrap_err().is_closed());
}

// ---------------------------------------------------------------------------------------
// The session's end
// ---------------------------------------------------------------------------------------

/// A sink that takes each message only on its second poll (a write that does not finish
/// at once, like a pipe under load), recording what it took and when it was closed.
struct SlowSink {
    log: Arc<std::sync::Mutex<Vec<String>>>,
    closed: Arc<Notify>,
}

impl modelctx_transport::MessageSink for SlowSink {
    fn send(
        &self,
        message: modelctx_transport::TransportMessage,
    ) -> BoxFuture<'_, Result<(), modelctx_transport::TransportError>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            let text = serde_json::to_string(&message.message).unwrap();
            self.log.lock().unwrap().push(text);
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.log.lock().unwrap().push("closed".to_owned());
            self.closed.notify_one();
        })
    }
}

/// The inbound side: the test's messages, then the end of the stream.
struct Inbound(mpsc::UnboundedReceiver<modelctx_transport::TransportMessage>);

impl modelctx_transport::MessageStream for Inbound {
    fn recv(
        &mut self,
    ) -> BoxFuture<
        '_,
        Option<Result<modelctx_transport::TransportMessage, modelctx_transport::TransportError>>,
    > {
        Box::pin(async move { self.0.recv().await.map(Ok) })
    }
}

#[tokio::test]
async fn answers_given_at_once_leave_before_the_sink_closes_when_the_peer_stops_sending() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let closed = Arc::new(Notify::new());
    let (tx, rx) = mpsc::unbounded_channel();
    let (events, _events) = mpsc::unbounded_channel();
    let service = Arc::new(TestService {
        events,
        release: Arc::new(Notify::new()),
    });
    let peer = start(
        (
            SlowSink {
                log: log.clone(),
                closed: closed.clone(),
            },
            Inbound(rx),
        ),
        service,
        SessionConfig::server(),
    );
    // A ping (answered by the runtime itself) and a request refused before the
    // handshake, then the peer closes its side (stdin reaches EOF).
    let ping = JsonRpcRequest::new(RequestId::from(1), "ping", None);
    let early = JsonRpcRequest::new(RequestId::from(2), "tools/list", None);
    tx.send(modelctx_transport::TransportMessage::new(ping.into()))
        .unwrap();
    tx.send(modelctx_transport::TransportMessage::new(early.into()))
        .unwrap();
    drop(tx);
    tokio::time::timeout(Duration::from_secs(5), peer.closed())
        .await
        .expect("the session ends when its input does");
    tokio::time::timeout(Duration::from_secs(5), closed.notified())
        .await
        .expect("the sink is closed");
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(
        log[..2].iter().any(|l| l.contains(r#""id":1,"result":{}"#)),
        "{log:?}"
    );
    assert!(
        log[..2].iter().any(|l| l.contains(r#""id":2,"error""#)),
        "{log:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Notifications and responses keep their order
// ---------------------------------------------------------------------------------------

/// A client service whose `hold` notification handler waits until released (so later
/// notifications queue behind it) and whose `mark` handler records its call, at call
/// time, before its future runs.
struct Ordering {
    called: Arc<std::sync::Mutex<Vec<String>>>,
    release: Arc<Notify>,
}

impl Service for Ordering {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        _context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        Box::pin(async move { Err(ErrorData::method_not_found(&request.method)) })
    }

    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        _peer: Peer,
    ) -> BoxFuture<'static, ()> {
        self.called
            .lock()
            .unwrap()
            .push(notification.method.to_string());
        let release = self.release.clone();
        Box::pin(async move {
            if notification.method == "hold" {
                release.notified().await;
            }
        })
    }
}

#[tokio::test]
async fn a_response_never_overtakes_a_notification_sent_before_it() {
    let (transport, mut mock) = MockPeer::pair();
    let called = Arc::new(std::sync::Mutex::new(Vec::new()));
    let release = Arc::new(Notify::new());
    let service = Arc::new(Ordering {
        called: called.clone(),
        release: release.clone(),
    });
    let peer = start(
        transport,
        service,
        SessionConfig::client().pre_initialized(),
    );

    let call = tokio::spawn(start_req(&peer, "work", json!({}), RequestOptions::new()));
    let request = mock.expect_request("work").await;
    // A handler still running (so the next ones queue), a notification, then the
    // answer: when the caller sees the answer, the notification's handler was called.
    mock.notify("hold", json!({})).await;
    mock.notify("mark", json!({})).await;
    mock.respond(request.id, json!({"done": true})).await;
    let answer = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call is answered")
        .unwrap()
        .unwrap();
    assert_eq!(params_of(Some(&answer)), json!({"done": true}));
    assert_eq!(*called.lock().unwrap(), ["hold", "mark"]);
    release.notify_one();
}

/// A peer that floods requests and never reads its answers: once the sink is full, the
/// answers waiting for room are bounded (the handlers' by the in-flight bound, the
/// runtime's own — pings, refusals — by a fixed cap, the rest dropped), so the flood
/// costs a bounded number of tasks; the session keeps reading, and serves the peer
/// again once it reads.
#[tokio::test]
async fn a_peer_that_never_reads_costs_bounded_tasks() {
    const IN_FLIGHT: usize = 16;
    const RUNTIME_ANSWERS: usize = 64;
    let channel = modelctx_memory::DEFAULT_CAPACITY;
    let mut h = Harness::new(
        SessionConfig::server()
            .pre_initialized()
            .max_requests_in_flight(IN_FLIGHT),
    );
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    h.ping_sync(0).await;
    let before = tasks();
    let flood = 4 * channel as i64;
    for id in 1..=flood {
        h.mock.request(id, "ping", Value::Null).await;
    }
    for id in flood + 1..=2 * flood {
        h.mock.request(id, "echo", json!({"id": id})).await;
    }
    // Everything was taken: the service sees a notification sent after the flood.
    h.mock.notify("notifications/marker", json!({})).await;
    h.notified("notifications/marker").await;
    let waiting = tasks() - before;
    assert!(
        waiting <= IN_FLIGHT + RUNTIME_ANSWERS,
        "{waiting} tasks wait for a peer that does not read"
    );

    // The peer reads: the channel's worth, the capped runtime answers, the handlers'
    // answers; the rest was dropped.
    let (mut pongs, mut echoes) = (0, 0);
    for _ in 0..channel + RUNTIME_ANSWERS + IN_FLIGHT {
        match h.mock.next_message().await {
            JsonRpcMessage::Response(r) if id_num(&r.id) <= flood => pongs += 1,
            JsonRpcMessage::Response(_) => echoes += 1,
            other => panic!("expected an answer, got {other:?}"),
        }
    }
    assert_eq!((pongs, echoes), (channel + RUNTIME_ANSWERS, IN_FLIGHT));
    h.ping_sync(-1).await;
    h.mock.request(-2, "echo", json!({"again": true})).await;
    assert_eq!(h.mock.expect_result(-2).await, json!({"again": true}));
}

/// SECURITY.md case 27, a progress flood: a caller that does not take its updates
/// (here: the request's future is not polled) holds at most a bounded backlog, whose
/// last entry is the latest update; the callback sees them in order.
#[tokio::test]
async fn a_progress_flood_is_bounded_for_a_caller_that_falls_behind() {
    const BACKLOG: usize = 32;
    let mut h = Harness::new(SessionConfig::client().pre_initialized());
    let (options, mut values) = progress_options();
    let mut call = start_req(&h.peer, "work", Value::Null, options);
    // One poll sends the request; then the caller looks away.
    tokio::select! {
        biased;
        _ = &mut call => panic!("answered before it was asked"),
        () = std::future::ready(()) => {}
    }
    let JsonRpcMessage::Request(request) = h.mock.next_message().await else {
        panic!("expected the request")
    };
    let token = params_of(request.params.as_deref())["_meta"]["progressToken"].clone();
    let flood = 10_000;
    for i in 1..=flood {
        h.mock
            .notify(
                "notifications/progress",
                progress_note(&token, f64::from(i)),
            )
            .await;
    }
    // Notifications are handled in order: once the marker is seen, all were routed.
    h.mock.notify("notifications/marker", json!({})).await;
    h.notified("notifications/marker").await;
    h.mock.respond(request.id, json!({"done": true})).await;
    tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the answer within 5 s")
        .expect("the answer");
    let seen = drain(&mut values);
    assert_eq!(seen.len(), BACKLOG, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order: {seen:?}");
    assert_eq!(seen.last(), Some(&f64::from(flood)), "the latest arrives");
}
