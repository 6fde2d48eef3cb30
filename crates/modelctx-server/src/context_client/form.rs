//! Typed forms: the restricted form schema of a Rust type (feature `schemars`).
//!
//! `form_schema::<T>` reduces schemars' output to the spec's restricted subset, and an
//! accepted form is checked again against it before the handler sees the values.

use modelctx_types::RequestedSchema;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::ClientRequestError;

/// The form schema of `T`: its JSON Schema reduced to the spec's restricted subset, or an
/// error naming the field that does not fit.
///
/// ```
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Rsvp {
///     /// Your name.
///     name: String,
///     guests: u8,
///     vegetarian: Option<bool>,
/// }
/// let schema = modelctx_server::form_schema::<Rsvp>().unwrap();
/// assert_eq!(schema.required, Some(vec!["name".to_owned(), "guests".to_owned()]));
///
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Nested { address: Rsvp }
/// assert!(modelctx_server::form_schema::<Nested>().unwrap_err().is_unfit_form());
/// ```
///
/// Needs feature `schemars`.
pub fn form_schema<T: JsonSchema>() -> Result<RequestedSchema, ClientRequestError> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    reduce_form(schema.as_value())
        .map_err(|reason| ClientRequestError::unfit_form(format!("{}: {reason}", T::schema_name())))
}

fn reduce_form(root: &Value) -> Result<RequestedSchema, String> {
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form must be a struct with named fields".to_owned());
    }
    let empty = Map::new();
    let properties = match root.get("properties") {
        Some(Value::Object(p)) => p,
        None => &empty,
        Some(_) => return Err("`properties` is not an object".to_owned()),
    };
    let mut reduced = Map::new();
    for (name, field) in properties {
        reduced.insert(name.clone(), reduce_field(name, field)?);
    }
    let mut form = json!({"type": "object", "properties": reduced});
    if let Some(required) = root
        .get("required")
        .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()))
    {
        form["required"] = required.clone();
    }
    serde_json::from_value(form).map_err(|e| e.to_string())
}

/// Strips `null` from a nullable (optional) field's schema.
fn without_null(field: &Map<String, Value>) -> Map<String, Value> {
    let mut field = field.clone();
    if let Some(Value::Array(types)) = field.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() == 1 {
            field.insert("type".to_owned(), rest[0].clone());
        }
    }
    if let Some(Value::Array(values)) = field.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = field.get(key) {
            let rest: Vec<&Value> = options
                .iter()
                .filter(|o| {
                    o.get("type").and_then(Value::as_str) != Some("null")
                        && !o.get("const").is_some_and(Value::is_null)
                })
                .collect();
            if rest.len() == 1 && options.len() == 2 {
                if let Some(inner) = rest[0].as_object() {
                    let mut merged = without_null(inner);
                    field.remove(key);
                    for (k, v) in field {
                        merged.entry(k).or_insert(v);
                    }
                    return merged;
                }
            } else if rest.len() != options.len() {
                let rest: Vec<Value> = rest.into_iter().cloned().collect();
                field.insert(key.to_owned(), Value::Array(rest));
            }
        }
    }
    if field.get("default").is_some_and(Value::is_null) {
        field.remove("default");
    }
    field
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = from.get(*key) {
            to.insert((*key).to_owned(), v.clone());
        }
    }
}

/// `[{const, title}]` from a titled enum's options, or `None` when they are not all
/// string constants.
fn titled_options(options: &[Value]) -> Option<Vec<Value>> {
    options
        .iter()
        .map(|o| {
            let value = o.get("const")?.as_str()?;
            let title = o
                .get("title")
                .or_else(|| o.get("description"))
                .and_then(Value::as_str)
                .unwrap_or(value);
            Some(json!({"const": value, "title": title}))
        })
        .collect()
}

fn string_values(values: &[Value]) -> Option<Vec<Value>> {
    values
        .iter()
        .map(|v| v.as_str().map(|_| v.clone()))
        .collect()
}

fn reduce_field(name: &str, field: &Value) -> Result<Value, String> {
    let unfit = |what: &str| {
        Err(format!(
            "field `{name}` is {what}; a form holds only strings, numbers, integers, booleans and enums"
        ))
    };
    let Some(field) = field.as_object() else {
        return unfit("not described by a schema object");
    };
    let field = without_null(field);
    let mut out = Map::new();
    copy(&field, &mut out, &["title", "description", "default"]);
    let kind = field.get("type").and_then(Value::as_str);
    let options = field
        .get("oneOf")
        .or_else(|| field.get("anyOf"))
        .and_then(Value::as_array);
    match kind {
        Some("string") | None if field.get("enum").is_some() => {
            let values = field.get("enum").and_then(Value::as_array);
            let Some(values) = values.and_then(|v| string_values(v)) else {
                return unfit("an enum of non-string values");
            };
            out.insert("type".into(), "string".into());
            out.insert("enum".into(), Value::Array(values));
        }
        Some("string") | None if field.get("const").and_then(Value::as_str).is_some() => {
            out.insert("type".into(), "string".into());
            out.insert("enum".into(), json!([field["const"]]));
        }
        Some("string") | None if options.is_some() => {
            let Some(titled) = options.and_then(|o| titled_options(o)) else {
                return unfit("a choice among non-string or structured values");
            };
            out.insert("type".into(), "string".into());
            out.insert("oneOf".into(), Value::Array(titled));
        }
        Some("string") => {
            out.insert("type".into(), "string".into());
            copy(&field, &mut out, &["minLength", "maxLength"]);
            if let Some(format) = field.get("format").and_then(Value::as_str)
                && ["email", "uri", "date", "date-time"].contains(&format)
            {
                out.insert("format".into(), format.into());
            }
        }
        Some(number @ ("integer" | "number")) => {
            out.insert("type".into(), number.into());
            copy(&field, &mut out, &["minimum", "maximum"]);
        }
        Some("boolean") => {
            out.insert("type".into(), "boolean".into());
        }
        Some("array") => {
            let Some(items) = field.get("items").and_then(Value::as_object) else {
                return unfit("a list without an item schema");
            };
            let item_options = items
                .get("oneOf")
                .or_else(|| items.get("anyOf"))
                .and_then(Value::as_array);
            let reduced_items = if let Some(values) = items.get("enum").and_then(Value::as_array) {
                let Some(values) = string_values(values) else {
                    return unfit("a list of non-string choices");
                };
                json!({"type": "string", "enum": values})
            } else if let Some(titled) = item_options.and_then(|o| titled_options(o)) {
                json!({"anyOf": titled})
            } else {
                return unfit("a list of something other than enum choices");
            };
            out.insert("type".into(), "array".into());
            out.insert("items".into(), reduced_items);
            copy(&field, &mut out, &["minItems", "maxItems"]);
        }
        Some("object") => return unfit("a nested object"),
        Some(other) => return unfit(&format!("of type `{other}`")),
        None => return unfit("of no single type"),
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use modelctx_types::{
        EnumSchema, MultiSelectEnumSchema, PrimitiveSchemaDefinition, SingleSelectEnumSchema,
    };
    use serde::Deserialize;

    use super::*;

    #[derive(JsonSchema, Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Color {
        Red,
        Green,
    }

    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    enum Size {
        /// Small
        S,
        /// Large
        L,
    }

    fn default_count() -> i64 {
        3
    }

    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Everything {
        /// The email.
        #[schemars(email)]
        email: String,
        #[serde(default = "default_count")]
        count: i64,
        ratio: Option<f64>,
        ok: bool,
        color: Color,
        maybe_color: Option<Color>,
        size: Size,
        colors: Vec<Color>,
        sizes: Vec<Size>,
    }

    #[test]
    fn a_flat_struct_becomes_a_form() {
        let schema = form_schema::<Everything>().unwrap();
        let value = serde_json::to_value(&schema).unwrap();
        let props = &value["properties"];
        assert_eq!(props["email"]["format"], "email", "{value}");
        assert_eq!(props["email"]["description"], "The email.");
        assert_eq!(props["count"]["type"], "integer");
        assert_eq!(props["count"]["default"], 3, "{value}");
        assert_eq!(props["ratio"]["type"], "number");
        assert_eq!(props["color"]["enum"], json!(["red", "green"]));
        assert_eq!(
            props["maybe_color"]["enum"],
            json!(["red", "green"]),
            "{value}"
        );
        assert_eq!(
            props["size"]["oneOf"],
            json!([{"const": "S", "title": "Small"}, {"const": "L", "title": "Large"}]),
            "{value}"
        );
        // The multi-select schema of property `name`, if it is one.
        let multi = |name: &str| match schema.properties.get(name) {
            Some(PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(multi))) => Some(multi),
            _ => None,
        };
        let untitled = multi("colors");
        assert!(
            matches!(untitled, Some(MultiSelectEnumSchema::Untitled(_))),
            "{value}"
        );
        let titled = multi("sizes");
        assert!(
            matches!(titled, Some(MultiSelectEnumSchema::Titled(_))),
            "{value}"
        );
        assert!(matches!(
            schema.properties.get("size"),
            Some(PrimitiveSchemaDefinition::Enum(EnumSchema::Single(
                SingleSelectEnumSchema::Titled(_)
            )))
        ));
        let required = schema.required.unwrap();
        assert!(required.contains(&"email".to_owned()) && !required.contains(&"ratio".to_owned()));
    }

    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        x: i32,
    }

    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Nested {
        inner: Inner,
    }

    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Listy {
        names: Vec<String>,
    }

    #[test]
    fn unfit_types_are_refused_with_the_field_named() {
        let err = form_schema::<Nested>().unwrap_err();
        assert!(err.is_unfit_form() && err.is_refused());
        assert!(err.to_string().contains("`inner`"), "{err}");
        let err = form_schema::<Listy>().unwrap_err();
        assert!(err.to_string().contains("`names`"), "{err}");
        assert!(form_schema::<String>().unwrap_err().is_unfit_form());
    }
}
