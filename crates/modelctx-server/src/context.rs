//! The per-request context a server handler receives.

use std::sync::{Arc, OnceLock};

use modelctx_session::{
    CancellationToken, Peer, Progress, RequestContext, RequestOptions, SessionError,
};
use modelctx_types::{
    ClientCapabilities, Implementation, Meta, NotificationMethod, ProgressToken, ProtocolVersion,
    RequestId, RequestMethod,
};

/// What one session knows about its client, set by `initialize`.
#[derive(Debug, Default)]
pub(crate) struct ClientState {
    pub(crate) info: OnceLock<Implementation>,
    pub(crate) capabilities: OnceLock<ClientCapabilities>,
    pub(crate) protocol_version: OnceLock<ProtocolVersion>,
    /// Fires when the client sends `notifications/initialized`.
    pub(crate) initialized: CancellationToken,
}

/// The context of one request: who asked, with what `_meta`, and the means to report
/// progress, watch for cancellation, and talk back to the client.
#[derive(Debug)]
pub struct Context {
    request: RequestContext,
    client: Arc<ClientState>,
}

impl Context {
    pub(crate) fn new(request: RequestContext, client: Arc<ClientState>) -> Self {
        Self { request, client }
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        self.request.request_id()
    }

    /// The request's `_meta`, as the client sent it.
    pub fn meta(&self) -> Option<&Meta> {
        self.request.meta()
    }

    /// The progress token the client attached, if any.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.request.progress_token()
    }

    /// The client's name, version and title, once initialised.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client.info.get()
    }

    /// The capabilities the client declared, once initialised.
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.client.capabilities.get()
    }

    /// The negotiated protocol revision, once initialised.
    pub fn protocol_version(&self) -> Option<&ProtocolVersion> {
        self.client.protocol_version.get()
    }

    /// Fires when the client cancels this request or the session ends.
    pub fn cancellation(&self) -> &CancellationToken {
        self.request.cancellation()
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.request.is_cancelled()
    }

    /// Reports progress. Without a progress token from the client this sends nothing;
    /// a value that does not increase is refused.
    pub async fn report_progress(&self, progress: Progress) -> Result<(), SessionError> {
        self.request.report_progress(progress).await
    }

    /// The session's peer, related to this request.
    pub fn peer(&self) -> &Peer {
        self.request.peer()
    }

    /// Sends a request to the client, related to this request.
    pub async fn request<M: RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        self.request
            .peer()
            .request_with::<M>(params, RequestOptions::default())
            .await
    }

    /// Sends a notification to the client, related to this request.
    pub async fn notify<N: NotificationMethod>(
        &self,
        params: N::Params,
    ) -> Result<(), SessionError> {
        self.request.peer().notify::<N>(params).await
    }
}
