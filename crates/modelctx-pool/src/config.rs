//! The `mcpServers` configuration: what Claude Desktop, Cursor, VS Code and most agent
//! hosts read to know which servers to start.
//!
//! Only the document's shape fails the parse: a wrong entry is kept as that entry's
//! `ConfigError`, so one bad server does not hide the others. `"disabled": true` entries
//! are dropped; `${VAR}` is not expanded. `env` is added to the inherited environment. An
//! HTTP entry with `"type": "http"` or no type connects through the fallback transport
//! (streamable HTTP, then legacy SSE).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::mode::{self, ProtocolMode};

/// The setters of how a server's client settles the era, the same for every kind of
/// server: `with_mode` and `with_probe_timeout`.
macro_rules! era_setters {
    () => {
        modelctx_types::__setters! {
            /// Connected in `mode`.
            with_mode(mode: ProtocolMode) { mode = Some(mode) }

            /// With this probe wait (see `ClientBuilder::probe_timeout`).
            with_probe_timeout(wait: Duration) { probe_timeout = Some(wait) }
        }
    };
}

/// Every server of an `mcpServers` configuration, by name.
///
/// The document is a JSON object with a `mcpServers` member (VS Code's `servers` is read
/// too) mapping names to entries:
///
/// ```json
/// {
///   "mcpServers": {
///     "files": { "command": "mcp-files", "args": ["--root", "."], "env": {"LOG": "1"}, "cwd": "/tmp" },
///     "search": { "url": "https://search.example/mcp", "headers": {"Authorization": "Bearer t"} },
///     "old": { "type": "sse", "url": "http://127.0.0.1:8000/sse" }
///   }
/// }
/// ```
///
/// An entry with `command` runs a child process over stdio; one with `url` speaks HTTP.
/// `type` is optional: `stdio`, `http` (streamable HTTP, falling back to the legacy
/// HTTP+SSE transport when the server refuses the first POST with 400/404/405: what a
/// URL without `type` gets), `streamable-http` (also `streamableHttp`: streamable HTTP
/// only) or `sse` (the legacy transport only). Either kind may set how the client
/// settles the protocol era: `"mode"` (a [`ProtocolMode`]: `auto`, `discover`, `handshake`
/// or a revision such as `2026-07-28`) and `"probeTimeout"` (how long auto mode gives a
/// silent server before it sends `initialize` too: seconds, or a string such as
/// `"500ms"`); they win over the client builder's. Members this crate does not know
/// (`alwaysAllow`, `timeout`, ...) are ignored; an entry with `"disabled": true` is
/// left out. Strings are taken as written: `${VAR}` is not expanded.
///
/// Only the document's shape can fail the whole parse. An entry that is wrong (no
/// `command` nor `url`, a number where a string belongs, an unknown `type`) is kept as
/// that entry's [`ConfigError`], so one bad server does not hide the others: a
/// [`ClientPool`](crate::ClientPool) reports it as failed.
#[derive(Debug, Clone, Default)]
pub struct McpServers {
    servers: BTreeMap<String, Result<ServerConfig, ConfigError>>,
}

impl McpServers {
    /// An empty configuration, to fill with [`insert`](Self::insert).
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a configuration document.
    ///
    /// ```
    /// use modelctx_pool::{McpServers, ServerConfig};
    ///
    /// let config = McpServers::from_json(r#"{"mcpServers": {
    ///     "echo": {"command": "echo-server", "args": ["-v"]},
    ///     "web": {"url": "http://127.0.0.1:8000/mcp"},
    ///     "bad": {"args": []}
    /// }}"#).unwrap();
    /// assert!(matches!(config.get("echo"), Some(Ok(ServerConfig::Stdio(_)))));
    /// assert!(matches!(config.get("web"), Some(Ok(ServerConfig::Http(_)))));
    /// let bad = config.get("bad").unwrap().unwrap_err();
    /// assert_eq!(bad.to_string(), "server `bad`: needs `command` (stdio) or `url` (HTTP)");
    /// ```
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let doc: Value =
            serde_json::from_str(text).map_err(|e| ConfigError::new(format!("not JSON: {e}")))?;
        let Value::Object(doc) = doc else {
            return Err(ConfigError::new("the configuration must be a JSON object"));
        };
        let servers = match (doc.get("mcpServers"), doc.get("servers")) {
            (Some(Value::Object(servers)), _) | (None, Some(Value::Object(servers))) => servers,
            (Some(_), _) | (None, Some(_)) => {
                return Err(ConfigError::new("`mcpServers` must be an object"));
            }
            (None, None) => {
                return Err(ConfigError::new(
                    "no `mcpServers` object in the configuration",
                ));
            }
        };
        let mut out = BTreeMap::new();
        for (name, entry) in servers {
            if entry.get("disabled") == Some(&Value::Bool(true)) {
                continue;
            }
            let parsed = if name.is_empty() {
                Err(ConfigError::new("a server name is empty"))
            } else {
                ServerConfig::from_entry(entry)
                    .map_err(|e| ConfigError::new(format!("server `{name}`: {e}")))
            };
            out.insert(name.clone(), parsed);
        }
        Ok(Self { servers: out })
    }

    /// Reads the configuration file at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(format!("cannot read {}: {e}", path.display())))?;
        Self::from_json(&text).map_err(|e| ConfigError::new(format!("{}: {e}", path.display())))
    }

    /// Adds (or replaces) the server `name`.
    pub fn insert(&mut self, name: impl Into<String>, server: ServerConfig) {
        self.servers.insert(name.into(), Ok(server));
    }

    /// The entry `name`: its configuration, or what is wrong with it.
    pub fn get(&self, name: &str) -> Option<Result<&ServerConfig, &ConfigError>> {
        self.servers.get(name).map(Result::as_ref)
    }

    /// Every entry, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Result<&ServerConfig, &ConfigError>)> {
        self.servers
            .iter()
            .map(|(name, entry)| (name.as_str(), entry.as_ref()))
    }

    /// How many entries there are (wrong ones included, disabled ones not).
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True when there is no entry.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerConfig {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio(StdioServer),
    /// A server at an HTTP(S) URL.
    Http(HttpServer),
}

impl ServerConfig {
    fn from_entry(entry: &Value) -> Result<Self, String> {
        let Value::Object(entry) = entry else {
            return Err("an entry must be an object".into());
        };
        let kind = match entry.get("type") {
            None | Some(Value::Null) => None,
            Some(Value::String(kind)) => Some(kind.as_str()),
            Some(_) => return Err("`type` must be a string".into()),
        };
        match kind {
            Some("stdio") => StdioServer::from_entry(entry).map(Self::Stdio),
            Some("http") => HttpServer::from_entry(entry, HttpTransport::Auto).map(Self::Http),
            Some("streamable-http" | "streamableHttp" | "streamable_http") => {
                HttpServer::from_entry(entry, HttpTransport::Streamable).map(Self::Http)
            }
            Some("sse") => HttpServer::from_entry(entry, HttpTransport::Sse).map(Self::Http),
            Some(other) => Err(format!(
                "unknown `type` {other:?} (expected stdio, http, streamable-http or sse)"
            )),
            None if entry.contains_key("command") => {
                StdioServer::from_entry(entry).map(Self::Stdio)
            }
            None if entry.contains_key("url") => {
                HttpServer::from_entry(entry, HttpTransport::Auto).map(Self::Http)
            }
            None => Err("needs `command` (stdio) or `url` (HTTP)".into()),
        }
    }
}

/// A server run as a child process. Its `Debug` output names the environment variables
/// it sets but not their values (API keys often travel there).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioServer {
    /// The program (a path, or a name looked up in `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the environment the child inherits.
    pub env: BTreeMap<String, String>,
    /// Its working directory (by default ours).
    pub cwd: Option<PathBuf>,
    /// How the client settles the protocol era (`"mode"`); `None` leaves the client
    /// builder's.
    pub mode: Option<ProtocolMode>,
    /// How long auto mode gives the child before it sends `initialize` beside its
    /// probe (`"probeTimeout"`); `None` leaves the client builder's.
    pub probe_timeout: Option<Duration>,
}

impl StdioServer {
    /// Runs `command` with no arguments.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            mode: None,
            probe_timeout: None,
        }
    }

    /// With these arguments.
    #[must_use]
    pub fn with_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// With the variable `key` set to `value`.
    #[must_use]
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    modelctx_types::__setters! {
        /// In the directory `cwd`.
        with_cwd(cwd: impl Into<PathBuf>) { cwd = Some(cwd.into()) }
    }

    era_setters!();

    fn from_entry(entry: &Map<String, Value>) -> Result<Self, String> {
        let command = required_string(entry, "command", "a stdio server needs `command`")?;
        let args = match entry.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(args)) => args
                .iter()
                .map(|a| match a {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err("`args` must hold strings only".to_owned()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`args` must be an array of strings".into()),
        };
        let env = string_map(entry.get("env"), "env")?;
        let cwd = match entry.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(dir)) => Some(PathBuf::from(dir)),
            Some(_) => return Err("`cwd` must be a string".into()),
        };
        let (mode, probe_timeout) = mode::from_entry(entry)?;
        Ok(Self {
            command,
            args,
            env,
            cwd,
            mode,
            probe_timeout,
        })
    }
}

/// Which HTTP transport a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpTransport {
    /// Streamable HTTP, falling back to legacy HTTP+SSE when the server refuses the
    /// first POST with 400, 404 or 405 (`"type": "http"`, or a URL without `type`).
    #[default]
    Auto,
    /// Streamable HTTP only (`"type": "streamable-http"`).
    Streamable,
    /// The legacy HTTP+SSE transport of 2024-11-05 only (`"type": "sse"`; the URL is the
    /// event stream's).
    Sse,
}

/// A server at an HTTP(S) URL. Its `Debug` output names the headers it sends but not
/// their values (a static `Authorization`, an API key).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpServer {
    /// The MCP endpoint (for [`HttpTransport::Sse`], the event stream).
    pub url: String,
    /// Headers sent with every request (a static `Authorization`, an API key).
    pub headers: BTreeMap<String, String>,
    /// The transport.
    pub transport: HttpTransport,
    /// How the client settles the protocol era (`"mode"`); `None` leaves the client
    /// builder's.
    pub mode: Option<ProtocolMode>,
    /// The probe wait (`"probeTimeout"`; not used over streamable HTTP, see
    /// `ClientBuilder::probe_timeout`); `None` leaves the client builder's.
    pub probe_timeout: Option<Duration>,
}

impl HttpServer {
    /// The server at `url`, over streamable HTTP with the legacy fallback.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: BTreeMap::new(),
            transport: HttpTransport::Auto,
            mode: None,
            probe_timeout: None,
        }
    }

    /// With the header `name: value` on every request.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    modelctx_types::__setters! {
        /// Over `transport`.
        with_transport(transport: HttpTransport) { transport = transport }
    }

    era_setters!();

    fn from_entry(entry: &Map<String, Value>, transport: HttpTransport) -> Result<Self, String> {
        let url = required_string(entry, "url", "an HTTP server needs `url`")?;
        let headers = string_map(entry.get("headers"), "headers")?;
        let (mode, probe_timeout) = mode::from_entry(entry)?;
        Ok(Self {
            url,
            headers,
            transport,
            mode,
            probe_timeout,
        })
    }
}

/// The non-empty string `key` of `entry`; `missing` is the error when it is absent.
fn required_string(entry: &Map<String, Value>, key: &str, missing: &str) -> Result<String, String> {
    match entry.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(format!("`{key}` is empty")),
        Some(_) => Err(format!("`{key}` must be a string")),
        None => Err(missing.to_owned()),
    }
}

fn string_map(value: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, String> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(format!("`{what}.{k}` must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{what}` must be an object of strings")),
    }
}

/// A configuration that cannot be used, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    message: String,
}

impl ConfigError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// The names of a map whose values may be secrets, for `Debug` output.
struct Names<'a>(&'a BTreeMap<String, String>);

impl std::fmt::Debug for Names<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

modelctx_types::__debug_shows!(StdioServer, |v| {
    command: &v.command,
    args: &v.args,
    env: &Names(&v.env),
    cwd: &v.cwd,
    mode: &v.mode,
    probe_timeout: &v.probe_timeout,
});

modelctx_types::__debug_shows!(HttpServer, |v| {
    url: &v.url,
    headers: &Names(&v.headers),
    transport: &v.transport,
    mode: &v.mode,
    probe_timeout: &v.probe_timeout,
});

#[cfg(test)]
mod tests {
    #[test]
    fn debug_output_names_secrets_without_their_values() {
        let mut stdio = super::StdioServer::new("server");
        stdio.env.insert("API_KEY".into(), "sk-secret".into());
        let mut http = super::HttpServer::new("https://example.com/mcp");
        http.headers
            .insert("Authorization".into(), "Bearer sk-secret".into());
        for shown in [format!("{stdio:?}"), format!("{http:?}")] {
            assert!(!shown.contains("sk-secret"), "{shown}");
            assert!(
                shown.contains("API_KEY") || shown.contains("Authorization"),
                "{shown}"
            );
        }
    }

    use super::*;

    #[test]
    fn reads_every_shape_and_keeps_bad_entries_apart() {
        let config = McpServers::from_json(
            r#"{"mcpServers": {
                "a": {"command": "srv", "args": ["x", "y"], "env": {"K": "v"}, "cwd": "/tmp"},
                "b": {"type": "streamable-http", "url": "http://h/mcp", "headers": {"X-Key": "k"}},
                "c": {"type": "sse", "url": "http://h/sse"},
                "d": {"type": "http", "url": "http://h/mcp"},
                "e": {"type": "stdio", "command": "srv"},
                "off": {"command": "srv", "disabled": true},
                "bad-env": {"command": "srv", "env": {"K": 1}},
                "bad-type": {"type": "websocket", "url": "ws://h"},
                "not-object": 3
            }}"#,
        )
        .unwrap();
        assert_eq!(
            config.get("a").unwrap().unwrap(),
            &ServerConfig::Stdio(
                StdioServer::new("srv")
                    .with_args(["x", "y"])
                    .with_env("K", "v")
                    .with_cwd("/tmp")
            )
        );
        assert_eq!(
            config.get("b").unwrap().unwrap(),
            &ServerConfig::Http(
                HttpServer::new("http://h/mcp")
                    .with_header("X-Key", "k")
                    .with_transport(HttpTransport::Streamable)
            )
        );
        assert!(matches!(
            config.get("c"),
            Some(Ok(ServerConfig::Http(HttpServer {
                transport: HttpTransport::Sse,
                ..
            })))
        ));
        assert!(matches!(
            config.get("d"),
            Some(Ok(ServerConfig::Http(HttpServer {
                transport: HttpTransport::Auto,
                ..
            })))
        ));
        assert!(matches!(config.get("e"), Some(Ok(ServerConfig::Stdio(_)))));
        assert!(config.get("off").is_none());
        assert_eq!(
            config.get("bad-env").unwrap().unwrap_err().to_string(),
            "server `bad-env`: `env.K` must be a string"
        );
        assert!(
            config
                .get("bad-type")
                .unwrap()
                .unwrap_err()
                .to_string()
                .contains("unknown `type` \"websocket\"")
        );
        assert!(config.get("not-object").unwrap().is_err());
        assert_eq!(config.len(), 8);
    }

    #[test]
    fn reads_the_era_settings_of_either_kind() {
        let config = McpServers::from_json(
            r#"{"mcpServers": {
                "py": {"command": "python", "mode": "auto", "probeTimeout": 30},
                "web": {"url": "http://h/mcp", "mode": "2026-07-28", "probeTimeout": "500ms"},
                "old": {"command": "srv", "mode": "2025-06-18"},
                "bad-mode": {"command": "srv", "mode": "newest"},
                "bad-wait": {"url": "http://h/mcp", "probeTimeout": -1}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            config.get("py").unwrap().unwrap(),
            &ServerConfig::Stdio(
                StdioServer::new("python")
                    .with_mode(ProtocolMode::Auto)
                    .with_probe_timeout(Duration::from_secs(30))
            )
        );
        assert_eq!(
            config.get("web").unwrap().unwrap(),
            &ServerConfig::Http(
                HttpServer::new("http://h/mcp")
                    .with_mode(ProtocolMode::Version(
                        modelctx_types::ProtocolVersion::V2026_07_28
                    ))
                    .with_probe_timeout(Duration::from_millis(500))
            )
        );
        assert!(matches!(
            config.get("old"),
            Some(Ok(ServerConfig::Stdio(StdioServer {
                mode: Some(ProtocolMode::Version(_)),
                probe_timeout: None,
                ..
            })))
        ));
        let bad = config.get("bad-mode").unwrap().unwrap_err().to_string();
        assert!(
            bad.starts_with("server `bad-mode`: `mode`: the mode is auto"),
            "{bad}"
        );
        let bad = config.get("bad-wait").unwrap().unwrap_err().to_string();
        assert!(
            bad.starts_with("server `bad-wait`: `probeTimeout`:"),
            "{bad}"
        );
    }

    #[test]
    fn reads_vs_code_servers_and_refuses_wrong_documents() {
        let config = McpServers::from_json(r#"{"servers": {"a": {"command": "x"}}}"#).unwrap();
        assert_eq!(config.len(), 1);
        for (doc, expected) in [
            ("[]", "the configuration must be a JSON object"),
            ("{}", "no `mcpServers` object in the configuration"),
            (r#"{"mcpServers": []}"#, "`mcpServers` must be an object"),
        ] {
            assert_eq!(
                McpServers::from_json(doc).unwrap_err().to_string(),
                expected
            );
        }
        assert!(
            McpServers::from_json("{")
                .unwrap_err()
                .to_string()
                .starts_with("not JSON")
        );
    }
}
