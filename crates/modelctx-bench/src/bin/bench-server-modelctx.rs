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
//! bench-server-modelctx shop REDIS_URL API_URL
//!                                 the public benchmark's shop tools, session-less
//!                                 with JSON answers, as `http`
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
        ["shop", redis, api] => shop(redis, api).await,
        _ => Err(
            "usage: bench-server-modelctx <stdio | http stateful|json|stateless | http-scale memory|redis URL | shop REDIS_URL API_URL>"
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
    modelctx_bench::serve_loopback(|listener| {
        modelctx_bench::modelctx_side::serve_http(listener, mode)
    })
    .await
}

async fn http_scale(stores: modelctx_bench::modelctx_side::Stores) -> Result<(), String> {
    // Calls that come before the stores are connected wait in the listen backlog.
    modelctx_bench::serve_loopback(|listener| {
        modelctx_bench::modelctx_side::serve_scale(listener, stores)
    })
    .await
}

async fn shop(redis: &str, api: &str) -> Result<(), String> {
    let shop = modelctx_bench::shop::Shop::connect(redis, &format!("http://{api}")).await?;
    modelctx_bench::serve_loopback(|listener| {
        modelctx_bench::modelctx_side::serve_shop(listener, shop)
    })
    .await
}
