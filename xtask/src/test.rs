//! `cargo xtask test`: everything CI checks, in one command — formatting, lints, docs,
//! every test of the workspace, the layering, the conformance report, the benchmarks'
//! smoke run, the one-minute soak, the external proof (`cargo xtask interop`: installs its pinned tools
//! into `.tools/` on first use), the cross-SDK benchmarks' smoke run on those tools, and the OAuth flow and MCP Apps views in a real browser (`cargo
//! xtask browser`: installs Debian's Chromium on first use).
//!
//! Before the tests it runs `xtask/system/redis.sh` and `xtask/system/balancers.sh`,
//! which install Debian's `redis-server`, nginx and HAProxy when they are missing (one
//! `apt-get update` on failure; sudo when not root) and print their versions, so the
//! modelctx-redis tests and the two-instance conformance legs find what to start (they
//! fail, never skip, without it). Clippy, docs and tests run with the opt-in features no member turns on
//! (`modelctx-redis/oauth`, `modelctx/redis`, `modelctx-cli/rustls`) in the same build.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use modelctx_conformance::services;

use crate::conformance;

/// One step: a description and the cargo arguments that run it (or, with `script`, the
/// shell script under the workspace root that runs instead; with `run`, a function of
/// xtask's own).
struct Step {
    what: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    script: Option<&'static str>,
    run: Option<StepFn>,
}

/// A step that is a function of xtask's own.
type StepFn = fn(&Path) -> Result<(), String>;

/// Every cell of the conformance suite runs here, the two-instance ones included (their
/// `redis-server`, nginx and HAProxy are installed by the steps before): never reported
/// as not run.
const EVERY_CELL: &[(&str, &str)] = &[(services::REQUIRE_ENV, "1")];

/// Features no workspace member turns on that CI must still build, lint and test:
/// modelctx-redis's OAuth store, the facade's `redis` module (the guide's scale-out
/// page), and the command-line client's HTTPS (its test against a loopback TLS server;
/// the refusal without TLS is tested by `cargo test -p modelctx-cli`). Turned on in the
/// one workspace build (no extra one): the crates behind them are members already, and
/// the facade's tests turn rustls on anyway.
macro_rules! opt_in {
    () => {
        "modelctx-redis/oauth,modelctx/redis,modelctx-cli/rustls"
    };
}
const OPT_IN: &str = opt_in!();

/// What the lints and docs build on top of [`OPT_IN`]: the benchmarks' rmcp side, which
/// the tests leave out (it compiles the comparison SDK; `cargo xtask bench` runs it).
const LINTED: &str = concat!(opt_in!(), ",modelctx-bench/rmcp");

const STEPS: &[Step] = &[
    Step {
        what: "formatting",
        args: &["fmt", "--all", "--", "--check"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "lints",
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--features",
            LINTED,
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "docs",
        args: &["doc", "--workspace", "--no-deps", "--features", LINTED],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
        script: None,
        run: None,
    },
    Step {
        what: "the crates as the registry would build them: publish dry run, each feature alone, each crate's docs alone, the recorded public API (cargo xtask release-check)",
        args: &["xtask", "release-check"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "the main command on a bare machine: `cargo xtask conformance` with redis-server, nginx, HAProxy, node and python hidden from PATH and CI unset passes, the two-instance cells shown as not run",
        args: &[],
        env: &[],
        script: None,
        run: Some(conformance::on_a_bare_machine),
    },
    Step {
        what: "system packages the tests need (redis-server)",
        args: &[],
        env: &[],
        script: Some("xtask/system/redis.sh"),
        run: None,
    },
    Step {
        what: "system packages the tests need (nginx, HAProxy)",
        args: &[],
        env: &[],
        script: Some("xtask/system/balancers.sh"),
        run: None,
    },
    Step {
        what: "tests (unit, integration, doc, conformance trials, tidy)",
        args: &["test", "--workspace", "--features", OPT_IN],
        env: EVERY_CELL,
        script: None,
        run: None,
    },
    Step {
        what: "conformance report",
        args: &["xtask", "conformance"],
        env: EVERY_CELL,
        script: None,
        run: None,
    },
    Step {
        what: "benchmarks smoke run (every scenario once, answers verified)",
        args: &["xtask", "bench", "--quick"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "scale-out benchmarks smoke run (Redis stores, two instances, behind nginx and HAProxy; ~6 s)",
        args: &["xtask", "bench", "--scale-out", "--quick"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "soak, one minute of churn: 10,000 stateful HTTP sessions, three rounds of 20 s (the dev build of the bench step); no descriptor or task leak, memory flat",
        args: &["xtask", "soak", "--seconds", "20", "--dev"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "fuzzing smoke run: every cargo-fuzz target built with nightly and run 3 s (installs cargo-fuzz into .tools/ when missing)",
        args: &["xtask", "fuzz", "--secs", "3"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "external proof: the official MCP conformance suite and cross-SDK interop",
        args: &["xtask", "interop"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "cross-SDK benchmarks smoke run (the TypeScript and Python SDKs' echo servers the interop step installed, every shared scenario once, answers verified; ~30 s)",
        args: &["xtask", "bench", "--sdks", "--quick"],
        env: &[],
        script: None,
        run: None,
    },
    Step {
        what: "end to end in a browser: OAuth consent and MCP Apps views in headless Chromium (fails under CI=true without it)",
        args: &["xtask", "browser"],
        env: &[],
        script: None,
        run: None,
    },
];

/// Runs every step in order, stopping at the first failure, and prints how long each
/// step took (the table CI's log ends with).
pub(crate) fn main(root: &Path) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut times = Vec::new();
    for step in STEPS {
        let started = Instant::now();
        let outcome = run_step(step, root, &cargo);
        times.push((step.what, started.elapsed()));
        if let Err(e) = outcome {
            eprintln!("xtask test: {} failed: {e}", step.what);
            print_times(&times);
            return ExitCode::FAILURE;
        }
    }
    print_times(&times);
    println!("xtask test: all steps passed");
    ExitCode::SUCCESS
}

fn run_step(step: &Step, root: &Path, cargo: &str) -> Result<(), String> {
    let mut command = match (step.run, step.script) {
        (Some(run), _) => {
            println!("== xtask test: {}", step.what);
            return run(root);
        }
        (None, Some(script)) => {
            println!("== xtask test: {} (sh {script})", step.what);
            let mut c = Command::new("sh");
            c.arg(root.join(script));
            c
        }
        (None, None) => {
            println!(
                "== xtask test: {} (cargo {})",
                step.what,
                step.args.join(" ")
            );
            let mut c = Command::new(cargo);
            c.args(step.args);
            c
        }
    };
    let status = command
        .envs(step.env.iter().copied())
        .current_dir(root)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", step.script.unwrap_or("cargo")))?;
    if status.success() {
        Ok(())
    } else {
        Err(status.to_string())
    }
}

fn print_times(times: &[(&str, Duration)]) {
    println!("\nxtask test: step times");
    for (what, took) in times {
        let what: String = what.chars().take(90).collect();
        println!("  {:>7.1} s  {what}", took.as_secs_f64());
    }
    let total: Duration = times.iter().map(|(_, t)| *t).sum();
    println!("  {:>7.1} s  in all", total.as_secs_f64());
}
