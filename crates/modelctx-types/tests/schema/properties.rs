//! Property tests of the wire types (issue 25, "Fuzzing", the property-test point): for
//! every definition of every mapping table — each of 2025-11-25 and 2026-07-28, and the
//! definitions where 2025-06-18, 2025-03-26 and 2024-11-05 differ — values generated from
//! the official schema of that revision are read by the Rust type, written back unchanged,
//! read back as the same value writing the same JSON, and what the type writes validates
//! against that schema.
//!
//! The strategies are derived from the official schema itself ([`instances`]): the keywords
//! the MCP schemas use (`$ref`, `type`, `properties`, `required`, `additionalProperties`,
//! `items`, `const`, `enum`, `anyOf`, `allOf`, `minimum`, `maximum`, `minItems`,
//! `maxItems` and the formats `uri`, `uri-template`, `byte`). Mapped through a definition's
//! Rust type, such a strategy is that type's `Arbitrary` strategy ([`arbitrary`]): every
//! message, request, result, notification, content block and capability set the schema
//! allows, in test code only. A generated value that the schema refuses is a fault of the
//! generator and reported as such, so the strategies are checked too.
//!
//! Cases per definition: [`CASES`], or `PROPTEST_CASES` when set.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{CURRENT, FULL, NEXT, OLDER, Revision, difference, mapping_for, revision};

/// Cases per definition (about 5,800 in all); `PROPTEST_CASES=1000` for a deep run.
const CASES: u32 = 16;

/// How deep `$ref`s, arrays and free-form JSON nest before the generator keeps to the
/// smallest values the schema allows (empty arrays, required members only, scalars).
const MAX_DEPTH: u32 = 5;

/// Values the schema `node` of `rev` allows, as JSON.
fn instances(rev: &'static Revision, node: &Value, depth: u32) -> BoxedStrategy<Value> {
    let Some(obj) = node.as_object() else {
        // `true` (or any non-object) allows anything.
        return any_json(depth);
    };
    if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
        let name = target.rsplit('/').next().unwrap_or_default();
        let def = rev
            .definitions
            .get(name)
            .unwrap_or_else(|| panic!("{}: dangling $ref {target}", rev.name));
        return instances(rev, &narrowed(name, def), depth + 1);
    }
    if let Some(value) = obj.get("const") {
        return Just(value.clone()).boxed();
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        return proptest::sample::select(values.clone()).boxed();
    }
    if let Some(Value::Array(branches)) = obj.get("anyOf").or_else(|| obj.get("oneOf")) {
        let mut usable: Vec<&Value> = branches.iter().collect();
        if depth >= MAX_DEPTH {
            // Deep enough: keep to branches that are not containers where there are any
            // (JSONValue's scalars), so recursive definitions end.
            let scalars: Vec<&Value> = branches.iter().filter(|b| !is_container(rev, b)).collect();
            if !scalars.is_empty() {
                usable = scalars;
            }
        }
        return Union::new(usable.into_iter().map(|b| instances(rev, b, depth))).boxed();
    }
    if let Some(Value::Array(parts)) = obj.get("allOf") {
        return instances(rev, &merge_all_of(rev, obj, parts), depth);
    }
    match obj.get("type") {
        Some(Value::Array(types)) => Union::new(types.iter().map(|t| {
            let mut single = obj.clone();
            single.insert("type".to_owned(), t.clone());
            instances(rev, &Value::Object(single), depth)
        }))
        .boxed(),
        Some(Value::String(t)) => typed(rev, obj, t, depth),
        _ if obj.contains_key("properties") => typed(rev, obj, "object", depth),
        _ => any_json(depth),
    }
}

/// Whether a schema node describes an object or an array (through a `$ref` too).
fn is_container(rev: &Revision, node: &Value) -> bool {
    let mut node = node;
    while let Some(target) = node.get("$ref").and_then(Value::as_str) {
        let name = target.rsplit('/').next().unwrap_or_default();
        node = &rev.definitions[name];
    }
    match node.get("type") {
        Some(Value::String(t)) => t == "object" || t == "array",
        Some(Value::Array(_)) | None => node.get("properties").is_some(),
        _ => false,
    }
}

/// One object schema for an `allOf` of object schemas: the properties of every part
/// (a later part's wins: it narrows, as `URLElicitationRequiredError`'s `code`), the
/// union of their `required`.
fn merge_all_of(rev: &Revision, outer: &Map<String, Value>, parts: &[Value]) -> Value {
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for part in parts {
        let mut part = part;
        while let Some(target) = part.get("$ref").and_then(Value::as_str) {
            let name = target.rsplit('/').next().unwrap_or_default();
            part = &rev.definitions[name];
        }
        if let Some(Value::Object(p)) = part.get("properties") {
            for (k, v) in p {
                properties.insert(k.clone(), v.clone());
            }
        }
        if let Some(Value::Array(r)) = part.get("required") {
            for name in r {
                if !required.contains(name) {
                    required.push(name.clone());
                }
            }
        }
    }
    let mut merged = outer.clone();
    merged.remove("allOf");
    merged.insert("type".to_owned(), Value::from("object"));
    merged.insert("properties".to_owned(), Value::Object(properties));
    merged.insert("required".to_owned(), Value::Array(required));
    Value::Object(merged)
}

/// Where the Rust types are narrower than the schema, on purpose; the generator keeps to
/// what they take. Each is a rule the schema states only in prose (or that JSON-RPC
/// states), not a schema keyword:
/// - an `InputRequiredResult` says `"resultType": "input_required"` (results are told
///   apart by it, as the schema's `ResultType` describes);
/// - a JSON-RPC batch holds at least one message (JSON-RPC 2.0: an empty batch is an
///   invalid request);
/// - and, by member name ([`member`]), counts are not negative.
///
/// Integers are generated within `i64` (as `RequestId`, `ProgressToken` and `ErrorCode`
/// hold them).
fn narrowed(definition: &str, schema: &Value) -> Value {
    let mut schema = schema.clone();
    match definition {
        "InputRequiredResult" => {
            schema["properties"]["resultType"] = serde_json::json!({"const": "input_required"});
        }
        "JSONRPCBatchRequest" | "JSONRPCBatchResponse" => {
            schema["minItems"] = Value::from(1);
        }
        // 2025-03-26 writes its batches out inside the message union.
        "JSONRPCMessage" => {
            if let Some(Value::Array(branches)) = schema.get_mut("anyOf") {
                for branch in branches {
                    if branch.get("type") == Some(&Value::from("array")) {
                        branch["minItems"] = Value::from(1);
                    }
                }
            }
        }
        _ => {}
    }
    schema
}

/// Members the Rust types hold as `u64` (sizes, counts, lengths, token budgets, time
/// to live, poll intervals), which the schema types as any `integer`: a negative value
/// is refused as unreadable, on purpose, and the generator keeps them at zero or more.
const COUNTED: [&str; 9] = [
    "size",
    "maxTokens",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "ttl",
    "pollInterval",
    "total",
];

/// The schema of member `name`, narrowed where the Rust types are: [`COUNTED`] members
/// are zero or more.
fn member(name: &str, schema: &Value) -> Value {
    let mut schema = schema.clone();
    if COUNTED.contains(&name) && schema.get("minimum").is_none() {
        schema["minimum"] = Value::from(0);
    }
    schema
}

/// `value` with every number written the one way (`0.0` as `0`): JSON has one number
/// type, and the types write an integral number without a fraction (so `"progress":
/// 50` stays `50`), which turns a generated `0.0` into `0`, the same number.
fn by_value(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(by_value).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), by_value(v))).collect())
        }
        other => other.clone(),
    }
}

fn typed(
    rev: &'static Revision,
    obj: &Map<String, Value>,
    ty: &str,
    depth: u32,
) -> BoxedStrategy<Value> {
    match ty {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::from).boxed(),
        "integer" => {
            let min = obj.get("minimum").and_then(Value::as_i64);
            let max = obj.get("maximum").and_then(Value::as_i64);
            match (min, max) {
                (Some(lo), Some(hi)) => (lo..=hi).prop_map(Value::from).boxed(),
                (Some(lo), None) => prop_oneof![
                    3 => (lo..lo.saturating_add(1000)).prop_map(Value::from),
                    1 => (lo..=i64::MAX).prop_map(Value::from),
                ]
                .boxed(),
                _ => prop_oneof![
                    3 => (-1000i64..1000).prop_map(Value::from),
                    1 => any::<i64>().prop_map(Value::from),
                ]
                .boxed(),
            }
        }
        "number" => {
            let min = obj.get("minimum").and_then(Value::as_f64);
            let max = obj.get("maximum").and_then(Value::as_f64);
            match (min, max) {
                (Some(lo), Some(hi)) => (lo..=hi).prop_map(Value::from).boxed(),
                (Some(lo), None) => (lo..lo + 1e6).prop_map(Value::from).boxed(),
                _ => prop_oneof![
                    (-1e6f64..1e6).prop_map(Value::from),
                    (-1000i64..1000).prop_map(|n| Value::from(n as f64)),
                    any::<f64>()
                        .prop_filter("finite", |f| f.is_finite())
                        .prop_map(Value::from),
                ]
                .boxed(),
            }
        }
        "string" => match obj.get("format").and_then(Value::as_str) {
            Some("uri") => uri().prop_map(Value::from).boxed(),
            Some("uri-template") => "[a-z]{1,5}://[a-z]{1,8}(/[a-z]{1,4}){0,2}/\\{[a-z]{1,6}\\}"
                .prop_map(Value::from)
                .boxed(),
            Some("byte") => "([A-Za-z0-9+/]{4}){0,6}([A-Za-z0-9+/]{2}==)?"
                .prop_map(Value::from)
                .boxed(),
            Some(other) => panic!("{}: no generator for format {other}", rev.name),
            None => text().prop_map(Value::from).boxed(),
        },
        "array" => {
            let items = obj.get("items").cloned().unwrap_or(Value::Bool(true));
            let max_items = obj
                .get("maxItems")
                .and_then(Value::as_u64)
                .map_or(3, |m| m.min(3) as usize);
            let min_items = obj
                .get("minItems")
                .and_then(Value::as_u64)
                .map_or(0, |m| m as usize);
            let max_items = if depth >= MAX_DEPTH {
                min_items
            } else {
                max_items.max(min_items)
            };
            proptest::collection::vec(instances(rev, &items, depth + 1), min_items..=max_items)
                .prop_map(Value::Array)
                .boxed()
        }
        "object" => object(rev, obj, depth),
        other => panic!("{}: no generator for type {other}", rev.name),
    }
}

fn object(rev: &'static Revision, obj: &Map<String, Value>, depth: u32) -> BoxedStrategy<Value> {
    let empty = Map::new();
    let properties = obj
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut members: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (name, schema) in properties {
        let value = instances(rev, &member(name, schema), depth + 1);
        let name = name.clone();
        if required.contains(&name.as_str()) {
            members.push(value.prop_map(move |v| Some((name.clone(), v))).boxed());
        } else if depth < MAX_DEPTH {
            members.push(
                proptest::option::of(value)
                    .prop_map(move |v| v.map(|v| (name.clone(), v)))
                    .boxed(),
            );
        }
    }
    // Members beyond the declared ones only where the object is a free-form map (`_meta`,
    // `experimental`, an `arguments` map, a capability flag object): elsewhere the types
    // are tolerant of unknown members by design and do not keep them.
    let extra = match obj.get("additionalProperties") {
        Some(Value::Bool(false)) | None => None,
        Some(schema) if properties.is_empty() => Some(schema.clone()),
        Some(_) => None,
    };
    let extra: BoxedStrategy<Vec<(String, Value)>> = match extra {
        Some(schema) if depth < MAX_DEPTH => proptest::collection::vec(
            (
                "[a-zA-Z][a-zA-Z0-9_./-]{0,10}",
                instances(rev, &schema, depth + 1),
            ),
            0..3,
        )
        .boxed(),
        _ => Just(Vec::new()).boxed(),
    };
    (members, extra)
        .prop_map(|(members, extra)| {
            let mut map = Map::new();
            for (k, v) in extra {
                map.insert(k, v);
            }
            for (k, v) in members.into_iter().flatten() {
                map.insert(k, v);
            }
            Value::Object(map)
        })
        .boxed()
}

/// Any JSON value, nesting less as `depth` grows.
fn any_json(depth: u32) -> BoxedStrategy<Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    if depth >= MAX_DEPTH {
        return scalar.boxed();
    }
    scalar
        .prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z_]{1,6}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// Text: mostly printable characters of any script, sometimes what JSON must escape.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "\\PC{0,12}",
        1 => "[\\x00-\\x1f\"\\\\/\\u{7f}\\u{2028}\\u{fffd}]{0,4}",
    ]
    .boxed()
}

/// Absolute URIs (RFC 3986), as the `uri` format asks.
fn uri() -> impl Strategy<Value = String> {
    concat!(
        "[a-z][a-z0-9+.-]{0,6}:",
        "(//[a-z0-9.-]{1,10}(:[0-9]{1,4})?)?",
        "(/(%[0-9A-F]{2}|[a-zA-Z0-9._~!$&'()*+,;=:@-]){1,8}){0,3}",
        "(\\?[a-z0-9=&]{0,8})?(#[a-z0-9]{0,4})?"
    )
}

/// The `Arbitrary` strategy of the Rust type `T` that carries `definition` in `rev`:
/// every value the official schema allows, read as `T`.
fn arbitrary<T: DeserializeOwned + std::fmt::Debug>(
    rev: &'static Revision,
    definition: &str,
) -> impl Strategy<Value = T> {
    let pointer = format!("{}/{definition}", rev.container);
    instances(rev, &narrowed(definition, &rev.definitions[definition]), 0).prop_map(move |json| {
        // From text: envelope types hold `RawValue`s, which a `Value` cannot fill.
        serde_json::from_str::<T>(&json.to_string())
            .unwrap_or_else(|e| panic!("{pointer}: {json} does not read as the type: {e}"))
    })
}

/// Runs the round-trip property over every definition of the mapping table of `name`
/// (only those the table maps); the problems found, each with proptest's smallest case.
fn check_revision(name: &str) -> Vec<String> {
    let rev = revision(name);
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    let mut problems = Vec::new();
    for (definition, round_trip) in &mapping_for(name) {
        let strategy = instances(rev, &narrowed(definition, &rev.definitions[*definition]), 0);
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        let outcome = runner.run(&strategy, |generated| {
            let errors = rev.schema_errors(definition, &generated);
            if !errors.is_empty() {
                return Err(TestCaseError::fail(format!(
                    "the generator made a value the schema refuses: {}",
                    errors.join("; ")
                )));
            }
            let written = round_trip(&generated.to_string()).map_err(TestCaseError::fail)?;
            if let Some(diff) = difference("", &by_value(&generated), &by_value(&written)) {
                return Err(TestCaseError::fail(format!(
                    "the round trip changed it: {diff}"
                )));
            }
            let errors = rev.schema_errors(definition, &written);
            if !errors.is_empty() {
                return Err(TestCaseError::fail(format!(
                    "what the type wrote fails the schema: {}",
                    errors.join("; ")
                )));
            }
            Ok(())
        });
        match outcome {
            Ok(()) => {}
            Err(TestError::Fail(why, value)) => {
                problems.push(format!("{name}/{definition}: {why}\n      value: {value}"));
            }
            Err(TestError::Abort(why)) => problems.push(format!("{name}/{definition}: {why}")),
        }
    }
    problems
}

fn assert_clean(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} definitions fail:\n{}",
        problems.len(),
        super::report(problems)
    );
}

/// Issue 25, "Fuzzing", property tests: every wire type of 2025-11-25 round-trips
/// (value → JSON → value, the JSON stable) and writes what its schema allows.
#[test]
fn generated_2025_11_25_values_round_trip_and_validate() {
    assert_clean(&check_revision(CURRENT));
}

/// Issue 25, "Fuzzing", property tests: the same for every definition of 2026-07-28.
#[test]
fn generated_2026_07_28_values_round_trip_and_validate() {
    assert_clean(&check_revision(NEXT));
}

/// Issue 25, "Fuzzing", property tests: the same for the definitions where 2025-06-18,
/// 2025-03-26 and 2024-11-05 differ from 2025-11-25 (older shapes the same types read).
#[test]
fn generated_older_revision_values_round_trip_and_validate() {
    let problems: Vec<String> = OLDER.into_iter().flat_map(check_revision).collect();
    assert_clean(&problems);
}

/// Issue 25, "Fuzzing", property tests: the typed strategies at work — messages of both
/// sides built by [`arbitrary`] survive the envelope's own parser (`from_slice`) as the
/// same message, in both revisions.
#[test]
fn arbitrary_messages_survive_the_envelope_parser() {
    use modelctx_types::JsonRpcMessage;
    for name in FULL {
        let rev = revision(name);
        holds(
            name,
            64,
            arbitrary::<JsonRpcMessage>(rev, "JSONRPCMessage"),
            |message| {
                let text = serde_json::to_string(&message).expect("a message serialises");
                let parsed = JsonRpcMessage::from_slice(text.as_bytes())
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e:?}")))?;
                let again = serde_json::to_string(&parsed).expect("a message serialises");
                prop_assert_eq!(again, text);
                Ok(())
            },
        );
    }
}

/// Runs `property` over `strategy` with `cases` cases; panics with proptest's smallest
/// failing case.
fn holds<S: Strategy>(
    what: &str,
    cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    if let Err(e) = runner.run(&strategy, property) {
        panic!("{what}: {e}");
    }
}

/// Generated values of the union `$union` of revision `$rev` go to the generic envelope
/// and back as the same value (the request and notification unions share the calls).
macro_rules! survives_the_envelope {
    ($name:expr, $rev:expr, $union:ident) => {
        holds(
            $name,
            48,
            arbitrary::<$union>($rev, stringify!($union)),
            |message| {
                let envelope = message
                    .to_json_rpc()
                    .expect("a generated message has an envelope");
                prop_assert_eq!($union::from_json_rpc(&envelope), Ok(message));
                Ok(())
            },
        )
    };
}

/// Issue 25, "Fuzzing", property tests: the typed unions of each side (what the role
/// crates decode a request or notification into) go to the generic envelope and back
/// (`to_json_rpc`, `from_json_rpc`) as the same value, in both revisions.
#[test]
fn arbitrary_requests_and_notifications_survive_the_envelope() {
    use modelctx_types::{ClientNotification, ClientRequest, ServerNotification, ServerRequest};
    for name in FULL {
        let rev = revision(name);
        survives_the_envelope!(name, rev, ClientRequest);
        if rev.definitions.contains_key("ServerRequest") {
            survives_the_envelope!(name, rev, ServerRequest);
        }
        survives_the_envelope!(name, rev, ClientNotification);
        survives_the_envelope!(name, rev, ServerNotification);
    }
}
