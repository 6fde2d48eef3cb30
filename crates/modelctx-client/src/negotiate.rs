//! How [`ClientBuilder::connect`](crate::ClientBuilder::connect) settles the protocol
//! era with a server as it really is: slow to start, behind a proxy, or of one era only.
//!
//! Auto mode probes with `server/discover` and waits [`probe_timeout`] for an answer
//! (the stdio fallback rule of protocol 2026-07-28: a server of the handshake era
//! answers the probe with an error, or not at all). A silent probe is not given up on:
//! past the wait `initialize` goes out beside it, and whichever answers decide. A child
//! still starting reads both once it runs, and its answers count however late they come:
//!
//! - `initialize` answered with a revision the client speaks: the handshake era (the
//!   server has opened a session of that era for this connection, so its word wins over
//!   a discover answer that came before it);
//! - the probe answered with 2026-07-28 offered, and `initialize` refused (or left
//!   unanswered for another probe wait after the probe's answer): the stateless era;
//! - any refusal (`-32022`) that names a revision the client speaks: that revision,
//!   asked again, never a failure.
//!
//! Over streamable HTTP a server answers every request with a status, so silence never
//! means "the handshake era": the probe is simply awaited (under the request timeout).
//!
//! When nothing works the error says what was sent and what came back, in order.
//!
//! [`probe_timeout`]: crate::ClientBuilder::probe_timeout
//!
//! Details of `ConnectMode::Auto`: `server/discover` is allowed in phase `New` and retried
//! once after a `-32022` that lists 2026-07-28; a `-32022` naming 2026-07-28 on
//! `initialize` sends one more probe. Entering the era moves the session to
//! `Phase::Stateless` and builds the `initialize`-shaped view from the discover answer
//! (kept: `Client::discover_result`); a failed `initialize` puts the session back in `New`.
//! An *undelivered* request (the POST never reached a server) or an *interrupted* one (the
//! connection dropped under it) is returned as the error: an outage is no verdict on the
//! era. When the handshake was refused after a probe (a proxy that opened its own upstream
//! session on the probe), the error says to pin the era.
//!
//! The other modes: `Discover` is 2026 only; `Handshake` never probes (the conformance
//! suite's and the load bench's client use it, so the wires of 2025 cells start with
//! `initialize`); `Pin(2026-07-28)` sends nothing before the caller's first request and
//! skips the local capability checks (nothing is known of the server); `Prior` rebuilds the
//! view from a kept discover answer with no traffic.

use std::fmt::Write as _;
use std::time::Duration;

use modelctx_session::{Peer, RequestHandle, RequestOptions, SessionError};
use modelctx_types::{
    DiscoverRequest, DiscoverResult, ErrorCode, InitializeRequest, InitializeRequestParams,
    InitializeResult, Meta, ProtocolVersion, RequestParams,
};
use serde_json::Value;

use crate::mode::ConnectMode;
use crate::stateless;

/// How long auto mode gives a silent server before it sends `initialize` beside its
/// `server/discover` probe.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The era a connection settled in.
pub(crate) enum Settled {
    /// Protocol 2026-07-28: what a handshake would have said, the `server/discover`
    /// answer when there was one, and whether the server's capabilities are known.
    Stateless(InitializeResult, Option<Box<DiscoverResult>>, bool),
    /// The handshake era: `initialize` answered with a revision the client speaks
    /// (`notifications/initialized` is the caller's to send).
    Handshake(InitializeResult),
}

/// One connection attempt: the session, what to send, and what happened so far.
pub(crate) struct Negotiation<'a> {
    peer: &'a Peer,
    envelope: &'a Meta,
    /// `initialize`'s params; its revision changes when the server names another.
    init: InitializeRequestParams,
    /// The revisions `initialize` was sent with.
    offered: Vec<ProtocolVersion>,
    /// How many times `server/discover` was sent.
    probes: usize,
    /// What was sent and what came back, in order.
    report: Vec<String>,
    /// The revisions the client accepts.
    accepted: Accepted,
}

/// The revisions a client accepts: every one this SDK speaks, or those the application
/// named (`ClientBuilder::supported_versions`).
#[derive(Debug, Clone)]
pub(crate) struct Accepted(Option<Vec<ProtocolVersion>>);

impl Accepted {
    /// The application's list checked: not empty, every revision one this SDK speaks.
    pub(crate) fn new(named: Option<Vec<ProtocolVersion>>) -> Result<Self, SessionError> {
        if let Some(named) = &named {
            if named.is_empty() {
                return Err(SessionError::refused(
                    "supported_versions names no protocol version",
                ));
            }
            if let Some(unknown) = named
                .iter()
                .find(|v| !v.is_handshake() && !v.is_stateless())
            {
                return Err(SessionError::refused(format!(
                    "supported_versions names protocol version {unknown}, which this SDK does not speak"
                )));
            }
        }
        Ok(Self(named))
    }

    /// Whether `version` is accepted.
    pub(crate) fn contains(&self, version: &ProtocolVersion) -> bool {
        self.0.as_ref().is_none_or(|named| named.contains(version))
    }

    /// The revision `initialize` offers: `wanted` when accepted, else the newest
    /// accepted handshake revision (or `wanted`, when none is: the handshake is then
    /// never sent).
    pub(crate) fn offer(&self, wanted: ProtocolVersion) -> ProtocolVersion {
        if self.contains(&wanted) {
            return wanted;
        }
        ProtocolVersion::HANDSHAKE
            .into_iter()
            .find(|v| self.contains(v))
            .unwrap_or(wanted)
    }

    /// `mode` within the accepted revisions: auto mode without the era it cannot use,
    /// and an error for a mode that needs an era they leave out.
    pub(crate) fn mode(&self, mode: ConnectMode) -> Result<ConnectMode, SessionError> {
        let modern_ok = self.contains(&modern());
        let handshake_ok = ProtocolVersion::HANDSHAKE.iter().any(|v| self.contains(v));
        let refused = |needs: &str| {
            Err(SessionError::refused(format!(
                "the connect mode needs {needs}, which this client's supported versions ({}) leave out",
                self.listed()
            )))
        };
        match mode {
            ConnectMode::Auto if !modern_ok => Ok(ConnectMode::Handshake),
            ConnectMode::Auto if !handshake_ok => Ok(ConnectMode::Discover),
            ConnectMode::Handshake if !handshake_ok => refused("a handshake revision"),
            ConnectMode::Discover | ConnectMode::Pin(_) | ConnectMode::Prior(_) if !modern_ok => {
                refused("protocol 2026-07-28")
            }
            mode => Ok(mode),
        }
    }

    /// The accepted revisions, for an error.
    fn listed(&self) -> String {
        match &self.0 {
            Some(named) => named
                .iter()
                .map(ProtocolVersion::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            None => "every revision this SDK speaks".to_owned(),
        }
    }
}

/// The modern revision, the only one of the stateless era this client speaks.
fn modern() -> ProtocolVersion {
    ProtocolVersion::V2026_07_28
}

impl<'a> Negotiation<'a> {
    pub(crate) fn new(
        peer: &'a Peer,
        envelope: &'a Meta,
        init: InitializeRequestParams,
        accepted: Accepted,
    ) -> Self {
        Self {
            peer,
            envelope,
            init,
            offered: Vec::new(),
            probes: 0,
            report: Vec::new(),
            accepted,
        }
    }

    /// Auto mode. `wait` is the probe wait; `None` awaits the probe however long it
    /// takes (streamable HTTP, where a server always answers).
    pub(crate) async fn auto(mut self, wait: Option<Duration>) -> Result<Settled, SessionError> {
        let mut probe = self.probe();
        let first = match wait {
            Some(wait) => tokio::select! {
                answer = &mut probe => Some(answer),
                () = tokio::time::sleep(wait) => None,
            },
            None => Some((&mut probe).await),
        };
        let Some(answer) = first else {
            self.note(format!(
                "server/discover (2026-07-28): no answer within the probe wait ({})",
                shown(wait.unwrap_or_default())
            ));
            return self.race(probe, wait.unwrap_or_default()).await;
        };
        match self.heard_probe(answer) {
            Probe::Offered(found) => self.stateless(found),
            Probe::AskAgain => {
                let answer = self.probe().await;
                match self.heard_probe(answer) {
                    Probe::Offered(found) => self.stateless(found),
                    Probe::Outage(e) => Err(self.fail(e, Advice::None)),
                    Probe::AskAgain | Probe::Handshake(_) => self.handshake(true).await,
                }
            }
            Probe::Outage(e) => Err(self.fail(e, Advice::None)),
            Probe::Handshake(named) => {
                if let Some(version) = named {
                    self.init.protocol_version = version;
                }
                self.handshake(true).await
            }
        }
    }

    /// Discover mode: the stateless era or an error.
    pub(crate) async fn discover_only(mut self) -> Result<Settled, SessionError> {
        let answer = self.probe().await;
        let answer = match self.heard_probe(answer) {
            Probe::AskAgain => {
                let answer = self.probe().await;
                self.heard_probe(answer)
            }
            other => other,
        };
        match answer {
            Probe::Offered(found) => self.stateless(found),
            Probe::Outage(e) => Err(self.fail(e, Advice::None)),
            Probe::AskAgain | Probe::Handshake(_) => Err(self.fail(
                SessionError::refused("the server does not offer protocol 2026-07-28"),
                Advice::NotOffered,
            )),
        }
    }

    /// Handshake mode: the handshake, with another revision when the server names one.
    pub(crate) async fn legacy_only(self) -> Result<Settled, SessionError> {
        self.handshake(false).await
    }

    /// Sends `server/discover` (its answer is awaited under the request timeout).
    fn probe(&mut self) -> RequestHandle<DiscoverResult> {
        self.probes += 1;
        let params = RequestParams::new().with_meta(self.envelope.clone());
        self.peer
            .start_request::<DiscoverRequest>(Some(params), RequestOptions::default())
    }

    /// Sends `initialize` with the current revision.
    fn initialize(&mut self) -> RequestHandle<InitializeResult> {
        self.offered.push(self.init.protocol_version.clone());
        self.peer
            .start_request::<InitializeRequest>(self.init.clone(), RequestOptions::default())
    }

    /// Reads the probe's answer, noting it.
    fn heard_probe(&mut self, answer: Result<DiscoverResult, SessionError>) -> Probe {
        let what = "server/discover (2026-07-28)";
        match answer {
            Ok(found) => {
                self.note(format!(
                    "{what}: offered {}",
                    found.supported_versions.join(", ")
                ));
                if found
                    .supported_versions
                    .iter()
                    .any(|v| v == modern().as_str())
                {
                    Probe::Offered(Box::new(found))
                } else {
                    Probe::Handshake(self.legacy_named(&found.supported_versions))
                }
            }
            Err(e) => {
                self.note(format!("{what}: {}", came_back(&e)));
                if e.is_undelivered() || e.is_interrupted() {
                    // Nobody answered: an outage says nothing about the server's era.
                    return Probe::Outage(e);
                }
                let named = supported_named(&e);
                if named.iter().any(|v| v == modern().as_str()) && self.probes < 2 {
                    return Probe::AskAgain;
                }
                Probe::Handshake(self.legacy_named(&named))
            }
        }
    }

    /// The newest handshake revision in `named` that this client speaks and has not
    /// offered yet.
    fn legacy_named(&self, named: &[String]) -> Option<ProtocolVersion> {
        ProtocolVersion::HANDSHAKE.into_iter().find(|v| {
            named.iter().any(|n| n == v.as_str())
                && !self.offered.contains(v)
                && self.accepted.contains(v)
        })
    }

    /// The stateless era from a discover answer that offers it.
    fn stateless(self, found: Box<DiscoverResult>) -> Result<Settled, SessionError> {
        match stateless::negotiated(&found) {
            Ok(init) => Ok(Settled::Stateless(init, Some(found), true)),
            Err(e) => Err(self.fail(e, Advice::None)),
        }
    }

    /// The handshake, sent again with each revision the server names that this client
    /// speaks. `probed`: a probe came before it (auto mode), so a `-32022` naming
    /// 2026-07-28 is worth one more probe, and a refusal may come from something in
    /// between that took the probe for the start of its own session.
    async fn handshake(mut self, probed: bool) -> Result<Settled, SessionError> {
        loop {
            let answer = self.initialize().await;
            match self.heard_initialize(answer) {
                Init::Done(init) => return Ok(Settled::Handshake(*init)),
                Init::Again(version) => self.init.protocol_version = version,
                Init::Modern(e) if probed && self.probes < 2 => {
                    let answer = self.probe().await;
                    return match self.heard_probe(answer) {
                        Probe::Offered(found) => self.stateless(found),
                        _ => Err(self.fail(e, Advice::None)),
                    };
                }
                Init::Modern(e) if probed => return Err(self.fail(e, Advice::None)),
                Init::Modern(e) => return Err(self.fail(e, Advice::ModernOnly)),
                Init::Failed(e) if probed => return Err(self.fail(e, Advice::PinTheEra)),
                Init::Failed(e) => return Err(self.fail(e, Advice::None)),
            }
        }
    }

    /// Reads `initialize`'s answer, noting it.
    fn heard_initialize(&mut self, answer: Result<InitializeResult, SessionError>) -> Init {
        let offered = self.init.protocol_version.clone();
        let what = format!("initialize ({offered})");
        match answer {
            Ok(init)
                if !self.accepted.contains(&init.protocol_version)
                    && init.protocol_version.is_handshake() =>
            {
                self.note(format!(
                    "{what}: chose {}, which is not among this client's supported versions ({})",
                    init.protocol_version,
                    self.accepted.listed()
                ));
                Init::Failed(SessionError::refused(format!(
                    "the server chose protocol version {}, which is not among this client's supported versions ({})",
                    init.protocol_version,
                    self.accepted.listed()
                )))
            }
            Ok(init) if init.protocol_version.is_handshake() => {
                self.note(format!("{what}: chose {}", init.protocol_version));
                Init::Done(Box::new(init))
            }
            Ok(init) => {
                self.note(format!(
                    "{what}: chose {}, which this client does not speak",
                    init.protocol_version
                ));
                Init::Failed(SessionError::refused(format!(
                    "the server chose protocol version {}, which this client does not support",
                    init.protocol_version
                )))
            }
            Err(e) => {
                self.note(format!("{what}: {}", came_back(&e)));
                let named = supported_named(&e);
                if let Some(version) = self.legacy_named(&named) {
                    return Init::Again(version);
                }
                if named.iter().any(|v| v == modern().as_str()) {
                    return Init::Modern(e);
                }
                Init::Failed(e)
            }
        }
    }

    /// Auto mode once the probe wait ran out: `initialize` beside the unanswered probe,
    /// and the answers of both decide (see the module's documentation).
    async fn race(
        mut self,
        mut probe: RequestHandle<DiscoverResult>,
        wait: Duration,
    ) -> Result<Settled, SessionError> {
        let mut init = Some(self.initialize());
        let mut probe_open = true;
        // The probe's answer when it offers the era, with the time it came.
        let mut offered: Option<(Box<DiscoverResult>, tokio::time::Instant)> = None;
        // Whether an answer named 2026-07-28 (a `-32022`) without the era settled yet.
        let mut named_modern = false;
        // A handshake revision the probe's answer named, to offer if `initialize` fails.
        let mut named_legacy: Option<ProtocolVersion> = None;
        let mut last_error: Option<SessionError> = None;
        loop {
            let grace_until = offered.as_ref().map(|(_, at)| *at + wait);
            tokio::select! {
                answer = &mut probe, if probe_open => {
                    probe_open = false;
                    match self.heard_probe(answer) {
                        Probe::Offered(found) => {
                            offered = Some((found, tokio::time::Instant::now()));
                        }
                        Probe::AskAgain => named_modern = true,
                        Probe::Outage(e) if init.is_none() => return Err(self.fail(e, Advice::None)),
                        Probe::Outage(e) => {
                            last_error.get_or_insert(e);
                        }
                        Probe::Handshake(named) => named_legacy = named,
                    }
                }
                answer = async {
                    match init.as_mut() {
                        Some(handle) => handle.await,
                        None => std::future::pending().await,
                    }
                } => {
                    init = None;
                    match self.heard_initialize(answer) {
                        // The server opened a session of that era for this connection.
                        Init::Done(result) => {
                            if probe_open {
                                probe.canceller().cancel("the server answered initialize").await;
                            }
                            return Ok(Settled::Handshake(*result));
                        }
                        Init::Again(version) => {
                            self.init.protocol_version = version;
                            init = Some(self.initialize());
                        }
                        Init::Modern(e) => {
                            named_modern = true;
                            last_error = Some(e);
                        }
                        Init::Failed(e) => last_error = Some(e),
                    }
                }
                () = async {
                    match grace_until {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    self.note(format!(
                        "initialize ({}): no answer within the probe wait ({}) after \
                         server/discover answered",
                        self.init.protocol_version,
                        shown(wait)
                    ));
                    // Dropping the handle abandons `initialize` (never announced as
                    // cancelled).
                    init = None;
                }
            }
            if init.is_some() {
                // The answer to `initialize` decides whenever it comes.
                continue;
            }
            if let Some((found, _)) = offered.take() {
                return self.stateless(found);
            }
            if probe_open {
                continue;
            }
            if let Some(version) = named_legacy.take().filter(|v| !self.offered.contains(v)) {
                self.init.protocol_version = version;
                init = Some(self.initialize());
                continue;
            }
            if named_modern && self.probes < 2 {
                let answer = self.probe().await;
                if let Probe::Offered(found) = self.heard_probe(answer) {
                    return self.stateless(found);
                }
            }
            let error = last_error
                .take()
                .unwrap_or_else(|| SessionError::refused("no era settled"));
            let advice = if named_modern {
                Advice::None
            } else {
                Advice::PinTheEra
            };
            return Err(self.fail(error, advice));
        }
    }

    fn note(&mut self, line: String) {
        self.report.push(line);
    }

    /// `error`, told with everything that was sent and what came back, then `advice`.
    fn fail(&self, error: SessionError, advice: Advice) -> SessionError {
        let mut text = String::from("no protocol era settled with the server: sent ");
        text.push_str(&self.report.join("; then "));
        match advice {
            Advice::None => {}
            Advice::PinTheEra if self.probes > 0 => {
                let _ = write!(
                    text,
                    ". The server refused the handshake after the probe: if something in \
                     between (a proxy) opened its own session with the server on the probe, \
                     pin the era instead of probing (mode `legacy`, or `{}`)",
                    modern()
                );
            }
            Advice::PinTheEra => {}
            Advice::NotOffered => text.push_str(
                ". Discover mode does not fall back to the handshake: connect in auto or \
                 legacy mode",
            ),
            Advice::ModernOnly => text.push_str(
                ". The server speaks protocol 2026-07-28 only: connect in auto or discover \
                 mode",
            ),
        }
        error.explained(text)
    }
}

/// What a failure's explanation suggests.
#[derive(Clone, Copy)]
enum Advice {
    None,
    /// Pin the era: a proxy may have taken the probe for the start of its own session.
    PinTheEra,
    /// Discover mode met a server that does not offer the era.
    NotOffered,
    /// Handshake mode met a server of the stateless era only.
    ModernOnly,
}

/// What a probe's answer means.
enum Probe {
    /// The server offers 2026-07-28.
    Offered(Box<DiscoverResult>),
    /// A `-32022` naming 2026-07-28: ask once more.
    AskAgain,
    /// The request never reached the server.
    Outage(SessionError),
    /// The handshake era, with a revision the server named, if any.
    Handshake(Option<ProtocolVersion>),
}

/// What `initialize`'s answer means.
enum Init {
    /// A session of a revision this client speaks.
    Done(Box<InitializeResult>),
    /// Refused, naming another revision this client speaks: send it with that one.
    Again(ProtocolVersion),
    /// Refused, naming 2026-07-28 (and no handshake revision this client speaks).
    Modern(SessionError),
    /// Refused otherwise.
    Failed(SessionError),
}

/// The revisions a `-32022` names in `data.supported`.
fn supported_named(error: &SessionError) -> Vec<String> {
    error
        .protocol_error()
        .filter(|e| e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What came back, for the report.
fn came_back(error: &SessionError) -> String {
    if error.is_undelivered() || error.is_interrupted() {
        return error.to_string();
    }
    match error.protocol_error() {
        Some(e) => {
            let mut text = format!("error {}: {}", e.code.0, e.message);
            let named = supported_named(error);
            if !named.is_empty() {
                let _ = write!(text, " (supported: {})", named.join(", "));
            }
            text
        }
        None => error.to_string(),
    }
}

/// A duration as a person reads it.
fn shown(wait: Duration) -> String {
    if wait.subsec_millis() == 0 && wait.as_secs() > 0 {
        format!("{} s", wait.as_secs())
    } else {
        format!("{} ms", wait.as_millis())
    }
}
