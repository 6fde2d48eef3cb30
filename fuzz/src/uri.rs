//! URI template matching (`modelctx_server::UriTemplate`).
//!
//! Input: a template on the first line, a URI on the rest. A template that parses
//! keeps its text; a match only names the template's variables; and the URI the
//! template itself expands to (RFC 6570, one-letter values) always matches. Matching
//! must stay fast on any template and URI: libFuzzer's timeout catches a matcher that
//! backtracks exponentially.

use modelctx_server::UriTemplate;

/// Expands `template` (already known to parse) with a one-letter value per variable.
fn expand(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    let mut n = 0usize;
    let mut value = || {
        n += 1;
        char::from(b'a' + (n % 26) as u8).to_string()
    };
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open
            + rest[open..]
                .find('}')
                .expect("a parsed template is balanced");
        let body = &rest[open + 1..close];
        rest = &rest[close + 1..];
        let (op, list) = match body.chars().next() {
            Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &body[1..]),
            _ => (None, body),
        };
        let names: Vec<&str> = list
            .split(',')
            .map(|spec| {
                let spec = spec.strip_suffix('*').unwrap_or(spec);
                spec.split_once(':').map_or(spec, |(name, _)| name)
            })
            .collect();
        let values: Vec<String> = names.iter().map(|_| value()).collect();
        match op {
            None | Some('+') => out.push_str(&values.join(",")),
            Some('#') => {
                out.push('#');
                out.push_str(&values.join(","));
            }
            Some('.') => {
                out.push('.');
                out.push_str(&values.join("."));
            }
            Some('/') => {
                out.push('/');
                out.push_str(&values.join("/"));
            }
            Some(c) => {
                // `;name=v;name=v`, `?name=v&name=v`, `&name=v&name=v`
                let sep = if c == ';' { ';' } else { '&' };
                for (i, (name, v)) in names.iter().zip(&values).enumerate() {
                    out.push(if i == 0 { c } else { sep });
                    out.push_str(name);
                    out.push('=');
                    out.push_str(v);
                }
            }
        }
    }
    out.push_str(rest);
    out
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(parsed) = UriTemplate::parse(template) else {
        return;
    };
    assert_eq!(parsed.as_str(), template, "a template keeps its text");
    assert_eq!(UriTemplate::parse(parsed.as_str()).as_ref(), Ok(&parsed));
    let variables: Vec<&str> = parsed.variables().collect();

    if let Some(found) = parsed.match_uri(uri) {
        for name in found.keys() {
            assert!(
                variables.contains(&name.as_str()),
                "matched `{name}`, which is not a variable of {template:?}"
            );
        }
        assert_eq!(
            parsed.match_uri(uri),
            Some(found),
            "matching is not deterministic"
        );
    }

    let expanded = expand(template);
    assert!(
        parsed.match_uri(&expanded).is_some(),
        "{template:?} does not match its own expansion {expanded:?}"
    );
}
