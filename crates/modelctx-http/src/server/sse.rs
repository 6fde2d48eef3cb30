//! The server's SSE encoder, for event ids of this transport (the parser, and the
//! encoder of events without an id, are `crate::sse`).

use std::time::Duration;

/// Encodes one event. `data` must not contain a newline (JSON-RPC messages are written
/// compact, and raw values have their line breaks replaced before encoding).
///
/// The buffer is sized exactly, so the `Bytes` takes it over without a second
/// allocation (one for a buffer with spare capacity).
pub(crate) fn encode(
    id: Option<super::EventId>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;

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
}
