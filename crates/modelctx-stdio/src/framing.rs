//! Newline-delimited JSON framing (the stdio transport's wire format), sans-IO.
//!
//! One message per line, `\n`-terminated, never an embedded newline. [`encode_line`]
//! guarantees the latter even for payloads that arrived pretty-printed (raw values keep
//! their whitespace): a raw newline can only be whitespace between JSON tokens — inside a
//! string it must be escaped — so it is replaced by a space.

use std::fmt;

use modelctx_types::JsonRpcMessage;

/// The default cap on one line: 32 MiB.
pub const DEFAULT_MAX_LINE: usize = 32 * 1024 * 1024;

/// Encodes one message as a single `\n`-terminated line.
pub fn encode_line(message: &JsonRpcMessage) -> Vec<u8> {
    let mut out = message.to_vec();
    if out.contains(&b'\n') || out.contains(&b'\r') {
        for b in &mut out {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
    }
    out.push(b'\n');
    out
}

/// Why a line could not be framed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A line grew past the cap before its newline arrived. Fatal: the decoder cannot
    /// find the next line (it keeps answering this error).
    LineTooLong {
        /// The cap in bytes.
        max: usize,
    },
    /// A line is not valid UTF-8. Only that line is lost: the decoder has consumed it
    /// and goes on with the next.
    InvalidUtf8 {
        /// The line's length in bytes.
        len: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LineTooLong { max } => write!(f, "line exceeds the limit of {max} bytes"),
            Self::InvalidUtf8 { len } => write!(f, "a line of {len} bytes is not valid UTF-8"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Splits a byte stream into lines, with a cap on the line length.
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    max: usize,
}

impl LineDecoder {
    /// A decoder rejecting lines longer than `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            scanned: 0,
            max,
        }
    }

    /// Appends received bytes.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line without its terminator (`\n` or `\r\n`); `None` when no
    /// complete line is buffered. Empty lines are skipped.
    pub fn next_line(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        loop {
            let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                // A `\r` that may yet be followed by its `\n` is not part of the line:
                // the verdict must not depend on where a read happened to stop.
                let pending = self.buf.len() - usize::from(self.buf.last() == Some(&b'\r'));
                if pending > self.max {
                    return Some(Err(FrameError::LineTooLong { max: self.max }));
                }
                return None;
            };
            let end = self.scanned + pos;
            let mut line: Vec<u8> = self.buf.drain(..=end).collect();
            self.scanned = 0;
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.len() > self.max {
                return Some(Err(FrameError::LineTooLong { max: self.max }));
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if std::str::from_utf8(&line).is_err() {
                return Some(Err(FrameError::InvalidUtf8 { len: line.len() }));
            }
            return Some(Ok(line));
        }
    }

    /// Bytes buffered after the last complete line (a partial line at end of input).
    pub fn remainder(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelctx_types::{JsonRpcNotification, RawValue};

    /// The error the next line is read as.
    fn next_error(d: &mut LineDecoder) -> FrameError {
        d.next_line().unwrap().unwrap_err()
    }

    #[test]
    fn splits_lines_across_chunks_and_skips_blank_ones() {
        let mut d = LineDecoder::new(100);
        d.extend(b"{\"a\":1}\r\n\n{\"b\"");
        assert_eq!(d.next_line().unwrap().unwrap(), b"{\"a\":1}");
        assert!(d.next_line().is_none());
        d.extend(b":2}\n");
        assert_eq!(d.next_line().unwrap().unwrap(), b"{\"b\":2}");
        assert!(d.next_line().is_none());
    }

    #[test]
    fn caps_line_length_and_rejects_bad_utf8() {
        let mut d = LineDecoder::new(4);
        d.extend(b"123456");
        assert_eq!(next_error(&mut d), FrameError::LineTooLong { max: 4 });
        let mut d = LineDecoder::new(100);
        d.extend(b"\xff\xfe\n");
        assert_eq!(next_error(&mut d), FrameError::InvalidUtf8 { len: 2 });
    }

    #[test]
    fn a_line_that_is_not_utf8_is_consumed_and_the_next_one_follows() {
        let mut d = LineDecoder::new(100);
        d.extend(b"{\"a\":\"\xc3\"}\n{\"b\":1}\n");
        assert_eq!(next_error(&mut d), FrameError::InvalidUtf8 { len: 9 });
        assert_eq!(d.next_line().unwrap().unwrap(), b"{\"b\":1}");
        assert!(d.next_line().is_none());
    }

    /// Found by the `stdio_framing` fuzz target: a line of exactly the cap, ending in
    /// `\r\n`, was refused when a read stopped between the `\r` and the `\n`, and
    /// accepted otherwise.
    #[test]
    fn a_line_at_the_cap_does_not_depend_on_where_a_read_stops() {
        let mut d = LineDecoder::new(4);
        d.extend(b"1234\r");
        assert!(d.next_line().is_none());
        d.extend(b"\n");
        assert_eq!(d.next_line().unwrap().unwrap(), b"1234");
        d.extend(b"1234\r5");
        assert_eq!(next_error(&mut d), FrameError::LineTooLong { max: 4 });
    }

    #[test]
    fn encoding_never_embeds_a_newline() {
        let raw = RawValue::from_string("{\n  \"text\": \"a\\nb\"\n}".to_owned()).unwrap();
        let msg = JsonRpcMessage::Notification(JsonRpcNotification::new("x", Some(raw)));
        let line = encode_line(&msg);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(line.last(), Some(&b'\n'));
        let back = JsonRpcMessage::from_slice(&line[..line.len() - 1]).unwrap();
        let JsonRpcMessage::Notification(n) = back else {
            panic!("not a notification")
        };
        let v: serde_json::Value = serde_json::from_str(n.params.unwrap().get()).unwrap();
        assert_eq!(v["text"], "a\nb");
    }
}
