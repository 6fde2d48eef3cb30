//! Single-use rounds (protocol 2026-07-28): a round whose retry has effects is served
//! once per `requestState`; the state sent again is refused, at the same server or at
//! another sharing the store. A scripted client (`MockPeer`) sends raw messages; every
//! wait is bounded by the mock's timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx_memory::MockPeer;
use modelctx_server::Server;
use modelctx_store::{InMemorySingleUseIds, SingleUseIds};
use modelctx_types::{ErrorCode, ErrorData, RequestId};
use serde_json::{Value, json};

use crate::support::{envelope, serve};

/// The test kit's `pay` (asks for approval, then pays: counted in `paid`, it says
/// `paid (<n>)`), its rounds single-use through `single_use` when given.
fn payer(paid: Arc<AtomicUsize>, single_use: Option<Arc<dyn SingleUseIds>>) -> Server {
    let pay = modelctx_test::pay_tool(paid);
    let builder = Server::builder("payer", "1.0.0")
        .request_state_key([3; 32])
        .tool(pay)
        .unwrap();
    match single_use {
        Some(store) => builder.single_use_rounds(store),
        None => builder,
    }
    .build()
}

fn meta() -> Value {
    envelope(json!({"elicitation": {}}))
}

/// Calls `pay` and answers with the state of its first round.
async fn first_round(mock: &mut MockPeer, id: i64) -> Value {
    mock.request(
        id,
        "tools/call",
        json!({"name": "pay", "arguments": {}, "_meta": meta()}),
    )
    .await;
    let interim = mock.expect_result(id).await;
    assert_eq!(interim["resultType"], "input_required");
    interim["requestState"].clone()
}

/// The approving retry of the round whose state is `state`.
async fn approve(mock: &mut MockPeer, id: i64, state: &Value) {
    mock.request(
        id,
        "tools/call",
        json!({"name": "pay", "arguments": {}, "_meta": meta(),
            "inputResponses": {"approve": {"action": "accept", "content": {}}},
            "requestState": state}),
    )
    .await;
}

/// [`approve`], answered: the text of the result.
async fn approved(mock: &mut MockPeer, id: i64, state: &Value) -> Value {
    approve(mock, id, state).await;
    mock.expect_result(id).await["content"][0]["text"].clone()
}

/// [`approve`], refused: the error.
async fn refused(mock: &mut MockPeer, id: i64, state: &Value) -> ErrorData {
    approve(mock, id, state).await;
    mock.expect_error(Some(RequestId::from(id))).await
}

#[tokio::test]
async fn a_replayed_state_is_refused_when_rounds_are_single_use() {
    let paid = Arc::new(AtomicUsize::new(0));
    let store: Arc<dyn SingleUseIds> = Arc::new(InMemorySingleUseIds::new());
    let (_session, mut mock) = serve(&payer(paid.clone(), Some(store)));
    let state = first_round(&mut mock, 1).await;
    assert_eq!(approved(&mut mock, 2, &state).await, "paid (1)");
    // The same approval sent again: refused before the handler runs.
    let error = refused(&mut mock, 3, &state).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("used before"), "{error}");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    // A new request goes through its rounds again.
    let state = first_round(&mut mock, 4).await;
    assert_eq!(approved(&mut mock, 5, &state).await, "paid (2)");
}

#[tokio::test]
async fn without_the_option_a_state_serves_every_retry() {
    let paid = Arc::new(AtomicUsize::new(0));
    let (_session, mut mock) = serve(&payer(paid.clone(), None));
    let state = first_round(&mut mock, 1).await;
    approved(&mut mock, 2, &state).await;
    assert_eq!(approved(&mut mock, 3, &state).await, "paid (2)");
}

#[tokio::test]
async fn a_state_used_at_one_server_is_refused_at_another_sharing_the_store() {
    let paid = Arc::new(AtomicUsize::new(0));
    let store: Arc<dyn SingleUseIds> = Arc::new(InMemorySingleUseIds::new());
    let (_a, mut at_a) = serve(&payer(paid.clone(), Some(store.clone())));
    let (_b, mut at_b) = serve(&payer(paid.clone(), Some(store)));
    let state = first_round(&mut at_a, 1).await;
    approved(&mut at_a, 2, &state).await;
    let error = refused(&mut at_b, 3, &state).await;
    assert!(error.message.contains("used before"), "{error}");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    // A state sealed by a server whose rounds are not single-use has no id: refused.
    let (_c, mut at_c) = serve(&payer(paid.clone(), None));
    let plain = first_round(&mut at_c, 4).await;
    let error = refused(&mut at_b, 5, &plain).await;
    assert!(error.message.contains("single-use"), "{error}");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}
