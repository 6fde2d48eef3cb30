//! Pieces both halves of the transport use.

use modelctx_types::{JsonRpcMessage, RequestId};

/// The request a `notifications/cancelled` names, if `message` is one.
pub(crate) fn cancelled_id(message: &JsonRpcMessage) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancelled {
        request_id: RequestId,
    }
    match message {
        JsonRpcMessage::Notification(n) if n.method == "notifications/cancelled" => n
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok())
            .map(|c| c.request_id),
        _ => None,
    }
}

/// Standard padded Base64 (RFC 4648 §4), for header values that cannot travel as they
/// are (the `=?base64?…?=` form of protocol 2026-07-28).
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod base64_tests {
    #[test]
    fn encodes_padded_standard_base64() {
        assert_eq!(super::base64_encode(b"Hello"), "SGVsbG8=");
        assert_eq!(super::base64_encode(b"Hi"), "SGk=");
        assert_eq!(super::base64_encode(b"abc"), "YWJj");
        assert_eq!(super::base64_encode(b""), "");
    }
}
