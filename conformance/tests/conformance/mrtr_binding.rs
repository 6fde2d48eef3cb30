//! What a `requestState` is good for (protocol 2026-07-28): the request it was sealed
//! for, until it expires, and, where a layer in front of the server authenticates its
//! callers, the caller it was sealed for. Presented by anything else it is refused
//! (`-32602`) before the handler runs again; the request sent again without it starts
//! over.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use modelctx::client::{ConnectMode, Round};
use modelctx::session::SessionError;
use modelctx::types::{CallToolResult, ErrorCode, ErrorData};
use modelctx_conformance::{Connector, Test, TransportKind, conformance_test};
use serde_json::json;

use crate::mrtr::{ada, asking_builder, first_round, grace, round};
use crate::support::{connect, connect_as, serve_as_users};

pub(crate) fn tests() -> Vec<Test> {
    vec![conformance_test!(
        a_state_is_good_for_its_request_its_lifetime_and_its_caller,
        ["mrtr:request-state:replay-binding"]
    )]
}

/// The refusal `outcome` must be: invalid params, from the server.
fn refused(outcome: Result<Round<CallToolResult>, SessionError>, what: &str) -> ErrorData {
    let err = outcome.expect_err(what);
    let err = err
        .protocol_error()
        .unwrap_or_else(|| panic!("{what}: the server's error, got {err:?}"))
        .clone();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{what}: {err:?}");
    err
}

fn completed(outcome: Result<Round<CallToolResult>, SessionError>) -> String {
    match outcome.expect("the retry") {
        Round::Complete(result) => result.content[0].as_text().unwrap_or_default().to_owned(),
        other => panic!("expected the result, got {other:?}"),
    }
}

async fn a_state_is_good_for_its_request_its_lifetime_and_its_caller(connector: Connector) {
    // Another request: `greet` asked for a name; the state comes back on a `greet`
    // with other arguments.
    let runs = Arc::new(AtomicUsize::new(0));
    let pair = connect(&connector, &asking_builder(runs.clone()).build(), ada()).await;
    let (mut params, asked, key) = first_round(&pair.client).await;
    params.request_state = asked.request_state;
    params.input_responses = Some([(key, grace())].into_iter().collect());
    let mut other = params.clone();
    other.arguments = json!({"as": "someone else"}).as_object().cloned();
    let err = refused(
        round(&pair.client, other).await,
        "a state on another request",
    );
    assert!(err.message.contains("another request"), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran again");
    // On its own request it is good.
    assert_eq!(
        completed(round(&pair.client, params).await),
        "Hello, Grace!"
    );

    // Its expiry: a server whose states last no time at all.
    let runs = Arc::new(AtomicUsize::new(0));
    let brief = asking_builder(runs.clone())
        .request_state_lifetime(Duration::ZERO)
        .build();
    let pair = connect(&connector, &brief, ada()).await;
    let (mut params, asked, key) = first_round(&pair.client).await;
    params.request_state = asked.request_state;
    params.input_responses = Some([(key, grace())].into_iter().collect());
    let err = refused(
        round(&pair.client, params.clone()).await,
        "an expired state",
    );
    assert!(err.message.contains("expired"), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran again");
    // Sent again without it, the request starts over.
    params.request_state = None;
    params.input_responses = None;
    match round(&pair.client, params)
        .await
        .expect("the request again")
    {
        Round::InputRequired(again) => assert!(again.input_requests.is_some(), "{again:?}"),
        other => panic!("expected the question again, got {other:?}"),
    }

    // Its caller, where callers are authenticated: streamable HTTP behind a layer that
    // names them (one instance, or two sharing the state key).
    if connector.kind() != TransportKind::StreamableHttp {
        return;
    }
    let mut endpoint = connector.http_endpoint().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let server = asking_builder(runs.clone())
        .request_state_key([7; 32])
        .build();
    let url = serve_as_users(&mut endpoint, vec![server]).await;
    let caller = || ada().mode(ConnectMode::Discover);
    let alice = connect_as(&url, "alice", caller()).await;
    let bob = connect_as(&url, "bob", caller()).await;
    let (mut params, asked, key) = first_round(&alice).await;
    params.request_state = asked.request_state;
    params.input_responses = Some([(key, grace())].into_iter().collect());
    let err = refused(round(&bob, params.clone()).await, "alice's state from bob");
    assert!(err.message.contains("another request"), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran again");
    assert_eq!(completed(round(&alice, params).await), "Hello, Grace!");
}
