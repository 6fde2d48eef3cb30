//! The skills legs (SEP-2640, `io.modelcontextprotocol/skills`): the TypeScript SDK v2
//! and rmcp against modelctx, both ways, on the skills of `examples/skills`.
//!
//! - A peer's client against the `skills-server` example (stdio): `ts2-skills-client.mjs`
//!   or `rmcp-skills-peer client`, told to expect the skills below `examples/skills` and
//!   `examples/skills-embedded` (the one the example builds into its binary).
//! - `conformance-client --interop --skills examples/skills` against a peer's server
//!   serving `examples/skills`: `ts2-skills-server.mjs` (the SDK's `loadSkills`; stdio,
//!   and HTTP in both eras) or `rmcp-skills-peer server` (rmcp's `SkillCatalog`; stdio).
//!
//! Each side asserts on the listed names, `skills/get`, every file's content read
//! through its SDK's verified read, and the sizes and `sha256:` digests against the
//! bytes on disk (see the scripts and programs for the full list).

use std::process::{Command, ExitStatus};

use super::legs::{Leg, Peer, Wire};
use super::process::{run_logged, start_http};
use super::{LEG_LIMIT, Paths, Role};

/// The rmcp peer program (a bin of `modelctx-bench`, feature `rmcp-skills`).
pub(super) const RMCP_PEER: &str = "rmcp-skills-peer";
/// The README's row (3) written with rmcp (a bin of `modelctx-bench`, feature `rmcp`).
pub(super) const RMCP_DIVIDER_CLIENT: &str = "rmcp-divider-client";

/// The skills every server of these legs serves (relative to the repository root).
const SKILLS: &str = "examples/skills";
/// The skill the `skills-server` example builds into its binary.
const EMBEDDED: &str = "examples/skills-embedded";

pub(super) fn run_skills_leg(
    paths: &Paths,
    leg: &Leg,
    log_name: &str,
) -> Result<(ExitStatus, String), String> {
    let skills = paths.root.join(SKILLS);
    let skills = skills.to_str().ok_or("a non-UTF-8 checkout path")?;
    let embedded = paths.root.join(EMBEDDED);
    let embedded = embedded.to_str().ok_or("a non-UTF-8 checkout path")?;
    let unsupported = || Err(format!("{}: no such skills leg", leg.id()));
    match (leg.peer_role, leg.peer, leg.wire) {
        (Role::Client, Peer::TypeScriptV2 | Peer::Rmcp, Wire::Stdio) => {
            let script = match leg.peer {
                Peer::TypeScriptV2 => "ts2-skills-client.mjs",
                _ => "client",
            };
            let mut client = leg.peer.command_for(paths, script)?;
            if let Some(era) = leg.era {
                client.args(["--era", era]);
            }
            client.args(["--expect", skills, "--expect", embedded]);
            // The TypeScript script takes `stdio PROGRAM`, rmcp's `-- PROGRAM`.
            client.arg(if leg.peer == Peer::Rmcp {
                "--"
            } else {
                "stdio"
            });
            client.arg(paths.bin.join("skills-server"));
            run_logged(paths, &mut client, log_name, LEG_LIMIT)
        }
        (Role::Server, Peer::TypeScriptV2 | Peer::Rmcp, wire @ (Wire::Stdio | Wire::Http)) => {
            let mut ours = Command::new(paths.bin.join("conformance-client"));
            ours.arg("--interop");
            if let Some(era) = leg.era {
                ours.args(["--era", era]);
            }
            ours.args(["--skills", skills]);
            let mut server = match leg.peer {
                Peer::TypeScriptV2 => leg.peer.command_for(paths, "ts2-skills-server.mjs")?,
                _ => leg.peer.command(paths, Role::Server)?,
            };
            server.arg(skills);
            if wire == Wire::Http {
                if leg.peer == Peer::Rmcp {
                    return unsupported();
                }
                server.arg("http");
                let (server, url) = start_http(paths, server, &format!("server-for-{log_name}"))?;
                ours.args(["http", &url]);
                let outcome = run_logged(paths, &mut ours, log_name, LEG_LIMIT);
                drop(server);
                return outcome;
            }
            if leg.peer == Peer::TypeScriptV2 {
                server.arg("stdio");
            }
            ours.arg("stdio").arg(server.get_program());
            ours.args(server.get_args());
            run_logged(paths, &mut ours, log_name, LEG_LIMIT)
        }
        _ => unsupported(),
    }
}
