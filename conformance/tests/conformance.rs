//! The conformance suite's test binary (`harness = false`).
//!
//! Each feature area lives in `tests/conformance/<area>.rs` with a
//! `pub(crate) fn tests() -> Vec<Test>` list. Declare it here with a `#[path]` (a file
//! directly under `tests/` would be built as a test binary of its own) and add its list
//! to `main`:
//!
//! ```text
//! #[path = "conformance/lifecycle.rs"]
//! mod lifecycle;
//! ...
//! let tests = [lifecycle::tests(), tools::tests()].concat();
//! ```
//!
//! The harness adds the self-tests and the contract trials itself.

use std::process::ExitCode;

fn main() -> ExitCode {
    let tests = Vec::new();
    modelctx_conformance::harness::main(tests)
}
