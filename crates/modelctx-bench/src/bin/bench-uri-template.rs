//! Times `UriTemplate::match_uri` on the shapes resource templates take, short URIs
//! and long ones, and prints one line per case: the template, the URI's length, whether
//! it matched, and the median and spread of the time per match over the rounds.
//!
//! ```text
//! cargo run --release -p modelctx-bench --bin bench-uri-template [-- --matches N --rounds R]
//! ```
//!
//! A measurement, not a test: nothing is asserted about the times. Run it in release
//! (the debug build times the standard library's debug assertions as much as the
//! matcher). Figures: `crates/modelctx-bench/BENCHMARKS.md`.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use modelctx::server::UriTemplate;

fn main() -> ExitCode {
    let mut matches = 10_000usize;
    let mut rounds = 7usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok());
        match (arg.as_str(), value) {
            ("--matches", Some(n)) if n > 0 => matches = n,
            ("--rounds", Some(n)) if n > 0 => rounds = n,
            _ => {
                eprintln!("usage: bench-uri-template [--matches N] [--rounds R]");
                return ExitCode::FAILURE;
            }
        }
    }
    let long = "y".repeat(4096);
    let cases: Vec<(&str, String)> = vec![
        ("users://{id}/profile", "users://12345/profile".into()),
        ("users://{id}/profile", "users://12345/settings".into()),
        ("file:///{+path}", "file:///home/user/notes/today.md".into()),
        (
            "repo://{owner}/{repo}/issues/{n}",
            "repo://octo/modelctx/issues/42".into(),
        ),
        (
            "search://items{?q,limit}",
            "search://items?q=rust&limit=10".into(),
        ),
        (
            "docs://{lang}/{+page}",
            "docs://en/guide/resources%20and%20templates".into(),
        ),
        ("m://{a}{b}", "m://ab".into()),
        ("m://{a}{b}x", format!("m://{long}")),
        ("file:///{+path}", format!("file:///{long}")),
        ("users://{id}/profile", format!("users://{long}/profile")),
    ];
    println!(
        "| template | URI bytes | match | ns per match (median of {rounds} × {matches}) | min–max |"
    );
    println!("|---|---|---|---|---|");
    for (template, uri) in &cases {
        let t = UriTemplate::parse(template).expect("a valid template");
        let matched = t.match_uri(uri).is_some();
        // Long URIs cost more per match: fewer of them, the same per-match figure.
        let n = if uri.len() > 256 {
            matches / 100
        } else {
            matches
        }
        .max(1);
        let mut per_match: Vec<f64> = (0..rounds)
            .map(|_| {
                let started = Instant::now();
                for _ in 0..n {
                    black_box(black_box(&t).match_uri(black_box(uri)));
                }
                started.elapsed().as_nanos() as f64 / n as f64
            })
            .collect();
        per_match.sort_by(f64::total_cmp);
        let median = per_match[per_match.len() / 2];
        println!(
            "| `{template}` | {} | {} | {median:.0} | {:.0}–{:.0} |",
            uri.len(),
            if matched { "yes" } else { "no" },
            per_match[0],
            per_match[per_match.len() - 1],
        );
    }
    ExitCode::SUCCESS
}
