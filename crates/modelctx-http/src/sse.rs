//! Server-sent events, sans-IO: an incremental parser with a cap on one event's size
//! and an encoder for one event.
//!
//! Both HTTP transports use it: streamable HTTP (this crate) for its response and
//! standalone streams, and the legacy HTTP+SSE transport (`modelctx-sse`), whose
//! `endpoint` event is the reason the event type is kept.
//!
//! ```
//! use modelctx_http::sse::{SseParser, encode_event};
//!
//! let bytes = encode_event("endpoint", "/messages?session_id=ab12");
//! let mut parser = SseParser::new(1024);
//! let (head, tail) = bytes.split_at(7);
//! assert!(parser.push(head).unwrap().is_empty());
//! let events = parser.push(tail).unwrap();
//! assert_eq!(events[0].event_type(), "endpoint");
//! assert_eq!(events[0].data, "/messages?session_id=ab12");
//! ```

use std::fmt;
use std::time::Duration;

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field, when present (absent means `message`).
    pub event: Option<String>,
    /// The `id:` field, when present.
    pub id: Option<String>,
    /// The joined `data:` lines (empty for a priming event).
    pub data: String,
    /// The `retry:` field, when present.
    pub retry: Option<Duration>,
}

impl SseEvent {
    /// The event's type: its `event:` field, or `message` without one.
    pub fn event_type(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// An event grew past the parser's cap; the stream cannot be read further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseTooLarge {
    max: usize,
}

impl SseTooLarge {
    /// The cap that was exceeded, in bytes.
    pub fn max(&self) -> usize {
        self.max
    }
}

impl fmt::Display for SseTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a server-sent event exceeds {} bytes", self.max)
    }
}

impl std::error::Error for SseTooLarge {}

/// An incremental SSE parser with a cap on the size of one event.
#[derive(Debug)]
pub struct SseParser {
    buf: Vec<u8>,
    max_event: usize,
    event: SseEvent,
    has_data: bool,
    has_fields: bool,
    pending: usize,
}

impl SseParser {
    /// A parser that refuses any event larger than `max_event` bytes.
    pub fn new(max_event: usize) -> Self {
        Self {
            buf: Vec::new(),
            max_event,
            event: SseEvent::default(),
            has_data: false,
            has_fields: false,
            pending: 0,
        }
    }

    /// Feeds bytes; returns the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let len = line.len();
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            if let Some(event) = self.line(&line, len) {
                events.push(event);
            }
        }
        self.buf.drain(..start);
        if self.buf.len() + self.pending > self.max_event {
            return Err(SseTooLarge {
                max: self.max_event,
            });
        }
        Ok(events)
    }

    /// One line; `len` is its length as received (what the cap counts: invalid UTF-8
    /// replaced by U+FFFD takes up to three times as much room).
    fn line(&mut self, line: &str, len: usize) -> Option<SseEvent> {
        if line.is_empty() {
            // Every blank line ends an event, dispatched or not: what an undispatched
            // one counted (unknown fields) must not add up across events.
            self.pending = 0;
            if !self.has_fields {
                return None;
            }
            self.has_fields = false;
            self.has_data = false;
            return Some(std::mem::take(&mut self.event));
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        self.pending += len;
        match field {
            "data" => {
                if self.has_data {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.has_data = true;
                self.has_fields = true;
            }
            "event" => {
                self.event.event = Some(value.to_owned());
                self.has_fields = true;
            }
            "id" if !value.contains('\0') => {
                self.event.id = Some(value.to_owned());
                self.has_fields = true;
            }
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.event.retry = Some(Duration::from_millis(ms));
                    self.has_fields = true;
                }
            }
            _ => {}
        }
        None
    }
}

/// Encodes one event of type `event` (no id, no retry). Each line of `data` becomes a
/// `data:` line (a `\r` before a line break is dropped), so any text travels intact;
/// `event` must be one line.
pub fn encode_event(event: &str, data: &str) -> bytes::Bytes {
    encode(event, None, data, None)
}

/// Encodes one `message` event of streamable HTTP's server: its event id (`stream-seq`,
/// resumable) and its `retry`, when given.
#[cfg(feature = "server")]
pub(crate) fn encode_message(
    id: Option<modelctx_store::EventId>,
    data: &str,
    retry: Option<Duration>,
) -> bytes::Bytes {
    encode("message", id, data, retry)
}

/// The encoder behind both: the buffer is sized exactly, so the `Bytes` takes it over
/// without a second allocation (this is on the path of every message streamed).
fn encode(
    event: &str,
    id: Option<modelctx_store::EventId>,
    data: &str,
    retry: Option<Duration>,
) -> bytes::Bytes {
    fn digits(n: u128) -> usize {
        n.checked_ilog10().map_or(1, |d| d as usize + 1)
    }
    let retry = retry.map(|r| r.as_millis());
    let lines = || data.split('\n').map(|l| l.trim_end_matches('\r'));
    // JSON text has no raw line break: its one line is found without splitting.
    let single = (!data.as_bytes().contains(&b'\n')).then(|| data.trim_end_matches('\r'));
    let data_len = match single {
        Some(line) => "data: \n".len() + line.len(),
        None => lines().map(|l| "data: \n".len() + l.len()).sum::<usize>(),
    };
    let len = retry.map_or(0, |ms| "retry: \n".len() + digits(ms))
        + id.map_or(0, |id| {
            "id: -\n".len() + digits(id.stream.into()) + digits(id.seq.into())
        })
        + "event: \n".len()
        + event.len()
        + data_len
        + 1;
    let mut out = String::with_capacity(len);
    let mut number = itoa::Buffer::new();
    if let Some(ms) = retry {
        out.push_str("retry: ");
        out.push_str(number.format(ms));
        out.push('\n');
    }
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(number.format(id.stream));
        out.push('-');
        out.push_str(number.format(id.seq));
        out.push('\n');
    }
    out.push_str("event: ");
    out.push_str(event);
    out.push('\n');
    let mut push_line = |line: &str| {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    };
    match single {
        Some(line) => push_line(line),
        None => lines().for_each(push_line),
    }
    out.push('\n');
    debug_assert_eq!(out.len(), len);
    bytes::Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "server")]
    #[test]
    fn messages_with_ids_and_retry_round_trip_split_anywhere() {
        let id = |seq| Some(modelctx_store::EventId { stream: 0, seq });
        let a = encode_message(id(1), "", Some(Duration::from_millis(250)));
        let b = encode_message(id(2), r#"{"jsonrpc":"2.0","method":"x"}"#, None);
        let all = [a.as_ref(), b.as_ref()].concat();
        two_events_at_every_split(&all, |got| {
            assert_eq!(got[0].id.as_deref(), Some("0-1"));
            assert_eq!(got[0].data, "");
            assert_eq!(got[0].retry, Some(Duration::from_millis(250)));
            assert_eq!(got[1].id.as_deref(), Some("0-2"));
            assert_eq!(got[1].data, r#"{"jsonrpc":"2.0","method":"x"}"#);
        });
    }

    #[test]
    fn round_trips_split_anywhere() {
        let a = b"retry: 250\nid: 0-1\ndata: \n\n".to_vec();
        let b = encode_event("message", r#"{"jsonrpc":"2.0","method":"x"}"#);
        let all = [a.as_slice(), b.as_ref()].concat();
        two_events_at_every_split(&all, |got| {
            assert_eq!(got[0].id.as_deref(), Some("0-1"));
            assert_eq!(got[0].data, "");
            assert_eq!(got[0].event_type(), "message");
            assert_eq!(got[0].retry, Some(Duration::from_millis(250)));
            assert_eq!(got[1].event.as_deref(), Some("message"));
            assert_eq!(got[1].data, r#"{"jsonrpc":"2.0","method":"x"}"#);
        });
    }

    /// Parses `all` pushed in two parts, split at every position: each time two events
    /// come out, which `check` looks at.
    fn two_events_at_every_split(all: &[u8], check: impl Fn(&[SseEvent])) {
        for split in 0..all.len() {
            let mut p = SseParser::new(1024);
            let mut got = p.push(&all[..split]).unwrap();
            got.extend(p.push(&all[split..]).unwrap());
            assert_eq!(got.len(), 2, "split at {split}");
            check(&got);
        }
    }

    #[test]
    fn comments_and_crlf_and_cap() {
        let mut p = SseParser::new(16);
        let got = p
            .push(b": keep-alive\r\n\r\nevent: endpoint\r\ndata: ab\r\ndata: c\r\n\r\n")
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event_type(), "endpoint");
        assert_eq!(got[0].data, "ab\nc");
        assert!(p.push(&[b'x'; 32]).is_err());
    }

    /// Found by the `sse_parser` fuzz target: lines of unknown fields were counted
    /// against the cap but only a dispatched event reset the count, so a long-lived
    /// stream of such events (a server's own keep-alives, say) hit the cap in the end.
    #[test]
    fn events_without_known_fields_do_not_add_up_against_the_cap() {
        let mut p = SseParser::new(32);
        for _ in 0..100 {
            assert_eq!(p.push(b"ping: 1\n\n").unwrap(), []);
        }
        assert_eq!(p.push(b"data: x\n\n").unwrap()[0].data, "x");
    }

    /// Found by the `sse_parser` fuzz target: the cap counted a line after invalid
    /// UTF-8 was replaced (3 bytes per bad byte), not the bytes received.
    #[test]
    fn the_cap_counts_bytes_as_received() {
        let mut p = SseParser::new(16);
        assert_eq!(p.push(b"data: \xff\xff\xff\xff\xff\n").unwrap(), []);
        let got = p.push(b"\n").unwrap();
        assert_eq!(got[0].data, "\u{fffd}".repeat(5));
    }

    #[test]
    fn multi_line_data_survives_encoding() {
        let encoded = encode_event("message", "a\r\nb\nc");
        let mut p = SseParser::new(1024);
        let got = p.push(&encoded).unwrap();
        assert_eq!(got[0].data, "a\nb\nc");
        // One line (the JSON case) is written as it is, but for a trailing `\r`.
        assert_eq!(
            &encode_event("message", "x\r")[..],
            b"event: message\ndata: x\n\n"
        );
        assert_eq!(
            &encode_event("message", "")[..],
            b"event: message\ndata: \n\n"
        );
    }
}
