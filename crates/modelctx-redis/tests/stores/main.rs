//! The Redis stores against a real `redis-server` (one per test, see `support`), in one
//! test binary: each file is a suite.

mod events;
mod http;
mod keys;
mod support;
mod tasks;
