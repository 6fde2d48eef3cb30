//! The stdio line framing fed arbitrary byte streams, in arbitrary read chunks.
//!
//! Input: byte 0 picks the line cap, byte 1 the read-chunk pattern, the rest is the
//! stream. The decoder's lines are compared with a model (split on `\n`, drop one `\r`,
//! skip blank lines, refuse lines over the cap); they never hold a newline, and they do
//! not depend on how the stream was chunked. The stdio transport then reads the same
//! stream through the same chunks: it delivers exactly the lines that are messages,
//! reports every other line, ends after a fatal error, and always ends.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use modelctx_stdio::{Diagnostic, StdioOptions, StdioTransport};
use modelctx_stdio::framing::{FrameError, LineDecoder};
use modelctx_transport::{MessageStream, Transport};
use modelctx_types::JsonRpcMessage;
use tokio::io::{AsyncRead, ReadBuf};

/// What one line of input becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Line(Vec<u8>),
    TooLong,
    BadUtf8,
}

/// The framing rules, written out plainly.
fn model(stream: &[u8], max: usize) -> Vec<Item> {
    let mut items = Vec::new();
    let (lines, rest) = crate::split_lines(stream);
    for line in lines {
        if line.len() > max {
            items.push(Item::TooLong);
            return items;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if std::str::from_utf8(line).is_err() {
            items.push(Item::BadUtf8);
            continue;
        }
        items.push(Item::Line(line.to_vec()));
    }
    // A partial last line: refused once it is over the cap (a `\r` that may yet be
    // followed by its `\n` does not count).
    let pending = rest.len() - usize::from(rest.last() == Some(&b'\r'));
    if pending > max {
        items.push(Item::TooLong);
    }
    items
}

/// Chunk sizes: a small deterministic pattern picked by `seed`.
pub(crate) fn chunks(stream: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 0x100;
    let mut out = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let size = if seed == 0 {
            rest.len()
        } else {
            1 + (state as usize % (usize::from(seed % 32) + 1))
        };
        let (head, tail) = rest.split_at(size.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

fn decode(parts: &[&[u8]], max: usize) -> Vec<Item> {
    let mut decoder = LineDecoder::new(max);
    let mut items = Vec::new();
    for part in parts {
        decoder.extend(part);
        while let Some(next) = decoder.next_line() {
            match next {
                Ok(line) => {
                    assert!(!line.contains(&b'\n'), "a line holds a newline");
                    assert!(line.len() <= max, "a line is over the cap");
                    assert!(std::str::from_utf8(&line).is_ok(), "a line is not UTF-8");
                    items.push(Item::Line(line));
                }
                Err(FrameError::LineTooLong { .. }) => {
                    items.push(Item::TooLong);
                    return items;
                }
                Err(FrameError::InvalidUtf8 { .. }) => items.push(Item::BadUtf8),
            }
        }
    }
    items
}

/// A reader that hands out the stream in the given chunks.
struct Chunked {
    parts: Vec<Vec<u8>>,
    next: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while let Some(part) = this.parts.get_mut(this.next) {
            if part.is_empty() {
                this.next += 1;
                continue;
            }
            let n = part.len().min(buf.remaining());
            buf.put_slice(&part[..n]);
            part.drain(..n);
            return Poll::Ready(Ok(()));
        }
        Poll::Ready(Ok(()))
    }
}

/// Checks the decoder and the stdio transport on one input.
pub fn check(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let max = 1 + usize::from(data[0]) * 4;
    let stream = &data[2..];
    let expected = model(stream, max);

    let whole = decode(&[stream], max);
    assert_eq!(
        whole, expected,
        "the decoder disagrees with the framing rules"
    );
    let parts = chunks(stream, data[1]);
    let chunked = decode(&parts, max);
    assert_eq!(chunked, expected, "the lines depend on the read chunks");

    transport(&parts, max, &expected);
}

fn transport(parts: &[&[u8]], max: usize, expected: &[Item]) {
    let reader = Chunked {
        parts: parts.iter().map(|p| p.to_vec()).collect(),
        next: 0,
    };
    let diagnostics = Arc::new(Mutex::new(Vec::new()));
    let seen = diagnostics.clone();
    let options = StdioOptions::new()
        .max_line(max)
        .on_diagnostic(move |d| seen.lock().unwrap().push(d.clone()));
    let (_sink, mut stream) =
        StdioTransport::with_options(reader, tokio::io::sink(), options).split();

    let mut got = Vec::new();
    crate::runtime().block_on(async {
        let all = async {
            while let Some(item) = stream.recv().await {
                got.push(item);
            }
        };
        tokio::time::timeout(Duration::from_secs(5), all)
            .await
            .expect("the stdio stream did not end at the end of its input");
    });

    // What the transport must have done with each line.
    let mut want_messages = Vec::new();
    let mut want_invalid = 0;
    let mut want_skipped = 0;
    let mut fatal = false;
    for item in expected {
        match item {
            Item::Line(line) => match JsonRpcMessage::from_slice(line) {
                Ok(m) => want_messages.push(m.to_vec()),
                Err(e) if e.is_parse_error() => want_skipped += 1,
                Err(_) => want_invalid += 1,
            },
            Item::BadUtf8 => want_skipped += 1,
            Item::TooLong => fatal = true,
        }
    }
    let messages: Vec<Vec<u8>> = got
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|m| m.message.to_vec())
        .collect();
    assert_eq!(messages, want_messages, "delivered messages");
    let invalid = got
        .iter()
        .filter(|r| r.as_ref().is_err_and(|e| e.invalid_message().is_some()))
        .count();
    assert_eq!(invalid, want_invalid, "lines answered as invalid messages");
    let other_errors = got
        .iter()
        .filter(|r| r.as_ref().is_err_and(|e| e.invalid_message().is_none()))
        .count();
    assert_eq!(other_errors, usize::from(fatal), "fatal errors");
    if fatal {
        assert!(
            got.last().is_some_and(|r| r.is_err()),
            "a fatal error ends the stream"
        );
    }
    let diagnostics = diagnostics.lock().unwrap();
    let skipped = diagnostics
        .iter()
        .filter(|d| matches!(d, Diagnostic::SkippedLine { .. }))
        .count();
    assert_eq!(skipped, want_skipped, "skipped lines reported");
}
