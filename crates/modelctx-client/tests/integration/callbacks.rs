//! The runtime guarantees the typed callbacks rely on: they run off the receive loop,
//! and the server can cancel them.

use std::time::Duration;

use modelctx_client::{CallbackContext, Client, ConnectMode, SamplingSupport};
use modelctx_server::{Server, ServerSession};
use modelctx_session::RequestOptions;
use modelctx_test::within;
use modelctx_types::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ErrorData,
    SamplingMessage,
};
use tokio::sync::{mpsc, oneshot};

const WAIT: Duration = Duration::from_secs(5);

fn hello() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hello")], 10)
}

/// A server's session with a client that answers its sampling requests with
/// `callback`, once the handshake is done.
async fn connected_sampling_with<F, Fut>(callback: F) -> (ServerSession, Client)
where
    F: Fn(CreateMessageRequestParams, CallbackContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CreateMessageResult, ErrorData>> + Send + 'static,
{
    let (client_side, server_side) = modelctx_memory::pair();
    let session = Server::builder("s", "1").build().serve(server_side);
    let client = Client::builder("c", "1")
        // Requests from the server: the handshake era.
        .mode(ConnectMode::Handshake)
        .sampling(SamplingSupport::new(), callback)
        .connect(client_side)
        .await
        .unwrap();
    within(WAIT, "initialized", session.initialized()).await;
    (session, client)
}

/// Sends on drop: proves the callback's future was dropped (stopped), not finished.
struct Dropped(Option<oneshot::Sender<()>>);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_callback_does_not_block_the_session() {
    let (gate_tx, gate_rx) = oneshot::channel::<()>();
    let gate = std::sync::Mutex::new(Some(gate_rx));
    let (session, _client) = connected_sampling_with(move |_params, _cx| {
        let gate = gate.lock().unwrap().take();
        async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            Ok(CreateMessageResult::assistant_text("done", "m"))
        }
    })
    .await;

    let pending = session
        .peer()
        .start_request::<CreateMessageRequest>(hello(), RequestOptions::new());
    // While the callback waits, the client still answers other requests.
    within(WAIT, "a ping during the callback", session.ping())
        .await
        .unwrap();
    gate_tx.send(()).unwrap();
    let result = within(WAIT, "the sampling result", pending).await.unwrap();
    assert_eq!(result.content.blocks()[0].as_text(), Some("done"));
}

#[tokio::test(flavor = "current_thread")]
async fn the_server_can_cancel_a_callback() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = oneshot::channel();
    let dropped_tx = std::sync::Mutex::new(Some(dropped_tx));
    let (session, _client) = connected_sampling_with(move |_params, cx| {
        let guard = Dropped(dropped_tx.lock().unwrap().take());
        let started = started_tx.clone();
        async move {
            let _guard = guard;
            let _ = started.send(());
            // Never answers on its own: only cancellation ends it.
            cx.cancellation().cancelled().await;
            std::future::pending::<Result<CreateMessageResult, _>>().await
        }
    })
    .await;

    let handle = session
        .peer()
        .start_request::<CreateMessageRequest>(hello(), RequestOptions::new());
    let canceller = handle.canceller();
    let waiting = tokio::spawn(handle);
    within(WAIT, "the callback to start", started.recv())
        .await
        .unwrap();
    canceller.cancel("no longer needed").await;
    within(WAIT, "the callback to be dropped", dropped)
        .await
        .unwrap();
    let outcome = within(WAIT, "the request to end", waiting).await.unwrap();
    assert!(outcome.unwrap_err().is_cancelled());
    // The session goes on.
    within(WAIT, "a ping after the cancel", session.ping())
        .await
        .unwrap();
}
