//! Tests of the URI template matcher.

use super::*;

/// The matcher this module had before (SECURITY.md case 15's quadratic one), kept
/// as the definition the linear one must agree with: each expression tries its
/// candidate ends in order, and takes the first whose text it reads and after which
/// the rest fits (decided once per (parts left, bytes left)).
mod reference {
    use super::super::*;

    struct Fits {
        cols: usize,
        cells: Vec<u8>,
    }

    impl Fits {
        fn index(&self, parts: &[Part], uri: &str) -> usize {
            (parts.len() - 1) * self.cols + uri.len()
        }
    }

    pub(super) fn match_uri(template: &UriTemplate, uri: &str) -> Option<BTreeMap<String, String>> {
        let parts = &template.parts;
        let mut fits = Fits {
            cols: uri.len() + 1,
            cells: vec![0; parts.len() * (uri.len() + 1)],
        };
        if !fits_parts(parts, uri, &mut fits) {
            return None;
        }
        let mut vars = BTreeMap::new();
        collect(parts, uri, &mut vars, &mut fits);
        Some(vars)
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
}

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

/// A small deterministic generator (xorshift), so a failure names its case.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn join(&mut self, pieces: &[&str], most: usize) -> String {
        (0..self.below(most + 1))
            .map(|_| pieces[self.below(pieces.len())])
            .collect()
    }
}

/// The linear matcher answers exactly as the backtracking reading it replaced,
/// values and all, on templates of every operator, adjacent expressions, prefixes
/// and explosions, against URIs made of separators, stop characters and percent
/// escapes (valid, lone, truncated, and bytes that are not UTF-8 on their own).
#[test]
fn agrees_with_the_backtracking_reading() {
    const PARTS: &[&str] = &[
        "m:", "x", "/", "=", "%", ";", "{a}", "{b}", "{a,b}", "{c:2}", "{d*}", "{a,d*}", "{+p}",
        "{+p:3}", "{#f}", "{#f,g}", "{.e}", "{.e,f}", "{.e*}", "{/s}", "{/s*}", "{/s,t:1}", "{;v}",
        "{;v,w:1}", "{?q}", "{?q,r}", "{?q:1}", "{&r}", "{&q,r}",
    ];
    const PIECES: &[&str] = &[
        "a",
        "b",
        "x",
        "y",
        "/",
        ",",
        ".",
        ";",
        "?",
        "&",
        "=",
        "#",
        "%",
        "2",
        "C",
        "+",
        "m:",
        "q=",
        "r=",
        "v=",
        "w=",
        "%2C",
        "%C3",
        "%A9",
        "%C3%A9",
        "%e9",
        "%E0%A0%80",
        "%ED%A0%80",
        "%F0%90%80%80",
        "%F4%90",
        "%80",
        "%+f",
        "%%",
        "é",
        "\u{1F600}",
    ];
    let mut draw = Draw(0x9E37_79B9_7F4A_7C15);
    let mut matched = 0;
    let (mut forced, mut forced_matched) = (0, 0);
    for case in 0..20_000 {
        let chosen: Vec<&str> = (0..=draw.below(5))
            .map(|_| PARTS[draw.below(PARTS.len())])
            .collect();
        let template = chosen.concat();
        let Ok(t) = UriTemplate::parse(&template) else {
            continue;
        };
        // Mostly a URI shaped like the template (each expression's lead, then
        // random pieces), sometimes random pieces alone.
        let uri = if draw.below(4) == 0 {
            draw.join(PIECES, 12)
        } else {
            let mut uri = String::new();
            for part in &chosen {
                let lead = match part.as_bytes() {
                    [b'{', b'#', ..] => "#",
                    [b'{', b'.', ..] => ".",
                    [b'{', b'/', ..] => "/",
                    [b'{', b';', ..] => ";v=",
                    [b'{', b'?', ..] => "?q=",
                    [b'{', b'&', ..] => "&r=",
                    [b'{', ..] => "",
                    _ => part,
                };
                if draw.below(8) != 0 {
                    uri.push_str(lead);
                }
                if part.starts_with('{') {
                    uri.push_str(&draw.join(PIECES, 3));
                }
            }
            uri
        };
        let expected = reference::match_uri(&t, &uri);
        matched += usize::from(expected.is_some());
        assert_eq!(
            t.match_uri(&uri),
            expected,
            "case {case}: {template:?} against {uri:?}"
        );
        // A template whose ends are forced takes the one-pass path above: the plan
        // must agree on it too.
        if t.forced {
            forced += 1;
            forced_matched += usize::from(expected.is_some());
            assert_eq!(
                t.match_planned(&uri),
                expected,
                "case {case} (planned): {template:?} against {uri:?}"
            );
        }
    }
    assert!(matched > 2_500, "the cases exercise matches too: {matched}");
    assert!(
        forced > 2_500 && forced_matched > 500,
        "the cases exercise forced ends too: {forced}, {forced_matched} matching"
    );
}

/// Adjacent expressions against URIs at the cap: each match finishes (within a
/// bounded wait, on its own thread) with the values the RFC reading gives — the
/// longest first for positional values, the shortest for query parts.
#[test]
fn adjacent_expressions_at_the_cap_match_correctly() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let n = MAX_MATCHED_URI - 16;
        let ys = "y".repeat(n);
        let check =
            |template: &str, uri: String| UriTemplate::parse(template).unwrap().match_uri(&uri);
        let three = check("m://{a}{b}{c}/x", format!("m://{ys}/x")).expect("a match");
        assert_eq!(three["a"].len(), n - 2);
        assert_eq!((three["b"].as_str(), three["c"].as_str()), ("y", "y"));
        assert_eq!(check("m://{a}{b}{c}/x", format!("m://{ys}/nope")), None);
        assert_eq!(check("m://{a}{b}x", format!("m://{ys}")), None);
        // A comma makes every candidate for `{a}` unreadable but the last ones.
        let comma = check("m://{a}{b}", format!("m://,{ys}"));
        assert_eq!(comma, None);
        let split = check("m://{a},{b}", format!("m://{ys},z")).expect("a match");
        assert_eq!((split["a"].len(), split["b"].as_str()), (n, "z"));
        // Percent escapes all along, and one that does not decode at the very end.
        let escaped = "%C3%A9".repeat(n / 6);
        let e = check("m://{a}{b}", format!("m://{escaped}")).expect("a match");
        assert_eq!((e["a"].chars().count(), e["b"].as_str()), (n / 6 - 1, "é"));
        assert_eq!(check("m://{a}{b}", format!("m://{escaped}%C3")), None);
        let q = check("m://x{?a}{&b}", format!("m://x?a={ys}&b=1")).expect("a match");
        assert_eq!((q["a"].len(), q["b"].as_str()), (n, "1"));
        let lone = check("m://x{?a}{&b}{c}", format!("m://x?a={ys}")).expect("a match");
        assert_eq!(lone.get("a").map(String::len), None, "{{c}} takes it all");
        let _ = tx.send(());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .expect("matching finished");
}
