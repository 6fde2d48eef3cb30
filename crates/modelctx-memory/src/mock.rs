//! A scripted peer for runtime tests.
//!
//! It asserts the next message and replies deterministically; every wait is bounded.

use std::time::Duration;

use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::{
    ErrorData, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest,
    JsonRpcResultResponse, RequestId, to_raw,
};
use serde_json::Value;

use crate::{MemorySink, MemoryStream, MemoryTransport, pair};

/// The other side of a [`MemoryTransport`], driven by a test: it asserts what arrives
/// and replies deterministically. Every wait is bounded (5 s by default); a missing or
/// unexpected message panics with a description of what came instead.
#[derive(Debug)]
pub struct MockPeer {
    sink: MemorySink,
    stream: MemoryStream,
    timeout: Duration,
}

impl MockPeer {
    /// A transport for the code under test and the mock peer at its other end.
    pub fn pair() -> (MemoryTransport, MockPeer) {
        let (ours, theirs) = pair();
        let (sink, stream) = theirs.split();
        (
            ours,
            MockPeer {
                sink,
                stream,
                timeout: Duration::from_secs(5),
            },
        )
    }

    /// Sets how long each expectation waits.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The next message, or `None` when the code under test closed the transport.
    /// Panics when nothing arrives within the timeout.
    pub async fn next(&mut self) -> Option<TransportMessage> {
        match tokio::time::timeout(self.timeout, self.stream.recv()).await {
            Ok(Some(Ok(m))) => Some(m),
            Ok(Some(Err(e))) => panic!("mock peer: transport error: {e}"),
            Ok(None) => None,
            Err(_) => panic!("mock peer: no message within {:?}", self.timeout),
        }
    }

    /// The next message, which must exist.
    pub async fn next_message(&mut self) -> JsonRpcMessage {
        match self.next().await {
            Some(m) => m.message,
            None => panic!("mock peer: the transport closed while a message was expected"),
        }
    }

    /// Expects the transport to close (the next receive ends) within the timeout.
    pub async fn expect_closed(&mut self) {
        if let Some(m) = self.next().await {
            panic!(
                "mock peer: expected the transport to close, got {:?}",
                m.message
            );
        }
    }

    /// Expects a request for `method` next.
    pub async fn expect_request(&mut self, method: &str) -> JsonRpcRequest {
        match self.next_message().await {
            JsonRpcMessage::Request(r) if r.method == method => r,
            other => panic!("mock peer: expected request {method}, got {other:?}"),
        }
    }

    /// Expects a notification for `method` next.
    pub async fn expect_notification(&mut self, method: &str) -> JsonRpcNotification {
        match self.next_message().await {
            JsonRpcMessage::Notification(n) if n.method == method => n,
            other => panic!("mock peer: expected notification {method}, got {other:?}"),
        }
    }

    /// Expects a successful response to `id` next and returns its result.
    pub async fn expect_result(&mut self, id: impl Into<RequestId>) -> Value {
        let id = id.into();
        match self.next_message().await {
            JsonRpcMessage::Response(r) if r.id == id => {
                serde_json::from_str(r.result.get()).unwrap_or(Value::Null)
            }
            other => panic!("mock peer: expected a result for {id:?}, got {other:?}"),
        }
    }

    /// Expects an error response to `id` (or an id-less one when `id` is `None`) next.
    pub async fn expect_error(&mut self, id: Option<RequestId>) -> ErrorData {
        match self.next_message().await {
            JsonRpcMessage::Error(e) if e.id == id => e.error,
            other => panic!("mock peer: expected an error for {id:?}, got {other:?}"),
        }
    }

    /// Sends any message.
    pub async fn send(&self, message: impl Into<JsonRpcMessage>) {
        self.sink
            .send(TransportMessage::new(message.into()))
            .await
            .unwrap_or_else(|e| panic!("mock peer: send failed: {e}"));
    }

    /// Sends a request.
    pub async fn request(&self, id: impl Into<RequestId>, method: &'static str, params: Value) {
        let params = (!params.is_null()).then(|| raw(&params));
        self.send(JsonRpcRequest::new(id.into(), method, params))
            .await;
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &'static str, params: Value) {
        let params = (!params.is_null()).then(|| raw(&params));
        self.send(JsonRpcNotification::new(method, params)).await;
    }

    /// Answers request `id` with `result`.
    pub async fn respond(&self, id: impl Into<RequestId>, result: Value) {
        self.send(JsonRpcResultResponse::new(id.into(), raw(&result)))
            .await;
    }

    /// Answers request `id` with an error.
    pub async fn respond_error(&self, id: impl Into<RequestId>, error: ErrorData) {
        self.send(JsonRpcErrorResponse::new(Some(id.into()), error))
            .await;
    }

    /// Sends raw JSON text as if it had arrived off a wire (it must be a valid message).
    pub async fn send_json(&self, json: &str) {
        let message = json
            .parse::<JsonRpcMessage>()
            .unwrap_or_else(|e| panic!("mock peer: send_json got an invalid message: {e}"));
        self.send(message).await;
    }

    /// Closes the transport towards the code under test.
    pub async fn close(&self) {
        self.sink.close().await;
    }
}

fn raw(value: &Value) -> Box<modelctx_types::RawValue> {
    to_raw(value).unwrap_or_else(|e| panic!("mock peer: cannot serialise {value}: {e}"))
}
