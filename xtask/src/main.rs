//! `cargo xtask`: project automation.
//!
//! - `cargo xtask tidy`: checks that the crate layering holds (see ARCHITECTURE.md) and
//!   that `conformance/requirements.lock` pins `conformance/requirements.toml`.
//! - `cargo xtask conformance [--json PATH]`: runs the conformance suite and prints its
//!   report (see the `modelctx-conformance` crate docs); `--update-lock` re-pins the
//!   manifest.
//! - `cargo xtask pin`: the same as `cargo xtask conformance --update-lock`.
//! - `cargo xtask bench [--quick] [--json PATH]`: modelctx against rmcp and raw
//!   baselines, side by side (see `crates/modelctx-bench/BENCHMARKS.md`).
//! - `cargo xtask test`: what CI runs — formatting, lints, docs, every test, tidy and
//!   the conformance report.
//! - `cargo xtask interop`: the official MCP conformance suite against the
//!   `conformance-server` and `conformance-client` examples (see `interop.rs`).
//! - `cargo xtask browser`: in headless Chromium, the OAuth authorization-code flow
//!   through the bundled authorization server's consent page, then MCP Apps views
//!   behind the Rust and the official `AppBridge` (see `browser/`).
//! - `cargo xtask soak [--minutes N]`: 10,000 stateful HTTP sessions with churn, three
//!   rounds; fails on a descriptor or task leak or memory growth (see `soak.rs`).
//! - `cargo xtask release-check [PART]... [--bless]`: the crates as the registry would
//!   build them — publish dry run, each feature alone, each crate's docs alone, the
//!   recorded public API (see `release.rs`).
//! - `cargo xtask fuzz [--secs N] [TARGET]`: builds the cargo-fuzz targets of `fuzz/`
//!   (nightly) and runs each for N seconds (see `fuzz.rs` and FUZZING.md).

mod bench;
mod browser;
mod conformance;
mod fuzz;
mod interop;
mod needs;
mod release;
mod soak;
mod sources;
mod test;
mod tidy;
mod tools;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("tidy") => match tidy::check(&tidy::workspace_root()) {
            Ok(()) => {
                println!("tidy: ok");
                ExitCode::SUCCESS
            }
            Err(problems) => {
                for p in problems {
                    eprintln!("tidy: {p}");
                }
                ExitCode::FAILURE
            }
        },
        Some("conformance") => conformance::main(&args[1..]),
        Some("bench") => bench::main(&args[1..], &tidy::workspace_root()),
        Some("pin") if args.len() == 1 => conformance::update_lock(),
        Some("test") if args.len() == 1 => test::main(&tidy::workspace_root()),
        Some("interop") => interop::main(&tidy::workspace_root(), &args[1..]),
        Some("browser") if args.len() == 1 => browser::main(&tidy::workspace_root()),
        Some("fuzz") => fuzz::main(&tidy::workspace_root(), &args[1..]),
        Some("soak") => soak::main(&args[1..], &tidy::workspace_root()),
        Some("release-check") => release::main(&tidy::workspace_root(), &args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <tidy | conformance | pin | bench | test | interop | browser | fuzz | soak | release-check>\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
                conformance::USAGE,
                bench::USAGE,
                interop::USAGE,
                browser::USAGE,
                fuzz::USAGE,
                soak::USAGE,
                release::USAGE
            );
            ExitCode::from(2)
        }
    }
}

/// The parsed arguments of a subcommand; or, when they did not parse, `None` after
/// saying why and how `command` is used.
fn parsed_args<T>(command: &str, usage: &str, parsed: Result<T, String>) -> Option<T> {
    parsed
        .map_err(|e| eprintln!("{command}: {e}\nusage:\n{usage}"))
        .ok()
}
