//! What the session's runtime sends, routed: a response ends its request's answer, a
//! message tied to a request goes on that request's stream, any other on the standalone
//! GET stream (or, for a shared session whose stream is held elsewhere, to the registry).
//!
//! Routing follows `related_request`: a response and the messages related to a request go
//! on that request's POST stream (or its JSON body), everything else on the standalone GET
//! stream, never on both. An error without an id goes on the stream of the request it
//! relates to, else nowhere: the GET stream carries no responses. In JSON-response mode the
//! body carries the response only: a related request is refused at once (`-32600`,
//! `TransportError::refused`), a related notification (progress, a log message) is dropped,
//! and unrelated messages still use the GET stream. Routing happens under one std mutex per
//! session, never held across an await.
//!
//! A cancelled request (`notifications/cancelled` for a request in flight) gets no answer
//! from the session (the spec's rule), but this wire ends a request's answer only with a
//! response for its id, so the transport answers it itself with `-32800`
//! (`ErrorCode::REQUEST_CANCELLED`: the JSON body, or the last event of its SSE stream)
//! once the POST carrying the cancellation is queued; a late answer of the handler then
//! finds no route and is dropped. `initialize` is never cancelled this way. Only this
//! transport does so (stdio, in-memory and legacy SSE send nothing, and the 2026-07-28 era
//! cancels by closing the stream): it is the one divergence of `protocol:cancel:in-flight`,
//! as in the reference SDK.
//!
//! A notification carries its request's `request_over` token when the request came with an
//! `EraRead`; the sink drops one whose token has fired, checked under the lock that routes
//! it, so a handler's leftovers never reach a later request with the same id on a kept
//! session.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{EraAnswer, NotSent, Route, Routes, STANDALONE, SessionState, StreamState};
use crate::server::event_store::EventId;
use crate::server::shared::state::{is_announcement, push_bounded};
use bytes::Bytes;
use modelctx_transport::{TransportError, TransportMessage};
use modelctx_types::{
    ErrorCode, ErrorData, JsonRpcErrorResponse, JsonRpcMessage, ProtocolVersion, RequestId,
};

impl SessionState {
    /// An inbound `notifications/cancelled` for request `id`. The session sends no
    /// response for a cancelled request, but its POST must end, and this wire ends a
    /// request's answer only with a response for its id: the transport answers it
    /// itself, with `-32800` (the JSON body, or the last event of its SSE stream). A
    /// response the handler still sends afterwards finds no route and is dropped.
    /// `initialize` is never cancelled (the session answers it regardless).
    pub(crate) fn cancel_request(&self, id: &RequestId) {
        if self
            .init_request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            == Some(id)
        {
            return;
        }
        let mut routes = self.routes();
        if !routes.requests.contains_key(id) {
            return;
        }
        let error = ErrorData::request_cancelled("Request cancelled");
        let response = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id.clone()), error));
        let Ok(data) = serde_json::to_string(&response) else {
            return;
        };
        self.complete(&mut routes, id, data, Some(ErrorCode::REQUEST_CANCELLED));
    }

    /// Writes one event on the standalone stream, or, while its hold is being
    /// recorded, queues it (with whether it is an announcement, for the registry
    /// should the hold be refused).
    pub(crate) fn deliver_standalone(&self, routes: &mut Routes, data: &str, announcement: bool) {
        let Some(stream) = routes.standalone() else {
            return;
        };
        if let Some(dropped) = stream
            .claim
            .keep_back(data, announcement, self.config.stream_queue)
        {
            if dropped {
                self.backlog_full();
            }
            return;
        }
        self.deliver(routes, STANDALONE, data);
    }

    /// Writes one event on stream `stream_id` (for the standalone stream, through
    /// [`deliver_standalone`](Self::deliver_standalone)).
    pub(crate) fn deliver(&self, routes: &mut Routes, stream_id: u64, data: &str) {
        let Some(stream) = routes.streams.get_mut(&stream_id) else {
            return;
        };
        stream.handled = None;
        let id = match &self.config.event_store {
            Some(store) if self.stateful => {
                let id = EventId {
                    stream: self.wire_stream(stream_id),
                    seq: stream.next_seq,
                };
                stream.next_seq += 1;
                store.store(&self.id, id, Arc::from(data));
                Some(id)
            }
            _ => None,
        };
        let event = crate::sse::encode_message(id, data, None);
        if let Some(conn) = &stream.conn {
            match conn.try_send(event) {
                Ok(()) => return,
                Err(NotSent::Full) => {
                    // A slow reader: drop its connection rather than buffer without
                    // bound; with an event store it resumes from its last event id.
                    stream.conn = None;
                    self.report(format!(
                        "session {}: SSE reader too slow, connection of stream {stream_id} closed",
                        self.id
                    ));
                    return;
                }
                Err(NotSent::Closed(event)) => {
                    stream.conn = None;
                    if stream_id == STANDALONE {
                        self.backlog(stream, event);
                    }
                    return;
                }
            }
        }
        if stream_id == STANDALONE {
            self.backlog(stream, event);
        }
    }

    pub(crate) fn backlog(&self, stream: &mut StreamState, event: Bytes) {
        if push_bounded(&mut stream.backlog, event, self.config.stream_queue) {
            self.backlog_full();
        }
    }

    /// Reports that the standalone stream's backlog dropped its oldest message.
    pub(crate) fn backlog_full(&self) {
        self.report(format!(
            "session {}: standalone stream backlog full, oldest message dropped",
            self.id
        ));
    }

    pub(crate) fn route_outbound(&self, message: TransportMessage) -> Result<(), TransportError> {
        if self.closed.is_cancelled() {
            return Err(TransportError::closed());
        }
        let msg = message.message;
        let data = message_text(&msg).map_err(|e| TransportError::other(e.to_string()))?;
        let answers = match &msg {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        // A new session is in its service's table before its client can read the
        // `initialize` result (and send the next request); a failed `initialize` ends it
        // once its error is routed.
        let initialized = answers.and_then(|id| self.note_initialize_result(id, &msg));
        if initialized == Some(true) {
            self.settle_handshake(true);
        }
        let mut routes = self.routes();
        if let Some(id) = answers {
            if let Some(Route::Sse(stream_id)) = routes.requests.get(id) {
                let stream_id = *stream_id;
                Self::replayed_position(&mut routes, stream_id, false);
            }
            let error = match &msg {
                JsonRpcMessage::Error(e) => Some(e.error.code),
                _ => None,
            };
            if !self.complete(&mut routes, id, data, error) {
                self.report(format!("response to request {id}, which is not in flight"));
            }
            drop(routes);
            if initialized == Some(false) {
                self.settle_handshake(false);
            }
            return Ok(());
        }
        // About a request of the stateless era that has ended: dropped (checked under
        // the routes' lock: its id may name a later request of this session by now).
        if message
            .request_over
            .as_ref()
            .is_some_and(|t| t.is_cancelled())
        {
            return Ok(());
        }
        // A request, a notification, or an error the server could not attribute to a
        // request (no id): none of them answers a request; each goes on one stream.
        let related = message
            .related_request
            .as_ref()
            .and_then(|r| routes.requests.get(r));
        match related {
            Some(Route::Sse(stream_id)) => {
                let stream_id = *stream_id;
                let notification = matches!(msg, JsonRpcMessage::Notification(_));
                if !Self::replayed_position(&mut routes, stream_id, notification) {
                    self.deliver(&mut routes, stream_id, &data);
                }
            }
            // The first message of an answer of the stateless era that is not its
            // response: the answer becomes a stream, and the message its first event.
            Some(Route::Era(_)) => {
                let Some(id) = message.related_request.as_ref() else {
                    return Ok(());
                };
                let Some(Route::Era(tx)) = routes.requests.remove(id) else {
                    return Ok(());
                };
                let (stream_id, events) = self.open_stream(&mut routes, id);
                // (A POST that is gone drops the stream: its events go nowhere, as on
                // any stream whose reader left.)
                let _ = tx.send(EraAnswer::Stream(events));
                self.deliver(&mut routes, stream_id, &data);
            }
            // JSON-response mode: the request's POST gets one JSON body, which carries
            // only its response. A request to the client fails at once; a notification
            // (progress, a log message) is not delivered, as with no listener.
            Some(Route::Json(_)) => {
                if matches!(msg, JsonRpcMessage::Request(_)) {
                    return Err(TransportError::refused(ErrorData::invalid_request(
                        "Invalid request: in JSON-response mode a request's answer is one JSON \
                         body, which cannot carry a request to the client",
                    )));
                }
            }
            None if matches!(msg, JsonRpcMessage::Error(_)) => {
                // The standalone stream carries no responses; a stateless one has none.
                self.report("an error response without id has no stream".to_owned());
            }
            None if self.stateful => {
                // A shared session's GET stream may be open on another service: the
                // registry relays it there, or keeps it until a service opens it.
                let announcement = is_announcement(&msg);
                if !self.relay_standalone(&mut routes, &data, announcement) {
                    self.deliver_standalone(&mut routes, &data, announcement);
                }
            }
            // Stateless answers have no stream for a notification: it is dropped, as it
            // would be with no listener.
            None if matches!(msg, JsonRpcMessage::Notification(_)) => {}
            None => {
                return Err(TransportError::other(
                    "a session-less HTTP session has no stream to carry a request to the client",
                ));
            }
        }
        Ok(())
    }

    /// Ends request `id`'s route with `data`, its response: the JSON body, or the last
    /// event of the request on its SSE stream (the stream ends with its last request).
    /// False when the request has no route (answered, forgotten, never seen).
    /// Completes request `id` with its answer `data` (an error with code `error`).
    pub(crate) fn complete(
        &self,
        routes: &mut Routes,
        id: &RequestId,
        data: String,
        error: Option<ErrorCode>,
    ) -> bool {
        match routes.requests.remove(id) {
            Some(Route::Json(tx)) => {
                let _ = tx.send((data, error));
            }
            Some(Route::Era(tx)) => {
                let _ = tx.send(EraAnswer::Json(data, error));
            }
            Some(Route::Sse(stream_id)) => {
                // The POST's head, waiting for this, is let go only after the stream
                // has ended when this answer completes it: it then finds the whole
                // answer and sends it as one body, never a chunked stream because its
                // task ran between this event and the stream's end.
                let handled = routes
                    .streams
                    .get_mut(&stream_id)
                    .and_then(|s| s.handled.take());
                self.deliver(routes, stream_id, &data);
                let done = routes.streams.get_mut(&stream_id).is_some_and(|s| {
                    s.open_requests = s.open_requests.saturating_sub(1);
                    s.open_requests == 0
                });
                if done {
                    // The stream is complete: dropping its sender ends the body once the
                    // queued events are written.
                    if let Some(stream) = routes.streams.remove(&stream_id) {
                        self.end_run(stream_id, &stream);
                    }
                    modelctx_store::table::shrink_drained(&mut routes.streams);
                }
                drop(handled);
            }
            None => return false,
        }
        modelctx_store::table::shrink_drained(&mut routes.requests);
        if !self.stateful && routes.requests.is_empty() && !self.reusable.load(Ordering::Acquire) {
            // A stateless session serves one POST: it is done.
            self.finish_inbound();
        }
        true
    }

    /// Notes the version `initialize` negotiated when `msg` answers it: `Some(true)`
    /// for a result, `Some(false)` for an error, `None` when it answers another request.
    pub(crate) fn note_initialize_result(
        &self,
        id: &RequestId,
        msg: &JsonRpcMessage,
    ) -> Option<bool> {
        let mut init = self.init_request.lock().unwrap_or_else(|p| p.into_inner());
        if init.as_ref() != Some(id) {
            return None;
        }
        *init = None;
        let JsonRpcMessage::Response(r) = msg else {
            return Some(false);
        };
        if let Some(agreed) = agreed_version(r.result.get()) {
            let version = ProtocolVersion::handshake(&agreed)
                .unwrap_or_else(|| ProtocolVersion::new(agreed.into_owned()));
            let _ = self.negotiated.set(version);
        }
        Some(true)
    }
}

/// The `protocolVersion` of an `initialize` result's text, when it is a string: found by
/// the quick scan of [`members`](modelctx_types::members) (the result's other members
/// are not decoded), else read by a parser.
fn agreed_version(result: &str) -> Option<std::borrow::Cow<'_, str>> {
    match modelctx_types::members::find(result, ["protocolVersion"]) {
        Some([Some(value)]) => modelctx_types::members::string(value),
        Some([None]) => None,
        None => {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Init {
                protocol_version: String,
            }
            let init = serde_json::from_str::<Init>(result).ok()?;
            Some(std::borrow::Cow::Owned(init.protocol_version))
        }
    }
}

/// A message's JSON text, written into one allocation sized for the usual answer: a
/// response's exact length when its id needs no escaping (a body that fills its
/// allocation becomes the answer's `Bytes` without another allocation).
fn message_text(msg: &JsonRpcMessage) -> serde_json::Result<String> {
    let hint = match msg {
        JsonRpcMessage::Response(r) => {
            // `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
            let id = match &r.id {
                RequestId::Number(n) => itoa::Buffer::new().format(*n).len(),
                RequestId::String(s) => s.len() + 2,
            };
            33 + id + r.result.get().len()
        }
        _ => 128,
    };
    let mut out = Vec::with_capacity(hint);
    serde_json::to_writer(&mut out, msg)?;
    // serde_json writes UTF-8 only.
    String::from_utf8(out).map_err(serde::ser::Error::custom)
}

#[cfg(test)]
mod tests {
    use modelctx_types::{JsonRpcResultResponse, RawValue};

    use super::*;

    #[test]
    fn a_response_is_written_into_an_allocation_of_its_length() {
        for id in [RequestId::Number(-42), RequestId::String("a-b".into())] {
            let result = RawValue::from_string(r#"{"content":[]}"#.to_owned()).unwrap();
            let msg = JsonRpcMessage::Response(JsonRpcResultResponse::new(id, result));
            let text = message_text(&msg).unwrap();
            assert_eq!(text, serde_json::to_string(&msg).unwrap());
            assert_eq!(text.capacity(), text.len(), "{text}");
        }
    }
}
