//! The rmcp side of the stdio and streamable HTTP scenarios (see the crate docs).
//!
//! ```text
//! bench-server-rmcp stdio        serve on stdin/stdout until stdin closes
//! bench-server-rmcp http MODE    serve on 127.0.0.1 (an ephemeral port, printed as
//!                                 "listening ADDR" on stdout) until stdin closes;
//!                                 MODE is stateful, json or stateless
//! bench-server-rmcp shop REDIS_URL API_URL
//!                                 the public benchmark's shop tools, session-less
//!                                 with JSON answers, as `http`
//! ```

use std::process::ExitCode;

use modelctx_bench::{HttpMode, Scenario};

#[tokio::main]
async fn main() -> ExitCode {
    modelctx_bench::exit("bench-server-rmcp", run(&modelctx_bench::args()).await)
}

async fn run(args: &[String]) -> Result<(), String> {
    match Scenario::parse(args)? {
        Scenario::Stdio => stdio().await,
        Scenario::Http(mode) => http(mode).await,
        Scenario::Shop { redis, api } => shop(redis, api).await,
        Scenario::Other(_) => Err(
            "usage: bench-server-rmcp <stdio | http stateful|json|stateless | shop REDIS_URL API_URL>"
                .into(),
        ),
    }
}

async fn stdio() -> Result<(), String> {
    modelctx_bench::rmcp_side::serve_stdio().await
}

async fn http(mode: HttpMode) -> Result<(), String> {
    modelctx_bench::serve_loopback(|listener| modelctx_bench::rmcp_side::serve_http(listener, mode))
        .await
}

async fn shop(redis: &str, api: &str) -> Result<(), String> {
    let shop = modelctx_bench::shop::Shop::connect(redis, &format!("http://{api}")).await?;
    modelctx_bench::serve_loopback(|listener| modelctx_bench::rmcp_side::serve_shop(listener, shop))
        .await
}
