//! Standard base64 (RFC 4648, padded), for blob contents, opaque cursors and sealed
//! `requestState`: the `base64` crate's standard engine, which reads only canonical
//! padded text (a cursor or state altered by a client is refused, never reinterpreted).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Encodes `bytes` as padded base64.
pub(crate) fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes padded base64; `None` for anything else.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_padded_text_is_read() {
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(decode("Zm8=").as_deref(), Some(&b"fo"[..]));
        assert_eq!(decode("Zm8"), None);
        assert_eq!(decode("Z=8="), None);
        assert_eq!(decode("!!!!"), None);
    }
}
