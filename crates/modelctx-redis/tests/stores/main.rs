//! The Redis stores against a real `redis-server` (one per test, see `support`), in one
//! test binary: each file is a suite.
//!
//! Each test starts its own `redis-server` (`support`): a free loopback port, a temporary
//! `--dir`, no persistence, ready once its log says so and it answers PING (bounded),
//! killed on drop; `restart()` brings a fresh one up on the same port. A missing
//! `redis-server` fails the test with the command that installs it. The event and task
//! suites run against the in-memory store and the Redis store alike (they live here because
//! only this crate sees both and Redis).

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
