//! [`OAuthClient`]: the flows, tied to the HTTP client transport's [`AuthHook`].
//!
//! The authorization flow runs on a task of its own, so a request that times out or is
//! cancelled while the user is still authorizing does not abort it; the token serves the
//! next requests. `max_retries` is 2 (a DPoP nonce challenge may follow a fresh token), and
//! the hook refuses a second authorization for the same 401. With DPoP on, the
//! authorization request carries `dpop_jkt`, so the code is bound to the key that will
//! redeem it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Method};
use modelctx_http::AuthHook;
use modelctx_transport::TransportError;
use reqwest::{StatusCode, Url};
use serde_json::json;

use super::builder::{AssertionRequest, Grant};
use super::credentials::{
    ClientRegistration, CredentialKey, CredentialStore, StoredCredentials, TokenSet,
};
use super::crypto::{SigningKey, b64, now_secs, pkce, random_string};
use super::discovery::{Discovered, discover, discover_at};
use super::dpop;
use super::error::{ErrorKind, OAuthError};
use super::exchange::{check_response, parse_token_answer};
use super::fetch::{Fetcher, form_escape, oauth_failure, parse_url};
use super::metadata::{Challenge, parse_www_authenticate};
use super::redirect::AuthorizationHandler;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The OAuth client of one MCP server: an [`AuthHook`] for the streamable HTTP client
/// transport (`StreamableHttpClientBuilder::auth`).
///
/// On a 401 it discovers the authorization server (protected-resource metadata, then
/// authorization-server metadata), registers if needed, obtains a token with the chosen
/// grant, and has the request retried; it refreshes tokens before they expire, steps
/// up on 403 `insufficient_scope`, and keeps credentials per (issuer, resource) in its
/// [`CredentialStore`]. Tokens are only ever attached to requests to the server's own
/// origin. When a flow fails, the retried request fails with its error (see also
/// [`last_error`](Self::last_error)).
#[derive(Clone)]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

modelctx_types::__debug_shows!(OAuthClient, |v| { server: &v.inner.server.as_str(), .. });

pub(super) struct Inner {
    pub(super) server: Url,
    pub(super) fetcher: Fetcher,
    pub(super) grant: Grant,
    pub(super) store: Arc<dyn CredentialStore>,
    pub(super) client_name: String,
    pub(super) client_uri: Option<String>,
    pub(super) application_type: Option<String>,
    pub(super) grant_types: Option<Vec<String>>,
    pub(super) metadata_document: Option<String>,
    pub(super) pre_registered: Vec<(Option<String>, ClientRegistration)>,
    pub(super) client_key: Option<SigningKey>,
    pub(super) scopes: Option<Vec<String>>,
    pub(super) authorization_server: Option<String>,
    pub(super) dpop_key: Option<Arc<SigningKey>>,
    pub(super) max_step_ups: u32,
    pub(super) refresh_margin: u64,
    pub(super) state: tokio::sync::Mutex<State>,
    pub(super) last_error: Mutex<Option<OAuthError>>,
    /// Bumped whenever new tokens arrive (a grant or a refresh).
    pub(super) serial: AtomicU64,
}

#[derive(Default)]
pub(super) struct State {
    discovered: Option<Discovered>,
    key: Option<CredentialKey>,
    creds: StoredCredentials,
    /// The current token came from a grant (not the store or a refresh)…
    fresh: bool,
    /// …and was attached to this many requests since.
    uses: u32,
    step_ups: u32,
    /// A failed flow's error, for the retried request.
    pending: Option<OAuthError>,
    as_nonce: Option<String>,
    rs_nonce: Option<String>,
    /// The DPoP key of the stored credentials in use (the client's own until then).
    dpop_key: Option<Arc<SigningKey>>,
    /// The timeout of the request whose refusal started the running flow: held while
    /// the user is at the authorization server.
    user_clock: Option<modelctx_transport::RequestClock>,
}

impl OAuthClient {
    pub(super) fn from_inner(inner: Inner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The error of the last flow that failed, a refused refresh included (even when a
    /// new authorization then took its place).
    pub fn last_error(&self) -> Option<OAuthError> {
        self.inner
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The current tokens, if any (for display or hand-off; keep them confidential).
    pub async fn tokens(&self) -> Option<TokenSet> {
        self.inner.state.lock().await.creds.tokens.clone()
    }

    /// The credentials headers for a request `method` `url`; none for another origin.
    async fn request_headers(&self, method: &Method, url: &str) -> Result<HeaderMap, OAuthError> {
        let inner = &self.inner;
        let same_origin = Url::parse(url).is_ok_and(|u| u.origin() == inner.server.origin());
        if !same_origin {
            return Ok(HeaderMap::new());
        }
        let mut st = inner.state.lock().await;
        if let Some(e) = st.pending.take() {
            return Err(e);
        }
        let refresh =
            st.creds.tokens.as_ref().is_some_and(|t| {
                t.refresh_token.is_some() && t.expires_within(inner.refresh_margin)
            });
        if refresh
            && st.discovered.is_some()
            && let Err(e) = inner.refresh(&mut st).await
        {
            inner.record(&e);
            inner.forget_after(&mut st, &e).await;
            if e.oauth_error().is_none() {
                return Err(e);
            }
            // A refused refresh: the request goes without a token, and its 401
            // starts a new authorization.
            st.creds.tokens = None;
        }
        let Some(tokens) = st.creds.tokens.clone() else {
            return Ok(HeaderMap::new());
        };
        st.uses += 1;
        let mut headers = HeaderMap::new();
        let dpop = tokens.token_type.eq_ignore_ascii_case("dpop");
        let scheme = if dpop { "DPoP" } else { "Bearer" };
        let mut value = HeaderValue::try_from(format!("{scheme} {}", tokens.access_token))
            .map_err(|_| {
                OAuthError::new(
                    ErrorKind::InvalidResponse,
                    "the access token is not a valid header value",
                )
            })?;
        value.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, value);
        if dpop && let Some(key) = st.dpop_key.as_ref().or(inner.dpop_key.as_ref()) {
            let proof = dpop::proof(
                key,
                method.as_str(),
                url,
                Some(&tokens.access_token),
                st.rs_nonce.as_deref(),
            )?;
            if let Ok(v) = HeaderValue::try_from(proof) {
                headers.insert("dpop", v);
            }
        }
        Ok(headers)
    }

    async fn rejected(
        &self,
        status: u16,
        headers: &HeaderMap,
        clock: Option<modelctx_transport::RequestClock>,
    ) -> bool {
        let challenges = parse_www_authenticate(
            headers
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        );
        let challenge = challenges
            .iter()
            .find(|c| {
                c.scheme.eq_ignore_ascii_case("bearer") || c.scheme.eq_ignore_ascii_case("dpop")
            })
            .cloned()
            .unwrap_or_default();
        let nonce = headers
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // The flow runs in its own task: when the request that started it is dropped
        // (its timeout, a cancellation) while the user is still authorizing, the
        // authorization completes anyway and its token serves the next requests.
        let inner = self.inner.clone();
        let seen = inner.serial.load(Ordering::SeqCst);
        let flow = tokio::spawn(async move {
            let mut st = inner.state.lock().await;
            if inner.serial.load(Ordering::SeqCst) != seen && st.creds.tokens.is_some() {
                // New tokens arrived after this refusal (another request's flow ran
                // meanwhile): the request went with older ones; retry with these.
                return true;
            }
            st.user_clock = clock;
            let handled = inner.handle(&mut st, status, &challenge, nonce).await;
            st.user_clock = None;
            match handled {
                Ok(retry) => retry,
                Err(e) => {
                    inner.record(&e);
                    st.pending = Some(e);
                    // The retry fails at once with the flow's error.
                    true
                }
            }
        });
        flow.await.unwrap_or(false)
    }
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = a.to_vec();
    for s in b {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

impl Inner {
    fn refusal(&self, message: impl Into<String>) -> bool {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(OAuthError::new(ErrorKind::Authorization, message));
        false
    }

    /// Handles a 401/403; true to retry the request.
    async fn handle(
        &self,
        st: &mut State,
        status: u16,
        challenge: &Challenge,
        nonce: Option<String>,
    ) -> Result<bool, OAuthError> {
        if challenge.error() == Some("use_dpop_nonce") {
            let dpop_token = st
                .creds
                .tokens
                .as_ref()
                .is_some_and(|t| t.token_type == "DPoP");
            return Ok(match nonce {
                Some(n) if dpop_token && st.rs_nonce.as_deref() != Some(n.as_str()) => {
                    st.rs_nonce = Some(n);
                    true
                }
                _ => false,
            });
        }
        if status == 403 {
            if challenge.error() == Some("insufficient_scope") && self.max_step_ups == 0 {
                // Not stepping up: the challenge is the caller's to handle.
                return Err(OAuthError::insufficient_scope(
                    challenge.scopes(),
                    challenge.resource_metadata().map(str::to_owned),
                    challenge.param("error_description"),
                ));
            }
            if challenge.error() != Some("insufficient_scope") || st.discovered.is_none() {
                return Ok(false);
            }
            if st.uses >= 2 {
                // The token served other requests since the last step-up: this is
                // another operation's challenge, not the same one repeated.
                st.step_ups = 0;
            }
            let challenged = challenge.scopes();
            let wanted = union(&st.creds.requested_scopes, &challenged);
            let granted: Vec<String> = match st.creds.tokens.as_ref().and_then(|t| t.scope.as_ref())
            {
                Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
                // RFC 6749 §5.1: no `scope` in the answer, the scopes asked for.
                None => st.creds.requested_scopes.clone(),
            };
            let refreshable = st
                .creds
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_token.is_some());
            if !challenged.is_empty() && challenged.iter().all(|s| granted.contains(s)) {
                // The token was granted the scope already: a refreshed token (no user
                // involved) may be one the server takes.
                if !refreshable || st.step_ups >= self.max_step_ups {
                    return Ok(self.refusal(
                        "the server wants scopes the token was granted: another authorization would not help",
                    ));
                }
                st.step_ups += 1;
                if let Err(e) = self.refresh(st).await {
                    self.forget_after(st, &e).await;
                    return Err(e);
                }
                return Ok(true);
            }
            if wanted.len() == st.creds.requested_scopes.len() {
                return Ok(self.refusal(
                    "the server wants scopes already asked for: another authorization would not help",
                ));
            }
            if st.step_ups >= self.max_step_ups {
                return Ok(self.refusal("the step-up authorization limit was reached"));
            }
            // Scopes beyond the grant: a new authorization (a refresh cannot widen it).
            st.step_ups += 1;
            self.obtain(st, wanted).await?;
            return Ok(true);
        }
        if status != 401 {
            return Ok(false);
        }
        if st.creds.tokens.is_some() && st.uses == 0 {
            // A token arrived after this request was sent: try it.
            return Ok(true);
        }
        if st.fresh && st.uses <= 1 && st.creds.tokens.is_some() {
            st.creds.tokens = None;
            st.fresh = false;
            return Ok(self
                .refusal("the server refused a token it had just issued; not authorizing again"));
        }
        let discovered = match &self.authorization_server {
            Some(issuer) => discover_at(&self.fetcher, &self.server, issuer).await?,
            None => discover(&self.fetcher, &self.server, challenge.resource_metadata()).await?,
        };
        let key = CredentialKey::new(&discovered.server.issuer, &discovered.resource);
        if st.key.as_ref() != Some(&key) {
            if let Some(old) = &st.key
                && old.issuer != key.issuer
            {
                self.check_moved(&st.creds, &old.issuer, &key.issuer)?;
            }
            if let Some(old) = st.key.take() {
                // The resource moved to another authorization server (or resource
                // identifier): what was bound to the old one is void.
                self.store.clear(&old).await?;
            }
            st.creds = self.store.load(&key).await?.unwrap_or_default();
            st.dpop_key = None;
            if let Some(own) = &self.dpop_key {
                // Tokens bound to a stored key stay usable: that key signs their proofs.
                match st.creds.dpop_key.as_deref().map(SigningKey::from_pkcs8_pem) {
                    Some(Ok(stored)) => st.dpop_key = Some(Arc::new(stored)),
                    _ => {
                        st.creds.dpop_key = Some(own.to_pkcs8_pem()?);
                        st.dpop_key = Some(own.clone());
                        if st
                            .creds
                            .tokens
                            .as_ref()
                            .is_some_and(|t| t.token_type.eq_ignore_ascii_case("dpop"))
                        {
                            // Bound to a key nobody kept: of no use.
                            st.creds.tokens = None;
                        }
                    }
                }
            }
            st.key = Some(key);
            st.discovered = Some(discovered);
            st.step_ups = 0;
            st.fresh = false;
            st.uses = 0;
            st.as_nonce = None;
            if st.creds.tokens.is_some() {
                // Stored tokens of an earlier run: try them first.
                return Ok(true);
            }
        } else {
            st.discovered = Some(discovered);
        }
        // The token was refused: refresh it, else obtain a new one.
        if st
            .creds
            .tokens
            .as_ref()
            .is_some_and(|t| t.refresh_token.is_some())
        {
            match self.refresh(st).await {
                Ok(()) => return Ok(true),
                Err(e) => {
                    self.record(&e);
                    self.forget_after(st, &e).await;
                    if e.oauth_error().is_none() {
                        return Err(e);
                    }
                }
            }
        }
        st.creds.tokens = None;
        let base = match &self.scopes {
            Some(s) => s.clone(),
            None if !challenge.scopes().is_empty() => challenge.scopes(),
            None => st
                .discovered
                .as_ref()
                .and_then(|d| d.scopes_supported.clone())
                .unwrap_or_default(),
        };
        let wanted = union(&st.creds.requested_scopes, &base);
        self.obtain(st, wanted).await?;
        Ok(true)
    }

    /// The resource moved from the authorization server `from` to `to`: configured
    /// credentials in use at `from` are not carried over (nor silently replaced by a
    /// registration at `to`) unless the configuration has a registration for `to`.
    fn check_moved(
        &self,
        creds: &StoredCredentials,
        from: &str,
        to: &str,
    ) -> Result<(), OAuthError> {
        let configured = creds.registration.as_ref().is_some_and(|reg| {
            self.pre_registered
                .iter()
                .any(|(_, r)| r.client_id == reg.client_id)
        });
        let has_own = self
            .pre_registered
            .iter()
            .any(|(issuer, _)| issuer.as_deref() == Some(to));
        if configured && !has_own {
            return Err(OAuthError::new(
                ErrorKind::IssuerMismatch,
                format!(
                    "the resource's authorization server is now {to}, but the client's configured credentials are those of {from}: not using them there"
                ),
            ));
        }
        Ok(())
    }

    fn record(&self, e: &OAuthError) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.clone());
    }

    /// After a failed token request: `invalid_grant` drops the tokens,
    /// `invalid_client` and `unauthorized_client` the registration too.
    async fn forget_after(&self, st: &mut State, e: &OAuthError) {
        match e.oauth_error() {
            Some("invalid_grant") => st.creds.tokens = None,
            Some("invalid_client" | "unauthorized_client") => {
                st.creds.tokens = None;
                st.creds.registration = None;
            }
            _ => return,
        }
        let _ = self.save(st).await;
    }

    async fn save(&self, st: &State) -> Result<(), OAuthError> {
        match &st.key {
            Some(key) => self.store.save(key, &st.creds).await,
            None => Ok(()),
        }
    }

    fn discovered<'a>(&self, st: &'a State) -> Result<&'a Discovered, OAuthError> {
        st.discovered
            .as_ref()
            .ok_or_else(|| OAuthError::new(ErrorKind::Discovery, "nothing discovered yet"))
    }

    /// Obtains new tokens for `scopes` with the configured grant.
    async fn obtain(&self, st: &mut State, mut scopes: Vec<String>) -> Result<(), OAuthError> {
        let result = self.run_grant(st, &mut scopes).await;
        let tokens = match result {
            Ok(t) => t,
            Err(e) => {
                self.forget_after(st, &e).await;
                return Err(e);
            }
        };
        st.creds.requested_scopes = scopes;
        self.keep(st, tokens, true).await
    }

    /// Makes `tokens` the current ones (`fresh`: obtained by a grant, not refreshed),
    /// not used yet, and saves the credentials.
    async fn keep(&self, st: &mut State, tokens: TokenSet, fresh: bool) -> Result<(), OAuthError> {
        st.creds.tokens = Some(tokens);
        self.serial.fetch_add(1, Ordering::SeqCst);
        st.fresh = fresh;
        st.uses = 0;
        self.save(st).await
    }

    async fn run_grant(
        &self,
        st: &mut State,
        scopes: &mut Vec<String>,
    ) -> Result<TokenSet, OAuthError> {
        match &self.grant {
            Grant::AuthorizationCode(handler) => {
                let handler = handler.clone();
                let meta = &self.discovered(st)?.server;
                let refreshes = self
                    .grant_types
                    .as_ref()
                    .is_none_or(|g| g.iter().any(|g| g == "refresh_token"));
                if refreshes
                    && meta.supports_scope("offline_access")
                    && !scopes.is_empty()
                    && !scopes.iter().any(|s| s == "offline_access")
                {
                    scopes.push("offline_access".to_owned());
                }
                let registration = self.registration(st, Some(&handler.redirect_uri())).await?;
                self.authorization_code(st, &registration, handler.as_ref(), scopes)
                    .await
            }
            Grant::ClientCredentials => {
                let registration = self.registration(st, None).await?;
                let scope = scopes.join(" ");
                let mut form = vec![("grant_type", "client_credentials".to_owned())];
                if !scope.is_empty() {
                    form.push(("scope", scope));
                }
                self.token_request(st, &registration, form).await
            }
            Grant::JwtBearer(provider) => {
                let registration = self.registration(st, None).await?;
                let d = self.discovered(st)?;
                let request = AssertionRequest {
                    issuer: d.server.issuer.clone(),
                    token_endpoint: d.server.token_endpoint.clone().unwrap_or_default(),
                    resource: d.resource.clone(),
                    scopes: scopes.clone(),
                };
                let assertion = provider.assertion(request).await?;
                let scope = scopes.join(" ");
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion),
                ];
                if !scope.is_empty() {
                    form.push(("scope", scope));
                }
                self.token_request(st, &registration, form).await
            }
        }
    }

    /// The client's registration at the current authorization server: stored,
    /// pre-registered, a client-ID metadata document, else dynamic registration.
    async fn registration(
        &self,
        st: &mut State,
        redirect_uri: Option<&str>,
    ) -> Result<ClientRegistration, OAuthError> {
        if let Some(reg) = &st.creds.registration
            && !reg.secret_expired()
        {
            return Ok(reg.clone());
        }
        let meta = self.discovered(st)?.server.clone();
        let pre = self
            .pre_registered
            .iter()
            .find(|(issuer, _)| issuer.as_deref() == Some(meta.issuer.as_str()))
            .or_else(|| {
                self.pre_registered
                    .iter()
                    .find(|(issuer, _)| issuer.is_none())
            })
            .map(|(_, r)| r.clone());
        let registration = if let Some(reg) = pre {
            reg
        } else if let (Some(true), Some(url)) = (
            meta.client_id_metadata_document_supported,
            &self.metadata_document,
        ) {
            ClientRegistration::new(url.clone()).with_auth_method("none")
        } else if let (Some(endpoint), Some(redirect_uri)) =
            (&meta.registration_endpoint, redirect_uri)
        {
            self.register(endpoint, redirect_uri, &meta.auth_methods())
                .await?
        } else {
            return Err(OAuthError::new(
                ErrorKind::Registration,
                format!(
                    "no client registration for {}: not pre-registered, no client ID metadata document, no dynamic registration",
                    meta.issuer
                ),
            ));
        };
        st.creds.registration = Some(registration.clone());
        self.save(st).await?;
        Ok(registration)
    }

    /// The authorization-code flow: authorization request through the handler, the
    /// response checked (`iss`, `state`, `error`), the code exchanged.
    async fn authorization_code(
        &self,
        st: &mut State,
        registration: &ClientRegistration,
        handler: &dyn AuthorizationHandler,
        scopes: &[String],
    ) -> Result<TokenSet, OAuthError> {
        let d = self.discovered(st)?;
        let meta = &d.server;
        let s256 = meta
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if !s256 {
            return Err(OAuthError::new(
                ErrorKind::PkceUnsupported,
                format!(
                    "the authorization server {} does not list PKCE S256 in code_challenge_methods_supported",
                    meta.issuer
                ),
            ));
        }
        let endpoint = meta.authorization_endpoint.as_deref().ok_or_else(|| {
            OAuthError::new(
                ErrorKind::InvalidResponse,
                "the authorization server metadata has no authorization_endpoint",
            )
        })?;
        let mut url = parse_url(endpoint, "authorization endpoint")?;
        let (verifier, challenge) = pkce()?;
        let state = random_string(32)?;
        let redirect_uri = handler.redirect_uri();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &registration.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &d.resource);
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
            if scopes.iter().any(|s| s == "offline_access") {
                // OpenID Connect Core §11: offline access is granted with consent only.
                q.append_pair("prompt", "consent");
            }
            if let Some(key) = self.dpop_key_for(st, meta) {
                // RFC 9449 §10: the code is bound to the key that will ask for the token.
                q.append_pair("dpop_jkt", &key.thumbprint());
            }
        }
        let issuer = meta.issuer.clone();
        let iss_required = meta.authorization_response_iss_parameter_supported == Some(true);
        // The user's time at the authorization server is not the challenged request's:
        // its timeout waits (this flow's own HTTP calls still count).
        let authorizing = handler.authorize(url.as_str());
        let response = match &st.user_clock {
            Some(clock) => clock.paused(authorizing).await?,
            None => authorizing.await?,
        };
        let code = check_response(&response, &state, &issuer, iss_required)?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        self.token_request(st, registration, form).await
    }

    /// The DPoP key for requests to the authorization server `meta`: the session's (or
    /// the configured) key, when DPoP is on and the server takes ES256 proofs.
    fn dpop_key_for(
        &self,
        st: &State,
        meta: &super::metadata::AuthorizationServerMetadata,
    ) -> Option<Arc<SigningKey>> {
        let key = st.dpop_key.clone().or_else(|| self.dpop_key.clone())?;
        meta.dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|a| a.iter().any(|a| a == "ES256"))
            .then_some(key)
    }

    /// Refreshes the current tokens (RFC 6749 §6).
    async fn refresh(&self, st: &mut State) -> Result<(), OAuthError> {
        let (Some(old), Some(registration)) =
            (st.creds.tokens.clone(), st.creds.registration.clone())
        else {
            return Err(OAuthError::new(
                ErrorKind::TokenEndpoint,
                "no refresh token or registration",
            ));
        };
        let Some(refresh_token) = old.refresh_token.clone() else {
            return Err(OAuthError::new(
                ErrorKind::TokenEndpoint,
                "no refresh token",
            ));
        };
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token),
        ];
        let mut tokens = self.token_request(st, &registration, form).await?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = old.refresh_token;
        }
        if tokens.scope.is_none() {
            tokens.scope = old.scope;
        }
        self.keep(st, tokens, false).await
    }

    /// A token request with the client's authentication, the `resource`, and a DPoP
    /// proof when DPoP is on (retried once with the server's nonce).
    async fn token_request(
        &self,
        st: &mut State,
        registration: &ClientRegistration,
        mut form: Vec<(&str, String)>,
    ) -> Result<TokenSet, OAuthError> {
        let d = self.discovered(st)?;
        let meta = d.server.clone();
        form.push(("resource", d.resource.clone()));
        let endpoint = meta.token_endpoint.as_deref().ok_or_else(|| {
            OAuthError::new(
                ErrorKind::InvalidResponse,
                "the authorization server metadata has no token_endpoint",
            )
        })?;
        let url = parse_url(endpoint, "token endpoint")?;
        let mut headers = HeaderMap::new();
        let method = registration
            .token_endpoint_auth_method
            .clone()
            .unwrap_or_else(|| {
                let supported = meta.auth_methods();
                if registration.client_secret.is_none() {
                    if self.client_key.is_some() && supported.iter().any(|m| m == "private_key_jwt")
                    {
                        "private_key_jwt".to_owned()
                    } else {
                        "none".to_owned()
                    }
                } else if supported.iter().any(|m| m == "client_secret_basic") {
                    "client_secret_basic".to_owned()
                } else if supported.iter().any(|m| m == "client_secret_post") {
                    "client_secret_post".to_owned()
                } else {
                    "client_secret_basic".to_owned()
                }
            });
        let secret = || {
            registration.client_secret.clone().ok_or_else(|| {
                OAuthError::new(
                    ErrorKind::Config,
                    format!("token endpoint authentication {method} needs a client secret"),
                )
            })
        };
        match method.as_str() {
            "client_secret_basic" => {
                let pair = format!(
                    "{}:{}",
                    form_escape(&registration.client_id),
                    form_escape(&secret()?)
                );
                let mut v = HeaderValue::try_from(format!("Basic {}", b64(pair.as_bytes())))
                    .map_err(|_| {
                        OAuthError::new(ErrorKind::Config, "invalid client credentials")
                    })?;
                v.set_sensitive(true);
                headers.insert(http::header::AUTHORIZATION, v);
            }
            "client_secret_post" => {
                form.push(("client_id", registration.client_id.clone()));
                form.push(("client_secret", secret()?));
            }
            "private_key_jwt" => {
                let key = self.client_key.as_ref().ok_or_else(|| {
                    OAuthError::new(ErrorKind::Config, "private_key_jwt needs a client key")
                })?;
                let now = now_secs();
                let claims = json!({
                    "iss": registration.client_id,
                    "sub": registration.client_id,
                    "aud": meta.issuer,
                    "jti": random_string(16)?,
                    "iat": now,
                    "exp": now + 300,
                });
                let mut header = serde_json::Map::new();
                header.insert("typ".into(), "JWT".into());
                form.push(("client_id", registration.client_id.clone()));
                form.push(("client_assertion_type", CLIENT_ASSERTION_TYPE.to_owned()));
                form.push(("client_assertion", key.sign_jwt(header, &claims)));
            }
            "none" => form.push(("client_id", registration.client_id.clone())),
            other => {
                return Err(OAuthError::new(
                    ErrorKind::Config,
                    format!("unsupported token endpoint authentication method {other:?}"),
                ));
            }
        }
        let dpop_key = self.dpop_key_for(st, &meta);
        let dpop_key = dpop_key.as_ref();
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut nonce_retried = false;
        let answer = loop {
            let mut h = headers.clone();
            if let Some(key) = dpop_key {
                let proof = dpop::proof(key, "POST", url.as_str(), None, st.as_nonce.as_deref())?;
                if let Ok(v) = HeaderValue::try_from(proof) {
                    h.insert("dpop", v);
                }
            }
            let answer = self.fetcher.post_form(&url, h, &pairs).await?;
            if let Some(n) = answer
                .headers
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
            {
                st.as_nonce = Some(n.to_owned());
            }
            if dpop_key.is_some()
                && !nonce_retried
                && answer.status == StatusCode::BAD_REQUEST
                && oauth_failure(ErrorKind::TokenEndpoint, "", &answer).oauth_error()
                    == Some("use_dpop_nonce")
            {
                nonce_retried = true;
                continue;
            }
            break answer;
        };
        parse_token_answer(&answer, dpop_key.is_some())
    }
}

fn to_transport(e: OAuthError) -> TransportError {
    TransportError::other(format!("OAuth: {e}"))
}

impl AuthHook for OAuthClient {
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, TransportError>> {
        Box::pin(async move {
            let url = self.inner.server.to_string();
            self.request_headers(&Method::POST, &url)
                .await
                .map_err(to_transport)
        })
    }

    fn headers_for<'a>(
        &'a self,
        method: &'a Method,
        url: &'a str,
    ) -> BoxFuture<'a, Result<HeaderMap, TransportError>> {
        Box::pin(async move {
            self.request_headers(method, url)
                .await
                .map_err(to_transport)
        })
    }

    fn on_rejected(&self, status: u16, headers: &HeaderMap) -> BoxFuture<'_, bool> {
        let headers = headers.clone();
        Box::pin(async move { self.rejected(status, &headers, None).await })
    }

    fn on_rejected_for<'a>(
        &'a self,
        status: u16,
        headers: &'a HeaderMap,
        clock: modelctx_transport::RequestClock,
    ) -> BoxFuture<'a, bool> {
        let headers = headers.clone();
        Box::pin(async move { self.rejected(status, &headers, Some(clock)).await })
    }

    /// Two: a DPoP nonce challenge may follow the retry with a new token. Loops are
    /// stopped here (a refused new token, a repeated nonce, a step-up that would not
    /// add a scope all answer false).
    fn max_retries(&self) -> u32 {
        2
    }
}
