//! Tidy checks: the crate layering of ARCHITECTURE.md, enforced on the resolved
//! dependency graph (`cargo metadata --all-features`, normal and build edges,
//! transitively), so a forbidden edge cannot hide behind a feature or an intermediate
//! crate; and the conformance manifest pin (`conformance/requirements.lock`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The workspace root (the parent of this crate's directory).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Transport crates: they see the transport trait and below, never a role or the runtime.
const TRANSPORTS: &[&str] = &[
    "modelctx-transport",
    "modelctx-memory",
    "modelctx-stdio",
    "modelctx-http",
    "modelctx-sse",
];

/// The internal crates each SDK crate may depend on (directly or not): the crate it
/// sits on, what that one may depend on, and the crates named beside it.
fn allowed_internal(krate: &str) -> Option<Vec<&'static str>> {
    let (on, beside): (Option<&'static str>, &[&'static str]) = match krate {
        "modelctx-types" => (None, &[]),
        // The seams a multi-process deployment implements, under every crate using them.
        "modelctx-store" => (Some("modelctx-types"), &[]),
        "modelctx-transport" => (Some("modelctx-store"), &[]),
        "modelctx-memory" | "modelctx-stdio" | "modelctx-http" => (Some("modelctx-transport"), &[]),
        // Legacy SSE sits above streamable HTTP: it shares its protections and auth
        // hook, and its client holds the streamable client's fallback to it. OAuth sits
        // above the HTTP client transport: it implements its auth hook.
        "modelctx-sse" | "modelctx-oauth" => (Some("modelctx-http"), &[]),
        // Shared stores implement the seams of the store crate, nothing above it.
        "modelctx-redis" => (Some("modelctx-store"), &[]),
        "modelctx-session" => (Some("modelctx-transport"), &[]),
        // The proc-macro crate only emits code naming the facade; it links none of it.
        "modelctx-macros" => (None, &[]),
        "modelctx-server" | "modelctx-client" => (Some("modelctx-session"), &[]),
        // The multi-server host sits above the client role and every client transport
        // (it spawns children and opens HTTP connections); never the server role.
        "modelctx-pool" => (
            Some("modelctx-session"),
            &[
                "modelctx-client",
                "modelctx-stdio",
                "modelctx-http",
                "modelctx-sse",
            ],
        ),
        // Skills over MCP (the server half on the server role, the client half on the
        // client role) and MCP Apps (the server half on the server role, the host bridge
        // on the client role), each half behind a feature; the two roles still never meet.
        "modelctx-skills" | "modelctx-apps" => (
            Some("modelctx-session"),
            &["modelctx-server", "modelctx-client"],
        ),
        // The test kit sits on top: the roles and the in-memory transport for its
        // `TestClient`, and (behind a feature) the OAuth resource server its stand-in
        // verifier plugs into. Crates use it as a dev-dependency only.
        "modelctx-test" => (
            Some("modelctx-session"),
            &[
                "modelctx-server",
                "modelctx-client",
                "modelctx-memory",
                "modelctx-oauth",
                "modelctx-http",
                "modelctx-skills",
                "modelctx-apps",
            ],
        ),
        _ => return None,
    };
    let mut allowed = match on {
        Some(below) => {
            let mut allowed = allowed_internal(below)?;
            allowed.push(below);
            allowed
        }
        None => Vec::new(),
    };
    allowed.extend_from_slice(beside);
    Some(allowed)
}

/// Runs every tidy check; the error lists each problem found.
pub(crate) fn check(root: &Path) -> Result<(), Vec<String>> {
    let graph = Graph::load(root).map_err(|e| vec![e])?;
    let mut problems = layering_problems(&graph);
    problems.extend(crate::conformance::lock_problems());
    problems.extend(crate::release::manifest_problems(root));
    problems.extend(crate::sources::problems(root));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The resolved dependency graph, by package name.
pub(crate) struct Graph {
    deps: BTreeMap<String, BTreeSet<String>>,
    members: BTreeSet<String>,
}

impl Graph {
    fn load(root: &Path) -> Result<Self, String> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--all-features"])
            .current_dir(root)
            .output()
            .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cargo metadata failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let meta: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("cargo metadata printed invalid JSON: {e}"))?;
        Self::from_metadata(&meta)
    }

    fn from_metadata(meta: &Value) -> Result<Self, String> {
        let mut names = BTreeMap::new();
        for pkg in meta["packages"].as_array().into_iter().flatten() {
            if let (Some(id), Some(name)) = (pkg["id"].as_str(), pkg["name"].as_str()) {
                names.insert(id.to_owned(), name.to_owned());
            }
        }
        let name_of = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
        let members = meta["workspace_members"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(name_of)
            .collect();
        let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let nodes = meta["resolve"]["nodes"]
            .as_array()
            .ok_or("cargo metadata has no resolve graph")?;
        for node in nodes {
            let from = name_of(node["id"].as_str().unwrap_or_default());
            let entry = deps.entry(from).or_default();
            for dep in node["deps"].as_array().into_iter().flatten() {
                let runtime = dep["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["kind"].as_str() != Some("dev"));
                if runtime {
                    entry.insert(name_of(dep["pkg"].as_str().unwrap_or_default()));
                }
            }
        }
        Ok(Self { deps, members })
    }

    /// Every package `krate` reaches through normal and build dependencies.
    fn reach(&self, krate: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![krate.to_owned()];
        while let Some(k) = stack.pop() {
            for d in self.deps.get(&k).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen
    }
}

fn layering_problems(graph: &Graph) -> Vec<String> {
    let mut problems = Vec::new();
    for krate in &graph.members {
        let reach = graph.reach(krate);
        if krate == "modelctx-types" && reach.contains("tokio") {
            problems.push("modelctx-types reaches tokio: types must stay free of async".into());
        }
        if TRANSPORTS.contains(&krate.as_str()) {
            for role in ["modelctx-session", "modelctx-server", "modelctx-client"] {
                if reach.contains(role) {
                    problems.push(format!("transport crate {krate} reaches {role}"));
                }
            }
        }
        if krate == "modelctx-server" && reach.contains("modelctx-client")
            || krate == "modelctx-client" && reach.contains("modelctx-server")
        {
            problems.push(format!(
                "{krate} depends on the other role crate: server and client stay independent"
            ));
        }
        if let Some(allowed) = allowed_internal(krate) {
            for dep in reach.iter().filter(|d| d.starts_with("modelctx")) {
                if !allowed.contains(&dep.as_str()) {
                    problems.push(format!("{krate} may not depend on {dep} (layering)"));
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_workspace_layering_holds() {
        if let Err(problems) = check(&workspace_root()) {
            panic!("tidy found problems:\n{}", problems.join("\n"));
        }
    }

    fn graph(edges: &[(&str, &str)]) -> Graph {
        let mut ids = BTreeSet::new();
        for (a, b) in edges {
            ids.insert(*a);
            ids.insert(*b);
        }
        let packages: Vec<_> = ids.iter().map(|n| json!({"id": n, "name": n})).collect();
        let nodes: Vec<_> = ids
            .iter()
            .map(|n| {
                let deps: Vec<_> = edges
                    .iter()
                    .filter(|(a, _)| a == n)
                    .map(|(_, b)| json!({"pkg": b, "dep_kinds": [{"kind": null}]}))
                    .collect();
                json!({"id": n, "deps": deps})
            })
            .collect();
        let members: Vec<_> = ids.iter().filter(|n| n.starts_with("modelctx")).collect();
        Graph::from_metadata(&json!({
            "packages": packages,
            "workspace_members": members,
            "resolve": {"nodes": nodes}
        }))
        .unwrap()
    }

    #[test]
    fn forbidden_edges_are_reported_even_when_transitive() {
        let g = graph(&[("modelctx-types", "helper"), ("helper", "tokio")]);
        assert_eq!(layering_problems(&g).len(), 1);

        let g = graph(&[("modelctx-memory", "modelctx-session")]);
        let p = layering_problems(&g);
        assert!(
            p.iter().any(|p| p.contains("reaches modelctx-session")),
            "{p:?}"
        );

        let g = graph(&[("modelctx-server", "modelctx-client")]);
        assert!(!layering_problems(&g).is_empty());

        let g = graph(&[
            ("modelctx-server", "modelctx-session"),
            ("modelctx-session", "modelctx-types"),
        ]);
        assert!(layering_problems(&g).is_empty());
    }
}
