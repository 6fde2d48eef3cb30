//! `cargo xtask fuzz [--secs N] [TARGET]`: builds the cargo-fuzz targets of `fuzz/`
//! with the nightly toolchain and runs each (or the named one) for N seconds (default
//! 60), on the checked-in seed corpus `fuzz/corpus/<target>/` plus a scratch corpus in
//! the ignored `fuzz/scratch/<target>/`, which grows from run to run. It reports each
//! target's executions per second (libFuzzer's final `stat::` lines) and fails on a
//! crash, a timeout (one input running 10 s) or a memory blow-up (2 GiB); libFuzzer
//! writes the input that did it to `fuzz/artifacts/<target>/`. Full logs go to
//! `fuzz/scratch/<target>.log`. See FUZZING.md.

use std::path::Path;
use std::process::{Command, ExitCode};

use crate::tools::{Tool, with_tool};

pub(crate) const USAGE: &str = "cargo xtask fuzz [--secs N] [TARGET]   (targets: jsonrpc_decode, stdio_framing, http_service, elicitation_schema, uri_template, sse_parser, era_envelope, skill_uri_path)";

/// Every target of `fuzz/Cargo.toml`, in the order they run (a test checks the list).
pub(crate) const TARGETS: &[&str] = &[
    "jsonrpc_decode",
    "stdio_framing",
    "http_service",
    "elicitation_schema",
    "uri_template",
    "sse_parser",
    "era_envelope",
    "skill_uri_path",
];

/// libFuzzer's options for every run: inputs up to 4 KiB, one input may take 10 s,
/// the process 2 GiB, and the final statistics printed.
const LIBFUZZER_OPTIONS: &[&str] = &[
    "-max_len=4096",
    "-timeout=10",
    "-rss_limit_mb=2048",
    "-print_final_stats=1",
];

/// cargo-fuzz's build flags: debug assertions (overflow checks too) on, no sanitizer
/// (the SDK forbids `unsafe`; coverage-guided fuzzing without ASan runs several times
/// faster, and libFuzzer still catches panics, stack overflows, hangs and memory).
const BUILD_FLAGS: &[&str] = &["--debug-assertions", "--sanitizer", "none"];

/// What one run reported.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Stats {
    pub(crate) runs: Option<u64>,
    pub(crate) execs_per_sec: Option<u64>,
    pub(crate) peak_rss_mb: Option<u64>,
}

/// Reads libFuzzer's final `stat::` lines (`-print_final_stats=1`); without them (a
/// crash cuts them short on some paths) the last `#N ... exec/s: M` status line.
pub(crate) fn parse_stats(output: &str) -> Stats {
    let mut stats = Stats::default();
    let value =
        |line: &str, key: &str| -> Option<u64> { line.strip_prefix(key)?.trim().parse().ok() };
    for line in output.lines() {
        let line = line.trim();
        if let Some(n) = value(line, "stat::number_of_executed_units:") {
            stats.runs = Some(n);
        } else if let Some(n) = value(line, "stat::average_exec_per_sec:") {
            stats.execs_per_sec = Some(n);
        } else if let Some(n) = value(line, "stat::peak_rss_mb:") {
            stats.peak_rss_mb = Some(n);
        }
    }
    if stats.runs.is_none() || stats.execs_per_sec.is_none() {
        // `#123 NEW cov: ... exec/s: 456 rss: 30Mb ...`
        if let Some(line) = output
            .lines()
            .rev()
            .find(|l| l.starts_with('#') && l.contains("exec/s:"))
        {
            let mut words = line.split_whitespace();
            let runs = words.next().and_then(|w| w[1..].parse().ok());
            let mut words = line.split_whitespace().skip_while(|w| *w != "exec/s:");
            let rate = words.nth(1).and_then(|w| w.parse().ok());
            stats.runs = stats.runs.or(runs);
            stats.execs_per_sec = stats.execs_per_sec.or(rate);
        }
    }
    stats
}

/// The lines of a failed run worth showing: the panic, libFuzzer's verdict, the input.
fn failure_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|l| {
            l.contains("panicked at")
                || l.starts_with("SUMMARY:")
                || l.contains("ERROR: libFuzzer")
                || l.contains("Test unit written to")
                || l.contains("assertion")
                || l.starts_with("  left:")
                || l.starts_with(" right:")
        })
        .take(12)
        .collect()
}

/// The rustup `cargo` (it understands `+nightly`), with the settings of the cargo that
/// runs xtask removed: a `CARGO_TARGET_DIR` would move cargo-fuzz's build out of
/// `fuzz/target`, and `RUSTUP_TOOLCHAIN`/`RUSTC` would pin the stable compiler.
fn nightly_cargo(root: &Path) -> Command {
    let mut cmd = Command::new("cargo");
    // A cargo-fuzz this command installed (see `check_tools`) is found first.
    with_tool(&mut cmd, &CARGO_FUZZ.bin(root));
    cmd.arg("+nightly")
        .current_dir(root)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("CARGO");
    cmd
}

/// cargo-fuzz, pinned, installed into `.tools/cargo-fuzz` when the machine has none.
const CARGO_FUZZ: Tool = Tool {
    krate: "cargo-fuzz",
    version: "0.13.2",
    subcommand: "fuzz",
};

/// Whether `cargo +nightly` is there (the error says what to install), and cargo-fuzz:
/// when it is missing, it is installed, pinned, into `.tools/cargo-fuzz`.
pub(crate) fn check_tools(root: &Path) -> Result<(), String> {
    match nightly_cargo(root).arg("--version").output() {
        Ok(out) if out.status.success() => {}
        _ => {
            return Err(
                "the nightly toolchain is missing (`cargo +nightly --version` fails): \
                 cargo-fuzz needs it; install it with `rustup toolchain install nightly`"
                    .to_owned(),
            );
        }
    }
    crate::tools::install(root, &CARGO_FUZZ, || nightly_cargo(root), "xtask fuzz").map(drop)
}

/// Builds every target.
pub(crate) fn build(root: &Path) -> Result<(), String> {
    crate::tools::run_to_end(
        nightly_cargo(root)
            .args(["fuzz", "build"])
            .args(BUILD_FLAGS),
        "cargo",
        "building the fuzz targets",
    )
}

/// Runs `target` for `secs` seconds; `Err` carries what went wrong.
pub(crate) fn run(root: &Path, target: &str, secs: u64) -> Result<Stats, String> {
    let fuzz = root.join("fuzz");
    let scratch = fuzz.join("scratch").join(target);
    let seeds = fuzz.join("corpus").join(target);
    let artifacts = fuzz.join("artifacts").join(target);
    for dir in [&scratch, &artifacts] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let out = nightly_cargo(root)
        .args(["fuzz", "run"])
        .args(BUILD_FLAGS)
        .arg(target)
        .arg(&scratch)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={secs}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .args(LIBFUZZER_OPTIONS)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let log = fuzz.join("scratch").join(format!("{target}.log"));
    let _ = std::fs::write(&log, &text);
    if out.status.success() {
        Ok(parse_stats(&text))
    } else {
        let mut why = format!("{target} failed ({}); log: {}", out.status, log.display());
        for line in failure_lines(&text) {
            why.push_str("\n    ");
            why.push_str(line);
        }
        Err(why)
    }
}

pub(crate) fn main(root: &Path, args: &[String]) -> ExitCode {
    let mut secs = 60u64;
    let mut only = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--secs" => match args.next().and_then(|s| s.parse().ok()) {
                Some(n) if n > 0 => secs = n,
                _ => {
                    eprintln!("xtask fuzz: --secs needs a positive number\nusage: {USAGE}");
                    return ExitCode::from(2);
                }
            },
            name if TARGETS.contains(&name) && only.is_none() => only = Some(name),
            other => {
                eprintln!("xtask fuzz: unknown argument {other:?}\nusage: {USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if let Err(e) = check_tools(root) {
        eprintln!("xtask fuzz: {e}");
        return ExitCode::FAILURE;
    }
    if let Err(e) = build(root) {
        eprintln!("xtask fuzz: {e}");
        return ExitCode::FAILURE;
    }
    let targets: Vec<&str> = match only {
        Some(t) => vec![t],
        None => TARGETS.to_vec(),
    };
    let mut failed = false;
    println!(
        "{:<20} {:>8} {:>12} {:>10} {:>9}",
        "target", "seconds", "executions", "exec/s", "peak RSS"
    );
    for target in targets {
        match run(root, target, secs) {
            Ok(stats) => {
                let show = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |n| n.to_string());
                println!(
                    "{target:<20} {secs:>8} {:>12} {:>10} {:>6} MB",
                    show(stats.runs),
                    show(stats.execs_per_sec),
                    show(stats.peak_rss_mb)
                );
            }
            Err(why) => {
                failed = true;
                println!("{target:<20} FAILED");
                eprintln!("xtask fuzz: {why}");
            }
        }
    }
    if failed {
        eprintln!(
            "xtask fuzz: a target failed; its input is in fuzz/artifacts/<target>/ (replay: cargo +nightly fuzz run <target> <file>)"
        );
        ExitCode::FAILURE
    } else {
        println!("xtask fuzz: no crash, no timeout, no memory blow-up");
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_final_stats() {
        let out = "#2414320\tDONE   cov: 3205 ft: 10156 corp: 2894/413Kb lim: 2040 exec/s: 114967 rss: 34Mb\n\
                   Done 2414320 runs in 21 second(s)\n\
                   stat::number_of_executed_units: 2414320\n\
                   stat::average_exec_per_sec:     114967\n\
                   stat::new_units_added:          3051\n\
                   stat::slowest_unit_time_sec:    0\n\
                   stat::peak_rss_mb:              34\n";
        assert_eq!(
            parse_stats(out),
            Stats {
                runs: Some(2414320),
                execs_per_sec: Some(114967),
                peak_rss_mb: Some(34)
            }
        );
    }

    #[test]
    fn falls_back_on_the_last_status_line() {
        let out = "#20\tNEW    cov: 3702 ft: 5417 corp: 18/2327b lim: 200 exec/s: 0 rss: 33Mb L: 144/200 MS: 1 CrossOver-\n\
                   #192531\tNEW    cov: 2402 ft: 6781 corp: 1360/219Kb lim: 341 exec/s: 32088 rss: 31Mb L: 341/341 MS: 1 ChangeBit-\n\
                   thread '<unnamed>' panicked at src/lib.rs:35:5:\n";
        let stats = parse_stats(out);
        assert_eq!(stats.runs, Some(192531));
        assert_eq!(stats.execs_per_sec, Some(32088));
        assert_eq!(stats.peak_rss_mb, None);
        assert_eq!(
            failure_lines(out),
            ["thread '<unnamed>' panicked at src/lib.rs:35:5:"]
        );
    }

    #[test]
    fn the_target_list_is_the_fuzz_crates() {
        let manifest = std::fs::read_to_string(
            crate::tidy::workspace_root()
                .join("fuzz")
                .join("Cargo.toml"),
        )
        .expect("fuzz/Cargo.toml");
        let bins: Vec<&str> = manifest
            .split("[[bin]]")
            .skip(1)
            .filter_map(|bin| {
                let line = bin.lines().find(|l| l.trim_start().starts_with("name"))?;
                line.split('"').nth(1)
            })
            .collect();
        assert_eq!(bins, TARGETS);
        for target in TARGETS {
            let seeds = crate::tidy::workspace_root()
                .join("fuzz/corpus")
                .join(target);
            let count = std::fs::read_dir(&seeds).map_or(0, |d| d.count());
            assert!(count > 0, "no seed corpus in {}", seeds.display());
        }
    }
}
