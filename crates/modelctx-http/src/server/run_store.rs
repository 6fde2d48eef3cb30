//! Requests in flight on the answer streams of shared sessions, recorded so that
//! another service can finish an answer whose service stopped. Their home is
//! modelctx-store, with the other seams a multi-process deployment implements.

pub use modelctx_store::{RunState, RunStore, TakenRun};
