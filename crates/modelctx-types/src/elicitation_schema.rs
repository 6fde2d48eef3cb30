//! The form of a form-mode elicitation: a flat object of primitive fields (string,
//! number, boolean, and the enum forms of SEP-1330 plus the legacy `enumNames` form).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::base::{JsonObject, from_object, str_member};

tag!(StringTypeTag = "string");
tag!(BooleanTypeTag = "boolean");
tag!(ArrayTypeTag = "array");
tag!(ObjectTypeTag = "object");

open_enum! {
    /// The `format` of a string field.
    StringFormat {
        /// An email address.
        Email = "email",
        /// A URI.
        Uri = "uri",
        /// A date.
        Date = "date",
        /// A date and time.
        DateTime = "date-time",
    }
}

/// A string field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StringSchema {
    #[serde(rename = "type")]
    kind: StringTypeTag,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// The format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl StringSchema {
    /// A string field.
    pub fn new() -> Self {
        Self::default()
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_min_length => min_length: u64,
        with_max_length => max_length: u64,
        with_format => format: StringFormat,
        with_default => default: String,
    );
}

/// The `type` of a [`NumberSchema`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    #[default]
    Number,
    /// An integer.
    Integer,
}

/// A number or integer field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct NumberSchema {
    /// `number` or `integer`.
    #[serde(rename = "type")]
    pub kind: NumberType,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::base::ser_opt_f64"
    )]
    pub minimum: Option<f64>,
    /// Maximum.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::base::ser_opt_f64"
    )]
    pub maximum: Option<f64>,
    /// The default value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::base::ser_opt_f64"
    )]
    pub default: Option<f64>,
}

impl NumberSchema {
    /// A field of this numeric type.
    pub fn new(kind: NumberType) -> Self {
        Self {
            kind,
            ..Self::default()
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_minimum => minimum: f64,
        with_maximum => maximum: f64,
        with_default => default: f64,
    );
}

/// A boolean field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BooleanSchema {
    #[serde(rename = "type")]
    kind: BooleanTypeTag,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

impl BooleanSchema {
    /// A boolean field.
    pub fn new() -> Self {
        Self::default()
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_default => default: bool,
    );
}

/// One option of a titled enum: `{const, title}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledEnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub value: String,
    /// The display label.
    pub title: String,
}

impl TitledEnumOption {
    /// An option.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            title: title.into(),
        }
    }
}

/// A single choice among plain values (`{"type":"string","enum":[...]}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UntitledSingleSelectEnumSchema {
    #[serde(rename = "type")]
    kind: StringTypeTag,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl UntitledSingleSelectEnumSchema {
    /// A choice among `values`.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            kind: StringTypeTag,
            title: None,
            description: None,
            values,
            default: None,
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_default => default: String,
    );
}

/// A single choice among titled options (`{"type":"string","oneOf":[{const,title}]}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledSingleSelectEnumSchema {
    #[serde(rename = "type")]
    kind: StringTypeTag,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    pub one_of: Vec<TitledEnumOption>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl TitledSingleSelectEnumSchema {
    /// A choice among `options`.
    pub fn new(options: Vec<TitledEnumOption>) -> Self {
        Self {
            kind: StringTypeTag,
            title: None,
            description: None,
            one_of: options,
            default: None,
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_default => default: String,
    );
}

/// `items` of an untitled multi-select: `{"type":"string","enum":[...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UntitledEnumItems {
    #[serde(rename = "type")]
    kind: StringTypeTag,
    /// The values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
}

impl UntitledEnumItems {
    /// Items among `values`.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            kind: StringTypeTag,
            values,
        }
    }
}

/// `items` of a titled multi-select: `{"anyOf":[{const,title}]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledEnumItems {
    /// The options.
    pub any_of: Vec<TitledEnumOption>,
}

impl TitledEnumItems {
    /// Items among `options`.
    pub fn new(options: Vec<TitledEnumOption>) -> Self {
        Self { any_of: options }
    }
}

/// Several choices among plain values (`{"type":"array","items":{"enum":[...]}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UntitledMultiSelectEnumSchema {
    #[serde(rename = "type")]
    kind: ArrayTypeTag,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The values.
    pub items: UntitledEnumItems,
    /// The default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

impl UntitledMultiSelectEnumSchema {
    /// Choices among `values`.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            kind: ArrayTypeTag,
            title: None,
            description: None,
            min_items: None,
            max_items: None,
            items: UntitledEnumItems::new(values),
            default: None,
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_min_items => min_items: u64,
        with_max_items => max_items: u64,
        with_default => default: Vec<String>,
    );
}

/// Several choices among titled options (`{"type":"array","items":{"anyOf":[...]}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledMultiSelectEnumSchema {
    #[serde(rename = "type")]
    kind: ArrayTypeTag,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options.
    pub items: TitledEnumItems,
    /// The default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

impl TitledMultiSelectEnumSchema {
    /// Choices among `options`.
    pub fn new(options: Vec<TitledEnumOption>) -> Self {
        Self {
            kind: ArrayTypeTag,
            title: None,
            description: None,
            min_items: None,
            max_items: None,
            items: TitledEnumItems::new(options),
            default: None,
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_min_items => min_items: u64,
        with_max_items => max_items: u64,
        with_default => default: Vec<String>,
    );
}

/// The deprecated titled enum (`enum` + non-standard `enumNames`); the only enum form
/// of 2025-06-18, where it was the `EnumSchema` definition itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LegacyTitledEnumSchema {
    #[serde(rename = "type")]
    kind: StringTypeTag,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Display names, parallel to `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl LegacyTitledEnumSchema {
    /// A choice among `values`.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            kind: StringTypeTag,
            title: None,
            description: None,
            values,
            enum_names: None,
            default: None,
        }
    }

    with!(
        with_title => title: String,
        with_description => description: String,
        with_enum_names => enum_names: Vec<String>,
        with_default => default: String,
    );
}

/// `UntitledSingleSelectEnumSchema | TitledSingleSelectEnumSchema`.
#[derive(Debug, Clone, PartialEq)]
pub enum SingleSelectEnumSchema {
    /// Plain values.
    Untitled(UntitledSingleSelectEnumSchema),
    /// Titled options.
    Titled(TitledSingleSelectEnumSchema),
}

/// `UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema`.
#[derive(Debug, Clone, PartialEq)]
pub enum MultiSelectEnumSchema {
    /// Plain values.
    Untitled(UntitledMultiSelectEnumSchema),
    /// Titled options.
    Titled(TitledMultiSelectEnumSchema),
}

/// Every enum field form.
#[derive(Debug, Clone, PartialEq)]
pub enum EnumSchema {
    /// A single choice.
    Single(SingleSelectEnumSchema),
    /// Several choices.
    Multi(MultiSelectEnumSchema),
    /// The deprecated `enumNames` form.
    LegacyTitled(LegacyTitledEnumSchema),
}

/// A field of an elicitation form: string, number, boolean or enum.
///
/// Told apart by `type` and the keys present: `boolean`; `number`/`integer`; `array`
/// (multi-select, titled when `items.anyOf` is present); `string` with `oneOf` (titled
/// single-select), with `enumNames` (legacy), with `enum` (untitled single-select), or
/// else a plain string.
#[derive(Debug, Clone, PartialEq)]
pub enum PrimitiveSchemaDefinition {
    /// A string field.
    String(StringSchema),
    /// A number field.
    Number(NumberSchema),
    /// A boolean field.
    Boolean(BooleanSchema),
    /// An enum field.
    Enum(EnumSchema),
}

ser_forward!(SingleSelectEnumSchema { Untitled, Titled });
ser_forward!(MultiSelectEnumSchema { Untitled, Titled });
ser_forward!(EnumSchema {
    Single,
    Multi,
    LegacyTitled
});
ser_forward!(PrimitiveSchemaDefinition {
    String,
    Number,
    Boolean,
    Enum
});

fn enum_from_object<E: de::Error>(map: JsonObject) -> Result<Option<EnumSchema>, E> {
    Ok(Some(match str_member(&map, "type") {
        Some("array") => {
            let titled = map
                .get("items")
                .and_then(|i| i.as_object())
                .is_some_and(|i| i.contains_key("anyOf"));
            EnumSchema::Multi(if titled {
                MultiSelectEnumSchema::Titled(from_object(map)?)
            } else {
                MultiSelectEnumSchema::Untitled(from_object(map)?)
            })
        }
        Some("string") if map.contains_key("oneOf") => {
            EnumSchema::Single(SingleSelectEnumSchema::Titled(from_object(map)?))
        }
        Some("string") if map.contains_key("enumNames") => {
            EnumSchema::LegacyTitled(from_object(map)?)
        }
        Some("string") if map.contains_key("enum") => {
            EnumSchema::Single(SingleSelectEnumSchema::Untitled(from_object(map)?))
        }
        _ => return Ok(None),
    }))
}

impl<'de> Deserialize<'de> for EnumSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        enum_from_object(JsonObject::deserialize(deserializer)?)?
            .ok_or_else(|| de::Error::custom("not an enum schema"))
    }
}

impl<'de> Deserialize<'de> for SingleSelectEnumSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match EnumSchema::deserialize(deserializer)? {
            EnumSchema::Single(s) => Ok(s),
            _ => Err(de::Error::custom("not a single-select enum schema")),
        }
    }
}

impl<'de> Deserialize<'de> for MultiSelectEnumSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match EnumSchema::deserialize(deserializer)? {
            EnumSchema::Multi(s) => Ok(s),
            _ => Err(de::Error::custom("not a multi-select enum schema")),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        match str_member(&map, "type") {
            Some("boolean") => Ok(Self::Boolean(from_object(map)?)),
            Some("number" | "integer") => Ok(Self::Number(from_object(map)?)),
            Some("string" | "array") => match enum_from_object(map.clone())? {
                Some(e) => Ok(Self::Enum(e)),
                None if str_member(&map, "type") == Some("string") => {
                    Ok(Self::String(from_object(map)?))
                }
                None => Err(de::Error::custom("an array field must be an enum")),
            },
            Some(other) => Err(de::Error::unknown_variant(
                other,
                &["string", "number", "integer", "boolean", "array"],
            )),
            None => Err(de::Error::missing_field("type")),
        }
    }
}

impl From<StringSchema> for PrimitiveSchemaDefinition {
    fn from(s: StringSchema) -> Self {
        Self::String(s)
    }
}
impl From<NumberSchema> for PrimitiveSchemaDefinition {
    fn from(s: NumberSchema) -> Self {
        Self::Number(s)
    }
}
impl From<BooleanSchema> for PrimitiveSchemaDefinition {
    fn from(s: BooleanSchema) -> Self {
        Self::Boolean(s)
    }
}
impl From<EnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: EnumSchema) -> Self {
        Self::Enum(s)
    }
}
impl From<UntitledSingleSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: UntitledSingleSelectEnumSchema) -> Self {
        Self::Enum(EnumSchema::Single(SingleSelectEnumSchema::Untitled(s)))
    }
}
impl From<TitledSingleSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: TitledSingleSelectEnumSchema) -> Self {
        Self::Enum(EnumSchema::Single(SingleSelectEnumSchema::Titled(s)))
    }
}
impl From<UntitledMultiSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: UntitledMultiSelectEnumSchema) -> Self {
        Self::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Untitled(s)))
    }
}
impl From<TitledMultiSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: TitledMultiSelectEnumSchema) -> Self {
        Self::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Titled(s)))
    }
}
impl From<LegacyTitledEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: LegacyTitledEnumSchema) -> Self {
        Self::Enum(EnumSchema::LegacyTitled(s))
    }
}

/// The fields of a form, in the order the server wrote them (form order matters to
/// users, so this is a list rather than a sorted map).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaProperties(pub Vec<(String, PrimitiveSchemaDefinition)>);

impl SchemaProperties {
    /// A field by name.
    pub fn get(&self, name: &str) -> Option<&PrimitiveSchemaDefinition> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }
}

impl Serialize for SchemaProperties {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SchemaProperties {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SchemaProperties;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of field schemas")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = access.next_entry::<String, PrimitiveSchemaDefinition>()? {
                    if out.iter().any(|(n, _): &(String, _)| *n == k) {
                        return Err(de::Error::custom(format!("duplicate field `{k}`")));
                    }
                    out.push((k, v));
                }
                Ok(SchemaProperties(out))
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// The `requestedSchema` of a form: a flat object of primitive fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RequestedSchema {
    /// The declared dialect.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    #[serde(rename = "type")]
    kind: ObjectTypeTag,
    /// The fields.
    pub properties: SchemaProperties,
    /// The required field names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

impl RequestedSchema {
    /// An empty form.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field.
    #[must_use]
    pub fn with_property(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
        required: bool,
    ) -> Self {
        let name = name.into();
        if required {
            self.required
                .get_or_insert_with(Vec::new)
                .push(name.clone());
        }
        self.properties.0.push((name, schema.into()));
        self
    }

    with!(with_schema => schema: String);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_dispatch_and_keep_order() {
        let text = r#"{"type":"object","properties":{
            "z":{"type":"string","format":"email"},
            "a":{"type":"integer","minimum":1,"default":3},
            "m":{"type":"boolean"},
            "c":{"type":"string","enum":["x","y"]},
            "t":{"type":"string","oneOf":[{"const":"x","title":"X"}]},
            "l":{"type":"string","enum":["x"],"enumNames":["X"]},
            "u":{"type":"array","items":{"type":"string","enum":["p"]},"minItems":1},
            "v":{"type":"array","items":{"anyOf":[{"const":"p","title":"P"}]}}
        },"required":["z"]}"#;
        let s: RequestedSchema = serde_json::from_str(text).unwrap();
        let names: Vec<_> = s.properties.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["z", "a", "m", "c", "t", "l", "u", "v"]);
        use PrimitiveSchemaDefinition as P;
        assert!(matches!(s.properties.get("z"), Some(P::String(_))));
        assert!(
            matches!(s.properties.get("a"), Some(P::Number(n)) if n.kind == NumberType::Integer && n.default == Some(3.0))
        );
        assert!(matches!(s.properties.get("m"), Some(P::Boolean(_))));
        assert!(matches!(
            s.properties.get("c"),
            Some(P::Enum(EnumSchema::Single(
                SingleSelectEnumSchema::Untitled(_)
            )))
        ));
        assert!(matches!(
            s.properties.get("t"),
            Some(P::Enum(EnumSchema::Single(SingleSelectEnumSchema::Titled(
                _
            ))))
        ));
        assert!(matches!(
            s.properties.get("l"),
            Some(P::Enum(EnumSchema::LegacyTitled(_)))
        ));
        assert!(matches!(
            s.properties.get("u"),
            Some(P::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Untitled(
                _
            ))))
        ));
        assert!(matches!(
            s.properties.get("v"),
            Some(P::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Titled(_))))
        ));
        let back = serde_json::to_string(&s).unwrap();
        let reparsed: serde_json::Value = serde_json::from_str(&back).unwrap();
        assert_eq!(
            reparsed,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        assert!(back.find("\"z\"").unwrap() < back.find("\"a\"").unwrap());
    }
}
