//! The Agent Skills rules a `SKILL.md` frontmatter must satisfy: the naming rules,
//! a name equal to the skill's directory, a description, and the optional fields'
//! shapes.

use super::{Node, parse};

/// The maximum length of a skill's `description` (Agent Skills).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The maximum length of a skill's `name` (Agent Skills).
pub const MAX_NAME_CHARS: usize = 64;
/// The maximum length of a skill's `compatibility` (Agent Skills).
const MAX_COMPATIBILITY_CHARS: usize = 500;
/// Keys of frontmatter `metadata` under this prefix are reserved for MCP extensions.
pub(crate) const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";

/// Checks a skill name against the Agent Skills naming rules: 1–64 characters of
/// lowercase letters, digits and hyphens, neither starting nor ending with a hyphen,
/// with no two hyphens in a row. The error says which rule the name breaks.
///
/// ```
/// use modelctx_skills::check_skill_name;
///
/// assert!(check_skill_name("pdf-processing").is_ok());
/// assert!(check_skill_name("pdf--processing").is_err());
/// assert!(check_skill_name("PDF").is_err());
/// ```
pub fn check_skill_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a skill name must not be empty".to_owned());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "a skill name has at most {MAX_NAME_CHARS} characters ({:?} has {})",
            name,
            name.chars().count()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "a skill name holds only lowercase letters, digits and hyphens ({name:?} has {c:?})"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(format!(
            "a skill name does not start or end with a hyphen ({name:?})"
        ));
    }
    if name.contains("--") {
        return Err(format!(
            "a skill name has no consecutive hyphens ({name:?})"
        ));
    }
    Ok(())
}

/// A frontmatter checked against the Agent Skills rules for a skill whose directory
/// (the final segment of its skill path) is `directory`.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub(crate) node: Node,
    pub(crate) name: String,
    pub(crate) description: String,
}

/// Parses and checks a `SKILL.md`'s frontmatter; the error names the rule broken.
pub(crate) fn check(markdown: &str, directory: &str) -> Result<Checked, String> {
    let node = parse(markdown).map_err(|e| format!("unreadable frontmatter: {e}"))?;
    let name = match node.get("name") {
        Some(Node::String(name)) => name.clone(),
        Some(_) => return Err("the frontmatter `name` must be a string".to_owned()),
        None => return Err("the frontmatter has no `name` (required)".to_owned()),
    };
    check_skill_name(&name)
        .map_err(|rule| format!("the frontmatter `name` breaks a rule: {rule}"))?;
    if name != directory {
        return Err(format!(
            "the frontmatter `name` {name:?} does not match the skill's directory {directory:?}"
        ));
    }
    let description = match node.get("description") {
        Some(Node::String(d)) if !d.trim().is_empty() => d.clone(),
        Some(Node::String(_)) => {
            return Err("the frontmatter `description` must not be empty".to_owned());
        }
        Some(_) => return Err("the frontmatter `description` must be a string".to_owned()),
        None => return Err("the frontmatter has no `description` (required)".to_owned()),
    };
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "the frontmatter `description` has more than {MAX_DESCRIPTION_CHARS} characters"
        ));
    }
    if let Some(compat) = node.get("compatibility") {
        match compat {
            Node::String(c) if c.chars().count() <= MAX_COMPATIBILITY_CHARS => {}
            Node::String(_) => {
                return Err(format!(
                    "the frontmatter `compatibility` has more than {MAX_COMPATIBILITY_CHARS} characters"
                ));
            }
            _ => return Err("the frontmatter `compatibility` must be a string".to_owned()),
        }
    }
    if let Some(metadata) = node.get("metadata") {
        let Node::Map(entries) = metadata else {
            return Err("the frontmatter `metadata` must be a mapping".to_owned());
        };
        if let Some((key, _)) = entries
            .iter()
            .find(|(k, _)| k.starts_with(RESERVED_METADATA_PREFIX))
        {
            return Err(format!(
                "the frontmatter `metadata` key {key:?} is under the prefix \
                 {RESERVED_METADATA_PREFIX:?}, reserved for MCP extensions"
            ));
        }
    }
    Ok(Checked {
        node,
        name,
        description,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_naming_rules_of_agent_skills() {
        for good in ["pdf-processing", "data-analysis", "code-review", "a", "a1"] {
            assert!(check_skill_name(good).is_ok(), "{good}");
        }
        for (bad, rule) in [
            ("pdf--processing", "consecutive"),
            ("-pdf", "start or end"),
            ("pdf-", "start or end"),
            (&"a".repeat(65), "at most 64"),
            ("PDF", "lowercase"),
            ("", "empty"),
            ("pdf_processing", "lowercase"),
        ] {
            let err = check_skill_name(bad).unwrap_err();
            assert!(err.contains(rule), "{bad}: {err}");
        }
    }

    #[test]
    fn checks_name_description_and_directory() {
        let ok = check(
            "---\nname: refunds\ndescription: Refund requests\n---\n",
            "refunds",
        )
        .unwrap();
        assert_eq!(
            (ok.name.as_str(), ok.description.as_str()),
            ("refunds", "Refund requests")
        );
        for (text, dir, needle) in [
            ("---\ndescription: d\n---\n", "x", "no `name`"),
            ("---\nname: x\n---\n", "x", "no `description`"),
            (
                "---\nname: x\ndescription: \"\"\n---\n",
                "x",
                "must not be empty",
            ),
            ("---\nname: Bad\ndescription: d\n---\n", "Bad", "lowercase"),
            ("---\nname: x\ndescription: d\n---\n", "y", "does not match"),
            (
                "---\nname: x\ndescription: [d]\n---\n",
                "x",
                "must be a string",
            ),
            (
                "---\nname: x\ndescription: d\nmetadata: 1\n---\n",
                "x",
                "mapping",
            ),
            (
                "---\nname: x\ndescription: d\nmetadata:\n  io.modelcontextprotocol/k: v\n---\n",
                "x",
                "reserved",
            ),
        ] {
            let err = check(text, dir).unwrap_err();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
