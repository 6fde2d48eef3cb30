//! Streamable HTTP over TLS, end to end: a certificate authority and a server
//! certificate made at test time (rcgen, ring), a server behind `serve_tls`, our client
//! trusting the CA through `add_root_certificate` and calling a tool over `https://`;
//! a client that does not trust it fails, saying why. The legacy HTTP+SSE transport
//! likewise.

use std::sync::Arc;
use std::time::Duration;

use modelctx::client::{Client, ClientBuilder};
use modelctx::server::Server;
use modelctx::session::SessionError;
use modelctx::transport::Transport;
use modelctx::types::JsonObject;
use modelctx_http::tls::rustls::pki_types::CertificateDer;
use modelctx_http::{StreamableHttpClientTransport, StreamableHttpService, tls};
use modelctx_test::within;
use modelctx_test::{TestCa, text_of};
use tokio::net::TcpListener;

const LIMIT: Duration = Duration::from_secs(20);

/// A CA, and a certificate for `localhost` and `127.0.0.1` it signed.
fn certificates() -> TestCa {
    TestCa::for_names(&["localhost", "127.0.0.1"])
}

fn server() -> Server {
    modelctx_test::one_tool_server("tls-server", "secure-echo", "over TLS")
}

/// The TLS configuration that presents `certs`' server certificate.
fn server_tls(certs: &TestCa) -> Arc<tls::rustls::ServerConfig> {
    tls::server_config_from_pem(certs.chain_pem.as_bytes(), certs.key_pem.as_bytes()).unwrap()
}

/// A listener on a loopback port, and the `https://` URL of `path` on it.
async fn https_listener(path: &str) -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://127.0.0.1:{}{path}",
        listener.local_addr().unwrap().port()
    );
    (listener, url)
}

/// Serves the MCP endpoint over HTTPS on a loopback port; returns its URL.
async fn serve_https(certs: &TestCa) -> String {
    let config = server_tls(certs);
    let server = server();
    let service = StreamableHttpService::new(move |t| {
        server.serve(t);
    });
    let (listener, url) = https_listener("/mcp").await;
    tokio::spawn(service.serve_tls(listener, config, std::future::pending()));
    url
}

/// Connects the client `builder` makes over `transport`.
async fn connect(
    builder: ClientBuilder,
    transport: impl Transport,
) -> Result<Client, SessionError> {
    within(LIMIT, "the client to connect", builder.connect(transport)).await
}

/// Calls `secure-echo`; the text it answered.
async fn secure_echo(client: &Client) -> String {
    let result = within(
        LIMIT,
        "the call",
        client.call_tool("secure-echo", JsonObject::new()),
    )
    .await
    .unwrap();
    text_of(&result)
}

#[tokio::test]
async fn a_client_that_trusts_the_ca_calls_a_tool_over_https() {
    let certs = certificates();
    let url = serve_https(&certs).await;

    // The CA as a PEM file holds it, read the documented way.
    let roots = tls::certificates_from_pem(certs.ca_pem.as_bytes()).unwrap();
    assert_eq!(roots, [CertificateDer::from(certs.ca_der.clone())]);
    let transport = StreamableHttpClientTransport::builder(&url)
        .add_root_certificate(roots[0].clone())
        .build()
        .unwrap();
    let client = connect(Client::builder("tls-client", "1.0.0"), transport)
        .await
        .expect("connected over https");
    assert_eq!(secure_echo(&client).await, "over TLS");
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_fails_clearly() {
    let url = serve_https(&certificates()).await;

    // The built-in web-PKI roots do not include our test CA.
    let transport = StreamableHttpClientTransport::new(&url).unwrap();
    let error = within(
        LIMIT,
        "the refusal",
        Client::builder("tls-client", "1.0.0").connect(transport),
    )
    .await
    .expect_err("an untrusted certificate must not connect");
    let text = error.to_string();
    assert!(
        text.contains("certificate") && text.contains("UnknownIssuer"),
        "the error should say the certificate was not trusted: {text}"
    );
}

#[tokio::test]
async fn a_plain_http_client_on_the_tls_port_gets_no_answer_and_the_server_survives() {
    let certs = certificates();
    let url = serve_https(&certs).await;

    // Plain HTTP to the TLS port: the handshake fails, that connection ends.
    let plain = url.replacen("https://", "http://", 1);
    let transport = StreamableHttpClientTransport::new(&plain).unwrap();
    let refused = within(
        LIMIT,
        "the plain-text attempt",
        Client::builder("plain", "1.0.0").connect(transport),
    )
    .await;
    assert!(refused.is_err(), "plain HTTP on a TLS port must fail");

    // The server still serves HTTPS.
    let transport = StreamableHttpClientTransport::builder(&url)
        .add_root_certificate(CertificateDer::from(certs.ca_der))
        .build()
        .unwrap();
    let client = connect(Client::builder("tls-client", "1.0.0"), transport)
        .await
        .unwrap();
    assert_eq!(secure_echo(&client).await, "over TLS");
}

#[tokio::test]
async fn the_legacy_sse_transport_serves_and_connects_over_https() {
    let certs = certificates();
    let config = server_tls(&certs);
    let server = server();
    let service = modelctx_sse::SseService::new(move |t| {
        server.serve(t);
    });
    let (listener, url) = https_listener("/sse").await;
    tokio::spawn(service.serve_tls(listener, config, std::future::pending()));

    let transport = within(
        LIMIT,
        "the event stream",
        modelctx_sse::SseClientTransport::builder(&url)
            .add_root_certificate(CertificateDer::from(certs.ca_der))
            .connect(),
    )
    .await
    .expect("the SSE stream opens over https");
    let client = connect(
        Client::builder("tls-client", "1.0.0").mode(modelctx::client::ConnectMode::Handshake),
        transport,
    )
    .await
    .unwrap();
    assert_eq!(secure_echo(&client).await, "over TLS");

    // Without the CA: the stream does not open, and the error says why.
    let error = within(
        LIMIT,
        "the refusal",
        modelctx_sse::SseClientTransport::connect(&url),
    )
    .await
    .expect_err("an untrusted certificate must not connect");
    assert!(error.to_string().contains("UnknownIssuer"), "{error}");
}
