//! An OAuth-protected MCP server over streamable HTTP, and the bundled authorization
//! server it trusts, in one command.
//!
//! Run it with `cargo run -p modelctx-examples --bin oauth-server -- [--mcp-port N]
//! [--as-port N] [--client ID REDIRECT_URI]...` (defaults 8080 and 8081):
//!
//! - `http://127.0.0.1:8080/mcp`: the MCP endpoint behind the resource server. Every
//!   request needs a bearer token for this resource with scope `mcp:tools`; the tool
//!   `whoami` answers with the verified caller, and `admin` also needs `mcp:admin`
//!   (a 403 that makes a compliant client step up). Its protected-resource metadata is
//!   at `/.well-known/oauth-protected-resource/mcp`.
//! - `http://127.0.0.1:8081`: the authorization server (metadata at
//!   `/.well-known/oauth-authorization-server`). Clients register dynamically, or ahead
//!   of time with `--client` (a public client with that redirect URI). The consent page
//!   logs in any user name with the password `OAUTH_DEMO_PASSWORD` (default `demo`).
//!
//! Both bind 127.0.0.1 only. To put a real identity provider in front instead, drop the
//! authorization server and give `ResourceServerConfig::new` the provider's issuer and
//! `JwtVerifier::new` its JWKS URI (ES256 or RS256 access tokens whose `aud` is the MCP URL), or
//! use `IntrospectionVerifier` with its introspection endpoint.

use modelctx::http::StreamableHttpService;
use modelctx::server::{Context, Server, ToolDef};
use modelctx::types::{JsonObject, Tool};
use modelctx_oauth::{
    AuthInfo, AuthorizationServer, AuthorizationServerConfig, InMemoryStore, JwtVerifier, Login,
    Operation, RegisteredClient, ResourceServer, ResourceServerConfig,
};

fn mcp_server() -> Result<Server, modelctx::server::RegistrationError> {
    let whoami = ToolDef::with_schema(
        Tool::without_arguments("whoami"),
        |_: JsonObject, cx: Context| async move {
            let caller = cx
                .extensions()
                .get::<AuthInfo>()
                .ok_or("no verified caller")?;
            Ok::<_, String>(format!(
                "{} (client {})",
                caller.subject.as_deref().unwrap_or("?"),
                caller.client_id.as_deref().unwrap_or("?")
            ))
        },
    );
    let admin = ToolDef::with_schema(Tool::without_arguments("admin"), |_: JsonObject, _| async {
        "admin action done"
    });
    Ok(Server::builder("oauth-example", "1.0.0")
        .tool(whoami)?
        .tool(admin)?
        .build())
}

fn port(args: &[String], flag: &str, default: u16) -> Result<u16, String> {
    match args.iter().position(|a| a == flag) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("{flag} needs a port number")),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mcp_port = port(&args, "--mcp-port", 8080)?;
    let as_port = port(&args, "--as-port", 8081)?;
    let issuer = format!("http://127.0.0.1:{as_port}");
    let mcp = format!("http://127.0.0.1:{mcp_port}/mcp");
    let password = std::env::var("OAUTH_DEMO_PASSWORD").unwrap_or_else(|_| "demo".into());

    let users = move |login: &Login<'_>| {
        (!login.username.is_empty() && login.password == password)
            .then(|| login.username.to_owned())
    };
    let auth = AuthorizationServer::new(
        AuthorizationServerConfig::new(&issuer, &mcp).scopes_supported(["mcp:tools", "mcp:admin"]),
        InMemoryStore::new(),
        users,
    )?;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--client" {
            let (Some(id), Some(redirect)) = (rest.next(), rest.next()) else {
                return Err("--client needs a client id and a redirect URI".into());
            };
            auth.register_client(RegisteredClient::public(id.as_str(), [redirect.as_str()]))
                .await?;
        }
    }
    let rs = ResourceServer::new(
        ResourceServerConfig::new(&mcp, &issuer)
            .scopes_supported(["mcp:tools"])
            .required_scopes(["mcp:tools"])
            .operation_scopes(Operation::Tool("admin".into()), ["mcp:admin"])
            .resource_name("modelctx OAuth example"),
        JwtVerifier::new(&issuer, format!("{issuer}/jwks")),
    )?;

    let server = mcp_server()?;
    let service = StreamableHttpService::new(move |transport| {
        server.serve(transport);
    });
    let app = axum::Router::new()
        .nest_service("/mcp", service.router().layer(rs.layer()))
        .merge(rs.metadata_router());

    let as_listener = tokio::net::TcpListener::bind(("127.0.0.1", as_port)).await?;
    let mcp_listener = tokio::net::TcpListener::bind(("127.0.0.1", mcp_port)).await?;
    eprintln!("authorization server: {issuer}");
    eprintln!("MCP endpoint (protected): {mcp}");
    let as_app = auth.router();
    let as_task = tokio::spawn(async move { axum::serve(as_listener, as_app).await });
    let mcp_task = tokio::spawn(async move { axum::serve(mcp_listener, app).await });
    tokio::select! {
        r = as_task => r??,
        r = mcp_task => r??,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
