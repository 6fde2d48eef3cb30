//! A client that logs in interactively to the `oauth-server` example: the server answers
//! 401, the client discovers its authorization server, registers itself, and sends you
//! to the consent page; once you approve, it calls `whoami`, then `admin`, which needs
//! a wider scope (a 403 that makes the client ask you again: a step-up).
//!
//! Run the server first (`cargo run -p modelctx-examples --bin oauth-server`), then
//! `cargo run -p modelctx-examples --bin oauth-client -- [URL] [--store FILE] [--dpop]`
//! (default `http://127.0.0.1:8080/mcp`). Open the URL it prints, log in with any user
//! name and the password `demo`. With `--store FILE` the registration and tokens are kept
//! in that file (a secret: keep it private), and a second run needs no login; `--dpop`
//! binds the tokens to a key (DPoP), kept there too.

use std::sync::Arc;

use modelctx::client::Client;
use modelctx::http::StreamableHttpClientTransport;
use modelctx::types::JsonObject;
use modelctx_oauth::{FileCredentialStore, LoopbackRedirect, OAuthClient};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut url = "http://127.0.0.1:8080/mcp".to_owned();
    let mut store = None;
    let mut dpop = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--store" => store = Some(args.next().ok_or("--store needs a file")?),
            "--dpop" => dpop = true,
            other if !other.starts_with('-') => url = other.to_owned(),
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }

    // The redirect comes back to a one-shot listener on 127.0.0.1; the URL to open is
    // printed on standard error (pass `on_url` a closure to open a browser instead).
    let redirect = LoopbackRedirect::bind(0).await?;
    let mut oauth = OAuthClient::builder(&url)
        .authorization_code(redirect)
        .client_name("modelctx oauth-client example", None)
        .dpop(dpop);
    if let Some(path) = store {
        oauth = oauth.store(Arc::new(FileCredentialStore::new(path)));
    }
    let oauth = oauth.build()?;

    let transport = StreamableHttpClientTransport::builder(&url)
        .auth(oauth.clone())
        .build()?;
    let client = Client::builder("oauth-client-example", "1.0.0")
        .connect(transport)
        .await?;
    println!(
        "connected to {} (protocol {})",
        client.server_info().name,
        client.protocol_version()
    );

    let who = client.call_tool("whoami", JsonObject::new()).await?;
    println!("whoami: {}", serde_json::to_string(&who.content)?);
    // `admin` needs the scope `mcp:admin`: the server refuses with 403
    // insufficient_scope, and the client asks you to authorize the wider scope.
    match client.call_tool("admin", JsonObject::new()).await {
        Ok(done) => println!("admin: {}", serde_json::to_string(&done.content)?),
        Err(e) => println!("admin refused: {e}"),
    }
    if let Some(tokens) = oauth.tokens().await {
        println!(
            "token type {}, scopes {}",
            tokens.token_type,
            tokens.scope.as_deref().unwrap_or("(as granted)")
        );
    }
    client.close().await;
    Ok(())
}
