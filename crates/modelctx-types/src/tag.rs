//! Fixed-string members: the `type` of a content block, the `method` of a request,
//! `"jsonrpc": "2.0"`.
//!
//! A [`Tag`] is a zero-sized value that serialises as one fixed string and only
//! deserialises from that string, so a struct holding one checks the member when it is
//! read. The string comes from the type parameter: a marker implementing [`FixedStr`],
//! or a request or notification method through [`RequestTag`] and [`NotificationTag`].

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::method::{NotificationMethod, RequestMethod};

/// A type naming one fixed wire string.
pub(crate) trait FixedStr {
    /// The string.
    const VALUE: &'static str;
}

/// Declares fixed-string members: `fixed_tag! { TextTag, TextValue = "text"; }` is the
/// tag type `TextTag`, a [`Tag`] of the marker `TextValue` naming `"text"`.
macro_rules! fixed_tag {
    ($($tag:ident, $marker:ident = $value:literal;)+) => {$(
        #[doc = concat!("The `\"", $value, "\"` member value.")]
        pub(crate) type $tag = $crate::tag::Tag<$marker>;

        #[doc = concat!("Names `\"", $value, "\"`.")]
        pub(crate) enum $marker {}

        impl $crate::tag::FixedStr for $marker {
            const VALUE: &'static str = $value;
        }
    )+};
}

pub(crate) use fixed_tag;

/// A member whose value is always `T::VALUE`.
pub(crate) struct Tag<T>(PhantomData<fn() -> T>);

impl<T> Tag<T> {
    /// The tag (it has a single value).
    pub(crate) const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T: FixedStr> Tag<T> {
    /// The fixed string.
    pub(crate) const VALUE: &'static str = T::VALUE;
}

// The impls below are written by hand so that they hold for every `T`: a derive would
// ask the marker (often a method marker) to implement each trait too.

impl<T: FixedStr> fmt::Debug for Tag<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Tag").field(&T::VALUE).finish()
    }
}

impl<T> Clone for Tag<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Tag<T> {}

impl<T> PartialEq for Tag<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Tag<T> {}

impl<T> Hash for Tag<T> {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl<T> Default for Tag<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: FixedStr> Serialize for Tag<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(T::VALUE)
    }
}

impl<'de, T: FixedStr> Deserialize<'de> for Tag<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(FixedStrVisitor(T::VALUE))
            .map(|()| Self::new())
    }
}

/// Accepts one string and nothing else. It names the string as a value, not a type
/// parameter, so one visitor serves every [`Tag`].
struct FixedStrVisitor(&'static str);

impl<'de> de::Visitor<'de> for FixedStrVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        if s == self.0 {
            Ok(())
        } else {
            Err(E::invalid_value(
                de::Unexpected::Str(s),
                &format!("\"{}\"", self.0).as_str(),
            ))
        }
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<(), E> {
        match std::str::from_utf8(v) {
            Ok(s) => self.visit_str(s),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(v), &self)),
        }
    }
}

/// The `method` member of request `R`: `R::METHOD`.
pub(crate) type RequestTag<R> = Tag<RequestName<R>>;

/// Names the method of request `R` (never built; only its [`FixedStr`] impl is used).
pub(crate) struct RequestName<R>(PhantomData<fn() -> R>);

impl<R: RequestMethod> FixedStr for RequestName<R> {
    const VALUE: &'static str = R::METHOD;
}

/// The `method` member of notification `N`: `N::METHOD`.
pub(crate) type NotificationTag<N> = Tag<NotificationName<N>>;

/// Names the method of notification `N` (never built; only its [`FixedStr`] impl is
/// used).
pub(crate) struct NotificationName<N>(PhantomData<fn() -> N>);

impl<N: NotificationMethod> FixedStr for NotificationName<N> {
    const VALUE: &'static str = N::METHOD;
}

/// `"jsonrpc": "2.0"`.
pub(crate) type JsonRpcTag = Tag<JsonRpcVersion>;

/// The JSON-RPC version string.
pub(crate) enum JsonRpcVersion {}

impl FixedStr for JsonRpcVersion {
    const VALUE: &'static str = "2.0";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_its_string() {
        assert_eq!(
            serde_json::to_string(&JsonRpcTag::new()).unwrap(),
            r#""2.0""#
        );
        assert!(serde_json::from_str::<JsonRpcTag>(r#""2.0""#).is_ok());
        let err = serde_json::from_str::<JsonRpcTag>(r#""1.0""#).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(r#"invalid value: string "1.0", expected "2.0""#),
            "{err}"
        );
    }
}
