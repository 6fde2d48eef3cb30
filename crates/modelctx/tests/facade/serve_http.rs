//! Serving a `Server` over streamable HTTP without a factory closure: `serve_http_on`
//! until a shutdown signal, `http_router` mounted in an axum router of one's own,
//! `http_service` with a configuration, and `serve_http`'s bind failure.

use std::time::Duration;

use modelctx::prelude::*;

const WAIT: Duration = Duration::from_secs(10);

/// Says hello.
#[tool]
fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn server() -> Server {
    Server::builder("http", "1.0.0")
        .tool(hello_tool())
        .unwrap()
        .build()
}

async fn greet(url: &str) -> String {
    let transport = StreamableHttpClientTransport::new(url).unwrap();
    let client = tokio::time::timeout(WAIT, Client::builder("me", "1.0.0").connect(transport))
        .await
        .expect("connect in time")
        .expect("connect");
    let arguments = serde_json::json!({"name": "web"});
    let result = tokio::time::timeout(
        WAIT,
        client.call_tool("hello", arguments.as_object().cloned().unwrap()),
    )
    .await
    .expect("call in time")
    .expect("call");
    client.close().await;
    result.content[0].as_text().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn serve_http_on_serves_until_shutdown() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = server();
    let serving = tokio::spawn(async move {
        server
            .serve_http_on(listener, StreamableHttpServerConfig::default(), async {
                let _ = stopped.await;
            })
            .await
    });
    assert_eq!(greet(&url).await, "Hello, web!");
    stop.send(()).unwrap();
    let served = tokio::time::timeout(WAIT, serving)
        .await
        .expect("serving stops after the shutdown signal")
        .unwrap();
    assert!(served.is_ok(), "{served:?}");
}

#[tokio::test]
async fn the_router_mounts_in_an_app_of_ones_own() {
    let app = axum::Router::new().nest_service("/mcp", server().http_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(modelctx::http::hosting::serve_router(
        listener,
        app,
        Duration::from_secs(5),
        std::future::pending(),
    ));
    assert_eq!(greet(&format!("http://{addr}/mcp")).await, "Hello, web!");
}

#[tokio::test]
async fn the_service_takes_a_configuration() {
    let service = server().http_service(StreamableHttpServerConfig::default().sessionless());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = service.router();
    tokio::spawn(modelctx::http::hosting::serve_router(
        listener,
        router,
        Duration::from_secs(5),
        std::future::pending(),
    ));
    assert_eq!(greet(&url).await, "Hello, web!");
    // Stateless: no session was kept.
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn serve_http_fails_when_it_cannot_bind() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap();
    let error = tokio::time::timeout(WAIT, server().serve_http(addr))
        .await
        .expect("fails at once")
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
}
