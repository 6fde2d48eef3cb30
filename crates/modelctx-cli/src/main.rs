//! `modelctx`: a command-line MCP client.
//!
//! ```text
//! modelctx list -- my-server --flag          # a stdio server
//! modelctx call add a=1 b=2 http://127.0.0.1:8000/mcp
//! modelctx read file:///notes.txt --server files --config mcp.json
//! modelctx prompt review code=@x --json -- my-server
//! ```
//!
//! Built on the public API only (the `modelctx` facade with its `pool` feature, and
//! `modelctx-oauth`'s client): the connection is `modelctx::pool::ServerConfig::connect`,
//! the requests are `Client`'s typed calls. `modelctx --help` has the whole grammar and
//! the exit codes.
//!
//! # How it works
//!
//! `main` connects through `ServerConfig::connect` (a `-- COMMAND ARGS` target is a stdio
//! server, a URL an HTTP server with `-H` headers, `--server NAME` an entry of `--config`
//! or `$MODELCTX_CONFIG`), runs the command with the client's typed calls and closes (a
//! child is shut down gracefully). `KEY=VALUE` is JSON when it parses, else a string, but
//! always a string where the tool's `inputSchema` types the property `string` (the tool
//! list is fetched first), so `zip=01234` reaches a string field intact; `KEY:=JSON` is
//! strict.
//!
//! For HTTP targets an OAuth client with a loopback redirect is attached unless
//! `--no-login`: it adds nothing until a server answers 401, then prints the authorization
//! URL on stderr. There is no connect time limit (a login may take minutes; the request
//! clocks are held meanwhile). Progress goes to stderr, redrawn in place on a terminal and
//! a line per update otherwise; a stdio child's stderr is inherited (`--quiet` drops it and
//! the progress).
//!
//! TLS is the feature `rustls`: `--ca-cert FILE` or `$MODELCTX_CA_CERT` adds roots to every
//! HTTP transport and to the OAuth client's own reqwest client. Without the feature the CLI
//! refuses an `https://` target and `--ca-cert` itself (exit 2, naming the feature) rather
//! than relying on the transport's refusal, since feature unification in a workspace build
//! may give the transport TLS the CLI was not built for; the variable alone is ignored
//! there, so it does not break plain HTTP.

mod args;
mod render;
mod skills;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use modelctx::client::Client;
use modelctx::http::AuthHook;
use modelctx::pool::{
    ConnectOptions, Connection, HttpServer, McpServers, ServerConfig, StdioServer,
};
use modelctx::session::{Progress, RequestOptions, SessionError};
use modelctx::types::CallToolRequestParams;
use modelctx_oauth::{FileCredentialStore, LoopbackRedirect, OAuthClient};
use serde_json::{Value, json};

use args::{Cli, Command, Parsed, Section, Target};

/// The tool answered with `isError: true`.
const TOOL_ERROR: u8 = 1;
/// The command line (or the configuration it names) is wrong.
const USAGE: u8 = 2;
/// The server could not be reached, or answered with an error.
const FAILURE: u8 = 3;

/// Why the command did not succeed, and the exit code that says so.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn usage(message: impl Into<String>) -> Self {
        Self {
            code: USAGE,
            message: message.into(),
        }
    }

    fn failed(message: impl Into<String>) -> Self {
        Self {
            code: FAILURE,
            message: message.into(),
        }
    }

    fn session(what: &str, e: &SessionError) -> Self {
        match e.protocol_error() {
            Some(error) => Self::failed(format!(
                "{what}: the server answered error {}: {}",
                error.code.0, error.message
            )),
            None => Self::failed(format!("{what}: {e}")),
        }
    }
}

fn main() -> ExitCode {
    let argv: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(std::ffi::OsString::into_string)
        .collect();
    let parsed = argv
        .map_err(|bad| format!("argument {bad:?} is not UTF-8"))
        .and_then(|argv| args::parse(argv, std::env::var("MODELCTX_CONFIG").ok()));
    #[cfg_attr(not(feature = "rustls"), allow(unused_mut))]
    let mut cli = match parsed {
        Ok(Parsed::Run(cli)) => cli,
        Ok(Parsed::Help) => {
            print!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            println!("modelctx {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("modelctx: {e}\nTry `modelctx --help`.");
            return ExitCode::from(USAGE);
        }
    };
    // Without TLS the variable is ignored (an `https://` target is refused anyway), so
    // that a shell which sets it for a TLS build does not break plain HTTP.
    #[cfg(feature = "rustls")]
    if cli.ca_cert.is_none() {
        cli.ca_cert = std::env::var_os("MODELCTX_CA_CERT")
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("modelctx: cannot start the async runtime: {e}");
            return ExitCode::from(FAILURE);
        }
    };
    match runtime.block_on(run(*cli)) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("modelctx: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    let connection = connect(&cli).await?;
    let outcome = act(&cli, connection.client()).await;
    connection.close().await;
    outcome
}

/// The configuration entry the target names.
fn server_config(cli: &Cli) -> Result<ServerConfig, Failure> {
    let mut config = match &cli.target {
        Target::Stdio { program, args } => {
            ServerConfig::Stdio(StdioServer::new(program).with_args(args.iter().cloned()))
        }
        Target::Url(url) => ServerConfig::Http(HttpServer::new(url)),
        Target::Server { name, config } => {
            let servers =
                McpServers::from_file(config).map_err(|e| Failure::usage(e.to_string()))?;
            match servers.get(name) {
                Some(Ok(server)) => server.clone(),
                Some(Err(e)) => return Err(Failure::usage(e.to_string())),
                None => {
                    let known: Vec<_> = servers.iter().map(|(n, _)| n).collect();
                    return Err(Failure::usage(format!(
                        "no server `{name}` in {} (it has: {})",
                        config.display(),
                        known.join(", ")
                    )));
                }
            }
        }
    };
    #[cfg(not(feature = "rustls"))]
    {
        if cli.ca_cert.is_some() {
            return Err(Failure::usage(NO_TLS));
        }
        if let ServerConfig::Http(http) = &config
            && http
                .url
                .get(..8)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
        {
            return Err(Failure::usage(NO_TLS));
        }
    }
    if let ServerConfig::Http(http) = &mut config {
        for (name, value) in &cli.headers {
            http.headers.insert(name.clone(), value.clone());
        }
    } else if !cli.headers.is_empty() {
        return Err(Failure::usage("--header applies to HTTP servers only"));
    }
    // The command line wins over the entry.
    let (mode, probe_timeout) = match &mut config {
        ServerConfig::Stdio(stdio) => (&mut stdio.mode, &mut stdio.probe_timeout),
        ServerConfig::Http(http) => (&mut http.mode, &mut http.probe_timeout),
        _ => return Err(Failure::usage("this kind of server entry is not supported")),
    };
    if cli.mode.is_some() {
        mode.clone_from(&cli.mode);
    }
    if cli.probe_timeout.is_some() {
        *probe_timeout = cli.probe_timeout;
    }
    Ok(config)
}

/// Why an `https://` server (or `--ca-cert`) cannot be used by this build.
#[cfg(not(feature = "rustls"))]
const NO_TLS: &str = "this modelctx was built without TLS and cannot reach https:// servers: \
build it with `--features rustls` (cargo install --path crates/modelctx-cli --features rustls)";

/// What `--ca-cert` adds to the HTTP clients (nothing without the `rustls` feature).
#[derive(Default)]
struct Tls {
    #[cfg(feature = "rustls")]
    roots: Vec<modelctx::http::tls::rustls::pki_types::CertificateDer<'static>>,
}

impl Tls {
    #[cfg(feature = "rustls")]
    fn new(cli: &Cli) -> Result<Self, Failure> {
        let Some(path) = &cli.ca_cert else {
            return Ok(Self::default());
        };
        let pem = std::fs::read(path)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
        let roots = modelctx::http::tls::certificates_from_pem(&pem)
            .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
        Ok(Self { roots })
    }

    #[cfg(not(feature = "rustls"))]
    fn new(_cli: &Cli) -> Result<Self, Failure> {
        Ok(Self::default())
    }
}

async fn connect(cli: &Cli) -> Result<Connection, Failure> {
    let config = server_config(cli)?;
    let tls = Tls::new(cli)?;
    // The era mode and the probe wait travel in the entry (see `server_config`).
    let mut client = Client::builder("modelctx", env!("CARGO_PKG_VERSION"));
    if let Some(timeout) = cli.timeout {
        client = client.request_timeout(timeout);
    }
    let mut options = ConnectOptions::new();
    #[cfg(feature = "rustls")]
    for root in &tls.roots {
        options = options.add_root_certificate(root.clone());
    }
    if cli.quiet {
        options = options.stderr(|_| {});
    }
    if let (true, ServerConfig::Http(http)) = (cli.login, &config) {
        options = options.auth(oauth(cli, &http.url, &tls).await?);
    }
    config.connect(client, &options).await.map_err(|e| {
        let mut message = format!("cannot connect: {e}");
        // The client says so when a probe may have been what broke the connection.
        if e.is_session() && message.contains("pin the era") {
            message.push_str(" (modelctx: --mode handshake, or --mode 2026-07-28)");
        }
        Failure::failed(message)
    })
}

/// The OAuth client that logs in when the server answers 401: the authorization URL is
/// shown on stderr, and the browser comes back to a one-shot listener on 127.0.0.1.
/// Until a server asks, it adds nothing to the requests.
async fn oauth(cli: &Cli, url: &str, tls: &Tls) -> Result<Arc<dyn AuthHook>, Failure> {
    let redirect = LoopbackRedirect::bind(0)
        .await
        .map_err(|e| Failure::failed(format!("cannot prepare the OAuth login: {e}")))?;
    let mut builder = OAuthClient::builder(url)
        .authorization_code(redirect)
        .client_name("modelctx", None);
    if let Some(path) = &cli.token_store {
        builder = builder.store(FileCredentialStore::new(path.clone()));
    }
    // Discovery, registration and token requests trust `--ca-cert` too.
    #[cfg(feature = "rustls")]
    if !tls.roots.is_empty() {
        let config = modelctx::http::tls::client_config(&tls.roots)
            .map_err(|e| Failure::usage(format!("--ca-cert: {e}")))?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .use_preconfigured_tls(config)
            .build()
            .map_err(|e| Failure::failed(format!("cannot build the OAuth HTTP client: {e}")))?;
        builder = builder.http_client(http);
    }
    #[cfg(not(feature = "rustls"))]
    let _ = tls;
    let oauth = builder
        .build()
        .map_err(|e| Failure::usage(format!("OAuth for {url}: {e}")))?;
    Ok(Arc::new(oauth))
}

fn print_result(cli: &Cli, value: &Value, human: fn(&Value) -> String) -> Result<(), Failure> {
    let text = if cli.json {
        let mut text = serde_json::to_string_pretty(value)
            .map_err(|e| Failure::failed(format!("cannot print the result: {e}")))?;
        text.push('\n');
        text
    } else {
        human(value)
    };
    let mut stdout = std::io::stdout().lock();
    // A closed stdout (`modelctx ... | head`) is not the server's failure.
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    Ok(())
}

fn to_json(value: impl serde::Serialize) -> Result<Value, Failure> {
    serde_json::to_value(value).map_err(|e| Failure::failed(format!("cannot encode: {e}")))
}

async fn act(cli: &Cli, client: &Client) -> Result<u8, Failure> {
    match &cli.command {
        Command::List(sections) => {
            let listing = list(client, sections).await?;
            print_result(cli, &listing, render::list)?;
            Ok(0)
        }
        Command::Call { tool, args } => {
            // The input schema says which `KEY=VALUE` values are strings; `call_tool`
            // lists the tools anyway (to check structured output).
            let schema = if args.iter().any(|a| matches!(a, args::ToolArg::Loose(..))) {
                client
                    .list_all_tools()
                    .await
                    .ok()
                    .and_then(|tools| tools.into_iter().find(|t| t.name == *tool))
                    .map(|t| t.input_schema)
            } else {
                None
            };
            let arguments = args::tool_arguments(args, schema.as_ref());
            let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
            let progress = ProgressLine::new(cli.quiet);
            let result = client.call_tool_with(params, progress.options()).await;
            progress.finish();
            let result = result.map_err(|e| Failure::session(&format!("call {tool}"), &e))?;
            print_result(cli, &to_json(&result)?, render::call)?;
            if result.is_error() {
                if !cli.json {
                    eprintln!("modelctx: the tool `{tool}` reported an error");
                }
                return Ok(TOOL_ERROR);
            }
            Ok(0)
        }
        Command::Read { uri } => {
            let result = client
                .read_resource(uri.clone())
                .await
                .map_err(|e| Failure::session(&format!("read {uri}"), &e))?;
            print_result(cli, &to_json(&result)?, render::read)?;
            Ok(0)
        }
        Command::Skills(command) => skills::act(cli, client, command).await,
        Command::Prompt { name, args } => {
            let arguments: BTreeMap<String, String> = args.iter().cloned().collect();
            let result = client
                .get_prompt(name.clone(), arguments)
                .await
                .map_err(|e| Failure::session(&format!("prompt {name}"), &e))?;
            print_result(cli, &to_json(&result)?, render::prompt)?;
            Ok(0)
        }
    }
}

/// `list`: the server's identity and era, then every page of each kind asked for. A
/// kind the server does not offer lists as empty.
async fn list(client: &Client, sections: &[Section]) -> Result<Value, Failure> {
    let caps = client.server_capabilities();
    // A pinned 2026-07-28 connection knows nothing of the server: ask for everything.
    let pinned = client.discover_result().is_none()
        && *client.protocol_version() == modelctx::types::ProtocolVersion::V2026_07_28;
    let mut listing = json!({
        "serverInfo": to_json(client.server_info())?,
        "protocolVersion": client.protocol_version().as_str(),
    });
    for section in sections {
        match section {
            Section::Tools => {
                let offered = caps.tools.is_some() || pinned;
                let tools = listed(offered, pinned, "tools/list", client.list_all_tools()).await?;
                listing["tools"] = to_json(tools)?;
            }
            Section::Resources => {
                let offered = caps.resources.is_some() || pinned;
                let resources = listed(
                    offered,
                    pinned,
                    "resources/list",
                    client.list_all_resources(),
                )
                .await?;
                let templates = client.list_all_resource_templates();
                let templates =
                    listed(offered, pinned, "resources/templates/list", templates).await?;
                listing["resources"] = to_json(resources)?;
                listing["resourceTemplates"] = to_json(templates)?;
            }
            Section::Prompts => {
                let offered = caps.prompts.is_some() || pinned;
                let prompts =
                    listed(offered, pinned, "prompts/list", client.list_all_prompts()).await?;
                listing["prompts"] = to_json(prompts)?;
            }
        }
    }
    Ok(listing)
}

/// A listing, empty when a pinned connection's server does not have the method (it
/// did not say what it offers).
/// Every entry `list` (of `method`) lists when the kind is `offered`, else none; see
/// [`or_empty`] for a `pinned` connection.
async fn listed<T>(
    offered: bool,
    pinned: bool,
    method: &str,
    list: impl Future<Output = Result<Vec<T>, SessionError>>,
) -> Result<Vec<T>, Failure> {
    if !offered {
        return Ok(Vec::new());
    }
    or_empty(list.await, pinned).map_err(|e| Failure::session(method, &e))
}

fn or_empty<T>(listed: Result<Vec<T>, SessionError>, pinned: bool) -> Result<Vec<T>, SessionError> {
    match listed {
        Err(e)
            if pinned
                && e.protocol_error()
                    .is_some_and(|e| e.code == modelctx::types::ErrorCode::METHOD_NOT_FOUND) =>
        {
            Ok(Vec::new())
        }
        other => other,
    }
}

/// Progress of a running call, on stderr: redrawn in place on a terminal, one line per
/// update otherwise (a log, a test).
struct ProgressLine {
    quiet: bool,
    terminal: bool,
    shown: Arc<AtomicBool>,
}

impl ProgressLine {
    fn new(quiet: bool) -> Self {
        Self {
            quiet,
            terminal: std::io::stderr().is_terminal(),
            shown: Arc::new(AtomicBool::new(false)),
        }
    }

    fn options(&self) -> RequestOptions {
        if self.quiet {
            return RequestOptions::new();
        }
        let (terminal, shown) = (self.terminal, self.shown.clone());
        RequestOptions::new().on_progress(move |p: Progress| {
            let mut text = match p.total {
                Some(total) => format!("progress {}/{}", p.progress, total),
                None => format!("progress {}", p.progress),
            };
            if let Some(message) = &p.message {
                text.push_str(": ");
                text.push_str(message);
            }
            let mut stderr = std::io::stderr().lock();
            let _ = if terminal {
                write!(stderr, "\r\x1b[2K{text}")
            } else {
                writeln!(stderr, "{text}")
            };
            let _ = stderr.flush();
            shown.store(true, Ordering::Relaxed);
        })
    }

    fn finish(&self) {
        if self.terminal && self.shown.load(Ordering::Relaxed) {
            eprintln!();
        }
    }
}
