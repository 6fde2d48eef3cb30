//! The integration tests of the session runtime, one module per subject, in one test binary.

mod interleavings;
// the receiver's side of tasks (`cargo test -p modelctx-session --features tasks`)
#[cfg(feature = "tasks")]
mod leases;
mod runtime;
