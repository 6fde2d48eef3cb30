//! Case 17: the ids of different clients never cross.

use super::*;

/// Case 17 on session-less streamable HTTP (the shared transport): two clients post a
/// request with the same id 0 at the same time; both are in their handlers together
/// (the rendezvous answers only then), and each POST gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_17_two_clients_using_id_0_on_stateless_http_never_cross() {
    let (server, _controls, _) = fault_server();
    let hosted = host(server, StreamableHttpServerConfig::default().sessionless()).await;
    let post = |who: &str| {
        let raw = Raw::new(&hosted.url);
        let body =
            json!({"jsonrpc": "2.0", "id": 0, "method": "test/rendezvous", "params": {"who": who}});
        async move { send(raw.post_as(None, Some("2025-11-25"), &body)).await }
    };
    let (a, b) = within("both answers", async { tokio::join!(post("a"), post("b")) }).await;
    for (who, r) in [("a", a), ("b", b)] {
        assert_eq!(r.status, 200, "{r:?}");
        let messages = r.messages();
        assert_eq!(messages.len(), 1, "one answer per POST: {r:?}");
        assert_eq!(messages[0]["id"], json!(0), "{r:?}");
        assert_eq!(messages[0]["result"]["who"], json!(who), "{r:?}");
    }
}

/// Case 17 on one session of each byte transport: a second request reusing the id of
/// one still in flight is refused with -32600 and never overwrites it; the first one
/// still gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_17_duplicate_in_flight_id_is_refused_on_stdio() {
    let (server, controls, mut started) = fault_server();
    let mut wire = Wire::stdio(&server).await;
    wire.write_line(br#"{"jsonrpc":"2.0","id":7,"method":"test/wait","params":{"first":true}}"#)
        .await;
    within("the first handler to start", started.recv()).await;
    wire.write_line(br#"{"jsonrpc":"2.0","id":7,"method":"test/echo","params":{"second":true}}"#)
        .await;
    let refusal = wire.next_message().await;
    assert_eq!(refusal["id"], json!(7), "{refusal}");
    assert_eq!(refusal["error"]["code"], json!(-32600), "{refusal}");
    assert_eq!(
        controls.echoes.load(Ordering::SeqCst),
        0,
        "the duplicate never ran"
    );
    controls.release.notify_one();
    let answer = wire.next_message().await;
    assert_eq!(answer["id"], json!(7), "{answer}");
    assert_eq!(answer["result"]["first"], json!(true), "{answer}");
}
