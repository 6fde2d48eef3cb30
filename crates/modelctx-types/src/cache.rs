//! Cacheable results (2026-07-28, SEP-2549): `ttlMs` and `cacheScope`.
//!
//! The results of `tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`, `resources/read` and `server/discover` carry a freshness
//! hint and a cache scope. On the shared result types the two members are `Option`s
//! (absent in earlier revisions); [`CacheableResult`] is the schema's base shape.
//!
//! A server must send a `ttlMs` of 0 or more; one that sends a negative value (or a
//! fraction) is read as 0 (or the whole milliseconds below it), as the spec tells a
//! client to, rather than failing the whole result.

use std::fmt;

use serde::de::Deserializer;

use crate::base::ResultType;

crate::open_enum::open_enum! {
    /// Who may cache a result, like HTTP `Cache-Control: public` / `private`.
    pub enum CacheScope {
        /// `"private"`: only within the same authorization context.
        Private = "private",
        /// `"public"`: no user-specific data; shared caches may serve it to anyone.
        Public = "public",
    }
}

/// Reads a `ttlMs`: a negative value is 0, a fraction its whole milliseconds.
pub(crate) fn ttl<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    deserializer.deserialize_any(TtlVisitor)
}

/// [`ttl`] for an optional member: `null` is absent.
pub(crate) fn optional_ttl<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    deserializer.deserialize_option(OptionalTtl)
}

struct TtlVisitor;

impl serde::de::Visitor<'_> for TtlVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number of milliseconds")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
        Ok(u64::try_from(v).unwrap_or(0))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
        // `as` saturates: NaN and negatives are 0, beyond u64 is its maximum.
        Ok(v as u64)
    }
}

struct OptionalTtl;

impl<'de> serde::de::Visitor<'de> for OptionalTtl {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number of milliseconds or null")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        ttl(d).map(Some)
    }
}

crate::setters::wire_struct! {
    /// The schema's `CacheableResult`: a result with a time-to-live hint (2026-07-28).
    pub struct CacheableResult {
        /// Metadata (`io.modelcontextprotocol/serverInfo`, ...).
        meta => with_meta,
        /// The kind of result.
        pub result_type: ResultType = ResultType::Complete,
        /// How long the client may consider the result fresh, in milliseconds (0: stale at
        /// once).
        #[serde(deserialize_with = "ttl")]
        pub ttl_ms: u64,
        /// Who may cache it.
        pub cache_scope: CacheScope,
    }
    /// A complete result, fresh for `ttl_ms` milliseconds within `cache_scope`.
    new(ttl_ms: u64, cache_scope: impl Into<CacheScope>);
}

/// Declares the cacheable page of a list method (`tools/list`, `prompts/list`,
/// `resources/list`, `resources/templates/list`): `_meta`, `result_type`, `ttl_ms`,
/// `cache_scope`, `next_cursor`, then the items, with `new(items)` and the setters.
/// `ListName("method") { items: Item } "what"`; `what` names the items in the docs.
macro_rules! list_result {
    ($name:ident($method:literal) { $items:ident: $item:ty } $what:literal) => {
        $crate::cache::cacheable_result! {
            $name($method) {
                #[doc = concat!("Present when there may be more ", $what, ".")]
                next_cursor: $crate::common::Cursor,
            }
            #[doc = concat!("The ", $what, ".")]
            $items: Vec<$item>,
            #[doc = concat!("A page of ", $what, ".")]
            new;
            $crate::setters::setters! {
                with_next_cursor(next_cursor: impl Into<$crate::common::Cursor>),
            }
        }
    };
}

/// Declares a cacheable result of `method` (2026-07-28 members optional): `_meta`,
/// `result_type`, `ttl_ms`, `cache_scope`, the optional members in braces, then the
/// required one, with `new(required)`, the setters of the four shared members, and the
/// items that follow.
macro_rules! cacheable_result {
    (
        $name:ident($method:literal) {
            $($(#[$opt_doc:meta])* $opt:ident: $opt_ty:ty,)*
        }
        $(#[$items_doc:meta])*
        $items:ident: $items_ty:ty,
        $(#[$new_doc:meta])*
        new;
        $($extra:tt)*
    ) => {
        $crate::setters::wire_struct! {
            #[doc = concat!("The answer to `", $method, "`.")]
            pub struct $name {
                meta,
                /// The kind of result (2026-07-28; absent before, which means complete).
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub result_type: Option<$crate::base::ResultType>,
                /// How long the client may cache this result, in milliseconds (2026-07-28).
                #[serde(
                    default,
                    skip_serializing_if = "Option::is_none",
                    deserialize_with = "crate::cache::optional_ttl"
                )]
                pub ttl_ms: Option<u64>,
                /// Who may cache this result: one authorization context or anyone (2026-07-28).
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub cache_scope: Option<$crate::cache::CacheScope>,
                $(
                    $(#[$opt_doc])*
                    #[serde(default, skip_serializing_if = "Option::is_none")]
                    pub $opt: Option<$opt_ty>,
                )*
                $(#[$items_doc])*
                pub $items: $items_ty,
            }
        }

        impl $name {
            $(#[$new_doc])*
            pub fn new($items: $items_ty) -> Self {
                Self {
                    meta: None,
                    result_type: None,
                    ttl_ms: None,
                    cache_scope: None,
                    $($opt: None,)*
                    $items,
                }
            }

            $crate::setters::setters! {
                with_meta(meta: impl Into<$crate::common::Meta>),
                with_result_type(result_type: impl Into<$crate::base::ResultType>) "2026-07-28",
                with_ttl_ms(ttl_ms: u64) "2026-07-28",
                with_cache_scope(cache_scope: impl Into<$crate::cache::CacheScope>) "2026-07-28",
            }

            $($extra)*
        }
    };
}

pub(crate) use {cacheable_result, list_result};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{DiscoverResult, ListToolsResult, ReadResourceResult};

    #[test]
    fn a_negative_ttl_reads_as_zero() {
        let page: ListToolsResult =
            serde_json::from_value(json!({"tools": [], "ttlMs": -5})).unwrap();
        assert_eq!(page.ttl_ms, Some(0));
        let read: ReadResourceResult =
            serde_json::from_value(json!({"contents": [], "ttlMs": -1})).unwrap();
        assert_eq!(read.ttl_ms, Some(0));
        let found: DiscoverResult = serde_json::from_value(json!({
            "resultType": "complete", "ttlMs": -1, "cacheScope": "public",
            "supportedVersions": [], "capabilities": {}
        }))
        .unwrap();
        assert_eq!(found.ttl_ms, 0);
    }

    #[test]
    fn an_absent_or_null_ttl_is_none_and_others_read_as_given() {
        let absent: ListToolsResult = serde_json::from_value(json!({"tools": []})).unwrap();
        assert_eq!(absent.ttl_ms, None);
        let null: ListToolsResult =
            serde_json::from_value(json!({"tools": [], "ttlMs": null})).unwrap();
        assert_eq!(null.ttl_ms, None);
        let given: ListToolsResult =
            serde_json::from_value(json!({"tools": [], "ttlMs": 1500})).unwrap();
        assert_eq!(given.ttl_ms, Some(1500));
        let fraction: ListToolsResult =
            serde_json::from_value(json!({"tools": [], "ttlMs": 2.5})).unwrap();
        assert_eq!(fraction.ttl_ms, Some(2));
        assert!(
            serde_json::from_value::<ListToolsResult>(json!({"tools": [], "ttlMs": "x"})).is_err()
        );
    }
}
