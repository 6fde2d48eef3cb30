//! Resumability over streamable HTTP: event ids, priming, replay, reconnection of the
//! client transport, and resuming a call with a saved token.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use modelctx::http::{EventId, StreamableHttpClientTransport, StreamableHttpServerConfig};
use modelctx::server::Server;
use modelctx::session::{Peer, RequestContext, RequestOptions, Service, SessionConfig};
use modelctx::types::{ErrorData, JsonRpcNotification, JsonRpcRequest, RawValue, RequestId};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::http_client::{gate, internal, noting_client, quick, session_of};
use crate::http_support::{
    Controls, Note, Raw, Seen, call, close_request_stream, host_on, read_events_until, send,
};
use crate::support::{Echo, Work, client, echo_server};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            the_standalone_stream_reconnects_with_last_event_id,
            ["client-transport:http:reconnect-get"]
        ),
        conformance_test!(
            a_broken_post_stream_resumes_only_after_priming,
            [
                "client-transport:http:reconnect-post-priming",
                "hosting:resume:close-stream",
                "transport:streamable-http:resumability"
            ]
        ),
        conformance_test!(
            the_server_retry_sets_the_reconnect_delay,
            ["client-transport:http:reconnect-retry-value"]
        ),
        conformance_test!(
            no_reconnect_after_the_response_or_after_close,
            [
                "client-transport:http:no-reconnect-after-response",
                "client-transport:http:no-reconnect-after-close"
            ]
        ),
        conformance_test!(
            a_saved_token_resumes_the_call_on_a_new_transport,
            [
                "client-transport:http:resume-stream-api",
                "flow:resume:tool-call-resumption-token"
            ]
        ),
        conformance_test!(
            sse_events_have_ids_and_streams_start_primed,
            ["hosting:resume:priming", "hosting:resume:event-ids"]
        ),
        conformance_test!(
            replay_sends_exactly_the_later_events_of_one_stream,
            ["hosting:resume:replay", "hosting:resume:stream-scoped"]
        ),
        conformance_test!(
            an_unmappable_last_event_id_is_refused,
            ["hosting:resume:bad-event-id"]
        ),
        conformance_test!(
            messages_sent_while_disconnected_are_replayed_in_order,
            ["hosting:resume:buffered-replay"]
        ),
        conformance_test!(
            a_dropped_connection_does_not_cancel_the_handler,
            ["hosting:http:disconnect-not-cancel"]
        ),
    ]
}

/// Whether `id` is of a standalone GET stream: stream 0 on one service; the copies of a
/// shared session number their streams from a random multiple of 2^32, the standalone
/// stream being that base (so two copies never share event ids).
fn is_standalone(id: &EventId) -> bool {
    id.stream.is_multiple_of(1 << 32)
}

fn last_event_id(s: &Seen) -> Option<EventId> {
    s.header("last-event-id").and_then(|v| v.parse().ok())
}

/// Sends the note `{"n": n}` from `session` and awaits the client's receipt of it.
async fn note_arrives(
    session: &modelctx::server::ServerSession,
    notes: &mut mpsc::UnboundedReceiver<Value>,
    n: u64,
) {
    session.notify::<Note>(json!({"n": n})).await.unwrap();
    let what = format!("note {n}");
    assert_eq!(within(&what, notes.recv()).await.unwrap(), json!({"n": n}));
}

async fn the_standalone_stream_reconnects_with_last_event_id(connect: Connector) {
    let mut hosted = host_on(&connect, Server::builder("push", "1.0.0").build(), quick()).await;
    let (transport, _) = hosted.transport();
    let (tx, mut notes) = mpsc::unbounded_channel();
    let _client = noting_client(tx).connect(transport).await.unwrap();
    let started = hosted.session().await;
    within("initialized", started.session.initialized()).await;
    hosted
        .wait_for("the standalone GET", |s| s.method == http::Method::GET)
        .await;
    note_arrives(&started.session, &mut notes, 1).await;
    let session = started.id.clone().expect("a session id");
    assert!(hosted.close_standalone_stream(&session));
    let again = hosted
        .wait_for("the reconnect", |s| {
            s.method == http::Method::GET && s.header("last-event-id").is_some()
        })
        .await;
    let id = last_event_id(&again).expect("an event id of ours");
    assert!(is_standalone(&id), "the standalone stream: {id}");
    assert!(
        id.seq >= 1,
        "the id of the last event received, past the priming one"
    );
    note_arrives(&started.session, &mut notes, 2).await;
}

/// A server whose `test/work` sends a note, closes its own stream's connection, then
/// sends another note and answers.
fn stream_closing_server(control: Arc<std::sync::Mutex<Option<Controls>>>) -> Server {
    Server::builder("closer", "1.0.0")
        .request_handler::<Work, _, _>(move |_, cx| {
            let control = control.lock().unwrap().clone();
            async move {
                cx.notify::<Note>(json!({"at": "before"}))
                    .await
                    .map_err(internal)?;
                let closed = control.is_some_and(|c| close_request_stream(&c, cx.request_id()));
                cx.notify::<Note>(json!({"at": "after"}))
                    .await
                    .map_err(internal)?;
                Ok(json!({"closed": closed}))
            }
        })
        .build()
}

async fn a_broken_post_stream_resumes_only_after_priming(connect: Connector) {
    // With an event store: primed stream, the client resumes and gets everything.
    let control = Arc::new(std::sync::Mutex::new(None));
    let hosted = host_on(&connect, stream_closing_server(control.clone()), quick()).await;
    let (transport, _) = hosted.transport();
    let (tx, mut notes) = mpsc::unbounded_channel();
    let primed = noting_client(tx).connect(transport).await.unwrap();
    *control.lock().unwrap() = Some(hosted.controls.clone());
    let r = within("the resumed call", primed.request::<Work>(json!({})))
        .await
        .unwrap();
    assert_eq!(r, json!({"closed": true}));
    assert_eq!(
        within("note", notes.recv()).await.unwrap(),
        json!({"at": "before"})
    );
    assert_eq!(
        within("note", notes.recv()).await.unwrap(),
        json!({"at": "after"})
    );
    let resumed = hosted
        .seen()
        .into_iter()
        .filter_map(|s| last_event_id(&s))
        .collect::<Vec<_>>();
    assert!(
        resumed.iter().any(|id| !is_standalone(id)),
        "resumed with GET + Last-Event-ID: {resumed:?}"
    );

    // Without an event store: no priming event, so no reconnect; the call fails.
    let control = Arc::new(std::sync::Mutex::new(None));
    let hosted = host_on(
        &connect,
        stream_closing_server(control.clone()),
        quick().without_event_store(),
    )
    .await;
    let (transport, _) = hosted.transport();
    let client = client().connect(transport).await.unwrap();
    *control.lock().unwrap() = Some(hosted.controls.clone());
    let err = within("the broken call to fail", client.request::<Work>(json!({})))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("ended before the response"),
        "{err}"
    );
    assert!(
        hosted
            .seen()
            .iter()
            .all(|s| s.header("last-event-id").is_none()),
        "no reconnect without a priming event"
    );
}

async fn the_server_retry_sets_the_reconnect_delay(connect: Connector) {
    let retry = Duration::from_millis(300);
    let control = Arc::new(std::sync::Mutex::new(None));
    let hosted = host_on(
        &connect,
        stream_closing_server(control.clone()),
        StreamableHttpServerConfig::default().retry_interval(retry),
    )
    .await;
    // The client's own default would wait far longer than the test allows.
    let transport = StreamableHttpClientTransport::builder(&hosted.url)
        .reconnect(Duration::from_secs(60), 3)
        .build()
        .unwrap();
    let client = client().connect(transport).await.unwrap();
    *control.lock().unwrap() = Some(hosted.controls.clone());
    let before = tokio::time::Instant::now();
    within("the call", client.request::<Work>(json!({})))
        .await
        .unwrap();
    let resumed = hosted
        .seen()
        .into_iter()
        .find(|s| last_event_id(s).is_some_and(|id| !is_standalone(&id)))
        .expect("a resumption GET");
    let waited = resumed.at - before;
    assert!(
        waited >= retry,
        "waited {waited:?}, the server asked for {retry:?}"
    );
}

async fn no_reconnect_after_the_response_or_after_close(connect: Connector) {
    let mut hosted = host_on(&connect, echo_server("r"), quick()).await;
    let (transport, _) = hosted.transport();
    let done = client().connect(transport).await.unwrap();
    let done_session = hosted.session().await;
    let (transport, _) = hosted.transport();
    let control_client = client().connect(transport).await.unwrap();
    let control = hosted.session().await;
    for i in 0..3 {
        done.request::<Echo>(json!({"i": i})).await.unwrap();
        control_client
            .request::<Echo>(json!({"i": i}))
            .await
            .unwrap();
    }
    let done_id = done_session.id.clone().unwrap();
    hosted
        .wait_for("both standalone GETs", |s| {
            s.method == http::Method::GET && session_of(s) == Some(done_id.as_str())
        })
        .await;
    done.close().await;
    let deleted_at = hosted
        .wait_for("the DELETE", |s| s.method == http::Method::DELETE)
        .await
        .at;
    // Positive control: the live client reconnects its dropped standalone stream.
    let control_id = control.id.clone().unwrap();
    hosted
        .wait_for("the control client's GET", |s| {
            s.method == http::Method::GET && session_of(s) == Some(control_id.as_str())
        })
        .await;
    assert!(hosted.close_standalone_stream(&control_id));
    hosted
        .wait_for("the control client's reconnect", |s| {
            s.method == http::Method::GET
                && session_of(s) == Some(control_id.as_str())
                && s.header("last-event-id").is_some()
        })
        .await;
    let seen = hosted.seen();
    assert!(
        seen.iter()
            .filter_map(last_event_id)
            .all(|id| is_standalone(&id)),
        "no POST stream was reconnected after its response"
    );
    assert!(
        !seen
            .iter()
            .any(|s| session_of(s) == Some(done_id.as_str()) && s.at > deleted_at),
        "nothing after close"
    );
}

/// A pre-initialised client-side service that forwards notes and nothing else.
struct NoteSink(mpsc::UnboundedSender<Value>);

impl Service for NoteSink {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        _: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        Box::pin(async move { Err(ErrorData::method_not_found(&request.method)) })
    }

    fn handle_notification(
        self: Arc<Self>,
        n: JsonRpcNotification,
        _: Peer,
    ) -> BoxFuture<'static, ()> {
        if n.method == "test/note"
            && let Some(p) = n.params.and_then(|p| serde_json::from_str(p.get()).ok())
        {
            let _ = self.0.send(p);
        }
        Box::pin(async {})
    }
}

async fn a_saved_token_resumes_the_call_on_a_new_transport(connect: Connector) {
    let control = Arc::new(std::sync::Mutex::new(None::<Controls>));
    let (open, gate) = gate();
    let handler_control = control.clone();
    let server = Server::builder("long", "1.0.0")
        .request_handler::<Work, _, _>(move |_, cx| {
            let control = handler_control.lock().unwrap().clone();
            let gate = gate.clone();
            async move {
                cx.notify::<Note>(json!({"n": 1})).await.map_err(internal)?;
                cx.notify::<Note>(json!({"n": 2})).await.map_err(internal)?;
                if let Some(c) = control {
                    close_request_stream(&c, cx.request_id());
                }
                gate.pass().await;
                cx.notify::<Note>(json!({"n": 3})).await.map_err(internal)?;
                Ok(json!("done"))
            }
        })
        .build();
    let hosted = host_on(&connect, server, quick()).await;
    let first = StreamableHttpClientTransport::builder(&hosted.url)
        .resume_interrupted_streams(false)
        .build()
        .unwrap();
    let handle = first.handle();
    let (tx, mut seen_first) = mpsc::unbounded_channel();
    let client = noting_client(tx).connect(first).await.unwrap();
    *control.lock().unwrap() = Some(hosted.controls.clone());
    let call = client.peer().start_raw(
        Cow::Borrowed("test/work"),
        Some(RawValue::from_string("{}".to_owned()).unwrap()),
        RequestOptions::new(),
    );
    let id: RequestId = call.id().unwrap();
    let err = within("the interrupted call", call).await.unwrap_err();
    assert!(err.to_string().contains("resume"), "{err}");
    let token = handle.resumption_token(&id).expect("a saved token");
    assert_eq!(
        within("1", seen_first.recv()).await.unwrap(),
        json!({"n": 1})
    );
    assert_eq!(
        within("2", seen_first.recv()).await.unwrap(),
        json!({"n": 2})
    );

    // Later, on a new transport attached to the same session.
    let second = StreamableHttpClientTransport::builder(&hosted.url)
        .session(handle.session_id().unwrap())
        .protocol_version(handle.protocol_version().unwrap())
        .standalone_stream(false)
        .build()
        .unwrap();
    let (tx, mut seen_second) = mpsc::unbounded_channel();
    let peer = modelctx::session::start(
        second,
        Arc::new(NoteSink(tx)),
        SessionConfig::client().pre_initialized(),
    );
    let resumed = peer.start_raw(
        Cow::Borrowed("test/work"),
        None,
        RequestOptions::new().resume_from(token),
    );
    open.send(()).unwrap();
    let result = within("the resumed call", resumed).await.unwrap();
    assert_eq!(result.get(), r#""done""#);
    assert_eq!(
        within("3", seen_second.recv()).await.unwrap(),
        json!({"n": 3}),
        "only the note not yet seen"
    );
    assert!(
        seen_second.try_recv().is_err(),
        "notes 1 and 2 are not replayed"
    );
    let resumption = hosted
        .seen()
        .into_iter()
        .find(|s| last_event_id(s).is_some_and(|e| e.stream != 0))
        .expect("a GET with the token");
    assert_eq!(resumption.method, http::Method::GET);
}

fn noisy_server() -> Server {
    Server::builder("noisy", "1.0.0")
        .request_handler::<Work, _, _>(|p, cx| async move {
            for i in 0..3 {
                cx.notify::<Note>(json!({"of": p, "i": i}))
                    .await
                    .map_err(internal)?;
            }
            Ok(p)
        })
        .build()
}

async fn sse_events_have_ids_and_streams_start_primed(connect: Connector) {
    let hosted = host_on(&connect, noisy_server(), quick()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let r = send(raw.post(Some(&id), &call(2, "test/work", json!({"k": 1})))).await;
    let events = r.events();
    assert_eq!(
        events.len(),
        5,
        "priming, three notes, the response: {events:?}"
    );
    assert!(events[0].id.is_some() && events[0].data.is_empty());
    assert_eq!(
        events[0].retry,
        Some(50),
        "retry comes with the priming event"
    );
    let ids: std::collections::HashSet<_> = events
        .iter()
        .map(|e| e.id.clone().expect("an id"))
        .collect();
    assert_eq!(ids.len(), events.len(), "ids are unique");
    let mut get = within("the GET", raw.get(&id).send()).await.unwrap();
    let first = read_events_until(&mut get, |e| !e.is_empty()).await;
    assert!(
        first[0].id.is_some() && first[0].data.is_empty(),
        "the GET stream is primed too"
    );
    assert!(
        !ids.contains(first[0].id.as_ref().unwrap()),
        "unique across streams"
    );
}

async fn replay_sends_exactly_the_later_events_of_one_stream(connect: Connector) {
    let hosted = host_on(&connect, noisy_server(), quick()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let a = send(raw.post(Some(&id), &call(2, "test/work", json!({"s": "a"})))).await;
    let b = send(raw.post(Some(&id), &call(3, "test/work", json!({"s": "b"})))).await;
    let a_events = a.events();
    assert_eq!(b.events().len(), 5);
    // Resume stream a after its first note.
    let after = a_events[1].id.clone().unwrap();
    let r = send(raw.get(&id).header("last-event-id", after)).await;
    let replayed = r.events();
    assert_eq!(
        replayed.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
        a_events[2..]
            .iter()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>(),
        "exactly the later events of stream a"
    );
    let messages: Vec<Value> = replayed.iter().filter_map(|e| e.json()).collect();
    assert_eq!(messages.len(), 3);
    assert!(
        messages
            .iter()
            .all(|m| m["params"]["of"] == json!({"s": "a"}) || m["result"] == json!({"s": "a"})),
        "nothing of stream b: {messages:?}"
    );
    assert_eq!(
        messages[2]["id"],
        json!(2),
        "the response of the resumed stream"
    );
}

async fn an_unmappable_last_event_id_is_refused(connect: Connector) {
    let hosted = host_on(&connect, noisy_server(), quick()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    for bad in ["garbage", "99-0", "0-999999", ""] {
        let r = send(raw.get(&id).header("last-event-id", bad)).await;
        assert_eq!(r.status, 400, "Last-Event-ID {bad:?}");
    }
    // An id from another session does not map either.
    let other = raw.init().await;
    let r = send(raw.post(Some(&other), &call(2, "test/work", json!({})))).await;
    let foreign = r.events()[1].id.clone().unwrap();
    let r = send(raw.get(&id).header("last-event-id", &foreign)).await;
    assert!(r.status == 400 || r.events().is_empty(), "{r:?}");
}

async fn messages_sent_while_disconnected_are_replayed_in_order(connect: Connector) {
    let mut hosted = host_on(&connect, Server::builder("later", "1.0.0").build(), quick()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let started = hosted.session().await;
    // The 202 for `notifications/initialized` can come back before the session has
    // handled it; the server may send only once it has.
    within("initialized", started.session.initialized()).await;
    let mut get = within("the GET", raw.get(&id).send()).await.unwrap();
    let priming = read_events_until(&mut get, |e| !e.is_empty()).await[0]
        .id
        .clone()
        .unwrap();
    drop(get);
    for i in 0..3 {
        started
            .session
            .notify::<Note>(json!({"i": i}))
            .await
            .unwrap();
    }
    let mut again = within(
        "the resumption",
        raw.get(&id).header("last-event-id", priming).send(),
    )
    .await
    .unwrap();
    assert_eq!(again.status(), 200);
    let events = read_events_until(&mut again, |e| e.len() >= 3).await;
    let params: Vec<Value> = events
        .iter()
        .filter_map(|e| e.json())
        .map(|m| m["params"].clone())
        .collect();
    assert_eq!(
        params,
        vec![json!({"i": 0}), json!({"i": 1}), json!({"i": 2})]
    );
}

async fn a_dropped_connection_does_not_cancel_the_handler(connect: Connector) {
    let (open, gate) = gate();
    let (finished_tx, mut finished) = mpsc::unbounded_channel();
    let server = Server::builder("patient", "1.0.0")
        .request_handler::<Work, _, _>(move |_, _| {
            let gate = gate.clone();
            let finished = finished_tx.clone();
            async move {
                gate.pass().await;
                let _ = finished.send(());
                Ok(json!("finished"))
            }
        })
        .build();
    let hosted = host_on(&connect, server, quick()).await;
    let raw = Raw::new(&hosted.url);
    let id = raw.init().await;
    let mut post = within(
        "the POST",
        raw.post(Some(&id), &call(2, "test/work", json!({}))).send(),
    )
    .await
    .unwrap();
    let priming = read_events_until(&mut post, |e| !e.is_empty()).await[0]
        .id
        .clone()
        .unwrap();
    drop(post);
    open.send(()).unwrap();
    within("the handler to finish anyway", finished.recv())
        .await
        .unwrap();
    let r = send(raw.get(&id).header("last-event-id", priming)).await;
    let result = r
        .events()
        .iter()
        .filter_map(|e| e.json())
        .find(|m| m["id"] == json!(2));
    assert_eq!(
        result.expect("the outcome is retrievable")["result"],
        json!("finished")
    );
}
