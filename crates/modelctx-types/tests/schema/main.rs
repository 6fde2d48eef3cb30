//! The schema proof of modelctx-types.
//!
//! `tests/fixtures/<revision>/<Definition>.json` holds 1–4 example values of one definition
//! of the official MCP schema (copied byte for byte under `tests/official-schema/`): every
//! definition of 2025-11-25 and of 2026-07-28, and for 2025-06-18, 2025-03-26 and
//! 2024-11-05 the definitions whose shape differs from 2025-11-25. For every example:
//!
//! - (a) the example validates against its definition in the official schema (this checks
//!   the fixtures);
//! - (b) the Rust type mapped to the definition reads the example, writes it back unchanged,
//!   and what it writes validates against the official schema too (this checks the types).
//!
//! A definition counts as covered when it has fixtures, a mapped Rust type, and all of its
//! examples pass (a) and (b). Run with `-- --nocapture` to see the coverage lines.
//!
//! - (c) `schema/properties.rs`: the same round trip and validation for values generated
//!   from the schemas by proptest, many per definition.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use jsonschema::{Draft, ValidatorMap};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The revision the older revisions are compared with.
const CURRENT: &str = "2025-11-25";

/// The revision after [`CURRENT`], typed but not yet negotiated by the runtime.
const NEXT: &str = "2026-07-28";

/// The revisions every definition must be covered for.
const FULL: [&str; 2] = [CURRENT, NEXT];

/// The older revisions, with fixtures for the definitions that differ from [`CURRENT`].
const OLDER: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// Reads an example as the Rust type, writes it back, and returns what was written.
type RoundTrip = fn(&str) -> Result<Value, String>;

fn round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(
    text: &str,
) -> Result<Value, String> {
    round_trip_checked::<T>(text, |_, _| None)
}

/// [`round_trip`], and then once more from what was written: the value read back must be
/// the same value (`same`, where the type can say) and write the same JSON.
fn round_trip_checked<T: Serialize + DeserializeOwned + std::fmt::Debug>(
    text: &str,
    same: fn(&T, &T) -> Option<bool>,
) -> Result<Value, String> {
    let typed: T = serde_json::from_str(text).map_err(|e| format!("does not deserialise: {e}"))?;
    // Through a string, not `serde_json::to_value`: envelope types hold `RawValue`s.
    let written = serde_json::to_string(&typed).map_err(|e| format!("does not serialise: {e}"))?;
    let again: T = serde_json::from_str(&written)
        .map_err(|e| format!("does not read back what it wrote, {written}: {e}"))?;
    if same(&typed, &again) == Some(false) {
        return Err(format!(
            "reads back another value from what it wrote, {written}: {typed:?} became {again:?}"
        ));
    }
    let rewritten =
        serde_json::to_string(&again).map_err(|e| format!("does not serialise: {e}"))?;
    if rewritten != written {
        return Err(format!(
            "writes different JSON after a round trip: {written} became {rewritten}"
        ));
    }
    serde_json::from_str(&written).map_err(|e| format!("wrote invalid JSON {written}: {e}"))
}

/// Equality where the type has it (autoref specialisation: for `(&Pair(a, b)).same()`,
/// [`ByEq`]'s impl on `Pair` is found before [`ByNothing`]'s on `&Pair`, and applies only
/// to a `PartialEq` type). The envelope types hold `RawValue`s and have no `PartialEq`:
/// for them the JSON written twice is the comparison.
struct Pair<'a, T>(&'a T, &'a T);

trait ByEq {
    fn same(&self) -> Option<bool>;
}

impl<T: PartialEq> ByEq for Pair<'_, T> {
    fn same(&self) -> Option<bool> {
        Some(self.0 == self.1)
    }
}

trait ByNothing {
    fn same(&self) -> Option<bool>;
}

impl<T> ByNothing for &Pair<'_, T> {
    fn same(&self) -> Option<bool> {
        None
    }
}

/// `"Definition" => RustType` rows of a mapping table.
macro_rules! types {
    ($($def:literal => $ty:ty),* $(,)?) => {
        &[$(($def, {
            fn check(text: &str) -> Result<Value, String> {
                #[allow(unused_imports)]
                use super::{ByEq as _, ByNothing as _};
                round_trip_checked::<$ty>(text, |a, b| (&super::Pair(a, b)).same())
            }
            check as RoundTrip
        })),*]
    };
}

mod mapping;

/// The mapping table of `revision`, by definition name.
fn mapping_for(revision: &str) -> Vec<(&'static str, RoundTrip)> {
    let tables: &[&[(&str, RoundTrip)]] = match revision {
        "2026-07-28" => &[mapping::KEPT_IN_2026_07_28, mapping::V2026_07_28],
        "2025-11-25" => &[mapping::KEPT_IN_2026_07_28, mapping::V2025_11_25],
        "2025-06-18" => &[mapping::V2025_06_18],
        "2025-03-26" => &[mapping::V2025_03_26],
        "2024-11-05" => &[mapping::V2024_11_05],
        other => panic!("no mapping table for revision {other}"),
    };
    let mut rows = tables.concat();
    rows.sort_by_key(|(definition, _)| *definition);
    rows
}

/// One revision of the official schema, compiled, with its fixtures.
struct Revision {
    name: &'static str,
    /// The definitions, by name.
    definitions: BTreeMap<String, Value>,
    /// `#/$defs` or `#/definitions`.
    container: &'static str,
    validators: ValidatorMap,
    /// Fixture file stem => its examples.
    fixtures: BTreeMap<String, Vec<Value>>,
}

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Revision {
    fn load(name: &'static str) -> Self {
        let document = read_json(
            &tests_dir()
                .join("official-schema")
                .join(name)
                .join("schema.json"),
        );
        let (draft, key, container) = if document.get("$defs").is_some() {
            (Draft::Draft202012, "$defs", "#/$defs")
        } else {
            (Draft::Draft7, "definitions", "#/definitions")
        };
        let definitions: BTreeMap<String, Value> = document[key]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: schema has no {key}"))
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // One compilation of the whole document; every `#/<container>/<Definition>` gets a
        // validator that resolves its `$ref`s inside that same document. Formats (`uri`,
        // `uri-template`, `date`...) are asserted, not just annotated.
        let validators = jsonschema::options()
            .with_draft(draft)
            .should_validate_formats(true)
            .build_map(&document)
            .unwrap_or_else(|e| panic!("{name}: the official schema does not compile: {e}"));

        let mut fixtures = BTreeMap::new();
        let dir = tests_dir().join("fixtures").join(name);
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("readable fixture directory").path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("UTF-8 file name");
            let examples = match read_json(&path) {
                Value::Array(examples) => examples,
                _ => panic!(
                    "{}: a fixture file is a JSON array of examples",
                    path.display()
                ),
            };
            fixtures.insert(stem.to_owned(), examples);
        }
        Self {
            name,
            definitions,
            container,
            validators,
            fixtures,
        }
    }

    /// The schema errors of `value` against `definition`, empty when it validates.
    fn schema_errors(&self, definition: &str, value: &Value) -> Vec<String> {
        let pointer = format!("{}/{definition}", self.container);
        let Some(validator) = self.validators.get(&pointer) else {
            return vec![format!("the schema has no {pointer}")];
        };
        validator
            .iter_errors(value)
            .map(|e| format!("at {}: {e}", e.instance_path()))
            .collect()
    }
}

static REVISIONS: LazyLock<BTreeMap<&'static str, Revision>> = LazyLock::new(|| {
    FULL.into_iter()
        .chain(OLDER)
        .map(|name| (name, Revision::load(name)))
        .collect()
});

fn revision(name: &str) -> &'static Revision {
    &REVISIONS[name]
}

/// A definition with its description texts removed and `$ref`s written the 2025-11-25 way,
/// to compare shapes across revisions.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| !(k.as_str() == "description" && v.is_string()))
                .map(|(k, v)| (k.clone(), shape(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::String(s) => Value::String(s.replace("#/definitions/", "#/$defs/")),
        other => other.clone(),
    }
}

/// The definitions of an older revision that are absent from 2025-11-25 or shaped differently.
fn differing_definitions(older: &Revision) -> BTreeSet<&str> {
    let current = revision(CURRENT);
    older
        .definitions
        .iter()
        .filter(|(name, def)| {
            current
                .definitions
                .get(*name)
                .is_none_or(|now| shape(now) != shape(def))
        })
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Where `written` first differs from `expected`, if anywhere: `None` exactly when the two
/// values are equal. Numbers are compared as written (`50` is not `50.0`).
fn difference(path: &str, expected: &Value, written: &Value) -> Option<String> {
    match (expected, written) {
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| difference(&format!("{path}/{i}"), x, y)),
        (Value::Object(a), Value::Object(b)) => {
            for (key, x) in a {
                match b.get(key) {
                    Some(y) => {
                        if let Some(diff) = difference(&format!("{path}/{key}"), x, y) {
                            return Some(diff);
                        }
                    }
                    None => return Some(format!("{path}/{key} was dropped (fixture has {x})")),
                }
            }
            b.keys()
                .find(|key| !a.contains_key(*key))
                .map(|key| format!("{path}/{key} was added: {}", b[key]))
        }
        _ if expected == written => None,
        _ => Some(format!(
            "{path}: fixture has {expected}, type wrote {written}"
        )),
    }
}

/// Steps (a) and (b) for one definition of one revision: the problems found, empty when all
/// examples pass.
fn check_definition(
    rev: &Revision,
    definition: &str,
    round_trip: Option<RoundTrip>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(examples) = rev.fixtures.get(definition) else {
        return vec![format!("{}/{definition}: no fixture", rev.name)];
    };
    let Some(round_trip) = round_trip else {
        return vec![format!("{}/{definition}: no Rust type mapped", rev.name)];
    };
    for (i, example) in examples.iter().enumerate() {
        let at = format!("{}/{definition}.json[{i}]", rev.name);
        let errors = rev.schema_errors(definition, example);
        if !errors.is_empty() {
            problems.push(format!(
                "{at}: fixture fails the schema: {}",
                errors.join("; ")
            ));
            continue;
        }
        let written = match round_trip(&example.to_string()) {
            Ok(written) => written,
            Err(e) => {
                problems.push(format!("{at}: {e}"));
                continue;
            }
        };
        if written != *example {
            let diff = difference("", example, &written).unwrap_or_default();
            problems.push(format!("{at}: round trip changed the value: {diff}"));
        }
        let errors = rev.schema_errors(definition, &written);
        if !errors.is_empty() {
            problems.push(format!(
                "{at}: what the type wrote fails the schema: {}",
                errors.join("; ")
            ));
        }
    }
    problems
}

/// Runs (a) and (b) over `definitions` of one revision; returns the covered count and the
/// problems.
fn coverage<'a>(
    rev: &Revision,
    definitions: impl IntoIterator<Item = &'a str>,
) -> (usize, Vec<String>) {
    let table: BTreeMap<&str, RoundTrip> = mapping_for(rev.name).iter().copied().collect();
    let mut covered = 0;
    let mut problems = Vec::new();
    for definition in definitions {
        let found = check_definition(rev, definition, table.get(definition).copied());
        if found.is_empty() {
            covered += 1;
        }
        problems.extend(found);
    }
    (covered, problems)
}

fn report(problems: &[String]) -> String {
    let mut out = String::new();
    for p in problems {
        let _ = writeln!(out, "  - {p}");
    }
    out
}

#[test]
fn every_fixture_validates_against_the_official_schema() {
    let mut problems = Vec::new();
    for name in FULL {
        let full = revision(name);
        for definition in full.definitions.keys() {
            if !full.fixtures.contains_key(definition) {
                problems.push(format!("{name}/{definition}: no fixture"));
            }
        }
    }
    for name in FULL.into_iter().chain(OLDER) {
        let rev = revision(name);
        let differing = (!FULL.contains(&name)).then(|| differing_definitions(rev));
        for (definition, examples) in &rev.fixtures {
            let at = format!("{name}/{definition}.json");
            if !rev.definitions.contains_key(definition) {
                problems.push(format!("{at}: {name} has no such definition"));
                continue;
            }
            if differing
                .as_ref()
                .is_some_and(|d| !d.contains(definition.as_str()))
            {
                problems.push(format!(
                    "{at}: same shape as in {CURRENT}, no fixture needed"
                ));
            }
            if !(1..=4).contains(&examples.len()) {
                problems.push(format!("{at}: {} examples, want 1 to 4", examples.len()));
            }
            for (i, example) in examples.iter().enumerate() {
                for error in rev.schema_errors(definition, example) {
                    problems.push(format!("{at}[{i}] {error}"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "fixture problems:\n{}",
        report(&problems)
    );
}

#[test]
fn the_validators_reject_what_the_schema_forbids() {
    // Guards the harness itself: a validator that accepted everything would prove nothing.
    let current = revision(CURRENT);
    let rejected = [
        ("TextContent", serde_json::json!({"type": "text"})),
        (
            "TextContent",
            serde_json::json!({"type": "image", "text": "x"}),
        ),
        (
            "Task",
            serde_json::json!({"taskId": "t", "status": "working", "createdAt": "x", "lastUpdatedAt": "x"}),
        ),
        (
            "CallToolRequest",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"name": "x"}}),
        ),
        (
            "Resource",
            serde_json::json!({"name": "x", "uri": "not a uri"}),
        ),
        ("RequestId", serde_json::json!(null)),
        (
            "ElicitRequestURLParams",
            serde_json::json!({"mode": "url", "message": "m", "url": "https://example.com"}),
        ),
        // Through `$ref`s: the params definition, and a format inside it.
        (
            "CallToolRequest",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}),
        ),
        (
            "ReadResourceRequest",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "no scheme"}}),
        ),
    ];
    for (definition, value) in &rejected {
        assert!(
            !current.schema_errors(definition, value).is_empty(),
            "{definition} accepted {value}"
        );
    }
    // Draft-07 revisions resolve `#/definitions/...` the same way.
    let old = revision("2024-11-05");
    assert!(
        !old.schema_errors(
            "JSONRPCError",
            &serde_json::json!({"jsonrpc": "2.0", "error": {"code": 1, "message": "m"}})
        )
        .is_empty()
    );
    assert!(
        old.schema_errors(
            "JSONRPCError",
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}})
        )
        .is_empty()
    );
}

#[test]
fn the_round_trip_check_reports_what_changed() {
    // Guards the harness itself: step (b) must notice a dropped, added or altered member,
    // and an integer written back as a float.
    let fixture = serde_json::json!({"a": 50, "b": [1, {"c": null}]});
    let written = |value: Value| difference("", &fixture, &value);
    assert_eq!(written(fixture.clone()), None);
    assert_eq!(
        written(serde_json::json!({"a": 50.0, "b": [1, {"c": null}]})).as_deref(),
        Some("/a: fixture has 50, type wrote 50.0")
    );
    assert_eq!(
        written(serde_json::json!({"a": 50, "b": [1, {}]})).as_deref(),
        Some("/b/1/c was dropped (fixture has null)")
    );
    assert_eq!(
        written(serde_json::json!({"a": 50, "b": [1, {"c": null}], "d": 0})).as_deref(),
        Some("/d was added: 0")
    );
    assert_eq!(
        written(serde_json::json!({"a": 51, "b": [1, {"c": null}]})).as_deref(),
        Some("/a: fixture has 50, type wrote 51")
    );

    // A type that does not carry the definition is caught, by deserialisation or comparison.
    let rev = revision(CURRENT);
    let wrong = check_definition(
        rev,
        "ImageContent",
        Some(round_trip::<modelctx_types::TextContent>),
    );
    assert!(!wrong.is_empty());
    let lossy = check_definition(
        rev,
        "Tool",
        Some(round_trip::<modelctx_types::BaseMetadata>),
    );
    assert!(lossy.iter().any(|p| p.contains("was dropped")), "{lossy:?}");
}

#[test]
fn each_mapping_table_names_its_revision_definitions_once() {
    for name in FULL.into_iter().chain(OLDER) {
        let rev = revision(name);
        let mut seen = BTreeSet::new();
        for (definition, _) in &mapping_for(name) {
            assert!(
                seen.insert(*definition),
                "{name}: {definition} mapped twice"
            );
            assert!(
                rev.definitions.contains_key(*definition),
                "{name} has no definition {definition}"
            );
        }
    }
}

/// Every definition of revision `name` has a Rust type that reads and writes its values;
/// prints the coverage line (`label` after it names the revision where needed).
fn assert_every_definition_round_trips(name: &str, label: &str) {
    let rev = revision(name);
    let total = rev.definitions.len();
    let (covered, problems) = coverage(rev, rev.definitions.keys().map(String::as_str));
    println!("schema coverage: {covered}/{total} definitions{label}");
    assert!(
        covered == total && problems.is_empty(),
        "schema coverage{label}: {covered}/{total} definitions\n{}",
        report(&problems)
    );
}

#[test]
fn rust_types_round_trip_every_2025_11_25_definition() {
    assert_every_definition_round_trips(CURRENT, "");
}

#[test]
fn rust_types_round_trip_every_2026_07_28_definition() {
    assert_every_definition_round_trips(NEXT, &format!(" ({NEXT})"));
}

#[test]
fn the_2026_07_28_validators_reject_what_the_schema_forbids() {
    // Guards the harness for the new revision: results need `resultType`, requests the
    // per-request `_meta`, and the named errors their code.
    let next = revision(NEXT);
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let rejected = [
        ("CallToolResult", serde_json::json!({"content": []})),
        (
            "ListToolsResult",
            serde_json::json!({"resultType": "complete", "tools": []}),
        ),
        (
            "CallToolRequest",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}),
        ),
        (
            "RequestMetaObject",
            serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
        ),
        (
            "UnsupportedProtocolVersionError",
            serde_json::json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "m",
                "data": {"supported": [], "requested": "x"}}}),
        ),
        (
            "ParseError",
            serde_json::json!({"code": -32600, "message": "m"}),
        ),
        (
            "SubscriptionsListenResult",
            serde_json::json!({"resultType": "complete", "_meta": {}}),
        ),
        (
            "CacheableResult",
            serde_json::json!({"resultType": "complete", "ttlMs": -1, "cacheScope": "public"}),
        ),
    ];
    for (definition, value) in &rejected {
        assert!(
            !next.schema_errors(definition, value).is_empty(),
            "{definition} accepted {value}"
        );
    }
    assert!(
        next.schema_errors(
            "CallToolRequest",
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "x", "_meta": meta}})
        )
        .is_empty()
    );
}

#[test]
fn rust_types_round_trip_older_revision_definitions() {
    let mut problems = Vec::new();
    for name in OLDER {
        let rev = revision(name);
        let differing = differing_definitions(rev);
        let only_here = differing
            .iter()
            .filter(|d| !revision(CURRENT).definitions.contains_key(**d))
            .count();
        let (covered, found) = coverage(rev, rev.fixtures.keys().map(String::as_str));
        println!(
            "schema coverage {name}: {covered}/{} differing definitions with fixtures \
             ({} differ from {CURRENT}: {only_here} only in {name}, {} reshaped)",
            rev.fixtures.len(),
            differing.len(),
            differing.len() - only_here,
        );
        for definition in differing
            .iter()
            .filter(|d| !revision(CURRENT).definitions.contains_key(**d))
        {
            if !rev.fixtures.contains_key(*definition) {
                problems.push(format!(
                    "{name}/{definition}: only in {name}, needs a fixture"
                ));
            }
        }
        problems.extend(found);
    }
    assert!(
        problems.is_empty(),
        "older revisions:\n{}",
        report(&problems)
    );
}
/// (c) the property tests: values generated from the same schemas (issue 25).
mod properties;
