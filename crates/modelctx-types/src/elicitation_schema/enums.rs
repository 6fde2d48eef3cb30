//! The enum field forms: single- and multi-select, untitled and titled, and the legacy
//! `enumNames` form.

use serde::Deserialize;
use serde::de::{self, Deserializer};

use super::{ArrayTypeTag, StringTypeTag, field_schema};
use crate::base::{JsonObject, from_object, str_member};

crate::setters::wire_struct! {
    /// One option of a titled enum: `{const, title}`.
    pub struct TitledEnumOption {
        /// The value.
        #[serde(rename = "const")]
        pub value: String,
        /// The display label.
        pub title: String,
    }
    /// An option.
    new(value: impl Into<String>, title: impl Into<String>);
}

field_schema! {
    /// A single choice among plain values (`{"type":"string","enum":[...]}`).
    pub struct UntitledSingleSelectEnumSchema {
        kind: StringTypeTag,
        /// The values.
        #[serde(rename = "enum")]
        pub values: Vec<String>,
        /// The default value.
        default?: String => with_default,
    }
    /// A choice among `values`.
    new(values: Vec<String>);
}

field_schema! {
    /// A single choice among titled options (`{"type":"string","oneOf":[{const,title}]}`).
    pub struct TitledSingleSelectEnumSchema {
        kind: StringTypeTag,
        /// The options.
        pub one_of: Vec<TitledEnumOption>,
        /// The default value.
        default?: String => with_default,
    }
    /// A choice among `options`.
    new(options: Vec<TitledEnumOption>) { one_of: options };
}

crate::setters::wire_struct! {
    /// `items` of an untitled multi-select: `{"type":"string","enum":[...]}`.
    pub struct UntitledEnumItems {
        #[serde(rename = "type")]
        kind: StringTypeTag = StringTypeTag::new(),
        /// The values.
        #[serde(rename = "enum")]
        pub values: Vec<String>,
    }
    /// Items among `values`.
    new(values: Vec<String>);
}

crate::setters::wire_struct! {
    /// `items` of a titled multi-select: `{"anyOf":[{const,title}]}`.
    pub struct TitledEnumItems {
        /// The options.
        pub any_of: Vec<TitledEnumOption>,
    }
    /// Items among `options`.
    pub fn new(options: Vec<TitledEnumOption>) -> Self {
        Self { any_of: options }
    }
}

field_schema! {
    /// Several choices among plain values (`{"type":"array","items":{"enum":[...]}}`).
    pub struct UntitledMultiSelectEnumSchema {
        kind: ArrayTypeTag,
        /// Minimum number of choices.
        min_items?: u64 => with_min_items,
        /// Maximum number of choices.
        max_items?: u64 => with_max_items,
        /// The values.
        pub items: UntitledEnumItems,
        /// The default choices.
        default?: Vec<String> => with_default,
    }
    /// Choices among `values`.
    new(values: Vec<String>) { items: UntitledEnumItems::new(values) };
}

field_schema! {
    /// Several choices among titled options (`{"type":"array","items":{"anyOf":[...]}}`).
    pub struct TitledMultiSelectEnumSchema {
        kind: ArrayTypeTag,
        /// Minimum number of choices.
        min_items?: u64 => with_min_items,
        /// Maximum number of choices.
        max_items?: u64 => with_max_items,
        /// The options.
        pub items: TitledEnumItems,
        /// The default choices.
        default?: Vec<String> => with_default,
    }
    /// Choices among `options`.
    new(options: Vec<TitledEnumOption>) { items: TitledEnumItems::new(options) };
}

field_schema! {
    /// The deprecated titled enum (`enum` + non-standard `enumNames`); the only enum form
    /// of 2025-06-18, where it was the `EnumSchema` definition itself.
    pub struct LegacyTitledEnumSchema {
        kind: StringTypeTag,
        /// The values.
        #[serde(rename = "enum")]
        pub values: Vec<String>,
        /// Display names, parallel to `values`.
        enum_names?: Vec<String> => with_enum_names,
        /// The default value.
        default?: String => with_default,
    }
    /// A choice among `values`.
    new(values: Vec<String>);
}

crate::setters::untagged_union! {
    /// `UntitledSingleSelectEnumSchema | TitledSingleSelectEnumSchema`.
    #[derive(Debug, Clone, PartialEq)]
    pub enum SingleSelectEnumSchema {
        /// Plain values.
        Untitled(UntitledSingleSelectEnumSchema),
        /// Titled options.
        Titled(TitledSingleSelectEnumSchema),
    }
    no From;
}

crate::setters::untagged_union! {
    /// `UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema`.
    #[derive(Debug, Clone, PartialEq)]
    pub enum MultiSelectEnumSchema {
        /// Plain values.
        Untitled(UntitledMultiSelectEnumSchema),
        /// Titled options.
        Titled(TitledMultiSelectEnumSchema),
    }
    no From;
}

crate::setters::untagged_union! {
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
    no From;
}

pub(super) fn enum_from_object<E: de::Error>(map: JsonObject) -> Result<Option<EnumSchema>, E> {
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

crate::setters::variant_of!(EnumSchema {
    Single(SingleSelectEnumSchema) "not a single-select enum schema",
    Multi(MultiSelectEnumSchema) "not a multi-select enum schema",
});
