//! The binary against protected servers: logging in when the server asks (the bundled
//! authorization server behind the resource server), and HTTPS with a CA given by flag or
//! environment, or the clear failure of a build without TLS.

use std::process::Stdio;

use modelctx::http::StreamableHttpService;
use modelctx::server::{Context, Server, ToolDef};

#[cfg(not(feature = "rustls"))]
use crate::serve_http;
#[cfg(feature = "rustls")]
use crate::server;
use crate::{BIN, WAIT, modelctx, modelctx_with_env};

/// The subject of the verified caller that reached the tool (`?` when the token names
/// none).
fn subject_of(cx: &Context) -> Result<String, &'static str> {
    let caller = cx.extensions().get::<modelctx_oauth::AuthInfo>();
    let subject = caller.ok_or("no verified caller")?.subject.clone();
    Ok(subject.unwrap_or_else(|| "?".to_owned()))
}

/// A server behind the OAuth resource server, with the bundled authorization server
/// (users: any name, password `pw`). Returns the MCP URL.
async fn serve_protected() -> String {
    use modelctx::types::{JsonObject, Tool};
    use modelctx_oauth::{
        AuthorizationServer, AuthorizationServerConfig, InMemoryStore, Login, ResourceServer,
        ResourceServerConfig,
    };
    let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let (mcp_listener, mcp) = crate::mcp_listener("http").await;
    let issuer = format!("http://{}", as_listener.local_addr().expect("addr"));
    let users = |login: &Login<'_>| (login.password == "pw").then(|| login.username.to_owned());
    let auth = AuthorizationServer::new(
        AuthorizationServerConfig::new(&issuer, &mcp).scopes_supported(["mcp:tools"]),
        InMemoryStore::new(),
        users,
    )
    .expect("authorization server");
    let rs = ResourceServer::new(
        ResourceServerConfig::new(&mcp, &issuer)
            .scopes_supported(["mcp:tools"])
            .required_scopes(["mcp:tools"]),
        auth.verifier(),
    )
    .expect("resource server");
    let whoami = ToolDef::with_schema(
        Tool::without_arguments("whoami"),
        |_: JsonObject, cx: Context| async move {
            Ok::<_, String>(format!("you are {}", subject_of(&cx)?))
        },
    );
    let server = Server::builder("cli-test-oauth", "1.0.0")
        .tool(whoami)
        .expect("tool")
        .build();
    let service = StreamableHttpService::new(move |transport| {
        server.serve(transport);
    });
    let app = axum::Router::new()
        .nest_service("/mcp", service.router().layer(rs.layer()))
        .merge(rs.metadata_router());
    let as_app = auth.router();
    tokio::spawn(async move { axum::serve(as_listener, as_app).await });
    tokio::spawn(async move { axum::serve(mcp_listener, app).await });
    mcp
}

/// The user: opens the authorization URL, logs in as `alice` on the consent page, and
/// follows the redirect back to the CLI's loopback listener.
async fn log_in(authorization_url: &str) {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("browser");
    let page = browser
        .get(authorization_url)
        .send()
        .await
        .expect("the consent page")
        .text()
        .await
        .expect("page text");
    let attr = |after: &str| -> String {
        let start = page
            .find(after)
            .unwrap_or_else(|| panic!("no {after} in {page}"))
            + after.len();
        page[start..]
            .split('"')
            .next()
            .unwrap_or_default()
            .replace("&amp;", "&")
    };
    let action = attr("<form method=\"post\" action=\"");
    let txn = attr("name=\"txn\" value=\"");
    let approved = browser
        .post(&action)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "txn={txn}&username=alice&password=pw&decision=approve"
        ))
        .send()
        .await
        .expect("the consent POST");
    let callback = approved
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .unwrap_or_else(|| panic!("no redirect after consent ({})", approved.status()))
        .to_owned();
    browser
        .get(&callback)
        .send()
        .await
        .expect("the loopback callback");
}

pub(crate) async fn logs_in_when_the_server_asks() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let url = serve_protected().await;

    let run = modelctx(&["call", "whoami", "--no-login", &url], &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);

    let mut child = tokio::process::Command::new(BIN)
        .args(["call", "whoami", &url])
        .env_remove("MODELCTX_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("modelctx runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let prefix = "Open this URL in a browser to authorize: ";
    let session = async {
        let mut seen = Vec::new();
        while let Some(line) = stderr.next_line().await.expect("stderr") {
            if let Some(at) = line.find(prefix) {
                log_in(&line[at + prefix.len()..]).await;
                break;
            }
            seen.push(line);
        }
        let mut out = String::new();
        stdout.read_to_string(&mut out).await.expect("stdout");
        let status = child.wait().await.expect("exit");
        (status.code(), out, seen)
    };
    let (code, out, seen) = tokio::time::timeout(WAIT, session)
        .await
        .expect("the login and the call finish");
    assert_eq!(code, Some(0), "stderr before the login: {seen:?}");
    assert_eq!(out, "you are alice\n");
}

/// A CA made at test time, as a PEM file, and a streamable HTTP server on loopback
/// behind `serve_tls` with a certificate for `127.0.0.1` it signed.
#[cfg(feature = "rustls")]
async fn serve_https() -> (String, std::path::PathBuf) {
    use modelctx::http::tls;
    let ca = modelctx_test::TestCa::for_names(&["127.0.0.1"]);
    let config = tls::server_config_from_pem(ca.chain_pem.as_bytes(), ca.key_pem.as_bytes())
        .expect("TLS config");

    let dir = std::env::temp_dir().join(format!("modelctx-cli-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).expect("write the CA");

    let (listener, url) = crate::mcp_listener("https").await;
    let server = server("cli-test-https");
    let service = StreamableHttpService::new(move |transport| {
        server.serve(transport);
    });
    tokio::spawn(service.serve_tls(listener, config, std::future::pending()));
    (url, ca_file)
}

/// With `--features rustls`: an `https://` server whose certificate a private CA signed
/// is reached once that CA is given (`--ca-cert` or `$MODELCTX_CA_CERT`), and refused,
/// saying why, without it.
#[cfg(feature = "rustls")]
pub(crate) async fn https_with_a_ca_given_by_flag_or_env() {
    let (url, ca_file) = serve_https().await;
    let ca = ca_file.to_string_lossy().into_owned();

    let run = modelctx(
        &["call", "echo", "text=secure", "--ca-cert", &ca, &url],
        &[],
    )
    .await;
    run.assert_printed("secure\n");
    let run = modelctx_with_env(
        &["list", "tools", "--json", &url],
        &[],
        &[("MODELCTX_CA_CERT", &ca)],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["serverInfo"]["name"], "cli-test-https");

    // The built-in roots do not include the test CA.
    let run = modelctx(&["list", "--no-login", &url], &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("certificate") && run.stderr.contains("UnknownIssuer"),
        "{}",
        run.stderr
    );
    // A CA file that cannot be used is a usage error, before any connection.
    let missing = format!("{ca}.missing");
    let run = modelctx(&["list", "--ca-cert", &missing, &url], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);
    let not_pem = ca_file.with_file_name("not.pem");
    std::fs::write(&not_pem, "no certificate here").expect("write");
    let run = modelctx(
        &["list", "--ca-cert", &not_pem.to_string_lossy(), &url],
        &[],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no certificate"), "{}", run.stderr);
}

/// Without the `rustls` feature: an `https://` target and `--ca-cert` are refused with
/// the remedy, before any connection is tried.
#[cfg(not(feature = "rustls"))]
pub(crate) async fn https_needs_the_rustls_feature() {
    for args in [
        &["list", "https://127.0.0.1:1/mcp"][..],
        &["list", "--ca-cert", "ca.pem", "http://127.0.0.1:1/mcp"][..],
    ] {
        let run = modelctx(args, &[]).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("built without TLS") && run.stderr.contains("--features rustls"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // The variable alone does not break plain HTTP (it is for TLS builds).
    let (url, _stop) = serve_http().await;
    let run = modelctx_with_env(
        &["list", "tools", "--json", &url],
        &[],
        &[("MODELCTX_CA_CERT", "/nonexistent/ca.pem")],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
}
