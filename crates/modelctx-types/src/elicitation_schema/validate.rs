//! Checking a form answer against its [`RequestedSchema`], with the meaning JSON Schema
//! (2020-12, formats asserted) gives the restricted form schema — without a general
//! JSON Schema engine.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::ElicitValue;
use super::{
    EnumSchema, MultiSelectEnumSchema, NumberSchema, NumberType, PrimitiveSchemaDefinition,
    RequestedSchema, SingleSelectEnumSchema, StringFormat, StringSchema,
};

/// Why a form answer does not match its form: the field at fault (if one is) and what
/// is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormMismatch {
    field: Option<String>,
    reason: String,
}

impl FormMismatch {
    fn field(name: &str, reason: String) -> Self {
        Self {
            field: Some(name.to_owned()),
            reason,
        }
    }

    /// The name of the field at fault, when the mismatch concerns one field.
    pub fn field_name(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

impl fmt::Display for FormMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(name) => write!(f, "field `{name}`: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for FormMismatch {}

impl RequestedSchema {
    /// Checks an accepted form answer, reading the form as JSON Schema 2020-12 does with
    /// format assertion on:
    ///
    /// - every name in `required` is present;
    /// - a string field takes a string whose length in characters is within
    ///   `minLength`/`maxLength` and which fits its `format` (`email`: an RFC 5321
    ///   mailbox; `uri`: an absolute RFC 3986 URI; `date`, `date-time`: RFC 3339
    ///   `full-date` and `date-time`, leap seconds only at 23:59 UTC; unknown formats
    ///   accept anything);
    /// - a `number` field takes any number, an `integer` field a number without a
    ///   fractional part; both within `minimum`/`maximum` (inclusive, compared exactly);
    /// - a boolean field takes a boolean;
    /// - a single-select field takes one of its values (for titled options: exactly one
    ///   option's `const`, as `oneOf` requires); a multi-select field takes a list of its
    ///   values whose length is within `minItems`/`maxItems`.
    ///
    /// As in JSON Schema, the form does not forbid members it does not describe: names
    /// outside `properties` pass unchecked. `default`s are not applied.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use modelctx_types::{ElicitValue, RequestedSchema, StringFormat, StringSchema};
    ///
    /// let form = RequestedSchema::new()
    ///     .with_property("email", StringSchema::new().with_format(StringFormat::Email), true);
    /// let good = BTreeMap::from([("email".to_owned(), ElicitValue::from("ada@example.com"))]);
    /// assert!(form.check_answer(&good).is_ok());
    /// let bad = BTreeMap::from([("email".to_owned(), ElicitValue::from("ada"))]);
    /// assert_eq!(form.check_answer(&bad).unwrap_err().field_name(), Some("email"));
    /// assert!(form.check_answer(&BTreeMap::new()).is_err());
    /// ```
    pub fn check_answer(&self, answer: &BTreeMap<String, ElicitValue>) -> Result<(), FormMismatch> {
        for name in self.required.iter().flatten() {
            if !answer.contains_key(name) {
                return Err(FormMismatch::field(name, "required but missing".to_owned()));
            }
        }
        for (name, field) in &self.properties.0 {
            if let Some(value) = answer.get(name) {
                check_field(field, value).map_err(|reason| FormMismatch::field(name, reason))?;
            }
        }
        Ok(())
    }
}

fn check_field(field: &PrimitiveSchemaDefinition, value: &ElicitValue) -> Result<(), String> {
    match field {
        PrimitiveSchemaDefinition::String(schema) => check_string(schema, value),
        PrimitiveSchemaDefinition::Number(schema) => check_number(schema, value),
        PrimitiveSchemaDefinition::Boolean(_) => match value {
            ElicitValue::Boolean(_) => Ok(()),
            other => Err(format!("expected a boolean, got {}", describe(other))),
        },
        PrimitiveSchemaDefinition::Enum(schema) => check_enum(schema, value),
    }
}

fn describe(value: &ElicitValue) -> String {
    match value {
        ElicitValue::Boolean(b) => format!("the boolean {b}"),
        ElicitValue::Integer(n) => format!("the number {n}"),
        ElicitValue::Number(x) => format!("the number {x}"),
        ElicitValue::String(s) => format!("the string {s:?}"),
        ElicitValue::StringArray(items) => format!("the list {items:?}"),
    }
}

fn check_string(schema: &StringSchema, value: &ElicitValue) -> Result<(), String> {
    let ElicitValue::String(text) = value else {
        return Err(format!("expected a string, got {}", describe(value)));
    };
    let length = text.chars().count() as u64;
    if let Some(min) = schema.min_length
        && length < min
    {
        return Err(format!(
            "{length} characters, fewer than the minimum length {min}"
        ));
    }
    if let Some(max) = schema.max_length
        && length > max
    {
        return Err(format!(
            "{length} characters, more than the maximum length {max}"
        ));
    }
    match &schema.format {
        Some(format) if !format.matches(text) => {
            Err(format!("{text:?} is not a valid {}", format.as_str()))
        }
        _ => Ok(()),
    }
}

fn check_number(schema: &NumberSchema, value: &ElicitValue) -> Result<(), String> {
    let number = match value {
        ElicitValue::Integer(n) => Num::Int(*n),
        ElicitValue::Number(x) => Num::Float(*x),
        other => return Err(format!("expected a number, got {}", describe(other))),
    };
    if schema.kind == NumberType::Integer
        && let Num::Float(x) = number
        && x.fract() != 0.0
    {
        return Err(format!("expected an integer, got the number {x}"));
    }
    if let Some(min) = schema.minimum
        && number.cmp_to(min) == Some(Ordering::Less)
    {
        return Err(format!("{number} is less than the minimum {min}"));
    }
    if let Some(max) = schema.maximum
        && number.cmp_to(max) == Some(Ordering::Greater)
    {
        return Err(format!("{number} is greater than the maximum {max}"));
    }
    Ok(())
}

/// A number as the answer carries it.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Float(x) => write!(f, "{x}"),
        }
    }
}

impl Num {
    /// Orders the number against a bound, exactly: an integer is never rounded through
    /// `f64`. `None` when the bound is NaN.
    fn cmp_to(self, bound: f64) -> Option<Ordering> {
        match self {
            Self::Float(x) => x.partial_cmp(&bound),
            Self::Int(n) => cmp_int_float(n, bound),
        }
    }
}

fn cmp_int_float(n: i64, bound: f64) -> Option<Ordering> {
    // 2^63, exactly representable as f64.
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if bound.is_nan() {
        return None;
    }
    if bound >= TWO_POW_63 {
        return Some(Ordering::Less);
    }
    if bound < -TWO_POW_63 {
        return Some(Ordering::Greater);
    }
    let whole = bound.trunc();
    // In [-2^63, 2^63) and integral, so the conversion is exact.
    #[allow(clippy::cast_possible_truncation)]
    let whole_int = whole as i64;
    Some(n.cmp(&whole_int).then_with(|| {
        // Equal whole parts: the bound's fraction decides.
        0.0_f64
            .partial_cmp(&(bound - whole))
            .unwrap_or(Ordering::Equal)
    }))
}

fn check_enum(schema: &EnumSchema, value: &ElicitValue) -> Result<(), String> {
    match schema {
        EnumSchema::Single(single) => {
            let ElicitValue::String(chosen) = value else {
                return Err(format!("expected a string, got {}", describe(value)));
            };
            let (values, matches): (Vec<&str>, usize) = match single {
                SingleSelectEnumSchema::Untitled(s) => {
                    let values = s.values.iter().map(String::as_str).collect();
                    let hit = usize::from(s.values.iter().any(|v| v == chosen));
                    (values, hit)
                }
                SingleSelectEnumSchema::Titled(s) => {
                    let values = s.one_of.iter().map(|o| o.value.as_str()).collect();
                    let hits = s.one_of.iter().filter(|o| o.value == *chosen).count();
                    (values, hits)
                }
            };
            match matches {
                1 => Ok(()),
                0 => Err(format!("{chosen:?} is not one of {values:?}")),
                _ => Err(format!(
                    "{chosen:?} matches {matches} of the options, not exactly one"
                )),
            }
        }
        EnumSchema::LegacyTitled(s) => {
            let ElicitValue::String(chosen) = value else {
                return Err(format!("expected a string, got {}", describe(value)));
            };
            if s.values.contains(chosen) {
                Ok(())
            } else {
                Err(format!("{chosen:?} is not one of {:?}", s.values))
            }
        }
        EnumSchema::Multi(multi) => {
            let ElicitValue::StringArray(chosen) = value else {
                return Err(format!(
                    "expected a list of choices, got {}",
                    describe(value)
                ));
            };
            let (values, min, max): (Vec<&str>, _, _) = match multi {
                MultiSelectEnumSchema::Untitled(m) => (
                    m.items.values.iter().map(String::as_str).collect(),
                    m.min_items,
                    m.max_items,
                ),
                MultiSelectEnumSchema::Titled(m) => (
                    m.items.any_of.iter().map(|o| o.value.as_str()).collect(),
                    m.min_items,
                    m.max_items,
                ),
            };
            if let Some(bad) = chosen.iter().find(|c| !values.contains(&c.as_str())) {
                return Err(format!("{bad:?} is not one of {values:?}"));
            }
            let count = chosen.len() as u64;
            if let Some(min) = min
                && count < min
            {
                return Err(format!("{count} choices, fewer than the minimum {min}"));
            }
            if let Some(max) = max
                && count > max
            {
                return Err(format!("{count} choices, more than the maximum {max}"));
            }
            Ok(())
        }
    }
}

impl StringFormat {
    /// Whether `text` is valid in this format, as a form answer is checked (see
    /// [`RequestedSchema::check_answer`]). A format this SDK does not know accepts any
    /// text, as JSON Schema ignores unknown formats.
    ///
    /// ```
    /// use modelctx_types::StringFormat;
    ///
    /// assert!(StringFormat::DateTime.matches("2025-11-25T09:30:00Z"));
    /// assert!(!StringFormat::Date.matches("2025-02-29"));
    /// assert!(StringFormat::Uri.matches("https://example.com/a?b#c"));
    /// assert!(!StringFormat::Uri.matches("/relative/path"));
    /// ```
    pub fn matches(&self, text: &str) -> bool {
        match self {
            Self::Email => is_email(text),
            Self::Uri => is_uri(text),
            Self::Date => is_date(text),
            Self::DateTime => is_date_time(text),
            Self::Unknown(_) => true,
        }
    }
}

/// `n` ASCII digits exactly, as a number.
fn digits(text: &str, n: usize) -> Option<u32> {
    if text.len() == n && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse().ok()
    } else {
        None
    }
}

/// RFC 3339 `full-date`: `YYYY-MM-DD`, a day that exists in that month.
fn is_date(text: &str) -> bool {
    let (Some(year), Some(month), Some(day)) = (
        text.get(..4).and_then(|y| digits(y, 4)),
        text.get(5..7).and_then(|m| digits(m, 2)),
        text.get(8..).and_then(|d| digits(d, 2)),
    ) else {
        return false;
    };
    if text.as_bytes()[4] != b'-' || text.as_bytes()[7] != b'-' {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 `date-time`: `full-date` `T` `full-time` (either case of `T`).
fn is_date_time(text: &str) -> bool {
    match text.find(['T', 't']) {
        Some(at) => is_date(&text[..at]) && is_time(&text[at + 1..]),
        None => false,
    }
}

/// RFC 3339 `full-time`: `HH:MM:SS[.frac]` and `Z` or `±HH:MM`; second 60 (a leap
/// second) only when the time is 23:59 in UTC.
fn is_time(text: &str) -> bool {
    let (Some(hour), Some(minute), Some(second)) = (
        text.get(..2).and_then(|h| digits(h, 2)),
        text.get(3..5).and_then(|m| digits(m, 2)),
        text.get(6..8).and_then(|s| digits(s, 2)),
    ) else {
        return false;
    };
    if text.as_bytes()[2] != b':' || text.as_bytes()[5] != b':' {
        return false;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &text[8..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return false;
        }
        rest = &fraction[end..];
    }
    // Minutes east of UTC.
    let offset: i64 = if rest == "Z" || rest == "z" {
        0
    } else {
        let sign = match rest.as_bytes().first() {
            Some(b'+') => 1,
            Some(b'-') => -1,
            _ => return false,
        };
        let (Some(h), Some(m)) = (
            rest.get(1..3).and_then(|h| digits(h, 2)),
            rest.get(4..).and_then(|m| digits(m, 2)),
        ) else {
            return false;
        };
        if rest.as_bytes()[3] != b':' || h > 23 || m > 59 {
            return false;
        }
        sign * i64::from(h * 60 + m)
    };
    if second == 60 {
        let utc = (i64::from(hour * 60 + minute) - offset).rem_euclid(24 * 60);
        return utc == 23 * 60 + 59;
    }
    true
}

/// RFC 5321 `Mailbox`: a dot-string or quoted-string local part (at most 64 octets),
/// `@`, and a host name or an address literal (`[IPv4]`, `[IPv6:...]`).
fn is_email(text: &str) -> bool {
    // The longest path RFC 5321 allows is 256 octets, angle brackets included.
    if text.len() > 254 {
        return false;
    }
    let Some(at) = text.rfind('@') else {
        return false;
    };
    let (local, domain) = (&text[..at], &text[at + 1..]);
    local_part_ok(local) && domain_ok(domain)
}

fn is_atext(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~".contains(&b)
}

fn local_part_ok(local: &str) -> bool {
    if local.is_empty() || local.len() > 64 {
        return false;
    }
    if let Some(quoted) = local
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    {
        // qtextSMTP (printable ASCII but `"` and `\`) or a quoted pair.
        let mut bytes = quoted.bytes();
        while let Some(b) = bytes.next() {
            match b {
                b'\\' => {
                    if !bytes.next().is_some_and(|e| (32..=126).contains(&e)) {
                        return false;
                    }
                }
                b'"' => return false,
                32..=126 => {}
                _ => return false,
            }
        }
        return true;
    }
    local
        .split('.')
        .all(|atom| !atom.is_empty() && atom.bytes().all(is_atext))
}

fn domain_ok(domain: &str) -> bool {
    if let Some(literal) = domain
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        return match literal.get(..5) {
            Some(tag) if tag.eq_ignore_ascii_case("IPv6:") => {
                literal[5..].parse::<Ipv6Addr>().is_ok()
            }
            _ => literal.parse::<Ipv4Addr>().is_ok(),
        };
    }
    is_host_name(domain)
}

/// An RFC 1034 host name: dot-separated labels of 1 to 63 letters, digits and hyphens,
/// neither starting nor ending with a hyphen, at most 253 characters in all.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_sub_delim(b: u8) -> bool {
    b"!$&'()*+,;=".contains(&b)
}

/// Whether every character of `text` is allowed by `allowed` or is a `%XX` escape.
fn all_chars(text: &str, allowed: impl Fn(u8) -> bool) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let escape = bytes.get(i + 1..i + 3);
            if !escape.is_some_and(|e| e.iter().all(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += 3;
        } else if allowed(bytes[i]) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

fn is_pchar(b: u8) -> bool {
    is_unreserved(b) || is_sub_delim(b) || b == b':' || b == b'@'
}

/// RFC 3986 `URI`: `scheme ":" hier-part [ "?" query ] [ "#" fragment ]` — absolute,
/// ASCII only.
fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut scheme_bytes = scheme.bytes();
    let scheme_ok = scheme_bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme_bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return false;
    }
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (rest, None),
    };
    let (hier, query) = match rest.split_once('?') {
        Some((hier, query)) => (hier, Some(query)),
        None => (rest, None),
    };
    let query_ok = |part: Option<&str>| {
        part.is_none_or(|p| all_chars(p, |b| is_pchar(b) || b == b'/' || b == b'?'))
    };
    if !query_ok(query) || !query_ok(fragment) {
        return false;
    }
    let path = match hier.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            if !authority_ok(&after[..end]) {
                return false;
            }
            &after[end..]
        }
        None => hier,
    };
    // Without an authority the path cannot start with `//` (handled above), so any
    // sequence of segments fits `path-absolute`, `path-rootless` or `path-empty`.
    all_chars(path, |b| is_pchar(b) || b == b'/')
}

/// RFC 3986 `authority`: `[ userinfo "@" ] host [ ":" port ]`.
fn authority_ok(authority: &str) -> bool {
    let (userinfo, host_port) = match authority.split_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    if let Some(userinfo) = userinfo
        && !all_chars(userinfo, |b| {
            is_unreserved(b) || is_sub_delim(b) || b == b':'
        })
    {
        return false;
    }
    let (host, port) = if let Some(literal) = host_port.strip_prefix('[') {
        let Some((inside, after)) = literal.split_once(']') else {
            return false;
        };
        if !ip_literal_ok(inside) {
            return false;
        }
        match after.strip_prefix(':') {
            Some(port) => ("", Some(port)),
            None if after.is_empty() => ("", None),
            None => return false,
        }
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    port.is_none_or(|p| p.bytes().all(|b| b.is_ascii_digit()))
        && all_chars(host, |b| is_unreserved(b) || is_sub_delim(b))
}

/// The inside of an RFC 3986 `IP-literal`: an IPv6 address or `IPvFuture`.
fn ip_literal_ok(inside: &str) -> bool {
    if let Some(future) = inside.strip_prefix(['v', 'V']) {
        let Some((version, address)) = future.split_once('.') else {
            return false;
        };
        return !version.is_empty()
            && version.bytes().all(|b| b.is_ascii_hexdigit())
            && !address.is_empty()
            && address
                .bytes()
                .all(|b| is_unreserved(b) || is_sub_delim(b) || b == b':');
    }
    inside.parse::<Ipv6Addr>().is_ok()
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
