//! What the tests of the server half share: loopback listeners for the servers they
//! start, and client-credentials tokens from the bundled authorization server.

use serde_json::Value;

/// A listener on a free loopback port, and its origin.
pub(crate) async fn listener() -> (tokio::net::TcpListener, String) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", l.local_addr().unwrap());
    (l, origin)
}

/// Serves `app` on `l` for the rest of the test.
pub(crate) fn serve(l: tokio::net::TcpListener, app: axum::Router) {
    tokio::spawn(async move { axum::serve(l, app).await });
}

/// A client-credentials token request to the authorization server at `issuer` by the
/// confidential client `client` (its secret `{client}-secret`), with `fields` added.
pub(crate) fn client_credentials(
    http: &reqwest::Client,
    issuer: &str,
    client: &str,
    fields: &[(&str, &str)],
) -> reqwest::RequestBuilder {
    let mut form = vec![("grant_type", "client_credentials")];
    form.extend_from_slice(fields);
    http.post(format!("{issuer}/token"))
        .basic_auth(client, Some(format!("{client}-secret")))
        .form(&form)
}

/// The access token a token request is granted.
pub(crate) async fn granted(request: reqwest::RequestBuilder) -> String {
    let answer = request.send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    body["access_token"].as_str().unwrap().to_owned()
}
