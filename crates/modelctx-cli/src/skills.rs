//! `modelctx skills list|get|pull`: Skills over MCP (SEP-2640) through the verified
//! client of `modelctx::skills`; `pull` writes a skill whose every file matched its
//! entry's size and digest (and whose `SKILL.md` matched its frontmatter).

use modelctx::client::Client;
use modelctx::skills::{ClientSkillsExt, SkillEntry, SkillResources, SkillsError};
use serde_json::{Value, json};

use crate::args::{Cli, SkillsCommand, Target};
use crate::{Failure, print_result, to_json};

/// The label the host gives the server: the `--server` name, the URL's host and port,
/// or the stdio program's file name. It names the server's directory under `--to`.
pub(crate) fn label(target: &Target) -> String {
    match target {
        Target::Server { name, .. } => name.clone(),
        Target::Url(url) => {
            let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
            rest.split(['/', '?', '#'])
                .next()
                .unwrap_or(rest)
                .to_owned()
        }
        Target::Stdio { program, .. } => std::path::Path::new(program)
            .file_name()
            .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned()),
    }
}

fn failed(e: &SkillsError) -> Failure {
    match e.session_error() {
        Some(session) => Failure::session(e.uri().unwrap_or("skills"), session),
        None => Failure::failed(e.to_string()),
    }
}

pub(crate) async fn act(
    cli: &Cli,
    client: &Client,
    command: &SkillsCommand,
) -> Result<u8, Failure> {
    let skills = client.skills(label(&cli.target));
    match command {
        SkillsCommand::List => {
            let listing = skills.list().await.map_err(|e| failed(&e))?;
            for why in &listing.invalid {
                eprintln!("modelctx: a malformed skill entry was left out: {why}");
            }
            let value = json!({
                "skills": to_json(&listing.skills)?,
                "invalid": listing.invalid,
            });
            print_result(cli, &value, list_human)?;
        }
        SkillsCommand::Get { uri } => {
            let entry = skills.get(uri).await.map_err(|e| failed(&e))?;
            print_result(cli, &to_json(&entry)?, entry_human)?;
        }
        SkillsCommand::Pull { uri, to } => {
            let entry = skills.get(uri).await.map_err(|e| failed(&e))?;
            let dir = skills
                .materialize(&entry, to)
                .await
                .map_err(|e| failed(&e))?;
            let files = entry.totals().map_or(0, |(n, _)| n);
            let value = json!({
                "uri": entry.uri,
                "name": entry.name(),
                "path": dir.display().to_string(),
                "files": files,
            });
            print_result(cli, &value, pulled_human)?;
        }
    }
    Ok(0)
}

fn list_human(value: &Value) -> String {
    let skills = value["skills"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if skills.is_empty() {
        return "no skills listed (a server may still serve skills by URI)\n".to_owned();
    }
    let mut out = String::new();
    for skill in skills {
        let files = match &skill["resources"] {
            Value::Array(files) => format!("{} files", files.len()),
            _ => "dynamic".to_owned(),
        };
        out.push_str(&format!(
            "{}  {}  ({files})\n    {}\n",
            skill["frontmatter"]["name"].as_str().unwrap_or_default(),
            skill["uri"].as_str().unwrap_or_default(),
            skill["frontmatter"]["description"]
                .as_str()
                .unwrap_or_default(),
        ));
    }
    out
}

fn entry_human(value: &Value) -> String {
    let Ok(entry) = SkillEntry::from_value(value.clone()) else {
        return format!("{value}\n");
    };
    let mut out = format!(
        "{}  {}\n    {}\n",
        entry.name(),
        entry.uri,
        entry.description()
    );
    match &entry.resources {
        SkillResources::Files(files) => {
            for file in files {
                out.push_str(&format!(
                    "  {:>9}  {}  {}\n",
                    file.size, file.digest, file.uri
                ));
            }
        }
        _ => out.push_str("  files: dynamic (no digests)\n"),
    }
    out
}

fn pulled_human(value: &Value) -> String {
    format!(
        "pulled {} ({} files, verified) to {}\n",
        value["name"].as_str().unwrap_or_default(),
        value["files"],
        value["path"].as_str().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_names_the_server_as_the_host_knows_it() {
        let url = Target::Url("http://127.0.0.1:8080/mcp?x=1".into());
        assert_eq!(label(&url), "127.0.0.1:8080");
        let stdio = Target::Stdio {
            program: "/usr/bin/docs-server".into(),
            args: vec![],
        };
        assert_eq!(label(&stdio), "docs-server");
        let server = Target::Server {
            name: "docs".into(),
            config: "x.json".into(),
        };
        assert_eq!(label(&server), "docs");
    }
}
