//! JSON-RPC message decoding into every message union of every revision.
//!
//! The input is one candidate message. It is read as the generic envelope
//! (`JsonRpcMessage`), as the 2025-03-26 message-or-batch, as each side's request,
//! notification and result union (directly: the bare `{method, params}` form of the
//! older revisions; and through the envelope, as the runtime does), as each result type
//! chosen by method (`from_method`, the method picked by the response's id), and as the
//! tasks extension's types. Whatever decodes must re-encode to a form that decodes to
//! the same value; the envelope's error must say -32700 exactly when the input is not
//! JSON; an encoded line never holds an embedded newline.

use modelctx_stdio::framing::encode_line;
use modelctx_types::ext_tasks;
use modelctx_types::{
    ClientNotification, ClientRequest, ClientResult, ErrorData, JsonRpcMessage,
    JsonRpcMessageV2025_03_26, RawValue, RequestId, ServerNotification, ServerRequest,
    ServerResult,
};

use crate::{assert_stable, stable_if_decodes};

/// Every method a result can answer, for `from_method`.
fn methods() -> impl Iterator<Item = &'static str> {
    ClientRequest::METHODS
        .iter()
        .chain(ServerRequest::METHODS)
        .copied()
}

/// The method a response's id selects: the id itself when it names one, else one
/// chosen by its value (so the fuzzer reaches every `from_method` arm).
fn method_for(id: &RequestId) -> &'static str {
    let all: Vec<&'static str> = methods().collect();
    match id {
        RequestId::String(s) => all
            .iter()
            .copied()
            .find(|m| *m == &**s)
            .unwrap_or_else(|| all[s.len() % all.len()]),
        RequestId::Number(n) => all[n.rem_euclid(all.len() as i64) as usize],
    }
}

/// Runs every decoder on `data`.
pub fn check(data: &[u8]) {
    envelope(data);
    batch(data);
    // The bare forms (no envelope) every union also reads.
    stable_if_decodes::<ClientRequest>("ClientRequest", data);
    stable_if_decodes::<ServerRequest>("ServerRequest", data);
    stable_if_decodes::<ClientNotification>("ClientNotification", data);
    stable_if_decodes::<ServerNotification>("ServerNotification", data);
    stable_if_decodes::<ClientResult>("ClientResult", data);
    stable_if_decodes::<ServerResult>("ServerResult", data);
    // The tasks extension (2026-07-28).
    stable_if_decodes::<ext_tasks::GetTaskRequest>("ext GetTaskRequest", data);
    stable_if_decodes::<ext_tasks::UpdateTaskRequest>("ext UpdateTaskRequest", data);
    stable_if_decodes::<ext_tasks::CancelTaskRequest>("ext CancelTaskRequest", data);
    stable_if_decodes::<ext_tasks::CreateTaskResult>("ext CreateTaskResult", data);
    stable_if_decodes::<ext_tasks::GetTaskResult>("ext GetTaskResult", data);
    stable_if_decodes::<ext_tasks::DetailedTask>("ext DetailedTask", data);
}

fn envelope(data: &[u8]) {
    // JSON text is UTF-8 (RFC 8259 §8.1); serde_json does not check the strings it skips.
    // Two readings of "is JSON": skipping values (what the envelope does with members it
    // does not know) takes numbers out of f64's range, reading them does not (an
    // implementation limit RFC 8259 §9 allows). -32700 answers input that is not JSON by
    // both; -32600 or a message, input that is JSON at least when skipped.
    let utf8 = std::str::from_utf8(data).is_ok();
    let skips = utf8 && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
    let reads = utf8 && serde_json::from_slice::<serde_json::Value>(data).is_ok();
    let message = match JsonRpcMessage::from_slice(data) {
        Ok(message) => message,
        Err(invalid) => {
            if invalid.is_parse_error() {
                assert!(!reads, "-32700 answered JSON: {invalid}");
            } else {
                assert!(skips, "-32600 answered input that is not JSON: {invalid}");
            }
            // The answer itself is a message.
            let answer = JsonRpcMessage::from(invalid.into_response());
            let bytes = answer.to_vec();
            JsonRpcMessage::from_slice(&bytes).expect("the error answer decodes");
            return;
        }
    };
    assert!(skips, "decoded a message from input that is not JSON");

    // decode -> encode -> decode is stable.
    let encoded = message.to_vec();
    let again = JsonRpcMessage::from_slice(&encoded)
        .unwrap_or_else(|e| panic!("re-encoded message does not decode: {e}"));
    assert_eq!(again.to_vec(), encoded, "encoding is not stable");
    assert_eq!(again.method(), message.method());
    assert_eq!(again.id(), message.id());

    // One line, newline-terminated, that decodes to the same message.
    let line = encode_line(&message);
    assert_eq!(line.last(), Some(&b'\n'));
    let body = &line[..line.len() - 1];
    assert!(
        !body.contains(&b'\n') && !body.contains(&b'\r'),
        "an encoded line holds a line break"
    );
    let from_line = JsonRpcMessage::from_slice(body).expect("an encoded line decodes");
    let flattened: Vec<u8> = encoded
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    assert_eq!(from_line.to_vec(), flattened);

    match &message {
        JsonRpcMessage::Request(request) => {
            // The same checks for either role's request union (inherent methods, no trait).
            macro_rules! request_round_trip {
                ($union:ident) => {
                    if let Ok(r) = $union::from_json_rpc(request) {
                        assert_stable(concat!(stringify!($union), " (envelope)"), &r);
                        assert_eq!(r.method(), &*request.method);
                        let back = r.to_json_rpc().expect("a request with an id re-enveloped");
                        assert_eq!(back.id, request.id);
                        assert_eq!($union::from_json_rpc(&back).as_ref(), Ok(&r));
                    }
                };
            }
            request_round_trip!(ClientRequest);
            request_round_trip!(ServerRequest);
        }
        JsonRpcMessage::Notification(notification) => {
            if let Ok(n) = ClientNotification::from_json_rpc(notification) {
                assert_stable("ClientNotification (envelope)", &n);
                let back = n.to_json_rpc().expect("re-enveloped");
                assert_eq!(ClientNotification::from_json_rpc(&back).as_ref(), Ok(&n));
            }
            if let Ok(n) = ServerNotification::from_json_rpc(notification) {
                assert_stable("ServerNotification (envelope)", &n);
                let back = n.to_json_rpc().expect("re-enveloped");
                assert_eq!(ServerNotification::from_json_rpc(&back).as_ref(), Ok(&n));
            }
        }
        JsonRpcMessage::Response(response) => {
            let raw = response.result.get().as_bytes();
            stable_if_decodes::<ServerResult>("ServerResult (by shape)", raw);
            stable_if_decodes::<ClientResult>("ClientResult (by shape)", raw);
            let method = method_for(&response.id);
            if let Ok(r) = ServerResult::from_method(method, &response.result) {
                let raw = to_raw(&r);
                let back = ServerResult::from_method(method, &raw)
                    .unwrap_or_else(|e| panic!("ServerResult for {method}: re-encoded: {e}"));
                assert_eq!(back, r, "ServerResult for {method}");
            }
            if let Ok(r) = ClientResult::from_method(method, &response.result) {
                let raw = to_raw(&r);
                let back = ClientResult::from_method(method, &raw)
                    .unwrap_or_else(|e| panic!("ClientResult for {method}: re-encoded: {e}"));
                assert_eq!(back, r, "ClientResult for {method}");
            }
        }
        JsonRpcMessage::Error(error) => assert_stable::<ErrorData>("ErrorData", &error.error),
    }
}

fn to_raw<T: serde::Serialize>(value: &T) -> Box<RawValue> {
    modelctx_types::to_raw(value).expect("a decoded value encodes")
}

/// The 2025-03-26 form: one message or a batch.
fn batch(data: &[u8]) {
    let Ok(message) = JsonRpcMessageV2025_03_26::from_slice(data) else {
        return;
    };
    let encoded = message.to_vec();
    let again = JsonRpcMessageV2025_03_26::from_slice(&encoded)
        .unwrap_or_else(|e| panic!("re-encoded 2025-03-26 message does not decode: {e}"));
    assert_eq!(again.to_vec(), encoded, "2025-03-26 encoding is not stable");
    match (&message, &again) {
        (JsonRpcMessageV2025_03_26::Single(_), JsonRpcMessageV2025_03_26::Single(_))
        | (
            JsonRpcMessageV2025_03_26::BatchRequest(_),
            JsonRpcMessageV2025_03_26::BatchRequest(_),
        )
        | (
            JsonRpcMessageV2025_03_26::BatchResponse(_),
            JsonRpcMessageV2025_03_26::BatchResponse(_),
        ) => {}
        _ => panic!("a 2025-03-26 message changed kind when re-encoded"),
    }
}
