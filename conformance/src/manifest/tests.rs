use super::*;

const MATRIX: &str = r#"
spec_versions = ["2025-11-25", "2026-07-28"]

[transport_versions]
sse = ["2025-11-25"]
streamable-http-stateless = ["2025-11-25"]

[sdk_cells]
in-memory = ["2025-11-25", "2026-07-28"]
stdio = ["2025-11-25"]
streamable-http = ["2025-11-25"]
"#;

const TINY: &str = r#"
[[requirement]]
id = "tools:call:content:text"
section = "Tools"
source = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools"
behavior = "tools/call returns text content."

[[requirement]]
id = "transport:http:session-header"
section = "Hosting"
source = "sdk"
transports = ["sse"]
behavior = "Something HTTP."
deferred = "no HTTP transport yet"

[[requirement]]
id = "tools:list:order"
section = "Tools"
source = "issue:#12"
behavior = "Tools list in registration order."
divergence = "we sort by name"

[[requirement]]
id = "lifecycle:old"
section = "Lifecycle"
source = "sdk"
behavior = "old"
removed_in = "2026-07-28"
superseded_by = "lifecycle:new"
arm_exclusions = [{ transport = "stdio", reason = "requires-session", note = "why" }]

[[requirement]]
id = "lifecycle:new"
section = "Lifecycle"
source = "sdk"
behavior = "new"
added_in = "2026-07-28"
supersedes = ["lifecycle:old"]
"#;

fn manifest(requirements: &str) -> Result<Manifest, ManifestError> {
    Manifest::parse(&format!("{MATRIX}{requirements}"))
}

fn cell(text: &str) -> Cell {
    Cell::parse(text).unwrap()
}

fn cells(list: &[&str]) -> Vec<Cell> {
    let mut out: Vec<Cell> = list.iter().map(|c| cell(c)).collect();
    out.sort();
    out
}

#[test]
fn a_valid_manifest_loads_and_looks_up() {
    let m = manifest(TINY).unwrap();
    assert_eq!(m.requirements().len(), 5);
    assert_eq!(m.sections(), ["Tools", "Hosting", "Lifecycle"]);
    assert_eq!(m.spec_versions(), SpecVersion::ALL);
    assert_eq!(
        m.sdk_cells(),
        cells(&[
            "in-memory@2025-11-25",
            "in-memory@2026-07-28",
            "stdio@2025-11-25",
            "streamable-http@2025-11-25"
        ])
    );
    let http = m.get("transport:http:session-header").unwrap();
    assert_eq!(http.applies_to(), [cell("sse@2025-11-25")]);
    assert!(http.is_deferred());
    assert!(http.runs_in().is_empty());
    let text = m.get("tools:call:content:text").unwrap();
    // Every transport in every version, less the era locks (the forwarder leg's is
    // built in: 2025-11-25 only; the balancer legs run both eras).
    assert_eq!(text.applies_to().len(), 2 + 2 + 2 + 1 + 2 + 2 + 1 + 1);
    assert_eq!(text.runs_in(), m.sdk_cells());
    assert!(m.get("tools:call:nope").is_none());
    assert!(m.get("tools:list:order").unwrap().is_divergent());
    assert_eq!(m.cells_for(&["tools:call:content:text"]), m.sdk_cells());
    assert!(
        m.cells_for(&["tools:call:content:text", "transport:http:session-header"])
            .is_empty()
    );
}

#[test]
fn the_shared_http_leg_follows_streamable_http() {
    let text = r#"
spec_versions = ["2025-11-25", "2026-07-28"]
[sdk_cells]
streamable-http = ["2025-11-25", "2026-07-28"]
streamable-http-shared = ["2025-11-25"]
streamable-http-nginx = ["2025-11-25"]

[[requirement]]
id = "a:http"
section = "S"
source = "sdk"
transports = ["streamable-http"]
behavior = "x"

[[requirement]]
id = "a:carved"
section = "S"
source = "sdk"
transports = ["streamable-http"]
arm_exclusions = [{ transport = "streamable-http", version = "2025-11-25", reason = "requires-session" }]
behavior = "x"

[[requirement]]
id = "a:ours"
section = "S"
source = "sdk"
transports = ["streamable-http"]
arm_exclusions = [{ transport = "streamable-http-shared", reason = "requires-session" }]
behavior = "x"
"#;
    let m = Manifest::parse(text).unwrap();
    // A requirement on streamable HTTP applies to the shared leg and the balancer leg
    // (a variant of the shared one), in 2025-11-25 only.
    assert_eq!(
        m.get("a:http").unwrap().runs_in(),
        cells(&[
            "streamable-http@2025-11-25",
            "streamable-http@2026-07-28",
            "streamable-http-shared@2025-11-25",
            "streamable-http-nginx@2025-11-25"
        ])
    );
    // An exclusion of streamable HTTP carves the two-instance legs out too; one of the
    // shared leg, that leg and its balancer variant.
    assert_eq!(
        m.get("a:carved").unwrap().runs_in(),
        [cell("streamable-http@2026-07-28")]
    );
    assert_eq!(
        m.get("a:ours").unwrap().runs_in(),
        cells(&["streamable-http@2025-11-25", "streamable-http@2026-07-28"])
    );
    // The reference's vocabulary cannot name it.
    let named = text.replacen(
        "transports = [\"streamable-http\"]",
        "transports = [\"streamable-http-shared\"]",
        1,
    );
    assert!(Manifest::parse(&named).is_err());
}

#[test]
fn windows_and_exclusions_shape_the_cells() {
    let m = manifest(TINY).unwrap();
    let old = m.get("lifecycle:old").unwrap();
    assert!(old.in_window(SpecVersion::V2025_11_25));
    assert!(!old.in_window(SpecVersion::V2026_07_28));
    assert_eq!(
        old.runs_in(),
        cells(&["in-memory@2025-11-25", "streamable-http@2025-11-25"])
    );
    assert!(old.applies_to().contains(&cell("sse@2025-11-25")));
    assert!(!old.applies_to().contains(&cell("stdio@2025-11-25")));
    let new = m.get("lifecycle:new").unwrap();
    assert_eq!(new.runs_in(), [cell("in-memory@2026-07-28")]);
    assert_eq!(
        new.applies_to(),
        cells(&[
            "in-memory@2026-07-28",
            "stdio@2026-07-28",
            "streamable-http@2026-07-28",
            "streamable-http-nginx@2026-07-28",
            "streamable-http-haproxy@2026-07-28"
        ])
    );
    assert!(m.cells_for(&["lifecycle:old", "lifecycle:new"]).is_empty());
}

fn problems(text: &str) -> Vec<String> {
    manifest(text).unwrap_err().problems().to_vec()
}

fn one(fields: &str) -> String {
    format!("[[requirement]]\nsection = \"S\"\n{fields}\n")
}

#[test]
fn every_rule_is_enforced() {
    let spec = "source = \"https://modelcontextprotocol.io/specification/x#y\"";
    let dup = format!(
        "{}{}",
        one(&format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}")),
        one(&format!("id = \"a:b\"\nbehavior = \"y\"\n{spec}"))
    );
    assert!(problems(&dup)[0].contains("duplicate id"));

    let base = format!("id = \"a:b\"\nbehavior = \"x\"\n{spec}");
    let cases = [
        (
            format!("id = \"a:b\"\nbehavior = \" \"\n{spec}"),
            "behavior is empty",
        ),
        (
            format!("id = \"Ab\"\nbehavior = \"x\"\n{spec}"),
            "id must be",
        ),
        (
            "id = \"a:b\"\nbehavior = \"x\"\nsource = \"http://example.com\"".into(),
            "source",
        ),
        (
            "id = \"a:b\"\nbehavior = \"x\"\nsource = \"issue:12\"".into(),
            "source",
        ),
        (
            format!("{base}\ndeferred = \"r\"\ndivergence = \"n\""),
            "both set",
        ),
        (
            format!("{base}\ntransports = [\"in-memory\"]"),
            "unknown transport \"in-memory\"",
        ),
        (
            format!("{base}\ntransports = [\"http\"]"),
            "unknown transport",
        ),
        (format!("{base}\ntransports = []"), "transports is empty"),
        (format!("{base}\ndeferred = \"\""), "needs a reason"),
        (format!("{base}\ndefered = \"typo\""), "unknown field"),
        (
            format!("{base}\nadded_in = \"2024-11-05\""),
            "not one of spec_versions",
        ),
        (
            format!("{base}\nadded_in = \"2026-07-28\"\nremoved_in = \"2025-11-25\""),
            "window",
        ),
        (
            format!("{base}\narm_exclusions = [{{ transport = \"stdio\", reason = \"flaky\" }}]"),
            "reason \"flaky\"",
        ),
        (
            format!("{base}\narm_exclusions = [{{ reason = \"requires-session\" }}]"),
            "needs a transport, a version or both",
        ),
        (
            format!("{base}\ntransports = [\"sse\"]\nadded_in = \"2026-07-28\""),
            "applies to no cell",
        ),
        (
            format!("{base}\nsuperseded_by = \"a:c\""),
            "superseded_by unknown",
        ),
    ];
    for (fields, expected) in cases {
        let p = problems(&one(&fields));
        assert!(
            p.iter().any(|p| p.contains(expected)),
            "{fields}: expected {expected:?} in {p:?}"
        );
    }
}

#[test]
fn succession_must_agree_both_ways_and_be_versioned() {
    let one_sided = TINY.replace("supersedes = [\"lifecycle:old\"]", "");
    let p = problems(&one_sided);
    assert!(p.iter().any(|p| p.contains("does not list it")), "{p:?}");
    let unversioned = TINY.replace("removed_in = \"2026-07-28\"\n", "");
    let p = problems(&unversioned);
    assert!(p.iter().any(|p| p.contains("needs removed_in")), "{p:?}");
}

#[test]
fn the_matrix_is_checked() {
    let bad = "spec_versions = [\"2026-07-28\", \"2025-11-25\", \"2099-01-01\"]\n\
               [transport_versions]\nsse = [\"2025-11-25\"]\n\
               [sdk_cells]\nsse = [\"2026-07-28\"]\nwarp = [\"2025-11-25\"]\n";
    let p = Manifest::parse(bad).unwrap_err().problems().to_vec();
    for expected in [
        "unknown version \"2099-01-01\"",
        "oldest first",
        "outside the transport's era lock",
        "unknown transport \"warp\"",
    ] {
        assert!(p.iter().any(|p| p.contains(expected)), "{expected}: {p:?}");
    }
}

#[test]
fn all_problems_are_reported_at_once() {
    let text = format!(
        "{}{}",
        one("id = \"a:b\"\nbehavior = \"\"\nsource = \"sdk\""),
        one("id = \"a:c\"\nbehavior = \"x\"\nsource = \"nope\"")
    );
    assert_eq!(problems(&text).len(), 2);
}
