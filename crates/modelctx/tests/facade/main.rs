//! The facade's integration tests in one binary (one link instead of one per file):
//! each module is one concern, compiled when the features it needs are on. The tests
//! that must be processes of their own stay apart: `serve_stdio` (its own stdio child),
//! `tracing` (a subscriber for the whole process) and `macros_ui` (compile errors).

#[cfg(all(feature = "macros", feature = "client", feature = "memory"))]
mod everyday;
#[cfg(all(
    feature = "server",
    feature = "client",
    feature = "http-server",
    feature = "http-client",
    feature = "sse"
))]
mod http_headers;
#[cfg(all(feature = "server", feature = "client"))]
mod https;
#[cfg(all(
    feature = "macros",
    feature = "client",
    feature = "memory",
    feature = "schema-validation"
))]
mod macros;
#[cfg(all(feature = "macros", feature = "client", feature = "memory"))]
mod middleware;
#[cfg(all(
    feature = "server",
    feature = "client",
    feature = "http-server",
    feature = "http-client"
))]
mod reconnect;
#[cfg(all(
    feature = "server",
    feature = "client",
    feature = "http-server",
    feature = "http-client"
))]
mod serve_http;
#[cfg(all(feature = "server", feature = "http-server", feature = "sse"))]
mod single_valued_headers;
#[cfg(all(
    feature = "server",
    feature = "client",
    feature = "http-server",
    feature = "http-client"
))]
mod stateless_http;
#[cfg(all(feature = "server", feature = "http-server"))]
mod task_isolation;
#[cfg(all(feature = "macros", feature = "client", feature = "memory"))]
mod template_listing;
#[cfg(all(
    feature = "server",
    feature = "client",
    feature = "memory",
    feature = "schemars"
))]
mod typed_client;
