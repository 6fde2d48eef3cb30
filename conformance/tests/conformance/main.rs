//! The conformance suite's test binary (`harness = false`).
//!
//! Each feature area lives in `tests/conformance/<area>.rs`, next to this file, with a
//! `pub(crate) fn tests() -> Vec<Test>` list; declare the module here (`mod <area>;`)
//! and add its list to `main`.
//! The harness adds the self-tests and the contract trials itself. What every test
//! binary shares lives in the library (`modelctx_conformance::{support, http_support}`).

use modelctx_conformance::{http_support, support};

mod caching;
mod cancellation;
mod client_auth;
mod client_auth_binding;
mod client_auth_grants;
mod client_auth_renewal;
mod client_auth_response;
mod client_auth_steps;
mod client_auth_support;
mod context;
mod custom_methods;
mod elicitation;
mod era_gates;
mod extensions;
mod header_defs;
mod hosting_auth;
mod hosting_auth_cimd;
mod hosting_auth_scopes;
mod http_client;
mod http_client_wire;
mod http_headers;
mod http_hosting_modern;
mod http_modern;
mod http_resume;
mod http_server;
mod input_gates;
mod lifecycle;
mod lifecycle_modes;
mod list_changed;
mod listen;
mod listen_streams;
mod logging;
mod modern_results;
mod mrtr;
mod mrtr_binding;
mod mrtr_limits;
mod negotiation;
mod on_error;
mod output_schema;
mod pagination;
mod progress;
mod prompts;
mod protocol;
mod registrations;
mod resource_listen;
mod resources;
mod roots;
mod sampling;
mod sse;
mod stdio;
mod stdio_eras;
mod structured_output;
mod supported_versions;
mod surface;
mod tasks;
mod tool_checks;
mod tools;

use std::process::ExitCode;

fn main() -> ExitCode {
    let tests = [
        lifecycle::tests(),
        lifecycle_modes::tests(),
        protocol::tests(),
        cancellation::tests(),
        progress::tests(),
        sampling::tests(),
        elicitation::tests(),
        roots::tests(),
        stdio::tests(),
        tools::tests(),
        tool_checks::tests(),
        resources::tests(),
        resource_listen::tests(),
        prompts::tests(),
        logging::tests(),
        pagination::tests(),
        list_changed::tests(),
        context::tests(),
        http_server::tests(),
        http_client::tests(),
        http_modern::tests(),
        http_headers::tests(),
        http_resume::tests(),
        client_auth::tests(),
        client_auth_binding::tests(),
        client_auth_grants::tests(),
        client_auth_response::tests(),
        client_auth_renewal::tests(),
        hosting_auth::tests(),
        tasks::tests(),
        extensions::tests(),
        sse::tests(),
        surface::tests(),
        era_gates::tests(),
        listen::tests(),
        mrtr::tests(),
        output_schema::tests(),
        header_defs::tests(),
        input_gates::tests(),
        negotiation::tests(),
        caching::tests(),
        listen_streams::tests(),
        mrtr_limits::tests(),
        http_client_wire::tests(),
        http_hosting_modern::tests(),
        hosting_auth_cimd::tests(),
        hosting_auth_scopes::tests(),
        stdio_eras::tests(),
        custom_methods::tests(),
        modern_results::tests(),
        structured_output::tests(),
        registrations::tests(),
        mrtr_binding::tests(),
        on_error::tests(),
        supported_versions::tests(),
    ]
    .concat();
    modelctx_conformance::harness::main(tests)
}
