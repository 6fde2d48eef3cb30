//! RFC 6570 URI templates, matched in reverse: given a concrete URI, find the values of
//! the template's variables.
//!
//! Every operator of levels 1–3 is understood (`{var}`, `{+var}`, `{#var}`, `{.var}`,
//! `{/var}`, `{;var}`, `{?var}`, `{&var}`, several variables per expression) and the
//! level 4 modifiers are accepted (`{var:3}` bounds the length of a match, `{/var*}`
//! takes the remaining segments). Matched values are percent-decoded.
//!
//! Matching is linear in the URI's length (times the template's size). Each expression
//! tries its candidate ends in a fixed order and takes the first whose text it reads
//! and after which the rest of the template fits. Trying the candidates one by one is
//! quadratic per adjacent expression (`{a}{b}`) even when each (part, position) is
//! decided once (the `uri_template` fuzz target, SECURITY.md case 15). Instead [`plan`](plan::plan)
//! decides, part by part from the last, the end each part takes from every position,
//! each in a constant number of lookups: the values of an expression before its last
//! are fixed by where it starts, and whether the last one reads up to a given end is a
//! question about that stretch of the URI ([`Decoding`](decoding::Decoding)).
//!
//! Most templates need none of that: when each expression is last, or followed by the
//! last literal, or by a literal opening with a character the expression never
//! produces (`users://{id}/profile`, `file:///{+path}`, `repo://{owner}/{repo}`), every
//! expression's end is forced, and one pass reads the URI (see `forced`). Building the
//! plan's lookups cost several times the whole match on a short URI.
//!
//! URIs longer than `MAX_MATCHED_URI` are not matched. The tests keep the quadratic matcher
//! this one replaced as the reference, and a property test checks both the planned and the
//! forced path against it.

use std::collections::BTreeMap;
use std::fmt;

use plan::plan;

mod decoding;
mod plan;
#[cfg(test)]
mod tests;

/// The longest URI [`UriTemplate::match_uri`] matches: 16 KiB, twice what HTTP servers
/// commonly accept in a request line.
pub const MAX_MATCHED_URI: usize = 16 * 1024;

/// A parsed URI template.
#[derive(Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
    /// Where each expression ends is forced by the template's shape (see [`forced`]):
    /// matched in one pass, without the plan.
    forced: bool,
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
            forced: forced(&parts),
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
    /// Matching is linear in the URI's length (times the template's size), whatever
    /// the template: adjacent expressions (`{a}{b}`) included. A URI longer than
    /// [`MAX_MATCHED_URI`] bytes matches no template all the same.
    pub fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        if uri.len() > MAX_MATCHED_URI {
            return None;
        }
        if self.forced {
            self.match_forced(uri)
        } else {
            self.match_planned(uri)
        }
    }

    /// [`match_uri`](Self::match_uri) for a template whose expressions' ends are
    /// [`forced`]: each expression's end is found in one scan, and its text is read
    /// once. The same answer as the plan's, which would find that end the only one
    /// after which the rest fits; one pass over the URI, no lookups to build (which
    /// cost more than the whole match on a short URI).
    fn match_forced(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut at = 0;
        for (k, part) in self.parts.iter().enumerate() {
            let (op, specs) = match part {
                Part::Literal(literal) => {
                    if !uri[at..].starts_with(literal.as_str()) {
                        return None;
                    }
                    at += literal.len();
                    continue;
                }
                Part::Expression(op, specs) => (*op, specs),
            };
            let stop = |b: &u8| b.is_ascii() && stops(op, char::from(*b));
            let end = match self.parts.get(k + 1) {
                None => uri.len(),
                // The last literal ends the URI.
                Some(Part::Literal(last)) if k + 2 == self.parts.len() => {
                    uri.len().checked_sub(last.len()).filter(|&e| e >= at)?
                }
                // A literal that opens with a character this expression never produces:
                // its first occurrence.
                Some(_) => uri.as_bytes()[at..]
                    .iter()
                    .position(stop)
                    .map_or(uri.len(), |p| at + p),
            };
            let text = uri.get(at..end)?;
            if text.as_bytes().iter().any(stop) {
                return None;
            }
            // Later captures of a repeated name win.
            let mut found = BTreeMap::new();
            if !capture(op, specs, text, &mut found) {
                return None;
            }
            vars.extend(found);
            at = end;
        }
        (at == uri.len()).then_some(vars)
    }

    /// [`match_uri`](Self::match_uri) through the [`plan`]: any template.
    fn match_planned(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let plan = plan(&self.parts, uri);
        let mut vars = BTreeMap::new();
        let mut at = 0;
        for (part, ends) in self.parts.iter().zip(&plan) {
            let end = usize::try_from(*ends.get(at)?).ok()?;
            if end > uri.len() {
                return None;
            }
            if let Part::Expression(op, specs) = part {
                // Later captures of a repeated name win.
                let mut found = BTreeMap::new();
                if !capture(*op, specs, &uri[at..end], &mut found) {
                    return None;
                }
                vars.extend(found);
            }
            at = end;
        }
        (at == uri.len()).then_some(vars)
    }
}

/// Whether every expression's end is forced by the template's shape: each is the last
/// part, or followed by the last part (a literal, which must end the URI), or by a
/// literal opening with a character the expression never produces (so the expression
/// ends at the first such character, or the literal cannot follow it). Adjacent
/// expressions (`{a}{b}`), and an expression followed by a literal it might produce
/// and then more, have several candidate ends: those go through the plan.
fn forced(parts: &[Part]) -> bool {
    parts.iter().enumerate().all(|(k, part)| match part {
        Part::Literal(_) => true,
        Part::Expression(op, _) => match parts.get(k + 1) {
            None => true,
            Some(Part::Literal(_)) if k + 2 == parts.len() => true,
            Some(Part::Literal(literal)) => literal.chars().next().is_some_and(|c| stops(*op, c)),
            Some(Part::Expression(..)) => false,
        },
    })
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
