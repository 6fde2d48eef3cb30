//! One outbound request on its way: its params and `_meta` prepared, its answer (or
//! progress, timeout, cancellation) awaited, and the peer told when it is dropped.

use std::borrow::Cow;

use modelctx_transport::{MessageSink, TransportMessage};
use modelctx_types::{
    JsonRpcMessage, JsonRpcRequest, Meta, ProgressToken, RawValue, RequestId, RequestMethod, to_raw,
};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::SessionError;
use crate::lifecycle::{self, Phase, Role};
use crate::trace::{self, RequestTrace};

use super::shared::{Outcome, ProgressSink, cancelled_notification};
use super::{Peer, RequestOptions};

/// Serialises params; `null` means "no params". JSON-RPC allows only an object or an
/// array there, so anything else is refused locally on every transport (the in-memory
/// transport never serialises, so a wire would be the first to notice otherwise).
pub(super) fn serialize_params<T: Serialize>(
    params: &T,
) -> Result<Option<Box<RawValue>>, SessionError> {
    let raw = to_raw(params)
        .map_err(|e| SessionError::refused(format!("cannot serialise params: {e}")))?;
    match raw.get().as_bytes().first() {
        _ if raw.get() == "null" => Ok(None),
        Some(b'{') | Some(b'[') => Ok(Some(raw)),
        _ => Err(SessionError::refused(format!(
            "params must be a JSON object or array, not {}",
            raw.get()
        ))),
    }
}

/// The progress token of request `id`: the id itself.
pub(super) fn progress_token(id: &RequestId) -> ProgressToken {
    match id {
        RequestId::Number(n) => ProgressToken::Number(*n),
        RequestId::String(s) => ProgressToken::String(s.clone()),
    }
}

/// Adds the progress token and caller `_meta` to the params, when there are any, and the
/// trace context (`trace`: left out when the params cannot carry `_meta`, which only the
/// caller's additions make an error).
pub(super) fn attach_meta(
    params: Option<Box<RawValue>>,
    id: &RequestId,
    options: &RequestOptions,
    trace: Vec<(&'static str, String)>,
) -> Result<Option<Box<RawValue>>, SessionError> {
    let traced_only = options.on_progress.is_none() && options.meta.is_none();
    if traced_only && trace.is_empty() {
        return Ok(params);
    }
    let mut object = match &params {
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(map)) => map,
            _ if traced_only => return Ok(params),
            _ => {
                return Err(SessionError::refused(
                    "params must be an object to carry _meta",
                ));
            }
        },
        None => serde_json::Map::new(),
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(meta) = meta else {
        if traced_only {
            return Ok(params);
        }
        return Err(SessionError::refused("_meta must be an object"));
    };
    if let Some(extra) = &options.meta {
        for (k, v) in extra {
            meta.insert(k.clone(), v.clone());
        }
    }
    // Trace context the caller put in `_meta` itself is left as it is, both keys: a
    // `tracestate` belongs to its `traceparent`.
    if !trace::CARRIER_KEYS
        .iter()
        .any(|key| meta.contains_key(*key))
    {
        for (key, value) in trace {
            meta.insert(key.to_owned(), Value::String(value));
        }
    }
    if options.on_progress.is_some() {
        let token = serde_json::to_value(progress_token(id))
            .map_err(|e| SessionError::refused(format!("cannot serialise params: {e}")))?;
        meta.insert(Meta::PROGRESS_TOKEN.to_owned(), token);
    }
    to_raw(&object)
        .map(Some)
        .map_err(|e| SessionError::refused(format!("cannot serialise params: {e}")))
}

/// Cancels the request when the future waiting for it is dropped early.
///
/// Created with the handle, so a handle dropped before its first poll frees its slot too.
pub(super) struct DropGuard {
    pub(super) peer: Option<Peer>,
    pub(super) id: RequestId,
    pub(super) method: Cow<'static, str>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let taken = peer.shared.lock_pending().take(&self.id);
        // Already completed, or never went out: nothing to tell the peer.
        let Some((_slot, true)) = taken else { return };
        if self.method == lifecycle::INITIALIZE {
            return;
        }
        let id = std::mem::replace(&mut self.id, RequestId::Number(0));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let notice = cancelled_notification(&id, "request dropped by the caller");
                let _ = peer.shared.send(notice, None).await;
            });
        }
    }
}

/// Decodes the typed result of request method `M`.
// Takes the box by value: its type is the handle's `decode` pointer, whose raw
// instance hands the box on unchanged.
#[allow(clippy::boxed_local)]
pub(super) fn decode_result<M: RequestMethod>(
    raw: Box<RawValue>,
) -> Result<M::Result, SessionError> {
    serde_json::from_str::<M::Result>(raw.get())
        .map_err(|e| SessionError::invalid_result(format!("{} result: {e}", M::METHOD)))
}

pub(super) async fn run_request(
    mut guard: DropGuard,
    request: JsonRpcRequest,
    options: RequestOptions,
    mut rx: oneshot::Receiver<Outcome>,
    progress_rx: Option<ProgressSink>,
    mut trace: RequestTrace,
) -> Result<Box<RawValue>, SessionError> {
    // One future, no inner one: a request's future is boxed, and past 1 KiB its box
    // leaves the allocator's fast path.
    let result = 'sent: {
        let Some(peer) = guard.peer.clone() else {
            break 'sent Err(SessionError::closed());
        };
        let (id, method) = (guard.id.clone(), guard.method.clone());
        let shared = peer.shared.clone();
        let timeout = options.timeout.unwrap_or(shared.config.request_timeout);
        let start = Instant::now();
        let hard = options.max_total_timeout.map(|m| start + m);
        let cap = |t: Instant| hard.map_or(t, |h| t.min(h));
        // Cancelled through its canceller (or the session closed) before the first
        // poll: the request must not go out at all.
        let marked = shared.lock_pending().mark_sent(
            &id,
            cap(start + timeout),
            method != lifecycle::INITIALIZE,
        );
        match marked {
            None => {
                guard.peer = None;
                break 'sent Err(match rx.try_recv() {
                    Ok(Outcome::Cancelled) => SessionError::cancelled(),
                    _ => SessionError::closed(),
                });
            }
            Some(true) => shared.rearm_deadlines(),
            Some(false) => {}
        }
        let message = TransportMessage::new(JsonRpcMessage::Request(request))
            .related_to(peer.related.clone())
            .with_resumption_token(options.resumption_token.clone())
            .with_name_param(options.name_param);
        if let Err(e) = shared
            .sink
            .send(message)
            .await
            .map_err(SessionError::transport)
        {
            shared.lock_pending().remove(&id);
            guard.peer = None;
            break 'sent Err(e);
        }
        let outcome = loop {
            let progress = async {
                match progress_rx.as_deref() {
                    Some(queue) => Some(queue.pop().await),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                outcome = &mut rx => break outcome.unwrap_or(Outcome::Closed),
                Some(p) = progress => {
                    if let Some(cb) = &options.on_progress {
                        cb(p);
                    }
                    if options.reset_timeout_on_progress {
                        let deadline = cap(Instant::now() + timeout);
                        if shared.lock_pending().set_deadline(&id, deadline) {
                            shared.rearm_deadlines();
                        }
                    }
                }
            }
        };
        guard.peer = None;
        // Updates that arrived before the response are still in the channel when the
        // biased select above picks the response: deliver them, in order, before
        // returning.
        if let (
            Outcome::Result(_) | Outcome::Error(_) | Outcome::InvalidResponse(_),
            Some(rx),
            Some(cb),
        ) = (&outcome, progress_rx.as_deref(), &options.on_progress)
        {
            while let Some(p) = rx.try_pop() {
                cb(p);
            }
        }
        if method == lifecycle::INITIALIZE && shared.role == Role::Client {
            match &outcome {
                // The answer names the protocol version of the session's spans.
                Outcome::Result(raw) => shared.trace.learn_version(&shared.span, raw),
                // No session came of it: the client may send `initialize` again (another
                // revision the server named) or turn to the stateless era.
                _ => {
                    shared.phase.advance(Phase::Initializing, Phase::New);
                }
            }
        }
        match outcome {
            Outcome::Result(raw) => Ok(raw),
            Outcome::Error(e) => Err(SessionError::protocol(e)),
            Outcome::InvalidResponse(reason) => Err(SessionError::invalid_response(reason)),
            Outcome::Closed => Err(SessionError::closed()),
            Outcome::Cancelled => Err(SessionError::cancelled()),
            Outcome::TimedOut => Err(SessionError::timeout()),
        }
    };
    trace.finish(match &result {
        Ok(raw) => trace::Outcome::Result(raw),
        Err(e) => match e.protocol_error() {
            Some(error) => trace::Outcome::Error(error),
            None => trace::Outcome::Failed(e.kind_name()),
        },
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traced() -> Vec<(&'static str, String)> {
        vec![
            (
                "traceparent",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            ),
            ("tracestate", "k=v".into()),
        ]
    }

    fn meta_of(params: Option<Box<RawValue>>) -> Value {
        let params: Value = serde_json::from_str(params.unwrap().get()).unwrap();
        params["_meta"].clone()
    }

    #[test]
    fn trace_context_rides_in_meta_unless_the_caller_put_its_own() {
        let id = RequestId::Number(1);
        let options = RequestOptions::default();
        let raw = |s: &str| Some(RawValue::from_string(s.to_owned()).unwrap());
        let carried = attach_meta(raw(r#"{"name":"t"}"#), &id, &options, traced()).unwrap();
        assert_eq!(meta_of(carried)["tracestate"], "k=v");
        // The caller's own traceparent, without a tracestate: neither of ours is added.
        let own = r#"{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}"#;
        let kept = meta_of(attach_meta(raw(own), &id, &options, traced()).unwrap());
        assert_eq!(
            kept,
            serde_json::json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
        );
    }

    #[test]
    fn params_that_cannot_carry_trace_context_go_as_they_are() {
        let id = RequestId::Number(1);
        let options = RequestOptions::default();
        for params in [r#"[1,2]"#, r#"{"_meta":3}"#] {
            let raw = RawValue::from_string(params.to_owned()).unwrap();
            let sent = attach_meta(Some(raw), &id, &options, traced()).unwrap();
            assert_eq!(sent.unwrap().get(), params);
        }
    }

    #[test]
    fn params_must_be_an_object_or_an_array() {
        assert!(serialize_params(&Option::<Value>::None).unwrap().is_none());
        assert!(
            serialize_params(&serde_json::json!({"a": 1}))
                .unwrap()
                .is_some()
        );
        assert!(serialize_params(&serde_json::json!([1])).unwrap().is_some());
        for bad in [
            serde_json::json!(3),
            serde_json::json!("x"),
            serde_json::json!(true),
        ] {
            assert!(serialize_params(&bad).unwrap_err().is_refused(), "{bad}");
        }
    }
}
