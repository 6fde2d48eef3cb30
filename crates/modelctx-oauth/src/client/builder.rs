//! [`OAuthClientBuilder`]: the configuration of an [`OAuthClient`].

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::Url;

use super::credentials::{ClientRegistration, CredentialStore, InMemoryCredentialStore};
use super::crypto::SigningKey;
use super::error::{ErrorKind, OAuthError};
use super::fetch::{Fetcher, default_client, parse_url};
use super::oauth::{Inner, OAuthClient, State};
use super::redirect::AuthorizationHandler;

/// What a [`JwtBearerAssertion`] provider is asked for: an assertion for `resource`
/// at the authorization server `issuer`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AssertionRequest {
    /// The authorization server's issuer (the assertion's audience).
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The resource (RFC 8707) the token is for.
    pub resource: String,
    /// The scopes asked for.
    pub scopes: Vec<String>,
}

/// Supplies the JWT of an RFC 7523 JWT-bearer grant: a workload identity token of the
/// platform, or an ID-JAG from an enterprise identity provider. Closures
/// `Fn(AssertionRequest) -> impl Future<Output = Result<String, OAuthError>>` are
/// providers.
pub trait JwtBearerAssertion: Send + Sync + 'static {
    /// The assertion for `request`.
    fn assertion(&self, request: AssertionRequest) -> BoxFuture<'_, Result<String, OAuthError>>;
}

impl<F, Fut> JwtBearerAssertion for F
where
    F: Fn(AssertionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, OAuthError>> + Send + 'static,
{
    fn assertion(&self, request: AssertionRequest) -> BoxFuture<'_, Result<String, OAuthError>> {
        Box::pin(self(request))
    }
}

/// How tokens are obtained.
#[derive(Clone)]
pub(super) enum Grant {
    /// Authorization code with PKCE, through the user.
    AuthorizationCode(Arc<dyn AuthorizationHandler>),
    /// Client credentials (the client acts on its own behalf).
    ClientCredentials,
    /// An RFC 7523 JWT-bearer grant with an assertion from the application.
    JwtBearer(Arc<dyn JwtBearerAssertion>),
}

impl OAuthClient {
    /// A builder for the client of the MCP server at `server_url`.
    pub fn builder(server_url: impl Into<String>) -> OAuthClientBuilder {
        OAuthClientBuilder {
            server: server_url.into(),
            grant: None,
            store: None,
            http: None,
            client_name: "modelctx client".to_owned(),
            client_uri: None,
            application_type: None,
            grant_types: None,
            metadata_document: None,
            pre_registered: Vec::new(),
            client_key: None,
            scopes: None,
            authorization_server: None,
            dpop: false,
            max_step_ups: 1,
            refresh_margin: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
            max_body: 1024 * 1024,
            private_network_guard: None,
        }
    }
}

/// Builds an [`OAuthClient`].
pub struct OAuthClientBuilder {
    server: String,
    grant: Option<Grant>,
    store: Option<Arc<dyn CredentialStore>>,
    http: Option<reqwest::Client>,
    client_name: String,
    client_uri: Option<String>,
    application_type: Option<String>,
    grant_types: Option<Vec<String>>,
    metadata_document: Option<String>,
    pre_registered: Vec<(Option<String>, ClientRegistration)>,
    client_key: Option<SigningKey>,
    scopes: Option<Vec<String>>,
    authorization_server: Option<String>,
    dpop: bool,
    max_step_ups: u32,
    refresh_margin: Duration,
    timeout: Duration,
    max_body: usize,
    private_network_guard: Option<bool>,
}

modelctx_types::__debug_shows!(OAuthClientBuilder, |v| { server: &v.server, .. });

impl OAuthClientBuilder {
    /// The authorization-code flow (with PKCE), the user reached through `handler`.
    #[must_use]
    pub fn authorization_code(mut self, handler: impl AuthorizationHandler) -> Self {
        self.grant = Some(Grant::AuthorizationCode(Arc::new(handler)));
        self
    }

    /// The client-credentials grant with the registration given to
    /// [`client`](Self::client) (a secret, or a key for `private_key_jwt`).
    #[must_use]
    pub fn client_credentials(mut self) -> Self {
        self.grant = Some(Grant::ClientCredentials);
        self
    }

    /// The RFC 7523 JWT-bearer grant: each token is obtained for an assertion from
    /// `provider` (workload identity federation, or an enterprise ID-JAG), the client
    /// authenticating as [`client`](Self::client) says.
    #[must_use]
    pub fn jwt_bearer(mut self, provider: impl JwtBearerAssertion) -> Self {
        self.grant = Some(Grant::JwtBearer(Arc::new(provider)));
        self
    }

    /// A registration for the authorization server the resource names (for
    /// machine-to-machine clients configured for their server). It is bound to the
    /// first authorization server it is used at: should the resource later name another
    /// one, the flow fails ([`ErrorKind::IssuerMismatch`]) rather than present it there.
    #[must_use]
    pub fn client(mut self, registration: ClientRegistration) -> Self {
        self.pre_registered.push((None, registration));
        self
    }

    /// A registration valid at the authorization server `issuer` only: never sent to
    /// another one. Should a resource that used it move to another authorization server
    /// (one without a registration of its own here), the flow fails
    /// ([`ErrorKind::IssuerMismatch`]) instead of registering there.
    #[must_use]
    pub fn pre_registered(
        mut self,
        issuer: impl Into<String>,
        registration: ClientRegistration,
    ) -> Self {
        self.pre_registered
            .push((Some(issuer.into()), registration));
        self
    }

    modelctx_types::__setters! {
        /// The key of `private_key_jwt` client authentication (RFC 7523).
        client_key(key: SigningKey) { client_key = Some(key) }

        /// The URL of this client's client-ID metadata document, used as its `client_id`
        /// at authorization servers that support them (before dynamic registration).
        client_metadata_document(url: impl Into<String>) { metadata_document = Some(url.into()) }
    }

    /// The `client_name` (and optionally `client_uri`) of dynamic registration.
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>, uri: Option<String>) -> Self {
        self.client_name = name.into();
        self.client_uri = uri;
        self
    }

    modelctx_types::__setters! {
        /// The `application_type` of dynamic registration, sent as given. Default: derived
        /// from the redirect URI, `native` for a loopback host or a custom scheme, else `web`.
        application_type(application_type: impl Into<String>)
            { application_type = Some(application_type.into()) }

        /// The `grant_types` of dynamic registration, sent as given. Default:
        /// `authorization_code` and `refresh_token` (so the server may issue refresh tokens);
        /// without `refresh_token`, `offline_access` is never asked for.
        grant_types(grant_types: impl IntoIterator<Item = impl Into<String>>)
            { grant_types = Some(grant_types.into_iter().map(Into::into).collect()) }

        /// Where registrations and tokens are kept (default: in memory).
        store(store: impl CredentialStore) { store = Some(Arc::new(store)) }

        /// The HTTP client of discovery, registration and token requests (default: one
        /// without TLS that follows same-origin redirects only). Build yours with a TLS
        /// backend and `redirect::Policy::none()`.
        http_client(client: reqwest::Client) { http = Some(client) }

        /// Scopes to ask for instead of the specification's selection (the challenge's
        /// `scope`, else the resource's `scopes_supported`, else none).
        scopes(scopes: impl IntoIterator<Item = impl Into<String>>)
            { scopes = Some(scopes.into_iter().map(Into::into).collect()) }

        /// The authorization server, as configuration (an enterprise's, for the
        /// JWT-bearer grant of an ID-JAG): its metadata is read from its own RFC 8414
        /// well-known URI only, and must name this issuer exactly before any assertion or
        /// secret is sent; the resource server is never asked which authorization server
        /// to use (no protected-resource metadata; the `resource` is the server URL).
        authorization_server(issuer: impl Into<String>)
            { authorization_server = Some(issuer.into()) }

        /// Binds tokens to a per-client key with DPoP (RFC 9449) when the authorization
        /// server supports ES256 proofs (default off): a fresh proof on every token and
        /// resource request, server nonces honoured. The key is kept in the
        /// [`CredentialStore`] with the tokens bound to it, so a later process goes on using
        /// them (the file store keeps it as it keeps the tokens: a secret).
        dpop(enabled: bool) { dpop = enabled }

        /// How many step-up authorizations (403 `insufficient_scope`) may follow one
        /// another, each token refused again on its first use, before the refusal is let
        /// through (default 1: one step-up and one retry per request). A step-up that would
        /// add no scope is never made. With 0, a 403 `insufficient_scope` fails the request
        /// with an [`ErrorKind::InsufficientScope`] error carrying the challenge's scopes,
        /// `resource_metadata` and description, for the application to handle.
        max_step_ups(max: u32) { max_step_ups = max }
    }

    /// Time limit of each discovery, registration and token exchange (default 30 s)
    /// and the largest answer read (default 1 MiB).
    #[must_use]
    pub fn limits(mut self, timeout: Duration, max_body: usize) -> Self {
        self.timeout = timeout;
        self.max_body = max_body;
        self
    }

    /// The private-network guard: refuse discovery, registration and token URLs on
    /// loopback, private, link-local or unique-local addresses (IP literals, and with
    /// the default HTTP client, names resolving only to such addresses), so a server's
    /// metadata cannot make this client probe the local network. Default: on, unless
    /// the MCP server itself is on such an address (local development, tests).
    #[must_use]
    pub fn private_network_guard(mut self, on: bool) -> Self {
        self.private_network_guard = Some(on);
        self
    }

    /// The client. Fails on a server URL that is not `https` (or loopback `http`),
    /// and when no grant was chosen.
    pub fn build(self) -> Result<OAuthClient, OAuthError> {
        let server = parse_url(&self.server, "MCP server URL")
            .map_err(|e| OAuthError::new(ErrorKind::Config, e.message()))?;
        let grant = self.grant.ok_or_else(|| {
            OAuthError::new(
                ErrorKind::Config,
                "choose a grant: authorization_code, client_credentials or jwt_bearer",
            )
        })?;
        if let Some(url) = &self.metadata_document {
            let parsed = parse_url(url, "client ID metadata document URL")?;
            if parsed.scheme() != "https" || parsed.path() == "/" {
                return Err(OAuthError::new(
                    ErrorKind::Config,
                    "a client ID metadata document URL must be https with a path",
                ));
            }
        }
        if let Some(issuer) = &self.authorization_server {
            parse_url(issuer, "authorization server issuer")
                .map_err(|e| OAuthError::new(ErrorKind::Config, e.message()))?;
        }
        // The private-network guard: on unless the server itself is local (then its
        // authorization server may well be too).
        let guard = self
            .private_network_guard
            .unwrap_or_else(|| !server_is_local(&server));
        let http = match self.http {
            Some(c) => c,
            None => default_client(guard)?,
        };
        let dpop_key = if self.dpop {
            Some(Arc::new(SigningKey::generate()?))
        } else {
            None
        };
        Ok(OAuthClient::from_inner(Inner {
            server,
            fetcher: Fetcher::new(http, self.max_body, self.timeout, guard),
            grant,
            store: self
                .store
                .unwrap_or_else(|| Arc::new(InMemoryCredentialStore::new())),
            client_name: self.client_name,
            client_uri: self.client_uri,
            application_type: self.application_type,
            grant_types: self.grant_types,
            metadata_document: self.metadata_document,
            pre_registered: self.pre_registered,
            client_key: self.client_key,
            scopes: self.scopes,
            authorization_server: self.authorization_server,
            dpop_key,
            max_step_ups: self.max_step_ups,
            refresh_margin: self.refresh_margin.as_secs(),
            state: tokio::sync::Mutex::new(State::default()),
            last_error: Mutex::new(None),
            serial: std::sync::atomic::AtomicU64::new(0),
        }))
    }
}

/// Whether the MCP server is on this machine or a private network.
fn server_is_local(server: &Url) -> bool {
    match server.host() {
        Some(url::Host::Ipv4(ip)) => super::fetch::is_private(ip.into()),
        Some(url::Host::Ipv6(ip)) => super::fetch::is_private(ip.into()),
        Some(url::Host::Domain(_)) => super::fetch::is_loopback(server),
        None => false,
    }
}
