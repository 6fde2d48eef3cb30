//! The client transport's backoff on refused connections, on tokio's paused clock: the
//! waits are the policy's to the nanosecond (jitter off) and cost no real time.
//!
//! The runtime under test runs paused on a thread of its own, and the test's bound is a
//! real-time wait on that thread's result: a `tokio::time::timeout` inside a paused
//! runtime would be advanced past while the runtime waits on a socket. For the same
//! reason no server runs on the paused clock (its header and heartbeat timers would
//! jump ahead while a socket is read): the server coming up during the backoff is
//! `crates/modelctx/tests/facade/reconnect.rs`'s, on the real clock with short waits.
#![cfg(feature = "client")]

use std::time::Duration;

use modelctx_http::StreamableHttpClientTransport;
use modelctx_transport::{
    ConnectionState, MessageSink, MessageStream, ReconnectPolicy, Transport, TransportMessage,
};
use modelctx_types::JsonRpcMessage;
use tokio::time::Instant;

const LIMIT: Duration = Duration::from_secs(30);

/// Runs `test` on a paused current-thread runtime of its own thread, bounded in real time.
fn paused<F>(test: impl FnOnce() -> F + Send + 'static)
where
    F: std::future::Future<Output = ()>,
{
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(test());
        let _ = done_tx.send(());
    });
    done.recv_timeout(LIMIT)
        .expect("the test finished (or panicked) in time");
}

fn policy() -> ReconnectPolicy {
    ReconnectPolicy::new()
        .initial_delay(Duration::from_secs(1))
        .max_delay(Duration::from_secs(4))
        .max_attempts(4)
        .jitter(false)
}

/// A loopback address nobody listens on.
fn refused() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

fn ping() -> TransportMessage {
    TransportMessage::new(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#
            .parse::<JsonRpcMessage>()
            .unwrap(),
    )
}

#[test]
fn a_refused_request_waits_the_doubling_capped_backoff_then_fails_as_undelivered() {
    paused(|| async {
        let addr = refused();
        let transport = StreamableHttpClientTransport::builder(&format!("http://{addr}/mcp"))
            .reconnect_policy(policy())
            .build()
            .unwrap();
        let mut state = transport.handle().connection_state();
        let (sink, mut stream) = transport.split();
        let start = Instant::now();
        sink.send(ping()).await.unwrap();
        let mut attempts = Vec::new();
        let failed = loop {
            state.changed().await.unwrap();
            let now = state.borrow_and_update().clone();
            match now {
                ConnectionState::Reconnecting { attempt } => {
                    attempts.push((attempt, start.elapsed()));
                }
                other => break other,
            }
        };
        // Each attempt is reported when its wait begins: after 0, 1, 1+2 and 1+2+4 s.
        let secs = |s| Duration::from_secs(s);
        assert_eq!(
            attempts,
            [(1, secs(0)), (2, secs(1)), (3, secs(3)), (4, secs(7))]
        );
        assert!(matches!(failed, ConnectionState::Failed(_)), "{failed:?}");
        // The fourth wait was capped at 4 s: 1 + 2 + 4 + 4.
        assert_eq!(start.elapsed(), secs(11));
        let answer = stream.recv().await.unwrap().unwrap().message;
        let JsonRpcMessage::Error(error) = answer else {
            panic!("an error answer: {answer:?}")
        };
        assert!(
            modelctx_transport::is_undelivered(&error.error),
            "{error:?}"
        );
        assert!(error.error.message.contains("5 attempts"), "{error:?}");
    });
}
