//! Human output. Everything is rendered from the results' JSON, so a member this
//! client does not know still shows up (as JSON) instead of vanishing.

use std::fmt::Write as _;

use serde_json::Value;

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `name(a: string, b?: integer)`.
fn signature(name: &str, schema: Option<&Value>) -> String {
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<String> = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(key, prop)| {
                    let ty = match prop.get("type") {
                        Some(Value::String(t)) => t.clone(),
                        Some(Value::Array(ts)) => ts
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("|"),
                        _ => "any".to_owned(),
                    };
                    let opt = if required.contains(&key.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{key}{opt}: {ty}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{name}({})", params.join(", "))
}

fn line(out: &mut String, head: &str, about: Option<&str>) {
    match about.map(str::trim).filter(|a| !a.is_empty()) {
        Some(about) => {
            let first = about.lines().next().unwrap_or(about);
            let _ = writeln!(out, "  {head}\n      {first}");
        }
        None => {
            let _ = writeln!(out, "  {head}");
        }
    }
}

/// The `list` output: a header naming the server, then one section per kind asked.
pub(crate) fn list(listing: &Value) -> String {
    let mut out = String::new();
    if let Some(info) = listing.get("serverInfo") {
        let _ = writeln!(
            out,
            "{} {} (protocol {})",
            str_of(info, "name").unwrap_or("?"),
            str_of(info, "version").unwrap_or("?"),
            str_of(listing, "protocolVersion").unwrap_or("?"),
        );
    }
    if let Some(tools) = listing.get("tools").and_then(Value::as_array) {
        let _ = writeln!(out, "\nTools ({}):", tools.len());
        for tool in tools {
            let name = str_of(tool, "name").unwrap_or("?");
            line(
                &mut out,
                &signature(name, tool.get("inputSchema")),
                str_of(tool, "description"),
            );
        }
    }
    let resources = listing.get("resources").and_then(Value::as_array);
    let templates = listing.get("resourceTemplates").and_then(Value::as_array);
    if resources.is_some() || templates.is_some() {
        let count = resources.map_or(0, Vec::len) + templates.map_or(0, Vec::len);
        let _ = writeln!(out, "\nResources ({count}):");
        for r in resources.into_iter().flatten() {
            let mut head = format!(
                "{}  {}",
                str_of(r, "uri").unwrap_or("?"),
                str_of(r, "name").unwrap_or("")
            );
            if let Some(mime) = str_of(r, "mimeType") {
                let _ = write!(head, " [{mime}]");
            }
            line(&mut out, &head, str_of(r, "description"));
        }
        for t in templates.into_iter().flatten() {
            let head = format!(
                "{}  {} (template)",
                str_of(t, "uriTemplate").unwrap_or("?"),
                str_of(t, "name").unwrap_or("")
            );
            line(&mut out, &head, str_of(t, "description"));
        }
    }
    if let Some(prompts) = listing.get("prompts").and_then(Value::as_array) {
        let _ = writeln!(out, "\nPrompts ({}):", prompts.len());
        for p in prompts {
            let args: Vec<String> = p
                .get("arguments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| {
                    let name = str_of(a, "name").unwrap_or("?");
                    if a.get("required") == Some(&Value::Bool(true)) {
                        name.to_owned()
                    } else {
                        format!("{name}?")
                    }
                })
                .collect();
            let head = format!("{}({})", str_of(p, "name").unwrap_or("?"), args.join(", "));
            line(&mut out, &head, str_of(p, "description"));
        }
    }
    out
}

fn approx_bytes(base64: &str) -> usize {
    base64.len() / 4 * 3
}

/// One content block of a tool result or prompt message.
fn content(out: &mut String, block: &Value) {
    match str_of(block, "type") {
        Some("text") => {
            let text = str_of(block, "text").unwrap_or("");
            out.push_str(text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
        Some(kind @ ("image" | "audio")) => {
            let _ = writeln!(
                out,
                "[{kind} {}, about {} bytes]",
                str_of(block, "mimeType").unwrap_or("?"),
                approx_bytes(str_of(block, "data").unwrap_or(""))
            );
        }
        Some("resource_link") => {
            let _ = writeln!(
                out,
                "[link {} {}]",
                str_of(block, "uri").unwrap_or("?"),
                str_of(block, "name").unwrap_or("")
            );
        }
        Some("resource") => {
            if let Some(resource) = block.get("resource") {
                contents(out, resource);
            }
        }
        _ => {
            let _ = writeln!(out, "{}", pretty(block));
        }
    }
}

/// One entry of a `resources/read` result (or an embedded resource).
fn contents(out: &mut String, c: &Value) {
    if let Some(text) = str_of(c, "text") {
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    } else if let Some(blob) = str_of(c, "blob") {
        let _ = writeln!(
            out,
            "[blob {} {}, about {} bytes; --json shows it]",
            str_of(c, "uri").unwrap_or("?"),
            str_of(c, "mimeType").unwrap_or("?"),
            approx_bytes(blob)
        );
    } else {
        let _ = writeln!(out, "{}", pretty(c));
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// A `tools/call` result: its content, or its structured content when it has no
/// content.
pub(crate) fn call(result: &Value) -> String {
    let mut out = String::new();
    let blocks = result.get("content").and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        content(&mut out, block);
    }
    if blocks.is_none_or(Vec::is_empty)
        && let Some(structured) = result.get("structuredContent")
    {
        let _ = writeln!(out, "{}", pretty(structured));
    }
    out
}

/// A `resources/read` result.
pub(crate) fn read(result: &Value) -> String {
    let mut out = String::new();
    for c in result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        contents(&mut out, c);
    }
    out
}

/// A `prompts/get` result: its description, then each message with its role.
pub(crate) fn prompt(result: &Value) -> String {
    let mut out = String::new();
    if let Some(description) = str_of(result, "description") {
        let _ = writeln!(out, "{description}\n");
    }
    for message in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let _ = write!(out, "{}: ", str_of(message, "role").unwrap_or("?"));
        match message.get("content") {
            Some(block) => content(&mut out, block),
            None => out.push('\n'),
        }
    }
    out
}
