//! The user's side of the authorization-code flow: the application sends the user to
//! the authorization URL and hands back the redirect's parameters. A ready handler
//! for command-line apps listens on 127.0.0.1.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::error::{ErrorKind, OAuthError};

/// The parameters of an authorization response (the query of the redirect to the
/// client's redirect URI): `code`, `state`, `iss`, or `error` and `error_description`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// The parameters, in order.
    pub params: Vec<(String, String)>,
}

impl fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The code is a credential until it is redeemed.
        let shown: Vec<(&str, &str)> = self
            .params
            .iter()
            .map(|(k, v)| {
                let v = if k == "code" {
                    "<redacted>"
                } else {
                    v.as_str()
                };
                (k.as_str(), v)
            })
            .collect();
        f.debug_struct("AuthorizationResponse")
            .field("params", &shown)
            .finish()
    }
}

impl AuthorizationResponse {
    /// The parameters of a query string (`code=…&state=…`).
    pub fn from_query(query: &str) -> Self {
        Self {
            params: url::form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        }
    }

    /// The parameters of the redirect URL the authorization server sent the user to.
    pub fn from_redirect_url(url: &str) -> Result<Self, OAuthError> {
        let url = url::Url::parse(url).map_err(|e| {
            OAuthError::new(
                ErrorKind::Authorization,
                format!("the redirect URL is not valid: {e}"),
            )
        })?;
        Ok(Self::from_query(url.query().unwrap_or_default()))
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn count(&self, name: &str) -> usize {
        self.params.iter().filter(|(k, _)| k == name).count()
    }

    pub(crate) fn is_ambiguous(&self) -> bool {
        ["code", "state", "iss", "error"]
            .iter()
            .any(|n| self.count(n) > 1)
    }
}

/// Sends the user to the authorization server and brings back its answer. The
/// application implements this for its UI (a browser, a web app's own callback route);
/// [`LoopbackRedirect`] is a ready one for command-line apps.
///
/// The time the user takes is not bounded by the MCP request's own timeout; bound it
/// here (the loopback handler waits five minutes by default).
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// The redirect URI registered for the client and sent with each authorization
    /// request.
    fn redirect_uri(&self) -> String;

    /// Sends the user to `authorization_url` and resolves with the parameters of the
    /// redirect back to [`redirect_uri`](Self::redirect_uri). The OAuth client checks
    /// them (`state`, `iss`, `error`).
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>>;
}

type Announce = Arc<dyn Fn(&str) + Send + Sync>;

/// An [`AuthorizationHandler`] for command-line apps: a one-shot HTTP listener on
/// `127.0.0.1` whose `/callback` receives the redirect. It does not open a browser
/// itself: it shows the URL (on standard error by default, or through
/// [`on_url`](Self::on_url), which may open it).
pub struct LoopbackRedirect {
    listener: TcpListener,
    port: u16,
    timeout: Duration,
    announce: Announce,
}

modelctx_types::__debug_shows!(LoopbackRedirect, |v| { port: &v.port, timeout: &v.timeout, .. });

/// The largest request head the loopback listener reads.
const MAX_HEAD: usize = 16 * 1024;

impl LoopbackRedirect {
    /// Listens on `127.0.0.1:port` (0: any free port).
    pub async fn bind(port: u16) -> Result<Self, OAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            OAuthError::new(
                ErrorKind::Config,
                format!("cannot listen on 127.0.0.1:{port}: {e}"),
            )
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| OAuthError::new(ErrorKind::Config, e.to_string()))?
            .port();
        Ok(Self {
            listener,
            port,
            timeout: Duration::from_secs(300),
            announce: Arc::new(|url| {
                eprintln!("Open this URL in a browser to authorize: {url}");
            }),
        })
    }

    modelctx_types::__setters! {
        /// How long to wait for the user (default five minutes).
        timeout(timeout: Duration) { timeout = timeout }

        /// Shows the authorization URL to the user (default: printed on standard error).
        on_url(announce: impl Fn(&str) + Send + Sync + 'static) { announce = Arc::new(announce) }
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.port
    }

    async fn wait(&self) -> Result<AuthorizationResponse, OAuthError> {
        loop {
            let (mut stream, _) = self.listener.accept().await.map_err(|e| {
                OAuthError::new(ErrorKind::Authorization, format!("accept failed: {e}"))
            })?;
            let head =
                match tokio::time::timeout(Duration::from_secs(10), read_head(&mut stream)).await {
                    Ok(Some(head)) => head,
                    _ => continue,
                };
            let target = head
                .lines()
                .next()
                .and_then(|line| {
                    let mut parts = line.split(' ');
                    match (parts.next(), parts.next()) {
                        (Some("GET"), Some(target)) => Some(target.to_owned()),
                        _ => None,
                    }
                })
                .unwrap_or_default();
            let (path, query) = target.split_once('?').unwrap_or((&target, ""));
            if path != "/callback" {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let response = AuthorizationResponse::from_query(query);
            let text = if response.get("error").is_some() {
                "Authorization failed. You can close this window."
            } else {
                "Authorization complete. You can close this window."
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
            return Ok(response);
        }
    }
}

async fn read_head(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() + n > MAX_HEAD {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
}

impl AuthorizationHandler for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            (self.announce)(authorization_url);
            tokio::time::timeout(self.timeout, self.wait())
                .await
                .map_err(|_| {
                    OAuthError::new(
                        ErrorKind::Timeout,
                        format!("the user did not authorize within {:?}", self.timeout),
                    )
                })?
        })
    }
}
