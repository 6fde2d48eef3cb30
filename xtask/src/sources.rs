//! Tidy checks on the source files themselves: no file over the size a reader can hold
//! (`MAX_LINES`), and no import circle between the top-level modules of a crate (module
//! `a` naming `crate::b` while `b`, directly or through others, names `crate::a`).
//!
//! Modules are read as text: `crate::name` paths (grouped `use crate::{a, b::c}`
//! included) outside comments, up to the file's `#[cfg(test)] mod` block, whose imports
//! do not count (a test may drive a module through a higher one).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
pub(crate) const MAX_LINES: usize = 1_000;

/// The source roots that hold SDK and tool code (tests, benches and fuzz targets aside).
fn source_roots(root: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Ok(entries) = std::fs::read_dir(root.join("crates")) {
        for e in entries.flatten() {
            roots.push(e.path().join("src"));
        }
    }
    for dir in ["conformance", "examples", "xtask"] {
        roots.push(root.join(dir).join("src"));
    }
    roots.retain(|p| p.is_dir());
    roots.sort();
    roots
}

/// Every problem found under `root`: files over `MAX_LINES`, and import circles.
pub(crate) fn problems(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for src in source_roots(root) {
        let files = rust_files(&src);
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                problems.push(format!("{}: cannot be read", file.display()));
                continue;
            };
            let lines = text.lines().count();
            if lines > MAX_LINES && !is_test_file(file) {
                problems.push(format!(
                    "{}: {lines} lines (at most {MAX_LINES}: split it by concern)",
                    shown(root, file)
                ));
            }
        }
        let modules = top_level_modules(&src, &files);
        for (group, circle) in circles(&modules) {
            problems.push(format!(
                "{}: modules {} import each other (for one: {})",
                shown(root, &src),
                group.join(", "),
                circle.join(" -> ")
            ));
        }
    }
    problems
}

fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A file of tests kept beside the code (`tests.rs`, `*_tests.rs`, under `tests/`).
fn is_test_file(file: &Path) -> bool {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || file.components().any(|c| c.as_os_str() == "tests")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Each top-level module of a crate (`src/a.rs` and `src/a/**`) with the other
/// top-level modules its code names. Binaries (`src/bin/`) and the crate roots are left
/// out: a root declares every module.
fn top_level_modules(src: &Path, files: &[PathBuf]) -> BTreeMap<String, BTreeSet<String>> {
    let module_of = |file: &Path| -> Option<String> {
        let rel = file.strip_prefix(src).ok()?;
        let first = rel.components().next()?.as_os_str().to_str()?;
        let name = first.strip_suffix(".rs").unwrap_or(first);
        (!matches!(name, "lib" | "main" | "bin")).then(|| name.to_string())
    };
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        if let Some(m) = module_of(file) {
            modules.entry(m).or_default();
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    for file in files {
        if is_test_file(file) {
            continue;
        }
        let (Some(m), Ok(text)) = (module_of(file), std::fs::read_to_string(file)) else {
            continue;
        };
        let named = crate_paths(&text)
            .into_iter()
            .filter(|n| *n != m && names.contains(n));
        modules.entry(m.clone()).or_default().extend(named);
    }
    modules
}

/// The first segments of the `crate::` paths in `text`, outside comments and before
/// its test module.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        let without_comment = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        code.push_str(without_comment);
        code.push('\n');
    }
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        // `crate::` inside a longer word (`$crate::`, `my_crate::`) is another path.
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            for item in top_level_items(group) {
                if let Some(id) = leading_ident(item) {
                    found.insert(id.to_string());
                }
            }
        } else if let Some(id) = leading_ident(rest) {
            found.insert(id.to_string());
        }
    }
    found
}

/// The comma-separated items of a brace group up to its closing brace.
fn top_level_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

fn leading_ident(s: &str) -> Option<&str> {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(s.len(), |(i, _)| i);
    (end > 0).then(|| &s[..end])
}

/// Every strongly connected group of two or more modules, with one circle through it
/// (a path that returns to its start).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for start in graph.keys() {
        if seen.contains(start.as_str()) {
            continue;
        }
        let group: BTreeSet<&str> = reach(graph, start)
            .into_iter()
            .filter(|m| reach(graph, m).contains(start.as_str()))
            .collect();
        seen.extend(group.iter().copied());
        if group.len() > 1 {
            out.push((
                group.iter().map(|m| m.to_string()).collect(),
                circle_through(graph, start, &group),
            ));
        }
    }
    out
}

/// The modules reachable from `from` (itself included).
fn reach<'a>(graph: &'a BTreeMap<String, BTreeSet<String>>, from: &'a str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::from([from]);
    let mut stack = vec![from];
    while let Some(m) = stack.pop() {
        for next in graph.get(m).into_iter().flatten() {
            if seen.insert(next.as_str()) {
                stack.push(next.as_str());
            }
        }
    }
    seen
}

/// A shortest way from `start` back to itself inside `group`, for the message.
fn circle_through(
    graph: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
    group: &BTreeSet<&str>,
) -> Vec<String> {
    let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(m) = queue.pop_front() {
        for next in graph.get(m).into_iter().flatten() {
            let next = next.as_str();
            if !group.contains(next) {
                continue;
            }
            if next == start {
                let mut path = Vec::new();
                let mut at = m;
                loop {
                    path.push(at.to_string());
                    if at == start {
                        break;
                    }
                    at = previous[at];
                }
                path.reverse();
                path.push(start.to_string());
                return path;
            }
            if !previous.contains_key(next) {
                previous.insert(next, m);
                queue.push_back(next);
            }
        }
    }
    group.iter().map(|m| m.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_paths_are_read_from_code_and_groups_but_not_from_comments_or_tests() {
        let text = "use crate::a::X;\nuse crate::{b, c::{D, E}};\n// crate::f::G\n\
                    fn g() { crate::h::run(); $crate::i::j(); }\n\
                    #[cfg(test)]\nmod tests {\n    use crate::k::L;\n}\n";
        let found: Vec<_> = crate_paths(text).into_iter().collect();
        assert_eq!(found, ["a", "b", "c", "h"]);
    }

    #[test]
    fn a_circle_is_named_from_its_first_module_back_to_it() {
        let graph: BTreeMap<String, BTreeSet<String>> = [
            ("a", vec!["b"]),
            ("b", vec!["c"]),
            ("c", vec!["a", "d"]),
            ("d", vec![]),
            ("e", vec!["d"]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
        .collect();
        let found = circles(&graph);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, ["a", "b", "c"]);
        assert_eq!(found[0].1, ["a", "b", "c", "a"]);

        let acyclic: BTreeMap<String, BTreeSet<String>> = [("a", vec!["b"]), ("b", vec![])]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
            .collect();
        assert!(circles(&acyclic).is_empty());
    }
}
