//! Reading a wire struct that keeps the keys this SDK does not know (its `.. extra`
//! member, see [`wire_struct!`](crate::setters::wire_struct)) in one pass over the
//! object, without serde's `flatten` and the buffering it does.
//!
//! The struct's known members are read by a `Deserialize` derived for them alone (so
//! every serde attribute on them counts as written: names, defaults, readers, errors for
//! a duplicate or a missing member). [`KeepUnknown`] is the deserializer handed to it:
//! it reads the object, gives the derived code the keys among the member names serde
//! lists, and keeps every other key's value in a [`JsonObject`]. None of it is generic
//! over the struct, so each struct adds only its derived reader.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::base::JsonObject;

/// A deserializer that reads a struct from the object `inner` holds, keeping the keys
/// that are not among the struct's member names in `extra` (a key given twice keeps its
/// last value). Only a struct reads from it; any other request reads the object with
/// every key unknown.
pub(crate) struct KeepUnknown<'a, D> {
    inner: D,
    extra: &'a mut JsonObject,
}

impl<'a, D> KeepUnknown<'a, D> {
    /// Reads from `inner`, keeping unknown keys in `extra`.
    pub(crate) fn new(inner: D, extra: &'a mut JsonObject) -> Self {
        Self { inner, extra }
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeepUnknown<'_, D> {
    type Error = D::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(Object {
            fields,
            visitor,
            extra: self.extra,
        })
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.deserialize_struct("", &[], visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

/// The visitor of the object: hands the struct's visitor the object's known keys.
struct Object<'a, V> {
    fields: &'static [&'static str],
    visitor: V,
    extra: &'a mut JsonObject,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Object<'_, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(KnownKeys {
            map,
            fields: self.fields,
            extra: self.extra,
        })
    }
}

/// The object's entries whose keys are member names; the others go to `extra` as they
/// are met.
struct KnownKeys<'a, A> {
    map: A,
    fields: &'static [&'static str],
    extra: &'a mut JsonObject,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for KnownKeys<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key_seed(KeyOf(self.fields))? {
            match key {
                Key::Member(name) => {
                    return seed.deserialize(name.into_deserializer()).map(Some);
                }
                Key::Other(name) => {
                    let value: Value = self.map.next_value()?;
                    self.extra.insert(name, value);
                }
            }
        }
        Ok(None)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A key read: one of the member names, or any other key (owned, to keep).
enum Key {
    Member(&'static str),
    Other(String),
}

/// Reads a key, telling the member names (these) from the others.
struct KeyOf(&'static [&'static str]);

impl KeyOf {
    fn member(&self, key: &str) -> Option<&'static str> {
        self.0.iter().copied().find(|name| *name == key)
    }
}

impl<'de> DeserializeSeed<'de> for KeyOf {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeyOf {
    type Value = Key;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match self.member(key) {
            Some(name) => Key::Member(name),
            None => Key::Other(key.to_owned()),
        })
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Key, E> {
        Ok(match self.member(&key) {
            Some(name) => Key::Member(name),
            None => Key::Other(key),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Value, json};

    use crate::{ClientCapabilities, GenericRequest, RootsCapability};

    /// `T` read from `text`, from the `Value` of it and from a borrowed `Value`: the
    /// three must agree, and the result is returned.
    fn read<T: for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(text: &str) -> T {
        let from_text: T = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(T::deserialize(&value).unwrap(), from_text);
        assert_eq!(serde_json::from_value::<T>(value).unwrap(), from_text);
        from_text
    }

    /// The error of reading `T` from `text`, without its position.
    fn error<T: for<'de> Deserialize<'de> + std::fmt::Debug>(text: &str) -> String {
        let message = serde_json::from_str::<T>(text).unwrap_err().to_string();
        message.split(" at line").next().unwrap().to_owned()
    }

    #[test]
    fn unknown_keys_are_kept_in_extra_at_every_level() {
        let text = r#"{"roots":{"listChanged":true,"x":1},"custom":{"a":[1,2.5]},"sampling":{}}"#;
        let caps: ClientCapabilities = read(text);
        assert_eq!(caps.extra.get("custom"), Some(&json!({"a": [1, 2.5]})));
        assert_eq!(caps.extra.len(), 1);
        let roots = caps.roots.as_ref().unwrap();
        assert_eq!(roots.list_changed, Some(true));
        assert_eq!(roots.extra.get("x"), Some(&json!(1)));
        assert!(caps.sampling.is_some());
        assert_eq!(
            serde_json::to_value(&caps).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn a_known_key_twice_is_an_error_an_unknown_one_keeps_its_last_value() {
        assert_eq!(
            error::<GenericRequest>(r#"{"method":"a","method":"b"}"#),
            "duplicate field `method`"
        );
        assert_eq!(
            error::<RootsCapability>(r#"{"listChanged":true,"listChanged":false}"#),
            "duplicate field `listChanged`"
        );
        let request: GenericRequest =
            serde_json::from_str(r#"{"x":1,"method":"m","x":2}"#).unwrap();
        assert_eq!(request.extra.get("x"), Some(&json!(2)));
    }

    #[test]
    fn a_missing_required_member_is_an_error_naming_it() {
        assert_eq!(
            error::<GenericRequest>(r#"{"params":{},"id":1}"#),
            "missing field `method`"
        );
        let value = json!({"params": {}, "id": 1});
        assert_eq!(
            GenericRequest::deserialize(&value).unwrap_err().to_string(),
            "missing field `method`"
        );
    }

    #[test]
    fn null_reads_as_absent_for_a_member_and_is_kept_for_an_unknown_key() {
        let roots: RootsCapability = read(r#"{"listChanged":null,"other":null}"#);
        assert_eq!(roots.list_changed, None);
        assert_eq!(roots.extra.get("other"), Some(&Value::Null));
        assert_eq!(
            error::<GenericRequest>(r#"{"method":null}"#),
            "invalid type: null, expected a string"
        );
    }

    #[test]
    fn only_an_object_reads_as_a_struct_with_extra() {
        assert_eq!(
            error::<RootsCapability>("5"),
            "invalid type: integer `5`, expected struct RootsCapability"
        );
        assert_eq!(
            error::<RootsCapability>("[true]"),
            "invalid type: sequence, expected struct RootsCapability"
        );
        assert_eq!(
            error::<GenericRequest>(r#"{"method":"m","params":[]}"#),
            "invalid type: sequence, expected a map"
        );
    }

    #[test]
    fn members_and_unknown_keys_read_in_any_order() {
        let request: GenericRequest =
            read(r#"{"jsonrpc":"2.0","params":{"a":1},"id":"x","method":"tools/call"}"#);
        assert_eq!(request.method, "tools/call");
        assert_eq!(
            request.params,
            Some(json!({"a": 1}).as_object().cloned().unwrap())
        );
        assert_eq!(request.extra.keys().collect::<Vec<_>>(), ["id", "jsonrpc"]);
    }
}
