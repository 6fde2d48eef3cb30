//! `cargo xtask bench --sdks`: the cross-SDK table. modelctx, rmcp and the servers of the
//! TypeScript SDK (v1 and v2) and of the Python SDK serve the same `echo` tool
//! (`xtask/interop/bench-*-server.*`) and face the same load generator, over stdio and
//! stateful streamable HTTP; the table shows each SDK's median and modelctx against the
//! best of the others.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use super::{Options, SCENARIOS, Samples, build, cell, finish, median, run_load};
use crate::needs::{Need, require};

/// The SDKs, in column order (`bench-load` target names).
const SDKS: [&str; 5] = ["modelctx", "rmcp", "typescript", "typescript-v2", "python"];

/// The other SDKs' bench servers, copied next to the installed packages.
const PEER_SERVERS: [&str; 3] = [
    "bench-ts-server.mjs",
    "bench-ts2-server.mjs",
    "bench-py-server.py",
];

/// Whether every SDK runs the scenario with these `bench-load` arguments: the ones that
/// start a server process and speak stdio or stateful HTTP (not in-process, not the
/// session-less or 2026-07-28 modes, which not every SDK serves, and not the Rust-only
/// public workload).
fn every_sdk_runs(args: &[&str]) -> bool {
    matches!(
        args,
        ["stdio"] | ["http", "stateful"] | ["sessions"] | ["whole"] | ["cold"]
    )
}

/// Installs the other SDKs, runs every shared scenario once per SDK and round (the SDKs
/// interleaved, the order reversed every other round) and prints the table.
pub(super) fn run_sdks(options: &Options, root: &Path) -> Result<(), String> {
    require(
        "cargo xtask bench --sdks",
        &[
            Need {
                program: "npm",
                get_it: "install Node.js's npm (it installs the pinned Node 22 and TypeScript SDKs)",
            },
            Need {
                program: "python3",
                get_it: "install Python 3 with venv (it installs the pinned Python SDK)",
            },
        ],
    )?;
    let started = Instant::now();
    eprintln!("bench: installing the other SDKs (xtask/interop/install.sh)");
    let status = Command::new("sh")
        .arg(root.join("xtask/interop/install.sh"))
        .current_dir(root)
        .status()
        .map_err(|e| format!("cannot run install.sh: {e}"))?;
    if !status.success() {
        return Err(format!("install.sh failed ({status})"));
    }
    let peers = root.join(".tools/interop");
    for script in PEER_SERVERS {
        crate::interop::copy_script(root, &peers, script)?;
    }
    let load = build(root, !options.quick)?;
    let scenarios: Vec<(&str, &[&str])> = SCENARIOS
        .iter()
        .filter(|(name, args)| every_sdk_runs(args) && options.runs(name))
        .copied()
        .collect();
    let mut samples = Samples::new(scenarios.len());
    for round in 0..options.rounds {
        eprintln!("bench: SDK round {}/{}", round + 1, options.rounds);
        for (i, (name, args)) in scenarios.iter().enumerate() {
            let mut sdks = SDKS.to_vec();
            if round % 2 == 1 {
                sdks.reverse();
            }
            for sdk in sdks {
                let figures = run_load(&load, args, sdk, options.calls, Some(&peers))
                    .map_err(|e| format!("{name} / {sdk}: {e}"))?;
                samples.record(i, sdk, figures);
            }
        }
    }
    let profile = if options.quick {
        "dev profile, smoke run: figures are not meaningful"
    } else {
        "release"
    };
    println!(
        "SDKs: medians of {} round(s), {} calls per run ({profile})\n",
        options.rounds, options.calls
    );
    println!(
        "| scenario | figure | {} | modelctx/best other |",
        SDKS.join(" | ")
    );
    println!("|---|---|{}---:|", "---:|".repeat(SDKS.len()));
    let mut results = Vec::new();
    for (i, (scenario, _)) in scenarios.iter().enumerate() {
        for (figure, by_sdk) in samples.figures(i) {
            let medians: Vec<Option<f64>> = SDKS
                .iter()
                .map(|sdk| by_sdk.get(sdk).and_then(|v| median(v)))
                .collect();
            let higher = figure.ends_with("_per_s");
            let best_other = medians[1..]
                .iter()
                .flatten()
                .copied()
                .reduce(|a, b| if higher == (b > a) { b } else { a });
            let ratio = match (medians[0], best_other) {
                (Some(ours), Some(best)) if best > 0.0 => Some(ours / best),
                _ => None,
            };
            let cells: Vec<String> = medians.iter().map(|m| cell(*m)).collect();
            let arrow = if higher { "↑" } else { "↓" };
            println!(
                "| {scenario} | {figure} {arrow} | {} | {} |",
                cells.join(" | "),
                ratio.map_or("-".to_owned(), |r| format!("{r:.2}")),
            );
            results.push(json!({
                "scenario": scenario,
                "figure": figure,
                "better": if higher { "higher" } else { "lower" },
                "medians": SDKS.iter().zip(&medians).map(|(s, m)| (s.to_string(), json!(m))).collect::<serde_json::Map<_, _>>(),
                "modelctx_per_best_other": ratio,
                "samples": by_sdk,
            }));
        }
    }
    finish(options, started, "sdks", json!(results), &[])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sdk_runs_the_process_scenarios_only() {
        let shared: Vec<&str> = SCENARIOS
            .iter()
            .filter(|(_, args)| every_sdk_runs(args))
            .map(|(name, _)| *name)
            .collect();
        assert_eq!(shared.len(), 5, "{shared:?}");
        assert!(!every_sdk_runs(&["memory"]));
        assert!(!every_sdk_runs(&["http", "json"]));
        assert!(!every_sdk_runs(&["shop"]));
        assert_eq!(cell(None), "-");
        assert_eq!(cell(Some(1234.4)), "1234");
        assert_eq!(cell(Some(0.456)), "0.46");
    }
}
