//! Server-sent events: a sans-IO encoder (server) and parser (client).

use std::time::Duration;

/// One server-sent event.
#[cfg(feature = "client")]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `id:` field, when present.
    pub(crate) id: Option<String>,
    /// The joined `data:` lines (empty for a priming event).
    pub(crate) data: String,
    /// The `retry:` field, when present.
    pub(crate) retry: Option<Duration>,
}

/// Encodes one event. `data` must not contain a newline (JSON-RPC messages are written
/// compact, and raw values have their line breaks replaced before encoding).
///
/// The buffer is sized exactly, so the `Bytes` takes it over without a second
/// allocation (one for a buffer with spare capacity).
#[cfg(feature = "server")]
pub(crate) fn encode(
    id: Option<crate::server::EventId>,
    data: &str,
    retry: Option<Duration>,
) -> bytes::Bytes {
    use std::fmt::Write;
    fn digits(n: u128) -> usize {
        n.checked_ilog10().map_or(1, |d| d as usize + 1)
    }
    const EVENT: &str = "event: message\n";
    let retry = retry.map(|r| r.as_millis());
    let lines = data.split('\n').map(|l| l.trim_end_matches('\r'));
    let len = retry.map_or(0, |ms| "retry: \n".len() + digits(ms))
        + id.map_or(0, |id| {
            "id: -\n".len() + digits(id.stream.into()) + digits(id.seq.into())
        })
        + EVENT.len()
        + lines
            .clone()
            .map(|l| "data: \n".len() + l.len())
            .sum::<usize>()
        + 1;
    let mut out = String::with_capacity(len);
    if let Some(ms) = retry {
        let _ = writeln!(out, "retry: {ms}");
    }
    if let Some(id) = id {
        let _ = writeln!(out, "id: {id}");
    }
    out.push_str(EVENT);
    for line in lines {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    debug_assert_eq!(out.len(), len);
    bytes::Bytes::from(out)
}

/// Why an SSE stream could not be read.
#[cfg(feature = "client")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseTooLarge(pub(crate) usize);

/// An incremental SSE parser with a cap on the size of one event.
#[cfg(feature = "client")]
#[derive(Debug)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    max_event: usize,
    event: SseEvent,
    has_data: bool,
    has_fields: bool,
    pending: usize,
}

#[cfg(feature = "client")]
impl SseParser {
    pub(crate) fn new(max_event: usize) -> Self {
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
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        self.buf.drain(..start);
        if self.buf.len() + self.pending > self.max_event {
            return Err(SseTooLarge(self.max_event));
        }
        Ok(events)
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if !self.has_fields {
                return None;
            }
            self.has_fields = false;
            self.has_data = false;
            self.pending = 0;
            return Some(std::mem::take(&mut self.event));
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        self.pending += line.len();
        match field {
            "data" => {
                if self.has_data {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.has_data = true;
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

#[cfg(all(test, feature = "client", feature = "server"))]
mod tests {
    use super::*;

    #[test]
    fn round_trips_split_anywhere() {
        let id = |seq| Some(crate::server::EventId { stream: 0, seq });
        let a = encode(id(1), "", Some(Duration::from_millis(250)));
        let b = encode(id(2), r#"{"jsonrpc":"2.0","method":"x"}"#, None);
        let all = [a.as_ref(), b.as_ref()].concat();
        for split in 0..all.len() {
            let mut p = SseParser::new(1024);
            let mut got = p.push(&all[..split]).unwrap();
            got.extend(p.push(&all[split..]).unwrap());
            assert_eq!(got.len(), 2, "split at {split}");
            assert_eq!(got[0].id.as_deref(), Some("0-1"));
            assert_eq!(got[0].data, "");
            assert_eq!(got[0].retry, Some(Duration::from_millis(250)));
            assert_eq!(got[1].data, r#"{"jsonrpc":"2.0","method":"x"}"#);
        }
    }

    #[test]
    fn comments_and_crlf_and_cap() {
        let mut p = SseParser::new(16);
        let got = p
            .push(b": keep-alive\r\n\r\ndata: ab\r\ndata: c\r\n\r\n")
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, "ab\nc");
        assert!(p.push(&[b'x'; 32]).is_err());
    }
}
