//! The baseline side of the stdio and streamable HTTP scenarios (see the crate docs).
//!
//! ```text
//! bench-server-baseline stdio        serve on stdin/stdout until stdin closes
//! bench-server-baseline http MODE    serve on 127.0.0.1 (an ephemeral port, printed as
//!                                 "listening ADDR" on stdout) until stdin closes;
//!                                 MODE is stateful, json or stateless
//! ```

use std::process::ExitCode;

use modelctx_bench::{HttpMode, Scenario};

#[tokio::main]
async fn main() -> ExitCode {
    modelctx_bench::exit("bench-server-baseline", run(&modelctx_bench::args()).await)
}

async fn run(args: &[String]) -> Result<(), String> {
    match Scenario::parse(args)? {
        Scenario::Stdio => stdio().await,
        Scenario::Http(mode) => http(mode).await,
        Scenario::Shop { .. } | Scenario::Other(_) => {
            Err("usage: bench-server-baseline <stdio | http stateful|json|stateless>".into())
        }
    }
}

async fn stdio() -> Result<(), String> {
    modelctx_bench::baseline::echo_lines()
        .await
        .map_err(|e| e.to_string())
}

async fn http(mode: HttpMode) -> Result<(), String> {
    let _ = mode;
    modelctx_bench::serve_loopback(|listener| async move {
        modelctx_bench::baseline::serve_http(listener)
            .await
            .map_err(|e| e.to_string())
    })
    .await
}
