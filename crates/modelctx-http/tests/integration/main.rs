//! The integration tests of streamable HTTP's client and server, one module per subject, in one test binary.

mod backoff;
mod client_headers;
mod client_limits;
mod handshake;
mod limits;
mod roundtrip;
