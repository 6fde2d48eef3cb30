//! Events written behind a hold, and the resumption that reads them again.

use super::*;

/// The taking side of a write behind: B's resumption reads its replay before A's
/// write behind lands, A's hold is then released (after its store flushed), and only
/// then is B's hold recorded. B asks the released hold, whose hand-over reads the
/// stream the client named after the release: n=2 comes once, then n=3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumption_reads_again_what_a_released_hold_wrote_behind() {
    let redis = RedisServer::start();
    let on_a_store = gated_store(redis.connection().await, "again:");
    let on_b_store = gated_store(redis.connection().await, "again:");
    let a = start_gated(&redis, "again:", on_a_store.clone()).await;
    let b = start_gated(&redis, "again:", on_b_store.clone()).await;
    let session = open(&a.url).await;
    let peer = first_copy(&a).await;

    let (on_a, _, last) = stream_past_a_note(&a.url, &session, &peer).await;

    on_a_store.close();
    note(&peer, 2).await;
    on_a_store.until_held(1).await;
    drop(on_a);
    until_released_or_flushing(&redis, "again:", &session, &on_a_store).await;

    // B's resumption reads the stream (without n=2) and waits there.
    let (read, go) = on_b_store.pause_next_replay();
    let resuming = {
        let (url, session, last) = (b.url.clone(), session.clone(), last.clone());
        tokio::spawn(async move { try_get_stream(&url, &session, Some(&last)).await })
    };
    tokio::time::timeout(WITHIN, read)
        .await
        .expect("B's resumption reads its replay")
        .unwrap();
    // A's write lands, then its release.
    on_a_store.open();
    until_released(
        &redis,
        "again:",
        &session,
        "A's hold is released once its store flushed",
    )
    .await;
    let _ = go.send(());
    let (status, mut on_b, mut resumed) = tokio::time::timeout(WITHIN, resuming)
        .await
        .expect("B's resumption is answered")
        .unwrap();
    assert_eq!(status, 200);

    note(&peer, 3).await;
    read_until(&mut on_b, &mut resumed, r#""n":3"#).await;
    assert_two_then_three(&resumed);
}
