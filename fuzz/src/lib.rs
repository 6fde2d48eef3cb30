//! The checks behind the fuzz targets in `fuzz_targets/`, one module per target. Each
//! `check` takes libFuzzer's input and panics when an invariant breaks: not only "no
//! panic", but the properties the SDK promises (a decoded message re-encodes to a form
//! that decodes to the same value, framing never yields a line with a newline, the HTTP
//! service answers every request with a status in bounded time, ...).
//!
//! Run them with `cargo xtask fuzz [--secs N] [TARGET]` from the workspace root.

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
