//! `cargo xtask test`: everything CI checks, in one command — formatting, lints, docs,
//! every test of the workspace, the layering, the conformance report, the benchmarks'
//! smoke run, the one-minute soak, the external proof (`cargo xtask interop`: installs its pinned tools
//! into `.tools/` on first use) and the OAuth flow in a real browser (`cargo xtask
//! browser`: installs Debian's Chromium on first use). Before the tests,
//! `xtask/system/redis.sh` installs Debian's `redis-server` when it is missing (the
//! modelctx-redis tests start their own servers and fail, never skip, without it).

use std::path::Path;
use std::process::{Command, ExitCode};

/// One step: a description and the cargo arguments that run it (or, with `script`, the
/// shell script under the workspace root that runs instead).
struct Step {
    what: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    script: Option<&'static str>,
}

/// Features no workspace member turns on that CI must still build, lint and test:
/// modelctx-redis's OAuth store, the facade's `redis` module (the guide's scale-out
/// page), and the command-line client's HTTPS (its test against a loopback TLS server;
/// the refusal without TLS is tested by `cargo test -p modelctx-cli`). Turned on in the
/// one workspace build (no extra one): the crates behind them are members already, and
/// the facade's tests turn rustls on anyway.
const OPT_IN: &str = "modelctx-redis/oauth,modelctx/redis,modelctx-cli/rustls";

const STEPS: &[Step] = &[
    Step {
        what: "formatting",
        args: &["fmt", "--all", "--", "--check"],
        env: &[],
        script: None,
    },
    Step {
        what: "lints",
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--features",
            OPT_IN,
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
        script: None,
    },
    Step {
        what: "docs",
        args: &["doc", "--workspace", "--no-deps", "--features", OPT_IN],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
        script: None,
    },
    Step {
        what: "system packages the tests need (redis-server)",
        args: &[],
        env: &[],
        script: Some("xtask/system/redis.sh"),
    },
    Step {
        what: "tests (unit, integration, doc, conformance trials, tidy)",
        args: &["test", "--workspace", "--features", OPT_IN],
        env: &[],
        script: None,
    },
    Step {
        what: "conformance report",
        args: &["xtask", "conformance"],
        env: &[],
        script: None,
    },
    Step {
        what: "benchmarks smoke run (every scenario once, answers verified)",
        args: &["xtask", "bench", "--quick"],
        env: &[],
        script: None,
    },
    Step {
        what: "scale-out benchmarks smoke run (Redis stores, two instances; ~5 s)",
        args: &["xtask", "bench", "--scale-out", "--quick"],
        env: &[],
        script: None,
    },
    Step {
        what: "soak, one minute of churn: 10,000 stateful HTTP sessions, three rounds of 20 s (the dev build of the bench step); no descriptor or task leak, memory flat",
        args: &["xtask", "soak", "--seconds", "20", "--dev"],
        env: &[],
        script: None,
    },
    Step {
        what: "fuzzing smoke run: every cargo-fuzz target built with nightly and run 3 s (installs cargo-fuzz into .tools/ when missing)",
        args: &["xtask", "fuzz", "--secs", "3"],
        env: &[],
        script: None,
    },
    Step {
        what: "external proof: the official MCP conformance suite and cross-SDK interop",
        args: &["xtask", "interop"],
        env: &[],
        script: None,
    },
    Step {
        what: "end to end in a browser: OAuth consent in headless Chromium (fails under CI=true without it)",
        args: &["xtask", "browser"],
        env: &[],
        script: None,
    },
];

/// Runs every step in order, stopping at the first failure.
pub(crate) fn main(root: &Path) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for step in STEPS {
        let mut command = match step.script {
            Some(script) => {
                println!("== xtask test: {} (sh {script})", step.what);
                let mut c = Command::new("sh");
                c.arg(root.join(script));
                c
            }
            None => {
                println!(
                    "== xtask test: {} (cargo {})",
                    step.what,
                    step.args.join(" ")
                );
                let mut c = Command::new(&cargo);
                c.args(step.args);
                c
            }
        };
        let status = command
            .envs(step.env.iter().copied())
            .current_dir(root)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("xtask test: {} failed ({s})", step.what);
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!(
                    "xtask test: cannot run {}: {e}",
                    step.script.unwrap_or("cargo")
                );
                return ExitCode::FAILURE;
            }
        }
    }
    println!("xtask test: all steps passed");
    ExitCode::SUCCESS
}
