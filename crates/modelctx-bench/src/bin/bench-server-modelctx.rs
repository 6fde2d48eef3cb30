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

use modelctx_bench::modelctx_side::Stores;
use modelctx_bench::{HttpMode, Scenario};

#[tokio::main]
async fn main() -> ExitCode {
    modelctx_bench::exit("bench-server-modelctx", run(&modelctx_bench::args()).await)
}

async fn run(args: &[String]) -> Result<(), String> {
    match Scenario::parse(args)? {
        Scenario::Stdio => stdio().await,
        Scenario::Http(mode) => http(mode).await,
        Scenario::Shop { redis, api } => shop(redis, api).await,
        Scenario::Other(args) => match args
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["http-scale", "memory"] => http_scale(Stores::Memory).await,
            ["http-scale", "redis", url] => http_scale(Stores::Redis((*url).to_owned())).await,
            _ => Err(
                "usage: bench-server-modelctx <stdio | http stateful|json|stateless | http-scale memory|redis URL | shop REDIS_URL API_URL>"
                    .into(),
            ),
        },
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

async fn http_scale(stores: Stores) -> Result<(), String> {
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
