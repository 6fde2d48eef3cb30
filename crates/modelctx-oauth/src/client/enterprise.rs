//! Enterprise-managed authorization (SEP-990): the JWT-bearer grant's assertion is an
//! Identity Assertion JWT Authorization Grant (ID-JAG) that the enterprise identity
//! provider issues by token exchange (RFC 8693) of the user's ID token.

use std::time::Duration;

use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue};
use reqwest::Url;

use super::builder::{AssertionRequest, JwtBearerAssertion};
use super::credentials::ClientRegistration;
use super::crypto::b64;
use super::error::{ErrorKind, OAuthError};
use super::fetch::{Fetcher, default_client, form_escape, is_loopback, oauth_failure, parse_url};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// A [`JwtBearerAssertion`] for enterprise-managed authorization: for each grant it
/// exchanges the user's ID token at the enterprise IdP's token endpoint for an ID-JAG
/// whose audience is the MCP server's authorization server and whose resource is the
/// MCP server. Use with [`OAuthClientBuilder::jwt_bearer`](crate::OAuthClientBuilder::jwt_bearer)
/// and the client's registration at the authorization server.
pub struct IdJagExchange {
    token_endpoint: Url,
    idp_client: ClientRegistration,
    id_token: String,
    fetcher: Fetcher,
}

modelctx_types::__debug_shows!(IdJagExchange, |v| {
    token_endpoint: &v.token_endpoint.as_str(),
    idp_client: &v.idp_client,
    ..
});

impl IdJagExchange {
    /// Exchanges `id_token` at `idp_token_endpoint`, authenticating as `idp_client`
    /// (its secret with `client_secret_basic`, else its `client_id` alone). The
    /// endpoint must be `https` (or loopback `http`); the private-network guard is on
    /// unless it is itself local.
    pub fn new(
        idp_token_endpoint: &str,
        idp_client: ClientRegistration,
        id_token: impl Into<String>,
    ) -> Result<Self, OAuthError> {
        let token_endpoint = parse_url(idp_token_endpoint, "IdP token endpoint")
            .map_err(|e| OAuthError::new(ErrorKind::Config, e.message()))?;
        let guard = !is_loopback(&token_endpoint);
        Ok(Self {
            fetcher: Fetcher::new(
                default_client(guard)?,
                1024 * 1024,
                Duration::from_secs(30),
                guard,
            ),
            token_endpoint,
            idp_client,
            id_token: id_token.into(),
        })
    }

    /// Sends the exchange through `client` (for TLS).
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.fetcher = Fetcher::new(client, 1024 * 1024, Duration::from_secs(30), false);
        self
    }

    async fn exchange(&self, request: AssertionRequest) -> Result<String, OAuthError> {
        let scope = request.scopes.join(" ");
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG),
            ("subject_token", self.id_token.as_str()),
            ("subject_token_type", ID_TOKEN),
            ("audience", request.issuer.as_str()),
            ("resource", request.resource.as_str()),
        ];
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        let mut headers = HeaderMap::new();
        match &self.idp_client.client_secret {
            Some(secret) => {
                let pair = format!(
                    "{}:{}",
                    form_escape(&self.idp_client.client_id),
                    form_escape(secret)
                );
                let mut v = HeaderValue::try_from(format!("Basic {}", b64(pair.as_bytes())))
                    .map_err(|_| OAuthError::new(ErrorKind::Config, "invalid IdP credentials"))?;
                v.set_sensitive(true);
                headers.insert(http::header::AUTHORIZATION, v);
            }
            None => form.push(("client_id", self.idp_client.client_id.as_str())),
        }
        let answer = self
            .fetcher
            .post_form(&self.token_endpoint, headers, &form)
            .await?;
        if !answer.status.is_success() {
            return Err(oauth_failure(
                ErrorKind::TokenEndpoint,
                "the ID-JAG token exchange",
                &answer,
            ));
        }
        #[derive(serde::Deserialize)]
        struct Exchanged {
            access_token: String,
            issued_token_type: Option<String>,
        }
        // Never quote the body: it holds the grant.
        let e: Exchanged = serde_json::from_slice(&answer.body).map_err(|_| {
            OAuthError::new(
                ErrorKind::InvalidResponse,
                "the token exchange answer is not valid",
            )
        })?;
        if e.issued_token_type.as_deref() != Some(ID_JAG) || e.access_token.is_empty() {
            return Err(OAuthError::new(
                ErrorKind::InvalidResponse,
                "the token exchange did not issue an ID-JAG",
            ));
        }
        Ok(e.access_token)
    }
}

impl JwtBearerAssertion for IdJagExchange {
    fn assertion(&self, request: AssertionRequest) -> BoxFuture<'_, Result<String, OAuthError>> {
        Box::pin(self.exchange(request))
    }
}
