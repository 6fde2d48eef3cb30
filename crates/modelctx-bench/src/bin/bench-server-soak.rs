//! The soak's server (`cargo xtask soak`, driven by `bench-soak`; see
//! `modelctx_bench::soak`): the echo tool over stateful streamable HTTP.
//!
//! ```text
//! bench-server-soak MAX    serve stateful HTTP (at most MAX sessions) on 127.0.0.1 (an
//!                          ephemeral port, printed as "listening ADDR" on stdout) until
//!                          stdin closes; each `count` line on stdin is answered with
//!                          `tasks N heap BYTES blocks M` on stdout
//! ```
//!
//! N is the runtime's live tokio tasks, BYTES and M the bytes and blocks allocated and
//! not yet freed (the live heap): what the load generator cannot read from outside. The
//! heap is counted by wrapping the system allocator (`stats_alloc`), which is why the
//! soak has its own server program: the counting (two atomic additions per allocation)
//! stays out of the `bench-server-modelctx` whose speed `cargo xtask bench` compares.

use std::process::ExitCode;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

#[global_allocator]
static HEAP: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [max] => match max.parse() {
            Ok(max) => serve(max).await,
            Err(_) => Err(format!("MAX must be a session count, not {max:?}")),
        },
        _ => Err("usage: bench-server-soak MAX".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-server-soak: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves until stdin closes, answering each `count` line.
async fn serve(max_sessions: usize) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening {addr}");
    let metrics = tokio::runtime::Handle::current().metrics();
    let control = async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut stdout = tokio::io::stdout();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim() == "count" {
                let heap = HEAP.stats();
                let answer = format!(
                    "tasks {} heap {} blocks {}\n",
                    metrics.num_alive_tasks(),
                    heap.bytes_allocated.saturating_sub(heap.bytes_deallocated),
                    heap.allocations.saturating_sub(heap.deallocations),
                );
                if stdout.write_all(answer.as_bytes()).await.is_err()
                    || stdout.flush().await.is_err()
                {
                    break;
                }
            }
        }
    };
    tokio::select! {
        outcome = modelctx_bench::modelctx_side::serve_soak(listener, max_sessions) => outcome,
        () = control => Ok(()),
    }
}
