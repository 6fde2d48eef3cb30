//! Stand-ins for the two ends of OAuth in tests: a token verifier for modelctx-oauth's
//! resource server (`<name>-token` is a valid access token of user `<name>`, anything
//! else is refused), and a headless browser for its client's authorization code flow.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use modelctx_oauth::{
    AuthInfo, AuthorizationHandler, AuthorizationResponse, ClientRegistration, OAuthClient,
    OAuthError, SigningKey, TokenError, TokenVerifier,
};
use serde_json::{Map, Value};
use tokio::sync::Notify;

/// Takes `<name>-token` as user `<name>` (subject `<name>`), valid for five minutes,
/// issued by `http://issuer.test` for the resource it was made for.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use modelctx_oauth::TokenVerifier;
/// use modelctx_test::TokenPerUser;
///
/// let users = TokenPerUser::new("http://127.0.0.1/mcp").client_id("app");
/// let alice = users.verify("alice-token").await.unwrap();
/// assert_eq!(alice.subject.as_deref(), Some("alice"));
/// assert!(users.verify("nobody").await.is_err());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TokenPerUser {
    resource: String,
    client_id: Option<String>,
}

/// The issuer every token names.
pub const ISSUER: &str = "http://issuer.test";

impl TokenPerUser {
    /// Tokens for `resource` (their audience).
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            client_id: None,
        }
    }

    /// Tokens also name the client they were issued to.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }
}

impl TokenVerifier for TokenPerUser {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        Box::pin(async move {
            let who = token
                .strip_suffix("-token")
                .ok_or_else(|| TokenError::invalid("unknown token"))?;
            let exp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                + 300;
            let mut claims = Map::new();
            claims.insert("iss".into(), ISSUER.into());
            claims.insert("sub".into(), who.into());
            if let Some(client) = &self.client_id {
                claims.insert("client_id".into(), client.as_str().into());
            }
            claims.insert("aud".into(), self.resource.as_str().into());
            claims.insert("exp".into(), Value::from(exp));
            Ok(AuthInfo::from_claims(claims))
        })
    }
}

/// Where a [`Browser`] says the authorization server redirects to (nothing listens
/// there: the browser follows no redirect).
pub const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// The user's browser, headless, for an authorization server that approves at once:
/// opens the authorization URL, follows nothing, and hands the redirect's parameters
/// back — optionally tampered with, optionally only when the test lets the user go on.
///
/// ```
/// use modelctx_oauth::AuthorizationHandler;
/// use modelctx_test::{Browser, REDIRECT_URI};
///
/// assert_eq!(Browser::honest().redirect_uri(), REDIRECT_URI);
/// let forged = Browser { tamper: Some(("state", "forged")), ..Browser::honest() };
/// # drop(forged);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Browser {
    /// Replace this parameter of the response (with an empty value: drop it; an
    /// `error` also drops the `code`).
    pub tamper: Option<(&'static str, &'static str)>,
    /// When set, each authorization announces itself there and waits for a release.
    pub hold: Option<Hold>,
}

/// The test's grip on a slow user: while `holding`, each authorization notifies
/// `opened` and waits for `release`.
#[derive(Debug, Clone, Default)]
pub struct Hold {
    /// Whether authorizations wait.
    pub holding: Arc<AtomicBool>,
    /// Notified when an authorization starts waiting.
    pub opened: Arc<Notify>,
    /// Lets a waiting authorization go on.
    pub release: Arc<Notify>,
}

impl Browser {
    /// A browser that hands the redirect back as it came, at once.
    pub fn honest() -> Self {
        Self::default()
    }
}

impl AuthorizationHandler for Browser {
    fn redirect_uri(&self) -> String {
        REDIRECT_URI.into()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            if let Some(hold) = &self.hold
                && hold.holding.load(Ordering::SeqCst)
            {
                let released = hold.release.notified();
                hold.opened.notify_one();
                released.await;
            }
            let location = redirect_of(authorization_url).await?;
            let mut response = AuthorizationResponse::from_redirect_url(&location)?;
            if let Some((name, value)) = self.tamper {
                response
                    .params
                    .retain(|(k, _)| k != name && !(name == "error" && k == "code"));
                if !value.is_empty() {
                    response.params.push((name.into(), value.into()));
                }
            }
            Ok(response)
        })
    }
}

/// Where the authorization server sends the browser back from `authorization_url`
/// (its `Location`, the redirect not followed): what a user approving at once reaches.
pub async fn redirect_of(authorization_url: &str) -> Result<String, OAuthError> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| OAuthError::application(e.to_string()))?;
    let answer = http
        .get(authorization_url)
        .send()
        .await
        .map_err(|e| OAuthError::application(e.to_string()))?;
    answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| OAuthError::application("the AS did not redirect"))
}

/// A client-credentials client `m2m` of the MCP server at `server` that authenticates
/// with `private_key_jwt`, its assertions signed by a fresh key: the client and the key.
pub fn private_key_jwt_client(server: &str) -> (OAuthClient, SigningKey) {
    let key = SigningKey::generate().unwrap();
    let oauth = OAuthClient::builder(server)
        .client_credentials()
        .client(ClientRegistration::new("m2m").with_auth_method("private_key_jwt"))
        .client_key(key.clone())
        .build()
        .unwrap();
    (oauth, key)
}

/// The fields of a form-urlencoded body or query (a token request, an authorization
/// request), decoded; a repeated name keeps its last value.
///
/// ```
/// let form = modelctx_test::form_fields("grant_type=authorization_code&code=a%2Bb");
/// assert_eq!(form["grant_type"], "authorization_code");
/// assert_eq!(form["code"], "a+b");
/// ```
pub fn form_fields(body: &str) -> std::collections::HashMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{body}"))
        .map(|url| {
            url.query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}
