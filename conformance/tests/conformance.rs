//! The conformance suite's test binary (`harness = false`).
//!
//! Each feature area lives in `tests/conformance/<area>.rs` with a
//! `pub(crate) fn tests() -> Vec<Test>` list; declare the module here (with `#[path]`,
//! so Cargo does not build it as a test binary of its own) and add its list to `main`.
//! The harness adds the self-tests and the contract trials itself.

#[path = "conformance/lifecycle.rs"]
mod lifecycle;
#[path = "conformance/protocol.rs"]
mod protocol;
#[path = "conformance/support.rs"]
mod support;

use std::process::ExitCode;

fn main() -> ExitCode {
    let tests = [lifecycle::tests(), protocol::tests()].concat();
    modelctx_conformance::harness::main(tests)
}
