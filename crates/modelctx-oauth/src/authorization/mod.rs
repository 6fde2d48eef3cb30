//! The bundled authorization server (feature `authorization-server`).
//!
//! Codes, refresh tokens and pending consents are stored under a SHA-256 of their value and
//! taken out on use, which is what makes them single-use. The `jti`s of ID-JAGs, client
//! assertions and token-endpoint DPoP proofs go through the store's `first_use`, kept until
//! the assertion's `exp` plus the clock skew or the proof window, so every single-use check
//! holds across the processes sharing one store (`InMemoryStore` does it in its process
//! only). Access tokens are ES256 JWTs (`jose`, shared with the verifier; RustCrypto
//! `p256`, no C). `/authorize` takes `dpop_jkt`: the code's grant carries it, and the token
//! request must bring a DPoP proof by that key (else `invalid_dpop_proof`; the code is
//! spent either way, as for any failed exchange).

mod cimd;
mod client_auth;
mod endpoints;
mod page;
mod store;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use http::HeaderMap;
use p256::ecdsa::SigningKey;
use p256::pkcs8::DecodePrivateKey as _;
use serde_json::{Value, json};

pub(crate) use store::StoreError;
pub use store::{AuthorizationStore, Grant, GrantKind, InMemoryStore, RegisteredClient};

use crate::ConfigError;
use crate::jose;

/// What the user typed into the consent page, and the request that carried it.
/// `Debug` leaves the password and headers out.
#[non_exhaustive]
pub struct Login<'a> {
    /// The `username` field.
    pub username: &'a str,
    /// The `password` field (never logged by the server).
    pub password: &'a str,
    /// The headers of the form's POST (cookies of an existing login, say).
    pub headers: &'a HeaderMap,
    /// The client asking for access.
    pub client_id: &'a str,
    /// The scopes it asks for, space-separated.
    pub scope: &'a str,
}

impl fmt::Debug for Login<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Login")
            .field("username", &self.username)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Decides who the user on the consent page is: the subject the tokens will name, or
/// `None` to show the page again with an error. Any
/// `Fn(&Login) -> Option<String>` is one.
pub trait UserAuthenticator: Send + Sync + 'static {
    /// Checks the login; `Some(subject)` when the user is known and consents.
    fn authenticate<'a>(&'a self, login: &'a Login<'a>) -> BoxFuture<'a, Option<String>>;
}

impl<F> UserAuthenticator for F
where
    F: Fn(&Login<'_>) -> Option<String> + Send + Sync + 'static,
{
    fn authenticate<'a>(&'a self, login: &'a Login<'a>) -> BoxFuture<'a, Option<String>> {
        let subject = self(login);
        Box::pin(async move { subject })
    }
}

/// The RFC 7523 grant type that carries an assertion.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The grant profile of identity assertions (ID-JAG) under that grant.
pub(crate) const ID_JAG_PROFILE: &str = "urn:ietf:params:oauth:grant-profile:id-jag";
/// The JWT type of an ID-JAG.
pub(crate) const ID_JAG_TYP: &str = "oauth-id-jag+jwt";

/// The settings of an [`AuthorizationServer`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthorizationServerConfig {
    /// The issuer URL (`https://auth.example.com`, or `http://127.0.0.1:PORT` for
    /// development); the endpoints live under it.
    pub issuer: String,
    /// The resources (MCP server URIs) tokens may be for. A request naming another
    /// `resource` is refused (`invalid_target`); one naming none gets the first.
    pub resources: Vec<String>,
    /// The scopes clients may ask for (advertised as `scopes_supported`); empty: any.
    pub scopes_supported: Vec<String>,
    /// The lifetime of access tokens (one hour by default).
    pub access_token_ttl: Duration,
    /// The lifetime of authorization codes (one minute by default).
    pub code_ttl: Duration,
    /// The lifetime of refresh tokens (30 days by default).
    pub refresh_token_ttl: Duration,
    /// Whether `/register` takes dynamic registrations (RFC 7591; on by default).
    pub dynamic_registration: bool,
    /// Whether a `client_id` that is an `https` URL names a client ID metadata document
    /// (fetched at an authorization request, and reused while its `Cache-Control`
    /// `max-age` allows; on by default).
    pub client_metadata_documents: bool,
    /// Whether those documents may live on loopback and private-network addresses (and
    /// plain `http` on loopback): off by default, so that the server fetches only from
    /// the public internet; on for development and tests.
    pub private_network_documents: bool,
    /// The enterprise identity providers whose identity assertions (ID-JAG) the token
    /// endpoint takes (enterprise-managed authorization, SEP-990): none by default, and
    /// the grant is then refused as unsupported.
    pub identity_providers: Vec<TrustedIdentityProvider>,
}

/// An enterprise identity provider whose Identity Assertion JWT Authorization Grants
/// (ID-JAG) the token endpoint exchanges for access tokens: the RFC 7523 jwt-bearer
/// grant with the ID-JAG profile. An assertion must be an `oauth-id-jag+jwt` signed
/// (ES256) by one of the provider's keys, issued by it, for this server (`aud`), for
/// the client that presents it (`client_id`), unexpired, and for a resource this server
/// serves; its `sub` becomes the token's subject and its `scope` bounds the token's.
#[derive(Clone)]
pub struct TrustedIdentityProvider {
    issuer: String,
    keys: Vec<(Option<String>, p256::ecdsa::VerifyingKey)>,
}

modelctx_types::__debug_shows!(TrustedIdentityProvider, |v| {
    issuer: &v.issuer,
    keys: &v.keys.len(),
});

impl TrustedIdentityProvider {
    /// The provider `issuer` signing with the P-256 keys of `jwks` (a JWK Set, as its
    /// `jwks_uri` serves it); `None` when the set holds no P-256 key.
    pub fn new(issuer: impl Into<String>, jwks: &Value) -> Option<Self> {
        let keys: Vec<_> = jwks["keys"]
            .as_array()?
            .iter()
            .filter_map(|jwk| {
                let kid = jwk["kid"].as_str().map(str::to_owned);
                crate::jose::p256_key(jwk).map(|key| (kid, key))
            })
            .collect();
        (!keys.is_empty()).then(|| Self {
            issuer: issuer.into(),
            keys,
        })
    }

    /// The provider's issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Whether `jws` is signed by one of the provider's keys (the one its `kid` names,
    /// when it names one).
    pub(crate) fn signed(&self, jws: &crate::jose::Jws<'_>) -> bool {
        self.keys
            .iter()
            .filter(|(kid, _)| jws.kid().is_none() || kid.as_deref() == jws.kid())
            .any(|(_, key)| jws.verifies_with(key))
    }
}

impl AuthorizationServerConfig {
    /// A server at `issuer` issuing tokens for `resource`.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into().trim_end_matches('/').to_owned(),
            resources: vec![resource.into()],
            scopes_supported: Vec::new(),
            access_token_ttl: Duration::from_secs(3600),
            code_ttl: Duration::from_secs(60),
            refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
            dynamic_registration: true,
            client_metadata_documents: true,
            private_network_documents: false,
            identity_providers: Vec::new(),
        }
    }

    /// Takes identity assertions (ID-JAG) from `provider` at the token endpoint, and
    /// advertises the jwt-bearer grant with the ID-JAG profile.
    #[must_use]
    pub fn trust_identity_provider(mut self, provider: TrustedIdentityProvider) -> Self {
        self.identity_providers.push(provider);
        self
    }

    modelctx_types::__setters! {
        /// Turns client ID metadata documents on or off.
        client_metadata_documents(on: bool) { client_metadata_documents = on }

        /// Lets client ID metadata documents live on loopback or private addresses.
        private_network_documents(allow: bool) { private_network_documents = allow }

        /// Limits and advertises the scopes.
        scopes_supported(scopes: impl IntoIterator<Item = impl Into<String>>)
            { scopes_supported = scopes.into_iter().map(Into::into).collect() }

        /// Sets the lifetime of access tokens.
        access_token_ttl(ttl: Duration) { access_token_ttl = ttl }

        /// Turns dynamic client registration on or off.
        dynamic_registration(on: bool) { dynamic_registration = on }
    }
}

/// A small OAuth 2.1 authorization server for MCP servers, as an axum [`Router`]
/// (for development, tests and small deployments; put a real identity provider in
/// front of larger ones).
///
/// - `/.well-known/oauth-authorization-server` (RFC 8414 metadata, path-aware for an
///   issuer with a path) and `/jwks`;
/// - `/authorize`: PKCE `S256` required; the client's redirect URI must match a
///   registered one exactly, or the user is not redirected at all; a consent page
///   (plain HTML form) whose login the [`UserAuthenticator`] checks; the answer
///   carries `state` and `iss` (RFC 9207);
/// - `/token`: authorization code (single-use, one minute, verifier checked, redirect
///   URI and client bound), refresh token (rotated: each is single-use; a spent code or
///   refresh token presented again revokes every refresh token descending from the
///   same authorization), client credentials; `Cache-Control: no-store` and `Pragma: no-cache` on every answer; a
///   request with a DPoP proof (RFC 9449, ES256) gets tokens bound to its key
///   (`cnf.jkt`, `token_type` DPoP), and refreshing them needs a proof by that key;
/// - `/register`: dynamic registration (RFC 7591), redirect URIs `https` or loopback
///   `http` only, the registered metadata echoed;
/// - client ID metadata documents: a `client_id` that is an `https` URL with a path is
///   fetched at an authorization request (no redirects, at most 64 KiB, five seconds,
///   public addresses only unless allowed; reused while its `Cache-Control` `max-age`
///   allows, at most a day, and fetched anew under `no-store`, `no-cache` or no
///   `max-age`) and must name itself, list its redirect URIs and be a public client;
/// - `/revoke` (RFC 7009, refresh tokens) and `/introspect` (RFC 7662).
///
/// Access tokens are ES256 JWTs (RFC 9068) with `aud` set to the resource, which
/// [`JwtVerifier`](crate::JwtVerifier) checks against [`jwks`](Self::jwks).
///
/// [`Router`]: axum::Router
#[derive(Clone)]
pub struct AuthorizationServer {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: AuthorizationServerConfig,
    pub(crate) store: Box<dyn AuthorizationStore>,
    pub(crate) users: Box<dyn UserAuthenticator>,
    pub(crate) key: SigningKey,
    pub(crate) kid: String,
    /// The issuer's path ("" or "/tenant"): the endpoints live under it.
    pub(crate) prefix: String,
    /// Fetches client ID metadata documents (no redirects, the private-network guard
    /// unless turned off).
    pub(crate) documents: reqwest::Client,
    /// The documents fetched lately that their `Cache-Control` lets this server reuse.
    pub(crate) document_cache: cimd::DocumentCache,
}

modelctx_types::__debug_shows!(AuthorizationServer, |v| {
    issuer: &v.inner.config.issuer,
    kid: &v.inner.kid,
    ..
});

impl AuthorizationServer {
    /// A server with a fresh signing key (tokens die with the process), the given
    /// store, and `users` behind the consent page. `Err` when the issuer is not an
    /// `https` URL (or `http` on a loopback host) without query or fragment, or the
    /// system has no randomness.
    pub fn new(
        config: AuthorizationServerConfig,
        store: impl AuthorizationStore,
        users: impl UserAuthenticator,
    ) -> Result<Self, ConfigError> {
        let key = loop {
            let bytes = random_bytes::<32>()?;
            // Out-of-range scalars (probability ~2^-32) are drawn again.
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                break key;
            }
        };
        Self::build(config, store, users, key)
    }

    /// Like [`new`](Self::new), signing with a P-256 key from PKCS#8 PEM (so tokens
    /// survive restarts).
    pub fn with_signing_key(
        config: AuthorizationServerConfig,
        store: impl AuthorizationStore,
        users: impl UserAuthenticator,
        pkcs8_pem: &str,
    ) -> Result<Self, ConfigError> {
        let key = SigningKey::from_pkcs8_pem(pkcs8_pem)
            .map_err(|_| ConfigError("the signing key is not a P-256 PKCS#8 PEM key".into()))?;
        Self::build(config, store, users, key)
    }

    fn build(
        config: AuthorizationServerConfig,
        store: impl AuthorizationStore,
        users: impl UserAuthenticator,
        key: SigningKey,
    ) -> Result<Self, ConfigError> {
        let url = url::Url::parse(&config.issuer)
            .map_err(|e| ConfigError(format!("the issuer is not a URL: {e}")))?;
        if !secure_or_loopback(&url) || url.query().is_some() || url.fragment().is_some() {
            return Err(ConfigError(
                "the issuer must be an https URL (http only on loopback) without query or fragment"
                    .into(),
            ));
        }
        let prefix = url.path().trim_end_matches('/').to_owned();
        let mut documents = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5));
        if !config.private_network_documents {
            documents = documents.dns_resolver(Arc::new(crate::netguard::PublicOnly));
        }
        let documents = documents
            .build()
            .map_err(|e| ConfigError(format!("cannot build the HTTP client: {e}")))?;
        let jwk = jose::public_jwk(key.verifying_key(), "");
        let kid = hash(&format!("{}{}", jwk["x"], jwk["y"]))[..16].to_owned();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                store: Box::new(store),
                users: Box::new(users),
                key,
                kid,
                prefix,
                documents,
                document_cache: cimd::DocumentCache::default(),
            }),
        })
    }

    /// The issuer URL.
    pub fn issuer(&self) -> &str {
        &self.inner.config.issuer
    }

    /// The public keys that verify the access tokens (a JWKS), as served at `/jwks`.
    pub fn jwks(&self) -> Value {
        json!({"keys": [jose::public_jwk(self.inner.key.verifying_key(), &self.inner.kid)]})
    }

    /// A [`JwtVerifier`](crate::JwtVerifier) for this server's tokens that knows its
    /// keys already (no fetch), for a resource server in the same process.
    #[cfg(feature = "resource-server")]
    pub fn verifier(&self) -> crate::JwtVerifier {
        match crate::JwtVerifier::with_jwks(self.issuer(), &self.jwks()) {
            Ok(verifier) => verifier,
            // The JWKS always holds our P-256 key; fall back to fetching it anyway.
            Err(_) => crate::JwtVerifier::new(self.issuer(), self.endpoint("/jwks")),
        }
    }

    /// The authorization-server metadata (RFC 8414).
    pub fn metadata(&self) -> Value {
        let c = &self.inner.config;
        let mut doc = json!({
            "issuer": c.issuer,
            "authorization_endpoint": self.endpoint("/authorize"),
            "token_endpoint": self.endpoint("/token"),
            "revocation_endpoint": self.endpoint("/revoke"),
            "introspection_endpoint": self.endpoint("/introspect"),
            "jwks_uri": self.endpoint("/jwks"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
            "token_endpoint_auth_signing_alg_values_supported": ["ES256"],
            "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
            "revocation_endpoint_auth_signing_alg_values_supported": ["ES256"],
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"],
            "introspection_endpoint_auth_signing_alg_values_supported": ["ES256"],
            "authorization_response_iss_parameter_supported": true,
            "dpop_signing_alg_values_supported": ["ES256"],
        });
        if c.client_metadata_documents {
            doc["client_id_metadata_document_supported"] = true.into();
        }
        if c.dynamic_registration {
            doc["registration_endpoint"] = self.endpoint("/register").into();
        }
        if !c.scopes_supported.is_empty() {
            doc["scopes_supported"] = c.scopes_supported.clone().into();
        }
        if !c.identity_providers.is_empty() {
            if let Some(grants) = doc["grant_types_supported"].as_array_mut() {
                grants.push(JWT_BEARER.into());
            }
            doc["authorization_grant_profiles_supported"] = json!([ID_JAG_PROFILE]);
        }
        doc
    }

    /// Registers a client ahead of time (a confidential client for client
    /// credentials, or a public one with known redirect URIs).
    pub async fn register_client(&self, client: RegisteredClient) -> Result<(), StoreError> {
        self.inner.store.put_client(client).await
    }

    /// The routes: mount at the issuer's origin (`Router::merge`).
    pub fn router(&self) -> axum::Router {
        endpoints::router(self.inner.clone())
    }

    pub(crate) fn endpoint(&self, path: &str) -> String {
        self.inner.endpoint(path)
    }
}

impl Inner {
    /// Whether the single-use `id` (an assertion's or a proof's `jti`, tagged with what
    /// it is) comes for the first time; the store remembers its SHA-256 until
    /// `expires_at`, for every process sharing the store.
    pub(crate) async fn first_use(&self, id: &str, expires_at: u64) -> Result<bool, StoreError> {
        self.store.first_use(&hash(id), expires_at).await
    }

    pub(crate) fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.config.issuer)
    }

    /// A signed access token.
    pub(crate) fn access_token(&self, grant: &Grant) -> (String, u64) {
        let now = jose::now_secs();
        let ttl = self.config.access_token_ttl.as_secs().max(1);
        let jti = random_token().unwrap_or_default();
        let mut claims = json!({
            "iss": self.config.issuer,
            "sub": grant.subject,
            "client_id": grant.client_id,
            "iat": now,
            "nbf": now,
            "exp": now + ttl,
            "jti": jti,
        });
        if let Some(resource) = &grant.resource {
            claims["aud"] = resource.as_str().into();
        }
        if !grant.scope.is_empty() {
            claims["scope"] = grant.scope.as_str().into();
        }
        if let Some(jkt) = &grant.dpop_jkt {
            claims["cnf"] = json!({"jkt": jkt});
        }
        (
            jose::sign_es256(&self.key, &self.kid, "at+jwt", &claims),
            ttl,
        )
    }
}

/// `https`, or `http` on a loopback host.
pub(crate) fn secure_or_loopback(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// base64url(SHA-256(`text`)): how secrets, codes and tokens are stored.
pub(crate) fn hash(text: &str) -> String {
    jose::single_use_id(text)
}

fn random_bytes<const N: usize>() -> Result<[u8; N], ConfigError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)
        .map_err(|e| ConfigError(format!("the system random source failed: {e}")))?;
    Ok(bytes)
}

/// 256 random bits, base64url: codes, tokens, client ids and secrets.
pub(crate) fn random_token() -> Result<String, ConfigError> {
    random_bytes::<32>().map(|b| crate::jws::b64url(&b))
}

/// Equality of two strings in time independent of where they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}
