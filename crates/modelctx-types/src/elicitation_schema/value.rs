//! The values a form answer holds.

use serde::{Deserialize, Serialize};

/// A submitted form value: string, integer, number, boolean or list of strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A boolean.
    Boolean(bool),
    /// An integer.
    Integer(i64),
    /// A non-integer number.
    Number(f64),
    /// A string.
    String(String),
    /// Several strings (multi-select).
    StringArray(Vec<String>),
}

impl From<&str> for ElicitValue {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}
impl From<String> for ElicitValue {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}
impl From<bool> for ElicitValue {
    fn from(b: bool) -> Self {
        Self::Boolean(b)
    }
}
impl From<i64> for ElicitValue {
    fn from(n: i64) -> Self {
        Self::Integer(n)
    }
}
impl From<f64> for ElicitValue {
    fn from(n: f64) -> Self {
        Self::Number(n)
    }
}
impl From<Vec<String>> for ElicitValue {
    fn from(v: Vec<String>) -> Self {
        Self::StringArray(v)
    }
}
