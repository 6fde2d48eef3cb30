//! The integration tests of the legacy HTTP+SSE transport, one module per subject, in one test binary.

mod client_limits;
mod handshake;
mod sse;
