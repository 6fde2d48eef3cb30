//! Skill URIs and the local paths they map to (`modelctx_skills::materialized_path`,
//! `Skill::file_uri`).
//!
//! Input: a server label on the first line, a skill path on the second, a file path on
//! the third, a URI on the rest. The oracle:
//!
//! - a mapped path is below the target: every component after it is one plain name
//!   (never `..`, `.`, a root or a prefix), holding no `/`, `\` or NUL; the label is
//!   one component that decodes back to the label; the rest are the URI's segments
//!   decoded, one each;
//! - a URI with a segment that is empty, `.` or `..`, or decodes to a `/`, `\`, `%` or
//!   control character (NUL among them), or that is not `scheme://path`, is refused —
//!   judged here by a plain reading of the URI, not the SDK's;
//! - the mapping is deterministic;
//! - a file path the server accepts gives a `skill://` URI that maps back to exactly
//!   the skill path's and the file path's segments; one with a `..`, `.` or empty
//!   segment, a `\`, `%` or control character, or a leading `/` is refused.

use std::path::{Component, Path, PathBuf};

use modelctx_skills::{MAX_PATH_DEPTH, Skill, SkillsErrorKind, materialized_path};

const TARGET: &str = "/fuzz-target/skills";

/// Percent-decodes `text`; `None` when an escape is malformed or the bytes are not
/// UTF-8.
fn decode(text: &str) -> Option<String> {
    // Each `%` starts a piece whose first two characters are the escape's hex digits.
    let mut pieces = text.split('%');
    let mut out = pieces.next().unwrap_or_default().as_bytes().to_vec();
    for piece in pieces {
        let hex = piece.get(..2)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        out.push(u8::from_str_radix(hex, 16).ok()?);
        out.extend_from_slice(piece[2..].as_bytes());
    }
    String::from_utf8(out).ok()
}

/// Whether a decoded segment could name anything but one entry of one directory.
fn unsafe_name(name: &str) -> bool {
    name.is_empty()
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == '\\' || c == '%' || c.is_control())
}

/// Whether a plain reading of `uri` says it must be refused.
fn must_refuse(uri: &str) -> bool {
    let Some((_scheme, rest)) = uri.split_once("://") else {
        return true;
    };
    if rest.contains(['?', '#']) {
        return true;
    }
    let raw: Vec<&str> = rest.split('/').collect();
    raw.len() > MAX_PATH_DEPTH
        || raw
            .iter()
            .any(|segment| decode(segment).is_none_or(|name| unsafe_name(&name)))
}

/// The checks on one mapped path: below the target, plain names only, the label first
/// and decoding back to itself.
fn check_mapped(target: &Path, label: &str, uri: &str, path: &Path) -> Vec<String> {
    let below = path
        .strip_prefix(target)
        .unwrap_or_else(|_| panic!("{uri:?} mapped outside the target: {path:?}"));
    let names: Vec<String> = below
        .components()
        .map(|c| match c {
            Component::Normal(name) => {
                let name = name.to_str().expect("a mapped name is UTF-8");
                assert!(
                    !name.contains(['/', '\\', '\0']),
                    "{uri:?}: component {name:?} of {path:?}"
                );
                name.to_owned()
            }
            other => panic!("{uri:?} mapped to {path:?}, with the component {other:?}"),
        })
        .collect();
    assert!(
        names.len() >= 3,
        "{uri:?}: {path:?} lacks label, scheme or segment"
    );
    assert!(
        names.len() <= 2 + MAX_PATH_DEPTH,
        "{uri:?}: {path:?} too deep"
    );
    if !label.is_empty() {
        assert_eq!(
            decode(&names[0]).as_deref(),
            Some(label),
            "the label's component decodes back to it"
        );
    }
    names
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(4, '\n');
    let label = lines.next().unwrap_or_default();
    let skill_path = lines.next().unwrap_or_default();
    let file_path = lines.next().unwrap_or_default();
    let uri = lines.next().unwrap_or_default();
    let target = PathBuf::from(TARGET);

    // Any URI.
    let mapped = materialized_path(&target, label, uri);
    assert_eq!(
        mapped.as_ref().ok(),
        materialized_path(&target, label, uri).as_ref().ok(),
        "the mapping is deterministic"
    );
    match &mapped {
        Ok(path) => {
            assert!(
                !must_refuse(uri),
                "{uri:?} must be refused, mapped to {path:?}"
            );
            let names = check_mapped(&target, label, uri, path);
            let (scheme, rest) = uri.split_once("://").expect("a mapped URI has a scheme");
            assert_eq!(names[1], scheme.to_ascii_lowercase());
            let decoded: Vec<String> = rest.split('/').map(|s| decode(s).unwrap()).collect();
            assert_eq!(names[2..], decoded[..], "{uri:?}: one name per segment");
        }
        Err(e) => assert_eq!(e.kind(), SkillsErrorKind::UnsafePath, "{uri:?}: {e}"),
    }

    // A file the server would serve: its URI maps back to its own segments.
    match Skill::file_uri(skill_path, file_path) {
        Ok(file_uri) => {
            assert!(
                file_uri.starts_with(&format!("skill://{skill_path}/")),
                "{file_uri:?}"
            );
            assert_eq!(
                Skill::file_uri(skill_path, file_path).ok().as_ref(),
                Some(&file_uri),
                "the URI is deterministic"
            );
            let path = materialized_path(&target, label, &file_uri)
                .unwrap_or_else(|e| panic!("a served URI {file_uri:?} does not map: {e}"));
            let names = check_mapped(&target, label, &file_uri, &path);
            let expected: Vec<&str> = skill_path.split('/').chain(file_path.split('/')).collect();
            assert_eq!(names[1], "skill");
            assert_eq!(names[2..], expected[..], "{file_uri:?} round-trips");
        }
        Err(_) => {}
    }
    let bad_file = file_path.starts_with('/')
        || file_path.split('/').any(unsafe_name)
        || file_path.split('/').count() + skill_path.split('/').count() > MAX_PATH_DEPTH;
    let bad_skill = skill_path.split('/').any(|s| {
        s.is_empty()
            || s == "."
            || s == ".."
            || s.chars()
                .any(|c| !(c.is_ascii_alphanumeric() || "-._~".contains(c)))
    });
    if bad_file || bad_skill {
        assert!(
            Skill::file_uri(skill_path, file_path).is_err(),
            "{skill_path:?} / {file_path:?} must be refused"
        );
    }
}
