//! `cargo xtask bench`: modelctx against rmcp and the raw baselines, side by side.
//!
//! Builds the `modelctx-bench` binaries with cargo (xtask itself links no SDK crate),
//! then runs `bench-load` once per scenario, target and round, interleaving the targets
//! (modelctx, rmcp, baseline, then the reverse order the next round, ...) so drift on a
//! shared machine spreads evenly. Each run prints its figures as JSON; the report is the
//! median of every figure over the rounds, with the ratios modelctx/rmcp and
//! modelctx/baseline. See `crates/modelctx-bench/BENCHMARKS.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

mod compile;
mod sdks;

pub(crate) const USAGE: &str = "\
cargo xtask bench [--quick] [--rounds N] [--calls N] [--compile] [--compile-rounds N] [--json PATH]
                  [--scenario NAME]... [--target modelctx|rmcp|baseline]...
cargo xtask bench --scale-out [--quick] [--rounds N] [--calls N] [--json PATH]
cargo xtask bench --sdks [--quick] [--rounds N] [--calls N] [--scenario NAME]... [--json PATH]
    --quick      a smoke run: dev profile, 1 round, few calls (figures not meaningful)
    --scenario   only the scenarios whose name contains NAME (repeatable; e.g. \"2026\",
                 \"stateless JSON\"); all by default
    --target     only this target (repeatable); all three by default
    --compile    also time clean release builds of a minimal stdio server per SDK, written
                 by hand and with each SDK's tool macros, then a rebuild after touching
                 the tool's file; 3 rounds, SDKs interleaved (minutes; --compile-rounds)
    --scale-out  instead: modelctx alone with the Redis stores against the in-memory ones,
                 and two instances sharing one Redis against one, by round-robin clients
                 and behind nginx and HAProxy (needs redis-server, nginx and HAProxy:
                 `sh xtask/system/redis.sh`, `sh xtask/system/balancers.sh`)
    --sdks       instead: modelctx, rmcp 3.11, the TypeScript SDK 1.32.2 and 2.4.0 and the
                 Python SDK 2.3.0 serving the same echo tool: stdio, stateful HTTP,
                 sessions, whole sessions, cold start (3 rounds of 2,000 calls by
                 default; installs the pinned SDKs with xtask/interop/install.sh, which
                 needs npm and python3)
The public workload scenario (the shop tools of the public cross-language MCP benchmark
on a real Redis and HTTP API) runs modelctx and rmcp only and needs redis-server; without
it the scenario is reported as not run (an error under CI).";

/// What the Redis scenarios need.
const NEED_REDIS: crate::needs::Need = crate::needs::Need {
    program: "redis-server",
    get_it: "install it with `sh xtask/system/redis.sh` (Debian's redis-server)",
};

const TARGETS: [&str; 3] = ["modelctx", "rmcp", "baseline"];

/// The scenarios, by name, with the `bench-load` arguments that run them.
const SCENARIOS: &[(&str, &[&str])] = &[
    ("in-memory", &["memory"]),
    ("stdio", &["stdio"]),
    ("http stateful SSE", &["http", "stateful"]),
    ("http stateless JSON", &["http", "json"]),
    ("http stateless SSE", &["http", "stateless"]),
    ("http 2026-07-28 JSON", &["http", "modern"]),
    ("http 2026-07-28 MRTR (2 POSTs)", &["http", "mrtr"]),
    ("sessions (http stateful)", &["sessions"]),
    (
        "fairness (http stateful, a 32-connection flood)",
        &["fairness"],
    ),
    (
        "whole sessions (http, 50 workers: initialize, initialized, one call, DELETE)",
        &["whole"],
    ),
    ("cold start", &["cold"]),
    (PUBLIC_WORKLOAD, &["shop"]),
];

/// The public benchmark's I/O-bound workload: modelctx and rmcp only (no raw baseline),
/// and only with `redis-server` on the machine.
/// Its name shares no word with another scenario's, so `--scenario` selects it alone.
const PUBLIC_WORKLOAD: &str =
    "public workload (50 workers, a new session per call of 3 shop tools on Redis and a local API)";

/// The scale-out scenarios (`--scale-out`): `bench-load` arguments and the two variants
/// compared (the second against the first).
const SCALE_OUT: &[(&str, &[&str], [&str; 2])] = &[
    (
        "one instance: in-memory vs Redis stores",
        &["scale", "stores"],
        ["memory", "redis"],
    ),
    (
        "2026-07-28 JSON, 32 round-robin clients: one instance vs two (Redis stores)",
        &["scale", "instances"],
        ["one", "two"],
    ),
    (
        "2026-07-28 JSON, 32 clients: one instance vs two behind nginx (Redis stores)",
        &["scale", "instances"],
        ["one", "nginx"],
    ),
    (
        "2026-07-28 JSON, 32 clients: one instance vs two behind HAProxy (Redis stores)",
        &["scale", "instances"],
        ["one", "haproxy"],
    ),
];

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Options {
    quick: bool,
    scale_out: bool,
    /// `--sdks`: the cross-SDK table instead of the comparison.
    sdks: bool,
    compile: bool,
    compile_rounds: usize,
    rounds: usize,
    calls: usize,
    json: Option<PathBuf>,
    /// `--scenario`: parts of the names of the scenarios to run; empty runs all.
    scenarios: Vec<String>,
    /// `--target`: the targets to run; empty runs all.
    targets: Vec<&'static str>,
}

impl Options {
    /// Whether scenario `name` runs.
    fn runs(&self, name: &str) -> bool {
        self.scenarios.is_empty() || self.scenarios.iter().any(|s| name.contains(s.as_str()))
    }

    /// The targets that run, in table order.
    fn targets(&self) -> Vec<&'static str> {
        TARGETS
            .into_iter()
            .filter(|t| self.targets.is_empty() || self.targets.contains(t))
            .collect()
    }
}

pub(crate) fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut quick = false;
    let mut scale_out = false;
    let mut sdks = false;
    let mut compile = false;
    let mut compile_rounds = 3;
    let mut rounds = None;
    let mut calls = None;
    let mut json = None;
    let mut scenarios = Vec::new();
    let mut targets = Vec::new();
    let mut it = args.iter();
    let number = |v: Option<&String>, what: &str, min: usize| {
        v.and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n >= min)
            .ok_or(format!("{what} needs a number of at least {min}"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--scale-out" => scale_out = true,
            "--sdks" => sdks = true,
            "--compile" => compile = true,
            "--compile-rounds" => {
                compile = true;
                compile_rounds = number(it.next(), "--compile-rounds", 1)?;
            }
            "--rounds" => rounds = Some(number(it.next(), "--rounds", 1)?),
            "--calls" => calls = Some(number(it.next(), "--calls", 32)?),
            "--json" => match it.next() {
                Some(path) => json = Some(PathBuf::from(path)),
                None => return Err("--json needs a path".into()),
            },
            "--scenario" => match it.next() {
                Some(name) if SCENARIOS.iter().any(|(s, _)| s.contains(name.as_str())) => {
                    scenarios.push(name.clone());
                }
                Some(name) => {
                    let names: Vec<&str> = SCENARIOS.iter().map(|(s, _)| *s).collect();
                    return Err(format!(
                        "no scenario is named like {name:?}; the scenarios: {}",
                        names.join(", ")
                    ));
                }
                None => return Err("--scenario needs a name".into()),
            },
            "--target" => match it
                .next()
                .and_then(|t| TARGETS.into_iter().find(|n| *n == t.as_str()))
            {
                Some(target) => targets.push(target),
                None => return Err(format!("--target needs one of {}", TARGETS.join(", "))),
            },
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if [scale_out, sdks, compile]
        .into_iter()
        .filter(|on| *on)
        .count()
        > 1
    {
        return Err("--scale-out, --sdks and --compile are separate runs".into());
    }
    if sdks && !targets.is_empty() {
        return Err("--sdks runs every SDK; --target selects among the comparison's".into());
    }
    if scale_out && !(scenarios.is_empty() && targets.is_empty()) {
        return Err("--scenario and --target select among the comparison's scenarios".into());
    }
    Ok(Options {
        quick,
        scale_out,
        sdks,
        compile,
        compile_rounds,
        rounds: rounds.unwrap_or(match (quick, sdks) {
            (true, _) => 1,
            (false, true) => 3,
            (false, false) => 7,
        }),
        calls: calls.unwrap_or(match (quick, sdks) {
            (true, _) => 200,
            (false, true) => 2000,
            (false, false) => 5000,
        }),
        json,
        scenarios,
        targets,
    })
}

/// Runs the subcommand.
pub(crate) fn main(args: &[String], root: &Path) -> ExitCode {
    let Some(options) = crate::parsed_args("bench", USAGE, parse_args(args)) else {
        return ExitCode::from(2);
    };
    match run(&options, root) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options, root: &Path) -> Result<(), String> {
    if options.sdks {
        return sdks::run_sdks(options, root);
    }
    if options.scale_out {
        crate::needs::require("cargo xtask bench --scale-out", &[NEED_REDIS])?;
        return run_scale_out(options, root);
    }
    let started = Instant::now();
    // (scenario, why) for each selected scenario that cannot run here.
    let mut not_run: Vec<(&str, String)> = Vec::new();
    if options.runs(PUBLIC_WORKLOAD)
        && let Err(e) = crate::needs::require("the public workload", &[NEED_REDIS])
    {
        // Under CI the scenario must run; elsewhere it is reported as not run.
        if crate::conformance::is_ci() {
            return Err(e);
        }
        eprintln!("bench: not run: {e}");
        not_run.push((PUBLIC_WORKLOAD, e));
    }
    let load = build(root, !options.quick)?;
    // samples[scenario][figure][target] = one value per round
    let mut samples = Samples::new(SCENARIOS.len());
    for round in 0..options.rounds {
        eprintln!("bench: round {}/{}", round + 1, options.rounds);
        for (i, (name, args)) in SCENARIOS.iter().enumerate() {
            if !options.runs(name) || not_run.iter().any(|(n, _)| n == name) {
                continue;
            }
            let mut targets = options.targets();
            if *name == PUBLIC_WORKLOAD {
                targets.retain(|t| *t != "baseline");
            }
            if round % 2 == 1 {
                targets.reverse();
            }
            for target in targets {
                let figures = run_load(&load, args, target, options.calls, None)
                    .map_err(|e| format!("{name} / {target}: {e}"))?;
                samples.record(i, target, figures);
            }
        }
    }
    let mut rows = rows(&samples);
    if options.compile {
        rows.extend(compile::compile_cost(root, options.compile_rounds)?);
    }
    print_table(&rows, options);
    for (name, why) in &not_run {
        println!("\nnot run: {name}: {why}");
    }
    let not_run: Vec<Value> = not_run
        .iter()
        .map(|(name, why)| json!({ "scenario": name, "why": why }))
        .collect();
    finish(
        options,
        started,
        "results",
        json!(rows.iter().map(Row::to_json).collect::<Vec<_>>()),
        &not_run,
    )?;
    Ok(())
}

/// `--scale-out`: each scenario's two variants, interleaved per round (first, second,
/// then second, first, ...); the table shows the medians and second/first.
fn run_scale_out(options: &Options, root: &Path) -> Result<(), String> {
    let started = Instant::now();
    // Fail loudly, before building: these scenarios cannot run without it.
    for (program, version, script) in [
        ("redis-server", "--version", "redis.sh"),
        ("nginx", "-v", "balancers.sh"),
        ("haproxy", "-v", "balancers.sh"),
    ] {
        let found = Command::new(program)
            .arg(version)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !found.is_ok_and(|s| s.success()) {
            return Err(format!(
                "--scale-out needs {program} on the PATH: install it with `sh xtask/system/{script}`"
            ));
        }
    }
    let load = build(root, !options.quick)?;
    // samples[scenario][figure][variant] = one value per round
    let mut samples: Vec<BTreeMap<String, [Vec<f64>; 2]>> = vec![BTreeMap::new(); SCALE_OUT.len()];
    let mut order: Vec<Vec<String>> = vec![Vec::new(); SCALE_OUT.len()];
    for round in 0..options.rounds {
        eprintln!("bench: scale-out round {}/{}", round + 1, options.rounds);
        for (i, (name, args, variants)) in SCALE_OUT.iter().enumerate() {
            let mut turns = [0, 1];
            if round % 2 == 1 {
                turns.reverse();
            }
            for v in turns {
                let figures = run_load(&load, args, variants[v], options.calls, None)
                    .map_err(|e| format!("{name} / {}: {e}", variants[v]))?;
                for (figure, value) in figures {
                    if !order[i].contains(&figure) {
                        order[i].push(figure.clone());
                    }
                    samples[i].entry(figure).or_default()[v].push(value);
                }
            }
        }
    }
    let profile = if options.quick {
        "dev profile, smoke run: figures are not meaningful"
    } else {
        "release"
    };
    println!(
        "scale-out: medians of {} round(s), {} calls per run ({profile})\n",
        options.rounds, options.calls
    );
    println!("| scenario | figure | first | second | second/first |");
    println!("|---|---|---:|---:|---:|");
    let mut results = Vec::new();
    for (i, (scenario, _, variants)) in SCALE_OUT.iter().enumerate() {
        for figure in &order[i] {
            let values = &samples[i][figure];
            let medians = [median(&values[0]), median(&values[1])];
            let ratio = match medians {
                [Some(a), Some(b)] if a > 0.0 => Some(b / a),
                _ => None,
            };
            let arrow = if figure.ends_with("_per_s") {
                "↑"
            } else {
                "↓"
            };
            let show = |v: Option<f64>, name: &str| {
                v.map_or("-".to_owned(), |v| format!("{v:.0} ({name})"))
            };
            println!(
                "| {scenario} | {figure} {arrow} | {} | {} | {} |",
                show(medians[0], variants[0]),
                show(medians[1], variants[1]),
                ratio.map_or("-".to_owned(), |r| format!("{r:.2}")),
            );
            results.push(json!({
                "scenario": scenario,
                "figure": figure,
                "better": if figure.ends_with("_per_s") { "higher" } else { "lower" },
                variants[0]: medians[0],
                variants[1]: medians[1],
                "second_per_first": ratio,
                "samples": {variants[0]: values[0], variants[1]: values[1]},
            }));
        }
    }
    finish(options, started, "scale_out", json!(results), &[])?;
    Ok(())
}

/// Builds the bench binaries; returns the path of `bench-load` (the servers sit next
/// to it).
pub(crate) fn build(root: &Path, release: bool) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.args([
        "build",
        "-p",
        "modelctx-bench",
        "--features",
        "rmcp",
        "--bins",
        "--message-format=json-render-diagnostics",
    ]);
    if release {
        command.arg("--release");
    }
    let out = command
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err("building modelctx-bench failed".into());
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["target"]["name"] == "bench-load")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo built no bench-load executable".into())
}

/// Runs `bench-load ARGS TARGET --calls N` and returns its figures; `peers` is where the
/// other SDKs' servers are (`--sdks`).
fn run_load(
    load: &Path,
    args: &[&str],
    target: &str,
    calls: usize,
    peers: Option<&Path>,
) -> Result<Vec<(String, f64)>, String> {
    let mut command = Command::new(load);
    if let Some(peers) = peers {
        command.env("MODELCTX_BENCH_PEERS", peers);
    }
    let out = command
        .args(args)
        .arg(target)
        .args(["--calls", &calls.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", load.display()))?;
    if !out.status.success() {
        return Err(format!("bench-load failed ({})", out.status));
    }
    let figures: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("bench-load printed no JSON: {e}"))?;
    let figures = figures.as_object().ok_or("bench-load printed no object")?;
    figures
        .iter()
        .map(|(k, v)| {
            v.as_f64()
                .map(|v| (k.clone(), v))
                .ok_or(format!("figure {k} is not a number"))
        })
        .collect()
}

struct Row {
    scenario: &'static str,
    figure: String,
    medians: [Option<f64>; 3],
    samples: BTreeMap<String, Vec<f64>>,
}

impl Row {
    /// Whether a larger value is better (throughput) rather than worse (latency).
    fn higher_is_better(&self) -> bool {
        self.figure.ends_with("_per_s")
    }

    fn ratio(&self, other: usize) -> Option<f64> {
        match (self.medians[0], self.medians[other]) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "scenario": self.scenario,
            "figure": self.figure,
            "better": if self.higher_is_better() { "higher" } else { "lower" },
            "modelctx": self.medians[0],
            "rmcp": self.medians[1],
            "baseline": self.medians[2],
            "modelctx_per_rmcp": self.ratio(1),
            "modelctx_per_baseline": self.ratio(2),
            "samples": self.samples,
        })
    }
}

/// Every figure's samples (one per round), per scenario and target.
struct Samples {
    /// `by[scenario][figure][target]`.
    by: Vec<BTreeMap<String, BTreeMap<&'static str, Vec<f64>>>>,
    /// Each scenario's figures in the order they first came.
    order: Vec<Vec<String>>,
}

impl Samples {
    fn new(scenarios: usize) -> Self {
        Self {
            by: vec![BTreeMap::new(); scenarios],
            order: vec![Vec::new(); scenarios],
        }
    }

    /// Adds one run's `figures` of `target` in scenario `scenario`.
    fn record(&mut self, scenario: usize, target: &'static str, figures: Vec<(String, f64)>) {
        for (figure, value) in figures {
            if !self.order[scenario].contains(&figure) {
                self.order[scenario].push(figure.clone());
            }
            self.by[scenario]
                .entry(figure)
                .or_default()
                .entry(target)
                .or_default()
                .push(value);
        }
    }

    /// Scenario `scenario`'s figures, in order, each with its samples by target.
    fn figures(
        &self,
        scenario: usize,
    ) -> impl Iterator<Item = (&String, &BTreeMap<&'static str, Vec<f64>>)> {
        self.order[scenario]
            .iter()
            .map(move |figure| (figure, &self.by[scenario][figure]))
    }
}

fn rows(samples: &Samples) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, (scenario, _)) in SCENARIOS.iter().enumerate() {
        for (figure, by_target) in samples.figures(i) {
            let medians = TARGETS.map(|t| by_target.get(t).and_then(|v| median(v)));
            rows.push(Row {
                scenario,
                figure: figure.clone(),
                medians,
                samples: by_target
                    .iter()
                    .map(|(t, v)| ((*t).to_owned(), v.clone()))
                    .collect(),
            });
        }
    }
    rows
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn print_table(rows: &[Row], options: &Options) {
    let profile = if options.quick {
        "dev profile, smoke run: figures are not meaningful"
    } else {
        "release"
    };
    println!(
        "medians of {} round(s), {} calls per run ({profile})\n",
        options.rounds, options.calls
    );
    println!(
        "| scenario | figure | modelctx | rmcp | baseline | modelctx/rmcp | modelctx/baseline |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    let ratio = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    for row in rows {
        let arrow = if row.higher_is_better() { "↑" } else { "↓" };
        println!(
            "| {} | {} {arrow} | {} | {} | {} | {} | {} |",
            row.scenario,
            row.figure,
            cell(row.medians[0]),
            cell(row.medians[1]),
            cell(row.medians[2]),
            ratio(row.ratio(1)),
            ratio(row.ratio(2)),
        );
    }
}

/// Ends a run: its duration on stderr, and with `--json` the report — the machine, the
/// settings, `results` under `key` and the scenarios selected that could not run.
fn finish(
    options: &Options,
    started: Instant,
    key: &str,
    results: Value,
    not_run: &[Value],
) -> Result<(), String> {
    eprintln!("bench: done in {:.1} s", started.elapsed().as_secs_f64());
    let Some(path) = &options.json else {
        return Ok(());
    };
    let report = json!({
        "machine": machine(),
        "profile": if options.quick { "dev" } else { "release" },
        "rounds": options.rounds,
        "calls": options.calls,
        key: results,
        "not_run": not_run,
    });
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A table cell: a median to about three significant figures, `-` for none.
fn cell(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    json!({
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let args = |a: &[&str]| parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let quick = args(&["--quick", "--json", "out.json"]).unwrap();
        assert!(quick.quick);
        assert_eq!(quick.rounds, 1);
        assert_eq!(quick.json, Some(PathBuf::from("out.json")));
        let full = args(&["--rounds", "3"]).unwrap();
        assert_eq!((full.quick, full.rounds, full.calls), (false, 3, 5000));
        assert!(!full.compile);
        let compile = args(&["--compile"]).unwrap();
        assert!(compile.compile);
        assert_eq!(compile.compile_rounds, 3);
        let one = args(&["--compile-rounds", "1"]).unwrap();
        assert!(one.compile);
        assert_eq!(one.compile_rounds, 1);
        assert!(args(&["--compile-rounds", "0"]).is_err());
        assert!(args(&["--calls", "5"]).is_err());
        assert!(args(&["--json"]).is_err());
        assert!(args(&["--fast"]).is_err());
        let scale = args(&["--scale-out", "--quick"]).unwrap();
        assert!(scale.scale_out && scale.quick);
        assert!(!full.scale_out);
        assert!(args(&["--scale-out", "--compile"]).is_err());
        let some = args(&["--scenario", "2026", "--scenario", "stateless JSON"]).unwrap();
        assert!(some.runs("http 2026-07-28 JSON") && some.runs("http stateless JSON"));
        assert!(!some.runs("stdio") && full.runs("stdio"));
        assert_eq!(some.targets(), TARGETS.to_vec());
        let one = args(&["--target", "baseline", "--target", "modelctx"]).unwrap();
        assert_eq!(one.targets(), vec!["modelctx", "baseline"]);
        assert!(args(&["--scenario", "nothing like it"]).is_err());
        assert!(args(&["--target", "other"]).is_err());
        assert!(args(&["--scale-out", "--target", "rmcp"]).is_err());
    }

    #[test]
    fn medians_and_ratios() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        let row = Row {
            scenario: "x",
            figure: "calls_per_s".into(),
            medians: [Some(300.0), Some(100.0), None],
            samples: BTreeMap::new(),
        };
        assert!(row.higher_is_better());
        assert_eq!(row.ratio(1), Some(3.0));
        assert_eq!(row.ratio(2), None);
    }
}
