//! End to end: a server over streamable HTTP keeps its events in Redis; a call whose
//! stream breaks in the middle resumes with `Last-Event-ID` and the client gets every
//! event and the result exactly once, in order, replayed from Redis.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{RedisServer, WITHIN, hearing, json_request};
use modelctx::client::{Client, ConnectMode};
use modelctx::http::{
    StreamControl, StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::Server;
use modelctx::types::{ErrorData, NotificationMethod};
use serde_json::{Value, json};

json_request!(Work, "test/work");

struct Note;
impl NotificationMethod for Note {
    const METHOD: &'static str = "test/note";
    type Params = Value;
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_call_resumes_from_redis_with_every_event_once() {
    let redis = RedisServer::start();
    let store = modelctx_redis::EventStore::new(
        redis.connection().await,
        modelctx_redis::EventStoreConfig::default().prefix("e2e:"),
    );
    let config = StreamableHttpServerConfig::default()
        .retry_interval(Duration::from_millis(50))
        .event_store(Arc::new(store));

    // `test/work` sends three notes, closing its own stream's connection after the
    // first, and answers: the rest of the stream reaches the client only by replay.
    let control: Arc<Mutex<Option<StreamControl>>> = Arc::new(Mutex::new(None));
    let in_handler = control.clone();
    let server = Server::builder("resumable", "1.0.0")
        .request_handler::<Work, _, _>(move |_, cx| {
            let control = in_handler.lock().unwrap().clone();
            async move {
                cx.notify::<Note>(json!({"n": 1})).await.map_err(internal)?;
                let closed = control.is_some_and(|c| c.close_request_stream(cx.request_id()));
                cx.notify::<Note>(json!({"n": 2})).await.map_err(internal)?;
                cx.notify::<Note>(json!({"n": 3})).await.map_err(internal)?;
                Ok(json!({"closed": closed}))
            }
        })
        .build();
    let service = StreamableHttpService::with_config(config, move |transport| {
        *control.lock().unwrap() = Some(transport.stream_control());
        server.serve(transport);
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(service.serve(listener, async move {
        let _ = stopped.await;
    }));

    let transport = StreamableHttpClientTransport::builder(&url)
        .reconnect(Duration::from_millis(50), 5)
        .build()
        .unwrap();
    let (client, mut notes) =
        hearing::<Note>(Client::builder("resumer", "1.0.0").mode(ConnectMode::Handshake));
    let client = client.connect(transport);
    let client = tokio::time::timeout(WITHIN, client).await.unwrap().unwrap();

    let answer = tokio::time::timeout(WITHIN, client.request::<Work>(json!({})))
        .await
        .expect("the call ends")
        .expect("the call succeeds");
    assert_eq!(answer, json!({"closed": true}), "the stream really broke");
    for n in 1..=3 {
        let note = tokio::time::timeout(WITHIN, notes.recv()).await.unwrap();
        assert_eq!(note, Some(json!({"n": n})));
    }
    // The stream's events are in Redis.
    let keys = redis.keys().await;
    assert!(keys.iter().any(|k| k.starts_with("e2e:ev:{")), "{keys:?}");

    // Once only: nothing else arrives once a later call has come back on the session.
    let again = tokio::time::timeout(WITHIN, client.request::<Work>(json!({}))).await;
    assert!(again.unwrap().is_ok());
    for n in 1..=3 {
        let note = tokio::time::timeout(WITHIN, notes.recv()).await.unwrap();
        assert_eq!(
            note,
            Some(json!({"n": n})),
            "the second call's notes, no repeat"
        );
    }
    assert!(notes.try_recv().is_err(), "no duplicate");

    drop(client);
    let _ = stop.send(());
    let _ = tokio::time::timeout(WITHIN, serving).await;
}
