//! Where each part of a template ends, from every position of a URI at once.

use super::decoding::Decoding;
use super::{Op, Part, VarSpec, stops};

/// No position.
const NONE: usize = usize::MAX;

/// For each part of `parts` and each position of `uri`: where the part ends when it
/// starts there and the rest of the template fits after it, the first such end in the
/// order the candidates are tried (see [`Ends`]); [`NONE`] when there is none.
///
/// Decided part by part from the last, each part for every position at once: whether
/// the rest fits from a position does not depend on what came before it. A literal
/// costs its length per position; an expression a constant per position and variable,
/// from lookups prepared once per part ([`Ends`]) and per URI ([`Decoding`]).
pub(super) fn plan(parts: &[Part], uri: &str) -> Vec<Vec<u32>> {
    let len = uri.len();
    let decoding = Decoding::new(uri);
    let mut fits: Vec<bool> = (0..=len).map(|p| p == len).collect();
    let mut plan = vec![Vec::new(); parts.len()];
    for (k, part) in parts.iter().enumerate().rev() {
        let ends: Vec<usize> = match part {
            Part::Literal(literal) => (0..=len)
                .map(|p| {
                    let end = p + literal.len();
                    let here = uri.as_bytes()[p..].starts_with(literal.as_bytes());
                    if here && fits[end] { end } else { NONE }
                })
                .collect(),
            Part::Expression(op, specs) => Ends::new(*op, specs, uri, &decoding, &fits).all(),
        };
        fits = ends.iter().map(|&e| e != NONE).collect();
        plan[k] = ends
            .into_iter()
            .map(|e| u32::try_from(e).unwrap_or(u32::MAX))
            .collect();
    }
    plan
}

/// Where one expression may end, from each position, given where the rest of the
/// template fits (`fits`). Candidates are tried as the RFC's reading suggests: the
/// longest first, except for query parts, which take the shortest so a following
/// `{&...}` gets its share; an end counts when the rest fits there and the text up to
/// it reads as the expression (as `capture` reads it).
struct Ends<'a> {
    op: Op,
    specs: &'a [VarSpec],
    uri: &'a str,
    decoding: &'a Decoding,
    fits: &'a [bool],
    /// The first character at or after each position the operator never produces.
    next_stop: Vec<usize>,
    /// The first separator of the operator's values (or pairs) at or after each
    /// position.
    next_sep: Vec<usize>,
    /// The first `=` at or after each position (named operators; empty otherwise).
    next_eq: Vec<usize>,
    /// The last position at or before each where the rest fits, and the first at or
    /// after; the same for the positions where, besides, a decoded value may end. Only
    /// `prev_good` for positional operators, the others empty.
    prev_fit: Vec<usize>,
    next_fit: Vec<usize>,
    prev_good: Vec<usize>,
    next_good: Vec<usize>,
}

impl<'a> Ends<'a> {
    fn new(
        op: Op,
        specs: &'a [VarSpec],
        uri: &'a str,
        decoding: &'a Decoding,
        fits: &'a [bool],
    ) -> Self {
        let bytes = uri.as_bytes();
        let len = bytes.len();
        let next = |hit: &dyn Fn(u8) -> bool| {
            let mut next = vec![len; len + 1];
            for p in (0..len).rev() {
                next[p] = if hit(bytes[p]) { p } else { next[p + 1] };
            }
            next
        };
        let sep = match op {
            Op::Simple | Op::Reserved | Op::Fragment => b',',
            Op::Label => b'.',
            Op::Path => b'/',
            Op::PathParam => b';',
            Op::Query | Op::QueryCont => b'&',
        };
        // Positional operators look only backwards, for the longest end; named ones
        // both ways, and for `=`.
        let named = matches!(op, Op::PathParam | Op::Query | Op::QueryCont);
        let good = |p: usize| fits[p] && decoding.clean[p];
        Self {
            op,
            specs,
            uri,
            decoding,
            fits,
            next_stop: next(&|b| b.is_ascii() && stops(op, char::from(b))),
            next_sep: next(&|b| b == sep),
            next_eq: if named {
                next(&|b| b == b'=')
            } else {
                Vec::new()
            },
            prev_fit: if named {
                last_before(len, |p| fits[p])
            } else {
                Vec::new()
            },
            next_fit: if named {
                first_after(len, |p| fits[p])
            } else {
                Vec::new()
            },
            prev_good: last_before(len, good),
            next_good: if named {
                first_after(len, good)
            } else {
                Vec::new()
            },
        }
    }

    /// The chosen end from every position.
    fn all(&self) -> Vec<usize> {
        let len = self.uri.len();
        match self.op {
            Op::PathParam | Op::Query | Op::QueryCont => {
                let pairs = self.pairs();
                (0..=len).map(|i| self.named(i, &pairs)).collect()
            }
            _ => (0..=len).map(|i| self.positional(i)).collect(),
        }
    }

    /// Positional values (`{a,b}`, `{+a}`, `{#a}`, `{.a}`, `{/a}`): the values before
    /// the last are fixed by where the expression starts, so only the last one's end
    /// varies, and the longest end is taken.
    fn positional(&self, i: usize) -> usize {
        if !self.uri.is_char_boundary(i) {
            return NONE;
        }
        let lead = match self.op {
            Op::Fragment => Some(b'#'),
            Op::Label => Some(b'.'),
            Op::Path => Some(b'/'),
            _ => None,
        };
        let extent = self.next_stop[i];
        let mut start = i;
        if let Some(lead) = lead {
            if self.uri.as_bytes().get(i) != Some(&lead) {
                return NONE;
            }
            start = i + 1;
        }
        let Some((last, before)) = self.specs.split_last() else {
            return NONE;
        };
        for spec in before {
            let sep = self.next_sep[start];
            if sep >= extent || sep == start || !self.value_fits(spec, start, sep) {
                return NONE;
            }
            start = sep + 1;
        }
        let mut end = extent;
        if !last.explode {
            end = end.min(self.next_sep[start]);
        }
        self.last_decoded(start, self.char_limit(last, start, end))
    }

    /// Named pairs (`{;a}`, `{?a}`, `{&a}`): from `i`, the empty text (a query part
    /// left out) or the lead and pairs from `i + 1` ([`Ends::pairs`]).
    fn named(&self, i: usize, pairs: &[usize]) -> usize {
        if !self.uri.is_char_boundary(i) {
            return NONE;
        }
        let (lead, query) = match self.op {
            Op::PathParam => (b';', false),
            Op::Query => (b'?', true),
            _ => (b'&', true),
        };
        if query && self.fits[i] {
            return i;
        }
        if self.uri.as_bytes().get(i) != Some(&lead) {
            return NONE;
        }
        pairs[i + 1]
    }

    /// For each position where a pair may start: the chosen end of a run of pairs
    /// from there (the shortest for queries, the longest for path parameters). Every
    /// pair but the last is whole, and must read; the last may end anywhere it reads.
    /// A pair reads unless it names a variable and its value does not decode (or is
    /// over the variable's prefix length); it reads whatever its end before its `=`.
    fn pairs(&self) -> Vec<usize> {
        let len = self.uri.len();
        let shortest = !matches!(self.op, Op::PathParam);
        let mut best = vec![NONE; len + 1];
        for a in (0..=len).rev() {
            if !self.uri.is_char_boundary(a) {
                continue;
            }
            let stop = self.next_stop[a];
            let sep = self.next_sep[a];
            let end = sep.min(stop);
            let eq = self.next_eq[a];
            let spec = if eq < end {
                let name = &self.uri[a..eq];
                self.specs.iter().find(|s| s.name == name)
            } else {
                None
            };
            let whole_reads = spec.is_none_or(|s| self.value_fits(s, eq + 1, sep));
            let more = if sep < stop && whole_reads {
                best[sep + 1]
            } else {
                NONE
            };
            let unnamed_end = eq.min(end);
            let in_name = |q: usize| (q != NONE && q >= a && q <= unnamed_end).then_some(q);
            let in_value = |first: bool| -> Option<usize> {
                if eq >= end {
                    return None;
                }
                let Some(spec) = spec else {
                    let q = if first {
                        self.next_fit[eq + 1]
                    } else {
                        self.prev_fit[end]
                    };
                    return (q != NONE && q > eq && q <= end).then_some(q);
                };
                let limit = self.char_limit(spec, eq + 1, end);
                let empty = self.fits[eq + 1].then_some(eq + 1);
                if first {
                    empty.or_else(|| some(self.first_decoded(eq + 1, limit)))
                } else {
                    some(self.last_decoded(eq + 1, limit)).or(empty)
                }
            };
            best[a] = if shortest {
                in_name(self.next_fit[a])
                    .or_else(|| in_value(true))
                    .unwrap_or(more)
            } else if more != NONE {
                more
            } else {
                in_value(false)
                    .or_else(|| in_name(self.prev_fit[unnamed_end]))
                    .unwrap_or(NONE)
            };
        }
        best
    }

    /// Whether `uri[l..j]` reads as `spec`'s value: it decodes, within the prefix.
    fn value_fits(&self, spec: &VarSpec, l: usize, j: usize) -> bool {
        self.decoding.decodes(l, j)
            && spec
                .prefix
                .is_none_or(|max| self.decoding.chars(l, j) <= max)
    }

    /// `end`, or less where `spec`'s prefix length stops a value starting at `l`.
    fn char_limit(&self, spec: &VarSpec, l: usize, end: usize) -> usize {
        spec.prefix
            .map_or(end, |max| end.min(self.decoding.char_limit(l, max)))
    }

    /// The last `j` in `l + 1..=r` where the rest fits and `uri[l..j]` decodes.
    fn last_decoded(&self, l: usize, r: usize) -> usize {
        if r <= l {
            return NONE;
        }
        let from = self.decoding.resume[l];
        if from < r && self.decoding.clean[from] {
            let q = self.prev_good[r.min(self.decoding.next_bad[from])];
            if q != NONE && q > from {
                return q;
            }
        }
        (l + 1..=from.min(r))
            .rev()
            .find(|&j| self.fits[j])
            .unwrap_or(NONE)
    }

    /// The first `j` in `l + 1..=r` where the rest fits and `uri[l..j]` decodes.
    fn first_decoded(&self, l: usize, r: usize) -> usize {
        if r <= l {
            return NONE;
        }
        let from = self.decoding.resume[l];
        if let Some(j) = (l + 1..=from.min(r)).find(|&j| self.fits[j]) {
            return j;
        }
        if from < r && self.decoding.clean[from] {
            let q = self.next_good[from + 1];
            if q <= r.min(self.decoding.next_bad[from]) {
                return q;
            }
        }
        NONE
    }
}

fn some(position: usize) -> Option<usize> {
    (position != NONE).then_some(position)
}

/// For each position of `0..=len`, the last at or before it that is marked ([`NONE`]
/// for none).
fn last_before(len: usize, marked: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut last = NONE;
    (0..=len)
        .map(|p| {
            if marked(p) {
                last = p;
            }
            last
        })
        .collect()
}

/// For each position of `0..=len`, the first at or after it that is marked ([`NONE`]
/// for none).
fn first_after(len: usize, marked: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut first = vec![NONE; len + 1];
    let mut next = NONE;
    for p in (0..=len).rev() {
        if marked(p) {
            next = p;
        }
        first[p] = next;
    }
    first
}
