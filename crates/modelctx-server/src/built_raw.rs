//! JSON text the server built from valid pieces, made a `RawValue` without serde_json
//! reading it again.
//!
//! serde_json offers no unchecked constructor: `RawValue::from_string` parses the whole
//! text (about 2.7k instructions for a finished 2026-07-28 echo result, a third of what
//! finishing costs). Its `Deserialize` impl for `Box<RawValue>` takes the text it is
//! handed as is — that is how its own deserializers pass on a span they have already
//! parsed: it asks for a newtype, expects a one-entry map whose key is the name it
//! asked with and whose value is the text. [`BuiltText`] is a deserializer that answers
//! exactly that and nothing else (it echoes the name, so it depends on the shape of
//! that exchange, not on the name). Should serde_json ever change the exchange, the
//! deserialize fails and [`built_raw`] falls back to the checking constructor: slower,
//! never wrong. A unit test pins that the fast path is taken.
//!
//! The caller vouches for the text: only text assembled from valid JSON (an object's
//! text with members appended, each value itself valid JSON) may come here. Debug builds
//! check it.

use modelctx_types::RawValue;
use serde::Deserialize;
use serde::de::value::{Error, StrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};

/// `text` (valid JSON by construction) as a `RawValue`, without a second parse when
/// serde_json's exchange is as known, through `RawValue::from_string` otherwise; `None`
/// when neither takes it (the caller then builds the result the general way).
pub(crate) fn built_raw(text: String) -> Option<Box<RawValue>> {
    debug_assert!(
        serde_json::from_str::<de::IgnoredAny>(&text).is_ok(),
        "built text is not valid JSON: {text}"
    );
    let mut slot = Some(text);
    if let Ok(raw) = Box::<RawValue>::deserialize(BuiltText(&mut slot)) {
        return Some(raw);
    }
    slot.and_then(|text| RawValue::from_string(text).ok())
}

/// Hands its text to `Box<RawValue>`'s visitor as serde_json's deserializers do (the
/// text stays in the slot until the visitor takes it).
struct BuiltText<'a>(&'a mut Option<String>);

impl<'de> de::Deserializer<'de> for BuiltText<'_> {
    type Error = Error;

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_map(OneEntry {
            key: Some(name),
            text: self.0,
        })
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Error> {
        Err(de::Error::custom("built text is read only as a raw value"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// The one entry: the name asked for, then the text.
struct OneEntry<'a> {
    key: Option<&'static str>,
    text: &'a mut Option<String>,
}

impl<'de> MapAccess<'de> for OneEntry<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.key.take() {
            Some(name) => seed
                .deserialize(StrDeserializer::<Error>::new(name))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some(text) = self.text.take() else {
            return Err(de::Error::custom("the built text was taken already"));
        };
        let text: StringDeserializer<Error> = text.into_deserializer();
        seed.deserialize(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path is taken (a change in serde_json's exchange would fall back to the
    /// checking constructor silently; this notices it).
    #[test]
    fn built_text_becomes_a_raw_value_without_a_second_parse() {
        let text = r#"{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}"#;
        let mut slot = Some(text.to_owned());
        let raw = Box::<RawValue>::deserialize(BuiltText(&mut slot)).unwrap();
        assert!(slot.is_none(), "the visitor took the text");
        assert_eq!(raw.get(), text);
        assert_eq!(built_raw(text.to_owned()).unwrap().get(), text);
    }

    #[test]
    fn built_text_is_only_a_raw_value() {
        let mut slot = Some("1".to_owned());
        assert!(serde_json::Value::deserialize(BuiltText(&mut slot)).is_err());
        assert!(String::deserialize(BuiltText(&mut slot)).is_err());
        assert_eq!(slot.as_deref(), Some("1"), "a refusal leaves the text");
    }
}
