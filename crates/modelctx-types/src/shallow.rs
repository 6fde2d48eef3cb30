//! A JSON value read only as far as a lenient member needs: a string (borrowed when it
//! can be), an integer that fits `i64`, or "something else", which is read through to its
//! end and dropped, never buffered. For members that take one or two kinds and treat
//! every other kind alike. Unstable: for the SDK's own crates.
//!
//! ```
//! use modelctx_types::shallow::Shallow;
//! let read = |text| serde_json::from_str::<Shallow>(text).unwrap();
//! assert!(matches!(read(r#""tok""#), Shallow::Str(s) if s == "tok"));
//! assert!(matches!(read("-7"), Shallow::Int(-7)));
//! assert!(matches!(read("18446744073709551615"), Shallow::Other));
//! assert!(matches!(read(r#"{"a": [1, 2.5, null]}"#), Shallow::Other));
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// See the module's doc.
#[derive(Debug)]
pub enum Shallow<'a> {
    /// A string.
    Str(Cow<'a, str>),
    /// An integer that fits `i64`.
    Int(i64),
    /// Anything else: a boolean, a fraction, an integer above `i64::MAX`, `null`, an
    /// array or an object.
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Shallow<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShallowVisitor(std::marker::PhantomData))
    }
}

struct ShallowVisitor<'a>(std::marker::PhantomData<&'a str>);

impl<'de: 'a, 'a> Visitor<'de> for ShallowVisitor<'a> {
    type Value = Shallow<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Shallow::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Shallow::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Shallow::Str(Cow::Owned(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Shallow::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(Shallow::Other, Shallow::Int))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Shallow::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Shallow::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Shallow::Other)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Shallow::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        de::IgnoredAny.visit_seq(seq).map(|_| Shallow::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        de::IgnoredAny.visit_map(map).map(|_| Shallow::Other)
    }
}
