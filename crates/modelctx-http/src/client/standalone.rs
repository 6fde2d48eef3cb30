//! The standalone GET stream: opened once a session exists, kept open and reopened
//! with `Last-Event-ID` when it ends; when every reopening fails, the transport reports
//! it as its connection state (`ConnectionState::Failed`) and the next request opens it
//! anew.

use std::sync::Arc;

use http::{Method, StatusCode};
use modelctx_transport::ConnectionState;

use super::ClientInner;
use super::failure::SESSION_GONE;
use super::io::{is_sse, read_sse, reinitialize, request};

pub(super) fn maybe_start_standalone(inner: &Arc<ClientInner>) {
    if !inner.standalone {
        return;
    }
    let generation = {
        let mut st = inner.state();
        if st.standalone_started || st.session_id.is_none() || st.expired {
            return;
        }
        st.standalone_started = true;
        st.generation
    };
    let inner = inner.clone();
    tokio::spawn(async move {
        tokio::select! {
            biased;
            () = inner.closed.cancelled() => {}
            () = standalone(&inner, generation) => {}
        }
    });
}

/// Keeps the standalone GET stream open, reconnecting with `Last-Event-ID`.
async fn standalone(inner: &Arc<ClientInner>, generation: u64) {
    let mut last_id: Option<String> = None;
    let mut retry = inner.reconnect_delay;
    let mut failures = 0u32;
    let mut last_failure = String::from("the stream ended without an event");
    loop {
        if inner.state().generation != generation {
            return;
        }
        match request(inner, Method::GET, None, last_id.as_deref(), None).await {
            Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => return,
            Ok(response) if is_sse(&response) => {
                let read = read_sse(inner, response, None, None, &mut last_id).await;
                if let Some(r) = read.retry {
                    retry = r;
                }
                if read.events > 0 {
                    failures = 0;
                } else {
                    failures += 1;
                }
            }
            Ok(response) => {
                failures += 1;
                last_failure = format!("HTTP {} and no event stream", response.status());
            }
            Err(e) if inner.state().generation != generation => {
                // The server forgot the session (restarted, say). Under a policy that
                // reconnects, a new session starts now rather than at the next request,
                // so that the server's own messages (resource updates, list changes)
                // come again; it opens its own standalone stream.
                if e.to_string().contains(SESSION_GONE)
                    && inner.policy.attempts() > 0
                    && inner.state().expired
                {
                    let _ = reinitialize(inner).await;
                }
                return;
            }
            Err(e) => {
                failures += 1;
                last_failure = e.to_string();
            }
        }
        if failures > inner.max_reconnects {
            // Given up: said where the transport's failures go (the handle's
            // `connection_state`), not kept for a request that has nothing to do with it.
            // The next request reports `Connected` again, and opens a new stream.
            inner.state().standalone_started = false;
            inner.set_connection(ConnectionState::Failed(format!(
                "the standalone GET stream could not be reopened ({failures} attempts): {last_failure}"
            )));
            return;
        }
        tokio::time::sleep(retry).await;
    }
}
