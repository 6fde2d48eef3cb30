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
//!
//! The `count` lines are read and answered on a thread of their own, with blocking
//! reads and writes, not through tokio's stdin and stdout: those run each read and
//! write on tokio's blocking pool, which starts threads as they overlap and retires
//! them after ten idle seconds, so the server's threads (and the thread-local
//! allocations each thread makes, counted in the live heap) varied from one
//! measurement to the next (CI: 4 threads after round 1, 7 after round 3, 12 blocks
//! more). The server runs no blocking-pool work now: its threads are the runtime's
//! workers, this thread and the main one, the same at every measurement.
//!
//! It is its own program because it counts its live heap: `#[global_allocator]` is a
//! `stats_alloc` wrapper around the system allocator (two atomic additions per allocation,
//! kept out of the server `cargo xtask bench` times). It answers `count` on a plain thread
//! of its own with blocking I/O, since tokio's stdin and stdout run on the blocking pool,
//! whose threads come and go and whose thread-local allocations would show in the heap; so
//! the server's threads are fixed (main, two workers, the control thread) and the verdict
//! checks them too.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static HEAP: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

#[tokio::main]
async fn main() -> ExitCode {
    let outcome = match modelctx_bench::args().as_slice() {
        [max] => match max.parse() {
            Ok(max) => serve(max).await,
            Err(_) => Err(format!("MAX must be a session count, not {max:?}")),
        },
        _ => Err("usage: bench-server-soak MAX".into()),
    };
    modelctx_bench::exit("bench-server-soak", outcome)
}

/// Serves until stdin closes, answering each `count` line.
async fn serve(max_sessions: usize) -> Result<(), String> {
    let listener = modelctx_bench::bind_loopback().await?;
    let metrics = tokio::runtime::Handle::current().metrics();
    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("soak-control".into())
        .spawn(move || {
            control(&metrics);
            drop(closed);
        })
        .map_err(|e| format!("cannot start the control thread: {e}"))?;
    tokio::select! {
        outcome = modelctx_bench::modelctx_side::serve_soak(listener, max_sessions) => outcome,
        _ = stdin_closed => Ok(()),
    }
}

/// Answers each `count` line on stdin until stdin closes (or stdout does).
fn control(metrics: &tokio::runtime::RuntimeMetrics) {
    let mut stdout = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim() != "count" {
            continue;
        }
        let heap = HEAP.stats();
        let answered = writeln!(
            stdout,
            "tasks {} heap {} blocks {}",
            metrics.num_alive_tasks(),
            heap.bytes_allocated.saturating_sub(heap.bytes_deallocated),
            heap.allocations.saturating_sub(heap.deallocations),
        )
        .and_then(|()| stdout.flush());
        if answered.is_err() {
            break;
        }
    }
}
