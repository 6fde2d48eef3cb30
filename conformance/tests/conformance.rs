//! The conformance suite's test binary (`harness = false`).
//!
//! Each feature area lives in `tests/conformance/<area>.rs` with a
//! `pub(crate) fn tests() -> Vec<Test>` list; declare the module here (with `#[path]`,
//! so Cargo does not build it as a test binary of its own) and add its list to `main`.
//! The harness adds the self-tests and the contract trials itself.

#[path = "conformance/client_auth.rs"]
mod client_auth;
#[path = "conformance/client_auth_support.rs"]
mod client_auth_support;
#[path = "conformance/context.rs"]
mod context;
#[path = "conformance/elicitation.rs"]
mod elicitation;
#[path = "conformance/extensions.rs"]
mod extensions;
#[path = "conformance/hosting_auth.rs"]
mod hosting_auth;
#[path = "conformance/http_client.rs"]
mod http_client;
#[path = "conformance/http_modern.rs"]
mod http_modern;
#[path = "conformance/http_resume.rs"]
mod http_resume;
#[path = "conformance/http_server.rs"]
mod http_server;
#[path = "conformance/http_support.rs"]
mod http_support;
#[path = "conformance/lifecycle.rs"]
mod lifecycle;
#[path = "conformance/list_changed.rs"]
mod list_changed;
#[path = "conformance/logging.rs"]
mod logging;
#[path = "conformance/pagination.rs"]
mod pagination;
#[path = "conformance/prompts.rs"]
mod prompts;
#[path = "conformance/protocol.rs"]
mod protocol;
#[path = "conformance/resources.rs"]
mod resources;
#[path = "conformance/roots.rs"]
mod roots;
#[path = "conformance/sampling.rs"]
mod sampling;
#[path = "conformance/sse.rs"]
mod sse;
#[path = "conformance/stdio.rs"]
mod stdio;
#[path = "conformance/support.rs"]
mod support;
#[path = "conformance/tasks.rs"]
mod tasks;
#[path = "conformance/tools.rs"]
mod tools;

use std::process::ExitCode;

fn main() -> ExitCode {
    let tests = [
        lifecycle::tests(),
        protocol::tests(),
        sampling::tests(),
        elicitation::tests(),
        roots::tests(),
        stdio::tests(),
        tools::tests(),
        resources::tests(),
        prompts::tests(),
        logging::tests(),
        pagination::tests(),
        list_changed::tests(),
        context::tests(),
        http_server::tests(),
        http_client::tests(),
        http_modern::tests(),
        http_resume::tests(),
        client_auth::tests(),
        hosting_auth::tests(),
        tasks::tests(),
        extensions::tests(),
        sse::tests(),
    ]
    .concat();
    modelctx_conformance::harness::main(tests)
}
