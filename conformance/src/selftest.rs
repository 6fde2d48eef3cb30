//! The harness self-tests: the harness checking its own tools on every transport. Their
//! names are listed in [`SELF_TESTS`](crate::contract::SELF_TESTS); they are the only
//! tests that name no requirement.

use modelctx_transport::{MessageSink, MessageStream, TransportMessage};
use modelctx_types::{JsonRpcMessage, JsonRpcNotification};

use crate::connect::Connector;
use crate::contract::SELF_TESTS;
use crate::registry::Test;
use crate::wait::within;
use crate::{Direction, record};

/// Every self-test, registered under its name in `SELF_TESTS`.
pub(crate) fn tests() -> Vec<Test> {
    vec![
        Test::new(
            SELF_TESTS[0],
            &[],
            connector_delivers_in_order_and_close_ends_stream,
        ),
        Test::new(
            SELF_TESTS[1],
            &[],
            recording_records_both_directions_in_order,
        ),
    ]
}

fn note(method: &str) -> TransportMessage {
    TransportMessage::new(JsonRpcNotification::new(method.to_owned(), None).into())
}

async fn next_method(stream: &mut dyn MessageStream) -> String {
    let message = within("the next message", stream.recv())
        .await
        .expect("the stream ended early")
        .expect("the stream reported a fault");
    message.message.method().unwrap_or_default().to_owned()
}

async fn connector_delivers_in_order_and_close_ends_stream(connect: Connector) {
    let ((client_sink, mut client_stream), (server_sink, mut server_stream)) =
        connect.transport_pair().await;

    for i in 0..3 {
        within("a send", client_sink.send(note(&format!("c/{i}"))))
            .await
            .unwrap();
        within("a send", server_sink.send(note(&format!("s/{i}"))))
            .await
            .unwrap();
    }
    for i in 0..3 {
        assert_eq!(next_method(&mut *server_stream).await, format!("c/{i}"));
        assert_eq!(next_method(&mut *client_stream).await, format!("s/{i}"));
    }

    client_sink.close().await;
    assert!(
        within("end of stream", server_stream.recv())
            .await
            .is_none()
    );
    server_sink.close().await;
    assert!(
        within("end of stream", client_stream.recv())
            .await
            .is_none()
    );
}

async fn recording_records_both_directions_in_order(connect: Connector) {
    let (client, (server_sink, mut server_stream)) = connect.transport_pair().await;
    let ((client_sink, mut client_stream), recording) = record(client);

    client_sink.send(note("one")).await.unwrap();
    assert_eq!(next_method(&mut *server_stream).await, "one");
    server_sink.send(note("two")).await.unwrap();
    assert_eq!(next_method(&mut *client_stream).await, "two");
    client_sink.send(note("three")).await.unwrap();
    assert_eq!(next_method(&mut *server_stream).await, "three");

    let log = recording.wait_for_count(3).await;
    let seen: Vec<(Direction, Option<&str>)> = log
        .iter()
        .map(|r| (r.direction, r.message.message.method()))
        .collect();
    assert_eq!(
        seen,
        [
            (Direction::Sent, Some("one")),
            (Direction::Received, Some("two")),
            (Direction::Sent, Some("three")),
        ]
    );
    let sent: Vec<JsonRpcMessage> = recording.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(recording.received().len(), 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_self_tests_are_the_listed_ones() {
        let names: Vec<String> = tests().iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(names, SELF_TESTS);
    }
}
