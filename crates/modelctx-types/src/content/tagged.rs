//! Decoding of `type`-tagged content unions without a detour through `serde_json::Value`.
//!
//! Every SDK we know writes `type` as the first member of a content block. When it comes
//! first, the block is decoded straight into its variant's struct: the `type` member is
//! handed back in front of the members still unread. Otherwise (or for a `type` this SDK
//! does not know) the object is collected first, as a general tagged union must be.
//! Results of tool calls are lists of such blocks, so this is on every call's path: the
//! detour through a `Value` map was a tenth of an in-memory call's CPU.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::base::JsonObject;

/// A union of structs told apart by their `type` member.
pub(crate) trait TaggedUnion: Sized {
    /// What the union is, for error messages.
    const EXPECTING: &'static str;

    /// Whether `tag` names one of the union's structs.
    fn is_known(tag: &str) -> bool;

    /// Decodes the struct `tag` names (a known one) from `object`, which still holds
    /// the `type` member.
    fn decode<'de, D: Deserializer<'de>>(tag: &str, object: D) -> Result<Self, D::Error>;

    /// An object whose `type` this SDK does not know, kept whole.
    fn unknown(object: JsonObject) -> Self;
}

/// Deserialises a [`TaggedUnion`].
pub(crate) fn deserialize<'de, T: TaggedUnion, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_map(TaggedVisitor::<T>(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: TaggedUnion> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Err(de::Error::missing_field("type"));
        };
        let mut object = JsonObject::new();
        if first == "type" {
            let value: Value = map.next_value()?;
            match value {
                Value::String(tag) if T::is_known(&tag) => {
                    let rest = Prepend {
                        tag: Some(&tag),
                        rest: map,
                    };
                    return T::decode(&tag, MapAccessDeserializer::new(rest));
                }
                other => {
                    object.insert(first, other);
                }
            }
        } else {
            object.insert(first, map.next_value()?);
        }
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            object.insert(key, value);
        }
        let tag = match object.get("type") {
            Some(Value::String(tag)) => tag.clone(),
            _ => return Err(de::Error::missing_field("type")),
        };
        if !T::is_known(&tag) {
            return Ok(T::unknown(object));
        }
        T::decode(&tag, Value::Object(object)).map_err(de::Error::custom)
    }
}

/// The rest of an object, with its `type` member (already read) put back in front.
struct Prepend<'t, A> {
    tag: Option<&'t str>,
    rest: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Prepend<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if self.tag.is_some() {
            return seed.deserialize(StrDeserializer::new("type")).map(Some);
        }
        self.rest.next_key_seed(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.tag.take() {
            Some(tag) => seed.deserialize(StrDeserializer::new(tag)),
            None => self.rest.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.rest
            .size_hint()
            .map(|n| n + usize::from(self.tag.is_some()))
    }
}

/// Declares a `type`-tagged union of content structs: the `#[non_exhaustive]` enum with
/// one variant per struct and a last `Unknown(JsonObject)` that keeps a block of a type
/// this SDK does not know whole; `kind` (the `type` tag); `From` each struct; and the
/// serde impls (through [`TaggedUnion`]: a block whose `type` comes first is decoded
/// straight into its struct). Each variant names its struct and its struct's tag type:
/// `Text(TextContent) = TextTag`.
macro_rules! tagged_union {
    (
        $(#[$attr:meta])*
        pub enum $name:ident: $expecting:literal {
            $($(#[$vattr:meta])* $variant:ident($ty:ty) = $tag:ident,)+
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vattr])* $variant($ty),)+
            /// A block of a type this SDK does not know, kept whole.
            Unknown($crate::base::JsonObject),
        }

        impl $name {
            /// The `type` tag.
            pub fn kind(&self) -> &str {
                match self {
                    $(Self::$variant(_) => $tag::VALUE,)+
                    Self::Unknown(m) => $crate::base::str_member(m, "type").unwrap_or(""),
                }
            }
        }

        $(impl From<$ty> for $name {
            fn from(c: $ty) -> Self {
                Self::$variant(c)
            }
        })+

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$variant(c) => c.serialize(serializer),)+
                    Self::Unknown(m) => m.serialize(serializer),
                }
            }
        }

        impl $crate::content::tagged::TaggedUnion for $name {
            const EXPECTING: &'static str = $expecting;

            fn is_known(tag: &str) -> bool {
                matches!(tag, $($tag::VALUE)|+)
            }

            fn decode<'de, D: ::serde::Deserializer<'de>>(
                tag: &str,
                object: D,
            ) -> Result<Self, D::Error> {
                Ok(match tag {
                    $($tag::VALUE => Self::$variant(::serde::Deserialize::deserialize(object)?),)+
                    _ => {
                        return Err(::serde::de::Error::custom(format!(
                            "unknown content type {tag}"
                        )));
                    }
                })
            }

            fn unknown(object: $crate::base::JsonObject) -> Self {
                Self::Unknown(object)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                $crate::content::tagged::deserialize(deserializer)
            }
        }
    };
}

pub(crate) use tagged_union;
