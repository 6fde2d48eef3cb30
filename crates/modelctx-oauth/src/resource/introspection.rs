//! Opaque access tokens, checked with the authorization server's introspection
//! endpoint (RFC 7662).

use futures::future::BoxFuture;
use serde_json::Value;

use super::{AuthInfo, DEFAULT_LEEWAY_SECS, TokenError, TokenVerifier, fetch};
use crate::jose;

/// Verifies tokens by asking the authorization server's introspection endpoint
/// (RFC 7662), authenticating as a client with HTTP Basic. A token is taken when the
/// answer says `active: true`, its `exp` (if any) has not passed and, when an issuer
/// was given, its `iss` matches. The answer must carry `aud`: the resource server
/// checks it against its own URI, so an answer without one refuses the token.
///
/// Every request costs one introspection call; put a cache in front (a
/// [`TokenVerifier`] wrapping this one) if that is too many.
pub struct IntrospectionVerifier {
    endpoint: String,
    client_id: String,
    client_secret: String,
    issuer: Option<String>,
    http: reqwest::Client,
}

modelctx_types::__debug_shows!(IntrospectionVerifier, |v| {
    endpoint: &v.endpoint,
    client_id: &v.client_id,
    ..
});

impl IntrospectionVerifier {
    /// Asks `endpoint`, as the client `client_id` with `client_secret`.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            issuer: None,
            http: reqwest::Client::new(),
        }
    }

    modelctx_types::__setters! {
        /// Also requires the answer's `iss` to be `issuer`.
        issuer(issuer: impl Into<String>) { issuer = Some(issuer.into()) }

        /// The HTTP client that calls the endpoint (for TLS, proxies).
        http_client(client: reqwest::Client) { http = client }
    }

    async fn check(&self, token: &str) -> Result<AuthInfo, TokenError> {
        if token.len() > jose::MAX_TOKEN_LEN {
            return Err(TokenError::invalid("the token is too long"));
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let request = self
            .http
            .post(&self.endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        let answer = fetch::json(request, "token introspection").await?;
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::invalid("the token is not active"));
        }
        let Value::Object(claims) = answer else {
            return Err(TokenError::unavailable(
                "token introspection: not an object",
            ));
        };
        let info = AuthInfo::from_claims(claims);
        if let Some(issuer) = &self.issuer
            && info.issuer.as_deref() != Some(issuer.as_str())
        {
            return Err(TokenError::invalid("the token comes from another issuer"));
        }
        let now = jose::now_secs();
        if info
            .expires_at
            .is_some_and(|exp| exp.saturating_add(DEFAULT_LEEWAY_SECS) <= now)
        {
            return Err(TokenError::invalid("the token has expired"));
        }
        Ok(info)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        Box::pin(self.check(token))
    }
}
