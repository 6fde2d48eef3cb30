//! The soak (`cargo xtask soak`): stateful streamable HTTP sessions with churn, three
//! rounds by default, against `bench-server-soak` (see `modelctx_bench::soak`).
//!
//! ```text
//! bench-soak [--seconds N] [--sessions N] [--connections N] [--rounds N]
//! ```
//!
//! Prints the figures as a table on stderr and as one JSON object on stdout; exits 1
//! when a check fails (with the figures), 2 on bad arguments.

use std::process::ExitCode;
use std::time::Duration;

use modelctx_bench::soak::{
    self, BLOCK_TOLERANCE, HEAP_TOLERANCE, Plan, RSS_CEILING, RSS_TOLERANCE, Report, Resources,
};

const USAGE: &str = "usage: bench-soak [--seconds N] [--sessions N] [--connections N] [--rounds N]";

#[tokio::main]
async fn main() -> ExitCode {
    let plan = match parse(std::env::args().skip(1)) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("bench-soak: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let server = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(format!("bench-server-soak{}", std::env::consts::EXE_SUFFIX)),
        Err(e) => {
            eprintln!("bench-soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "bench-soak: {} sessions over {} connections, {} rounds of {} s churn",
        plan.sessions,
        plan.connections,
        plan.rounds,
        plan.churn.as_secs()
    );
    match soak::run(&server, &plan).await {
        Ok(report) => {
            print_report(&report);
            println!("{}", report.to_json());
            if report.failures.is_empty() {
                eprintln!("bench-soak: passed");
                ExitCode::SUCCESS
            } else {
                for failure in &report.failures {
                    eprintln!("bench-soak: FAILED: {failure}");
                }
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("bench-soak: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: impl Iterator<Item = String>) -> Result<Plan, String> {
    let mut plan = Plan {
        sessions: 10_000,
        connections: 64,
        churn: Duration::from_secs(60),
        rounds: 3,
    };
    let mut args = args;
    while let Some(arg) = args.next() {
        let mut number = |min: u64| {
            args.next()
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|&n| n >= min)
                .ok_or(format!("{arg} needs a number of at least {min}"))
        };
        match arg.as_str() {
            "--seconds" => plan.churn = Duration::from_secs(number(1)?),
            "--sessions" => plan.sessions = number(1)? as usize,
            "--connections" => plan.connections = number(1)? as usize,
            "--rounds" => plan.rounds = number(2)? as usize,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if plan.sessions < plan.connections {
        return Err("--sessions must be at least --connections".into());
    }
    Ok(plan)
}

fn print_report(report: &Report) {
    let line = |what: &str, r: &Resources| {
        eprintln!(
            "  {what:<34} rss {:>9.0} KiB  heap {:>9.0} KiB in {:>8} blocks  fds {:>5}  threads {:>3}  tasks {:>6}",
            r.rss_kib,
            r.heap_bytes as f64 / 1024.0,
            r.heap_blocks,
            r.fds,
            r.threads,
            r.tasks
        );
    };
    eprintln!("  server's GLIBC_TUNABLES: {:?}", report.malloc_tuning);
    line("before", &report.before);
    for (i, round) in report.rounds.iter().enumerate() {
        let n = i + 1;
        eprintln!(
            "  round {n}: {} calls ({:.0}/s), {} sessions opened, {} deleted, {} connections, {:.1} s, settled in {:.1} s",
            round.calls,
            round.calls as f64 / round.seconds,
            round.opened,
            round.deleted,
            round.connections,
            round.seconds,
            round.settle_seconds
        );
        line(&format!("round {n}, every session open"), &round.loaded);
        line(&format!("round {n}, after"), &round.after);
    }
    eprintln!(
        "  held after every round: the baseline's descriptors, tasks and threads; live heap within max({:.0} %, {:.0} KiB) and max({:.0} %, {:.0}) blocks of the baseline's",
        HEAP_TOLERANCE.0 * 100.0,
        HEAP_TOLERANCE.1,
        HEAP_TOLERANCE.0 * 100.0,
        BLOCK_TOLERANCE,
    );
    eprintln!(
        "  held from round 2 on: resident set within max({:.0} %, {:.0} KiB) of round 1's peak, and the last round's within max({:.0} %, {:.0} KiB) of the highest before it (plus what more the sessions held)",
        RSS_CEILING * 100.0,
        RSS_TOLERANCE.1,
        RSS_TOLERANCE.0 * 100.0,
        RSS_TOLERANCE.1,
    );
    if let [one, later @ ..] = &report.rounds[..] {
        for (i, round) in later.iter().enumerate() {
            let change = |a: f64, b: f64| (b / a - 1.0) * 100.0;
            eprintln!(
                "  round {} over round 1: resident {:+.2} % with every session open, {:+.2} % after; live heap {:+.2} % with every session open, {:+.2} % after",
                i + 2,
                change(one.loaded.rss_kib, round.loaded.rss_kib),
                change(one.after.rss_kib, round.after.rss_kib),
                change(one.loaded.heap_bytes as f64, round.loaded.heap_bytes as f64),
                change(one.after.heap_bytes as f64, round.after.heap_bytes as f64),
            );
        }
    }
}
