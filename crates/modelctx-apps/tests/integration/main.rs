//! The integration tests of modelctx-apps through the public API, one module per half,
//! in one test binary: the server half, and (feature `bridge`) the host bridge.

mod server;
mod support;

#[cfg(feature = "bridge")]
mod bridge;
