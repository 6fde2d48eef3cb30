//! SSE event parsing on the client side (`modelctx_http::sse::SseParser`).
//!
//! Input: byte 0 picks the read-chunk pattern, byte 1 a small cap, the rest is the
//! stream. With a cap the stream cannot reach, the events do not depend on how the
//! stream was chunked and match a plain reading of the SSE rules as this parser applies
//! them. With a small cap the parser refuses an oversized event and never holds much
//! more than its cap. Every event re-encoded by `encode_event` parses back as itself.

use std::time::Duration;

use modelctx_http::sse::{SseEvent, SseParser, encode_event};

type Event = (Option<String>, Option<String>, String, Option<Duration>);

fn parts(e: &SseEvent) -> Event {
    (e.event.clone(), e.id.clone(), e.data.clone(), e.retry)
}

/// The parser's rules, written out plainly: lines split on `\n`, one trailing `\r`
/// dropped, invalid UTF-8 replaced line by line; a blank line dispatches an event that
/// has at least one field.
fn model(stream: &[u8]) -> Vec<Event> {
    let mut events = Vec::new();
    let mut current: Event = (None, None, String::new(), None);
    let (mut fields, mut has_data) = (false, false);
    for line in crate::split_lines(stream).0 {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            if fields {
                events.push(std::mem::take(&mut current));
                fields = false;
                has_data = false;
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (name, value) = match line.split_once(':') {
            Some((n, v)) => (n, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*line, ""),
        };
        match name {
            "data" => {
                if has_data {
                    current.2.push('\n');
                }
                current.2.push_str(value);
                has_data = true;
                fields = true;
            }
            "event" => {
                current.0 = Some(value.to_owned());
                fields = true;
            }
            "id" if !value.contains('\0') => {
                current.1 = Some(value.to_owned());
                fields = true;
            }
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    current.3 = Some(Duration::from_millis(ms));
                    fields = true;
                }
            }
            _ => {}
        }
    }
    events
}

fn feed(parser: &mut SseParser, parts_of: &[&[u8]]) -> Result<Vec<Event>, usize> {
    let mut events = Vec::new();
    for (i, part) in parts_of.iter().enumerate() {
        match parser.push(part) {
            Ok(got) => events.extend(got.iter().map(parts)),
            Err(_) => return Err(i),
        }
    }
    Ok(events)
}

/// Checks one input.
pub fn check(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let stream = &data[2..];
    let chunked = crate::framing::chunks(stream, data[0]);

    // A cap the stream cannot reach: chunking does not matter, the rules hold.
    let expected = model(stream);
    let whole = feed(&mut SseParser::new(stream.len() + 1), &[stream]).expect("under the cap");
    assert_eq!(whole, expected, "the parser disagrees with the SSE rules");
    let got = feed(&mut SseParser::new(stream.len() + 1), &chunked).expect("under the cap");
    assert_eq!(got, expected, "events depend on the read chunks");

    // A small cap: events are refused past it, and the parser never holds an event
    // much larger than the cap (one chunk at most beyond it).
    let cap = usize::from(data[1]);
    let mut parser = SseParser::new(cap);
    for part in &chunked {
        match parser.push(part) {
            Ok(events) => {
                for e in events {
                    // A dispatched event's fields were counted against the cap, as
                    // received: each byte became at most one character.
                    let size = e.data.chars().count();
                    assert!(
                        size <= cap + part.len() + 1,
                        "an event of {size} characters passed a cap of {cap}"
                    );
                }
            }
            Err(too_large) => {
                assert_eq!(too_large.max(), cap);
                break;
            }
        }
    }

    // Every event re-encodes and parses back as itself (encode_event writes only the
    // type and the data; a one-line type without `\r`).
    for (event, _, data, _) in &expected {
        let kind = event.as_deref().unwrap_or("message");
        if kind.contains(['\n', '\r']) || data.contains('\r') {
            continue;
        }
        let bytes = encode_event(kind, data);
        let back = feed(&mut SseParser::new(bytes.len() + 1), &[&bytes]).expect("under the cap");
        assert_eq!(back.len(), 1, "one encoded event parses as one event");
        assert_eq!(
            back[0].0.as_deref(),
            Some(kind),
            "encode_event then parse changed the type"
        );
        assert_eq!(&back[0].2, data, "encode_event then parse changed the data");
    }
}
