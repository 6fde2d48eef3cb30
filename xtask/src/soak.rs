//! `cargo xtask soak`: 10,000 stateful streamable HTTP sessions with churn, three rounds,
//! then the verdict on the server's memory, descriptors and tasks.
//!
//! Builds the `modelctx-bench` binaries (release; `--dev` reuses the dev build, what
//! `cargo xtask test` runs) and runs `bench-soak`, which starts `bench-server-soak`
//! and drives it; see `modelctx_bench::soak` for the design and
//! `crates/modelctx-bench/BENCHMARKS.md` for recorded runs. Exits non-zero, with the
//! figures, when a check fails.

use std::path::Path;
use std::process::{Command, ExitCode};

pub(crate) const USAGE: &str = "\
cargo xtask soak [--minutes N | --seconds N] [--rounds N] [--sessions N] [--connections N] [--dev]
    each round (default 3, at least 2) churns for the given time (default 1 minute) with
    --sessions (default 10,000) open at once over --connections (default 64); --dev: the
    dev profile (what `cargo xtask test` runs: its bench step has built it)";

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Options {
    seconds: u64,
    rounds: u64,
    sessions: u64,
    connections: u64,
    dev: bool,
}

pub(crate) fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        seconds: 60,
        rounds: 3,
        sessions: 10_000,
        connections: 64,
        dev: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |min: u64| {
            it.next()
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|&n| n >= min)
                .ok_or(format!("{arg} needs a number of at least {min}"))
        };
        match arg.as_str() {
            "--minutes" => options.seconds = number(1)?.saturating_mul(60),
            "--seconds" => options.seconds = number(1)?,
            "--rounds" => options.rounds = number(2)?,
            "--sessions" => options.sessions = number(1)?,
            "--connections" => options.connections = number(1)?,
            "--dev" => options.dev = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if options.sessions < options.connections {
        return Err("--sessions must be at least --connections".into());
    }
    Ok(options)
}

/// Runs the subcommand.
pub(crate) fn main(args: &[String], root: &Path) -> ExitCode {
    let Some(options) = crate::parsed_args("soak", USAGE, parse_args(args)) else {
        return ExitCode::from(2);
    };
    let load = match crate::bench::build(root, !options.dev) {
        Ok(path) => path,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    let soak = load.with_file_name(format!("bench-soak{}", std::env::consts::EXE_SUFFIX));
    let status = Command::new(&soak)
        .args(["--seconds", &options.seconds.to_string()])
        .args(["--rounds", &options.rounds.to_string()])
        .args(["--sessions", &options.sessions.to_string()])
        .args(["--connections", &options.connections.to_string()])
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("soak: failed ({s})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("soak: cannot run {}: {e}", soak.display());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let args = |a: &[&str]| parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let default = args(&[]).unwrap();
        assert_eq!(
            default,
            Options {
                seconds: 60,
                rounds: 3,
                sessions: 10_000,
                connections: 64,
                dev: false
            }
        );
        assert_eq!(args(&["--minutes", "5"]).unwrap().seconds, 300);
        let ci = args(&["--seconds", "20", "--dev"]).unwrap();
        assert_eq!((ci.seconds, ci.dev), (20, true));
        assert_eq!(args(&["--rounds", "2"]).unwrap().rounds, 2);
        assert!(args(&["--rounds", "1"]).is_err());
        assert!(args(&["--minutes", "0"]).is_err());
        assert!(args(&["--sessions", "10", "--connections", "20"]).is_err());
        assert!(args(&["--hours", "1"]).is_err());
    }
}
