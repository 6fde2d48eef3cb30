//! The baseline side of the stdio and streamable HTTP scenarios (see the crate docs).
//!
//! ```text
//! bench-server-baseline stdio        serve on stdin/stdout until stdin closes
//! bench-server-baseline http MODE    serve on 127.0.0.1 (an ephemeral port, printed as
//!                                 "listening ADDR" on stdout) until stdin closes;
//!                                 MODE is stateful, json or stateless
//! ```

use std::process::ExitCode;

use modelctx_bench::HttpMode;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["stdio"] => stdio().await,
        ["http", mode] => match HttpMode::parse(mode) {
            Some(mode) => http(mode).await,
            None => Err(format!("unknown HTTP mode {mode:?}")),
        },
        _ => Err("usage: bench-server-baseline <stdio | http stateful|json|stateless>".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-server-baseline: {e}");
            ExitCode::FAILURE
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
