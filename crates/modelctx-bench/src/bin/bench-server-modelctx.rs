//! The modelctx side of the stdio and streamable HTTP scenarios (see the crate docs).
//!
//! ```text
//! bench-server-modelctx stdio        serve on stdin/stdout until stdin closes
//! bench-server-modelctx http MODE    serve on 127.0.0.1 (an ephemeral port, printed as
//!                                 "listening ADDR" on stdout) until stdin closes;
//!                                 MODE is stateful, json or stateless
//! bench-server-modelctx http-scale memory|redis URL
//!                                 the scale-out server (both eras, a task-capable echo
//!                                 tool) with in-memory or Redis stores, as `http`
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
        ["http-scale", "memory"] => {
            http_scale(modelctx_bench::modelctx_side::Stores::Memory).await
        }
        ["http-scale", "redis", url] => {
            http_scale(modelctx_bench::modelctx_side::Stores::Redis((*url).to_owned())).await
        }
        _ => Err(
            "usage: bench-server-modelctx <stdio | http stateful|json|stateless | http-scale memory|redis URL>"
                .into(),
        ),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-server-modelctx: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn stdio() -> Result<(), String> {
    modelctx_bench::modelctx_side::serve_stdio().await;
    Ok(())
}

async fn http(mode: HttpMode) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening {addr}");
    tokio::select! {
        outcome = async { modelctx_bench::modelctx_side::serve_http(listener, mode).await } => outcome,
        () = modelctx_bench::stdin_closed() => Ok(()),
    }
}

async fn http_scale(stores: modelctx_bench::modelctx_side::Stores) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // Calls that come before the stores are connected wait in the listen backlog.
    println!("listening {addr}");
    tokio::select! {
        outcome = modelctx_bench::modelctx_side::serve_scale(listener, stores) => outcome,
        () = modelctx_bench::stdin_closed() => Ok(()),
    }
}
