//! The form of a form-mode elicitation: a flat object of primitive fields (string,
//! number, boolean, and the enum forms of SEP-1330 plus the legacy `enumNames` form).

mod enums;
mod validate;
mod value;

pub use enums::{
    EnumSchema, LegacyTitledEnumSchema, MultiSelectEnumSchema, SingleSelectEnumSchema,
    TitledEnumItems, TitledEnumOption, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema,
    UntitledEnumItems, UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
pub use validate::FormMismatch;
pub use value::ElicitValue;

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::base::{from_object, str_member};
use crate::tag::fixed_tag;
use enums::enum_from_object;

fixed_tag! {
    StringTypeTag, StringTypeValue = "string";
    BooleanTypeTag, BooleanTypeValue = "boolean";
    ArrayTypeTag, ArrayTypeValue = "array";
    ObjectTypeTag, ObjectTypeValue = "object";
}

crate::open_enum::open_enum! {
    /// The `format` of a string field.
    pub enum StringFormat {
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

/// Declares a field form: its `type` tag, `title` and `description`, then the members
/// given (a [`wire_struct!`](crate::setters::wire_struct) body, `default` last), with
/// `new` as declared and the items that follow.
macro_rules! field_schema {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            kind: $tag:ident,
            $($body:tt)*
        }
        $($rest:tt)*
    ) => {
        $crate::setters::wire_struct! {
            $(#[$attr])*
            pub struct $name {
                #[serde(rename = "type")]
                kind: $tag = $tag::new(),
                /// A display title.
                title?: String => with_title,
                /// A description.
                description?: String => with_description,
                $($body)*
            }
            $($rest)*
        }
    };
}

use field_schema;

field_schema! {
    /// A string field.
    #[derive(Default)]
    pub struct StringSchema {
        kind: StringTypeTag,
        /// Minimum length.
        min_length?: u64 => with_min_length,
        /// Maximum length.
        max_length?: u64 => with_max_length,
        /// The format.
        format?: StringFormat => with_format,
        /// The default value.
        default?: String => with_default,
    }
    /// A string field.
    new();
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

crate::setters::wire_struct! {
    /// A number or integer field.
    #[derive(Default)]
    pub struct NumberSchema {
        /// `number` or `integer`.
        #[serde(rename = "type")]
        pub kind: NumberType,
        /// A display title.
        title?: String => with_title,
        /// A description.
        description?: String => with_description,
        /// Minimum.
        minimum?: f64 => with_minimum,
        /// Maximum.
        maximum?: f64 => with_maximum,
        /// The default value.
        default?: f64 => with_default,
    }
    /// A field of this numeric type.
    pub fn new(kind: NumberType) -> Self {
        Self {
            kind,
            ..Self::default()
        }
    }
}

field_schema! {
    /// A boolean field.
    #[derive(Default)]
    pub struct BooleanSchema {
        kind: BooleanTypeTag,
        /// The default value.
        default?: bool => with_default,
    }
    /// A boolean field.
    new();
}

crate::setters::untagged_union! {
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
    read |map| {
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

crate::setters::wire_struct! {
    /// The `requestedSchema` of a form: a flat object of primitive fields.
    #[derive(Default)]
    pub struct RequestedSchema {
        /// The declared dialect.
        #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
        pub schema: Option<String>,
        #[serde(rename = "type")]
        kind: ObjectTypeTag,
        /// The fields.
        pub properties: SchemaProperties,
        /// The required field names.
        required?: Vec<String>,
    }
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

    crate::setters::setters! {
        with_schema(schema: impl Into<String>),
    }
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
