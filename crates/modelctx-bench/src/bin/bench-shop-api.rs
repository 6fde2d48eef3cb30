//! The small HTTP API the shop tools call (see `modelctx_bench::shop`).
//!
//! ```text
//! bench-shop-api    serve on 127.0.0.1 (an ephemeral port, printed as "listening ADDR"
//!                   on stdout) until stdin closes:
//!                   GET /products/search?category=&min_price=&max_price=&limit=
//!                   GET /products/{id}
//!                   POST /cart/calculate   {"user_id": ..., "items": [{"product_id", "quantity"}]}
//! ```

use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use modelctx_bench::shop::Catalog;
use serde_json::Value;

#[tokio::main]
async fn main() -> ExitCode {
    modelctx_bench::exit("bench-shop-api", serve().await)
}

async fn serve() -> Result<(), String> {
    let catalog = Arc::new(Catalog::new());
    modelctx_bench::serve_loopback(|listener| async move {
        loop {
            let (stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
            let _ = stream.set_nodelay(true);
            let catalog = catalog.clone();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let service = hyper::service::service_fn(move |request| {
                    let catalog = catalog.clone();
                    async move { Ok::<_, Infallible>(answer(&catalog, request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    })
    .await
}

async fn answer(catalog: &Catalog, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let method = request.method().clone();
    let found = match (method, path.as_str()) {
        (Method::GET, "/products/search") => {
            let param = |name: &str| {
                query
                    .split('&')
                    .filter_map(|pair| pair.split_once('='))
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value)
            };
            let number = |name: &str| param(name).and_then(|v| v.parse::<f64>().ok());
            Some(catalog.search(
                param("category").unwrap_or("Electronics"),
                number("min_price").unwrap_or(0.0),
                number("max_price").unwrap_or(0.0),
                param("limit").and_then(|v| v.parse().ok()).unwrap_or(10),
            ))
        }
        (Method::GET, path) => path
            .strip_prefix("/products/")
            .and_then(|id| id.parse().ok())
            .and_then(|id| catalog.product(id).cloned()),
        (Method::POST, "/cart/calculate") => match request.into_body().collect().await {
            Ok(body) => serde_json::from_slice::<Value>(&body.to_bytes())
                .ok()
                .map(|order| catalog.calculate(&order)),
            Err(_) => None,
        },
        _ => None,
    };
    let (status, body) = match found {
        Some(value) => (StatusCode::OK, value.to_string()),
        None => (StatusCode::NOT_FOUND, r#"{"error":"not found"}"#.to_owned()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}
