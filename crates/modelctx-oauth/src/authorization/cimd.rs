//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, the
//! MCP 2025-11-25 registration route): a client whose `client_id` is the URL of its
//! metadata.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{Inner, RegisteredClient, secure_or_loopback};
use crate::body::read_bounded;
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

/// The documents fetched lately whose `Cache-Control` let them be reused, with when
/// each goes stale.
#[derive(Default)]
pub(crate) struct DocumentCache {
    entries: Mutex<HashMap<String, (RegisteredClient, Instant)>>,
}

/// The most documents kept at once.
const MAX_CACHED: usize = 1024;
/// The longest a document is kept, whatever its `max-age` says.
const MAX_AGE: Duration = Duration::from_secs(24 * 3600);

impl DocumentCache {
    fn fresh(&self, client_id: &str) -> Option<RegisteredClient> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(client_id) {
            Some((client, stale_at)) if Instant::now() < *stale_at => Some(client.clone()),
            Some(_) => {
                entries.remove(client_id);
                None
            }
            None => None,
        }
    }

    fn keep(&self, client_id: &str, client: &RegisteredClient, lifetime: Option<Duration>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Some(lifetime) = lifetime.filter(|l| !l.is_zero()) else {
            entries.remove(client_id);
            return;
        };
        let now = Instant::now();
        if entries.len() >= MAX_CACHED {
            entries.retain(|_, (_, stale_at)| now < *stale_at);
            if entries.len() >= MAX_CACHED {
                entries.clear();
            }
        }
        entries.insert(
            client_id.to_owned(),
            (client.clone(), now + lifetime.min(MAX_AGE)),
        );
    }
}

/// How long a response may be reused, by its `Cache-Control` (RFC 9111 §5.2.2):
/// `max-age` less the `Age` it already has; `None` when it says nothing of it, or
/// forbids reuse without a check (`no-store`, `no-cache`).
fn lifetime(headers: &http::HeaderMap) -> Option<Duration> {
    let mut max_age = None;
    for value in headers.get_all(http::header::CACHE_CONTROL) {
        let value = value.to_str().ok()?;
        for directive in value.split(',') {
            let directive = directive.trim().to_ascii_lowercase();
            let (name, argument) = directive
                .split_once('=')
                .map_or((directive.as_str(), None), |(n, a)| {
                    (n.trim(), Some(a.trim().trim_matches('"')))
                });
            match name {
                "no-store" | "no-cache" => return None,
                "max-age" => max_age = Some(argument?.parse::<u64>().ok()?),
                _ => {}
            }
        }
    }
    let age = headers
        .get(http::header::AGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    Some(Duration::from_secs(max_age?.saturating_sub(age)))
}

/// Fetches and checks the document at `client_id`; the client it describes, or why not.
/// A document whose `Cache-Control` allows it is reused until stale instead of being
/// fetched again; one that says nothing is fetched every time.
pub(crate) async fn fetch(inner: &Inner, client_id: &str) -> Result<RegisteredClient, String> {
    if let Some(client) = inner.document_cache.fresh(client_id) {
        return Ok(client);
    }
    let (client, lifetime) = fetch_anew(inner, client_id).await?;
    inner.document_cache.keep(client_id, &client, lifetime);
    Ok(client)
}

/// The document at `client_id`, fetched, with how long it may be reused.
async fn fetch_anew(
    inner: &Inner,
    client_id: &str,
) -> Result<(RegisteredClient, Option<Duration>), String> {
    let response = inner
        .documents
        .get(client_id)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|_| "the client's metadata document could not be fetched".to_owned())?;
    let lifetime = lifetime(response.headers());
    if !response.status().is_success() {
        return Err(format!(
            "the client's metadata document answered HTTP {}",
            response.status().as_u16()
        ));
    }
    let body = read_bounded(response, MAX_DOCUMENT)
        .await
        .map_err(|e| e.describe("the client's metadata document"))?;
    let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(&body) else {
        return Err("the client's metadata document is not a JSON object".into());
    };
    client_of(client_id, doc).map(|client| (client, lifetime))
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
    fn cache_control_says_how_long_a_document_is_reused() {
        let headers = |values: &[(&str, &str)]| {
            let mut h = http::HeaderMap::new();
            for (name, value) in values {
                h.append(
                    http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    http::HeaderValue::from_str(value).unwrap(),
                );
            }
            h
        };
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(lifetime(&headers(&[])), None);
        assert_eq!(
            lifetime(&headers(&[("cache-control", "public, max-age=60")])),
            secs(60)
        );
        assert_eq!(
            lifetime(&headers(&[("cache-control", "max-age=60"), ("age", "15")])),
            secs(45)
        );
        assert_eq!(
            lifetime(&headers(&[("cache-control", "max-age=60, no-cache")])),
            None
        );
        assert_eq!(lifetime(&headers(&[("cache-control", "no-store")])), None);
        assert_eq!(
            lifetime(&headers(&[("cache-control", "max-age=soon")])),
            None
        );
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
