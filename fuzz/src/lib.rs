//! The checks behind the fuzz targets in `fuzz_targets/`, one module per target. Each
//! `check` takes libFuzzer's input and panics when an invariant breaks: not only "no
//! panic", but the properties the SDK promises (a decoded message re-encodes to a form
//! that decodes to the same value, framing never yields a line with a newline, the HTTP
//! service answers every request with a status in bounded time, ...).
//!
//! Run them with `cargo xtask fuzz [--secs N] [TARGET]` from the workspace root.
//!
//! # How it is built
//!
//! A crate and a workspace of its own (the root manifest `exclude`s it), so `cargo test
//! --workspace` and stable builds never see it; it needs the nightly toolchain and
//! cargo-fuzz (`cargo xtask fuzz` installs the pinned version into the ignored
//! `.tools/cargo-fuzz` when the machine has none). `fuzz_targets/` holds the one-line entry
//! points, `corpus/<target>/` the checked-in seeds. The HTTP target's inputs are text:
//! `METHOD path`, headers, a blank line, the body, `===` between requests, and `$session`
//! for the last `Mcp-Session-Id`. cargo-fuzz always builds in `fuzz/target` (xtask drops
//! `CARGO_TARGET_DIR` for it); runs grow their corpus in `fuzz/scratch/<target>/` and write
//! crashing inputs to `fuzz/artifacts/<target>/`, all ignored. A run fails on a crash, an
//! input that takes 10 s, or 2 GiB. Every finding becomes a regression test in the crate
//! concerned, named after it.
//!
//! Async targets share one current-thread tokio runtime per process with time paused: a
//! wait nothing can end resolves its timeout at once, so a hang is a failed assertion
//! rather than a stuck fuzzer, and an open SSE stream is read until it goes quiet.
//!
//! `cargo xtask test` runs every target for 3 s as a smoke run.

pub mod elicitation;
pub mod era;
pub mod framing;
pub mod http;
pub mod jsonrpc;
pub mod skills;
pub mod sse;
pub mod uri;

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The complete lines of `stream` (split on `\n`, one trailing `\r` dropped), and what
/// follows the last `\n`: how both line-based wire formats read their input.
pub(crate) fn split_lines(stream: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let mut lines = Vec::new();
    let mut rest = stream;
    while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..pos];
        rest = &rest[pos + 1..];
        lines.push(line.strip_suffix(b"\r").unwrap_or(line));
    }
    (lines, rest)
}

/// `value` encodes, the encoding decodes to an equal value, and re-encoding that gives
/// the same bytes.
pub fn assert_stable<T>(what: &str, value: &T)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let json = serde_json::to_vec(value)
        .unwrap_or_else(|e| panic!("{what}: {value:?} does not encode: {e}"));
    let back: T = serde_json::from_slice(&json).unwrap_or_else(|e| {
        panic!(
            "{what}: its own encoding does not decode: {e}\n{}",
            String::from_utf8_lossy(&json)
        )
    });
    assert_eq!(&back, value, "{what}: decode(encode(v)) != v");
    let again = serde_json::to_vec(&back).expect("encodes twice");
    assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(&json),
        "{what}: the encoding is not stable"
    );
}

/// Decodes `bytes` as a `T`; when that works, checks [`assert_stable`].
pub fn stable_if_decodes<T>(what: &str, bytes: &[u8]) -> Option<T>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let value: T = serde_json::from_slice(bytes).ok()?;
    assert_stable(what, &value);
    Some(value)
}

/// The tokio runtime every async target runs in: current-thread, built once per
/// process, with time paused, so a wait that nothing can end resolves its timeout at
/// once (a hang shows up as a failed timeout, not as a stuck fuzzer).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime")
    })
}
