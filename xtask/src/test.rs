//! `cargo xtask test`: everything CI checks, in one command — formatting, lints, docs,
//! every test of the workspace, the layering, the conformance report, the benchmarks'
//! smoke run, the external proof (`cargo xtask interop`: installs its pinned tools
//! into `.tools/` on first use) and the OAuth flow in a real browser (`cargo xtask
//! browser`: installs Debian's Chromium on first use).

use std::path::Path;
use std::process::{Command, ExitCode};

/// One step: a description and the cargo arguments that run it.
struct Step {
    what: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

const STEPS: &[Step] = &[
    Step {
        what: "formatting",
        args: &["fmt", "--all", "--", "--check"],
        env: &[],
    },
    Step {
        what: "lints",
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
    Step {
        what: "docs",
        args: &["doc", "--workspace", "--no-deps"],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
    },
    Step {
        what: "tests (unit, integration, doc, conformance trials, tidy)",
        args: &["test", "--workspace"],
        env: &[],
    },
    Step {
        what: "conformance report",
        args: &["xtask", "conformance"],
        env: &[],
    },
    Step {
        what: "benchmarks smoke run (every scenario once, answers verified)",
        args: &["xtask", "bench", "--quick"],
        env: &[],
    },
    Step {
        what: "fuzzing smoke run: every cargo-fuzz target built with nightly and run 3 s (installs cargo-fuzz into .tools/ when missing)",
        args: &["xtask", "fuzz", "--secs", "3"],
        env: &[],
    },
    Step {
        what: "external proof: the official MCP conformance suite and cross-SDK interop",
        args: &["xtask", "interop"],
        env: &[],
    },
    Step {
        what: "end to end in a browser: OAuth consent in headless Chromium (fails under CI=true without it)",
        args: &["xtask", "browser"],
        env: &[],
    },
];

/// Runs every step in order, stopping at the first failure.
pub(crate) fn main(root: &Path) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for step in STEPS {
        println!(
            "== xtask test: {} (cargo {})",
            step.what,
            step.args.join(" ")
        );
        let status = Command::new(&cargo)
            .args(step.args)
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
                eprintln!("xtask test: cannot run cargo: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("xtask test: all steps passed");
    ExitCode::SUCCESS
}
