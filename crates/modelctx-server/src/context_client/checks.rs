//! The spec's rules a request to the client is checked against before anything is
//! sent: form schemas a validator would compile and absolute URLs (the tools of
//! sampling messages: `CreateMessageRequestParams::check_tool_messages`).

use modelctx_types::{
    EnumSchema, MultiSelectEnumSchema, PrimitiveSchemaDefinition, RequestedSchema,
    SingleSelectEnumSchema,
};

use super::ClientRequestError;

/// Refuses what a JSON Schema 2020-12 validator would not compile: a `$schema` that
/// names no JSON Schema dialect, titled choices with no option (`oneOf`/`anyOf` need at
/// least one), a field name listed twice in `required`, and a bound that is not a finite
/// number.
pub(super) fn check_form(schema: &RequestedSchema) -> Result<(), ClientRequestError> {
    let invalid =
        |reason: String| ClientRequestError::refused(format!("invalid form schema: {reason}"));
    if let Some(dialect) = &schema.schema
        && !is_dialect(dialect)
    {
        return Err(invalid(format!("{dialect:?} names no JSON Schema dialect")));
    }
    if let Some(required) = &schema.required
        && let Some((_, name)) = required
            .iter()
            .enumerate()
            .find(|(i, name)| required[..*i].contains(name))
    {
        return Err(invalid(format!("`required` lists {name:?} twice")));
    }
    for (name, field) in &schema.properties.0 {
        let empty_choice = match field {
            PrimitiveSchemaDefinition::Enum(EnumSchema::Single(
                SingleSelectEnumSchema::Titled(s),
            )) => s.one_of.is_empty(),
            PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Titled(
                m,
            ))) => m.items.any_of.is_empty(),
            _ => false,
        };
        if empty_choice {
            return Err(invalid(format!("field `{name}` offers no option")));
        }
        if let PrimitiveSchemaDefinition::Number(n) = field
            && [n.minimum, n.maximum]
                .iter()
                .flatten()
                .any(|b| !b.is_finite())
        {
            return Err(invalid(format!(
                "field `{name}` has a bound that is not a finite number"
            )));
        }
    }
    Ok(())
}

/// Whether `uri` names a JSON Schema dialect (draft-04 to 2020-12, or the current one),
/// with or without a trailing `#`, over http or https.
fn is_dialect(uri: &str) -> bool {
    let uri = uri.trim_end_matches('#');
    let path = uri
        .strip_prefix("https://json-schema.org/")
        .or_else(|| uri.strip_prefix("http://json-schema.org/"));
    matches!(
        path,
        Some(
            "draft/2020-12/schema"
                | "draft/2019-09/schema"
                | "draft-07/schema"
                | "draft-06/schema"
                | "draft-04/schema"
                | "schema"
        )
    )
}

pub(super) fn is_absolute_url(url: &str) -> bool {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
                && !rest.is_empty()
                && !url.chars().any(char::is_whitespace)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn forms_no_json_schema_validator_would_compile_are_refused() {
        let form = |value: Value| -> RequestedSchema { serde_json::from_value(value).unwrap() };
        let ok = form(
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema#",
            "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        );
        assert!(check_form(&ok).is_ok());
        for (bad, why) in [
            (
                json!({"$schema": "https://example.test/mine", "type": "object", "properties": {}}),
                "dialect",
            ),
            (
                json!({"type": "object", "properties": {}, "required": ["a", "a"]}),
                "twice",
            ),
            (
                json!({"type": "object", "properties": {"c": {"type": "string", "oneOf": []}}}),
                "no option",
            ),
            (
                json!({"type": "object", "properties": {"c": {"type": "array", "items": {"anyOf": []}}}}),
                "no option",
            ),
        ] {
            let err = check_form(&form(bad)).unwrap_err();
            assert!(err.is_refused() && err.to_string().contains(why), "{err}");
        }
        let infinite = RequestedSchema::new().with_property(
            "n",
            modelctx_types::NumberSchema::new(modelctx_types::NumberType::Number)
                .with_maximum(f64::INFINITY),
            false,
        );
        assert!(
            check_form(&infinite)
                .unwrap_err()
                .to_string()
                .contains("finite")
        );
        assert!(is_dialect("http://json-schema.org/draft-07/schema#") && !is_dialect("draft-07"));
    }

    #[test]
    fn absolute_urls_have_a_scheme() {
        assert!(is_absolute_url("https://a.test/x") && !is_absolute_url("a.test/x"));
    }
}
