//! The GET stream's hold: refused twice, taken over on resumption, handed over (what
//! reached a released hold late included), and a vanished holder.

use super::*;

/// A GET with `Last-Event-ID` on B, while A still holds the stream (the client lost it,
/// A has not noticed): B takes the stream over (as a resumption replaces the connection
/// on one service), replays what the client missed from the shared event store, and
/// carries what comes next; A's connection ends once B's hand-over reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resuming_get_takes_the_stream_over_on_the_other_service() {
    let redis = RedisServer::start();
    // A short lease: were B's hand-over lost, A would learn of the takeover at its next
    // renewal (a third of it).
    let (a, b) = two_holding(&redis, "over:", Duration::from_millis(600)).await;
    let session = open(&a.url).await;
    let peer = first_copy(&a).await;

    let (mut on_a, _, last) = stream_past_a_note(&a.url, &session, &peer).await;
    // The client stops reading; A still holds the stream and writes n=2 on it.
    note(&peer, 2).await;

    let (status, mut on_b, mut resumed) = try_get_stream(&b.url, &session, Some(&last)).await;
    assert_eq!(status, 200, "a resumption takes the stream over");
    read_until(&mut on_b, &mut resumed, r#""n":2"#).await;
    assert!(
        !resumed.contains(r#""n":1"#),
        "only what was missed: {resumed}"
    );
    let b_holds = holder(&redis, "over:", &session).await.expect("a holder");

    // A's connection ends (B handed it over); n=3 then goes to B, once.
    let rest = read_to_end(&mut on_a).await;
    assert!(!rest.contains(r#""n":3"#), "{rest}");
    note(&peer, 3).await;
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_eq!(resumed.matches(r#""n":2"#).count(), 1, "{resumed}");
    assert_eq!(resumed.matches(r#""n":3"#).count(), 1, "{resumed}");
    assert_eq!(holder(&redis, "over:", &session).await, Some(b_holds));
    // B's stream is the one: a plain GET is refused on A.
    let (status, _, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 409);
}

/// The take-over is a hand-over: with a lease that A does not renew during the test
/// (so A learns of it only from B), what A's copy sends once B's resumption is
/// answered goes to B, not onto the connection the client lost, and the note A wrote
/// there unread comes once, before it. Before the hand-over, A went on writing on the
/// lost connection until its renewal, and n=3 never reached the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_over_holder_hands_the_stream_over_at_once() {
    let redis = RedisServer::start();
    let (a, b) = two_holding(&redis, "hand:", Duration::from_secs(60)).await;
    let session = open(&a.url).await;
    let peer = a.peers.lock().unwrap()[0].clone();

    let (mut on_a, _, last) = stream_past_a_note(&a.url, &session, &peer).await;
    // The client stops reading A's stream, which stays open: A writes n=2 on it.
    note(&peer, 2).await;

    let (status, mut on_b, mut resumed) = try_get_stream(&b.url, &session, Some(&last)).await;
    assert_eq!(status, 200, "a resumption takes the stream over");
    // A let go when B took over: its connection ends now, not at a renewal.
    let rest = read_to_end(&mut on_a).await;
    assert!(!rest.contains(r#""n":3"#), "{rest}");
    note(&peer, 3).await;
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_two_then_three(&resumed);
}

/// A holder that vanished without giving its hold up (a killed process: its record in
/// Redis, never renewed) blocks new GETs only until its lease runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_holder_stops_blocking_after_its_lease() {
    let redis = RedisServer::start();
    let (a, b) = two_holding(&redis, "gone:", Duration::from_secs(3)).await;
    let session = open(&a.url).await;

    // A killed process's hold, as its `hold_stream` left it: its lease, then nothing.
    let mut conn = redis.connection().await;
    let () = redis::cmd("SET")
        .arg(format!("gone:sess:{{{session}}}:get"))
        .arg("00000000deadbeef/1")
        .arg("PX")
        .arg(300)
        .query_async(&mut conn)
        .await
        .expect("SET");
    let (status, _, _) = try_get_stream(&b.url, &session, None).await;
    assert_eq!(status, 409, "held while the lease runs");

    // Within the lease (bounded polling): the GET opens the stream on B.
    let opened = async {
        loop {
            let (status, stream, _) = try_get_stream(&b.url, &session, None).await;
            match status {
                200 => return stream,
                409 => tokio::task::yield_now().await,
                other => panic!("GET answered {other}"),
            }
        }
    };
    let _on_b = tokio::time::timeout(WITHIN, opened)
        .await
        .expect("the dead holder's lease runs out");
    let held = holder(&redis, "gone:", &session).await.expect("B's hold");
    assert_ne!(held, "00000000deadbeef/1");
    let (status, _, _) = try_get_stream(&a.url, &session, None).await;
    assert_eq!(status, 409, "B's hold, renewed, still blocks A");
}

/// Nothing lost: A writes n=2 for its GET stream behind (its store's queue
/// far behind), the client drops A's connection and resumes on B after n=1. A's hold
/// is released only once its store has flushed n=2, so B finds A's hold and takes it
/// over with a hand-over; n=2 reaches the client once, then n=3, in order. Before, the
/// release overtook the write: B found no hold, read the stream before n=2 landed,
/// and n=2 was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_written_behind_before_the_hold_is_released_is_not_lost() {
    let redis = RedisServer::start();
    let store = gated_store(redis.connection().await, "behind:");
    let a = start_gated(&redis, "behind:", store.clone()).await;
    let b = start_holding(&redis, "behind:", Duration::from_secs(60)).await;
    let session = open(&a.url).await;
    let peer = first_copy(&a).await;

    let (on_a, _, last) = stream_past_a_note(&a.url, &session, &peer).await;
    let a_holds = holder(&redis, "behind:", &session).await.expect("A's hold");

    store.close();
    note(&peer, 2).await;
    store.until_held(1).await;
    drop(on_a);
    until_released_or_flushing(&redis, "behind:", &session, &store).await;
    let held_while_flushing = holder(&redis, "behind:", &session).await;

    let (status, mut on_b, mut resumed) = try_get_stream(&b.url, &session, Some(&last)).await;
    assert_eq!(status, 200, "a resumption takes the stream over");
    let b_holds = holder(&redis, "behind:", &session).await.expect("B's hold");
    store.open();
    note(&peer, 3).await;
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_two_then_three(&resumed);
    assert_eq!(
        held_while_flushing,
        Some(a_holds),
        "A's hold waits for its store's barrier"
    );
    // A's release, sent before n=3, found B's hold and left it.
    assert_eq!(holder(&redis, "behind:", &session).await, Some(b_holds));
}

/// A message the registry relayed to A's hold just before A released it can reach A
/// after its connection ended, and after a later message was kept for the stream (A's
/// listener behind: the test publishes n=2 on A's channel itself, as the registry had).
/// It keeps its place: the next hold, on B, gets n=2 first (A hands it over), then the
/// kept n=3, each once, in a resumption and on a new stream alike. Before, A gave n=2
/// back to the registry, which kept it behind n=3 (seen behind HAProxy, which passes a
/// client's close on only at its next write).
async fn a_late_relay_keeps_its_place(resume: bool) {
    let redis = RedisServer::start();
    let prefix = if resume {
        "late-resumed:"
    } else {
        "late-plain:"
    };
    let (a, b) = two_holding(&redis, prefix, Duration::from_secs(60)).await;
    let session = open(&a.url).await;
    let peer = first_copy(&a).await;

    let (on_a, _, last) = stream_past_a_note(&a.url, &session, &peer).await;
    let a_holds = holder(&redis, prefix, &session).await.expect("A's hold");

    // The client leaves; A releases its hold.
    drop(on_a);
    until_released(&redis, prefix, &session, "A releases its hold").await;
    // n=3, sent once no service holds the stream, is kept for the next hold.
    note(&peer, 3).await;
    let kept_once = async {
        while kept(&redis, prefix, &session).await < 1 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WITHIN, kept_once)
        .await
        .expect("n=3 kept");
    // n=2, relayed to A's hold before its release, reaches A now.
    let (instance, _) = a_holds.rsplit_once('/').expect("<instance>/<n>");
    let note = json!({"jsonrpc": "2.0", "method": "test/note", "params": {"n": 2}});
    let mut conn = redis.connection().await;
    let _: i64 = redis::cmd("PUBLISH")
        .arg(format!("{prefix}relay:{instance}"))
        .arg(format!("s\n{session}\n{note}"))
        .query_async(&mut conn)
        .await
        .expect("PUBLISH");

    let last = resume.then_some(last.as_str());
    let (status, mut on_b, mut got) = try_get_stream(&b.url, &session, last).await;
    assert_eq!(status, 200);
    read_until(&mut on_b, &mut got, r#""n":3"#).await;
    assert_two_then_three(&got);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_relay_keeps_its_place_in_a_resumption() {
    a_late_relay_keeps_its_place(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_relay_keeps_its_place_on_a_new_stream() {
    a_late_relay_keeps_its_place(false).await;
}
