//! The guarded HTTP client of discovery, registration and token requests: `https` only
//! (plain `http` for loopback hosts), redirects within the same origin only, bounded
//! bodies, a time limit per exchange.
//!
//! A private-network guard refuses private addresses, on unless the MCP server itself is
//! local.

use std::net::IpAddr;
use std::time::Duration;

use http::HeaderMap;
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;

use super::error::{ErrorKind, OAuthError, excerpt};
use crate::body::{BodyError, read_bounded};
use crate::netguard::PublicOnly;
pub(crate) use crate::netguard::is_private;

/// An answer read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn json<T: DeserializeOwned>(&self, what: &str) -> Result<T, OAuthError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            OAuthError::new(ErrorKind::InvalidResponse, format!("invalid {what}: {e}"))
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    max_body: usize,
    timeout: Duration,
    /// The private-network guard: refuse non-public IP literals (names are checked
    /// by the default client's resolver).
    guard: bool,
}

/// A client that follows redirects only within the origin of the first request, and
/// with `guard`, connects to public addresses only.
pub(crate) fn default_client(guard: bool) -> Result<reqwest::Client, OAuthError> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if attempt.previous().len() >= 5 || !same_origin {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    let mut builder = reqwest::Client::builder().redirect(policy);
    if guard {
        builder = builder.dns_resolver(std::sync::Arc::new(PublicOnly));
    }
    builder.build().map_err(|e| {
        OAuthError::new(
            ErrorKind::Config,
            format!("cannot build the HTTP client: {e}"),
        )
    })
}

impl Fetcher {
    pub(crate) fn new(
        client: reqwest::Client,
        max_body: usize,
        timeout: Duration,
        guard: bool,
    ) -> Self {
        Self {
            client,
            max_body,
            timeout,
            guard,
        }
    }

    /// Refuses a URL the client must not fetch (see [`check_url`]), and with the
    /// guard on, a non-public IP literal.
    fn check(&self, url: &Url, what: &str) -> Result<(), OAuthError> {
        check_url(url, what)?;
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        let local_name = matches!(url.host(), Some(url::Host::Domain(_))) && is_loopback(url);
        if self.guard && (ip.is_some_and(is_private) || local_name) {
            return Err(OAuthError::new(
                ErrorKind::InsecureUrl,
                format!("the {what} {url} is on a private network (private-network guard)"),
            ));
        }
        Ok(())
    }

    /// GETs `url` (checked first) and reads the answer, whatever its status.
    pub(crate) async fn get(&self, url: &Url) -> Result<Answer, OAuthError> {
        self.check(url, "metadata URL")?;
        let rb = self
            .client
            .request(Method::GET, url.clone())
            .header(http::header::ACCEPT, "application/json");
        self.send(rb).await
    }

    /// POSTs a form to `url` with extra headers.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        headers: HeaderMap,
        form: &[(&str, &str)],
    ) -> Result<Answer, OAuthError> {
        self.check(url, "endpoint")?;
        let body = encode_form(form);
        let rb = self
            .client
            .request(Method::POST, url.clone())
            .headers(headers)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        self.send(rb).await
    }

    /// POSTs JSON to `url`.
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<Answer, OAuthError> {
        self.check(url, "endpoint")?;
        let rb = self
            .client
            .request(Method::POST, url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(body.to_string());
        self.send(rb).await
    }

    async fn send(&self, rb: reqwest::RequestBuilder) -> Result<Answer, OAuthError> {
        let exchange = async {
            let response = rb.send().await.map_err(|e| {
                OAuthError::new(ErrorKind::Http, format!("HTTP request failed: {e}"))
            })?;
            let status = response.status();
            if status.is_redirection() {
                return Err(OAuthError::new(
                    ErrorKind::Http,
                    "refused a redirect to another origin",
                )
                .with_status(status.as_u16()));
            }
            if response
                .content_length()
                .is_some_and(|n| n > self.max_body as u64)
            {
                return Err(too_large(self.max_body));
            }
            let headers = response.headers().clone();
            let body = read_bounded(response, self.max_body)
                .await
                .map_err(|e| match e {
                    BodyError::Read(e) => {
                        OAuthError::new(ErrorKind::Http, format!("reading the answer failed: {e}"))
                    }
                    BodyError::TooLarge => too_large(self.max_body),
                })?;
            Ok(Answer {
                status,
                headers,
                body,
            })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| {
                OAuthError::new(
                    ErrorKind::Timeout,
                    format!("no complete answer within {:?}", self.timeout),
                )
            })?
    }
}

fn too_large(max: usize) -> OAuthError {
    OAuthError::new(
        ErrorKind::InvalidResponse,
        format!("the answer is larger than {max} bytes"),
    )
}

/// `application/x-www-form-urlencoded`.
pub(crate) fn encode_form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// One form-urlencoded component (also what `client_secret_basic` applies to the client
/// id and secret, RFC 6749 §2.3.1).
pub(crate) fn form_escape(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Whether `url` points at this machine (`localhost`, 127.0.0.0/8, `::1`).
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// Refuses a URL this client must not fetch or send a user to: anything but `https`,
/// plain `http` except for loopback hosts, and URLs with credentials or a fragment.
pub(crate) fn check_url(url: &Url, what: &str) -> Result<(), OAuthError> {
    let ok_scheme = match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    };
    if !ok_scheme {
        return Err(OAuthError::new(
            ErrorKind::InsecureUrl,
            format!("the {what} {url} is not https (plain http is allowed for loopback only)"),
        ));
    }
    if url.host().is_none() || !url.username().is_empty() || url.password().is_some() {
        return Err(OAuthError::new(
            ErrorKind::InsecureUrl,
            format!("the {what} must have a host and no credentials"),
        ));
    }
    if url.fragment().is_some() {
        return Err(OAuthError::new(
            ErrorKind::InsecureUrl,
            format!("the {what} {url} has a fragment"),
        ));
    }
    Ok(())
}

/// Parses and checks a URL that came from a server or the configuration.
pub(crate) fn parse_url(text: &str, what: &str) -> Result<Url, OAuthError> {
    let url = Url::parse(text).map_err(|e| {
        OAuthError::new(
            ErrorKind::InvalidResponse,
            format!("invalid {what} {text:?}: {e}"),
        )
    })?;
    check_url(&url, what)?;
    Ok(url)
}

/// The OAuth error of a refused request (`{"error": …, "error_description": …}`), as an
/// [`OAuthError`] of `kind` carrying the status and code.
pub(crate) fn oauth_failure(kind: ErrorKind, what: &str, answer: &Answer) -> OAuthError {
    #[derive(serde::Deserialize)]
    struct Body {
        error: Option<String>,
        error_description: Option<String>,
    }
    let status = answer.status.as_u16();
    match serde_json::from_slice::<Body>(&answer.body) {
        Ok(Body {
            error: Some(code),
            error_description,
        }) => {
            let mut message = format!("{what} refused: {code}");
            if let Some(d) = error_description {
                message.push_str(": ");
                message.push_str(&excerpt(d.as_bytes()));
            }
            OAuthError::new(kind, message)
                .with_status(status)
                .with_oauth_error(code)
        }
        _ => OAuthError::new(kind, format!("{what} failed: {}", excerpt(&answer.body)))
            .with_status(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "100.128.0.1"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn guard_refuses_private_literals_without_connecting() {
        let fetcher = Fetcher::new(
            default_client(true).unwrap(),
            1024,
            Duration::from_secs(1),
            true,
        );
        for url in [
            "https://10.0.0.1/.well-known/x",
            "https://[fd00::1]/x",
            "http://127.0.0.1:9/x",
            "http://localhost:9/x",
        ] {
            let e = fetcher.get(&Url::parse(url).unwrap()).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InsecureUrl, "{url}");
        }
        let e = fetcher
            .get(&Url::parse("http://example.com/x").unwrap())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InsecureUrl);
    }

    #[test]
    fn forms_are_encoded() {
        assert_eq!(
            encode_form(&[("a b", "c&d=é"), ("x", "")]),
            "a+b=c%26d%3D%C3%A9&x="
        );
    }
}
