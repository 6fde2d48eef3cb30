//! Small types shared by many messages: `_meta`, progress tokens, cursors.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A progress token: associates `notifications/progress` with the request that asked
/// for them. A string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(Arc<str>),
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meta(pub Map<String, Value>);

impl Meta {
    /// The key under which a request asks for progress notifications.
    pub const PROGRESS_TOKEN: &'static str = "progressToken";

    /// An empty `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The progress token, when present and well formed.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        self.0
            .get(Self::PROGRESS_TOKEN)
            .and_then(|v| ProgressToken::deserialize(v).ok())
    }

    /// Sets the progress token.
    pub fn set_progress_token(&mut self, token: ProgressToken) {
        let value = match token {
            ProgressToken::Number(n) => Value::from(n),
            ProgressToken::String(s) => Value::from(&*s),
        };
        self.0.insert(Self::PROGRESS_TOKEN.to_owned(), value);
    }

    /// A key's value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Sets a key.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.0.insert(key.into(), value)
    }
}
