//! Small types shared by many messages: `_meta`, progress tokens, cursors.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::shallow::Shallow;

/// A progress token: associates `notifications/progress` with the request that asked
/// for them. A string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(Arc<str>),
}

impl<'de> Deserialize<'de> for ProgressToken {
    /// As serde's untagged reading of it did: an integer that fits `i64`, else a
    /// string; any other value is an error raised once the value is read (so it carries
    /// the same position), without buffering it.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Shallow::deserialize(deserializer)? {
            Shallow::Int(n) => Ok(Self::Number(n)),
            Shallow::Str(s) => Ok(Self::String(s.into())),
            Shallow::Other => Err(de::Error::custom(
                "data did not match any variant of untagged enum ProgressToken",
            )),
        }
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<i32> for ProgressToken {
    fn from(n: i32) -> Self {
        Self::Number(n.into())
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        Self::String(s.into())
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        Self::String(s.into())
    }
}

/// An opaque pagination cursor, issued by the server and handed back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cursor(pub String);

impl From<&str> for Cursor {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl From<String> for Cursor {
    fn from(s: String) -> Self {
        Self(s)
    }
}

/// The `_meta` member: an open object whose keys all survive a round trip.
///
/// Read it with [`get`](Self::get), the typed accessors (`progress_token`,
/// `protocol_version`, ...) or as a whole with [`as_map`](Self::as_map) and
/// [`iter`](Self::iter); build it with [`new`](Self::new), [`insert`](Self::insert) and
/// the setters, or from a map (`Meta::from(map)`).
///
/// A `_meta` read from JSON text by serde_json keeps that text and builds its map on
/// the first read: in protocol 2026-07-28 every request carries one (the envelope: a
/// dozen strings and several objects), and most handlers never look at it. Equality,
/// serialisation and every accessor see the map, so the two forms are
/// indistinguishable — except that a `_meta` whose text holds a number serde_json
/// cannot represent (beyond `f64`, such as `1e400`) reads as empty instead of failing
/// the decode of the message around it.
#[derive(Default)]
pub struct Meta {
    /// The object's JSON text as received (always an object, `{...}`), until the map is
    /// built from it; `None` once the map is the only form (built in code, or changed).
    text: Option<Arc<str>>,
    /// The map: set from the start when built in code, on the first read otherwise.
    map: OnceLock<Map<String, Value>>,
}

/// serde_json's name for its raw-value protocol: asked for a newtype of this name, its
/// deserializers hand over the value's text (validated, not decoded) as a one-entry
/// map keyed by this name; every other deserializer (serde's buffered content behind
/// `flatten` and internally tagged enums, a `Value`'s own when serde_json changes) calls
/// `visit_newtype_struct` or hands over the real map, which [`MetaVisitor`] decodes as
/// before. The name is serde_json's, not public API: if it ever changed, `Meta` would
/// fall back to the map (still correct; a unit test notices the lost laziness).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl Meta {
    /// From an object's JSON text, which serde_json validated.
    fn from_text(text: Arc<str>) -> Self {
        Self {
            text: Some(text),
            map: OnceLock::new(),
        }
    }

    /// A `_meta` read elsewhere, from its text `text`: a JSON object's text that
    /// serde_json has validated (as part of the message it came in). The text is shared,
    /// not copied. A text that is not such an object reads as an empty `_meta`.
    /// Unstable: for the SDK's own crates.
    #[doc(hidden)]
    pub fn unstable_from_shared_text(text: Arc<str>) -> Self {
        Self::from_text(text)
    }

    /// The text this `_meta` was read from, while it is unchanged (`None` once built or
    /// changed in code). Unstable: for the SDK's own crates and tests.
    #[doc(hidden)]
    pub fn unstable_text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The map, built from the text on first use.
    fn map(&self) -> &Map<String, Value> {
        self.map.get_or_init(|| {
            // The text is a valid JSON object; only a number beyond `f64` fails here.
            self.text
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_default()
        })
    }

    /// The map, to change: the text no longer describes it.
    fn map_mut(&mut self) -> &mut Map<String, Value> {
        self.map();
        self.text = None;
        match self.map.get_mut() {
            Some(map) => map,
            // `map()` above set it.
            None => unreachable!("the map was just built"),
        }
    }
}

impl Clone for Meta {
    fn clone(&self) -> Self {
        Self {
            text: self.text.clone(),
            map: self.map.clone(),
        }
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Meta").field(self.map()).finish()
    }
}

impl PartialEq for Meta {
    fn eq(&self, other: &Self) -> bool {
        match (&self.text, &other.text) {
            (Some(a), Some(b)) if a == b => true,
            _ => self.map() == other.map(),
        }
    }
}

impl From<Map<String, Value>> for Meta {
    fn from(map: Map<String, Value>) -> Self {
        Self {
            text: None,
            map: OnceLock::from(map),
        }
    }
}

impl<'a> IntoIterator for &'a Meta {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Serialize for Meta {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Through the map: right for every serializer, and the text of a received
        // `_meta` is rarely written again.
        self.map().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, MetaVisitor)
    }
}

/// Reads a [`Meta`]: its text when the deserializer is serde_json's, its map otherwise.
struct MetaVisitor;

/// The first key of a map handed to [`MetaVisitor`]: serde_json's raw-value marker, or
/// a real key.
enum FirstKey {
    RawValue,
    Key(String),
}

impl<'de> Deserialize<'de> for FirstKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(if key == RAW_VALUE_TOKEN {
            Self::RawValue
        } else {
            Self::Key(key.into_owned())
        })
    }
}

/// The text serde_json hands over for a raw value, shared: copied once, from the input
/// when it can be borrowed.
struct RawText(Arc<str>);

impl<'de> Deserialize<'de> for RawText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = RawText;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON text")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<RawText, E> {
                Ok(RawText(Arc::from(text)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = Meta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Meta, D::Error> {
        Map::deserialize(deserializer).map(Meta::from)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta, A::Error> {
        let key = match map.next_key::<FirstKey>()? {
            None => return Ok(Meta::new()),
            Some(FirstKey::RawValue) => {
                let text = map.next_value::<RawText>()?.0;
                if text.trim_start().starts_with('{') {
                    return Ok(Meta::from_text(text));
                }
                // Not an object: the same error as the map's decoder gives.
                let value: Value = serde_json::from_str(&text).map_err(de::Error::custom)?;
                return Map::deserialize(value)
                    .map(Meta::from)
                    .map_err(de::Error::custom);
            }
            Some(FirstKey::Key(key)) => key,
        };
        // A deserializer that hands a newtype over as its content (not serde_json's).
        let mut out = Map::new();
        out.insert(key, map.next_value()?);
        while let Some((key, value)) = map.next_entry()? {
            out.insert(key, value);
        }
        Ok(Meta::from(out))
    }
}

impl Meta {
    /// The key under which a request asks for progress notifications.
    pub const PROGRESS_TOKEN: &'static str = "progressToken";
    /// A request's protocol revision (2026-07-28, required on every request).
    pub const PROTOCOL_VERSION: &'static str = "io.modelcontextprotocol/protocolVersion";
    /// A request's client capabilities (2026-07-28, required on every request).
    pub const CLIENT_CAPABILITIES: &'static str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's `Implementation` on a request (2026-07-28, should be sent).
    pub const CLIENT_INFO: &'static str = "io.modelcontextprotocol/clientInfo";
    /// The log level a request opts in to; without it no `notifications/message` may be
    /// sent for the request (2026-07-28, replaces `logging/setLevel`).
    pub const LOG_LEVEL: &'static str = "io.modelcontextprotocol/logLevel";
    /// The server's `Implementation` on a result (2026-07-28, should be sent).
    pub const SERVER_INFO: &'static str = "io.modelcontextprotocol/serverInfo";
    /// The `subscriptions/listen` stream a notification belongs to, and the id the
    /// server gives a subscription in its result (2026-07-28).
    pub const SUBSCRIPTION_ID: &'static str = "io.modelcontextprotocol/subscriptionId";

    /// An empty `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.map().is_empty()
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Every key with its value, in key order.
    pub fn iter(&self) -> serde_json::map::Iter<'_> {
        self.map().iter()
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.map().contains_key(key)
    }

    /// Removes a key, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.map_mut().remove(key)
    }

    /// The whole object.
    pub fn as_map(&self) -> &Map<String, Value> {
        self.map()
    }

    /// The whole object, to change.
    pub fn as_map_mut(&mut self) -> &mut Map<String, Value> {
        self.map_mut()
    }

    /// The whole object, taken out.
    pub fn into_map(mut self) -> Map<String, Value> {
        std::mem::take(self.map_mut())
    }

    /// The progress token, when present and well formed.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        // As the untagged `ProgressToken` reads a value, without serde's buffering.
        match self.map().get(Self::PROGRESS_TOKEN)? {
            Value::Number(n) => n.as_i64().map(ProgressToken::Number),
            Value::String(s) => Some(ProgressToken::String(Arc::from(s.as_str()))),
            _ => None,
        }
    }

    /// Sets the progress token.
    pub fn set_progress_token(&mut self, token: ProgressToken) {
        let value = match token {
            ProgressToken::Number(n) => Value::from(n),
            ProgressToken::String(s) => Value::from(&*s),
        };
        self.map_mut()
            .insert(Self::PROGRESS_TOKEN.to_owned(), value);
    }

    /// A key's value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.map().get(key)
    }

    /// Sets a key.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.map_mut().insert(key.into(), value)
    }

    /// A key's value read as `T`, if present and well formed.
    pub(crate) fn typed<T: for<'de> Deserialize<'de>>(&self, key: &str) -> Option<T> {
        self.map().get(key).and_then(|v| T::deserialize(v).ok())
    }

    /// Sets a key to a serialisable value.
    pub(crate) fn set_typed<T: Serialize>(&mut self, key: &str, value: &T) {
        // The SDK's own types always serialise.
        if let Ok(value) = serde_json::to_value(value) {
            self.map_mut().insert(key.to_owned(), value);
        }
    }

    /// `io.modelcontextprotocol/protocolVersion`, when a string.
    pub fn protocol_version(&self) -> Option<&str> {
        self.map()
            .get(Self::PROTOCOL_VERSION)
            .and_then(Value::as_str)
    }

    /// Sets `io.modelcontextprotocol/protocolVersion`.
    pub fn set_protocol_version(&mut self, version: impl Into<String>) {
        self.map_mut().insert(
            Self::PROTOCOL_VERSION.to_owned(),
            Value::String(version.into()),
        );
    }
}

/// Reads an optional member whose value may be `null`: a `null` there is kept (written
/// back as `null`), not read as "absent" the way `Option<Value>` reads it. For members
/// the schema leaves open (`data` of an error, `structuredContent`), so a round trip
/// keeps what the peer sent (found by the property tests, issue 25).
pub(crate) fn null_is_a_value<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TEXT: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7,"x":{"y":[1,2]}}"#;

    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta", default)]
        meta: Option<Meta>,
    }

    #[test]
    fn meta_read_from_text_is_decoded_on_first_read() {
        let meta: Meta = serde_json::from_str(TEXT).unwrap();
        assert_eq!(meta.text.as_deref(), Some(TEXT), "kept as text");
        assert!(meta.map.get().is_none(), "not decoded before a read");
        assert_eq!(meta.protocol_version(), Some("2026-07-28"));
        assert_eq!(meta.progress_token(), Some(ProgressToken::Number(7)));
        assert_eq!(meta.get("x"), Some(&json!({"y": [1, 2]})));
        assert_eq!(meta.len(), 3);
        assert!(meta.contains_key("x"));
        let keys: Vec<_> = meta.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "io.modelcontextprotocol/protocolVersion",
                "progressToken",
                "x"
            ]
        );
        // Inside a message, as a request's params carry it.
        let params: Params = serde_json::from_str(&format!(r#"{{"_meta":{TEXT}}}"#)).unwrap();
        let inner = params.meta.unwrap();
        assert!(inner.map.get().is_none());
        assert_eq!(inner, meta);
    }

    #[test]
    fn progress_token_is_read_as_the_token_decodes() {
        for value in [
            json!(7),
            json!(-3),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(1.5),
            json!(2.0),
            json!("t"),
            json!(""),
            json!(true),
            json!(null),
            json!([1]),
            json!({"a": 1}),
        ] {
            let mut meta = Meta::new();
            meta.insert(Meta::PROGRESS_TOKEN, value.clone());
            let decoded = ProgressToken::deserialize(&value).ok();
            assert_eq!(meta.progress_token(), decoded, "{value}");
        }
    }

    #[test]
    fn meta_round_trips_and_compares_by_content() {
        let read: Meta = serde_json::from_str(TEXT).unwrap();
        let built = Meta::from(serde_json::from_str::<Map<String, Value>>(TEXT).unwrap());
        assert_eq!(read, built);
        assert_eq!(built, read);
        assert_eq!(serde_json::to_string(&read).unwrap(), TEXT);
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&built).unwrap()
        );
        // Whitespace in the text does not make two equal objects differ.
        let spaced: Meta = serde_json::from_str(r#"{ "x" : {"y":[1, 2]} }"#).unwrap();
        let mut one = Meta::new();
        one.insert("x", json!({"y": [1, 2]}));
        assert_eq!(spaced, one);
        assert_ne!(spaced, read);
        assert_eq!(format!("{read:?}"), format!("{built:?}"));
        let clone = read.clone();
        assert_eq!(clone, read);
    }

    #[test]
    fn changing_a_meta_read_from_text_drops_the_text() {
        let mut meta: Meta = serde_json::from_str(TEXT).unwrap();
        meta.set_progress_token(ProgressToken::from("t"));
        assert!(meta.text.is_none());
        assert_eq!(meta.progress_token(), Some(ProgressToken::from("t")));
        assert_eq!(meta.remove("x"), Some(json!({"y": [1, 2]})));
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": "t"})
        );
        let mut other: Meta = serde_json::from_str(TEXT).unwrap();
        other.as_map_mut().clear();
        assert!(other.is_empty());
        assert_eq!(serde_json::to_string(&other).unwrap(), "{}");
        let map = serde_json::from_str::<Meta>(TEXT).unwrap().into_map();
        assert_eq!(map.len(), 3);
    }

    #[test]
    fn meta_must_be_an_object() {
        for text in ["5", "\"s\"", "[1]", "true", "null"] {
            let err = serde_json::from_str::<Meta>(text).unwrap_err();
            assert!(err.to_string().contains("expected a map"), "{text}: {err}");
            let err =
                serde_json::from_value::<Meta>(serde_json::from_str(text).unwrap()).unwrap_err();
            assert!(err.to_string().contains("expected a map"), "{text}: {err}");
        }
        assert!(serde_json::from_str::<Params>(r#"{"_meta":5}"#).is_err());
        assert!(serde_json::from_str::<Params>(r#"{"_meta":{"a":}}"#).is_err());
        assert!(
            serde_json::from_str::<Params>(r#"{"_meta":null}"#)
                .unwrap()
                .meta
                .is_none()
        );
    }

    #[test]
    fn meta_reads_from_every_deserializer() {
        let value: Value = serde_json::from_str(TEXT).unwrap();
        let expected = Meta::from(value.as_object().cloned().unwrap());
        // A `Value`, owned and borrowed.
        assert_eq!(
            serde_json::from_value::<Meta>(value.clone()).unwrap(),
            expected
        );
        assert_eq!(Meta::deserialize(&value).unwrap(), expected);
        // serde's buffered content: behind `flatten` and an internally tagged enum.
        #[derive(Deserialize)]
        struct Inner {
            #[serde(rename = "_meta")]
            meta: Meta,
        }
        #[derive(Deserialize)]
        struct Outer {
            #[serde(flatten)]
            inner: Inner,
        }
        #[derive(Deserialize)]
        #[serde(tag = "type")]
        enum Tagged {
            A {
                #[serde(rename = "_meta")]
                meta: Meta,
            },
        }
        let text = format!(r#"{{"_meta":{TEXT}}}"#);
        let outer: Outer = serde_json::from_str(&text).unwrap();
        assert_eq!(outer.inner.meta, expected);
        let Tagged::A { meta } =
            serde_json::from_str(&format!(r#"{{"type":"A","_meta":{TEXT}}}"#)).unwrap();
        assert_eq!(meta, expected);
        // A deserializer that hands a newtype over as its content.
        let map = serde::de::value::MapDeserializer::<_, serde_json::Error>::new(
            [("a", 1), ("b", 2)].into_iter(),
        );
        let meta = Meta::deserialize(map).unwrap();
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"a": 1, "b": 2})
        );
    }

    #[test]
    fn progress_token_reads_as_its_untagged_derive_did() {
        // The derive the hand-written reader replaces, under the same name (its errors
        // name the type).
        mod derived {
            use std::sync::Arc;
            #[derive(Debug, serde::Deserialize)]
            #[serde(untagged)]
            pub(super) enum ProgressToken {
                Number(i64),
                String(Arc<str>),
            }
        }
        #[derive(Debug, Deserialize)]
        struct Holder<T> {
            #[serde(rename = "progressToken")]
            _token: T,
        }
        let texts = [
            "7",
            "-3",
            "9223372036854775807",
            "9223372036854775808",
            r#""tok""#,
            r#""a\"b""#,
            "1.5",
            "2.0",
            "true",
            "null",
            "[1,{}]",
            r#"{"a":[1]}"#,
        ];
        for text in texts {
            let ours = serde_json::from_str::<ProgressToken>(text).map_err(|e| e.to_string());
            let theirs =
                serde_json::from_str::<derived::ProgressToken>(text).map_err(|e| e.to_string());
            match (&ours, &theirs) {
                (Ok(ProgressToken::Number(a)), Ok(derived::ProgressToken::Number(b))) => {
                    assert_eq!(a, b);
                }
                (Ok(ProgressToken::String(a)), Ok(derived::ProgressToken::String(b))) => {
                    assert_eq!(a, b);
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
                _ => panic!("{text}: {ours:?} against {theirs:?}"),
            }
            // Inside an object, errors carry the same position.
            let inner = format!(r#"{{"progressToken":{text},"x":1}}"#);
            let ours =
                serde_json::from_str::<Holder<ProgressToken>>(&inner).map_err(|e| e.to_string());
            let theirs = serde_json::from_str::<Holder<derived::ProgressToken>>(&inner)
                .map_err(|e| e.to_string());
            assert_eq!(ours.is_ok(), theirs.is_ok(), "{inner}");
            if let (Err(a), Err(b)) = (ours, theirs) {
                assert_eq!(a, b, "{inner}");
            }
            // From a `Value` too.
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                ProgressToken::deserialize(&value).ok(),
                serde_json::from_str::<ProgressToken>(text).ok(),
            );
        }
    }

    #[test]
    fn meta_whose_text_holds_an_unrepresentable_number_reads_as_empty() {
        let meta: Meta = serde_json::from_str(r#"{"big":1e400}"#).unwrap();
        assert!(meta.is_empty());
        assert_eq!(meta.get("big"), None);
    }
}
