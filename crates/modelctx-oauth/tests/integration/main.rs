//! The integration tests of the OAuth crate, one module per subject, in one test binary;
//! each module is built when the features it tests are on.

#[cfg(feature = "client")]
mod flows;
#[cfg(all(feature = "resource-server", feature = "authorization-server"))]
mod listing;
#[cfg(all(feature = "resource-server", feature = "authorization-server"))]
mod loopback;
#[cfg(all(
    feature = "client",
    feature = "resource-server",
    feature = "authorization-server"
))]
mod server;
#[cfg(feature = "resource-server")]
mod session_binding;
#[cfg(feature = "client")]
mod support;
