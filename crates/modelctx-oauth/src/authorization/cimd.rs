//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, the
//! MCP 2025-11-25 registration route): a client whose `client_id` is the URL of its
//! metadata.

use serde_json::{Map, Value};

use super::{Inner, RegisteredClient, secure_or_loopback};
use crate::netguard::is_private;

/// The largest document read.
const MAX_DOCUMENT: usize = 64 * 1024;

/// Whether `client_id` is a URL this server would fetch a document from.
pub(crate) fn is_document_url(inner: &Inner, client_id: &str) -> bool {
    if !inner.config.client_metadata_documents {
        return false;
    }
    let Ok(url) = url::Url::parse(client_id) else {
        return false;
    };
    fetchable(inner, &url) && url.path() != "/" && url.fragment().is_none()
}

/// Whether this server may fetch `url` on a client's behalf (a metadata document, a
/// client's `jwks_uri`): `https` on a public host, or — with
/// `private_network_documents` — also loopback `http` and private addresses; never
/// with credentials in the URL.
pub(crate) fn fetchable(inner: &Inner, url: &url::Url) -> bool {
    let scheme_ok = url.scheme() == "https"
        || (inner.config.private_network_documents && secure_or_loopback(url));
    // Names go through the guarded resolver; IP literals and `localhost` never reach
    // it, so they are checked here.
    let private_host = match url.host() {
        Some(url::Host::Ipv4(ip)) => is_private(ip.into()),
        Some(url::Host::Ipv6(ip)) => is_private(ip.into()),
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        None => true,
    };
    scheme_ok
        && (inner.config.private_network_documents || !private_host)
        && url.username().is_empty()
        && url.password().is_none()
}

/// Fetches and checks the document at `client_id`; the client it describes, or why not.
pub(crate) async fn fetch(inner: &Inner, client_id: &str) -> Result<RegisteredClient, String> {
    let mut response = inner
        .documents
        .get(client_id)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|_| "the client's metadata document could not be fetched".to_owned())?;
    if !response.status().is_success() {
        return Err(format!(
            "the client's metadata document answered HTTP {}",
            response.status().as_u16()
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| "the client's metadata document could not be read".to_owned())?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err("the client's metadata document is too large".into());
        }
        body.extend_from_slice(&chunk);
    }
    let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(&body) else {
        return Err("the client's metadata document is not a JSON object".into());
    };
    client_of(client_id, doc)
}

/// The public client a document describes.
fn client_of(client_id: &str, doc: Map<String, Value>) -> Result<RegisteredClient, String> {
    if doc.get("client_id").and_then(Value::as_str) != Some(client_id) {
        return Err("the metadata document's client_id is not its own URL".into());
    }
    if doc.contains_key("client_secret") || doc.contains_key("client_secret_expires_at") {
        return Err("a metadata document must not carry a client secret".into());
    }
    match doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        None | Some("none") => {}
        Some(_) => {
            return Err(
                "a metadata-document client must be public (token_endpoint_auth_method none)"
                    .into(),
            );
        }
    }
    let redirect_uris: Vec<String> = doc
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let valid = |u: &String| {
        url::Url::parse(u).is_ok_and(|u| secure_or_loopback(&u) && u.fragment().is_none())
    };
    if redirect_uris.is_empty() || !redirect_uris.iter().all(valid) {
        return Err("the metadata document needs redirect URIs, https or loopback http".into());
    }
    let mut client = RegisteredClient::public(client_id, redirect_uris);
    client.metadata = doc;
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn documents_must_name_themselves_and_stay_public() {
        let url = "https://app.example/client.json";
        let good = doc(serde_json::json!({"client_id": url, "client_name": "App",
            "redirect_uris": ["http://127.0.0.1:3000/cb"]}));
        let client = client_of(url, good).unwrap();
        assert_eq!(client.redirect_uris, ["http://127.0.0.1:3000/cb"]);
        assert!(client.secret_hash.is_none());
        for bad in [
            serde_json::json!({"client_id": "https://other.example/c.json", "redirect_uris": ["https://a/cb"]}),
            serde_json::json!({"client_id": url}),
            serde_json::json!({"client_id": url, "redirect_uris": ["http://evil.example/cb"]}),
            serde_json::json!({"client_id": url, "redirect_uris": ["https://a/cb"], "client_secret": "x"}),
            serde_json::json!({"client_id": url, "redirect_uris": ["https://a/cb"],
                "token_endpoint_auth_method": "client_secret_basic"}),
        ] {
            assert!(client_of(url, doc(bad.clone())).is_err(), "{bad}");
        }
    }
}
