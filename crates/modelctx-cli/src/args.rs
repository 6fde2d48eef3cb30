//! The command line, parsed by hand: the grammar is one command, its arguments, one
//! target and a handful of flags, which a derive-based parser would not make shorter,
//! and a hand-written one costs no compile time and no dependency.

use std::path::PathBuf;
use std::time::Duration;

use modelctx::pool::{ProtocolMode, parse_probe_timeout};
use serde_json::Value;

pub(crate) const USAGE: &str = "\
modelctx: a command-line client for MCP servers

Usage: modelctx [OPTIONS] <COMMAND> [ARGS...] <TARGET>

Commands:
  list [tools|resources|prompts]...   what the server offers (everything by default)
  call TOOL [KEY=VALUE | KEY:=JSON]...  call a tool
  read URI                            read a resource
  prompt NAME [KEY=VALUE]...          get a prompt
  skills list                         the skills the server lists (SEP-2640)
  skills get SKILL_URI                a skill's entry: frontmatter, files, digests
  skills pull SKILL_URI [--to DIR]    write a skill, every file verified against its
                                      entry, to DIR/<server>/<scheme>/<skill-path>/
                                      (DIR defaults to the current directory)

Target (exactly one):
  http://... | https://...            a server at this URL (streamable HTTP, falling
                                      back to the legacy HTTP+SSE transport)
  --server NAME [--config FILE]       an entry of an mcpServers JSON file
  -- COMMAND [ARGS...]                a stdio server run as a child process (last)

Tool arguments:
  KEY=VALUE   VALUE is read as JSON when it is JSON (42, true, null, [1], {\"a\": 1}),
              else taken as a string; where the tool's input schema says the property
              is a string, VALUE is always the string as written
  KEY:=JSON   JSON, always (a usage error if it is not)
  Prompt arguments are strings, taken as written.

Options:
  --json                 print the result as JSON (the server's result as it came)
  --config FILE          the mcpServers file for --server (default: $MODELCTX_CONFIG)
  -H, --header 'N: V'    add an HTTP header to every request (repeatable)
  --mode MODE            how the protocol era is settled: auto (default: probe with
                         server/discover, 2026-07-28 when the server offers it, else
                         the initialize handshake), discover (2026-07-28 only, probed),
                         handshake (the handshake only), or a revision to pin: 2026-07-28
                         (no probe: for a server, or a proxy, known to speak it) or
                         2025-11-25, 2025-06-18, ... (the handshake offering it)
  --probe-timeout WAIT   how long auto mode gives a server that has not answered the
                         probe before it sends initialize too (default 10s; the probe
                         still counts when it answers later): seconds (10, 2.5, 10s) or
                         milliseconds (500ms); not used over streamable HTTP
  --timeout SECS         per-request timeout (default 60)
  --no-login             never log in: a server that asks for OAuth fails
  --ca-cert FILE         also trust the CA certificate(s) of this PEM file for
                         https:// servers (default: $MODELCTX_CA_CERT); needs a build
                         with `--features rustls`
  --token-store FILE     keep the OAuth registration and tokens in FILE (a secret)
  -q, --quiet            no progress and no stderr from a stdio server
  -h, --help             this text
  -V, --version          the version

Progress of a long call and the login URL of an OAuth server go to stderr.

Exit status: 0 success, 1 the tool reported an error (isError), 2 usage error,
3 connection or protocol failure (including an error answer from the server).
";

/// What to do.
#[derive(Debug, PartialEq)]
pub(crate) enum Command {
    List(Vec<Section>),
    Call {
        tool: String,
        args: Vec<ToolArg>,
    },
    Read {
        uri: String,
    },
    Prompt {
        name: String,
        args: Vec<(String, String)>,
    },
    Skills(SkillsCommand),
}

/// A `skills` subcommand.
#[derive(Debug, PartialEq)]
pub(crate) enum SkillsCommand {
    List,
    Get { uri: String },
    Pull { uri: String, to: PathBuf },
}

/// A part of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Tools,
    Resources,
    Prompts,
}

/// A tool argument as given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolArg {
    /// `KEY=VALUE`: JSON when it parses, else the string; the schema may say string.
    Loose(String, String),
    /// `KEY:=JSON`.
    Json(String, Value),
}

/// The server to talk to.
#[derive(Debug)]
pub(crate) enum Target {
    Stdio { program: String, args: Vec<String> },
    Url(String),
    Server { name: String, config: PathBuf },
}

/// A parsed command line.
#[derive(Debug)]
pub(crate) struct Cli {
    pub(crate) command: Command,
    pub(crate) target: Target,
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) headers: Vec<(String, String)>,
    /// `--mode`: wins over a configuration entry's; `None` leaves the entry's (or auto).
    pub(crate) mode: Option<ProtocolMode>,
    /// `--probe-timeout`: wins over a configuration entry's.
    pub(crate) probe_timeout: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) login: bool,
    pub(crate) token_store: Option<PathBuf>,
    /// `--ca-cert FILE`: PEM certificates trusted besides the built-in roots.
    pub(crate) ca_cert: Option<PathBuf>,
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Parsed {
    Run(Box<Cli>),
    Help,
    Version,
}

/// Parses the arguments after the program name. `config_env` is `$MODELCTX_CONFIG`.
pub(crate) fn parse(args: Vec<String>, config_env: Option<String>) -> Result<Parsed, String> {
    let mut json = false;
    let mut quiet = false;
    let mut headers = Vec::new();
    let mut mode = None;
    let mut probe_timeout = None;
    let mut timeout = None;
    let mut login = true;
    let mut token_store = None;
    let mut ca_cert = None;
    let mut to = None;
    let mut config = config_env.map(PathBuf::from);
    let mut server = None;
    let mut url = None;
    let mut stdio = None;
    let mut positional = Vec::new();

    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            let program = args
                .next()
                .ok_or("`--` must be followed by the server's command")?;
            stdio = Some((program, args.by_ref().collect::<Vec<_>>()));
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if arg.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args.next().ok_or_else(|| format!("{name} needs a value")),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            "--json" => json = true,
            "-q" | "--quiet" => quiet = true,
            "--no-login" => login = false,
            "--config" => config = Some(PathBuf::from(value("--config")?)),
            "--server" => server = Some(value("--server")?),
            "--token-store" => token_store = Some(PathBuf::from(value("--token-store")?)),
            "--ca-cert" => ca_cert = Some(PathBuf::from(value("--ca-cert")?)),
            "--to" => to = Some(PathBuf::from(value("--to")?)),
            "-H" | "--header" => {
                let header = value("--header")?;
                let (name, v) = header
                    .split_once(':')
                    .ok_or_else(|| format!("a header is `Name: value`, not {header:?}"))?;
                headers.push((name.trim().to_owned(), v.trim().to_owned()));
            }
            "--mode" => {
                let text = value("--mode")?;
                mode = Some(text.parse().map_err(|e| format!("--mode: {e}"))?);
            }
            "--probe-timeout" => {
                let text = value("--probe-timeout")?;
                probe_timeout =
                    Some(parse_probe_timeout(&text).map_err(|e| format!("--probe-timeout: {e}"))?);
            }
            "--timeout" => {
                let secs = value("--timeout")?;
                let secs: f64 = secs
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| {
                        format!("--timeout is a positive number of seconds, not {secs:?}")
                    })?;
                timeout = Some(Duration::from_secs_f64(secs));
            }
            _ if arg.starts_with('-') && arg.len() > 1 => {
                return Err(format!("unknown option {arg}"));
            }
            _ if arg.starts_with("http://") || arg.starts_with("https://") => {
                if url.replace(arg).is_some() {
                    return Err("more than one URL given".into());
                }
            }
            _ => positional.push(arg),
        }
    }

    let target = match (url, server, stdio) {
        (Some(url), None, None) => Target::Url(url),
        (None, Some(name), None) => Target::Server {
            name,
            config: config.ok_or("--server needs --config FILE (or $MODELCTX_CONFIG)")?,
        },
        (None, None, Some((program, args))) => Target::Stdio { program, args },
        (None, None, None) => {
            return Err("no server given: a URL, --server NAME, or -- COMMAND ARGS...".into());
        }
        _ => return Err("give one server only: a URL, --server NAME or -- COMMAND".into()),
    };
    if !headers.is_empty() && matches!(target, Target::Stdio { .. }) {
        return Err("--header applies to HTTP servers only".into());
    }

    let mut positional = positional.into_iter();
    let command = match positional.next().as_deref() {
        None => return Err("no command given: list, call, read or prompt".into()),
        Some("list") => {
            let mut sections = Vec::new();
            for part in positional.by_ref() {
                sections.push(match part.as_str() {
                    "tools" => Section::Tools,
                    "resources" => Section::Resources,
                    "prompts" => Section::Prompts,
                    other => {
                        return Err(format!(
                            "list takes tools, resources or prompts, not {other:?}"
                        ));
                    }
                });
            }
            if sections.is_empty() {
                sections = vec![Section::Tools, Section::Resources, Section::Prompts];
            }
            Command::List(sections)
        }
        Some("call") => {
            let tool = positional.next().ok_or("call needs a tool name")?;
            let args = positional
                .by_ref()
                .map(|a| tool_arg(&a))
                .collect::<Result<_, _>>()?;
            Command::Call { tool, args }
        }
        Some("read") => {
            let uri = positional.next().ok_or("read needs a resource URI")?;
            Command::Read { uri }
        }
        Some("prompt") => {
            let name = positional.next().ok_or("prompt needs a prompt name")?;
            let args = positional
                .by_ref()
                .map(|a| match a.split_once('=') {
                    Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
                    _ => Err(format!("a prompt argument is KEY=VALUE, not {a:?}")),
                })
                .collect::<Result<_, _>>()?;
            Command::Prompt { name, args }
        }
        Some("skills") => Command::Skills(match positional.next().as_deref() {
            Some("list") => SkillsCommand::List,
            Some("get") => SkillsCommand::Get {
                uri: positional
                    .next()
                    .ok_or("skills get needs a skill's SKILL.md URI")?,
            },
            Some("pull") => SkillsCommand::Pull {
                uri: positional
                    .next()
                    .ok_or("skills pull needs a skill's SKILL.md URI")?,
                to: to.take().unwrap_or_else(|| PathBuf::from(".")),
            },
            Some(other) => return Err(format!("skills takes list, get or pull, not {other:?}")),
            None => return Err("skills needs list, get or pull".into()),
        }),
        Some(other) => {
            return Err(format!(
                "unknown command {other:?}: list, call, read, prompt or skills"
            ));
        }
    };
    if to.is_some() {
        return Err("--to applies to `skills pull` only".into());
    }
    if let Some(extra) = positional.next() {
        return Err(format!("unexpected argument {extra:?}"));
    }
    Ok(Parsed::Run(Box::new(Cli {
        command,
        target,
        json,
        quiet,
        headers,
        mode,
        probe_timeout,
        timeout,
        login,
        token_store,
        ca_cert,
    })))
}

fn tool_arg(arg: &str) -> Result<ToolArg, String> {
    let Some((key, value)) = arg.split_once('=') else {
        return Err(format!(
            "a tool argument is KEY=VALUE or KEY:=JSON, not {arg:?}"
        ));
    };
    if let Some(key) = key.strip_suffix(':') {
        if key.is_empty() {
            return Err(format!("no key in {arg:?}"));
        }
        let json = serde_json::from_str(value)
            .map_err(|e| format!("{key}:= takes JSON, and {value:?} is not: {e}"))?;
        return Ok(ToolArg::Json(key.to_owned(), json));
    }
    if key.is_empty() {
        return Err(format!("no key in {arg:?}"));
    }
    Ok(ToolArg::Loose(key.to_owned(), value.to_owned()))
}

/// Whether `schema` (a tool's `inputSchema`) says property `key` is a string.
fn wants_string(schema: Option<&serde_json::Map<String, Value>>, key: &str) -> bool {
    let Some(ty) = schema
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get(key))
        .and_then(|p| p.get("type"))
    else {
        return false;
    };
    match ty {
        Value::String(t) => t == "string",
        // `["string", "null"]`: a JSON `null` is still meant as null, anything else
        // as the string.
        Value::Array(types) => types.iter().any(|t| t == "string"),
        _ => false,
    }
}

/// The `arguments` object of a call, given the tool's input schema if known.
pub(crate) fn tool_arguments(
    args: &[ToolArg],
    schema: Option<&serde_json::Map<String, Value>>,
) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for arg in args {
        let (key, value) = match arg {
            ToolArg::Json(key, value) => (key, value.clone()),
            ToolArg::Loose(key, text) => {
                let parsed = serde_json::from_str::<Value>(text).ok();
                let value = match parsed {
                    Some(Value::Null) if text == "null" => Value::Null,
                    Some(v) if !wants_string(schema, key) => v,
                    _ => Value::String(text.clone()),
                };
                (key, value)
            }
        };
        out.insert(key.clone(), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    fn run(line: &str) -> Cli {
        match parse(args(line), None) {
            Ok(Parsed::Run(cli)) => *cli,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn reads_the_skills_commands() {
        let cli = run("skills list -- server");
        assert_eq!(cli.command, Command::Skills(SkillsCommand::List));
        let cli = run("skills get skill://a/SKILL.md -- server");
        assert_eq!(
            cli.command,
            Command::Skills(SkillsCommand::Get {
                uri: "skill://a/SKILL.md".into()
            })
        );
        let cli = run("skills pull skill://a/SKILL.md --to out -- server");
        assert_eq!(
            cli.command,
            Command::Skills(SkillsCommand::Pull {
                uri: "skill://a/SKILL.md".into(),
                to: "out".into()
            })
        );
        let cli = run("skills pull skill://a/SKILL.md -- server");
        assert!(
            matches!(cli.command, Command::Skills(SkillsCommand::Pull { ref to, .. }) if to.as_os_str() == ".")
        );
        for bad in [
            "skills -- server",
            "skills fetch -- server",
            "skills get -- server",
            "skills list --to out -- server",
        ] {
            assert!(
                parse(bad.split(' ').map(str::to_owned).collect(), None).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn reads_each_target_and_command() {
        let cli = run("call add a=1 b:=[2] s=x --json -- server --flag x=1");
        let Target::Stdio { program, args } = cli.target else {
            panic!("not stdio");
        };
        assert_eq!(
            (program.as_str(), args),
            ("server", vec!["--flag".to_owned(), "x=1".to_owned()])
        );
        let Command::Call { tool, args } = cli.command else {
            panic!("not call");
        };
        assert_eq!(tool, "add");
        assert_eq!(
            args,
            [
                ToolArg::Loose("a".into(), "1".into()),
                ToolArg::Json("b".into(), json!([2])),
                ToolArg::Loose("s".into(), "x".into())
            ]
        );
        assert!(cli.json);

        let cli =
            run("read mem://x http://127.0.0.1:1/mcp -H X-Key:k --mode=handshake --timeout 2.5");
        assert!(matches!(cli.target, Target::Url(ref u) if u == "http://127.0.0.1:1/mcp"));
        assert!(matches!(cli.command, Command::Read { ref uri } if uri == "mem://x"));
        assert_eq!(cli.headers, [("X-Key".to_owned(), "k".to_owned())]);
        assert_eq!(cli.mode, Some(ProtocolMode::Handshake));
        assert_eq!(cli.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(cli.probe_timeout, None);

        let cli = run("list --mode 2026-07-28 --probe-timeout=750ms -- srv");
        assert_eq!(
            cli.mode,
            Some(ProtocolMode::Version(
                modelctx::types::ProtocolVersion::V2026_07_28
            ))
        );
        assert_eq!(cli.probe_timeout, Some(Duration::from_millis(750)));
        assert_eq!(
            run("list --mode discover -- srv").mode,
            Some(ProtocolMode::Discover)
        );
        assert_eq!(run("list -- srv").mode, None);

        let cli = run("--server web --config m.json prompt greet name=Ada");
        assert!(matches!(cli.target, Target::Server { ref name, .. } if name == "web"));
        assert!(
            matches!(cli.command, Command::Prompt { ref args, .. } if args == &[("name".to_owned(), "Ada".to_owned())])
        );
        let cli = run("list tools prompts https://h/mcp");
        assert!(
            matches!(cli.command, Command::List(ref s) if s == &[Section::Tools, Section::Prompts])
        );
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        for (line, expected) in [
            ("list", "no server given"),
            ("list http://a http://b", "more than one URL"),
            ("list http://a -- srv", "give one server only"),
            ("--server x list", "--server needs --config"),
            ("frobnicate http://a", "unknown command"),
            ("call http://a", "call needs a tool name"),
            ("call t novalue http://a", "KEY=VALUE or KEY:=JSON"),
            ("call t n:={ http://a", "takes JSON"),
            (
                "list --mode 2024 http://a",
                "--mode: the mode is auto, discover, handshake",
            ),
            (
                "list --probe-timeout soon http://a",
                "--probe-timeout: the probe timeout is",
            ),
            ("list --timeout 0 http://a", "--timeout is a positive"),
            ("list --bogus http://a", "unknown option --bogus"),
            ("list -H x -- srv", "a header is"),
            ("list -H x:y -- srv", "--header applies to HTTP"),
            ("list widgets http://a", "list takes tools"),
            ("read u extra http://a", "unexpected argument"),
            ("list --", "`--` must be followed"),
        ] {
            let err = parse(args(line), None).unwrap_err();
            assert!(err.contains(expected), "{line}: {err}");
        }
        assert!(matches!(parse(args("--help"), None), Ok(Parsed::Help)));
        assert!(matches!(parse(args("-V"), None), Ok(Parsed::Version)));
        assert!(matches!(
            parse(args("--server x list"), Some("env.json".into())),
            Ok(Parsed::Run(_))
        ));
    }

    #[test]
    fn loose_values_are_json_unless_the_schema_wants_a_string() {
        let schema = json!({"properties": {
            "code": {"type": "string"},
            "maybe": {"type": ["string", "null"]},
            "n": {"type": "integer"}
        }});
        let schema = schema.as_object();
        let given = [
            ToolArg::Loose("code".into(), "007".into()),
            ToolArg::Loose("maybe".into(), "null".into()),
            ToolArg::Loose("n".into(), "7".into()),
            ToolArg::Loose("free".into(), "{\"a\": 1}".into()),
            ToolArg::Loose("word".into(), "hello world".into()),
            ToolArg::Json("code2".into(), json!("x")),
        ];
        assert_eq!(
            Value::Object(tool_arguments(&given, schema)),
            json!({"code": "007", "maybe": null, "n": 7, "free": {"a": 1},
                   "word": "hello world", "code2": "x"})
        );
        // Without a schema a number is a number; with one that says string, not.
        let digits = [ToolArg::Loose("code".into(), "42".into())];
        assert_eq!(
            Value::Object(tool_arguments(&digits, None)),
            json!({"code": 42})
        );
        assert_eq!(
            Value::Object(tool_arguments(&digits, schema)),
            json!({"code": "42"})
        );
    }
}
