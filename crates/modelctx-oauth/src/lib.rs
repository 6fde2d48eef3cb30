//! OAuth 2.1 for modelctx: both sides of MCP authorization.
//!
//! ## Client
//!
//! An MCP server over HTTP may be an OAuth protected resource. [`OAuthClient`] (feature
//! `client`) is the [`AuthHook`](modelctx_http::AuthHook) of the streamable HTTP client
//! transport that gets and keeps the tokens, as the MCP authorization specification
//! (2025-11-25 and 2026-07-28) says:
//!
//! - **Discovery**: protected-resource metadata (RFC 9728) from the 401's
//!   `WWW-Authenticate` `resource_metadata`, else the path-aware then the root
//!   well-known URI; its `resource` must be the server. Authorization-server metadata
//!   (RFC 8414 / OpenID Connect) in the specification's order, its `issuer` checked;
//!   2025-03-26 servers' root metadata and default endpoints as a fallback. An
//!   authorization server given as configuration
//!   ([`OAuthClientBuilder::authorization_server`]) is used alone: its RFC 8414
//!   metadata, the resource server not consulted.
//! - **Registration**: pre-registered credentials (bound to their issuer), else a
//!   client-ID metadata document URL where supported, else dynamic registration
//!   (RFC 7591).
//! - **Authorization code** with PKCE S256 (refused when the server does not list it),
//!   `state`, the RFC 8707 `resource`, the RFC 9207 `iss` check, scope selection
//!   (the challenge's `scope`, else `scopes_supported`, else none; `offline_access`,
//!   with `prompt=consent`, when offered); the user is reached through an [`AuthorizationHandler`] —
//!   [`LoopbackRedirect`] for command-line apps. The flow runs in its own task: a
//!   request that times out while the user is still authorizing does not abort it,
//!   and its token serves the next requests.
//! - **Tokens**: client authentication `client_secret_basic`, `client_secret_post`,
//!   `none`, `private_key_jwt` (a registration answer naming another, or a secret
//!   method without a secret, is refused); refresh before expiry; `invalid_grant` drops
//!   the tokens, `invalid_client` and `unauthorized_client` the registration too; 403 `insufficient_scope` step-up with the
//!   union of scopes, one per request, never again for a scope already refused; a 401 right after a new token is not answered by
//!   another authorization.
//! - **Without a user**: client credentials, RFC 7523 JWT-bearer grants (workload
//!   identity, or an enterprise ID-JAG that [`IdJagExchange`] obtains by token
//!   exchange) with the assertion from the application; DPoP
//!   (RFC 9449) proof-of-possession, nonces honoured.
//! - **Safety**: metadata and endpoints `https` only (plain `http` for loopback),
//!   redirects within the same origin only, bounded answers and time limits; tokens and
//!   secrets never in `Debug` output or errors, and only attached to requests to the
//!   server's own origin.
//!
//! Credentials live in a [`CredentialStore`] keyed by (authorization-server issuer,
//! resource): [`InMemoryCredentialStore`] (default) or [`FileCredentialStore`]. When the
//! resource moves to another authorization server, what was registered and obtained at
//! the old one is dropped; configured credentials are not carried over (the flow fails
//! with [`ErrorKind::IssuerMismatch`]), a client ID metadata document URL is.
//!
//! ```no_run
//! # #[cfg(feature = "client")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use modelctx_http::StreamableHttpClientTransport;
//! use modelctx_oauth::{FileCredentialStore, LoopbackRedirect, OAuthClient};
//!
//! let url = "https://mcp.example.com/mcp";
//! let oauth = OAuthClient::builder(url)
//!     .authorization_code(LoopbackRedirect::bind(0).await?)
//!     .client_name("my-cli", None)
//!     .store(FileCredentialStore::new("credentials.json"))
//!     .build()?;
//! let transport = StreamableHttpClientTransport::builder(url).auth(oauth).build()?;
//! # let _ = transport; Ok(()) }
//! ```
//!
//! ## Server
//!
//! An MCP server over streamable HTTP becomes a protected resource with a
//! [`ResourceServer`] (feature `resource-server`): its layer goes in front of the
//! endpoint and checks every request's bearer token — from the `Authorization` header
//! only — with a [`TokenVerifier`] ([`JwtVerifier`] against the authorization server's
//! JWKS, or [`IntrospectionVerifier`]), then **always** checks the audience against the
//! server's own resource URI, then the scopes (for every request, and per tool,
//! resource or prompt: [`Operation`]; listings show all of them, or only what the
//! caller may use: [`Listing`]). Refusals are 401 / 403 (400 for a malformed request) with the
//! `WWW-Authenticate: Bearer` challenge a client needs (`resource_metadata`, `error`,
//! `scope`). Handlers read the caller as `cx.extensions().get::<AuthInfo>()`.
//!
//! For development, tests and small deployments, [`AuthorizationServer`] (feature
//! `authorization-server`) is a bundled authorization server as an axum router:
//! metadata, authorization code with PKCE S256 and a consent page (codes bound to a
//! DPoP key with `dpop_jkt`), refresh-token rotation, client credentials, client
//! authentication by secret or `private_key_jwt` (RFC 7523 assertions against the
//! client's registered keys), dynamic registration, revocation and introspection,
//! ES256 JWT access tokens (DPoP-bound on request). For production, put your identity provider's issuer and
//! JWKS URI into [`JwtVerifier::new`] instead (it must issue ES256 or RS256 JWTs with `aud` set
//! to the MCP server's URI, or offer introspection).
//!
//! ```
//! # #[cfg(all(feature = "resource-server", feature = "authorization-server"))]
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_oauth::{
//!     AuthorizationServer, AuthorizationServerConfig, InMemoryStore, Login, ResourceServer,
//!     ResourceServerConfig,
//! };
//!
//! let issuer = "http://127.0.0.1:8081";
//! let mcp = "http://127.0.0.1:8080/mcp";
//! let users = |login: &Login<'_>| (login.username == "alice").then(|| "alice".to_owned());
//! let auth = AuthorizationServer::new(
//!     AuthorizationServerConfig::new(issuer, mcp).scopes_supported(["mcp"]),
//!     InMemoryStore::new(),
//!     users,
//! )
//! .unwrap();
//! let rs = ResourceServer::new(
//!     ResourceServerConfig::new(mcp, issuer).required_scopes(["mcp"]),
//!     auth.verifier(), // or JwtVerifier::new(issuer, jwks_uri) for another server
//! )
//! .unwrap();
//! // The MCP endpoint behind the layer, the metadata beside it; the AS on its origin.
//! let endpoint = axum::Router::new(); // e.g. StreamableHttpService::router()
//! let app = axum::Router::new()
//!     .nest_service("/mcp", endpoint.layer(rs.layer()))
//!     .merge(rs.metadata_router());
//! let as_app = auth.router();
//! # let _ = (app, as_app);
//! assert_eq!(rs.metadata_url(), "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp");
//! # }
//! # #[cfg(not(all(feature = "resource-server", feature = "authorization-server")))] fn main() {}
//! ```
//!
//! | feature | what | pulls in |
//! |---|---|---|
//! | `client` | [`OAuthClient`], stores, [`LoopbackRedirect`] | reqwest (no TLS), p256 |
//! | `resource-server` | [`ResourceServer`], [`JwtVerifier`], [`IntrospectionVerifier`] | axum, tower, reqwest (no TLS), p256, rsa |
//! | `authorization-server` | [`AuthorizationServer`], [`InMemoryStore`] | axum, p256 |
//!
//! Nothing is on by default. TLS comes from the `reqwest::Client` you pass to
//! `OAuthClientBuilder::http_client`, `JwtVerifier::http_client` or
//! `IntrospectionVerifier::http_client`. JWTs are verified with ES256 or RS256
//! (RustCrypto's pure-Rust `p256` and `rsa`; no C or assembly crypto).
#![cfg_attr(docsrs, feature(doc_cfg))]
// The page links items of both features; a build without one of them has nothing for
// those links to name (docs.rs and CI document with all features, where they resolve).
#![cfg_attr(
    not(all(feature = "client", feature = "resource-server")),
    allow(rustdoc::broken_intra_doc_links)
)]

#[cfg(feature = "authorization-server")]
mod authorization;
#[cfg(any(
    feature = "client",
    feature = "resource-server",
    feature = "authorization-server"
))]
mod body;
#[cfg(any(
    feature = "client",
    feature = "resource-server",
    feature = "authorization-server"
))]
#[cfg(feature = "client")]
mod client;
#[cfg(any(feature = "resource-server", feature = "authorization-server"))]
mod config_error;
#[cfg(any(feature = "resource-server", feature = "authorization-server"))]
mod jose;
#[cfg(any(
    feature = "client",
    feature = "resource-server",
    feature = "authorization-server"
))]
mod jws;
#[cfg(any(feature = "client", feature = "authorization-server"))]
mod netguard;
#[cfg(feature = "resource-server")]
mod resource;
#[cfg(any(feature = "resource-server", feature = "authorization-server"))]
mod single_use;

#[cfg(feature = "client")]
pub use client::{
    AssertionRequest, AuthorizationHandler, AuthorizationResponse, ClientRegistration,
    CredentialKey, CredentialStore, ErrorKind, FileCredentialStore, IdJagExchange,
    InMemoryCredentialStore, JwtBearerAssertion, LoopbackRedirect, OAuthClient, OAuthClientBuilder,
    OAuthError, SigningKey, StoredCredentials, TokenSet,
};

#[cfg(feature = "resource-server")]
pub use resource::{
    AuthInfo, IntrospectionVerifier, JwtVerifier, Listing, Operation, RequireBearer,
    RequireBearerLayer, ResourceServer, ResourceServerConfig, TokenError, TokenVerifier,
};

#[cfg(any(feature = "resource-server", feature = "authorization-server"))]
pub use config_error::ConfigError;
#[cfg(any(feature = "resource-server", feature = "authorization-server"))]
pub use single_use::{SingleUseStore, StoreError};

#[cfg(feature = "authorization-server")]
pub use authorization::{
    AuthorizationServer, AuthorizationServerConfig, AuthorizationStore, Grant, GrantKind,
    InMemoryStore, Login, RegisteredClient, TrustedIdentityProvider, UserAuthenticator,
};
