//! The compile cost (`--compile`): what a minimal server costs to build and ship, for each
//! SDK, written two ways.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Instant, SystemTime};

use super::{Row, median};

/// The programs, each its own workspace under `crates/modelctx-bench/compile/`: a minimal
/// stdio `echo` server per SDK, by hand (`modelctx`, `rmcp`) and with the SDK's tool
/// macros (`modelctx-macros`, `rmcp-macros`), with the figures' prefix.
const VARIANTS: [(&str, &str); 2] = [("", ""), ("-macros", "macros_")];

/// `rounds` rounds, the SDKs interleaved (modelctx, rmcp, then rmcp, modelctx, ...), of
/// each variant: a clean release build in a fresh target directory (wall time), the
/// binary's size, and the rebuild after touching the program's source (the tool's file:
/// the SDK is not rebuilt). Medians.
pub(super) fn compile_cost(root: &Path, rounds: usize) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (suffix, prefix) in VARIANTS {
        // figure -> sdk -> samples
        let mut samples: BTreeMap<&str, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
        for round in 0..rounds {
            let mut sdks = ["modelctx", "rmcp"];
            if round % 2 == 1 {
                sdks.reverse();
            }
            for sdk in sdks {
                let program = format!("{sdk}{suffix}");
                eprintln!(
                    "bench: clean release build of the minimal {program} server ({}/{rounds})",
                    round + 1
                );
                let built = build_twice(root, &program)?;
                for (figure, value) in [
                    ("clean_release_build_s", built.clean_s),
                    ("binary_kib", built.binary_kib),
                    ("incremental_rebuild_s", built.rebuild_s),
                ] {
                    samples
                        .entry(figure)
                        .or_default()
                        .entry(sdk.to_owned())
                        .or_default()
                        .push(value);
                }
            }
        }
        for (figure, by_sdk) in samples {
            let of = |sdk: &str| by_sdk.get(sdk).and_then(|v| median(v));
            rows.push(Row {
                scenario: "compile cost",
                figure: format!("{prefix}{figure}"),
                medians: [of("modelctx"), of("rmcp"), None],
                samples: by_sdk,
            });
        }
    }
    Ok(rows)
}

/// What one program's builds measured.
struct Built {
    clean_s: f64,
    binary_kib: f64,
    rebuild_s: f64,
}

/// Builds `compile/<program>` clean in a fresh target directory, then again after
/// touching its `src/main.rs`; removes the target directory.
fn build_twice(root: &Path, program: &str) -> Result<Built, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let dir = root.join("crates/modelctx-bench/compile").join(program);
    let target = std::env::temp_dir().join(format!(
        "modelctx-bench-compile-{program}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&target);
    let build = || {
        let start = Instant::now();
        let status = Command::new(&cargo)
            .args(["build", "--release", "--quiet", "--target-dir"])
            .arg(&target)
            .current_dir(&dir)
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err(format!("the minimal {program} server did not build"));
        }
        Ok(start.elapsed().as_secs_f64())
    };
    let measured = (|| {
        let clean_s = build()?;
        let binary = target.join("release").join(format!(
            "compile-cost-{program}{}",
            std::env::consts::EXE_SUFFIX
        ));
        let binary_kib = std::fs::metadata(&binary)
            .map_err(|e| format!("{}: {e}", binary.display()))?
            .len() as f64
            / 1024.0;
        let source = dir.join("src/main.rs");
        std::fs::File::options()
            .append(true)
            .open(&source)
            .and_then(|f| f.set_modified(SystemTime::now()))
            .map_err(|e| format!("cannot touch {}: {e}", source.display()))?;
        let rebuild_s = build()?;
        Ok(Built {
            clean_s,
            binary_kib,
            rebuild_s,
        })
    })();
    let _ = std::fs::remove_dir_all(&target);
    measured
}
