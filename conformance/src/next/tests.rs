use super::*;

const RELEASED: &str = r#"
spec_versions = ["2025-11-25", "2026-07-28"]
[sdk_cells]
in-memory = ["2025-11-25", "2026-07-28"]

[[requirement]]
id = "a:kept"
section = "S"
source = "sdk"
behavior = "kept"

[[requirement]]
id = "a:renamed"
section = "S"
source = "sdk"
behavior = "renamed"

[[requirement]]
id = "a:folded"
section = "S"
source = "sdk"
behavior = "folded into a:kept"

[[requirement]]
id = "a:dropped"
section = "S"
source = "sdk"
behavior = "dropped"
"#;

const NEXT: &str = r#"
[[changed]]
id = "a:kept"
added_in = "2026-07-28"

[[gone]]
id = "a:renamed"
successor = "b:renamed"

[[gone]]
id = "a:folded"
successor = "a:kept"

[[gone]]
id = "a:dropped"
not_carried = "no successor"

[[requirement]]
id = "b:new"
section = "New"
source = "sdk"
behavior = "new"
"#;

fn reference() -> Value {
    let r = |id: &str, added: Option<&str>| {
        serde_json::json!({"id": id, "section": "Ref", "source": "sdk", "transports": null,
            "added_in": added, "removed_in": null, "supersedes": [], "superseded_by": null,
            "arm_exclusions": []})
    };
    serde_json::json!({"requirements": [
        r("a:kept", Some("2026-07-28")), r("b:renamed", None), r("b:new", None),
        r("b:unstated", Some("2026-07-28"))
    ]})
}

#[test]
fn the_next_manifest_is_the_released_one_changed() {
    let released = Manifest::parse(RELEASED).unwrap();
    let next = Next::build(RELEASED, NEXT, Some(&reference())).unwrap();
    let m = next.manifest();
    let ids: Vec<&str> = m.ids().into_iter().collect();
    assert_eq!(ids, ["a:kept", "b:new", "b:renamed", "b:unstated"]);
    // The change applies; the statement of a renamed ID carries over under its successor.
    assert!(
        !m.get("a:kept")
            .unwrap()
            .in_window(crate::SpecVersion::V2025_11_25)
    );
    assert_eq!(m.get("b:renamed").unwrap().behavior, "renamed");
    // Former IDs resolve: one test, both names.
    assert_eq!(m.get("a:renamed").unwrap().id, "b:renamed");
    assert_eq!(m.get("a:folded").unwrap().id, "a:kept");
    assert!(!m.contains("a:dropped"));
    // The reference's IDs we do not state yet are held, unstated.
    assert!(!m.get("b:unstated").unwrap().is_stated());
    assert!(m.get("b:new").unwrap().is_stated());
    assert!(next.mapping_problems(&released).is_empty());
    // A test's cells: each ID where it is at home.
    let both = crate::Cell::parse("in-memory@2025-11-25").unwrap();
    assert!(cells_for(&released, Some(m), &["a:kept"]).contains(&both));
    assert!(!cells_for(&released, Some(m), &["b:unstated"]).contains(&both));
}

#[test]
fn every_gone_id_needs_a_fate() {
    let released = Manifest::parse(RELEASED).unwrap();
    let partial = NEXT.replace(
        "[[gone]]\nid = \"a:dropped\"\nnot_carried = \"no successor\"\n",
        "",
    );
    let next = Next::build(RELEASED, &partial, Some(&reference())).unwrap();
    let problems = next.mapping_problems(&released);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("a:dropped"));
    let both = NEXT.replace(
        "not_carried = \"no successor\"",
        "not_carried = \"x\"\nsuccessor = \"a:kept\"",
    );
    assert!(Next::build(RELEASED, &both, None).is_err());
    let unknown = NEXT.replace("id = \"a:kept\"\nadded_in", "id = \"a:nope\"\nadded_in");
    assert!(Next::build(RELEASED, &unknown, None).is_err());
}
