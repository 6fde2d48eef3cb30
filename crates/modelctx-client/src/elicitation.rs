//! Elicitation on the client side: the form a callback is shown (with the schema's
//! defaults prefilled), the checks a form schema and its answer go through, URL mode,
//! `notifications/elicitation/complete`, and the `-32042` error read as the URL
//! elicitations to complete before a retry.
//!
//! Defaults are filled in, then the answer is validated before it is sent. URL elicitation
//! ids are tracked here, so completion notifications for unknown ids are dropped.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use modelctx_session::SessionError;
use modelctx_types::{
    ElicitRequestFormParams, ElicitRequestUrlParams, ElicitValue, EnumSchema, ErrorCode,
    MultiSelectEnumSchema, NumberType, PrimitiveSchemaDefinition, RequestedSchema,
    SingleSelectEnumSchema, StringFormat, UrlElicitationRequiredData,
};
use tokio::sync::Notify;

use crate::Client;

/// The submitted values of a form, by field name.
pub type FormContent = BTreeMap<String, ElicitValue>;

/// A form-mode `elicitation/create`, as the form callback sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FormRequest {
    /// The request as the server sent it (message, schema, `_meta`).
    pub params: ElicitRequestFormParams,
    /// The values to show prefilled: every field's `default`.
    pub prefilled: FormContent,
}

impl FormRequest {
    pub(crate) fn new(params: ElicitRequestFormParams) -> Self {
        let prefilled = defaults(&params.requested_schema);
        Self { params, prefilled }
    }

    /// What is asked and why.
    pub fn message(&self) -> &str {
        &self.params.message
    }

    /// The form, exactly as the server sent it.
    pub fn schema(&self) -> &RequestedSchema {
        &self.params.requested_schema
    }

    /// Checks values against the form (the check the client runs before it sends an
    /// accepted answer; defaults are not applied here).
    pub fn check(&self, content: &FormContent) -> Result<(), FormError> {
        validate_answer(self.schema(), content).map_err(FormError)
    }
}

/// What the user did with a form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormAnswer {
    /// Submitted these values. Fields left out take their `default`; the result is
    /// checked against the form before it is sent.
    Accept(FormContent),
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// A URL-mode `elicitation/create`, as the URL callback sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UrlRequest {
    /// The request as the server sent it.
    pub params: ElicitRequestUrlParams,
}

impl UrlRequest {
    /// Why the interaction is needed.
    pub fn message(&self) -> &str {
        &self.params.message
    }

    /// The URL the user is asked to open (show it whole before asking for consent).
    pub fn url(&self) -> &str {
        &self.params.url
    }

    /// The server's id of this elicitation.
    pub fn elicitation_id(&self) -> &str {
        self.params.elicitation_id()
    }
}

/// What the user did with a URL request. Accepting only consents to open the link: it
/// carries no content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlAnswer {
    /// Consented to open the URL.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// A form schema or answer outside what the form allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormError(String);

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormError {}

/// The URL elicitations a request was refused for (`-32042`): complete them, then retry.
#[derive(Debug, Clone)]
pub struct UrlElicitationRequired {
    message: String,
    elicitations: Vec<ElicitRequestUrlParams>,
    tracker: Arc<Tracker>,
}

impl UrlElicitationRequired {
    /// The error message the server gave.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The elicitations to complete, as the server listed them.
    pub fn elicitations(&self) -> &[ElicitRequestUrlParams] {
        &self.elicitations
    }

    /// Resolves once the server has sent `notifications/elicitation/complete` for every
    /// listed elicitation. Bound it with a timeout: a server may never send them.
    pub async fn completed(&self) {
        for e in &self.elicitations {
            self.tracker.wait(e.elicitation_id()).await;
        }
    }
}

impl fmt::Display for UrlElicitationRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} URL elicitation(s) to complete first)",
            self.message,
            self.elicitations.len()
        )
    }
}

impl std::error::Error for UrlElicitationRequired {}

impl Client {
    /// Reads a request's failure as the URL elicitations it needs (`-32042`), or `None`
    /// for any other failure. Their ids become known to this client, so their
    /// `notifications/elicitation/complete` is delivered (unknown ids are ignored).
    pub fn url_elicitation_required(&self, error: &SessionError) -> Option<UrlElicitationRequired> {
        let data = error.protocol_error()?;
        if data.code != ErrorCode::URL_ELICITATION_REQUIRED {
            return None;
        }
        let parsed = UrlElicitationRequiredData::from_error(data)?;
        // 2025-11-25 requires every id (only 2026-07-28 drops them).
        if parsed
            .elicitations
            .iter()
            .any(|e| e.elicitation_id.is_none())
        {
            return None;
        }
        for e in &parsed.elicitations {
            self.inner.elicitations.expect(e.elicitation_id());
        }
        Some(UrlElicitationRequired {
            message: data.message.clone().into_owned(),
            elicitations: parsed.elicitations,
            tracker: self.inner.elicitations.clone(),
        })
    }
}

/// The URL elicitations this client knows of, and which of them completed.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    state: Mutex<TrackerState>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct TrackerState {
    pending: HashSet<String>,
    done: HashSet<String>,
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, TrackerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes `id` known: its completion will be delivered.
    pub(crate) fn expect(&self, id: &str) {
        let mut state = self.lock();
        if !state.done.contains(id) {
            state.pending.insert(id.to_owned());
        }
    }

    /// Records a completion; `false` (and nothing changes) for an unknown or finished id.
    pub(crate) fn complete(&self, id: &str) -> bool {
        let known = {
            let mut state = self.lock();
            let known = state.pending.remove(id);
            if known {
                state.done.insert(id.to_owned());
            }
            known
        };
        if known {
            self.changed.notify_waiters();
        }
        known
    }

    async fn wait(&self, id: &str) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lock().done.contains(id) {
                return;
            }
            notified.await;
        }
    }
}

/// The form's defaults, as the values a user is first shown.
fn defaults(schema: &RequestedSchema) -> FormContent {
    let mut out = FormContent::new();
    for (name, field) in &schema.properties.0 {
        let value = match field {
            PrimitiveSchemaDefinition::String(s) => s.default.clone().map(ElicitValue::String),
            PrimitiveSchemaDefinition::Number(n) => n.default.map(|d| number_value(n.kind, d)),
            PrimitiveSchemaDefinition::Boolean(b) => b.default.map(ElicitValue::Boolean),
            PrimitiveSchemaDefinition::Enum(e) => match e {
                EnumSchema::Single(SingleSelectEnumSchema::Untitled(s)) => {
                    s.default.clone().map(ElicitValue::String)
                }
                EnumSchema::Single(SingleSelectEnumSchema::Titled(s)) => {
                    s.default.clone().map(ElicitValue::String)
                }
                EnumSchema::LegacyTitled(s) => s.default.clone().map(ElicitValue::String),
                EnumSchema::Multi(MultiSelectEnumSchema::Untitled(m)) => {
                    m.default.clone().map(ElicitValue::StringArray)
                }
                EnumSchema::Multi(MultiSelectEnumSchema::Titled(m)) => {
                    m.default.clone().map(ElicitValue::StringArray)
                }
            },
        };
        if let Some(value) = value {
            out.insert(name.clone(), value);
        }
    }
    out
}

fn number_value(kind: NumberType, value: f64) -> ElicitValue {
    if kind == NumberType::Integer && value.fract() == 0.0 && value.abs() < 9.0e15 {
        // Exact: |value| is below 2^53 and integral.
        #[allow(clippy::cast_possible_truncation)]
        ElicitValue::Integer(value as i64)
    } else {
        ElicitValue::Number(value)
    }
}

/// Fills the fields the user left out with their defaults.
pub(crate) fn apply_defaults(schema: &RequestedSchema, content: &mut FormContent) {
    for (name, value) in defaults(schema) {
        content.entry(name).or_insert(value);
    }
}

/// Checks a form schema beyond what decoding it already ensured (a flat object of
/// primitive fields): required names exist, enums have values, bounds are ordered, and
/// every default fits its field.
pub(crate) fn check_schema(schema: &RequestedSchema) -> Result<(), String> {
    for name in schema.required.iter().flatten() {
        if schema.properties.get(name).is_none() {
            return Err(format!("required field `{name}` is not in the form"));
        }
    }
    for (name, field) in &schema.properties.0 {
        check_field(name, field)?;
    }
    let defaults = defaults(schema);
    for (name, field) in &schema.properties.0 {
        if let Some(value) = defaults.get(name) {
            check_value(name, field, value).map_err(|e| format!("the default of {e}"))?;
        }
    }
    Ok(())
}

fn check_field(name: &str, field: &PrimitiveSchemaDefinition) -> Result<(), String> {
    let ordered = |lo: Option<f64>, hi: Option<f64>| match (lo, hi) {
        (Some(lo), Some(hi)) if lo > hi => Err(format!("field `{name}` has bounds {lo} > {hi}")),
        _ => Ok(()),
    };
    #[allow(clippy::cast_precision_loss)]
    let f = |v: Option<u64>| v.map(|v| v as f64);
    match field {
        PrimitiveSchemaDefinition::String(s) => ordered(f(s.min_length), f(s.max_length)),
        PrimitiveSchemaDefinition::Number(n) => ordered(n.minimum, n.maximum),
        PrimitiveSchemaDefinition::Boolean(_) => Ok(()),
        PrimitiveSchemaDefinition::Enum(e) => {
            let (values, bounds) = enum_values(e);
            if values.is_empty() {
                return Err(format!("enum field `{name}` offers no value"));
            }
            ordered(f(bounds.0), f(bounds.1))
        }
    }
}

/// An enum's allowed values and, for a multi-select, its (min, max) item counts.
fn enum_values(e: &EnumSchema) -> (Vec<&str>, (Option<u64>, Option<u64>)) {
    match e {
        EnumSchema::Single(SingleSelectEnumSchema::Untitled(s)) => {
            (s.values.iter().map(String::as_str).collect(), (None, None))
        }
        EnumSchema::Single(SingleSelectEnumSchema::Titled(s)) => (
            s.one_of.iter().map(|o| o.value.as_str()).collect(),
            (None, None),
        ),
        EnumSchema::LegacyTitled(s) => {
            (s.values.iter().map(String::as_str).collect(), (None, None))
        }
        EnumSchema::Multi(MultiSelectEnumSchema::Untitled(m)) => (
            m.items.values.iter().map(String::as_str).collect(),
            (m.min_items, m.max_items),
        ),
        EnumSchema::Multi(MultiSelectEnumSchema::Titled(m)) => (
            m.items.any_of.iter().map(|o| o.value.as_str()).collect(),
            (m.min_items, m.max_items),
        ),
    }
}

/// Checks an accepted answer: no unknown field, every required field present, every
/// value of its field's type, within its bounds, format and choices.
pub(crate) fn validate_answer(
    schema: &RequestedSchema,
    content: &FormContent,
) -> Result<(), String> {
    for name in content.keys() {
        if schema.properties.get(name).is_none() {
            return Err(format!("field `{name}` is not in the form"));
        }
    }
    for name in schema.required.iter().flatten() {
        if !content.contains_key(name) {
            return Err(format!("required field `{name}` is missing"));
        }
    }
    for (name, field) in &schema.properties.0 {
        if let Some(value) = content.get(name) {
            check_value(name, field, value)?;
        }
    }
    Ok(())
}

fn check_value(
    name: &str,
    field: &PrimitiveSchemaDefinition,
    value: &ElicitValue,
) -> Result<(), String> {
    let wrong = |expected: &str| {
        Err(format!(
            "field `{name}`: expected {expected}, got {value:?}"
        ))
    };
    match field {
        PrimitiveSchemaDefinition::String(s) => {
            let ElicitValue::String(text) = value else {
                return wrong("a string");
            };
            let len = text.chars().count() as u64;
            if s.min_length.is_some_and(|min| len < min)
                || s.max_length.is_some_and(|max| len > max)
            {
                return Err(format!("field `{name}`: length {len} is out of bounds"));
            }
            match &s.format {
                Some(format) if !format_ok(format, text) => Err(format!(
                    "field `{name}`: {text:?} is not a valid {format:?}"
                )),
                _ => Ok(()),
            }
        }
        PrimitiveSchemaDefinition::Number(n) => {
            #[allow(clippy::cast_precision_loss)]
            let number = match value {
                ElicitValue::Integer(i) => *i as f64,
                ElicitValue::Number(x) => *x,
                _ => return wrong("a number"),
            };
            if n.kind == NumberType::Integer && number.fract() != 0.0 {
                return wrong("an integer");
            }
            if n.minimum.is_some_and(|m| number < m) || n.maximum.is_some_and(|m| number > m) {
                return Err(format!("field `{name}`: {number} is out of bounds"));
            }
            Ok(())
        }
        PrimitiveSchemaDefinition::Boolean(_) => match value {
            ElicitValue::Boolean(_) => Ok(()),
            _ => wrong("a boolean"),
        },
        PrimitiveSchemaDefinition::Enum(e) => {
            let (values, (min, max)) = enum_values(e);
            match (e, value) {
                (EnumSchema::Multi(_), ElicitValue::StringArray(chosen)) => {
                    if let Some(bad) = chosen.iter().find(|c| !values.contains(&c.as_str())) {
                        return Err(format!("field `{name}`: {bad:?} is not one of {values:?}"));
                    }
                    let n = chosen.len() as u64;
                    if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                        return Err(format!("field `{name}`: {n} choices is out of bounds"));
                    }
                    Ok(())
                }
                (EnumSchema::Multi(_), _) => wrong("a list of choices"),
                (_, ElicitValue::String(chosen)) if values.contains(&chosen.as_str()) => Ok(()),
                (_, ElicitValue::String(chosen)) => Err(format!(
                    "field `{name}`: {chosen:?} is not one of {values:?}"
                )),
                _ => wrong("one of the choices"),
            }
        }
    }
}

/// A light syntactic check of the spec's string formats (unknown formats pass).
fn format_ok(format: &StringFormat, text: &str) -> bool {
    match format {
        StringFormat::Email => match text.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.is_empty()
                    && !domain.contains('@')
                    && !text.chars().any(char::is_whitespace)
            }
            None => false,
        },
        StringFormat::Uri => match text.split_once(':') {
            Some((scheme, rest)) => {
                let mut chars = scheme.chars();
                chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                    && chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
                    && !rest.is_empty()
                    && !text.chars().any(char::is_whitespace)
            }
            None => false,
        },
        StringFormat::Date => date_ok(text),
        StringFormat::DateTime => match text.split_once(['T', 't']) {
            Some((date, time)) => date_ok(date) && time_ok(time),
            None => false,
        },
        _ => true,
    }
}

fn digits(text: &str, n: usize) -> Option<u32> {
    (text.len() == n && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

fn date_ok(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn time_ok(text: &str) -> bool {
    let (clock, offset) = if let Some(clock) = text.strip_suffix(['Z', 'z']) {
        (clock, None)
    } else if let Some(at) = text.rfind(['+', '-']) {
        (&text[..at], Some(&text[at + 1..]))
    } else {
        return false;
    };
    let clock = clock.split_once('.').map_or(clock, |(whole, fraction)| {
        if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            ""
        } else {
            whole
        }
    });
    let hms: Vec<_> = clock.split(':').collect();
    let clock_ok = matches!(hms.as_slice(), [h, m, s]
        if digits(h, 2).is_some_and(|h| h < 24)
            && digits(m, 2).is_some_and(|m| m < 60)
            && digits(s, 2).is_some_and(|s| s <= 60));
    let offset_ok = offset.is_none_or(|o| {
        matches!(o.split_once(':'), Some((h, m))
            if digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60))
    });
    clock_ok && offset_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: serde_json::Value) -> RequestedSchema {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn formats() {
        assert!(format_ok(&StringFormat::Email, "a@b.c"));
        assert!(!format_ok(&StringFormat::Email, "a b@c"));
        assert!(format_ok(&StringFormat::Uri, "https://x.test/p"));
        assert!(!format_ok(&StringFormat::Uri, "not a uri"));
        assert!(format_ok(&StringFormat::Date, "2024-02-29"));
        assert!(!format_ok(&StringFormat::Date, "2023-02-29"));
        assert!(format_ok(
            &StringFormat::DateTime,
            "2024-01-02T03:04:05.5+01:00"
        ));
        assert!(format_ok(&StringFormat::DateTime, "2024-01-02T03:04:05Z"));
        assert!(!format_ok(&StringFormat::DateTime, "2024-01-02T25:04:05Z"));
        assert!(!format_ok(&StringFormat::DateTime, "2024-01-02"));
    }

    #[test]
    fn schema_checks() {
        let bad_required = schema(json!({"type": "object", "properties": {}, "required": ["x"]}));
        assert!(check_schema(&bad_required).unwrap_err().contains("`x`"));
        let bad_default = schema(json!({"type": "object", "properties": {
            "c": {"type": "string", "enum": ["a"], "default": "b"}}}));
        assert!(check_schema(&bad_default).is_err());
        let bounds = schema(json!({"type": "object", "properties": {
            "n": {"type": "number", "minimum": 5, "maximum": 1}}}));
        assert!(check_schema(&bounds).is_err());
    }

    #[test]
    fn answers_are_checked_and_defaults_fill_gaps() {
        let form = schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2},
            "age": {"type": "integer", "minimum": 0, "default": 30},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1},
            "ok": {"type": "boolean", "default": true}
        }, "required": ["name", "age"]}));
        check_schema(&form).unwrap();
        let mut content = FormContent::from([("name".to_owned(), "Al".into())]);
        apply_defaults(&form, &mut content);
        assert_eq!(content["age"], ElicitValue::Integer(30));
        assert_eq!(content["ok"], ElicitValue::Boolean(true));
        validate_answer(&form, &content).unwrap();
        content.insert("age".into(), ElicitValue::Number(1.5));
        assert!(
            validate_answer(&form, &content)
                .unwrap_err()
                .contains("integer")
        );
        content.insert("age".into(), 3i64.into());
        content.insert("tags".into(), vec!["a".to_owned(), "b".to_owned()].into());
        assert!(validate_answer(&form, &content).is_err());
        content.insert("tags".into(), vec!["c".to_owned()].into());
        assert!(validate_answer(&form, &content).is_err());
        content.remove("tags");
        content.insert("extra".into(), "x".into());
        assert!(validate_answer(&form, &content).is_err());
    }

    #[test]
    fn tracker_ignores_unknown_ids() {
        let tracker = Tracker::default();
        assert!(!tracker.complete("nobody"));
        tracker.expect("e1");
        assert!(tracker.complete("e1"));
        assert!(
            !tracker.complete("e1"),
            "a finished id is not delivered twice"
        );
    }
}
