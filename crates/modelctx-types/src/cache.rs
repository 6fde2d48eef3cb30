//! Cacheable results (2026-07-28, SEP-2549): `ttlMs` and `cacheScope`.
//!
//! The results of `tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`, `resources/read` and `server/discover` carry a freshness
//! hint and a cache scope. On the shared result types the two members are `Option`s
//! (absent in earlier revisions); [`CacheableResult`] is the schema's base shape.

use std::fmt;

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::base::ResultType;
use crate::common::Meta;

/// Who may cache a result, like HTTP `Cache-Control: public` / `private`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheScope {
    /// `"private"`: only within the same authorization context.
    Private,
    /// `"public"`: no user-specific data; shared caches may serve it to anyone.
    Public,
    /// A value this SDK does not know, kept verbatim.
    Unknown(String),
}

impl CacheScope {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Private => "private",
            Self::Public => "public",
            Self::Unknown(s) => s,
        }
    }
}

impl fmt::Display for CacheScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for CacheScope {
    fn from(s: &str) -> Self {
        match s {
            "private" => Self::Private,
            "public" => Self::Public,
            other => Self::Unknown(other.to_owned()),
        }
    }
}

impl From<String> for CacheScope {
    fn from(s: String) -> Self {
        match s.as_str() {
            "private" => Self::Private,
            "public" => Self::Public,
            _ => Self::Unknown(s),
        }
    }
}

impl Serialize for CacheScope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CacheScope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

/// The schema's `CacheableResult`: a result with a time-to-live hint (2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CacheableResult {
    /// Metadata (`io.modelcontextprotocol/serverInfo`, ...).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The kind of result.
    pub result_type: ResultType,
    /// How long the client may consider the result fresh, in milliseconds (0: stale at
    /// once).
    pub ttl_ms: u64,
    /// Who may cache it.
    pub cache_scope: CacheScope,
}

impl CacheableResult {
    /// A complete result, fresh for `ttl_ms` milliseconds within `cache_scope`.
    pub fn new(ttl_ms: u64, cache_scope: impl Into<CacheScope>) -> Self {
        Self {
            meta: None,
            result_type: ResultType::Complete,
            ttl_ms,
            cache_scope: cache_scope.into(),
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
    }
}

/// Declares the cacheable page of a list method (`tools/list`, `prompts/list`,
/// `resources/list`, `resources/templates/list`): `_meta`, `result_type`, `ttl_ms`,
/// `cache_scope`, `next_cursor`, then the items, with `new(items)` and the setters.
/// `ListName("method") { items: Item } "what"`; `what` names the items in the docs.
macro_rules! list_result {
    ($name:ident($method:literal) { $items:ident: $item:ty } $what:literal) => {
        #[doc = concat!("The answer to `", $method, "`.")]
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct $name {
            /// Metadata.
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<$crate::common::Meta>,
            /// The kind of result (2026-07-28; absent before, which means complete).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub result_type: Option<$crate::base::ResultType>,
            /// How long the client may cache this result, in milliseconds (2026-07-28).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ttl_ms: Option<u64>,
            /// Who may cache this result: one authorization context or anyone (2026-07-28).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub cache_scope: Option<$crate::cache::CacheScope>,
            #[doc = concat!("Present when there may be more ", $what, ".")]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<$crate::common::Cursor>,
            #[doc = concat!("The ", $what, ".")]
            pub $items: Vec<$item>,
        }

        impl $name {
            #[doc = concat!("A page of ", $what, ".")]
            pub fn new($items: Vec<$item>) -> Self {
                Self {
                    meta: None,
                    result_type: None,
                    ttl_ms: None,
                    cache_scope: None,
                    next_cursor: None,
                    $items,
                }
            }

            $crate::setters::setters! {
                with_meta(meta: impl Into<$crate::common::Meta>),
                with_next_cursor(next_cursor: impl Into<$crate::common::Cursor>),
                with_result_type(result_type: impl Into<$crate::base::ResultType>) "2026-07-28",
                with_ttl_ms(ttl_ms: u64) "2026-07-28",
                with_cache_scope(cache_scope: impl Into<$crate::cache::CacheScope>) "2026-07-28",
            }
        }
    };
}

pub(crate) use list_result;
