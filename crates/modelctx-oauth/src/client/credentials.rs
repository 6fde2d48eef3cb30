//! Client registrations and tokens, and where they are kept: the [`CredentialStore`],
//! keyed by (authorization-server issuer, resource).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::crypto::now_secs;
use super::error::{ErrorKind, OAuthError};

/// A client's registration at one authorization server: pre-registered, a client-ID
/// metadata document URL, or the answer of dynamic registration. `Debug` hides the
/// secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The `client_id`.
    pub client_id: String,
    /// The `client_secret`, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint (`client_secret_basic`,
    /// `client_secret_post`, `none`, `private_key_jwt`); chosen from the server's
    /// metadata when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// When the secret expires (seconds since the Unix epoch; 0 or absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
}

impl ClientRegistration {
    /// A public client (no secret).
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            client_secret_expires_at: None,
        }
    }

    modelctx_types::__setters! {
        /// A confidential client's secret.
        with_secret(secret: impl Into<String>) { client_secret = Some(secret.into()) }

        /// The token endpoint authentication method to use.
        with_auth_method(method: impl Into<String>)
            { token_endpoint_auth_method = Some(method.into()) }
    }

    pub(crate) fn secret_expired(&self) -> bool {
        matches!(self.client_secret_expires_at, Some(t) if t != 0 && t <= now_secs())
    }
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("client_secret_expires_at", &self.client_secret_expires_at)
            .finish()
    }
}

/// Tokens from a token endpoint. `Debug` hides the tokens.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The refresh token, when the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The granted scope, when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl TokenSet {
    /// Whether the access token expires within `margin_secs` seconds (false when the
    /// expiry is unknown).
    pub fn expires_within(&self, margin_secs: u64) -> bool {
        self.expires_at
            .is_some_and(|t| t <= now_secs().saturating_add(margin_secs))
    }
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field("token_type", &self.token_type)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

/// What a [`CredentialStore`] keeps for one (authorization server, resource) pair.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredCredentials {
    /// The client's registration at this authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<ClientRegistration>,
    /// The current tokens for this resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
    /// Every scope asked for so far (the step-up union).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested_scopes: Vec<String>,
    /// The private key DPoP-bound tokens are bound to (PKCS#8 PEM), kept with them so
    /// a later process can still use them. A secret like the tokens: never logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

modelctx_types::__debug_shows!(StoredCredentials, |v| {
    registration: &v.registration,
    tokens: &v.tokens,
    requested_scopes: &v.requested_scopes,
    dpop_key: &v.dpop_key.as_ref().map(|_| "<redacted>"),
});

/// The key of stored credentials: credentials are bound to the authorization server
/// that issued them and the resource they are for, and never used for another.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct CredentialKey {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The resource (the RFC 8707 `resource` value).
    pub resource: String,
}

impl CredentialKey {
    /// The key of `resource`'s credentials at `issuer`.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: resource.into(),
        }
    }
}

/// Keeps client registrations and tokens between runs (or only in memory).
/// Implementations must keep the values confidential: never log them.
pub trait CredentialStore: Send + Sync + 'static {
    /// What is stored under `key`.
    fn load<'a>(
        &'a self,
        key: &'a CredentialKey,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, OAuthError>>;

    /// Replaces what is stored under `key`.
    fn save<'a>(
        &'a self,
        key: &'a CredentialKey,
        credentials: &'a StoredCredentials,
    ) -> BoxFuture<'a, Result<(), OAuthError>>;

    /// Forgets what is stored under `key`.
    fn clear<'a>(&'a self, key: &'a CredentialKey) -> BoxFuture<'a, Result<(), OAuthError>>;
}

impl<T: CredentialStore> CredentialStore for std::sync::Arc<T> {
    fn load<'a>(
        &'a self,
        key: &'a CredentialKey,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, OAuthError>> {
        (**self).load(key)
    }

    fn save<'a>(
        &'a self,
        key: &'a CredentialKey,
        credentials: &'a StoredCredentials,
    ) -> BoxFuture<'a, Result<(), OAuthError>> {
        (**self).save(key, credentials)
    }

    fn clear<'a>(&'a self, key: &'a CredentialKey) -> BoxFuture<'a, Result<(), OAuthError>> {
        (**self).clear(key)
    }
}

/// A [`CredentialStore`] in memory: credentials last as long as the process.
#[derive(Default)]
pub struct InMemoryCredentialStore {
    entries: Mutex<HashMap<CredentialKey, StoredCredentials>>,
}

modelctx_types::__debug_shows!(InMemoryCredentialStore, |_v| { .. });

impl InMemoryCredentialStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<CredentialKey, StoredCredentials>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl CredentialStore for InMemoryCredentialStore {
    fn load<'a>(
        &'a self,
        key: &'a CredentialKey,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, OAuthError>> {
        let found = self.entries().get(key).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        key: &'a CredentialKey,
        credentials: &'a StoredCredentials,
    ) -> BoxFuture<'a, Result<(), OAuthError>> {
        self.entries().insert(key.clone(), credentials.clone());
        Box::pin(async { Ok(()) })
    }

    fn clear<'a>(&'a self, key: &'a CredentialKey) -> BoxFuture<'a, Result<(), OAuthError>> {
        self.entries().remove(key);
        Box::pin(async { Ok(()) })
    }
}

/// A [`CredentialStore`] in one JSON file, readable by its owner only (mode 0600 on
/// Unix), replaced atomically on every change.
pub struct FileCredentialStore {
    path: PathBuf,
    lock: tokio::sync::Mutex<()>,
}

modelctx_types::__debug_shows!(FileCredentialStore, |v| { path: &v.path, .. });

#[derive(Default, Serialize, Deserialize)]
struct FileContents {
    entries: Vec<FileEntry>,
}

#[derive(Serialize, Deserialize)]
struct FileEntry {
    issuer: String,
    resource: String,
    credentials: StoredCredentials,
}

impl FileCredentialStore {
    /// A store in the file at `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn read(&self) -> Result<FileContents, OAuthError> {
        match tokio::fs::read(&self.path).await {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                OAuthError::new(
                    ErrorKind::Store,
                    format!(
                        "the credential file {} is not valid: {e}",
                        self.path.display()
                    ),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileContents::default()),
            Err(e) => Err(io_error(&self.path, &e)),
        }
    }

    async fn write(&self, contents: &FileContents) -> Result<(), OAuthError> {
        let bytes = serde_json::to_vec_pretty(contents)
            .map_err(|e| OAuthError::new(ErrorKind::Store, format!("cannot encode: {e}")))?;
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options.open(&tmp).await.map_err(|e| io_error(&tmp, &e))?;
        use tokio::io::AsyncWriteExt as _;
        file.write_all(&bytes)
            .await
            .map_err(|e| io_error(&tmp, &e))?;
        file.sync_all().await.map_err(|e| io_error(&tmp, &e))?;
        drop(file);
        tokio::fs::rename(&tmp, &self.path)
            .await
            .map_err(|e| io_error(&self.path, &e))
    }

    async fn update(
        &self,
        key: &CredentialKey,
        value: Option<&StoredCredentials>,
    ) -> Result<(), OAuthError> {
        let _guard = self.lock.lock().await;
        let mut contents = self.read().await?;
        contents
            .entries
            .retain(|e| !(e.issuer == key.issuer && e.resource == key.resource));
        if let Some(value) = value {
            contents.entries.push(FileEntry {
                issuer: key.issuer.clone(),
                resource: key.resource.clone(),
                credentials: value.clone(),
            });
        }
        self.write(&contents).await
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> OAuthError {
    OAuthError::new(
        ErrorKind::Store,
        format!("credential file {}: {e}", path.display()),
    )
}

impl CredentialStore for FileCredentialStore {
    fn load<'a>(
        &'a self,
        key: &'a CredentialKey,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, OAuthError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let contents = self.read().await?;
            Ok(contents
                .entries
                .into_iter()
                .find(|e| e.issuer == key.issuer && e.resource == key.resource)
                .map(|e| e.credentials))
        })
    }

    fn save<'a>(
        &'a self,
        key: &'a CredentialKey,
        credentials: &'a StoredCredentials,
    ) -> BoxFuture<'a, Result<(), OAuthError>> {
        Box::pin(self.update(key, Some(credentials)))
    }

    fn clear<'a>(&'a self, key: &'a CredentialKey) -> BoxFuture<'a, Result<(), OAuthError>> {
        Box::pin(self.update(key, None))
    }
}
