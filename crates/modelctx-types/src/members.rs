//! Finding a few members of a JSON object in its text, without decoding it: one quick
//! scan for the layers that each want a member or two of a request's params (the
//! request context wants `_meta`, the server the envelope's four keys). It costs about
//! what serde's skipping of the same text costs per byte: it pays where it replaces a
//! pass that also copies or builds. Unstable: for the SDK's own crates.
//!
//! The text is expected to be valid JSON (a [`RawValue`](crate::RawValue)'s text: its
//! parser checked it). The scan does not check it again; on text that is not valid it
//! returns `None` or members that are not what a parser would say, never panics.
//! Anything the quick scan does not settle is `None` — a key written with escapes, a
//! wanted key twice (a derived `Deserialize` refuses that, a map keeps the last), text
//! that is not an object — and the caller then reads the text the slow way, so edge
//! cases behave exactly as with a parser.

/// The values (their JSON text) of the members named `keys` in `object`, the text of a
/// JSON object, in the order of `keys`: `None` where a key is absent. `None` in all
/// when the quick scan cannot settle it (see the module's doc).
///
/// ```
/// use modelctx_types::members::find;
/// let text = r#"{"name":"echo","arguments":{"a":[1,"}"]},"_meta":null}"#;
/// assert_eq!(
///     find(text, ["_meta", "name", "uri"]),
///     Some([Some("null"), Some(r#""echo""#), None])
/// );
/// assert_eq!(find(r#"{"a":1,"a":2}"#, ["a"]), None);
/// assert_eq!(find(r#"{"\u0061":1}"#, ["a"]), None);
/// assert_eq!(find("[1]", ["a"]), None);
/// ```
pub fn find<'a, const N: usize>(object: &'a str, keys: [&str; N]) -> Option<[Option<&'a str>; N]> {
    find_with(object, keys, |_, _| None)
}

/// [`find`], with a way around scanning a value the caller has seen before: for each
/// wanted key, before its value is skipped, `known(k, rest)` is asked with the key's
/// index in `keys` and the text from the value's first byte on; `Some(len)` says the
/// value is the first `len` bytes of `rest`, and the scan goes on after them without
/// reading them. The caller answers only for a prefix that is a complete JSON object
/// or array it read before (an object's text is never a proper prefix of another
/// value's text, so the value there is exactly that prefix); a `len` that is not on a
/// character boundary of `rest`, or longer than it, makes the scan give up (`None`).
///
/// ```
/// use modelctx_types::members::find_with;
/// let seen = r#"{"k":[1,2]}"#;
/// let text = r#"{"_meta":{"k":[1,2]},"name":"echo"}"#;
/// let found = find_with(text, ["_meta", "name"], |k, rest| {
///     (k == 0 && rest.starts_with(seen)).then_some(seen.len())
/// });
/// assert_eq!(found, Some([Some(seen), Some(r#""echo""#)]));
/// ```
pub fn find_with<'a, const N: usize>(
    object: &'a str,
    keys: [&str; N],
    mut known: impl FnMut(usize, &'a str) -> Option<usize>,
) -> Option<[Option<&'a str>; N]> {
    let b = object.as_bytes();
    let mut found = [None; N];
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(found);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_start = i + 1;
        let key_end = key_start + quote_or_escape(b.get(key_start..)?)?;
        if b[key_end] == b'\\' {
            return None;
        }
        let key = object.get(key_start..key_end)?;
        i = skip_ws(b, key_end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(b, i + 1);
        let wanted = keys.iter().position(|wanted| *wanted == key);
        let seen = match wanted {
            Some(k) => object
                .get(value_start..)
                .and_then(|rest| known(k, rest))
                .map(|len| value_start + len),
            None => None,
        };
        let value_end = match seen {
            Some(end) => end,
            None => skip_value(b, value_start)?,
        };
        if let Some(k) = wanted {
            if found[k].is_some() {
                return None;
            }
            found[k] = Some(object.get(value_start..value_end)?);
        }
        i = skip_ws(b, value_end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some(found),
            _ => return None,
        }
    }
}

/// The span of `object`'s text to take out to remove the member named `key` whose value
/// is the `len` bytes at `at` (as [`find`] found it): the member with the comma that
/// separates it from its neighbour (the one before it, or for the first member the one
/// after it). `None` when the text there is not such a member: the value out of
/// bounds, or not preceded by `"key"` (spelled as is), `:` and `{` or `,` (whitespace
/// aside).
///
/// ```
/// use modelctx_types::members::member_span;
/// let text = r#"{"a":1, "m" : {"k":2} ,"b":3}"#;
/// let at = text.find("{\"k").unwrap();
/// let span = member_span(text, at, 7, "m").unwrap();
/// assert_eq!(format!("{}{}", &text[..span.start], &text[span.end..]), r#"{"a":1 ,"b":3}"#);
/// let text = r#"{"m":{},"b":3}"#;
/// let span = member_span(text, 5, 2, "m").unwrap();
/// assert_eq!(format!("{}{}", &text[..span.start], &text[span.end..]), r#"{"b":3}"#);
/// assert_eq!(member_span(text, 5, 2, "n"), None);
/// ```
pub fn member_span(
    object: &str,
    at: usize,
    len: usize,
    key: &str,
) -> Option<std::ops::Range<usize>> {
    let end = at.checked_add(len)?;
    object.get(at..end)?;
    // Every single byte looked at is ASCII (whitespace, punctuation) and `key` is
    // compared whole: the offsets found are character boundaries.
    let b = object.as_bytes();
    let mut i = skip_ws_back(b, at);
    i = i.checked_sub(1).filter(|&i| b[i] == b':')?;
    i = skip_ws_back(b, i);
    i = i.checked_sub(1).filter(|&i| b[i] == b'"')?;
    i = i
        .checked_sub(key.len())
        .filter(|&i| &b[i..i + key.len()] == key.as_bytes())?;
    let key_start = i.checked_sub(1).filter(|&i| b[i] == b'"')?;
    let before = skip_ws_back(b, key_start);
    match before.checked_sub(1).map(|i| b[i]) {
        // A later member: the comma before it goes with it.
        Some(b',') => Some(before - 1..end),
        // The first member: the comma after it goes with it, when a member follows.
        Some(b'{') => {
            let next = skip_ws(b, end);
            let through = if b.get(next) == Some(&b',') {
                next + 1
            } else {
                end
            };
            Some(key_start..through)
        }
        _ => None,
    }
}

/// The start of the whitespace that ends `b[..i]`.
fn skip_ws_back(b: &[u8], mut i: usize) -> usize {
    while i > 0 && matches!(b[i - 1], b' ' | b'\n' | b'\r' | b'\t') {
        i -= 1;
    }
    i
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// Where the first `"` or `\` of `b` stands (a vectorised search: strings are the
/// longest stretches the scan reads).
fn quote_or_escape(b: &[u8]) -> Option<usize> {
    memchr::memchr2(b'"', b'\\', b)
}

/// The end of the string that starts (with its quote) at `i`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i += quote_or_escape(b.get(i..)?)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

/// The end of the value that starts at `i`.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let start = i;
            while let Some(c) = b.get(i) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                    break;
                }
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

/// Whether `text` holds one of `needles` anywhere. One or two needles take one vectorised
/// pass: each is looked for by its first capital letter (a byte rare in JSON text), then
/// compared around it; a needle without a capital is looked for by its first byte. More
/// needles take a pass each. An empty needle is held by any text.
///
/// ```
/// use modelctx_types::members::holds;
/// let needles = ["\"inputResponses\"", "\"requestState\""];
/// assert!(holds(r#"{"a":{"requestState":"S"}}"#, needles));
/// assert!(!holds(r#"{"inputRequests":"State","Responses":1}"#, needles));
/// assert!(holds("io.x/protocolVersion", ["x/protocolVersion"]));
/// assert!(holds(r#"{"a":1,"_meta":{}}"#, ["\"_meta\""]));
/// assert!(!holds(r#"{"_m":"_meta_"}"#, ["\"_meta\""]));
/// ```
pub fn holds<const N: usize>(text: &str, needles: [&str; N]) -> bool {
    if needles.iter().any(|needle| needle.is_empty()) {
        return true;
    }
    let pivots = needles.map(|needle| {
        let b = needle.as_bytes();
        b.iter().position(u8::is_ascii_uppercase).unwrap_or(0)
    });
    let text = text.as_bytes();
    let around = |at: usize| {
        needles.iter().zip(pivots).any(|(needle, pivot)| {
            let needle = needle.as_bytes();
            needle.get(pivot) == Some(&text[at])
                && at
                    .checked_sub(pivot)
                    .and_then(|start| text.get(start..start + needle.len()))
                    == Some(needle)
        })
    };
    let byte = |k: usize| needles[k].as_bytes().get(pivots[k]).copied();
    match N {
        1 => byte(0).is_some_and(|a| memchr::memchr_iter(a, text).any(around)),
        2 => match (byte(0), byte(1)) {
            (Some(a), Some(b)) => memchr::memchr2_iter(a, b, text).any(around),
            _ => false,
        },
        _ => needles
            .iter()
            .any(|needle| memchr::memmem::find(text, needle.as_bytes()).is_some()),
    }
}

/// A member's value read as a JSON string: its text, borrowed unless it has escapes;
/// `None` when `value` (one JSON value's text, as [`find`] gives it) is not a string.
///
/// ```
/// use modelctx_types::members::string;
/// assert_eq!(string(r#""2026-07-28""#).as_deref(), Some("2026-07-28"));
/// assert_eq!(string(r#""a\"b""#).as_deref(), Some(r#"a"b"#));
/// assert_eq!(string("7"), None);
/// ```
pub fn string(value: &str) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    // Without escapes, a string literal is its text between the quotes: no parser.
    if let Some(inner) = value.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && !inner.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
    {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(value).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What a parser says of `key` in `text` (`None` when the scan must not settle it).
    fn parsed(text: &str, key: &str) -> Option<Value> {
        let Value::Object(map) = serde_json::from_str::<Value>(text).ok()? else {
            return None;
        };
        map.get(key).cloned()
    }

    #[test]
    fn members_are_what_a_parser_reads() {
        let texts = [
            r#"{}"#,
            r#" { "a" : 1 , "b" : [ 1 , { "a" : 2 } ] , "c":"x\"}" } "#,
            r#"{"name":"e\\","arguments":{"text":"hi ] } \" {"},"_meta":{"k":[[],{}]}}"#,
            r#"{"a":true,"b":false,"c":null,"d":-1.5e3,"e":"\u00e9"}"#,
            "{\"a\"\n:\t{\"b\":\"\\\\\"}}",
        ];
        for text in texts {
            let found = find(text, ["a", "b", "c", "name", "arguments", "_meta"]).unwrap();
            for (key, value) in ["a", "b", "c", "name", "arguments", "_meta"]
                .iter()
                .zip(found)
            {
                let value = value.map(|v| serde_json::from_str::<Value>(v).unwrap());
                assert_eq!(value, parsed(text, key), "{key} in {text}");
            }
        }
    }

    #[test]
    fn what_the_scan_does_not_settle_is_none() {
        for text in [
            "[]",
            "\"a\"",
            "null",
            r#"{"a":1,"a":1}"#,
            r#"{"\u0061":1}"#,
            r#"{"a\"b":1}"#,
            // Not valid JSON: no panic, no answer.
            "{",
            r#"{"a""#,
            r#"{"a":"#,
            r#"{"a":1"#,
            r#"{"a":[1}"#,
            r#"{"a":"\"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            "",
        ] {
            assert_eq!(find(text, ["a"]), None, "{text}");
        }
        // A key escaped elsewhere than in a wanted key still stops the scan (it may be
        // a wanted one spelled with escapes).
        assert_eq!(find(r#"{"x\n":1,"a":2}"#, ["a"]), None);
        // Wanted keys twice: only the wanted ones matter.
        assert_eq!(find(r#"{"x":1,"x":2,"a":3}"#, ["a"]), Some([Some("3")]));
    }

    #[test]
    fn a_member_goes_with_one_comma() {
        let cut = |text: &str, value: &str, key: &str| {
            let at = text.find(value).unwrap();
            member_span(text, at, value.len(), key)
                .map(|span| format!("{}{}", &text[..span.start], &text[span.end..]))
        };
        assert_eq!(cut(r#"{"m":1}"#, "1", "m").as_deref(), Some("{}"));
        assert_eq!(
            cut("{ \"m\"\t:\n[1] }", "[1]", "m").as_deref(),
            Some("{  }")
        );
        assert_eq!(
            cut(r#"{"m":[1] , "b":2}"#, "[1]", "m").as_deref(),
            Some(r#"{ "b":2}"#)
        );
        assert_eq!(
            cut(r#"{"a":1 ,"é":[1]}"#, "[1]", "é").as_deref(),
            Some(r#"{"a":1 }"#)
        );
        // Not a member spelled `"m"` before the value: no span.
        for text in [
            r#"{"xm":[1]}"#,
            r#"{m":[1]}"#,
            r#"{"m" [1]}"#,
            r#"["m":[1]]"#,
            r#""m":[1]"#,
        ] {
            assert_eq!(cut(text, "[1]", "m"), None, "{text}");
        }
        // Out of bounds, or off a character boundary: no span, no panic.
        assert_eq!(member_span(r#"{"m":1}"#, 5, 9, "m"), None);
        assert_eq!(member_span(r#"{"m":"é"}"#, 6, 1, "m"), None);
        assert_eq!(member_span("m", 0, 1, "mm"), None);
    }

    #[test]
    fn holds_is_what_contains_says() {
        let texts = [
            "",
            "_",
            r#"{"_meta":{},"x":"\"inputResponses\""}"#,
            r#"{"a_meta":1,"_met":"a","Responses":"input"}"#,
            r#"{"requestState":"S","arguments":{"_meta":null}}"#,
            r#""inputResponses""#,
        ];
        let needles = [
            "\"_meta\"",
            "\"inputResponses\"",
            "\"requestState\"",
            "a",
            "",
        ];
        for text in texts {
            for a in needles {
                assert_eq!(holds(text, [a]), text.contains(a), "{a} in {text}");
                for b in needles {
                    let either = text.contains(a) || text.contains(b);
                    assert_eq!(holds(text, [a, b]), either, "{a} or {b} in {text}");
                }
            }
            let three = ["\"_meta\"", "\"requestState\"", "a"];
            let any = three.iter().any(|n| text.contains(n));
            assert_eq!(holds(text, three), any, "{text}");
        }
    }

    #[test]
    fn a_value_seen_before_is_not_read_again() {
        let seen = r#"{"v":"2026-07-28","c":{}}"#;
        let text = format!(r#"{{"name":"e","_meta":{seen} , "uri":"u"}}"#);
        let mut asked = Vec::new();
        let found = find_with(&text, ["_meta", "uri"], |k, rest| {
            asked.push(k);
            (k == 0 && rest.starts_with(seen)).then_some(seen.len())
        });
        assert_eq!(found, Some([Some(seen), Some(r#""u""#)]));
        // Asked for wanted keys only.
        assert_eq!(asked, [0, 1]);
        // A length off the text, or off a character boundary: no answer, no panic.
        assert_eq!(
            find_with(&text, ["_meta"], |_, rest| Some(rest.len() + 1)),
            None
        );
        let wide = r#"{"a":"é"}"#;
        assert_eq!(find_with(wide, ["a"], |_, _| Some(2)), None);
        // A key seen twice is still not settled, however its values were found.
        let twice = format!(r#"{{"_meta":{seen},"_meta":{seen}}}"#);
        assert_eq!(
            find_with(&twice, ["_meta"], |_, rest| rest
                .starts_with(seen)
                .then_some(seen.len())),
            None
        );
    }
}
