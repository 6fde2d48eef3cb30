//! Elicitation form-schema checking: `RequestedSchema` and its `check_answer`.
//!
//! Input: the form's `requestedSchema` as JSON on the first line, the answer's
//! `content` as JSON on the rest. The form and the answer round-trip; the verdict does
//! not change when the answer round-trips, is the conjunction of the verdicts on each
//! field alone (plus the required names), ignores members the form does not describe,
//! and names a field of the form when it blames one.

use std::collections::BTreeMap;

use modelctx_types::{
    ElicitValue, PrimitiveSchemaDefinition, RequestedSchema, SchemaProperties, StringFormat,
};

use crate::{assert_stable, stable_if_decodes};

type Answer = BTreeMap<String, ElicitValue>;

/// A form with only the field `name`, optional.
fn single(name: &str, field: &PrimitiveSchemaDefinition) -> RequestedSchema {
    let mut form = RequestedSchema::new();
    form.properties = SchemaProperties(vec![(name.to_owned(), field.clone())]);
    form
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (schema, answer) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let form = stable_if_decodes::<RequestedSchema>("RequestedSchema", schema);
    let answer = stable_if_decodes::<Answer>("form answer", answer);

    // Formats take any text without panicking.
    if let Some(answer) = &answer {
        for value in answer.values() {
            if let ElicitValue::String(text) = value {
                for format in [
                    StringFormat::Email,
                    StringFormat::Uri,
                    StringFormat::Date,
                    StringFormat::DateTime,
                ] {
                    let _ = format.matches(text);
                }
            }
        }
    }
    let (Some(form), Some(answer)) = (form, answer) else {
        return;
    };

    let verdict = form.check_answer(&answer);
    assert_eq!(
        form.check_answer(&answer),
        verdict,
        "the verdict is not deterministic"
    );

    // The same answer after a trip through JSON gets the same verdict.
    let json = serde_json::to_vec(&answer).expect("an answer encodes");
    let back: Answer = serde_json::from_slice(&json).expect("an encoded answer decodes");
    assert_eq!(
        form.check_answer(&back),
        verdict,
        "the verdict changed over JSON"
    );

    // It blames a field the form names.
    if let Err(mismatch) = &verdict
        && let Some(name) = mismatch.field_name()
    {
        let named = form.properties.get(name).is_some()
            || form.required.iter().flatten().any(|r| r == name);
        assert!(named, "blamed `{name}`, which the form does not name");
    }

    // The verdict is: every required name present, and every described field fine alone.
    let required_ok = form
        .required
        .iter()
        .flatten()
        .all(|name| answer.contains_key(name));
    let fields_ok = form.properties.0.iter().all(|(name, field)| {
        answer.get(name).is_none_or(|value| {
            single(name, field)
                .check_answer(&answer_of(name, value))
                .is_ok()
        })
    });
    assert_eq!(
        verdict.is_ok(),
        required_ok && fields_ok,
        "the verdict is not the sum of its fields: {verdict:?}"
    );

    // Members the form does not describe pass unchecked.
    let mut extra = answer.clone();
    let mut name = String::from("_undescribed");
    while form.properties.get(&name).is_some() || form.required.iter().flatten().any(|r| *r == name)
    {
        name.push('_');
    }
    extra.insert(name, ElicitValue::Boolean(true));
    assert_eq!(
        form.check_answer(&extra).is_ok(),
        verdict.is_ok(),
        "an undescribed member changed the verdict"
    );

    assert_stable("RequestedSchema", &form);
}

fn answer_of(name: &str, value: &ElicitValue) -> Answer {
    BTreeMap::from([(name.to_owned(), value.clone())])
}
