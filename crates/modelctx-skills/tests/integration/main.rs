//! The integration tests of Skills over MCP, one module per subject, in one test binary.

mod client;
mod server;
mod support;
mod watch;
