//! RFC 6570 URI templates, matched in reverse: given a concrete URI, find the values of
//! the template's variables.
//!
//! Every operator of levels 1–3 is understood (`{var}`, `{+var}`, `{#var}`, `{.var}`,
//! `{/var}`, `{;var}`, `{?var}`, `{&var}`, several variables per expression) and the
//! level 4 modifiers are accepted (`{var:3}` bounds the length of a match, `{/var*}`
//! takes the remaining segments). Matched values are percent-decoded.

use std::collections::BTreeMap;
use std::fmt;

/// The longest URI [`UriTemplate::match_uri`] matches: 16 KiB, twice what HTTP servers
/// commonly accept in a request line.
pub const MAX_MATCHED_URI: usize = 16 * 1024;

/// Whether (parts left, bytes left) fits, once decided: 0 unknown, 1 no, 2 yes.
struct Fits {
    cols: usize,
    cells: Vec<u8>,
}

impl Fits {
    fn new(parts: usize, len: usize) -> Self {
        Self {
            cols: len + 1,
            cells: vec![0; parts * (len + 1)],
        }
    }

    fn index(&self, parts: &[Part], uri: &str) -> usize {
        (parts.len() - 1) * self.cols + uri.len()
    }
}

/// A parsed URI template.
#[derive(Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

impl fmt::Debug for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UriTemplate").field(&self.source).finish()
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expression(Op, Vec<VarSpec>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryCont,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    prefix: Option<usize>,
    explode: bool,
}

impl UriTemplate {
    /// Parses a template; an unbalanced brace, an empty expression or an invalid
    /// variable name is an error.
    pub fn parse(source: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest
                        .find('}')
                        .ok_or_else(|| format!("unclosed `{{` in URI template {source:?}"))?;
                    parts.push(parse_expression(&rest[1..end], source)?);
                    rest = &rest[end + 1..];
                }
                found => {
                    let end = found.unwrap_or(rest.len());
                    let literal = &rest[..end];
                    if literal.contains('}') {
                        return Err(format!("unbalanced `}}` in URI template {source:?}"));
                    }
                    parts.push(Part::Literal(literal.to_owned()));
                    rest = &rest[end..];
                }
            }
        }
        Ok(Self {
            source: source.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The names of the template's variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().flat_map(|p| {
            match p {
                Part::Literal(_) => [].iter(),
                Part::Expression(_, vars) => vars.iter(),
            }
            .map(|v| v.name.as_str())
        })
    }

    /// The variables' values if `uri` fits the template, `None` otherwise. Variables an
    /// optional expression (query, path parameters) left out are absent from the map.
    ///
    /// A URI longer than [`MAX_MATCHED_URI`] bytes matches no template: matching is
    /// linear in the URI's length for most templates, but quadratic for adjacent
    /// expressions (`{a}{b}`), and a client chooses the URI.
    pub fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        if uri.len() > MAX_MATCHED_URI {
            return None;
        }
        let mut fits = Fits::new(self.parts.len(), uri.len());
        if !fits_parts(&self.parts, uri, &mut fits) {
            return None;
        }
        let mut vars = BTreeMap::new();
        collect(&self.parts, uri, &mut vars, &mut fits);
        Some(vars)
    }
}

fn parse_expression(body: &str, source: &str) -> Result<Part, String> {
    let (op, list) = match body.chars().next() {
        Some('+') => (Op::Reserved, &body[1..]),
        Some('#') => (Op::Fragment, &body[1..]),
        Some('.') => (Op::Label, &body[1..]),
        Some('/') => (Op::Path, &body[1..]),
        Some(';') => (Op::PathParam, &body[1..]),
        Some('?') => (Op::Query, &body[1..]),
        Some('&') => (Op::QueryCont, &body[1..]),
        _ => (Op::Simple, body),
    };
    let mut vars = Vec::new();
    for spec in list.split(',') {
        let (name, prefix, explode) = if let Some(name) = spec.strip_suffix('*') {
            (name, None, true)
        } else if let Some((name, len)) = spec.split_once(':') {
            let len = len
                .parse::<usize>()
                .ok()
                .filter(|n| (1..10_000).contains(n))
                .ok_or_else(|| format!("invalid prefix length in {{{body}}} of {source:?}"))?;
            (name, Some(len), false)
        } else {
            (spec, None, false)
        };
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%');
        if !valid {
            return Err(format!(
                "invalid variable name {name:?} in URI template {source:?}"
            ));
        }
        vars.push(VarSpec {
            name: name.to_owned(),
            prefix,
            explode,
        });
    }
    Ok(Part::Expression(op, vars))
}

/// Whether `uri` fits `parts`. Whether the rest of a template fits the rest of a URI
/// does not depend on what was captured before, so each (parts left, bytes left) pair
/// is decided once (`fits`), and an expression captures only where the rest fits.
/// Without that, adjacent expressions backtracked exponentially (140 bytes took 10 s)
/// and then cubically (`{a}{b}x` against 4 KB took 140 s); found by the
/// `uri_template` fuzz target. Now the work is quadratic in the URI's length at worst.
fn fits_parts(parts: &[Part], uri: &str, fits: &mut Fits) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    let state = fits.index(parts, uri);
    match fits.cells[state] {
        1 => return false,
        2 => return true,
        _ => {}
    }
    let answer = match first {
        Part::Literal(lit) => uri
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| fits_parts(rest, tail, fits)),
        Part::Expression(op, specs) => ends(*op, uri).into_iter().any(|end| {
            fits_parts(rest, &uri[end..], fits)
                && capture(*op, specs, &uri[..end], &mut BTreeMap::new())
        }),
    };
    fits.cells[state] = if answer { 2 } else { 1 };
    answer
}

/// Fills `vars` along the match `fits_parts` found: each expression takes the first
/// candidate (in the order of [`ends`]) whose text it reads and after which the rest
/// fits; later captures of a repeated name win.
fn collect(parts: &[Part], uri: &str, vars: &mut BTreeMap<String, String>, fits: &mut Fits) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    match first {
        Part::Literal(lit) => {
            if let Some(tail) = uri.strip_prefix(lit.as_str()) {
                collect(rest, tail, vars, fits);
            }
        }
        Part::Expression(op, specs) => {
            for end in ends(*op, uri) {
                if !fits_parts(rest, &uri[end..], fits) {
                    continue;
                }
                let mut found = BTreeMap::new();
                if capture(*op, specs, &uri[..end], &mut found) {
                    vars.extend(found);
                    collect(rest, &uri[end..], vars, fits);
                    return;
                }
            }
        }
    }
}

/// Where an expression of `op` may end in `uri`, in the order they are tried: the
/// longest first, except for query parts, which take the shortest so a following
/// `{&...}` gets its share.
fn ends(op: Op, uri: &str) -> Vec<usize> {
    let extent = uri
        .char_indices()
        .find(|&(_, c)| stops(op, c))
        .map_or(uri.len(), |(i, _)| i);
    let mut ends: Vec<usize> = (0..=extent).filter(|&i| uri.is_char_boundary(i)).collect();
    if !matches!(op, Op::Query | Op::QueryCont) {
        ends.reverse();
    }
    ends
}

/// Characters an expression of this operator can never produce.
fn stops(op: Op, c: char) -> bool {
    match op {
        Op::Simple | Op::Label | Op::PathParam => matches!(c, '/' | '?' | '#'),
        Op::Path => matches!(c, '?' | '#'),
        Op::Reserved => c == '#',
        Op::Query | Op::QueryCont => c == '#' || c == '/',
        Op::Fragment => false,
    }
}

/// Reads the variables out of the text one expression produced.
fn capture(op: Op, specs: &[VarSpec], text: &str, out: &mut BTreeMap<String, String>) -> bool {
    match op {
        Op::Simple | Op::Reserved => split_values(specs, text, ',', out),
        Op::Fragment => text
            .strip_prefix('#')
            .is_some_and(|t| split_values(specs, t, ',', out)),
        Op::Label => text
            .strip_prefix('.')
            .is_some_and(|t| split_values(specs, t, '.', out)),
        Op::Path => text
            .strip_prefix('/')
            .is_some_and(|t| split_values(specs, t, '/', out)),
        Op::PathParam => named_pairs(specs, text, ';', ';', out),
        Op::Query => text.is_empty() || named_pairs(specs, text, '?', '&', out),
        Op::QueryCont => text.is_empty() || named_pairs(specs, text, '&', '&', out),
    }
}

/// Positional values separated by `sep`; the last variable, when exploded, takes the
/// rest. Every variable gets a non-empty value.
fn split_values(
    specs: &[VarSpec],
    text: &str,
    sep: char,
    out: &mut BTreeMap<String, String>,
) -> bool {
    if text.is_empty() {
        return false;
    }
    let mut pieces: Vec<&str> = text.split(sep).collect();
    if let Some(last) = specs.last()
        && last.explode
        && pieces.len() > specs.len()
    {
        let tail = pieces.split_off(specs.len() - 1);
        let joined = tail.join(&sep.to_string());
        return assign(
            specs,
            pieces.into_iter().map(str::to_owned).chain([joined]),
            out,
        );
    }
    if pieces.len() != specs.len() {
        return false;
    }
    assign(specs, pieces.into_iter().map(str::to_owned), out)
}

fn assign(
    specs: &[VarSpec],
    values: impl Iterator<Item = String>,
    out: &mut BTreeMap<String, String>,
) -> bool {
    for (spec, raw) in specs.iter().zip(values) {
        let Some(value) = percent_decode(&raw) else {
            return false;
        };
        if value.is_empty() || spec.prefix.is_some_and(|n| value.chars().count() > n) {
            return false;
        }
        out.insert(spec.name.clone(), value);
    }
    true
}

/// `name=value` pairs after `lead`, separated by `sep`; unknown names are ignored.
fn named_pairs(
    specs: &[VarSpec],
    text: &str,
    lead: char,
    sep: char,
    out: &mut BTreeMap<String, String>,
) -> bool {
    let Some(body) = text.strip_prefix(lead) else {
        return false;
    };
    for pair in body.split(sep) {
        let (name, raw) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(spec) = specs.iter().find(|s| s.name == name) else {
            continue;
        };
        let Some(value) = percent_decode(raw) else {
            return false;
        };
        if spec.prefix.is_some_and(|n| value.chars().count() > n) {
            return false;
        }
        out.insert(spec.name.clone(), value);
    }
    true
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        let t = UriTemplate::parse(template).unwrap();
        t.match_uri(uri).map(|m| m.into_iter().collect())
    }

    fn pairs(items: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            items
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn simple_variables_stop_at_slashes() {
        assert_eq!(
            vars("users://{id}/profile", "users://42/profile"),
            pairs(&[("id", "42")])
        );
        assert_eq!(vars("users://{id}/profile", "users://4/2/profile"), None);
        assert_eq!(vars("users://{id}", "users://"), None);
        assert_eq!(
            vars("a://{x},{y}", "a://1,2"),
            pairs(&[("x", "1"), ("y", "2")])
        );
        assert_eq!(
            vars("a://{name}", "a://hello%20world"),
            pairs(&[("name", "hello world")])
        );
    }

    #[test]
    fn reserved_and_path_operators() {
        assert_eq!(
            vars("file:///{+path}", "file:///a/b/c.txt"),
            pairs(&[("path", "a/b/c.txt")])
        );
        assert_eq!(
            vars("repo://x{/owner,name}", "repo://x/me/proj"),
            pairs(&[("name", "proj"), ("owner", "me")])
        );
        assert_eq!(
            vars("f://r{/segs*}", "f://r/a/b/c"),
            pairs(&[("segs", "a/b/c")])
        );
        assert_eq!(
            vars("f://{name}{.ext}", "f://report.pdf"),
            pairs(&[("ext", "pdf"), ("name", "report")])
        );
        assert_eq!(
            vars("f://doc{#frag}", "f://doc#top"),
            pairs(&[("frag", "top")])
        );
    }

    #[test]
    fn query_operators_are_optional_and_named() {
        assert_eq!(
            vars("s://find{?q,limit}", "s://find?q=rust&limit=5"),
            pairs(&[("limit", "5"), ("q", "rust")])
        );
        assert_eq!(
            vars("s://find{?q,limit}", "s://find?limit=5"),
            pairs(&[("limit", "5")])
        );
        assert_eq!(vars("s://find{?q}", "s://find"), Some(vec![]));
        assert_eq!(
            vars("s://find{?q}{&page}", "s://find?q=a&page=2"),
            pairs(&[("page", "2"), ("q", "a")])
        );
        assert_eq!(vars("m://x{;v}", "m://x;v=1"), pairs(&[("v", "1")]));
    }

    #[test]
    fn prefix_modifiers_bound_the_match() {
        assert_eq!(vars("c://{code:3}", "c://abc"), pairs(&[("code", "abc")]));
        assert_eq!(vars("c://{code:3}", "c://abcd"), None);
    }

    /// Found by the `uri_template` fuzz target: adjacent expressions backtracked
    /// exponentially on a URI that does not fit (SECURITY.md case 15). Bounded: the
    /// match runs on its own thread and must be done well within the wait.
    #[test]
    fn adjacent_expressions_do_not_backtrack_exponentially() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let t = UriTemplate::parse("m://{a}{b}{c}{d}{e}{f}{g}{h}/end").unwrap();
            let miss = t.match_uri(&format!("m://{}/nope", "x".repeat(60)));
            let hit = t.match_uri(&format!("m://{}/end", "x".repeat(60)));
            // Two adjacent expressions against 2 KB that does not fit: far past the wait when
            // every candidate was captured before the rest was tried.
            let two = UriTemplate::parse("m://{a}{b}x").unwrap();
            assert_eq!(two.match_uri(&format!("m://{}", "y".repeat(2000))), None);
            let long = format!("m://{}x", "y".repeat(MAX_MATCHED_URI));
            assert_eq!(two.match_uri(&long), None, "over the cap");
            let fits = format!("m://{}x", "y".repeat(MAX_MATCHED_URI - 6));
            assert!(two.match_uri(&fits).is_some(), "at the cap");
            let _ = tx.send((miss, hit));
        });
        let (miss, hit) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("matching finished");
        assert_eq!(miss, None);
        let hit = hit.expect("a match");
        assert_eq!(hit.values().map(String::len).sum::<usize>(), 60);
    }

    #[test]
    fn bad_templates_are_refused() {
        assert!(UriTemplate::parse("a://{x").is_err());
        assert!(UriTemplate::parse("a://x}").is_err());
        assert!(UriTemplate::parse("a://{}").is_err());
        assert!(UriTemplate::parse("a://{a b}").is_err());
        assert!(UriTemplate::parse("a://{x:0}").is_err());
        let t = UriTemplate::parse("a://{x}/{+y}{?z}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["x", "y", "z"]);
    }
}
