//! The OAuth client (feature `client`).

mod builder;
mod credentials;
mod crypto;
mod discovery;
mod dpop;
mod enterprise;
mod error;
mod exchange;
mod fetch;
mod metadata;
mod oauth;
mod redirect;
mod registration;

pub use builder::{AssertionRequest, JwtBearerAssertion, OAuthClientBuilder};
pub use credentials::{
    ClientRegistration, CredentialKey, CredentialStore, FileCredentialStore,
    InMemoryCredentialStore, StoredCredentials, TokenSet,
};
pub use crypto::SigningKey;
pub use enterprise::IdJagExchange;
pub use error::{ErrorKind, OAuthError};
pub use oauth::OAuthClient;
pub use redirect::{AuthorizationHandler, AuthorizationResponse, LoopbackRedirect};
