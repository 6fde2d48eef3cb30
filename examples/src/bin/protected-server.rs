//! The README's OAuth-protected server: a streamable HTTP endpoint at `http://ADDR/mcp`
//! (`ADDR` is its argument, `127.0.0.1:8080` without one) behind modelctx-oauth's
//! resource server, which takes only JWT access tokens for that URL from the
//! authorization server `ISSUER` (an environment variable: your identity provider,
//! whose keys are at `JWKS_URI`). A request without a valid token is answered 401 with
//! a `WWW-Authenticate` header that points at the protected-resource metadata, served
//! at `/.well-known/oauth-protected-resource/mcp`, from which a client finds where to
//! log in.

use modelctx::prelude::*;
use modelctx_oauth::{JwtVerifier, ResourceServer, ResourceServerConfig};

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or("127.0.0.1:8080".into());
    let (issuer, jwks) = (std::env::var("ISSUER")?, std::env::var("JWKS_URI")?);
    let config = ResourceServerConfig::new(format!("http://{addr}/mcp"), &issuer);
    let rs = ResourceServer::new(config, JwtVerifier::new(&issuer, jwks))?;
    let server = Server::builder("adder", "1.0.0").tool(add_tool())?.build();
    let app = axum::Router::new()
        .nest_service("/mcp", server.http_router().layer(rs.layer()))
        .merge(rs.metadata_router());
    axum::serve(tokio::net::TcpListener::bind(addr).await?, app).await?;
    Ok(())
}
