//! Skill paths, file paths and `skill://` URIs, and the mapping of a skill URI to a
//! local path. Every path segment is checked on the way in (registration) and on the
//! way out (materialising): no `.` or `..`, no empty segment, no separator hidden in a
//! segment (`\`, a percent-encoded `/` or `\`), no control character, no absolute
//! path or drive letter. A segment that passes names exactly one entry of the
//! directory it is in.

use std::path::{Path, PathBuf};

/// The scheme skills are served under.
pub const SKILL_SCHEME: &str = "skill";
/// The file at the root of every skill.
pub const SKILL_MD: &str = "SKILL.md";
/// The deepest a skill file may sit: segments of its skill path and of its file path
/// together. The SEP sets no depth; this bound keeps a hostile listing or directory
/// from costing unbounded work.
pub const MAX_PATH_DEPTH: usize = 32;

/// Characters a URI path segment carries as they are (RFC 3986 `pchar` without `%`).
fn is_pchar(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '-' | '.'
                | '_'
                | '~'
                | '!'
                | '$'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | '+'
                | ','
                | ';'
                | '='
                | ':'
                | '@'
        )
}

/// Checks one segment of a skill path: unreserved characters only (`A-Z a-z 0-9 - . _
/// ~`), so that the first segment is a valid RFC 3986 `reg-name` and no segment needs
/// encoding.
pub(crate) fn check_skill_segment(segment: &str) -> Result<(), String> {
    if segment.is_empty() {
        return Err("a skill path has no empty segment".to_owned());
    }
    if segment == "." || segment == ".." {
        return Err(format!("a skill path has no {segment:?} segment"));
    }
    if let Some(c) = segment
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')))
    {
        return Err(format!(
            "a skill path segment holds only A-Z a-z 0-9 - . _ ~ ({segment:?} has {c:?})"
        ));
    }
    Ok(())
}

/// Checks one segment of a file path inside a skill.
pub(crate) fn check_file_segment(segment: &str) -> Result<(), String> {
    if segment.is_empty() {
        return Err(
            "a file path has no empty segment (no leading, trailing or doubled `/`)".to_owned(),
        );
    }
    if segment == "." || segment == ".." {
        return Err(format!("a file path has no {segment:?} segment"));
    }
    if let Some(c) = segment
        .chars()
        .find(|c| c.is_control() || matches!(c, '\\' | '%'))
    {
        return Err(format!(
            "a file path segment holds no control character, `\\` or `%` ({segment:?} has {c:?})"
        ));
    }
    Ok(())
}

/// The segments of a skill path, checked (`acme/billing/refunds`).
pub(crate) fn skill_segments(path: &str) -> Result<Vec<&str>, String> {
    if path.starts_with('/') {
        return Err(format!(
            "a skill path is relative ({path:?} starts with `/`)"
        ));
    }
    let segments: Vec<&str> = path.split('/').collect();
    for s in &segments {
        check_skill_segment(s)?;
    }
    Ok(segments)
}

/// The segments of a file path inside a skill, checked (`references/FORMS.md`).
pub(crate) fn file_segments(path: &str) -> Result<Vec<&str>, String> {
    if path.starts_with('/') || path.starts_with('\\') {
        return Err(format!(
            "a file path is relative to its skill ({path:?} is absolute)"
        ));
    }
    if path.len() >= 2 && path.as_bytes()[1] == b':' && path.as_bytes()[0].is_ascii_alphabetic() {
        return Err(format!("a file path has no drive letter ({path:?})"));
    }
    let segments: Vec<&str> = path.split('/').collect();
    for s in &segments {
        check_file_segment(s)?;
    }
    Ok(segments)
}

/// A segment percent-encoded for a URI path.
pub(crate) fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for c in segment.chars() {
        if is_pchar(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A percent-decoded URI segment, refused when the decoding does not name one entry
/// of one directory: a decoded `/`, `\` or control character, `.` or `..`, or bytes
/// that are not UTF-8.
pub(crate) fn decode_segment(segment: &str) -> Result<String, String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .filter(|_| bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit())
                .ok_or_else(|| format!("a malformed percent-encoding in {segment:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let decoded =
        String::from_utf8(out).map_err(|_| format!("{segment:?} does not decode to UTF-8"))?;
    if decoded.contains('/') {
        return Err(format!("{segment:?} hides a `/` in a segment"));
    }
    check_file_segment(&decoded).map_err(|e| format!("{segment:?}: {e}"))?;
    Ok(decoded)
}

/// The URI of a file of a skill: `skill://<skill-path>/<file-path>`, each file segment
/// percent-encoded.
pub(crate) fn file_uri(skill_path: &str, file_segments: &[&str]) -> String {
    let mut uri = format!("{SKILL_SCHEME}://{skill_path}");
    for s in file_segments {
        uri.push('/');
        uri.push_str(&encode_segment(s));
    }
    uri
}

/// A URI taken apart: its scheme and its decoded path segments (authority first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitUri {
    pub(crate) scheme: String,
    pub(crate) segments: Vec<String>,
}

/// Splits `scheme://a/b/c` into its scheme and decoded segments, refusing anything
/// that is not a plain hierarchical path: a query or fragment, userinfo or a port, an
/// empty, `.` or `..` segment, an encoded separator, more than [`MAX_PATH_DEPTH`]
/// segments.
pub(crate) fn split_uri(uri: &str) -> Result<SplitUri, String> {
    let (scheme, rest) = uri
        .split_once("://")
        .ok_or_else(|| format!("{uri:?} is not a `scheme://path` URI"))?;
    if scheme.is_empty()
        || !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Err(format!("{uri:?} has an invalid scheme"));
    }
    if rest.contains(['?', '#']) {
        return Err(format!("{uri:?} has a query or fragment"));
    }
    let raw: Vec<&str> = rest.split('/').collect();
    if raw[0].contains(['@', ':']) {
        return Err(format!("{uri:?} has userinfo or a port"));
    }
    if raw.len() > MAX_PATH_DEPTH {
        return Err(format!("{uri:?} is deeper than {MAX_PATH_DEPTH} segments"));
    }
    let segments = raw
        .iter()
        .map(|s| decode_segment(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{uri:?}: {e}"))?;
    Ok(SplitUri {
        scheme: scheme.to_ascii_lowercase(),
        segments,
    })
}

/// The root URI of the skill whose `SKILL.md` is at `uri` (the `/SKILL.md` removed).
pub(crate) fn skill_root(uri: &str) -> Option<&str> {
    uri.strip_suffix(SKILL_MD)?.strip_suffix('/')
}

/// A host-assigned server label as one path segment: every byte outside `A-Z a-z 0-9
/// - _` percent-encoded (dots too, so no label becomes `.` or `..`).
pub(crate) fn label_segment(label: &str) -> String {
    let mut out = String::new();
    for b in label.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push_str("%00");
    }
    out
}

/// Where a file at `uri` of a server labelled `label` lands under `target`:
/// `target/<label>/<scheme>/<segments...>`. Refused when a segment would not name one
/// entry below `target` (see [`split_uri`]); on Windows, drive-relative and reserved
/// characters are refused too.
pub(crate) fn local_path(target: &Path, label: &str, uri: &str) -> Result<PathBuf, String> {
    let split = split_uri(uri)?;
    let mut path = target.join(label_segment(label)).join(&split.scheme);
    for segment in &split.segments {
        if segment.contains([':', '<', '>', '"', '|', '?', '*']) && cfg!(windows) {
            return Err(format!(
                "{uri:?}: {segment:?} is not a file name on this system"
            ));
        }
        let component = Path::new(segment);
        // One normal component, nothing else.
        let mut components = component.components();
        match (components.next(), components.next()) {
            (Some(std::path::Component::Normal(_)), None) => {}
            _ => return Err(format!("{uri:?}: {segment:?} is not a single file name")),
        }
        path.push(component);
    }
    if !path.starts_with(target) {
        return Err(format!("{uri:?} would land outside {}", target.display()));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_paths_are_plain_segments() {
        assert_eq!(skill_segments("acme/billing/refunds").unwrap().len(), 3);
        for bad in [
            "", "/abs", "a//b", "a/../b", "a/./b", "..", "a/b%2Fc", "a\\b", "a b", "a/",
        ] {
            assert!(skill_segments(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_paths_never_leave_their_skill() {
        assert!(file_segments("references/FORMS.md").is_ok());
        assert!(file_segments("templates/a file.md").is_ok());
        for bad in [
            "../secret",
            "a/../../b",
            "/etc/passwd",
            "\\windows",
            "C:/x",
            "c:x",
            "a//b",
            "a/",
            "./a",
            "a%2Fb",
            "a%2e%2e",
            "a\\..\\b",
            "nul\0byte",
            "line\nbreak",
        ] {
            assert!(file_segments(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn uris_encode_what_a_path_segment_cannot_carry() {
        assert_eq!(
            file_uri("pdf", &["templates", "a file?#.md"]),
            "skill://pdf/templates/a%20file%3F%23.md"
        );
        let split = split_uri("skill://pdf/templates/a%20file%3F%23.md").unwrap();
        assert_eq!(split.segments, ["pdf", "templates", "a file?#.md"]);
    }

    #[test]
    fn decoding_refuses_hidden_separators_and_dot_segments() {
        for bad in [
            "skill://a/%2e%2e/b",
            "skill://a/%2E%2E",
            "skill://a/%2e",
            "skill://a/b%2Fc",
            "skill://a/b%2fc",
            "skill://a/b%5Cc",
            "skill://a/b%00",
            "skill://a/%ff",
            "skill://a/b%2",
            "skill://a/b%zz",
            "skill://a//b",
            "skill://a/../b",
            "skill://a/b?x=1",
            "skill://a/b#f",
            "skill://user@a/b",
            "skill://a:80/b",
            "no-scheme/a",
            "1x://a/b",
        ] {
            assert!(split_uri(bad).is_err(), "{bad:?}");
        }
        let deep = format!("skill://{}", vec!["a"; MAX_PATH_DEPTH + 1].join("/"));
        assert!(split_uri(&deep).is_err());
    }

    #[test]
    fn local_paths_stay_below_the_target_and_name_the_server() {
        let target = Path::new("/tmp/skills-target");
        let p = local_path(target, "github", "skill://acme/refunds/SKILL.md").unwrap();
        assert_eq!(p, target.join("github/skill/acme/refunds/SKILL.md"));
        // Two servers' same URI land apart, and the label cannot climb out.
        let q = local_path(target, "other", "skill://acme/refunds/SKILL.md").unwrap();
        assert_ne!(p, q);
        assert_eq!(
            local_path(target, "..", "skill://a/SKILL.md").unwrap(),
            target.join("%2E%2E/skill/a/SKILL.md")
        );
        assert_eq!(
            local_path(target, "a/b", "skill://a/SKILL.md").unwrap(),
            target.join("a%2Fb/skill/a/SKILL.md")
        );
        for bad in [
            "skill://a/../../etc/passwd",
            "skill://a/%2e%2e/%2e%2e/x",
            "skill://a/b%2F..%2F..%2Fx",
            "skill:///etc/passwd",
            "skill://a/b%5C..%5Cx",
        ] {
            assert!(local_path(target, "s", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn labels_are_one_segment() {
        assert_eq!(label_segment("my.server"), "my%2Eserver");
        assert_eq!(label_segment(""), "%00");
        assert!(!label_segment("../..").contains('/'));
    }

    #[test]
    fn the_skill_root_is_the_uri_without_skill_md() {
        assert_eq!(skill_root("skill://a/b/SKILL.md"), Some("skill://a/b"));
        assert_eq!(skill_root("skill://a/b/NOT.md"), None);
    }
}
