//! The HTTP answers the endpoint builds: JSON, SSE and status-only bodies, and the
//! rejection of a request (reported to the configured callback and to tracing).

use std::convert::Infallible;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};
use modelctx_types::{ErrorData, JsonRpcErrorResponse, JsonRpcMessage};

use super::config::{Rejection, StreamableHttpServerConfig};

/// Reports a rejected request: to tracing, and to the configured
/// [`on_error`](StreamableHttpServerConfig::on_error) callback.
pub(super) fn report(config: &StreamableHttpServerConfig, status: StatusCode, reason: String) {
    // What a peer got wrong is DEBUG (a flood of bad requests must not become a
    // flood of warnings); what the server could not do is WARN.
    if status.is_server_error() {
        tracing::warn!(target: "modelctx_http", status = status.as_u16(), %reason, "request rejected");
    } else {
        tracing::debug!(target: "modelctx_http", status = status.as_u16(), %reason, "request rejected");
    }
    if let Some(cb) = &config.on_error {
        cb(&Rejection { status, reason });
    }
}

/// Reports a rejected request and answers it with `status` and a JSON-RPC error
/// without id that says `reason`.
pub(super) fn reject(
    config: &StreamableHttpServerConfig,
    status: StatusCode,
    reason: impl Into<String>,
) -> Response {
    let reason = reason.into();
    report(config, status, reason.clone());
    let code = if status == StatusCode::BAD_REQUEST {
        ErrorData::invalid_request(reason)
    } else {
        ErrorData::new(modelctx_types::ErrorCode(-32000), reason)
    };
    error_response(status, JsonRpcErrorResponse::new(None, code))
}

/// A message the endpoint could not take: reported, and answered `400` with `error`.
pub(super) fn bad_message(config: &StreamableHttpServerConfig, error: ErrorData) -> Response {
    report(config, StatusCode::BAD_REQUEST, error.message.to_string());
    error_response(
        StatusCode::BAD_REQUEST,
        JsonRpcErrorResponse::new(None, error),
    )
}

/// A JSON-RPC error answered with `status`.
pub(super) fn error_response(status: StatusCode, body: JsonRpcErrorResponse) -> Response {
    let body = serde_json::to_string(&JsonRpcMessage::Error(body)).unwrap_or_default();
    json_response(status, body)
}

/// An answer with `status` and no body.
pub(super) fn status_only(status: StatusCode) -> Response {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// A JSON answer (`body`: its text).
pub(super) fn json_response(status: StatusCode, body: String) -> Response {
    json_body(status, Body::from(body))
}

/// A JSON answer whose body is `body`, however it is held.
pub(super) fn json_body(status: StatusCode, body: Body) -> Response {
    with_head(status, body, [(header::CONTENT_TYPE, "application/json")])
}

/// An SSE answer. The events already queued are taken at once; when the stream has
/// ended too (a handler that answered in its first poll), the answer goes out as one
/// body of known length instead of a chunked stream: one write, no chunk framing, and
/// nothing left for hyper to poll.
pub(super) fn sse_response(
    mut events: impl futures::Stream<Item = Bytes> + Unpin + Send + 'static,
) -> Response {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // The ready events as one chunk (a priming event and the answer make one
    // allocation).
    let mut ready = super::hosting::Joined::default();
    // Polling with a waker that does nothing is sound: a pending stream is polled
    // again by hyper, with its own waker, before anything waits on it.
    let complete = loop {
        match events.poll_next_unpin(&mut cx) {
            std::task::Poll::Ready(Some(event)) => ready.push(event),
            std::task::Poll::Ready(None) => break true,
            std::task::Poll::Pending => break false,
        }
    };
    let ready = ready.finish();
    let body = if complete {
        ready.map_or_else(Body::empty, Body::from)
    } else {
        let events = futures::stream::iter(ready).chain(events);
        Body::from_stream(events.map(Ok::<_, Infallible>))
    };
    event_stream(body)
}

/// `X-Accel-Buffering`, made once: `from_static` checks the name each time it runs.
static X_ACCEL_BUFFERING: http::HeaderName =
    http::HeaderName::from_static(crate::headers::X_ACCEL_BUFFERING);

/// Every SSE answer, in both eras and on the GET stream: `200 OK`, the event-stream
/// type, not to be cached, and `X-Accel-Buffering: no` so that a reverse proxy such as
/// nginx passes each event on as it comes instead of holding the stream.
pub(super) fn event_stream(body: Body) -> Response {
    with_head(
        StatusCode::OK,
        body,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (X_ACCEL_BUFFERING.clone(), "no"),
        ],
    )
}

/// An answer of `status` with `body` and the static `headers`, built in place: the map
/// is allocated once, with room for the session id some answers add after (a builder
/// grows it and checks each header again).
fn with_head<const N: usize>(
    status: StatusCode,
    body: Body,
    headers: [(http::HeaderName, &'static str); N],
) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let map = response.headers_mut();
    map.reserve(N + 1);
    for (name, value) in headers {
        map.insert(name, HeaderValue::from_static(value));
    }
    response
}
