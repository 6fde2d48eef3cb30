//! The soak (`cargo xtask soak`): stateful streamable HTTP sessions with churn, three
//! rounds by default, against `bench-server-modelctx soak` (see `modelctx_bench::soak`).
//!
//! ```text
//! bench-soak [--seconds N] [--sessions N] [--connections N] [--rounds N]
//! ```
//!
//! Prints the figures as a table on stderr and as one JSON object on stdout; exits 1
//! when a check fails (with the figures), 2 on bad arguments.

use std::process::ExitCode;
use std::time::Duration;

use modelctx_bench::soak::{self, MEMORY_TOLERANCE, Plan, Report, Resources};

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
        Ok(exe) => exe.with_file_name(format!(
            "bench-server-modelctx{}",
            std::env::consts::EXE_SUFFIX
        )),
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
            "  {what:<34} rss {:>9.0} KiB  fds {:>5}  threads {:>3}  tasks {:>6}",
            r.rss_kib, r.fds, r.threads, r.tasks
        );
    };
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
        "  memory tolerance: a round at most max({:.0} %, {:.0} KiB) above the round before, from round {} on",
        MEMORY_TOLERANCE.0 * 100.0,
        MEMORY_TOLERANCE.1,
        if report.rounds.len() > 2 { 3 } else { 2 }
    );
    if let [one, two, _, ..] = &report.rounds[..] {
        eprintln!(
            "  round 2 over round 1 (allocator warm-up, not held): {:+.1} % after, {:+.1} % with every session open",
            (two.after.rss_kib / one.after.rss_kib - 1.0) * 100.0,
            (two.loaded.rss_kib / one.loaded.rss_kib - 1.0) * 100.0
        );
    }
}
