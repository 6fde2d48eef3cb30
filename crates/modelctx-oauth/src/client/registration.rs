//! Dynamic client registration (RFC 7591) of the OAuth client.

use reqwest::Url;
use serde_json::json;

use super::credentials::ClientRegistration;
use super::error::{ErrorKind, OAuthError};
use super::fetch::{oauth_failure, parse_url};
use super::oauth::Inner;

impl Inner {
    /// Dynamic client registration (RFC 7591).
    pub(super) async fn register(
        &self,
        endpoint: &str,
        redirect_uri: &str,
        supported: &[String],
    ) -> Result<ClientRegistration, OAuthError> {
        let url = parse_url(endpoint, "registration endpoint")?;
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| supported.iter().any(|s| s == m))
            .unwrap_or("client_secret_basic");
        let application_type = self
            .application_type
            .clone()
            .unwrap_or_else(|| application_type_of(redirect_uri).to_owned());
        let grant_types = self
            .grant_types
            .clone()
            .unwrap_or_else(|| vec!["authorization_code".to_owned(), "refresh_token".to_owned()]);
        let mut body = json!({
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": application_type,
        });
        if let Some(uri) = &self.client_uri {
            body["client_uri"] = uri.clone().into();
        }
        let answer = self.fetcher.post_json(&url, &body).await?;
        if !answer.status.is_success() {
            return Err(oauth_failure(
                ErrorKind::Registration,
                "dynamic client registration",
                &answer,
            ));
        }
        #[derive(serde::Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
            token_endpoint_auth_method: Option<String>,
            client_secret_expires_at: Option<u64>,
            redirect_uris: Option<Vec<String>>,
        }
        let r: Registered = serde_json::from_slice(&answer.body).map_err(|e| {
            OAuthError::new(
                ErrorKind::Registration,
                format!("the registration answer is not valid: {e}"),
            )
        })?;
        if r.client_id.is_empty() {
            return Err(OAuthError::new(
                ErrorKind::Registration,
                "the registration answer has an empty client_id",
            ));
        }
        if let Some(uris) = &r.redirect_uris
            && !uris.iter().any(|u| u == redirect_uri)
        {
            return Err(OAuthError::new(
                ErrorKind::Registration,
                format!("the server registered other redirect URIs than {redirect_uri}"),
            ));
        }
        // The server may substitute metadata (RFC 7591 §3.2.1): what it answers wins,
        // and what it leaves out stays as requested. Metadata the flow does not depend
        // on (application_type, grant_types…) is taken as is; credentials it could not
        // apply are refused here, before anything is stored or the user is involved.
        let registered = r
            .token_endpoint_auth_method
            .unwrap_or_else(|| method.to_owned());
        let unusable = match registered.as_str() {
            "none" => None,
            "client_secret_basic" | "client_secret_post" if r.client_secret.is_none() => {
                Some("but issued no client_secret")
            }
            "client_secret_basic" | "client_secret_post" => None,
            "private_key_jwt" if self.client_key.is_none() => {
                Some("but this client has no key to sign its assertions")
            }
            "private_key_jwt" => None,
            _ => Some("which this client does not implement"),
        };
        if let Some(why) = unusable {
            return Err(OAuthError::new(
                ErrorKind::Registration,
                format!(
                    "the server registered the client with token_endpoint_auth_method {registered:?}, {why}"
                ),
            ));
        }
        Ok(ClientRegistration {
            client_id: r.client_id,
            client_secret: r.client_secret,
            token_endpoint_auth_method: Some(registered),
            client_secret_expires_at: r.client_secret_expires_at,
        })
    }
}

/// The `application_type` of a client with `redirect_uri` (OpenID Connect Dynamic
/// Registration): `native` for a loopback host or a custom (private-use) scheme, `web`
/// for any other host.
fn application_type_of(redirect_uri: &str) -> &'static str {
    match Url::parse(redirect_uri) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && !super::fetch::is_loopback(&u) => "web",
        _ => "native",
    }
}

#[cfg(test)]
mod tests {
    use super::application_type_of;

    #[test]
    fn the_application_type_follows_the_redirect_uri() {
        assert_eq!(application_type_of("http://127.0.0.1:8080/cb"), "native");
        assert_eq!(application_type_of("http://localhost/cb"), "native");
        assert_eq!(application_type_of("http://[::1]:9/cb"), "native");
        assert_eq!(application_type_of("com.example.app:/oauth"), "native");
        assert_eq!(application_type_of("https://app.example/cb"), "web");
        assert_eq!(application_type_of("http://app.example/cb"), "web");
    }
}
