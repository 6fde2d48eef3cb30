use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;

fn form(value: Value) -> RequestedSchema {
    serde_json::from_value(value).unwrap()
}

fn answer(value: Value) -> BTreeMap<String, ElicitValue> {
    serde_json::from_value(value).unwrap()
}

fn check(form_json: &Value, answer_json: Value) -> Result<(), FormMismatch> {
    form(form_json.clone()).check_answer(&answer(answer_json))
}

/// What `check` says when it refuses the answer (it must).
fn refusal(form_json: &Value, answer_json: Value) -> String {
    check(form_json, answer_json).unwrap_err().to_string()
}

/// What jsonschema (2020-12, formats asserted) says of the same form and answer.
fn reference(form_json: &Value, answer_json: &Value) -> bool {
    jsonschema::options()
        .should_validate_formats(true)
        .build(form_json)
        .unwrap()
        .is_valid(answer_json)
}

#[test]
fn required_fields_must_be_present() {
    let f =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]});
    let err = check(&f, json!({"a": "x"})).unwrap_err();
    assert_eq!(err.field_name(), Some("b"));
    assert!(err.to_string().contains("missing"), "{err}");
    assert!(check(&f, json!({"a": "x", "b": 1})).is_ok());
}

#[test]
fn undescribed_members_pass_as_in_json_schema() {
    let f = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert!(check(&f, json!({"other": [ "x" ]})).is_ok());
    assert!(check(&f, json!({})).is_ok());
}

#[test]
fn strings_check_type_length_in_characters() {
    let f = json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 3}}});
    assert!(check(&f, json!({"s": "ab"})).is_ok());
    assert!(
        check(&f, json!({"s": "äöü"})).is_ok(),
        "three characters, six bytes"
    );
    assert!(refusal(&f, json!({"s": "a"})).contains("minimum length"));
    assert!(refusal(&f, json!({"s": "abcd"})).contains("maximum length"));
    assert!(refusal(&f, json!({"s": 5})).contains("expected a string"));
    assert!(check(&f, json!({"s": ["ab"]})).is_err());
}

#[test]
fn numbers_and_integers_check_kind_and_inclusive_bounds() {
    let f = json!({"type": "object", "properties": {
        "n": {"type": "number", "minimum": 1.5, "maximum": 10},
        "i": {"type": "integer", "minimum": -2, "maximum": 2}}});
    assert!(check(&f, json!({"n": 1.5, "i": 2})).is_ok());
    assert!(check(&f, json!({"n": 10, "i": -2})).is_ok());
    assert!(refusal(&f, json!({"n": 1})).contains("minimum"));
    assert!(refusal(&f, json!({"n": 10.25})).contains("maximum"));
    assert!(check(&f, json!({"i": 1.0})).is_ok(), "1.0 is an integer");
    assert!(refusal(&f, json!({"i": 0.5})).contains("integer"));
    assert!(check(&f, json!({"i": 3})).is_err());
    assert!(refusal(&f, json!({"n": "2"})).contains("expected a number"));
    assert!(check(&f, json!({"n": true})).is_err());
}

#[test]
fn integer_bounds_compare_exactly() {
    // 2^53 + 1 is not representable as f64: comparing through f64 would call it equal.
    let f = json!({"type": "object", "properties": {"i": {"type": "integer", "maximum": 9_007_199_254_740_992_u64}}});
    assert!(check(&f, json!({"i": 9_007_199_254_740_992_i64})).is_ok());
    assert!(check(&f, json!({"i": 9_007_199_254_740_993_i64})).is_err());
    assert_eq!(cmp_int_float(i64::MAX, 9.3e18), Some(Ordering::Less));
    assert_eq!(cmp_int_float(i64::MIN, -9.3e18), Some(Ordering::Greater));
    assert_eq!(cmp_int_float(5, 5.5), Some(Ordering::Less));
    assert_eq!(cmp_int_float(-5, -5.5), Some(Ordering::Greater));
    assert_eq!(cmp_int_float(-5, -5.0), Some(Ordering::Equal));
    assert_eq!(cmp_int_float(0, f64::NAN), None);
}

#[test]
fn booleans_take_booleans_only() {
    let f = json!({"type": "object", "properties": {"b": {"type": "boolean"}}});
    assert!(check(&f, json!({"b": false})).is_ok());
    assert!(refusal(&f, json!({"b": "true"})).contains("boolean"));
}

#[test]
fn single_selects_take_one_listed_value() {
    let f = json!({"type": "object", "properties": {
        "u": {"type": "string", "enum": ["a", "b"]},
        "t": {"type": "string", "oneOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]},
        "l": {"type": "string", "enum": ["p", "q"], "enumNames": ["P", "Q"]},
        "d": {"type": "string", "oneOf": [{"const": "z", "title": "Z"}, {"const": "z", "title": "Z again"}]}}});
    assert!(check(&f, json!({"u": "b", "t": "x", "l": "q"})).is_ok());
    assert!(refusal(&f, json!({"u": "c"})).contains("not one of"));
    assert!(
        check(&f, json!({"t": "X"})).is_err(),
        "a title is not a value"
    );
    assert!(check(&f, json!({"l": "P"})).is_err());
    assert!(check(&f, json!({"u": ["a"]})).is_err());
    // `oneOf` wants exactly one match: a value listed twice matches none.
    assert!(refusal(&f, json!({"d": "z"})).contains("exactly one"));
}

#[test]
fn multi_selects_take_listed_values_within_item_bounds() {
    let f = json!({"type": "object", "properties": {
        "u": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
        "t": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}}}});
    assert!(check(&f, json!({"u": ["a", "c"], "t": []})).is_ok());
    assert!(
        check(&f, json!({"u": ["a", "a"]})).is_ok(),
        "no uniqueness is asked"
    );
    assert!(refusal(&f, json!({"u": []})).contains("minimum"));
    assert!(refusal(&f, json!({"u": ["a", "b", "c"]})).contains("maximum"));
    assert!(refusal(&f, json!({"u": ["d"]})).contains("not one of"));
    assert!(check(&f, json!({"t": ["X"]})).is_err());
    assert!(refusal(&f, json!({"u": "a"})).contains("list"));
}

/// `(format, text, valid)` cases for every known format.
fn format_cases() -> Vec<(StringFormat, String, bool)> {
    use StringFormat as F;
    let long_local = format!("{}@b.c", "x".repeat(65));
    let cases: [(F, &[&str], &[&str]); 4] = [
        (
            F::Email,
            &[
                "a@b.c",
                "first.last+tag@example.co.uk",
                "\"quoted @ here\"@example.com",
                "x@[127.0.0.1]",
                "x@[IPv6:::1]",
                "x@localhost",
            ],
            &[
                "",
                "a",
                "@b.c",
                "a@",
                "a b@c.d",
                ".a@b.c",
                "a..b@c.d",
                "a@-b.c",
                "a@b..c",
                "a@b.c.",
                "ü@b.c",
                "a@[1.2.3]",
                "a@b_c.d",
                &long_local,
            ],
        ),
        (
            F::Uri,
            &[
                "https://example.com",
                "urn:isbn:0451450523",
                "mailto:a@b.c",
                "http://u:p@[::1]:8080/a/b?q=1&r#f/?",
                "file:///etc/hosts",
                "x:",
                "http://[v1.fe]/",
                "a+b.c-d://h/%20",
            ],
            &[
                "",
                "/relative",
                "//host/x",
                "1http://x",
                "http://exa mple.com",
                "http://h/%zz",
                "http://h:80x/",
                "http://[::1/",
                "http://h/ä",
                "http://h/#a#b",
                "http://a@b@c/",
                "http://[::g]/",
            ],
        ),
        (
            F::Date,
            &["2024-02-29", "2000-02-29", "1999-12-31"],
            &[
                "2023-02-29",
                "1900-02-29",
                "2024-13-01",
                "2024-00-10",
                "2024-01-32",
                "2024-1-01",
                "2024/01/01",
                "24-01-01",
                "2024-01-01T00:00:00Z",
            ],
        ),
        (
            F::DateTime,
            &[
                "2024-01-02T03:04:05Z",
                "2024-01-02t03:04:05.123z",
                "2024-01-02T03:04:05+01:30",
                "2016-12-31T23:59:60Z",
                "2016-12-31T15:59:60-08:00",
            ],
            &[
                "2024-01-02",
                "2024-01-02T03:04:05",
                "2024-01-02T24:00:00Z",
                "2024-01-02T03:60:00Z",
                "2024-01-02T03:04:05.Z",
                "2024-01-02T03:04:05+1:00",
                "2024-01-02T03:04:05+24:00",
                "2024-01-02T12:00:60Z",
                "2024-01-02 03:04:05Z",
            ],
        ),
    ];
    let mut out = Vec::new();
    for (format, good, bad) in cases {
        out.extend(good.iter().map(|t| (format.clone(), (*t).to_owned(), true)));
        out.extend(bad.iter().map(|t| (format.clone(), (*t).to_owned(), false)));
    }
    out
}

#[test]
fn formats() {
    for (format, text, valid) in format_cases() {
        assert_eq!(format.matches(&text), valid, "{format} {text:?}");
    }
    assert!(StringFormat::Unknown("color".into()).matches("anything at all"));
}

#[test]
fn formats_agree_with_json_schema() {
    for (format, text, _) in format_cases() {
        let schema = json!({"type": "string", "format": format.as_str()});
        let expected = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
            .is_valid(&json!(text));
        assert_eq!(format.matches(&text), expected, "{format} {text:?}");
    }
}

#[test]
fn a_format_failure_names_the_field() {
    let f = json!({"type": "object", "properties": {"when": {"type": "string", "format": "date"}}});
    let err = check(&f, json!({"when": "tomorrow"})).unwrap_err();
    assert_eq!(err.field_name(), Some("when"));
    assert!(err.to_string().contains("date"), "{err}");
}

/// The checker agrees with a general JSON Schema validator on every form and answer here.
#[test]
fn agrees_with_json_schema() {
    let f = json!({"type": "object", "properties": {
        "s": {"type": "string", "minLength": 1, "maxLength": 4},
        "e": {"type": "string", "format": "email"},
        "u": {"type": "string", "format": "uri"},
        "d": {"type": "string", "format": "date"},
        "t": {"type": "string", "format": "date-time"},
        "n": {"type": "number", "minimum": -1.5, "maximum": 2.5},
        "i": {"type": "integer", "minimum": 0},
        "b": {"type": "boolean"},
        "c": {"type": "string", "enum": ["a", "b"]},
        "o": {"type": "string", "oneOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]},
        "l": {"type": "string", "enum": ["p"], "enumNames": ["P"]},
        "m": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1, "maxItems": 1},
        "mt": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}, "maxItems": 2}
    }, "required": ["s"]});
    let values = [
        json!("a"),
        json!(""),
        json!("abcde"),
        json!("äöüß"),
        json!("a@b.c"),
        json!("a@@b"),
        json!("https://x.test/p?q#f"),
        json!("no scheme"),
        json!("2024-02-29"),
        json!("2023-02-29"),
        json!("2024-01-02T03:04:05Z"),
        json!("2024-01-02T03:04:05"),
        json!(0),
        json!(-2),
        json!(2.5),
        json!(2.75),
        json!(1.0),
        json!(0.5),
        json!(true),
        json!("x"),
        json!("p"),
        json!("P"),
        json!(["a"]),
        json!(["a", "b"]),
        json!([]),
        json!(["x", "x"]),
        json!(["z"]),
    ];
    let names = [
        "s", "e", "u", "d", "t", "n", "i", "b", "c", "o", "l", "m", "mt",
    ];
    let mut compared = 0;
    for name in names {
        for value in &values {
            let answer_json = json!({"s": "ok", name: value});
            let expected = reference(&f, &answer_json);
            let got = check(&f, answer_json.clone());
            assert_eq!(got.is_ok(), expected, "{answer_json}: {got:?}");
            compared += 1;
        }
    }
    assert!(!reference(&f, &json!({})));
    assert!(check(&f, json!({})).is_err());
    assert_eq!(compared, names.len() * values.len());
}
