//! The system programs some cells need, and what happens on a machine without them.
//!
//! A bare machine has only the Rust toolchain. A cell whose transport needs a program
//! from outside it (the two-instance legs need `redis-server`, the balancer legs nginx or
//! HAProxy too) is then **not run**: the
//! harness makes no trial for it, writes why to the results file, and the report shows
//! the cell as not run with the command that enables it. It is never counted as passed
//! or failed. Where the cell must run — `CI=true`, or [`REQUIRE_ENV`] set to `1` (what
//! `cargo xtask conformance --shared` and `cargo xtask test` do) — it runs whatever the
//! machine has, and a missing program fails its trials loudly.
//!
//! Std only, like the rest of the SDK-free half: xtask reads [`NotRun`] back from the
//! results file.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::kind::{Cell, TransportKind};
use crate::pin;

/// Set to `1`, every cell runs even when the program it needs is missing (its trials then
/// fail): for a machine that is meant to have it. `CI=true` does the same.
pub const REQUIRE_ENV: &str = "MODELCTX_CONFORMANCE_SHARED";

/// A program from outside the Rust toolchain that a cell needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    /// The executable looked up on `PATH`.
    pub program: &'static str,
    /// What needs it.
    pub needed_by: &'static str,
    /// The one command that makes the cell run.
    pub enable: &'static str,
}

/// `redis-server`, for the two-instance streamable HTTP leg.
pub const REDIS: Service = Service {
    program: "redis-server",
    needed_by: "two services sharing sessions through Redis",
    enable: "sh xtask/system/redis.sh (or: cargo xtask conformance --shared)",
};

/// nginx, for the two-instance leg behind nginx.
pub const NGINX: Service = Service {
    program: "nginx",
    needed_by: "two services behind nginx",
    enable: "sh xtask/system/balancers.sh (or: cargo xtask conformance --shared)",
};

/// HAProxy, for the two-instance leg behind HAProxy.
pub const HAPROXY: Service = Service {
    program: "haproxy",
    needed_by: "two services behind HAProxy",
    enable: "sh xtask/system/balancers.sh (or: cargo xtask conformance --shared)",
};

impl TransportKind {
    /// The programs this transport's cells need besides the Rust toolchain.
    pub const fn needs_services(self) -> &'static [Service] {
        match self {
            TransportKind::StreamableHttpShared => &[REDIS],
            TransportKind::StreamableHttpNginx => &[REDIS, NGINX],
            TransportKind::StreamableHttpHaproxy => &[REDIS, HAPROXY],
            _ => &[],
        }
    }
}

/// A cell the harness did not run, and why (one line of the results file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRun {
    /// The cell.
    pub cell: Cell,
    /// Why it did not run.
    pub reason: String,
    /// The command that makes it run.
    pub enable: String,
}

/// Whether every cell must run whatever the machine lacks (`CI=true`, or [`REQUIRE_ENV`]
/// set to `1`).
pub fn every_cell_required() -> bool {
    pin::is_ci() || std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// Whether `program` is an executable file in one of `path`'s directories (a
/// `PATH`-style list).
pub fn on_path(program: &str, path: &std::ffi::OsStr) -> bool {
    std::env::split_paths(path).any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(file: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        file.is_file()
    }
}

/// The cells among `cells` that cannot run on this machine: each needs a program that
/// is not on `path`. Empty when `required` (then they run and fail loudly if the
/// program is missing).
pub fn not_run(cells: &[Cell], path: &std::ffi::OsStr, required: bool) -> Vec<NotRun> {
    if required {
        return Vec::new();
    }
    cells
        .iter()
        .filter_map(|&cell| {
            let service = cell
                .transport
                .needs_services()
                .iter()
                .find(|s| !on_path(s.program, path))?;
            Some(NotRun {
                cell,
                reason: format!(
                    "{} not found on PATH ({} needs it)",
                    service.program, service.needed_by
                ),
                enable: service.enable.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::SpecVersion;

    fn cells() -> Vec<Cell> {
        vec![
            Cell::new(TransportKind::InMemory, SpecVersion::V2025_11_25),
            Cell::new(
                TransportKind::StreamableHttpShared,
                SpecVersion::V2025_11_25,
            ),
        ]
    }

    #[test]
    fn a_balancer_cell_needs_redis_and_its_balancer() {
        let dir = fake_bin("balancer");
        let path = std::env::join_paths([dir.clone()]).unwrap();
        let nginx = Cell::new(TransportKind::StreamableHttpNginx, SpecVersion::V2025_11_25);
        let missing = not_run(&[nginx], &path, false);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(missing[0].reason.contains("nginx not found"), "{missing:?}");
        assert!(missing[0].enable.contains("sh xtask/system/balancers.sh"));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A directory holding one executable `redis-server` (a shell script) and one
    /// non-executable file.
    fn fake_bin(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("modelctx-services-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("redis-server");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(dir.join("node"), "not executable").unwrap();
        dir
    }

    #[test]
    fn a_cell_whose_program_is_missing_is_not_run_with_the_command_that_enables_it() {
        let empty = std::env::temp_dir().join("modelctx-services-nothing-here");
        let path = std::env::join_paths([empty]).unwrap();
        let missing = not_run(&cells(), &path, false);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert_eq!(
            missing[0].cell.to_string(),
            "streamable-http-shared@2025-11-25"
        );
        assert!(missing[0].reason.contains("redis-server not found"));
        assert!(missing[0].enable.contains("sh xtask/system/redis.sh"));
        assert!(
            missing[0]
                .enable
                .contains("cargo xtask conformance --shared")
        );
    }

    #[test]
    fn a_required_cell_or_a_present_program_runs() {
        let empty = std::env::temp_dir().join("modelctx-services-nothing-here");
        let nothing = std::env::join_paths([empty]).unwrap();
        assert!(not_run(&cells(), &nothing, true).is_empty());

        let dir = fake_bin("present");
        let path = std::env::join_paths([dir.clone()]).unwrap();
        assert!(on_path("redis-server", &path));
        assert!(
            !on_path("node", &path),
            "a file without the x bit is no program"
        );
        assert!(not_run(&cells(), &path, false).is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }
}
