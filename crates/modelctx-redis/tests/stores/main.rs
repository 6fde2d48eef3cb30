//! The Redis stores against a real `redis-server` (one per test, see `support`), in one
//! test binary: each file is a suite.

mod announce;
mod events;
mod http;
mod keys;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "oauth")]
mod oauth_resource;
mod round_robin;
mod runs;
mod session_binding;
mod sessions;
mod single_use;
mod support;
mod task_isolation;
mod tasks;
