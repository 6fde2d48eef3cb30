//! The Redis stores against a real `redis-server` (one per test, see `support`), in one
//! test binary: each file is a suite.

mod announce;
mod events;
mod http;
mod keys;
#[cfg(feature = "oauth")]
mod oauth;
mod sessions;
mod round_robin;
mod support;
mod tasks;
