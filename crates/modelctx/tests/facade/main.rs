//! The facade's integration tests in one binary (one link instead of one per file):
//! each module is one concern, compiled when the features it needs are on. The tests
//! that must be processes of their own stay apart: `serve_stdio` (its own stdio child),
//! `tracing` (a subscriber for the whole process) and `macros_ui` (compile errors).

/// Declares the modules after each list of features when all of them are on.
macro_rules! modules_with {
    ($([$($feature:literal),+] $($module:ident),+;)*) => {
        $(modules_with!(@each [$($feature),+] $($module),+);)*
    };
    (@each $features:tt $($module:ident),+) => {
        $(modules_with!(@one $features $module);)+
    };
    (@one [$($feature:literal),+] $module:ident) => {
        #[cfg(all($(feature = $feature),+))]
        mod $module;
    };
}

modules_with! {
    ["macros", "client", "memory"] everyday, middleware, template_listing;
    ["server", "client", "http-server", "http-client", "sse"] http_headers;
    ["server", "client"] https;
    ["macros", "client", "memory", "schema-validation"] macros;
    ["server", "client", "http-server", "http-client"] reconnect, serve_http, stateless_http;
    ["server", "http-server", "sse"] single_valued_headers;
    ["server", "http-server"] task_isolation;
    ["server", "client", "memory", "schemars"] typed_client;
}
