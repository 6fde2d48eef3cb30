//! Side-by-side benchmarks of modelctx against rmcp and against raw baselines.
//!
//! This package is unpublished. `cargo xtask bench [--quick] [--json PATH]` builds it in
//! release mode and runs its binaries; see `BENCHMARKS.md` next to this crate's
//! `Cargo.toml` for the scenarios, how to read the table, and the latest figures.
//!
//! - `bench-load`: the load generator. One process per measurement, so no scenario warms
//!   caches or allocators for the next one.
//! - `bench-server-modelctx`, `bench-server-rmcp`, `bench-server-baseline`: the same
//!   `echo` tool (returns its `text` argument) served over stdio (`stdio`) or streamable
//!   HTTP on loopback (`http <mode>`); with `shop`, the public benchmark's three shop
//!   tools ([`shop`]) instead, which call a seeded `redis-server` and `bench-shop-api`.
//!
//! - `bench-soak`: the soak (`cargo xtask soak`, see [`soak`]): stateful HTTP sessions
//!   with churn against `bench-server-soak` (the modelctx echo server with its live
//!   heap counted), and the server's memory, descriptors and tasks round after round.
//!
//! - `compile/modelctx`, `compile/rmcp`: minimal stdio echo servers, each its own
//!   workspace, whose clean release builds `cargo xtask bench --compile` times.
//!
//! Every SDK-specific line lives in [`modelctx_side`] or `rmcp_side` (feature `rmcp`, which
//! `cargo xtask bench` turns on: the comparison SDK is not built by `cargo test`); the raw baselines
//! (the physical limit of each path) are in [`baseline`]. The stdio and HTTP load
//! generators speak the wire protocol themselves, so both SDKs' servers face exactly the
//! same client.
//!
//! ```
//! let stats = modelctx_bench::stats::Latencies::from_micros(vec![3.0, 1.0, 2.0]);
//! assert_eq!(stats.percentile(50.0), 2.0);
//! ```
//!
//! # How it works
//!
//! rmcp appears only here (pinned, default features off). `bench-load` runs once per
//! (scenario, target, round) as a fresh process, and the targets (modelctx, rmcp, the raw
//! baseline) are interleaved each round; the table shows medians and the ratios to rmcp and
//! to the baseline. `--scale-out` runs modelctx alone on `modelctx_side::serve_scale`: one
//! instance with the in-memory stores against the Redis stores, and one instance against
//! two sharing one Redis; `bench-load` then starts its own `redis-server`. The soak server
//! answers `count` on its stdin with tokio's live-task count and its live heap, which
//! cannot be counted from outside; RSS, threads and descriptors are read from `/proc`. The
//! compile-cost servers under `compile/` are separate workspaces with their own lock files.
//! `rmcp-skills-peer` (feature `rmcp-skills`) is not a benchmark: it is rmcp's side of the
//! skills legs of `cargo xtask interop`, here because this crate is where rmcp is a
//! dependency. `bench-uri-template` is run by hand.

pub mod baseline;
pub mod modelctx_side;
pub mod process;
#[cfg(feature = "rmcp")]
pub mod rmcp_side;
pub mod shop;
pub mod soak;
pub mod stats;
pub mod wire;

/// The tool every server offers.
pub const TOOL: &str = "echo";

/// The tool that asks the client to confirm (form elicitation) before it echoes its
/// `text` argument: one multi round-trip request in protocol 2026-07-28.
pub const ASK_TOOL: &str = "confirm";

/// The key under which the baseline and rmcp ask for the confirmation (modelctx names
/// its own; the load generator reads whichever key the server chose).
pub const ASK_KEY: &str = "confirm";

/// The text the load generator sends and expects back.
pub const TEXT: &str = "the quick brown fox jumps over the lazy dog";

/// The protocol version the raw load generators ask for; both SDKs speak it.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// The arguments of one echo call, `{"text": TEXT}`, for either SDK's request type.
pub fn echo_arguments() -> serde_json::Map<String, serde_json::Value> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".into(), TEXT.into());
    arguments
}

/// Checks that an echo result from `sdk`, serialised, carries [`TEXT`].
pub fn check_echo(sdk: &str, result: &impl serde::Serialize) -> Result<(), String> {
    let text = serde_json::to_string(result).map_err(|e| e.to_string())?;
    if text.contains(TEXT) {
        Ok(())
    } else {
        Err(format!("{sdk} echo returned {text}"))
    }
}

/// How a streamable HTTP server is configured for a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMode {
    /// A session per client (`Mcp-Session-Id`), each answer on its own SSE stream.
    Stateful,
    /// No sessions, each answer as one `application/json` body. (rmcp offers JSON
    /// answers only without sessions, so both SDKs run stateless here.)
    Json,
    /// No sessions, each answer on its own SSE stream.
    Stateless,
    /// Protocol 2026-07-28: no handshake, every request carries its envelope in `_meta`
    /// and the `Mcp-Method`/`Mcp-Name` headers; answers as `application/json`. The
    /// server is configured as for the handshake era (both eras on one endpoint).
    Modern,
    /// Protocol 2026-07-28, the `confirm` tool: each call is two POSTs, the first
    /// answered `input_required` (a form elicitation and a sealed `requestState`), the
    /// retry carrying the confirmation answered with the echo.
    Mrtr,
}

impl HttpMode {
    /// Every mode, in table order.
    pub const ALL: [HttpMode; 5] = [
        HttpMode::Stateful,
        HttpMode::Json,
        HttpMode::Stateless,
        HttpMode::Modern,
        HttpMode::Mrtr,
    ];

    /// The mode's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            HttpMode::Stateful => "stateful",
            HttpMode::Json => "json",
            HttpMode::Stateless => "stateless",
            HttpMode::Modern => "modern",
            HttpMode::Mrtr => "mrtr",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the server keeps a session per client.
    pub fn stateful(self) -> bool {
        self == HttpMode::Stateful
    }

    /// Whether the clients speak protocol 2026-07-28 (no handshake).
    pub fn modern(self) -> bool {
        matches!(self, HttpMode::Modern | HttpMode::Mrtr)
    }

    /// Whether the server answers with `application/json` bodies.
    pub fn json(self) -> bool {
        matches!(self, HttpMode::Json | HttpMode::Modern | HttpMode::Mrtr)
    }
}

/// Waits until this process's stdin reaches end of file: how the load generator tells a
/// server child to stop (it drops the pipe), with no signal and no port to poll.
pub async fn stdin_closed() {
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    while let Ok(n) = stdin.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

/// Serves on 127.0.0.1 for the load generator: binds an ephemeral port, prints
/// `listening ADDR` on stdout, and runs `serve` on the listener until it ends or stdin
/// closes (see [`stdin_closed`]).
pub async fn serve_loopback<F, Fut>(serve: F) -> Result<(), String>
where
    F: FnOnce(tokio::net::TcpListener) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let listener = bind_loopback().await?;
    tokio::select! {
        outcome = serve(listener) => outcome,
        () = stdin_closed() => Ok(()),
    }
}

/// Binds an ephemeral port on 127.0.0.1 and prints `listening ADDR` on stdout, which is
/// how the load generator learns where a server child listens.
pub async fn bind_loopback() -> Result<tokio::net::TcpListener, String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening {addr}");
    Ok(listener)
}

/// The scenarios the load generator names on every `bench-server-*` command line, parsed
/// in one place so that each side accepts the same words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario<'a> {
    /// `stdio`: serve on stdin/stdout.
    Stdio,
    /// `http MODE`: serve streamable HTTP on loopback (see [`serve_loopback`]).
    Http(HttpMode),
    /// `shop REDIS_URL API_ADDR`: the public benchmark's shop tools, as `http`.
    Shop {
        /// The seeded Redis's URL.
        redis: &'a str,
        /// `bench-shop-api`'s address, without a scheme.
        api: &'a str,
    },
    /// Any other words: a program's own extras, or a usage error.
    Other(&'a [String]),
}

impl<'a> Scenario<'a> {
    /// Parses a server's arguments (without the program name); an unknown HTTP mode is an
    /// error.
    pub fn parse(args: &'a [String]) -> Result<Self, String> {
        Ok(match args {
            [word] if word == "stdio" => Scenario::Stdio,
            [word, mode] if word == "http" => Scenario::Http(
                HttpMode::parse(mode).ok_or_else(|| format!("unknown HTTP mode {mode:?}"))?,
            ),
            [word, redis, api] if word == "shop" => Scenario::Shop { redis, api },
            other => Scenario::Other(other),
        })
    }
}

/// A bench program's exit: success, or its error on stderr under its name and a failing
/// code.
pub fn exit(program: &str, outcome: Result<(), String>) -> std::process::ExitCode {
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The arguments a program was started with, without its own name.
pub fn args() -> Vec<String> {
    std::env::args().skip(1).collect()
}
