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

mod concurrency;
mod ending;
mod failures;
mod lifecycle;
mod outbound;
mod progress;
mod timeouts;

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

    /// The mock sends `slow` (request `id`), and its handler starts: its id and
    /// cancellation token.
    async fn start_slow(&mut self, id: i64) -> (RequestId, CancellationToken) {
        self.mock.request(id, "slow", Value::Null).await;
        self.started("slow").await
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

    /// The session pings the mock, which answers: the ping is the next message the
    /// session sends, so nothing went out before it.
    async fn ping_out(&mut self) {
        let ping = tokio::spawn({
            let peer = self.peer.clone();
            async move { peer.ping().await }
        });
        let req = self.mock.expect_request("ping").await;
        self.mock.respond(req.id, json!({})).await;
        ping.await.unwrap().unwrap();
    }

    /// Sends `echo` with `{"x": id}` from the mock and expects it echoed: the service
    /// serves requests.
    async fn echo(&mut self, id: i64) {
        self.mock.request(id, "echo", json!({ "x": id })).await;
        assert_eq!(self.mock.expect_result(id).await, json!({ "x": id }));
    }

    /// The ids of the next `n` messages from the session, each a response, sorted.
    async fn next_responses(&mut self, n: usize) -> Vec<RequestId> {
        let mut ids = Vec::new();
        for _ in 0..n {
            match self.mock.next_message().await {
                JsonRpcMessage::Response(r) => ids.push(r.id),
                other => panic!("expected a response, got {other:?}"),
            }
        }
        ids.sort_by_key(id_num);
        ids
    }

    /// Sends a request from the mock and expects it refused as an invalid request
    /// (`-32600`).
    async fn expect_invalid_request(
        &mut self,
        id: i64,
        method: &'static str,
        params: Value,
    ) -> ErrorData {
        let err = self.error_answer(id, method, params).await;
        assert_eq!(err.code, ErrorCode::INVALID_REQUEST, "{method}");
        err
    }

    /// The session refuses to send the notification `method` on its own.
    async fn notify_refused(&self, method: &'static str) {
        let err = self
            .peer
            .notify_raw(Cow::Borrowed(method), None)
            .await
            .unwrap_err();
        assert!(err.is_refused(), "{err}");
    }

    /// The mock gets `notifications/cancelled` for request `id`.
    async fn expect_cancelled(&mut self, id: i64) {
        let note = self
            .mock
            .expect_notification("notifications/cancelled")
            .await;
        assert_eq!(cancelled_params(&note).0, id);
    }

    /// The mock sends request `id` and gets a result back for it: the result.
    async fn answer(&mut self, id: i64, method: &'static str, params: Value) -> Value {
        self.mock.request(id, method, params).await;
        self.mock.expect_result(id).await
    }

    /// Asserts that `echo` request `id` answers its own `params`.
    async fn assert_echoed(&mut self, id: i64, params: Value) {
        assert_eq!(self.answer(id, "echo", params.clone()).await, params);
    }

    /// The mock sends request `id` and gets an error back for it: the error.
    async fn error_answer(&mut self, id: i64, method: &'static str, params: Value) -> ErrorData {
        self.mock.request(id, method, params).await;
        self.mock.expect_error(Some(RequestId::from(id))).await
    }

    /// Server role: the client's `notifications/initialized` arrives and reaches the
    /// service, then the session is operational: it serves `echo` (request `id`) and says
    /// it is initialized.
    async fn initialized_makes_it_operational(&mut self, id: i64) {
        self.mock
            .notify("notifications/initialized", Value::Null)
            .await;
        assert_eq!(
            self.notified("notifications/initialized").await,
            Value::Null
        );
        self.echo(id).await;
        assert!(self.peer.is_initialized());
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
        self.send_initialized().await;
        assert!(self.peer.is_initialized());
    }

    /// Client role: the session sends `notifications/initialized`, and the mock gets it.
    async fn send_initialized(&mut self) {
        self.peer
            .notify_raw(Cow::Borrowed("notifications/initialized"), None)
            .await
            .unwrap();
        self.mock
            .expect_notification("notifications/initialized")
            .await;
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

/// The address of a shared text, to tell `Arc`s apart in a JSON answer.
fn address(text: &Arc<str>) -> usize {
    Arc::as_ptr(text).cast::<u8>() as usize
}
