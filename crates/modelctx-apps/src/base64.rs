//! Standard base64 (RFC 4648) for blob contents: encoded padded by the server half,
//! decoded padded or not by the bridge.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The standard alphabet, writing padding and reading text with or without it.
const ENGINE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// `bytes` in padded standard base64.
pub(crate) fn encode(bytes: &[u8]) -> String {
    ENGINE.encode(bytes)
}

/// The bytes of padded (or unpadded) standard base64; `None` for anything else.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    ENGINE.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for input in [
            &b""[..],
            b"f",
            b"fo",
            b"foo",
            b"foob",
            b"fooba",
            b"foobar",
            &[0xff, 0, 0xfe],
        ] {
            assert_eq!(decode(&encode(input)).as_deref(), Some(input));
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(decode("Zm8"), Some(b"fo".to_vec()));
        assert_eq!(decode("Z"), None);
        assert_eq!(decode("Zm8*"), None);
    }
}
